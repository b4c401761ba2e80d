//! Chat completions from any server that speaks OpenAI's `/chat/completions` API.

use super::{ChatMessage, ChatRequest, ChatResponse, LlmClient, TokenLogprob, TokenUsage};
use crate::error::{Error, Result};
use crate::http::{redact_url, HttpClient, HttpConfig, HttpStats};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// [`LlmClient`] for OpenAI's `/chat/completions` API: OpenAI, Azure OpenAI, and compatible
/// servers (Ollama, vLLM, llama.cpp's server, …). A request's JSON schema is sent as
/// `response_format: {"type": "json_schema", …}`.
///
/// ```no_run
/// use rag_eval::llm::{ChatMessage, ChatRequest, LlmClient, OpenAiChat};
///
/// # async fn f() -> rag_eval::Result<()> {
/// let chat = OpenAiChat::new("gpt-4o-mini")?; // key from OPENAI_API_KEY
/// let answer = chat
///     .complete(&ChatRequest::new(vec![ChatMessage::user("Say hi.")]))
///     .await?;
/// println!("{} ({} tokens)", answer.content, answer.usage.total());
/// # Ok(()) }
/// ```
pub struct OpenAiChat {
    client: HttpClient,
    model: String,
    path: String,
    max_completion_tokens: bool,
    requests: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
}

/// Settings of an [`OpenAiChat`]; from [`OpenAiChat::builder`].
#[derive(Debug, Clone)]
pub struct OpenAiChatBuilder {
    model: String,
    http: HttpConfig,
    path: String,
    max_completion_tokens: bool,
}

impl OpenAiChat {
    /// `model` on OpenAI's API, key from `OPENAI_API_KEY`.
    pub fn new(model: impl Into<String>) -> Result<Self> {
        Self::builder(model).build()
    }

    /// Settings for `model` (the default of requests that name none), starting from OpenAI's
    /// API: base URL `https://api.openai.com/v1`, path `/chat/completions`, key from
    /// `OPENAI_API_KEY` (a missing key is allowed: local servers need none).
    pub fn builder(model: impl Into<String>) -> OpenAiChatBuilder {
        OpenAiChatBuilder {
            model: model.into(),
            http: HttpConfig::openai(),
            path: "/chat/completions".to_owned(),
            max_completion_tokens: false,
        }
    }

    /// The default model.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Tokens used so far, as the server reported them.
    pub fn usage(&self) -> TokenUsage {
        TokenUsage {
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            completion_tokens: self.completion_tokens.load(Ordering::Relaxed),
        }
    }

    /// Requests answered so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Attempts, retries and failures of the underlying HTTP client.
    pub fn http_stats(&self) -> HttpStats {
        self.client.stats()
    }

    /// The underlying HTTP client (a clone sharing its statistics).
    pub(crate) fn http_client(&self) -> crate::http::HttpClient {
        self.client.clone()
    }

    fn body<'a>(&'a self, request: &'a ChatRequest) -> CompletionRequest<'a> {
        let (max_tokens, max_completion_tokens) = if self.max_completion_tokens {
            (None, request.max_tokens)
        } else {
            (request.max_tokens, None)
        };
        CompletionRequest {
            model: request.model.as_deref().unwrap_or(&self.model),
            messages: &request.messages,
            temperature: request.temperature,
            max_tokens,
            max_completion_tokens,
            logprobs: request.top_logprobs.map(|_| true),
            top_logprobs: request.top_logprobs,
            response_format: request.json_schema.as_ref().map(|s| ResponseFormat {
                kind: "json_schema",
                json_schema: SchemaFormat {
                    name: &s.name,
                    schema: &s.schema,
                    strict: s.strict,
                },
            }),
        }
    }
}

crate::http::endpoint_builder!(OpenAiChatBuilder, "/chat/completions");

impl OpenAiChatBuilder {
    /// An Azure OpenAI deployment (see
    /// [`OpenAiEmbedderBuilder::azure`](crate::embed::OpenAiEmbedderBuilder::azure)).
    pub fn azure(
        mut self,
        endpoint: impl Into<String>,
        deployment: &str,
        api_version: &str,
    ) -> Self {
        self.path = self
            .http
            .azure(endpoint, deployment, "chat/completions", api_version);
        self
    }

    /// Sends the token limit as `max_completion_tokens`, which OpenAI's reasoning models
    /// require, instead of `max_tokens`, which older servers know.
    pub fn max_completion_tokens(mut self, yes: bool) -> Self {
        self.max_completion_tokens = yes;
        self
    }

    /// The client; fails on a malformed URL or header.
    pub fn build(self) -> Result<OpenAiChat> {
        Ok(OpenAiChat {
            client: HttpClient::new(self.http)?,
            model: self.model,
            path: self.path,
            max_completion_tokens: self.max_completion_tokens,
            requests: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            completion_tokens: AtomicU64::new(0),
        })
    }
}

#[derive(Serialize)]
struct CompletionRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_logprobs: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: SchemaFormat<'a>,
}

