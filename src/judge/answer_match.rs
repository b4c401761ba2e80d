//! Answer match: does the answer answer the question as the reference does.

use super::driver::{LlmJudge, Rubric, Sample, Sealed};
use crate::llm::LlmClient;
use crate::metrics::{JudgeDetails, JudgeSample, JudgeUsage};
use serde::Deserialize;
use serde_json::json;

/// Placeholders the answer match prompt may use.
pub const ANSWER_MATCH_PLACEHOLDERS: &[&str] = &["question", "answer", "reference"];

/// `answer_match`: the judge decides, with a reason, whether the answer answers the question
/// as the reference answer does; 1 when it does, 0 when not. An empty answer scores 0 without
/// a call; no reference answer is `undetermined`.
pub type AnswerMatch<C> = LlmJudge<C, AnswerMatchRubric>;

impl<C: LlmClient> AnswerMatch<C> {
    /// The judge with the built-in prompt.
    pub fn new(llm: C) -> Self {
        LlmJudge::asking(llm, AnswerMatchRubric)
    }
}

/// What [`AnswerMatch`] asks.
pub struct AnswerMatchRubric;

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    reason: String,
    matches: bool,
}

impl Sealed for AnswerMatchRubric {}

#[async_trait::async_trait]
impl Rubric for AnswerMatchRubric {
    const NAME: &'static str = "answer_match";
    const PLACEHOLDERS: &'static [&'static str] = ANSWER_MATCH_PLACEHOLDERS;
    const NEEDS_REFERENCE: bool = true;
    const PROMPT: &'static str = include_str!("prompts/answer_match.md");

    async fn sample(&self, s: Sample<'_>) -> JudgeSample {
        let answer = s.input.answer.answer.trim();
        let verdict = |matches, reason| JudgeDetails::AnswerMatch { matches, reason };
        if answer.is_empty() {
            let details = verdict(false, "the answer is empty".into());
            return s.scored(0.0, details, JudgeUsage::default());
        }
        let values = [
            ("question", s.input.question),
            ("answer", answer),
            ("reference", s.reference),
        ];
        let schema = json!({
            "type": "object",
            "properties": {"reason": {"type": "string"}, "matches": {"type": "boolean"}},
            "required": ["reason", "matches"],
            "additionalProperties": false
        });
        match s.ask(&values, schema, |r: Reply| Ok::<_, String>(r)).await {
            Ok((r, usage)) => {
                let score = if r.matches { 1.0 } else { 0.0 };
                s.scored(score, verdict(r.matches, r.reason), usage)
            }
            Err(failed) => failed,
        }
    }
}
