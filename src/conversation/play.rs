//! Playing a conversation through a system under test: the dataset's user turns are said
//! one by one, the system answers each with [`AssistantTurn`]s, and the tool results the
//! dataset recorded stand in for tools the system does not run itself.
//!
//! For each user turn the system is called with the conversation so far. While its turn
//! calls tools, the results of those calls go into the conversation as tool turns — the
//! system's own ([`AssistantTurn::tool_results`]) or, when it gives none, the results the
//! dataset recorded for a call of the same tool (the same arguments first, then in order) —
//! and the system is called again, until it answers without calling a tool. A call the
//! dataset has no result for, and a conversation that takes more than its step cap, end the
//! play with a [`PlayError`] that names the conversation, the user turn and the step.
//!
//! The played conversation keeps the dataset's references (reference calls, outcome, topics,
//! `max_steps`); each user turn's last assistant turn takes the reference answer and the
//! spans of the recorded turn that answered it, so turn metrics score what was played.
//!
//! ```
//! use rag_eval::conversation::play::{play, AssistantTurn};
//! use rag_eval::conversation::{Reader, ToolCall};
//! use serde_json::json;
//! let line = r#"{"id":"c1","turns":[{"role":"user","content":"6 times 7?"},{"role":"assistant","tool_calls":[{"id":"t1","name":"calculator","args":{"expr":"6*7"}}]},{"role":"tool","tool_call_id":"t1","content":"42"},{"role":"assistant","content":"42."}],"reference_tool_calls":[{"name":"calculator","args":{"expr":"6*7"}}]}"#;
//! let c = Reader::new(line.as_bytes(), "chats.jsonl".into()).next().unwrap()?;
//! let played = tokio::runtime::Runtime::new()?.block_on(play(&c, None, |so_far| async move {
//!     // A tool result in the conversation so far: answer with it; else call the calculator.
//!     match so_far.last() {
//!         Some(t) if t.role == rag_eval::conversation::Role::Tool => AssistantTurn::answer(&t.content),
//!         _ => AssistantTurn::calling(vec![ToolCall::new("calculator", json!({"expr": "6*7"}))]),
//!     }
//! }))?;
//! assert_eq!(played.steps(), 2);
//! assert_eq!(played.turns[2].content, "42"); // the recorded result, fed back
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use super::{Conversation, Role, ToolCall, Turn};
use crate::chunk::RetrievedChunk;
use std::future::Future;

/// The most assistant turns one user turn may take when no `max_steps` is given: a system
/// that keeps calling tools is stopped there, and the play fails.
pub const STEP_CAP: usize = 16;

/// The system's next turn: what it says, the tools it calls, the contexts it retrieved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantTurn {
    /// The text of the turn; empty for a turn that only calls tools.
    pub content: String,
    /// The tools the turn calls, in order. A turn with none answers the user.
    pub tool_calls: Vec<ToolCall>,
    /// The contexts the turn retrieved, best first (scored as that turn's retrieval).
    pub contexts: Vec<RetrievedChunk>,
    /// The results of the turn's calls when the system ran its tools itself, in the calls'
    /// order; empty: the results the dataset recorded are fed back instead. With results and
    /// `content` both, the system ran its tools and answered in one call (an agent service
    /// that reports the calls it made): the transcript gets the calls, their results and the
    /// answer as turns of their own, and the system is not called again for this user turn.
    pub tool_results: Vec<String>,
}

impl AssistantTurn {
    /// A turn that answers with `content`.
    pub fn answer(content: impl Into<String>) -> AssistantTurn {
        AssistantTurn {
            content: content.into(),
            ..AssistantTurn::default()
        }
    }

    /// A turn that calls `calls` and says nothing yet.
    pub fn calling(calls: Vec<ToolCall>) -> AssistantTurn {
        AssistantTurn {
            tool_calls: calls,
            ..AssistantTurn::default()
        }
    }

    /// The same turn with the contexts it retrieved.
    pub fn with_contexts(mut self, contexts: Vec<RetrievedChunk>) -> AssistantTurn {
        self.contexts = contexts;
        self
    }
}

