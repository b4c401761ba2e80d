//! The model's answer to a generation call: its schema, and reading it leniently.

use super::Difficulty;
use crate::error::Result;
use crate::llm::{ChatMessage, ChatRequest, LlmClient, TokenUsage};
use serde::Deserialize;

/// The answer of a generation call, read leniently: missing fields become empty (and are
/// counted as such), a bare array is taken as the question list, and a Markdown code fence
/// around the JSON is ignored.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawAnswer<Q> {
    #[serde(default = "Vec::new")]
    pub(crate) questions: Vec<Q>,
}

/// An answer's JSON, with a Markdown code fence around it ignored.
pub(crate) fn parse_answer_value(content: &str) -> std::result::Result<serde_json::Value, String> {
    let body = strip_fence(content);
    if body.trim().is_empty() {
        return Err("the answer is empty".into());
    }
    serde_json::from_str(body).map_err(|e| e.to_string())
}

pub(crate) fn parse_answer<Q: serde::de::DeserializeOwned>(
    content: &str,
) -> std::result::Result<Vec<Q>, String> {
    let value = match parse_answer_value(content)? {
        a @ serde_json::Value::Array(_) => serde_json::json!({ "questions": a }),
        v => v,
    };
    if !value.get("questions").is_some_and(|q| q.is_array()) {
        return Err("the answer has no `questions` array".into());
    }
    serde_json::from_value::<RawAnswer<Q>>(value)
        .map(|a| a.questions)
        .map_err(|e| e.to_string())
}

fn strip_fence(s: &str) -> &str {
    let t = s.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.split_once('\n').map_or("", |(_, r)| r);
    rest.trim_end().strip_suffix("```").unwrap_or(rest).trim()
}

/// The short answer the model gave with a question, trimmed; `None` when it is missing, not a
/// string, or blank. A question without one is still kept: it only lacks a reference answer.
pub(crate) fn read_reference(q: &serde_json::Value) -> Option<String> {
    let a = q.get("answer")?.as_str()?.trim();
    (!a.is_empty()).then(|| a.to_owned())
}

/// A difficulty label as the model wrote it; unknown labels read as none.
pub(crate) fn read_difficulty(label: Option<&str>) -> Option<Difficulty> {
    label.and_then(|l| l.parse().ok())
}

