//! LLM context precision and recall: the retrieved chunks judged against a reference answer
//! (named `llm_…` so that they are not confused with the span metrics).

use super::call::ask;
use super::outcome::{
    Attribution, ContextVerdict, JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage,
};
use super::{context_number, failed, unscored, Judge, JudgeConfig, JudgeInput};
use crate::generator::{numbered_contexts, PromptTemplate};
use crate::llm::LlmClient;
use serde::Deserialize;
use serde_json::json;

const PRECISION_PROMPT: &str = include_str!("prompts/llm_context_precision.md");
const RECALL_PROMPT: &str = include_str!("prompts/llm_context_recall.md");

/// Placeholders the context precision and recall prompts may use.
pub const CONTEXT_PLACEHOLDERS: &[&str] = &["question", "reference", "contexts"];

/// The reference answer, or the sample saying it is missing.
fn reference<'a>(input: &JudgeInput<'a>, sample: u32) -> Result<&'a str, JudgeSample> {
    match input.reference.map(str::trim) {
        Some(r) if !r.is_empty() => Ok(r),
        _ => Err(unscored(
            sample,
            JudgeStatus::Undetermined,
            "the query has no reference answer",
            JudgeUsage::default(),
        )),
    }
}

/// Average precision of binary verdicts in rank order: the mean of precision@i over the
/// ranks i of useful chunks; 0 when none is useful.
fn average_precision(useful: &[bool]) -> f64 {
    let (mut hits, mut sum) = (0usize, 0.0);
    for (i, &u) in useful.iter().enumerate() {
        if u {
            hits += 1;
            sum += hits as f64 / (i + 1) as f64;
        }
    }
    if hits == 0 {
        0.0
    } else {
        sum / hits as f64
    }
}

/// `llm_context_precision` (ragas' `LLMContextPrecisionWithReference`): the judge says of
/// every retrieved chunk whether it was useful in arriving at the reference answer, and the
/// score is the average precision of those verdicts in rank order. All verdicts come from one
/// request. No reference answer or no contexts: `undetermined`.
pub struct LlmContextPrecision<C> {
    llm: C,
    prompt: PromptTemplate,
}

impl<C> LlmContextPrecision<C> {
    /// Average precision of verdicts in rank order: the mean of precision@i over the ranks i
    /// of useful chunks, 0 when none is (ragas' formula without its `1e-10`).
    ///
    /// ```
    /// use rag_eval::judge::LlmContextPrecision;
    /// let ap = LlmContextPrecision::<()>::average_precision;
    /// assert_eq!(ap(&[true, false, true]), (1.0 + 2.0 / 3.0) / 2.0);
    /// assert_eq!(ap(&[false, false]), 0.0);
    /// ```
    pub fn average_precision(useful: &[bool]) -> f64 {
        average_precision(useful)
    }
}

impl<C: LlmClient> LlmContextPrecision<C> {
    /// The judge with the built-in prompt.
    pub fn new(llm: C) -> Self {
        LlmContextPrecision {
            llm,
            prompt: Self::builtin_prompt(),
        }
    }

    /// The prompt shipped with the library (`src/judge/prompts/llm_context_precision.md`).
    pub fn builtin_prompt() -> PromptTemplate {
        PromptTemplate::builtin(
            PRECISION_PROMPT,
            "llm_context_precision.md",
            CONTEXT_PLACEHOLDERS,
        )
    }

    /// Uses `prompt` instead (placeholders [`CONTEXT_PLACEHOLDERS`]).
    pub fn with_prompt(mut self, prompt: PromptTemplate) -> Self {
        self.prompt = prompt;
        self
    }
}

#[derive(Deserialize)]
struct PrecisionReply {
    verdicts: Vec<RawVerdict>,
}

#[derive(Deserialize)]
struct RawVerdict {
    context: i64,
    useful: bool,
    #[serde(default)]
    reason: String,
}

#[async_trait::async_trait]
impl<C: LlmClient> Judge for LlmContextPrecision<C> {
    fn name(&self) -> &'static str {
        "llm_context_precision"
    }

    fn prompt_version(&self) -> String {
        format!("llm_context_precision/{}", self.prompt.version)
    }

    async fn judge(
        &self,
        input: &JudgeInput<'_>,
        sample: u32,
        config: &JudgeConfig,
    ) -> JudgeSample {
        let reference = match reference(input, sample) {
            Ok(r) => r,
            Err(s) => return s,
        };
        let contexts = &input.answer.contexts;
        let mut usage = JudgeUsage::default();
        if contexts.is_empty() {
            return unscored(sample, JudgeStatus::Undetermined, "no contexts", usage);
        }
        let text = self.prompt.render(&[
            ("question", input.question),
            ("reference", reference),
            ("contexts", &numbered_contexts(contexts)),
        ]);
        let schema = json!({
            "type": "object",
            "properties": {"verdicts": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "context": {"type": "integer"},
                    "useful": {"type": "boolean"},
                    "reason": {"type": "string"}
                },
                "required": ["context", "useful", "reason"],
                "additionalProperties": false
            }}},
            "required": ["verdicts"],
            "additionalProperties": false
        });
        let request = config.request(
            text,
            self.prompt_version(),
            sample,
            "llm_context_precision",
            schema,
        );
        let n = contexts.len();
        let reply = ask(
            &self.llm,
            request,
            config.repairs,
            &mut usage,
            |r: PrecisionReply| {
                let mut slots: Vec<Option<(bool, String)>> = vec![None; n];
                for v in r.verdicts {
                    let i = context_number(v.context, n, false)?.unwrap_or_default();
                    if slots[i].is_some() {
                        return Err(format!("context {} has two verdicts", i + 1));
                    }
                    slots[i] = Some((v.useful, v.reason));
                }
                slots
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| s.ok_or_else(|| format!("context {} has no verdict", i + 1)))
                    .collect::<Result<Vec<_>, String>>()
            },
        )
        .await;
        let verdicts = match failed(reply, sample, usage) {
            Ok(v) => v,
            Err(s) => return s,
        };
        let useful: Vec<bool> = verdicts.iter().map(|(u, _)| *u).collect();
        JudgeSample {
            sample,
            status: JudgeStatus::Ok,
            score: Some(average_precision(&useful)),
            details: JudgeDetails::ContextPrecision {
                verdicts: verdicts
                    .into_iter()
                    .enumerate()
                    .map(|(i, (useful, reason))| ContextVerdict {
                        context: i,
                        chunk_id: contexts[i].chunk.id.clone(),
                        useful,
                        reason,
                    })
                    .collect(),
            },
            message: None,
            usage,
        }
    }
}

