//! Faithfulness: the share of an answer's statements that its contexts support, each
//! supported statement located in the chunk that supports it.

use super::context_number;
use super::driver::{LlmJudge, Rubric, Sample, Sealed};
use crate::chunk::RetrievedChunk;
use crate::generator::numbered_contexts;
use crate::llm::LlmClient;
use crate::locate::Locator;
use crate::metrics::{JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage, Statement, Support};
use crate::span::CharSpan;
use serde::Deserialize;
use serde_json::json;

/// Placeholders the faithfulness prompt may use.
pub const FAITHFULNESS_PLACEHOLDERS: &[&str] =
    &["question", "answer", "contexts", "max_statements"];

/// The most statements the judge may list for `answer`: one per three words, at least one
/// and at most 64. The schema says so (`maxItems`), so a server that enforces the schema
/// (llama-server, OpenAI's strict mode) ends the list instead of running to the token limit.
fn max_statements(answer: &str) -> usize {
    answer.split_whitespace().count().div_ceil(3).clamp(1, 64)
}

/// `faithfulness`: the answer decomposed into atomic statements, each judged against the
/// contexts; score = supported / statements. A supported statement's quoted evidence is located
/// in the chunk the judge names (then in the others) with the crate's [`Locator`] and mapped to
/// document offsets ([`Support`]). A statement the judge calls supported whose quote cannot be
/// located in any context (or that has no quote) counts as unsupported: the judge's claim is
/// checked against the contexts, not taken on trust. [`Statement::unlocated`] marks it,
/// [`JudgeDetails::unlocated`] lists such statements and
/// [`JudgeSummary::unlocated`](super::JudgeSummary::unlocated) counts them. An empty answer, or
/// one the judge finds no statement in, is `undetermined`.
///
/// ```
/// use rag_eval::chunk::{PositionAwareChunk, RetrievedChunk};
/// use rag_eval::generator::RagAnswer;
/// use rag_eval::judge::{judge_query, Faithfulness, JudgeConfig, JudgeInput, JudgeStatus};
/// use rag_eval::llm::{ChatRequest, ChatResponse, LlmClient, TokenUsage};
///
/// struct Scripted;
/// #[async_trait::async_trait]
/// impl LlmClient for Scripted {
///     fn name(&self) -> String { "scripted".into() }
///     async fn complete(&self, _: &ChatRequest) -> rag_eval::Result<ChatResponse> {
///         Ok(ChatResponse { finish_reason: None, usage: TokenUsage::default(), model: "s".into(),
///             logprobs: None, content: r#"{"statements": [
///               {"statement": "Flags are kept in memory.", "verdict": "supported", "context": 1,
///                "evidence": "kept in memory", "reason": "stated"},
///               {"statement": "Flags are encrypted.", "verdict": "not_supported", "context": 0,
///                "evidence": "", "reason": "not stated"}]}"#.into() })
///     }
/// }
///
/// let answer = RagAnswer { answer: "Flags are kept in memory, encrypted.".into(), contexts: vec![
///     RetrievedChunk::new(PositionAwareChunk::new("guide.md", 100, 124, "Flags are kept in memory"), 1.0)] };
/// let input = JudgeInput { query_id: "q1", question: "Where are flags?", answer: &answer, reference: None };
/// let j = pollster::block_on(judge_query(&Faithfulness::new(Scripted), &input, &JudgeConfig::default()));
/// assert_eq!(j.score(), Some(0.5));
/// let s = &j.samples[0];
/// assert_eq!(s.status, JudgeStatus::Ok);
/// let rag_eval::judge::JudgeDetails::Faithfulness { statements } = &s.details else { unreachable!() };
/// let span = &statements[0].support.as_ref().unwrap().span;
/// assert_eq!((span.doc.as_str(), span.start, span.end), ("guide.md", 110, 124));
/// ```
pub type Faithfulness<C> = LlmJudge<C, FaithfulnessRubric>;

impl<C: LlmClient> Faithfulness<C> {
    /// The judge with the built-in prompt.
    pub fn new(llm: C) -> Self {
        LlmJudge::asking(llm, FaithfulnessRubric)
    }
}

/// What [`Faithfulness`] asks.
pub struct FaithfulnessRubric;

fn schema(max_statements: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "statements": {
                "type": "array",
                "maxItems": max_statements,
                "items": {
                    "type": "object",
                    "properties": {
                        "statement": {"type": "string"},
                        "verdict": {"type": "string", "enum": ["supported", "not_supported"]},
                        "context": {"type": "integer"},
                        "evidence": {"type": "string"},
                        "reason": {"type": "string"}
                    },
                    "required": ["statement", "verdict", "context", "evidence", "reason"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["statements"],
        "additionalProperties": false
    })
}

#[derive(Deserialize)]
struct Reply {
    statements: Vec<RawStatement>,
}

#[derive(Deserialize)]
struct RawStatement {
    statement: String,
    verdict: String,
    context: i64,
    #[serde(default)]
    evidence: String,
    #[serde(default)]
    reason: String,
}

/// A checked statement: (text, supported, context index, evidence, reason).
type Checked = (String, bool, Option<usize>, String, String);

fn check(reply: Reply, contexts: usize, most: usize) -> Result<Vec<Checked>, String> {
    if reply.statements.len() > most {
        return Err(format!(
            "{} statements, more than the {most} this answer can hold",
            reply.statements.len()
        ));
    }
    reply
        .statements
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let at = |m: String| format!("statement {}: {m}", i + 1);
            if s.statement.trim().is_empty() {
                return Err(at("the statement is empty".into()));
            }
            let supported = match s.verdict.as_str() {
                "supported" => true,
                "not_supported" => false,
                other => {
                    return Err(at(format!(
                        "verdict `{other}` is neither `supported` nor `not_supported`"
                    )))
                }
            };
            let context = context_number(s.context, contexts, true).map_err(at)?;
            Ok((
                s.statement.trim().to_owned(),
                supported,
                context,
                s.evidence,
                s.reason,
            ))
        })
        .collect()
}