/// Why a conversation could not be played to its end.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlayError {
    /// The system called a tool it does not run, and the dataset records no result for it.
    #[error("conversation `{id}`, user turn {user_turn}, step {step}: the system called `{tool}` with {args}, and the dataset records no unused result of `{tool}` for that turn; record one, or run the tool in the system (`AssistantTurn::tool_results`)")]
    NoRecordedResult {
        /// The conversation.
        id: String,
        /// The user turn (1-based).
        user_turn: usize,
        /// The step of that user turn (1-based).
        step: usize,
        /// The tool called.
        tool: String,
        /// Its arguments, as JSON.
        args: String,
    },
    /// The system gave a number of tool results other than its number of calls.
    #[error("conversation `{id}`, user turn {user_turn}, step {step}: the system made {calls} tool calls and gave {results} results; give one result per call, or none to feed back the recorded ones")]
    ResultCount {
        /// The conversation.
        id: String,
        /// The user turn (1-based).
        user_turn: usize,
        /// The step of that user turn (1-based).
        step: usize,
        /// Calls made.
        calls: usize,
        /// Results given.
        results: usize,
    },
    /// The system still called tools when the step cap was reached.
    #[error("conversation `{id}`, user turn {user_turn}: the system needed more steps than {why} allows (at step {steps} of the conversation; its calls there: {calls})")]
    TooManySteps {
        /// The conversation.
        id: String,
        /// The user turn (1-based).
        user_turn: usize,
        /// The step of the conversation where the cap was hit (1-based).
        steps: usize,
        /// Which cap: `max_steps = N` or the harness's own.
        why: String,
        /// The names of the last turn's calls.
        calls: String,
    },
    /// The dataset's conversation has no user turn to play.
    #[error("conversation `{0}` has no user turn to play")]
    NoUserTurn(String),
}

/// A recorded result of a call: the call, its result, and whether it was fed back already.
struct Recorded {
    call: ToolCall,
    result: String,
    used: bool,
}

/// The dataset's conversation cut at its user turns: each user turn, the recorded results of
/// the calls made before the next one, and the recorded turn that last answered it.
struct Segment<'a> {
    user: &'a Turn,
    recorded: Vec<Recorded>,
    answer: Option<&'a Turn>,
}

fn segments(c: &Conversation) -> Vec<Segment<'_>> {
    let mut out: Vec<Segment> = Vec::new();
    let mut pending: Vec<&ToolCall> = Vec::new();
    for t in &c.turns {
        match t.role {
            Role::User => {
                pending.clear();
                out.push(Segment {
                    user: t,
                    recorded: Vec::new(),
                    answer: None,
                });
            }
            Role::Assistant => {
                pending.extend(&t.tool_calls);
                if let Some(s) = out.last_mut() {
                    s.answer = Some(t);
                }
            }
            Role::Tool => {
                // The call it answers: by id when both name one, else the oldest pending call.
                let at = t
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| pending.iter().position(|c| c.id.as_ref() == Some(id)))
                    .or((!pending.is_empty()).then_some(0));
                if let (Some(at), Some(s)) = (at, out.last_mut()) {
                    s.recorded.push(Recorded {
                        call: pending.remove(at).clone(),
                        result: t.content.clone(),
                        used: false,
                    });
                }
            }
        }
    }
    out
}

/// What the system is shown of a turn: who spoke, what was said, the calls and their ids;
/// never the dataset's references.
fn shown(t: &Turn) -> Turn {
    Turn {
        tool_calls: t.tool_calls.clone(),
        tool_call_id: t.tool_call_id.clone(),
        ..Turn::new(t.role, t.content.clone())
    }
}

