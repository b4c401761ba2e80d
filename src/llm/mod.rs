//! Chat-completion clients: the [`LlmClient`] trait, its request and response types, (with
//! the `openai` feature) `OpenAiChat` for OpenAI-compatible servers, and [`PromptTemplate`],
//! the versioned prompt files the generator, the judges and synthetic generation send.
//!
//! ```
//! use rag_eval::llm::{ChatMessage, ChatRequest};
//! use serde_json::json;
//!
//! let request = ChatRequest::new(vec![
//!     ChatMessage::system("Answer in JSON."),
//!     ChatMessage::user("Which planet is largest?"),
//! ])
//! .with_temperature(0.0)
//! .with_max_tokens(200)
//! .with_json_schema(
//!     "answer",
//!     json!({"type": "object", "properties": {"planet": {"type": "string"}},
//!            "required": ["planet"], "additionalProperties": false}),
//! );
//! assert_eq!(request.messages.len(), 2);
//! ```

#[cfg(feature = "openai")]
mod openai;
mod prompt;

#[cfg(feature = "openai")]
pub use openai::{OpenAiChat, OpenAiChatBuilder};
pub use prompt::PromptTemplate;

use crate::error::Result;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Who says a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The user's turn.
    User,
    /// The model's turn (earlier answers, or examples).
    Assistant,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::System,
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::User,
            content: content.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

/// A JSON schema the answer must follow (structured outputs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSchema {
    /// A name for the schema (letters, digits, `_` and `-`).
    pub name: String,
    /// The schema itself.
    pub schema: serde_json::Value,
    /// Whether the server must follow the schema exactly (OpenAI's `strict`).
    pub strict: bool,
}

/// A chat-completion request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far.
    pub messages: Vec<ChatMessage>,
    /// A model other than the client's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sampling temperature; the server's default when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Longest answer, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// A schema the answer must follow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<JsonSchema>,
    /// The version of the prompt template the messages were made from. Never sent to the
    /// server; a cache keys its entries by it, so a new prompt version is a new entry even where
    /// the rendered text happens to be the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_version: Option<String>,
    /// Which of several samples of the same request this is (repeated judging at a temperature
    /// above 0). Never sent to the server; a cache keys its entries by it, so each sample is
    /// recorded and replayed on its own instead of the first answer standing for all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<u32>,
    /// Asks for the log-probabilities of each answer token and of this many alternatives to
    /// it (OpenAI's `logprobs` and `top_logprobs`, at most 20); unset, none are asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<u8>,
}

impl ChatRequest {
    /// A request with these messages and the client's defaults for everything else.
    pub fn new(messages: Vec<ChatMessage>) -> Self {
        ChatRequest {
            messages,
            model: None,
            temperature: None,
            max_tokens: None,
            json_schema: None,
            prompt_version: None,
            sample: None,
            top_logprobs: None,
        }
    }

    /// Uses this model instead of the client's.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the sampling temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Limits the answer's length in tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Records the version of the prompt the messages were made from (cache key only).
    pub fn with_prompt_version(mut self, version: impl Into<String>) -> Self {
        self.prompt_version = Some(version.into());
        self
    }

    /// Marks the request as sample `index` of several (cache key only).
    pub fn with_sample(mut self, index: u32) -> Self {
        self.sample = Some(index);
        self
    }

    /// Asks for each answer token's log-probability and its `n` likeliest alternatives'
    /// (`n` at most 20, OpenAI's limit).
    pub fn with_top_logprobs(mut self, n: u8) -> Self {
        self.top_logprobs = Some(n.min(20));
        self
    }

    /// Asks for an answer that follows `schema` strictly.
    pub fn with_json_schema(mut self, name: impl Into<String>, schema: serde_json::Value) -> Self {
        self.json_schema = Some(JsonSchema {
            name: name.into(),
            schema,
            strict: true,
        });
        self
    }
}

pub use crate::metrics::{add_tokens, MAX_TOKENS};

/// Adds `n` to a shared count with [`add_tokens`].
pub(crate) fn add_tokens_to(count: &std::sync::atomic::AtomicU64, n: u64) {
    use std::sync::atomic::Ordering::Relaxed;
    // The closure always returns `Some`: the update cannot fail.
    let _ = count.fetch_update(Relaxed, Relaxed, |c| Some(add_tokens(c, n)));
}

/// Tokens a call used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Tokens of the request.
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub completion_tokens: u64,
}

impl TokenUsage {
    /// Both together (with [`add_tokens`]).
    pub fn total(&self) -> u64 {
        add_tokens(self.prompt_tokens, self.completion_tokens)
    }

    /// Adds `other`'s counts to these (with [`add_tokens`]).
    pub fn add(&mut self, other: TokenUsage) {
        self.prompt_tokens = add_tokens(self.prompt_tokens, other.prompt_tokens);
        self.completion_tokens = add_tokens(self.completion_tokens, other.completion_tokens);
    }
}

/// One token of an answer with its log-probability and its likeliest alternatives', as the
/// server reports them (asked for with [`ChatRequest::with_top_logprobs`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    /// The token's text.
    pub token: String,
    /// Its natural-log probability.
    pub logprob: f64,
    /// The likeliest tokens at this place (the token itself usually among them), each with
    /// its log-probability.
    #[serde(default)]
    pub top: Vec<(String, f64)>,
}

