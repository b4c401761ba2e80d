//! LLM judges of answers: faithfulness, answer relevancy, LLM context precision and recall,
//! and answer match.
//!
//! Each judge is a [`Judge`]: a metric name, a versioned prompt file (under
//! `src/judge/prompts/`, replaceable with the judge's `with_prompt`) and a JSON schema the
//! judge model must answer in (sent with [`ChatRequest::with_json_schema`]). Judging one query
//! gives a [`QueryJudgement`]: one [`JudgeSample`] per repeat, each with a status
//! ([`JudgeStatus`]: `ok`, `undetermined`, `invalid` or `error`), a score when `ok`, the
//! details behind it ([`JudgeDetails`]: statements with verdicts and the character spans that
//! support them, generated questions, reasons) and the calls and tokens it took.
//!
//! | judge | name | score |
//! | --- | --- | --- |
//! | [`Faithfulness`] | `faithfulness` | supported statements / statements of the answer; no statements → `undetermined` |
//! | [`AnswerRelevancy`] | `answer_relevancy` | mean cosine of N questions generated back from the answer to the real question; 0 when the answer is noncommittal |
//! | [`LlmContextPrecision`] | `llm_context_precision` | average precision of the chunks the judge finds useful for the reference answer |
//! | [`LlmContextRecall`] | `llm_context_recall` | statements of the reference answer the chunks hold / statements |
//! | [`AnswerMatch`] | `answer_match` | 1 when the answer answers the question as the reference does, else 0 |
//!
//! The definitions are ragas' (`Faithfulness`, `AnswerRelevancy` with `strictness`,
//! `LLMContextPrecisionWithReference`, `LLMContextRecall`), with fewer calls: faithfulness
//! asks for statements and verdicts in one request, answer relevancy for all N questions in
//! one, context precision for every chunk's verdict in one. Where ragas returns NaN (no
//! statements) the status is `undetermined`; average precision is computed exactly, without
//! ragas' `1e-10` in the denominator.
//!
//! **Repeats and robustness** ([`JudgeConfig`]): each query is judged `samples` times at the
//! configured temperature, every request carrying its sample index so a cache records and
//! replays each sample on its own ([`ChatRequest::with_sample`]); the prompt version goes into
//! the key too. An answer that is not JSON of the schema's shape, or names a context that does
//! not exist, is sent back with the error up to `repairs` times and then counted `invalid` (at
//! once when the token limit cut it off: a repair would run under the same limit); a
//! client error (after the client's own retries) is `error`. Neither enters the mean; the
//! [`JudgeSummary`] counts them and says the gate fails when their share of all samples exceeds
//! `max_invalid_share` (default 5%). pass^n ([`pass_hat`]) is the share of queries whose
//! every sample reaches a threshold.
//!
//! Wrap the client in a `CachedLlm` (feature `cache`) to record a run and replay it with no
//! calls.
//!
//! **Criteria judges** ([`CriteriaJudge`]) judge a team's own rule, written as a
//! [`Criteria`] file or built in code, on a pass/fail, integer or categorical [`Scale`],
//! through the same driver: schema, repairs, `invalid`/`error`, repeats and cache.
//!
//! The five judges are one type, [`LlmJudge`], with a different [`Rubric`] each (what is
//! asked, the schema, how the answer is checked and scored): every judge's request, parsing,
//! repairs and `invalid`/`error` outcomes go through the same code.

mod answer_match;
mod context;
mod conversation;
mod criteria;
mod driver;
mod faithfulness;
mod figures;
mod relevancy;
mod run;

pub use crate::metrics::{
    failure_kind, Attribution, ContextVerdict, GeneratedQuestion, JudgeDetails, JudgeSample,
    JudgeStatus, JudgeUsage, QueryJudgement, Spread, Statement, Support,
};
pub use answer_match::{AnswerMatch, AnswerMatchRubric, ANSWER_MATCH_PLACEHOLDERS};
pub use context::{
    LlmContextPrecision, LlmContextPrecisionRubric, LlmContextRecall, LlmContextRecallRubric,
    CONTEXT_PLACEHOLDERS,
};
pub use conversation::{
    GoalAccuracy, GoalAccuracyRubric, KnowledgeRetention, KnowledgeRetentionRubric, TopicAdherence,
    TopicMode, GOAL_ACCURACY_PLACEHOLDERS, KNOWLEDGE_RETENTION_PLACEHOLDERS,
    TOPIC_ADHERENCE_PLACEHOLDERS,
};
pub use criteria::{Criteria, CriteriaInput, CriteriaJudge, Scale, CRITERIA_PLACEHOLDERS};
pub use driver::{LlmJudge, Rubric};
pub use faithfulness::{Faithfulness, FaithfulnessRubric, FAITHFULNESS_PLACEHOLDERS};
pub use figures::add_to_result;
pub use relevancy::{AnswerRelevancy, AnswerRelevancyRubric, ANSWER_RELEVANCY_PLACEHOLDERS};
pub use run::{
    judge_all, judge_all_reporting, judge_query, pass_hat, FailureCount, JudgeRun, JudgeSummary,
};