/// Plays `c`'s user turns through `system`, which is given the conversation so far and
/// returns its next turn. `max_steps` caps the assistant turns of the whole conversation
/// (a case's `max_steps`); without it each user turn may take [`STEP_CAP`] steps.
pub async fn play<F, Fut>(
    c: &Conversation,
    max_steps: Option<usize>,
    mut system: F,
) -> Result<Conversation, PlayError>
where
    F: FnMut(Vec<Turn>) -> Fut,
    Fut: Future<Output = AssistantTurn>,
{
    let mut segments = segments(c);
    if segments.is_empty() {
        return Err(PlayError::NoUserTurn(c.id.clone()));
    }
    let mut turns: Vec<Turn> = Vec::new();
    let mut total = 0;
    for (u, segment) in segments.iter_mut().enumerate() {
        turns.push(shown(segment.user));
        let mut step = 0;
        loop {
            step += 1;
            total += 1;
            let next = system(turns.iter().map(shown).collect()).await;
            let calling = !next.tool_calls.is_empty();
            // With `max_steps` the whole conversation has that many steps: a turn past it, or
            // a call at its last one (which needs one more step to answer), ends the play.
            let over = match max_steps {
                Some(max) if total > max || (calling && total == max) => {
                    Some(format!("max_steps = {max}"))
                }
                None if calling && step >= STEP_CAP => {
                    Some(format!("the cap of {STEP_CAP} steps per user turn"))
                }
                _ => None,
            };
            if let Some(why) = over {
                let calls: Vec<String> = next
                    .tool_calls
                    .iter()
                    .map(|c| format!("`{}`", c.name))
                    .collect();
                return Err(PlayError::TooManySteps {
                    id: c.id.clone(),
                    user_turn: u + 1,
                    steps: total,
                    why,
                    calls: if calls.is_empty() {
                        "none: it was answering".into()
                    } else {
                        calls.join(", ")
                    },
                });
            }
            let answered = calling && !next.tool_results.is_empty() && !next.content.is_empty();
            let (content, contexts) = if answered {
                (String::new(), Vec::new())
            } else {
                (next.content.clone(), next.contexts.clone())
            };
            let mut turn = Turn::new(Role::Assistant, content);
            turn.tool_calls = next.tool_calls;
            turn.contexts = contexts;
            if !calling {
                if let Some(answer) = segment.answer {
                    turn.reference_answer = answer.reference_answer.clone();
                    turn.relevant_spans = answer.relevant_spans.clone();
                }
                turns.push(turn);
                break;
            }
            let results = if next.tool_results.is_empty() {
                let mut fed = Vec::new();
                for call in &turn.tool_calls {
                    fed.push(recorded_result(segment, call).ok_or_else(|| {
                        PlayError::NoRecordedResult {
                            id: c.id.clone(),
                            user_turn: u + 1,
                            step,
                            tool: call.name.clone(),
                            args: serde_json::Value::Object(call.args.clone()).to_string(),
                        }
                    })?);
                }
                fed
            } else if next.tool_results.len() == turn.tool_calls.len() {
                next.tool_results
            } else {
                return Err(PlayError::ResultCount {
                    id: c.id.clone(),
                    user_turn: u + 1,
                    step,
                    calls: turn.tool_calls.len(),
                    results: next.tool_results.len(),
                });
            };
            let ids: Vec<Option<String>> = turn.tool_calls.iter().map(|c| c.id.clone()).collect();
            turns.push(turn);
            for (id, result) in ids.into_iter().zip(results) {
                let mut tool = Turn::new(Role::Tool, result);
                tool.tool_call_id = id;
                turns.push(tool);
            }
            if answered {
                let mut turn = Turn::new(Role::Assistant, next.content);
                turn.contexts = next.contexts;
                if let Some(answer) = segment.answer {
                    turn.reference_answer = answer.reference_answer.clone();
                    turn.relevant_spans = answer.relevant_spans.clone();
                }
                turns.push(turn);
                break;
            }
        }
    }
    Ok(Conversation { turns, ..c.clone() })
}

