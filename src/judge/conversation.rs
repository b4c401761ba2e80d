//! Judges of a whole conversation: goal accuracy.
//!
//! A conversation judge reads a [`JudgeInput`](super::JudgeInput) whose answer is the
//! conversation's transcript as [`conversation::score::transcript`] renders it (the judged
//! text, with no contexts), whose `question` is the user's first message, and whose
//! `reference` is the conversation's reference outcome.
//! [`Scorer`](crate::conversation::score::Scorer) builds that input; a criteria judge given
//! it judges the transcript.
//!
//! [`conversation::score::transcript`]: crate::conversation::score::transcript

use super::driver::{LlmJudge, Rubric, Sample, Sealed};
use crate::llm::LlmClient;
use crate::metrics::{JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage};
use serde::Deserialize;
use serde_json::json;

/// Placeholders the goal accuracy prompt may use.
pub const GOAL_ACCURACY_PLACEHOLDERS: &[&str] = &["transcript", "reference"];

/// What the prompt says in place of a reference outcome when the conversation has none: the
/// judge then compares the end state with the user goal it inferred.
const NO_REFERENCE: &str =
    "none given: the desired outcome is the user goal you infer from the conversation";

/// `goal_accuracy`: did the conversation reach what the user wanted. ragas'
/// `AgentGoalAccuracyWithReference` and `AgentGoalAccuracyWithoutReference`
/// (`ragas/metrics/_goal_accuracy.py`, ragas 0.4.3): the judge infers the user goal and the
/// end state from the transcript, and compares the end state with the reference outcome when
/// the conversation has one, else with the goal it inferred; 1 when they agree, 0 when not.
/// ragas asks in two calls (infer, then compare); this judge asks both in one. A conversation
/// with no turn of the assistant is `undetermined`, with no call (ragas would still ask).
pub type GoalAccuracy<C> = LlmJudge<C, GoalAccuracyRubric>;

impl<C: LlmClient> GoalAccuracy<C> {
    /// The judge with the built-in prompt.
    pub fn new(llm: C) -> Self {
        LlmJudge::asking(llm, GoalAccuracyRubric)
    }
}

/// What [`GoalAccuracy`] asks.
pub struct GoalAccuracyRubric;

#[derive(Deserialize)]
struct Reply {
    user_goal: String,
    end_state: String,
    #[serde(default)]
    reason: String,
    achieved: bool,
}

impl Sealed for GoalAccuracyRubric {}

#[async_trait::async_trait]
impl Rubric for GoalAccuracyRubric {
    const NAME: &'static str = "goal_accuracy";
    const PLACEHOLDERS: &'static [&'static str] = GOAL_ACCURACY_PLACEHOLDERS;
    const PROMPT: &'static str = include_str!("prompts/goal_accuracy.md");

    async fn sample(&self, s: Sample<'_>) -> JudgeSample {
        let transcript = s.input.answer.answer.trim();
        if !transcript.lines().any(|l| l.starts_with("assistant")) {
            let why = "the conversation has no turn of the assistant";
            return s.unscored(JudgeStatus::Undetermined, why, JudgeUsage::default());
        }
        let reference = if s.reference.is_empty() {
            NO_REFERENCE
        } else {
            s.reference
        };
        let values = [("transcript", transcript), ("reference", reference)];
        let schema = json!({
            "type": "object",
            "properties": {
                "user_goal": {"type": "string"},
                "end_state": {"type": "string"},
                "reason": {"type": "string"},
                "achieved": {"type": "boolean"}
            },
            "required": ["user_goal", "end_state", "reason", "achieved"],
            "additionalProperties": false
        });
        let check = |r: Reply| {
            if r.end_state.trim().is_empty() {
                Err("the end state is empty".to_owned())
            } else {
                Ok(r)
            }
        };
        match s.ask(&values, schema, check).await {
            Ok((r, usage)) => {
                let verdict = if r.achieved { "achieved" } else { "not_achieved" };
                let details = JudgeDetails::Criteria {
                    verdict: verdict.to_owned(),
                    reason: format!(
                        "goal: {}; end state: {}; {}",
                        r.user_goal.trim(),
                        r.end_state.trim(),
                        r.reason.trim()
                    ),
                    probabilities: None,
                    scale: Some(vec![
                        ("not_achieved".to_owned(), 0.0),
                        ("achieved".to_owned(), 1.0),
                    ]),
                };
                s.scored(if r.achieved { 1.0 } else { 0.0 }, details, usage)
            }
            Err(failed) => failed,
        }
    }
}