/// Finds `evidence` in the named chunk, then in the others, and maps it to document offsets.
pub(crate) fn locate_support(
    evidence: &str,
    named: Option<usize>,
    contexts: &[RetrievedChunk],
    threshold: f64,
) -> Option<Support> {
    if evidence.trim().is_empty() {
        return None;
    }
    named
        .into_iter()
        .chain((0..contexts.len()).filter(|&i| Some(i) != named))
        .find_map(|i| locate_in(evidence, i, contexts, threshold))
}

/// Finds `evidence` in context `i` alone and maps it to document offsets.
pub(crate) fn locate_in(
    evidence: &str,
    i: usize,
    contexts: &[RetrievedChunk],
    threshold: f64,
) -> Option<Support> {
    let chunk = &contexts.get(i)?.chunk;
    if evidence.trim().is_empty() || chunk.content.is_empty() {
        return None;
    }
    let hit = Locator::new(&chunk.content).locate(evidence, threshold)?;
    Some(Support {
        context: i,
        chunk_id: chunk.id.clone(),
        span: CharSpan::new(
            chunk.span.doc.clone(),
            chunk.span.start + hit.start,
            chunk.span.start + hit.end,
        ),
        kind: hit.kind,
        score: hit.score,
    })
}

impl Sealed for FaithfulnessRubric {}

#[async_trait::async_trait]
impl Rubric for FaithfulnessRubric {
    const NAME: &'static str = "faithfulness";
    const PLACEHOLDERS: &'static [&'static str] = FAITHFULNESS_PLACEHOLDERS;
    const PROMPT: &'static str = include_str!("prompts/faithfulness.md");

    async fn sample(&self, s: Sample<'_>) -> JudgeSample {
        let answer = s.input.answer.answer.trim();
        if answer.is_empty() {
            let none = JudgeUsage::default();
            return s.unscored(JudgeStatus::Undetermined, "the answer is empty", none);
        }
        let contexts = &s.input.answer.contexts;
        let most = max_statements(answer);
        let values = [
            ("question", s.input.question),
            ("answer", answer),
            ("contexts", &numbered_contexts(contexts)),
            ("max_statements", &most.to_string()),
        ];
        let ask = s.ask(&values, schema(most), |r| check(r, contexts.len(), most));
        let (checked, usage) = match ask.await {
            Ok(v) => v,
            Err(failed) => return failed,
        };
        if checked.is_empty() {
            let why = "the judge found no statement in the answer";
            return s.unscored(JudgeStatus::Undetermined, why, usage);
        }
        let threshold = s.config.locate_threshold;
        let statements: Vec<Statement> = checked
            .into_iter()
            .map(|(text, supported, context, evidence, reason)| {
                let support = if supported {
                    locate_support(&evidence, context, contexts, threshold)
                } else {
                    None
                };
                Statement {
                    supported: support.is_some(),
                    unlocated: supported && support.is_none(),
                    support,
                    text,
                    reason,
                    evidence,
                }
            })
            .collect();
        let supported = statements.iter().filter(|s| s.supported).count();
        let score = supported as f64 / statements.len() as f64;
        s.scored(score, JudgeDetails::Faithfulness { statements }, usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statements_are_bounded_by_the_answers_length() {
        assert_eq!(max_statements(""), 1);
        assert_eq!(max_statements("In May."), 1);
        assert_eq!(max_statements("Flags are kept in memory."), 2);
        assert_eq!(max_statements(&"word ".repeat(30)), 10);
        assert_eq!(max_statements(&"word ".repeat(1000)), 64);
        assert_eq!(schema(7)["properties"]["statements"]["maxItems"], 7);
    }

    #[test]
    fn a_list_longer_than_the_bound_is_sent_back() {
        let reply = |n: usize| Reply {
            statements: (0..n)
                .map(|_| RawStatement {
                    statement: "Flags are kept in memory.".into(),
                    verdict: "supported".into(),
                    context: 1,
                    evidence: String::new(),
                    reason: String::new(),
                })
                .collect(),
        };
        assert_eq!(check(reply(2), 1, 2).unwrap().len(), 2);
        let e = check(reply(3), 1, 2).unwrap_err();
        assert_eq!(e, "3 statements, more than the 2 this answer can hold");
    }
}
