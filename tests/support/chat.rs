//! A scripted OpenAI-compatible chat server: the generator and judges of a test, answering
//! each request as the test's script says.

use super::{Reply, Request, TestServer};
use serde_json::{json, Value};

/// One chat request as the script sees it.
pub struct Chat {
    /// The first message's text.
    pub prompt: String,
    /// The name of the JSON schema the answer must follow (`response_format`): the judge
    /// asking; empty for a plain-text request (a generator).
    pub schema: String,
    /// The whole request body.
    pub body: Value,
}

/// A server answering `POST /v1/chat/completions` with what `answer` gives: a response body,
/// or a whole [`Reply`] (a delayed one, say). Any other request gets a 404.
pub fn chat_server<R: Into<Reply>>(
    answer: impl Fn(&Chat) -> R + Send + Sync + 'static,
) -> TestServer {
    TestServer::start(move |r: Request| {
        if r.method != "POST" || r.path() != "/v1/chat/completions" {
            return Reply::json(404, &json!({"error": {"message": "no such route"}}));
        }
        let body = r.json().expect("a JSON body");
        let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let chat = Chat {
            prompt: text(&body["messages"][0]["content"]),
            schema: text(&body["response_format"]["json_schema"]["name"]),
            body,
        };
        answer(&chat).into()
    })
}

/// A chat completion whose message is `content`, having spent `prompt` and `completion`
/// tokens.
pub fn completion(content: &str, (prompt, completion): (u64, u64)) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_760_000_000,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    })
}

/// The first words of passage 1 in a prompt made by `numbered_contexts`: the line after
/// `[1] (…)`.
pub fn first_passage_words(prompt: &str) -> Option<String> {
    let at = prompt.find("[1] (")?;
    let line = prompt[at..].lines().nth(1)?.trim();
    let words: Vec<&str> = line.split_whitespace().take(6).collect();
    (!words.is_empty()).then(|| words.join(" "))
}