/// The recorded result for `call` in its user turn: an unused one of the same tool and
/// arguments, else the first unused one of the same tool.
fn recorded_result(segment: &mut Segment, call: &ToolCall) -> Option<String> {
    let unused = |r: &&mut Recorded| !r.used && r.call.name == call.name;
    let at = segment
        .recorded
        .iter_mut()
        .filter(unused)
        .position(|r| r.call.args == call.args);
    let r = match at {
        Some(at) => segment.recorded.iter_mut().filter(unused).nth(at),
        None => segment.recorded.iter_mut().find(unused),
    }?;
    r.used = true;
    Some(r.result.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Reader;
    use serde_json::json;

    fn conversation(line: &str) -> Conversation {
        Reader::new(line.as_bytes(), "c.jsonl".into())
            .next()
            .unwrap()
            .unwrap()
    }

    const TWO_TURNS: &str = r#"{"id":"c1","turns":[{"role":"user","content":"6 times 7?"},{"role":"assistant","tool_calls":[{"id":"a","name":"calc","args":{"e":"6*7"}},{"id":"b","name":"calc","args":{"e":"1+1"}}]},{"role":"tool","tool_call_id":"b","content":"2"},{"role":"tool","tool_call_id":"a","content":"42"},{"role":"assistant","content":"42.","reference_answer":"42"},{"role":"user","content":"thanks"},{"role":"assistant","content":"welcome"}],"reference_tool_calls":[{"name":"calc","args":{"e":"6*7"}}]}"#;

    fn block_on<T>(f: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn recorded_results_are_fed_back_by_tool_and_arguments() {
        let c = conversation(TWO_TURNS);
        let played = block_on(play(&c, None, |so_far: Vec<Turn>| async move {
            match so_far.last().unwrap().role {
                Role::User if so_far.len() == 1 => AssistantTurn::calling(vec![
                    ToolCall::new("calc", json!({"e": "1+1"})),
                    ToolCall::new("calc", json!({"e": "6*7"})),
                ]),
                Role::Tool => AssistantTurn::answer(format!(
                    "{} then {}",
                    so_far[2].content, so_far[3].content
                )),
                _ => AssistantTurn::answer("bye"),
            }
        }))
        .unwrap();
        let roles: Vec<Role> = played.turns.iter().map(|t| t.role).collect();
        use Role::*;
        assert_eq!(
            roles,
            [User, Assistant, Tool, Tool, Assistant, User, Assistant]
        );
        // Each call gets the result recorded for its arguments, whatever the order.
        assert_eq!(played.turns[4].content, "2 then 42");
        assert_eq!(played.turns[4].reference_answer.as_deref(), Some("42"));
        assert_eq!(played.reference_tool_calls, c.reference_tool_calls);
        assert_eq!(played.steps(), 3);
    }

    #[test]
    fn a_system_that_ran_its_tools_and_answered_is_not_called_again() {
        let c = conversation(TWO_TURNS);
        let calls = std::cell::Cell::new(0);
        let played = block_on(play(&c, None, |_| {
            calls.set(calls.get() + 1);
            async {
                AssistantTurn {
                    content: "42.".into(),
                    tool_results: vec!["42".into()],
                    ..AssistantTurn::calling(vec![ToolCall::new("calc", json!({"e": "6*7"}))])
                }
            }
        }))
        .unwrap();
        assert_eq!(calls.get(), 2, "once per user turn");
        let shape: Vec<(Role, &str, usize)> = played.turns[..4]
            .iter()
            .map(|t| (t.role, t.content.as_str(), t.tool_calls.len()))
            .collect();
        use Role::*;
        assert_eq!(
            shape,
            [
                (User, "6 times 7?", 0),
                (Assistant, "", 1),
                (Tool, "42", 0),
                (Assistant, "42.", 0)
            ]
        );
        assert_eq!(played.turns[3].reference_answer.as_deref(), Some("42"));
    }

    #[test]
    fn a_call_without_a_recorded_result_names_the_tool_and_turn() {
        let c = conversation(TWO_TURNS);
        let e = block_on(play(&c, None, |_| async {
            AssistantTurn::calling(vec![ToolCall::new("search", json!({"q": "x"}))])
        }))
        .unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("conversation `c1`, user turn 1, step 1") && m.contains("`search`"),
            "{m}"
        );
    }

    #[test]
    fn a_system_that_keeps_calling_is_stopped_at_the_cap() {
        let c = conversation(TWO_TURNS);
        let looping = |_| async {
            AssistantTurn {
                tool_results: vec!["again".into()],
                ..AssistantTurn::calling(vec![ToolCall::new("calc", json!({}))])
            }
        };
        let m = block_on(play(&c, Some(3), looping))
            .unwrap_err()
            .to_string();
        assert!(
            m.contains(
                "user turn 1: the system needed more steps than max_steps = 3 allows (at step 3"
            ),
            "{m}"
        );
        let m = block_on(play(&c, None, looping)).unwrap_err().to_string();
        assert!(
            m.contains("than the cap of 16 steps per user turn allows (at step 16"),
            "{m}"
        );
        // The second user turn's answer is one step past the conversation's cap of 1.
        let answering = |_| async { AssistantTurn::answer("ok") };
        let m = block_on(play(&c, Some(1), answering))
            .unwrap_err()
            .to_string();
        assert!(m.contains("user turn 2: the system needed more steps than max_steps = 1 allows (at step 2 of the conversation; its calls there: none: it was answering)"), "{m}");
        let wrong = |_| async {
            AssistantTurn {
                tool_results: vec!["a".into(), "b".into()],
                ..AssistantTurn::calling(vec![ToolCall::new("calc", json!({}))])
            }
        };
        let m = block_on(play(&c, None, wrong)).unwrap_err().to_string();
        assert!(m.contains("made 1 tool calls and gave 2 results"), "{m}");
    }
}