/// A chat-completion answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The model's text (with a schema: the JSON document).
    pub content: String,
    /// Why the model stopped, as the server says it (`stop`, `length`, `content_filter`, …).
    pub finish_reason: Option<String>,
    /// Tokens used.
    pub usage: TokenUsage,
    /// The model that answered, as the server names it.
    pub model: String,
    /// The answer's tokens with their log-probabilities, when asked for and the server gives
    /// them (a server may not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<TokenLogprob>>,
}

impl ChatResponse {
    /// The content parsed as JSON, for answers to a request with a schema.
    pub fn json<T: DeserializeOwned>(&self) -> std::result::Result<T, serde_json::Error> {
        serde_json::from_str(&self.content)
    }

    /// Whether the answer was cut off by the token limit.
    pub fn is_truncated(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }
}

/// A chat-completion service.
///
/// Implement it to plug in any model; `OpenAiChat` is the built-in one (feature `openai`).
#[async_trait::async_trait]
pub trait LlmClient: Send + Sync {
    /// Provider and model, for reports and cache keys (never secrets).
    fn name(&self) -> String;
    /// Answers `request`.
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse>;
    /// HTTP requests sent again after a transient failure (a timeout, 429, 5xx) since the
    /// client was made: a judge's summary counts its run's, so a flaky server shows. 0 for a
    /// client that does not call over HTTP (the default); a wrapper forwards its inner client's.
    fn http_retries(&self) -> u64 {
        0
    }
}

#[async_trait::async_trait]
impl<L: LlmClient + ?Sized> LlmClient for Arc<L> {
    fn name(&self) -> String {
        (**self).name()
    }
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        (**self).complete(request).await
    }
    fn http_retries(&self) -> u64 {
        (**self).http_retries()
    }
}

#[async_trait::async_trait]
impl<L: LlmClient + ?Sized> LlmClient for &L {
    fn name(&self) -> String {
        (**self).name()
    }
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        (**self).complete(request).await
    }
    fn http_retries(&self) -> u64 {
        (**self).http_retries()
    }
}

#[async_trait::async_trait]
impl<L: LlmClient + ?Sized> LlmClient for Box<L> {
    fn name(&self) -> String {
        (**self).name()
    }
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        (**self).complete(request).await
    }
    fn http_retries(&self) -> u64 {
        (**self).http_retries()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Answers with the last user message reversed, counting characters as tokens.
    struct Echo;

    #[async_trait::async_trait]
    impl LlmClient for Echo {
        fn name(&self) -> String {
            "echo".into()
        }
        async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
            let last = request
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| m.content.chars().rev().collect::<String>())
                .unwrap_or_default();
            Ok(ChatResponse {
                usage: TokenUsage {
                    prompt_tokens: request
                        .messages
                        .iter()
                        .map(|m| m.content.len() as u64)
                        .sum(),
                    completion_tokens: last.len() as u64,
                },
                content: last,
                finish_reason: Some("stop".into()),
                model: request.model.clone().unwrap_or_else(|| "echo-1".into()),
                logprobs: None,
            })
        }
    }

    #[test]
    fn shared_and_boxed_clients_forward() {
        let request = ChatRequest::new(vec![ChatMessage::system("s"), ChatMessage::user("abc")])
            .with_model("m2");
        let boxed: Box<dyn LlmClient> = Box::new(Echo);
        let shared: Arc<dyn LlmClient> = Arc::new(Echo);
        for client in [&boxed as &dyn LlmClient, &shared as &dyn LlmClient] {
            let answer = pollster::block_on(client.complete(&request)).unwrap();
            assert_eq!(answer.content, "cba");
            assert_eq!(answer.model, "m2");
            assert_eq!(answer.usage.total(), 4 + 3);
            assert!(!answer.is_truncated());
            assert_eq!(client.name(), "echo");
        }
    }

    #[test]
    fn requests_serialize_without_unset_fields_and_round_trip() {
        let bare = ChatRequest::new(vec![ChatMessage::user("hi")]);
        assert_eq!(
            serde_json::to_value(&bare).unwrap(),
            json!({"messages": [{"role": "user", "content": "hi"}]})
        );
        let full = bare
            .with_temperature(0.5)
            .with_max_tokens(9)
            .with_json_schema("s", json!({"type": "object"}));
        let back: ChatRequest =
            serde_json::from_value(serde_json::to_value(&full).unwrap()).unwrap();
        assert_eq!(back, full);
        assert!(back.json_schema.unwrap().strict);
    }

    /// Caches hold answers as JSON: one recorded before answers carried log-probabilities
    /// reads back, and one without them is written as it was then.
    #[test]
    fn answers_recorded_without_logprobs_read_back_and_write_as_before() {
        let old = r#"{"content":"ok","finish_reason":"stop","usage":{"prompt_tokens":3,"completion_tokens":1},"model":"m"}"#;
        let answer: ChatResponse = serde_json::from_str(old).unwrap();
        assert_eq!(answer.logprobs, None);
        assert_eq!(serde_json::to_string(&answer).unwrap(), old);
    }

    #[test]
    fn answers_parse_as_json_and_report_truncation() {
        let answer = ChatResponse {
            content: r#"{"planet": "Jupiter"}"#.into(),
            finish_reason: Some("length".into()),
            usage: TokenUsage::default(),
            model: "m".into(),
            logprobs: None,
        };
        let v: serde_json::Value = answer.json().unwrap();
        assert_eq!(v["planet"], "Jupiter");
        assert!(answer.is_truncated());
        let bad = ChatResponse {
            content: "not json".into(),
            ..answer
        };
        assert!(bad.json::<serde_json::Value>().is_err());
    }
}