/// The reference answer the judges see for a query with `references`: each one trimmed, the
/// empty ones left out, several one per paragraph; `None` when none is left. The CLI and the
/// harness both call this, so a row gets the same prompt (and cache key) from either.
pub fn reference_text(references: &[String]) -> Option<String> {
    let kept: Vec<&str> = references
        .iter()
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
        .collect();
    (!kept.is_empty()).then(|| kept.join("\n\n"))
}

#[cfg(test)]
mod reference_tests {
    use super::reference_text;

    #[test]
    fn one_reference_as_written_several_one_per_paragraph_blank_ones_dropped() {
        assert_eq!(reference_text(&[]), None);
        assert_eq!(reference_text(&["  ".into()]), None);
        assert_eq!(
            reference_text(&["In May.".into()]).as_deref(),
            Some("In May.")
        );
        assert_eq!(
            reference_text(&[" In May.\n".into()]).as_deref(),
            Some("In May.")
        );
        assert_eq!(
            reference_text(&["In May.".into(), "".into(), "May 2021.".into()]).as_deref(),
            Some("In May.\n\nMay 2021.")
        );
    }
}

use crate::generator::RagAnswer;
use crate::llm::{ChatMessage, ChatRequest};

/// One query to judge: the question, the answer with the chunks it was generated from, and
/// the reference answer when the dataset has one.
#[derive(Debug, Clone, Copy)]
pub struct JudgeInput<'a> {
    /// The query's id.
    pub query_id: &'a str,
    /// The question.
    pub question: &'a str,
    /// The answer and its contexts.
    pub answer: &'a RagAnswer,
    /// The reference answer.
    pub reference: Option<&'a str>,
}

/// The most judgings per query `rag-eval --judge-samples` takes: each is a call to the model.
pub const MAX_SAMPLES: u32 = 100;

/// How judges call the model and how results are gated.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeConfig {
    /// A model other than the client's default.
    pub model: Option<String>,
    /// Sampling temperature (default 0).
    pub temperature: f32,
    /// Longest judge answer, in tokens (default 1,024).
    pub max_tokens: u32,
    /// Judgings per query (default 1; at least 1; the CLI takes at most [`MAX_SAMPLES`]).
    pub samples: u32,
    /// Repair turns for an answer that breaks its schema (default 2); none for an answer the
    /// token limit cut off, which would be cut off again.
    pub repairs: u32,
    /// Share of samples that may be `invalid` or `error` before the gate fails (default 0.05).
    pub max_invalid_share: f64,
    /// Lowest fuzzy score at which a judge's quote counts as found in a chunk (default 0.9,
    /// as for generated datasets).
    pub locate_threshold: f64,
    /// Queries judged at once (default 4).
    pub concurrency: usize,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        JudgeConfig {
            model: None,
            temperature: 0.0,
            max_tokens: 1024,
            samples: 1,
            repairs: 2,
            max_invalid_share: 0.05,
            locate_threshold: 0.9,
            concurrency: 4,
        }
    }
}

impl JudgeConfig {
    /// The request for sample `sample` of a judge question: one user message, the schema, and
    /// the prompt version and sample index for the cache key.
    pub fn request(
        &self,
        text: String,
        prompt_version: String,
        sample: u32,
        schema_name: &str,
        schema: serde_json::Value,
    ) -> ChatRequest {
        let mut r = ChatRequest::new(vec![ChatMessage::user(text)])
            .with_temperature(self.temperature)
            .with_max_tokens(self.max_tokens)
            .with_json_schema(schema_name, schema)
            .with_prompt_version(prompt_version)
            .with_sample(sample);
        r.model = self.model.clone();
        r
    }
}

/// An LLM judge usable as a metric.
#[async_trait::async_trait]
pub trait Judge: Send + Sync {
    /// The reported metric name, e.g. `faithfulness`.
    fn name(&self) -> &str;
    /// `name/version` of the prompt in use, recorded in every request's cache key.
    fn prompt_version(&self) -> String;
    /// Judges one query once (sample `sample`). Never fails: a failure is a sample with status
    /// `invalid` or `error`.
    async fn judge(&self, input: &JudgeInput<'_>, sample: u32, config: &JudgeConfig)
        -> JudgeSample;
}

/// Checks a 1-based context number from a judge answer; 0 means "none" where `allow_none`.
pub(crate) fn context_number(
    n: i64,
    contexts: usize,
    allow_none: bool,
) -> Result<Option<usize>, String> {
    match n {
        0 if allow_none => Ok(None),
        n if n >= 1 && (n as u64) <= contexts as u64 => Ok(Some(n as usize - 1)),
        n => Err(format!(
            "context {n} does not exist (the contexts are numbered 1 to {contexts}{})",
            if allow_none { "; 0 means none" } else { "" }
        )),
    }
}