/// Sends a generation request; an answer that does not parse gets one more chance with a
/// reminder. `None` when the second answer does not parse either, or when the reminder with
/// the first answer is more than the model's context takes.
pub(crate) async fn ask_json<C: LlmClient, Q: serde::de::DeserializeOwned>(
    client: &C,
    request: ChatRequest,
    usage: &mut TokenUsage,
    calls: &mut usize,
    what: &str,
) -> Result<Option<Vec<Q>>> {
    let first = client.complete(&request).await?;
    *calls += 1;
    add_usage(usage, first.usage);
    let error = match parse_answer(&first.content) {
        Ok(q) => return Ok(Some(q)),
        Err(e) => e,
    };
    tracing::debug!("{what}: answer was not the JSON asked for ({error}); asking again");
    let mut retry = request;
    retry
        .messages
        .push(ChatMessage::assistant(first.content.clone()));
    retry.messages.push(ChatMessage::user(format!(
        "That answer could not be used: {error}. Reply again with only the JSON object \
         {{\"questions\": [...]}} described above, with no other text."
    )));
    let second = match client.complete(&retry).await {
        Ok(second) => second,
        // The broken answer ran on until the context was full, so the reminder does not fit:
        // the answer is unusable, not the document.
        Err(e) if super::fit::overflow(&e).is_some() => {
            tracing::warn!("{what}: the answer was not the JSON asked for ({error}), and too long to send back with a reminder; skipping it");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    *calls += 1;
    add_usage(usage, second.usage);
    match parse_answer(&second.content) {
        Ok(q) => Ok(Some(q)),
        Err(e) => {
            tracing::warn!(
                "{what}: the answer was not the JSON asked for, twice ({e}); skipping it"
            );
            Ok(None)
        }
    }
}

pub(crate) fn add_usage(total: &mut TokenUsage, u: TokenUsage) {
    total.prompt_tokens = crate::llm::add_tokens(total.prompt_tokens, u.prompt_tokens);
    total.completion_tokens = crate::llm::add_tokens(total.completion_tokens, u.completion_tokens);
}

/// The JSON schema of a generator's answer: questions, each with its evidence (`excerpts` or
/// `chunk_ids`) as a list of strings, a short answer and a difficulty label.
pub(crate) fn answer_schema(evidence: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string"},
                        evidence: {"type": "array", "items": {"type": "string"}},
                        "answer": {"type": "string"},
                        "difficulty": {
                            "type": "string",
                            "enum": Difficulty::ALL.iter().map(|d| d.as_str()).collect::<Vec<_>>()
                        }
                    },
                    "required": ["question", evidence, "answer", "difficulty"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["questions"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse_leniently_but_not_blindly() {
        #[derive(Deserialize, Debug)]
        struct Q {
            question: String,
        }
        let fenced = "```json\n{\"questions\": [{\"question\": \"a\"}]}\n```";
        assert_eq!(parse_answer::<Q>(fenced).unwrap()[0].question, "a");
        let bare = "[{\"question\": \"b\"}]";
        assert_eq!(parse_answer::<Q>(bare).unwrap()[0].question, "b");
        assert!(parse_answer::<Q>("").unwrap_err().contains("empty"));
        assert!(parse_answer::<Q>("{\"qs\": []}")
            .unwrap_err()
            .contains("no `questions`"));
        assert!(parse_answer::<Q>("Sure! Here are").is_err());
    }

    #[test]
    fn a_missing_or_blank_answer_is_no_reference() {
        let q = |v: serde_json::Value| read_reference(&v);
        assert_eq!(
            q(serde_json::json!({"answer": "  In May. "})),
            Some("In May.".into())
        );
        assert_eq!(q(serde_json::json!({"answer": " \n "})), None);
        assert_eq!(q(serde_json::json!({"answer": 5})), None);
        assert_eq!(q(serde_json::json!({"question": "?"})), None);
    }

    /// Answers prose that never ends the first time, and refuses the reminder as longer than
    /// its context.
    struct Rambling;

    #[async_trait::async_trait]
    impl LlmClient for Rambling {
        fn name(&self) -> String {
            "rambling".into()
        }
        async fn complete(&self, request: &ChatRequest) -> Result<crate::llm::ChatResponse> {
            if request.messages.len() > 1 {
                return Err(crate::error::Error::Http {
                    endpoint: "POST http://127.0.0.1:1/v1/chat/completions".into(),
                    status: Some(400),
                    message: r#"400 Bad Request: {"error":{"type":"exceed_context_size_error","n_prompt_tokens":2094,"n_ctx":2048}}"#.into(),
                });
            }
            Ok(crate::llm::ChatResponse {
                content: "{\"questions\": [{\"question\": \"What is what is what is".into(),
                finish_reason: Some("length".into()),
                usage: TokenUsage::default(),
                model: "m".into(),
                logprobs: None,
            })
        }
    }

    #[test]
    fn a_reminder_longer_than_the_context_leaves_the_answer_unusable_not_the_run() {
        let (mut usage, mut calls) = (TokenUsage::default(), 0);
        let request = ChatRequest::new(vec![ChatMessage::user("questions, please")]);
        let got = pollster::block_on(ask_json::<_, serde_json::Value>(
            &Rambling,
            request,
            &mut usage,
            &mut calls,
            "questions",
        ));
        assert!(matches!(got, Ok(None)), "{got:?}");
        assert_eq!(calls, 1);
    }

    #[test]
    fn the_answer_schema_names_the_evidence_field() {
        let s = answer_schema("excerpts");
        let item = &s["properties"]["questions"]["items"];
        assert_eq!(item["properties"]["excerpts"]["type"], "array");
        assert_eq!(
            item["required"],
            serde_json::json!(["question", "excerpts", "answer", "difficulty"])
        );
        assert_eq!(item["properties"]["answer"]["type"], "string");
        assert!(item["properties"].get("evidence").is_none());
    }
}
