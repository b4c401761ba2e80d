//! Answer match: does the answer answer the question as the reference does.

use super::call::ask;
use super::outcome::{JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage};
use super::{failed, unscored, Judge, JudgeConfig, JudgeInput};
use crate::generator::PromptTemplate;
use crate::llm::LlmClient;
use serde::Deserialize;
use serde_json::json;

const PROMPT: &str = include_str!("prompts/answer_match.md");

/// Placeholders the answer match prompt may use.
pub const ANSWER_MATCH_PLACEHOLDERS: &[&str] = &["question", "answer", "reference"];

/// `answer_match`: the judge decides, with a reason, whether the answer answers the question
/// as the reference answer does; 1 when it does, 0 when not. An empty answer scores 0 without
/// a call; no reference answer is `undetermined`.
pub struct AnswerMatch<C> {
    llm: C,
    prompt: PromptTemplate,
}

impl<C: LlmClient> AnswerMatch<C> {
    /// The judge with the built-in prompt.
    pub fn new(llm: C) -> Self {
        AnswerMatch {
            llm,
            prompt: Self::builtin_prompt(),
        }
    }

    /// The prompt shipped with the library (`src/judge/prompts/answer_match.md`).
    pub fn builtin_prompt() -> PromptTemplate {
        PromptTemplate::builtin(PROMPT, "answer_match.md", ANSWER_MATCH_PLACEHOLDERS)
    }

    /// Uses `prompt` instead (placeholders [`ANSWER_MATCH_PLACEHOLDERS`]).
    pub fn with_prompt(mut self, prompt: PromptTemplate) -> Self {
        self.prompt = prompt;
        self
    }
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    reason: String,
    matches: bool,
}

#[async_trait::async_trait]
impl<C: LlmClient> Judge for AnswerMatch<C> {
    fn name(&self) -> &'static str {
        "answer_match"
    }

    fn prompt_version(&self) -> String {
        format!("answer_match/{}", self.prompt.version)
    }

    async fn judge(
        &self,
        input: &JudgeInput<'_>,
        sample: u32,
        config: &JudgeConfig,
    ) -> JudgeSample {
        let mut usage = JudgeUsage::default();
        let Some(reference) = input.reference.map(str::trim).filter(|r| !r.is_empty()) else {
            return unscored(
                sample,
                JudgeStatus::Undetermined,
                "the query has no reference answer",
                usage,
            );
        };
        let answer = input.answer.answer.trim();
        if answer.is_empty() {
            return JudgeSample {
                sample,
                status: JudgeStatus::Ok,
                score: Some(0.0),
                details: JudgeDetails::AnswerMatch {
                    matches: false,
                    reason: "the answer is empty".into(),
                },
                message: None,
                usage,
            };
        }
        let text = self.prompt.render(&[
            ("question", input.question),
            ("answer", answer),
            ("reference", reference),
        ]);
        let schema = json!({
            "type": "object",
            "properties": {"reason": {"type": "string"}, "matches": {"type": "boolean"}},
            "required": ["reason", "matches"],
            "additionalProperties": false
        });
        let request = config.request(text, self.prompt_version(), sample, "answer_match", schema);
        let reply = ask(
            &self.llm,
            request,
            config.repairs,
            &mut usage,
            |r: Reply| Ok::<_, String>(r),
        )
        .await;
        let r = match failed(reply, sample, usage) {
            Ok(v) => v,
            Err(s) => return s,
        };
        JudgeSample {
            sample,
            status: JudgeStatus::Ok,
            score: Some(if r.matches { 1.0 } else { 0.0 }),
            details: JudgeDetails::AnswerMatch {
                matches: r.matches,
                reason: r.reason,
            },
            message: None,
            usage,
        }
    }
}
