//! Scoring a conversation: the agent metrics of its tool calls and steps.

use super::Conversation;
use crate::metrics::tool_calls::{self, Args, Order, Sequence};

/// The figures of a conversation, in report order. The first seven compare with the
/// reference calls; `tool_calls` and `steps` count; `steps_within_max` holds `steps` to the
/// conversation's `max_steps`.
pub const AGENT_METRICS: [&str; 10] = [
    "tool_call_accuracy",
    "tool_call_accuracy_flexible",
    "tool_call_f1",
    "tool_sequence_exact",
    "tool_sequence_in_order",
    "tool_args_match",
    "tool_args_match_exact",
    "tool_calls",
    "steps",
    "steps_within_max",
];

/// Every figure of `c`, `None` where there is nothing to compare (no reference calls given,
/// or none expected and none made; no `max_steps`).
pub fn agent_figures(c: &Conversation) -> [Option<f64>; 10] {
    let made = c.tool_calls();
    let steps = c.steps();
    let counts = [
        Some(made.len() as f64),
        Some(steps as f64),
        tool_calls::within_max(steps, c.max_steps),
    ];
    let compared = match &c.reference_tool_calls {
        None => [None; 7],
        Some(want) => [
            tool_calls::tool_call_accuracy(&made, want, Order::Strict),
            tool_calls::tool_call_accuracy(&made, want, Order::Flexible),
            tool_calls::tool_call_f1(&made, want),
            tool_calls::tool_sequence(&made, want, Sequence::Exact),
            tool_calls::tool_sequence(&made, want, Sequence::InOrder),
            tool_calls::tool_args_match(&made, want, Args::Partial),
            tool_calls::tool_args_match(&made, want, Args::Exact),
        ],
    };
    let mut all = [None; 10];
    all[..7].copy_from_slice(&compared);
    all[7..].copy_from_slice(&counts);
    all
}
