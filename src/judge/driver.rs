//! The one path every judge takes to its model: the prompt rendered into a request carrying
//! the judge's JSON schema, prompt version and sample index; the answer parsed and checked;
//! a bounded number of repair turns when it breaks the schema; and, when it never comes back
//! valid, the sample's `invalid` (schema) or `error` (transport) status.
//!
//! Every judge is an [`LlmJudge`]: a model, a prompt, and a [`Rubric`] (the judge's name,
//! built-in prompt, and how one sample is asked and scored through [`Sample::ask`]).

use super::{Judge, JudgeConfig, JudgeInput};
use crate::llm::{ChatMessage, ChatRequest, ChatResponse, LlmClient, PromptTemplate};
use crate::metrics::{JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage};
use serde::de::DeserializeOwned;

/// An LLM judge: a model, a prompt and what the judge asks (`R`). The judges of this module
/// are its instances: [`Faithfulness`](super::Faithfulness),
/// [`AnswerRelevancy`](super::AnswerRelevancy), [`LlmContextPrecision`](super::LlmContextPrecision),
/// [`LlmContextRecall`](super::LlmContextRecall) and [`AnswerMatch`](super::AnswerMatch).
pub struct LlmJudge<C, R> {
    llm: C,
    prompt: PromptTemplate,
    pub(super) rubric: R,
}

impl<C, R: Rubric> LlmJudge<C, R> {
    /// `rubric` asked of `llm` with the built-in prompt.
    pub(super) fn asking(llm: C, rubric: R) -> Self {
        LlmJudge {
            llm,
            prompt: Self::builtin_prompt(),
            rubric,
        }
    }

    /// The prompt shipped with the library (`src/judge/prompts/<name>.md`).
    pub fn builtin_prompt() -> PromptTemplate {
        PromptTemplate::builtin(R::PROMPT, &format!("{}.md", R::NAME), R::PLACEHOLDERS)
    }

    /// Uses `prompt` instead; it may use the placeholders [`Rubric::PLACEHOLDERS`] (the
    /// judge's `…_PLACEHOLDERS` constant).
    pub fn with_prompt(mut self, prompt: PromptTemplate) -> Self {
        self.prompt = prompt;
        self
    }
}

mod sealed {
    /// Only the judges of this crate are rubrics.
    pub trait Sealed {}
}
pub(super) use sealed::Sealed;

/// What sets one judge apart: its name, its built-in prompt, and how it scores a sample.
#[async_trait::async_trait]
pub trait Rubric: Send + Sync + Sealed {
    /// The metric's name: also the JSON schema's name, the built-in prompt file's stem and
    /// the prompt version's prefix.
    const NAME: &'static str;
    /// The placeholders its prompt may use.
    const PLACEHOLDERS: &'static [&'static str];
    /// Whether it compares with a reference answer: a query without one is `undetermined`,
    /// with no call.
    const NEEDS_REFERENCE: bool = false;
    /// The built-in prompt's text.
    #[doc(hidden)]
    const PROMPT: &'static str;
    /// Judges `s.input` once.
    #[doc(hidden)]
    async fn sample(&self, s: Sample<'_>) -> JudgeSample;
}

#[async_trait::async_trait]
impl<C: LlmClient, R: Rubric> Judge for LlmJudge<C, R> {
    fn name(&self) -> &str {
        R::NAME
    }

    fn prompt_version(&self) -> String {
        format!("{}/{}", R::NAME, self.prompt.version)
    }

    async fn judge(
        &self,
        input: &JudgeInput<'_>,
        sample: u32,
        config: &JudgeConfig,
    ) -> JudgeSample {
        let s = Sample::new(
            input,
            sample,
            config,
            R::NAME,
            self.prompt_version(),
            &self.llm,
            &self.prompt,
        );
        if R::NEEDS_REFERENCE && s.reference.is_empty() {
            let why = "the query has no reference answer";
            return s.unscored(JudgeStatus::Undetermined, why, JudgeUsage::default());
        }
        self.rubric.sample(s).await
    }
}

/// One judging of one query under way.
pub struct Sample<'a> {
    /// What is judged.
    pub(super) input: &'a JudgeInput<'a>,
    /// The reference answer, trimmed (empty when there is none).
    pub(super) reference: &'a str,
    /// The sample index, part of every request's cache key.
    index: u32,
    /// How to call the model.
    pub(super) config: &'a JudgeConfig,
    name: &'a str,
    version: String,
    llm: &'a dyn LlmClient,
    prompt: &'a PromptTemplate,
}

impl<'a> Sample<'a> {
    /// Sample `index` of `input`, asked with `prompt` (version `version`, schema name `name`).
    pub(super) fn new(
        input: &'a JudgeInput<'a>,
        index: u32,
        config: &'a JudgeConfig,
        name: &'a str,
        version: String,
        llm: &'a dyn LlmClient,
        prompt: &'a PromptTemplate,
    ) -> Self {
        Sample {
            input,
            reference: input.reference.map(str::trim).unwrap_or_default(),
            index,
            config,
            name,
            version,
            llm,
            prompt,
        }
    }

