//! A conversation as a run records it: its turns, each with what the assistant did (its text,
//! its tool calls, the contexts it retrieved) and the figures and judgements of that turn.
//!
//! A conversation run ([`ResultLevel::Conversation`](super::ResultLevel::Conversation)) keeps
//! one [`QueryResult`](super::QueryResult) per conversation: its `id`, its per-conversation
//! figures in `metrics`, its conversation-level judgements in `judges`, and its transcript in
//! `turns`. Records, `compare` (paired by conversation id), the report and `serve` read that
//! one shape.

use super::{Figures, Passage, QueryJudgement, Truth};
use crate::metrics::tool_calls::ToolCall;
use serde::{Deserialize, Serialize};

/// Who speaks in a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person (ragas' `human`).
    User,
    /// The system under test (ragas' `ai`).
    Assistant,
    /// A tool's result, answering a call of an assistant turn before it.
    Tool,
}

impl Role {
    /// `user`, `assistant` or `tool`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One turn of a recorded conversation, with its figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnResult {
    /// Who speaks.
    pub role: Role,
    /// What was said: a tool turn's result; empty for an assistant turn that only calls tools.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content: String,
    /// The tools an assistant turn called, in order, with their arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool turn answers, when the transcript names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The contexts an assistant turn retrieved, best first (`None` for a turn that did not
    /// retrieve; an empty list for one that retrieved nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contexts: Option<Vec<Passage>>,
    /// What an assistant turn should have answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_answer: Option<String>,
    /// What an assistant turn should have retrieved, when the conversation says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truth: Option<Truth>,
    /// The turn's own figures (retrieval and answer metrics of an assistant turn), by name in
    /// report order; a figure the turn has nothing to judge for is absent.
    #[serde(default, skip_serializing_if = "Figures::is_empty")]
    pub metrics: Figures,
    /// What each LLM judge said of the turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judges: Vec<QueryJudgement>,
}

impl TurnResult {
    /// A turn with `content` and nothing else.
    pub fn new(role: Role, content: impl Into<String>) -> TurnResult {
        TurnResult {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            contexts: None,
            reference_answer: None,
            truth: None,
            metrics: Figures::default(),
            judges: Vec::new(),
        }
    }
}