/// `llm_context_recall` (ragas' `LLMContextRecall`): the reference answer broken into
/// statements, each attributed or not to the retrieved chunks; score = attributed /
/// statements. No reference answer, or no statement in it: `undetermined`.
pub struct LlmContextRecall<C> {
    llm: C,
    prompt: PromptTemplate,
}

impl<C: LlmClient> LlmContextRecall<C> {
    /// The judge with the built-in prompt.
    pub fn new(llm: C) -> Self {
        LlmContextRecall {
            llm,
            prompt: Self::builtin_prompt(),
        }
    }

    /// The prompt shipped with the library (`src/judge/prompts/llm_context_recall.md`).
    pub fn builtin_prompt() -> PromptTemplate {
        PromptTemplate::builtin(RECALL_PROMPT, "llm_context_recall.md", CONTEXT_PLACEHOLDERS)
    }

    /// Uses `prompt` instead (placeholders [`CONTEXT_PLACEHOLDERS`]).
    pub fn with_prompt(mut self, prompt: PromptTemplate) -> Self {
        self.prompt = prompt;
        self
    }
}

#[derive(Deserialize)]
struct RecallReply {
    statements: Vec<RawAttribution>,
}

#[derive(Deserialize)]
struct RawAttribution {
    statement: String,
    attributed: bool,
    context: i64,
    #[serde(default)]
    reason: String,
}

#[async_trait::async_trait]
impl<C: LlmClient> Judge for LlmContextRecall<C> {
    fn name(&self) -> &'static str {
        "llm_context_recall"
    }

    fn prompt_version(&self) -> String {
        format!("llm_context_recall/{}", self.prompt.version)
    }

    async fn judge(
        &self,
        input: &JudgeInput<'_>,
        sample: u32,
        config: &JudgeConfig,
    ) -> JudgeSample {
        let reference = match reference(input, sample) {
            Ok(r) => r,
            Err(s) => return s,
        };
        let contexts = &input.answer.contexts;
        let mut usage = JudgeUsage::default();
        let text = self.prompt.render(&[
            ("question", input.question),
            ("reference", reference),
            ("contexts", &numbered_contexts(contexts)),
        ]);
        let schema = json!({
            "type": "object",
            "properties": {"statements": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "statement": {"type": "string"},
                    "attributed": {"type": "boolean"},
                    "context": {"type": "integer"},
                    "reason": {"type": "string"}
                },
                "required": ["statement", "attributed", "context", "reason"],
                "additionalProperties": false
            }}},
            "required": ["statements"],
            "additionalProperties": false
        });
        let request = config.request(
            text,
            self.prompt_version(),
            sample,
            "llm_context_recall",
            schema,
        );
        let n = contexts.len();
        let reply = ask(
            &self.llm,
            request,
            config.repairs,
            &mut usage,
            |r: RecallReply| {
                r.statements
                    .into_iter()
                    .enumerate()
                    .map(|(i, s)| {
                        if s.statement.trim().is_empty() {
                            return Err(format!("statement {}: the statement is empty", i + 1));
                        }
                        Ok(Attribution {
                            context: context_number(s.context, n, true)
                                .map_err(|m| format!("statement {}: {m}", i + 1))?,
                            text: s.statement.trim().to_owned(),
                            attributed: s.attributed,
                            reason: s.reason,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()
            },
        )
        .await;
        let statements = match failed(reply, sample, usage) {
            Ok(v) => v,
            Err(s) => return s,
        };
        if statements.is_empty() {
            return unscored(
                sample,
                JudgeStatus::Undetermined,
                "the judge found no statement in the reference answer",
                usage,
            );
        }
        let attributed = statements.iter().filter(|s| s.attributed).count();
        JudgeSample {
            sample,
            status: JudgeStatus::Ok,
            score: Some(attributed as f64 / statements.len() as f64),
            details: JudgeDetails::ContextRecall { statements },
            message: None,
            usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::average_precision;
    use proptest::prelude::*;

    /// ragas' formula as written: Σ precision@i · vᵢ / (Σ vᵢ + 1e-10).
    fn ragas(v: &[bool]) -> f64 {
        let v: Vec<f64> = v.iter().map(|&b| f64::from(u8::from(b))).collect();
        let numerator: f64 = (0..v.len())
            .map(|i| v[..=i].iter().sum::<f64>() / (i + 1) as f64 * v[i])
            .sum();
        numerator / (v.iter().sum::<f64>() + 1e-10)
    }

    proptest! {
        #[test]
        fn average_precision_is_ragas_without_its_epsilon(v in prop::collection::vec(any::<bool>(), 0..40)) {
            let ap = average_precision(&v);
            prop_assert!((0.0..=1.0).contains(&ap));
            prop_assert!((ap - ragas(&v)).abs() < 1e-9, "{} vs {}", ap, ragas(&v));
        }
    }
}