    /// Renders the prompt with `values`, asks for an answer of `schema`, parses it as `T` and
    /// checks it with `check`; an answer failing either is sent back with the error, at most
    /// `config.repairs` times. The checked value and the calls' usage, or the sample that says
    /// why there is none.
    pub(super) async fn ask<T: DeserializeOwned, V>(
        &self,
        values: &[(&str, &str)],
        schema: serde_json::Value,
        check: impl Fn(T) -> Result<V, String>,
    ) -> Result<(V, JudgeUsage), JudgeSample> {
        let request = self.request(values, schema);
        let (v, usage, _) = self.ask_with(request, check).await?;
        Ok((v, usage))
    }

    /// The request [`Sample::ask`] sends first.
    pub(super) fn request(
        &self,
        values: &[(&str, &str)],
        schema: serde_json::Value,
    ) -> ChatRequest {
        self.config.request(
            self.prompt.render(values),
            self.version.clone(),
            self.index,
            self.name,
            schema,
        )
    }

    /// The request of a judge's second prompt (the claims judge's check): `prompt` rendered
    /// with `values`, under the prompt version `version`.
    pub(super) fn request_with(
        &self,
        prompt: &PromptTemplate,
        version: String,
        values: &[(&str, &str)],
        schema: serde_json::Value,
    ) -> ChatRequest {
        self.config.request(
            prompt.render(values),
            version,
            self.index,
            self.name,
            schema,
        )
    }

    /// [`Sample::ask`] with `request` as the first request, giving also the answer that
    /// passed (for its token log-probabilities).
    pub(super) async fn ask_with<T: DeserializeOwned, V>(
        &self,
        mut request: ChatRequest,
        check: impl Fn(T) -> Result<V, String>,
    ) -> Result<(V, JudgeUsage, ChatResponse), JudgeSample> {
        let mut usage = JudgeUsage::default();
        let mut attempt = 0;
        loop {
            usage.calls += 1;
            if attempt > 0 {
                usage.repairs += 1;
            }
            let response = match self.llm.complete(&request).await {
                Ok(r) => r,
                Err(e) => return Err(self.failed(&e, usage)),
            };
            usage.prompt_tokens =
                crate::llm::add_tokens(usage.prompt_tokens, response.usage.prompt_tokens);
            usage.completion_tokens =
                crate::llm::add_tokens(usage.completion_tokens, response.usage.completion_tokens);
            let parsed = serde_json::from_str::<T>(strip_fences(&response.content))
                .map_err(|e| format!("not JSON of the expected shape: {e}"))
                .and_then(&check);
            match parsed {
                Ok(v) => return Ok((v, usage, response)),
                // A repair runs under the same token limit, so an answer the limit cut off
                // would be cut off again: it is invalid at once, at no further call, and says
                // so whether it failed to parse or parsed and failed its check.
                Err(message) if response.is_truncated() => {
                    let message = format!("{message} (the answer was cut off by the token limit)");
                    return Err(self.unscored(JudgeStatus::Invalid, message, usage));
                }
                Err(message) if attempt >= self.config.repairs => {
                    return Err(self.unscored(JudgeStatus::Invalid, message, usage))
                }
                Err(message) => {
                    attempt += 1;
                    request
                        .messages
                        .push(ChatMessage::assistant(response.content));
                    request.messages.push(ChatMessage::user(format!(
                        "That answer does not follow the required format: {message}. Reply \
                         again with only the JSON object, following the schema exactly."
                    )));
                }
            }
        }
    }

    /// The sample with a score.
    pub(super) fn scored(
        &self,
        score: f64,
        details: JudgeDetails,
        usage: JudgeUsage,
    ) -> JudgeSample {
        JudgeSample {
            sample: self.index,
            status: JudgeStatus::Ok,
            score: Some(score),
            details,
            message: None,
            kind: None,
            usage,
        }
    }

    /// The sample of a call that failed with `e`: `error`, with the message and its kind.
    pub(super) fn failed(&self, e: &crate::Error, usage: JudgeUsage) -> JudgeSample {
        JudgeSample {
            kind: Some(super::failure_kind(e)),
            ..self.unscored(JudgeStatus::Error, e.to_string(), usage)
        }
    }

    /// The sample without a score, and why.
    pub(super) fn unscored(
        &self,
        status: JudgeStatus,
        message: impl Into<String>,
        usage: JudgeUsage,
    ) -> JudgeSample {
        JudgeSample {
            sample: self.index,
            status,
            score: None,
            details: JudgeDetails::None,
            message: Some(message.into()),
            kind: None,
            usage,
        }
    }
}

/// The JSON inside a Markdown code fence, or the text itself.
fn strip_fences(text: &str) -> &str {
    let t = text.trim();
    let Some(inner) = t.strip_prefix("```") else {
        return t;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

#[cfg(test)]
mod tests {
    use super::strip_fences;

    #[test]
    fn fenced_json_is_unwrapped() {
        assert_eq!(strip_fences("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(strip_fences(" {\"a\":1} "), "{\"a\":1}");
        assert_eq!(strip_fences("```\n[]\n```"), "[]");
    }
}
