//! One judge question: a request with a JSON schema, the answer parsed and checked, and a
//! bounded number of repair turns when it breaks the schema.

use super::outcome::JudgeUsage;
use crate::llm::{ChatMessage, ChatRequest, LlmClient};
use serde::de::DeserializeOwned;

/// How a judge question ended.
#[derive(Debug)]
pub(crate) enum Answer<T> {
    /// Parsed and checked.
    Valid(T),
    /// Broke the schema on every attempt; the last error.
    Invalid(String),
    /// The client failed (after its own retries).
    Failed(String),
}

/// Asks `request`, parses the answer as `T` and checks it with `check`; an answer that fails
/// either is sent back with the error, at most `repairs` times.
pub(crate) async fn ask<T, V>(
    llm: &dyn LlmClient,
    request: ChatRequest,
    repairs: u32,
    usage: &mut JudgeUsage,
    check: impl Fn(T) -> Result<V, String>,
) -> Answer<V>
where
    T: DeserializeOwned,
{
    let mut request = request;
    let mut attempt = 0;
    loop {
        usage.calls += 1;
        if attempt > 0 {
            usage.repairs += 1;
        }
        let response = match llm.complete(&request).await {
            Ok(r) => r,
            Err(e) => return Answer::Failed(e.to_string()),
        };
        usage.prompt_tokens += response.usage.prompt_tokens;
        usage.completion_tokens += response.usage.completion_tokens;
        let parsed = serde_json::from_str::<T>(strip_fences(&response.content))
            .map_err(|e| {
                let cut = if response.is_truncated() {
                    " (the answer was cut off by the token limit)"
                } else {
                    ""
                };
                format!("not JSON of the expected shape: {e}{cut}")
            })
            .and_then(&check);
        match parsed {
            Ok(v) => return Answer::Valid(v),
            Err(message) if attempt >= repairs => return Answer::Invalid(message),
            Err(message) => {
                attempt += 1;
                request
                    .messages
                    .push(ChatMessage::assistant(response.content));
                request.messages.push(ChatMessage::user(format!(
                    "That answer does not follow the required format: {message}. Reply again \
                     with only the JSON object, following the schema exactly."
                )));
            }
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
