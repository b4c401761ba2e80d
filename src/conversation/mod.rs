//! Conversations: multi-turn transcripts of a chat assistant or an agent, with what they
//! should have done.
//!
//! A [`Conversation`] is a list of [`Turn`]s — the user's, the assistant's (its text, the
//! [tool calls](ToolCall) it made, the contexts it retrieved) and the tools' results — and its
//! references: the tool calls it should have made, the outcome it should reach, the topics it
//! should keep to, and per assistant turn a reference answer and the spans it should have
//! retrieved. A single question and its answer is the one-turn case.
//!
//! Conversations are read from JSONL, one conversation a line, in rag-eval's own format or as
//! ragas' `EvaluationDataset.to_jsonl` and deepeval's `ConversationalTestCase` write them
//! ([`Format`]); `docs/reference/conversations.md` describes the three. The [`Reader`] reads
//! one line at a time and stops at the first error, which names the file, the line and the
//! field.
//!
//! ```
//! use rag_eval::conversation::{Reader, Role};
//! let text = r#"{"id":"c1","turns":[
//!   {"role":"user","content":"What is 6 times 7?"},
//!   {"role":"assistant","tool_calls":[{"id":"t1","name":"calculator","args":{"expr":"6*7"}}]},
//!   {"role":"tool","tool_call_id":"t1","content":"42"},
//!   {"role":"assistant","content":"42."}],
//!  "reference_tool_calls":[{"name":"calculator","args":{"expr":"6*7"}}]}"#
//!     .replace('\n', "");
//! let conversations = Reader::new(text.as_bytes(), "chats.jsonl".into())
//!     .collect::<Result<Vec<_>, _>>()?;
//! let c = &conversations[0];
//! assert_eq!(c.turns[2].role, Role::Tool);
//! assert_eq!(c.tool_calls().len(), 1);
//! assert_eq!(c.steps(), 2);
//! # Ok::<(), rag_eval::Error>(())
//! ```

pub mod play;
mod read;
pub mod score;

pub use read::{Format, Reader};

use crate::answers::TextContext;
use crate::chunk::RetrievedChunk;
pub use crate::metrics::tool_calls::ToolCall;
pub use crate::metrics::Role;
use crate::span::CharSpan;

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Who speaks.
    pub role: Role,
    /// What was said: a tool turn's result; empty for an assistant turn that only calls tools.
    pub content: String,
    /// The tools an assistant turn called, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool turn answers, when the transcript names it.
    pub tool_call_id: Option<String>,
    /// The contexts an assistant turn retrieved, best first: placed chunks, and contexts
    /// given as text alone with no characters placed yet (listed in `text_contexts`).
    pub contexts: Vec<RetrievedChunk>,
    /// The contexts given as text alone, by index in `contexts`, to be placed in a corpus
    /// as an answers file's are ([`ContextLocator`](crate::answers::place::ContextLocator)).
    pub text_contexts: Vec<(usize, TextContext)>,
    /// What an assistant turn should have answered.
    pub reference_answer: Option<String>,
    /// The spans an assistant turn should have retrieved (`None` when not given; an empty
    /// list says it should have retrieved nothing).
    pub relevant_spans: Option<Vec<CharSpan>>,
}

impl Turn {
    /// A turn with `content` and nothing else.
    pub fn new(role: Role, content: impl Into<String>) -> Turn {
        Turn {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            contexts: Vec::new(),
            text_contexts: Vec::new(),
            reference_answer: None,
            relevant_spans: None,
        }
    }
}

/// A conversation and its references.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// Its id: given, or `line-N` for a sample whose format has none (ragas') and that
    /// gives none.
    pub id: String,
    /// The line of the file it was read from (1-based).
    pub line: usize,
    /// The turns, in order.
    pub turns: Vec<Turn>,
    /// The tool calls the conversation should make, in order (`None` when not given: the
    /// tool-call metrics are not measured; an empty list says no tool should be called).
    pub reference_tool_calls: Option<Vec<ToolCall>>,
    /// The outcome the conversation should reach (ragas' `reference`, deepeval's
    /// `expected_outcome`).
    pub reference_outcome: Option<String>,
    /// The topics the assistant should keep to.
    pub reference_topics: Vec<String>,
    /// The most assistant turns the conversation may take (a bar on [`Conversation::steps`]).
    pub max_steps: Option<usize>,
}

impl Conversation {
    /// Every tool call the assistant made, in order.
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        self.turns
            .iter()
            .flat_map(|t| t.tool_calls.iter().cloned())
            .collect()
    }

    /// The assistant's steps: its turns, each one answer of the model (a turn that calls
    /// tools, a turn that answers).
    pub fn steps(&self) -> usize {
        self.turns
            .iter()
            .filter(|t| t.role == Role::Assistant)
            .count()
    }
}