#[derive(Serialize)]
struct SchemaFormat<'a> {
    name: &'a str,
    schema: &'a serde_json::Value,
    strict: bool,
}

#[derive(Deserialize)]
struct CompletionResponse {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: AnswerMessage,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    logprobs: Option<ChoiceLogprobs>,
}

#[derive(Deserialize)]
struct ChoiceLogprobs {
    #[serde(default)]
    content: Option<Vec<WireToken>>,
}

#[derive(Deserialize)]
struct WireToken {
    token: String,
    logprob: f64,
    #[serde(default)]
    top_logprobs: Vec<WireAlternative>,
}

#[derive(Deserialize)]
struct WireAlternative {
    token: String,
    logprob: f64,
}

#[derive(Deserialize)]
struct AnswerMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

#[async_trait::async_trait]
impl LlmClient for OpenAiChat {
    fn name(&self) -> String {
        let mut name = format!(
            "openai-chat(model={},base={}",
            self.model,
            redact_url(&self.client.config().base_url)
        );
        if self.path != "/chat/completions" {
            name.push_str(&format!(",path={}", redact_url(&self.path)));
        }
        name.push(')');
        name
    }

    fn http_retries(&self) -> u64 {
        self.client.stats().retries
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let body = self.body(request);
        let answer: CompletionResponse = self.client.post_json(&self.path, &body).await?;
        let unusable = |message: String| Error::Http {
            endpoint: self.client.endpoint(&reqwest::Method::POST, &self.path),
            status: Some(200),
            message,
        };
        let choice = answer
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| unusable("the answer has no choices".to_owned()))?;
        let content = match (choice.message.content, choice.message.refusal) {
            (_, Some(refusal)) if !refusal.is_empty() => {
                return Err(unusable(format!("the model refused: {refusal}")))
            }
            (Some(content), _) => content,
            (None, _) => {
                return Err(unusable(format!(
                    "the answer has no content (finish reason {})",
                    choice.finish_reason.as_deref().unwrap_or("not given")
                )))
            }
        };
        let usage = answer
            .usage
            .map_or_else(TokenUsage::default, |u| TokenUsage {
                prompt_tokens: super::add_tokens(0, u.prompt_tokens),
                completion_tokens: super::add_tokens(0, u.completion_tokens),
            });
        self.requests.fetch_add(1, Ordering::Relaxed);
        super::add_tokens_to(&self.prompt_tokens, usage.prompt_tokens);
        super::add_tokens_to(&self.completion_tokens, usage.completion_tokens);
        let logprobs = choice.logprobs.and_then(|l| l.content).map(|tokens| {
            tokens
                .into_iter()
                .map(|t| TokenLogprob {
                    token: t.token,
                    logprob: t.logprob,
                    top: t
                        .top_logprobs
                        .into_iter()
                        .map(|a| (a.token, a.logprob))
                        .collect(),
                })
                .collect()
        });
        Ok(ChatResponse {
            content,
            finish_reason: choice.finish_reason,
            usage,
            model: answer.model.unwrap_or_else(|| body.model.to_owned()),
            logprobs,
        })
    }
}

impl fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChat")
            .field("model", &self.model)
            .field("path", &redact_url(&self.path))
            .field("max_completion_tokens", &self.max_completion_tokens)
            .field("usage", &self.usage())
            .field("client", &self.client)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chat() -> OpenAiChat {
        OpenAiChat::builder("gpt-4o-mini")
            .api_key(crate::http::ApiKey::new("sk-chat-unit-secret"))
            .build()
            .unwrap()
    }

    #[test]
    fn a_schema_becomes_a_json_schema_response_format() {
        let request = ChatRequest::new(vec![ChatMessage::user("q")])
            .with_temperature(0.0)
            .with_max_tokens(50)
            .with_json_schema("answer", json!({"type": "object"}));
        assert_eq!(
            serde_json::to_value(chat().body(&request)).unwrap(),
            json!({
                "model": "gpt-4o-mini",
                "messages": [{"role": "user", "content": "q"}],
                "temperature": 0.0,
                "max_tokens": 50,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": true}
                }
            })
        );
        let reasoning = OpenAiChat::builder("o3-mini")
            .max_completion_tokens(true)
            .build()
            .unwrap();
        let body =
            serde_json::to_value(reasoning.body(&request.clone().with_model("o4-mini"))).unwrap();
        assert_eq!(body["max_completion_tokens"], 50);
        assert_eq!(body["model"], "o4-mini");
        assert!(body.get("max_tokens").is_none());
    }

    #[test]
    fn names_and_debug_leave_out_the_key() {
        let c = chat();
        assert_eq!(
            c.name(),
            "openai-chat(model=gpt-4o-mini,base=https://api.openai.com/v1)"
        );
        let azure = OpenAiChat::builder("gpt-4o")
            .azure("https://res.openai.azure.com", "chat", "2024-10-21")
            .build()
            .unwrap();
        assert!(azure
            .name()
            .ends_with("path=/openai/deployments/chat/chat/completions?api-version=2024-10-21)"));
        assert!(!format!("{c:?}").contains("sk-chat-unit-secret"));
    }
}
