//! LLM context precision and recall: the retrieved chunks judged against a reference answer
//! (named `llm_…` so that they are not confused with the span metrics).

use super::context_number;
use super::driver::{LlmJudge, Rubric, Sample, Sealed};
use crate::generator::numbered_contexts;
use crate::llm::LlmClient;
use crate::metrics::{Attribution, ContextVerdict, JudgeDetails, JudgeSample, JudgeStatus};
use serde::Deserialize;
use serde_json::json;

/// Placeholders the context precision and recall prompts may use.
pub const CONTEXT_PLACEHOLDERS: &[&str] = &["question", "reference", "contexts"];

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
pub type LlmContextPrecision<C> = LlmJudge<C, LlmContextPrecisionRubric>;

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
        LlmJudge::asking(llm, LlmContextPrecisionRubric)
    }
}

/// What [`LlmContextPrecision`] asks.
pub struct LlmContextPrecisionRubric;

/// The question, the reference answer and the numbered contexts, for either prompt.
fn values<'a>(s: &Sample<'a>, contexts: &'a str) -> [(&'static str, &'a str); 3] {
    [
        ("question", s.input.question),
        ("reference", s.reference),
        ("contexts", contexts),
    ]
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

impl Sealed for LlmContextPrecisionRubric {}

#[async_trait::async_trait]
impl Rubric for LlmContextPrecisionRubric {
    const NAME: &'static str = "llm_context_precision";
    const PLACEHOLDERS: &'static [&'static str] = CONTEXT_PLACEHOLDERS;
    const NEEDS_REFERENCE: bool = true;
    const PROMPT: &'static str = include_str!("prompts/llm_context_precision.md");

    async fn sample(&self, s: Sample<'_>) -> JudgeSample {
        let contexts = &s.input.answer.contexts;
        if contexts.is_empty() {
            return s.unscored(JudgeStatus::Undetermined, "no contexts", Default::default());
        }
        let numbered = numbered_contexts(contexts);
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
        let n = contexts.len();
        let filled = values(&s, &numbered);
        let reply = s.ask(&filled, schema, |r: PrecisionReply| {
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
        });
        let (verdicts, usage) = match reply.await {
            Ok(v) => v,
            Err(failed) => return failed,
        };
        let useful: Vec<bool> = verdicts.iter().map(|(u, _)| *u).collect();
        let verdicts = verdicts
            .into_iter()
            .enumerate()
            .map(|(i, (useful, reason))| ContextVerdict {
                context: i,
                chunk_id: contexts[i].chunk.id.clone(),
                useful,
                reason,
            })
            .collect();
        let details = JudgeDetails::ContextPrecision { verdicts };
        s.scored(average_precision(&useful), details, usage)
    }
}

/// `llm_context_recall` (ragas' `LLMContextRecall`): the reference answer broken into
/// statements, each attributed or not to the retrieved chunks; score = attributed /
/// statements. No reference answer, or no statement in it: `undetermined`.
pub type LlmContextRecall<C> = LlmJudge<C, LlmContextRecallRubric>;

impl<C: LlmClient> LlmContextRecall<C> {
    /// The judge with the built-in prompt.
    pub fn new(llm: C) -> Self {
        LlmJudge::asking(llm, LlmContextRecallRubric)
    }
}

/// What [`LlmContextRecall`] asks.
pub struct LlmContextRecallRubric;

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

impl Sealed for LlmContextRecallRubric {}

#[async_trait::async_trait]
impl Rubric for LlmContextRecallRubric {
    const NAME: &'static str = "llm_context_recall";
    const PLACEHOLDERS: &'static [&'static str] = CONTEXT_PLACEHOLDERS;
    const NEEDS_REFERENCE: bool = true;
    const PROMPT: &'static str = include_str!("prompts/llm_context_recall.md");

    async fn sample(&self, s: Sample<'_>) -> JudgeSample {
        let contexts = &s.input.answer.contexts;
        let numbered = numbered_contexts(contexts);
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
        let n = contexts.len();
        let attribution = |(i, a): (usize, RawAttribution)| {
            let at = |m: String| format!("statement {}: {m}", i + 1);
            if a.statement.trim().is_empty() {
                return Err(at("the statement is empty".into()));
            }
            Ok(Attribution {
                context: context_number(a.context, n, true).map_err(at)?,
                text: a.statement.trim().to_owned(),
                attributed: a.attributed,
                reason: a.reason,
            })
        };
        let filled = values(&s, &numbered);
        let reply = s.ask(&filled, schema, |r: RecallReply| {
            r.statements
                .into_iter()
                .enumerate()
                .map(attribution)
                .collect()
        });
        let (statements, usage): (Vec<Attribution>, _) = match reply.await {
            Ok(v) => v,
            Err(failed) => return failed,
        };
        if statements.is_empty() {
            let why = "the judge found no statement in the reference answer";
            return s.unscored(JudgeStatus::Undetermined, why, usage);
        }
        let attributed = statements.iter().filter(|s| s.attributed).count();
        let score = attributed as f64 / statements.len() as f64;
        s.scored(score, JudgeDetails::ContextRecall { statements }, usage)
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
