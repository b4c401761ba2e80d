//! Conversations: the readers of the three formats, their checks, and the agent metrics
//! pinned to ragas' own figures (tests/fixtures/conversations/README.md says how they were
//! made) and to a naive model.

use camino::Utf8PathBuf;
use proptest::prelude::*;
use rag_eval::conversation::{Conversation, Format, Reader, Role};
use rag_eval::metrics::tool_calls::{tool_call_accuracy, tool_call_f1, Order, ToolCall};
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn fixture(name: &str) -> Utf8PathBuf {
    Utf8PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/conversations")
        .join(name)
}

fn read(text: &str) -> Result<Vec<Conversation>, String> {
    Reader::new(text.as_bytes(), "chats.jsonl".into())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
}

#[test]
fn tool_call_metrics_give_ragas_own_figures() {
    let text = std::fs::read_to_string(fixture("ragas.jsonl")).unwrap();
    let mut reader = Reader::new(text.as_bytes(), fixture("ragas.jsonl"));
    let conversations: Vec<Conversation> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(reader.format(), Some(Format::Ragas));
    let want: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("ragas_figures.json")).unwrap())
            .unwrap();
    let want = want["figures"].as_array().unwrap();
    assert_eq!(conversations.len(), want.len());
    assert_eq!(conversations.len(), 18);
    for (c, w) in conversations.iter().zip(want) {
        let made = c.tool_calls();
        let expected = c.reference_tool_calls.as_deref().unwrap();
        let ours = [
            tool_call_accuracy(&made, expected, Order::Strict),
            tool_call_accuracy(&made, expected, Order::Flexible),
            tool_call_f1(&made, expected),
        ];
        let theirs = [
            w["tool_call_accuracy"].as_f64().unwrap(),
            w["tool_call_accuracy_flexible"].as_f64().unwrap(),
            w["tool_call_f1"].as_f64().unwrap(),
        ];
        if made.is_empty() && expected.is_empty() {
            // ragas scores nothing to compare 1 (accuracy) and 0 (F1): here it is missing.
            assert_eq!(c.id, "line-16");
            assert_eq!(theirs, [1.0, 1.0, 0.0]);
            assert_eq!(ours, [None, None, None]);
            continue;
        }
        assert_eq!(ours, theirs.map(Some), "{}", c.id);
    }
    // The cases the fixture was built for, by line: another order, `2` against `"2"`,
    // `true` against `1`, F1 rounded to four places.
    let by_line = |n: usize| &want[n - 1];
    assert_eq!(by_line(3)["tool_call_accuracy"], json!(0.0));
    assert_eq!(by_line(3)["tool_call_accuracy_flexible"], json!(1.0));
    assert_eq!(by_line(7)["tool_call_accuracy"], json!(1.0));
    assert_eq!(by_line(7)["tool_call_f1"], json!(0.0));
    assert_eq!(by_line(9)["tool_call_f1"], json!(1.0));
    assert_eq!(by_line(4)["tool_call_f1"], json!(0.6667));
    // Calls expected and none made, and calls made where none were expected: 0.
    assert_eq!(conversations[16].tool_calls().len(), 0);
    assert_eq!(by_line(17)["tool_call_f1"], json!(0.0));
    assert!(conversations[17]
        .reference_tool_calls
        .as_ref()
        .unwrap()
        .is_empty());
}

#[test]
fn ragas_messages_become_turns() {
    let text = std::fs::read_to_string(fixture("ragas.jsonl")).unwrap();
    let first = read(text.lines().next().unwrap()).unwrap().remove(0);
    let roles: Vec<Role> = first.turns.iter().map(|t| t.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(first.steps(), 2);
    assert_eq!(
        first.tool_calls()[1],
        ToolCall::new(
            "flight",
            json!({"origin": "OSL", "dest": "LIS", "passengers": 2})
        )
    );
}

#[test]
fn our_format_keeps_every_reference() {
    let line = json!({
        "id": "c1",
        "turns": [
            {"role": "user", "content": "When does Larkspur ship?"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "name": "search", "args": {"q": "larkspur release"}}]},
            {"role": "tool", "tool_call_id": "t1", "content": "Larkspur ships in May."},
            {"role": "assistant", "content": "In May.",
             "contexts": [{"doc_id": "a.md", "start": 0, "end": 22, "text": "Larkspur ships in May."}, "ships in may"],
             "reference_answer": "May.",
             "relevant_spans": [{"doc_id": "a.md", "start": 0, "end": 22}]}
        ],
        "reference_tool_calls": [{"name": "search", "args": {"q": "larkspur release"}}],
        "reference_outcome": "The user learns the release month.",
        "reference_topics": ["releases"],
        "max_steps": 3,
        "metadata": {"source": "support"}
    })
    .to_string();
    let c = read(&line).unwrap().remove(0);
    assert_eq!(c.id, "c1");
    assert_eq!(c.max_steps, Some(3));
    assert_eq!(c.reference_topics, ["releases"]);
    assert_eq!(
        c.reference_outcome.as_deref(),
        Some("The user learns the release month.")
    );
    let answer = &c.turns[3];
    assert_eq!(answer.contexts.len(), 2);
    assert_eq!(answer.contexts[0].chunk.span.end, 22);
    assert_eq!(answer.text_contexts.len(), 1);
    assert_eq!(answer.text_contexts[0].0, 1);
    assert_eq!(answer.reference_answer.as_deref(), Some("May."));
    assert_eq!(answer.relevant_spans.as_ref().unwrap().len(), 1);
    assert_eq!(c.turns[2].tool_call_id.as_deref(), Some("t1"));
    assert_eq!(c.tool_calls()[0].id.as_deref(), Some("t1"));
}

#[test]
fn deepeval_test_cases_read_as_they_are() {
    let line = json!({
        "turns": [
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": "Sunny.",
             "tools_called": [{"name": "weather", "input_parameters": {"city": "Oslo"}, "output": "sunny"}],
             "retrieval_context": ["Oslo is sunny today.", {"context": "Forecast: sun.", "source": "met.no"}]},
            {"role": "user", "content": "Thanks", "userId": "u1"},
            {"role": "assistant", "content": "You're welcome.", "toolsCalled": [{"name": "log", "inputParameters": {"level": "info"}}]}
        ],
        "scenario": "asks for the weather",
        "expectedOutcome": "The user gets the weather.",
        "name": "weather-1"
    })
    .to_string();
    let mut r = Reader::new(line.as_bytes(), "d.jsonl".into());
    let c = r.next().unwrap().unwrap();
    assert_eq!(r.format(), Some(Format::Deepeval));
    assert_eq!(c.id, "weather-1");
    assert_eq!(
        c.reference_outcome.as_deref(),
        Some("The user gets the weather.")
    );
    assert_eq!(c.reference_tool_calls, None);
    assert_eq!(
        c.tool_calls(),
        [
            ToolCall::new("weather", json!({"city": "Oslo"})),
            ToolCall::new("log", json!({"level": "info"}))
        ]
    );
    let texts: Vec<&str> = c.turns[1]
        .text_contexts
        .iter()
        .map(|(_, t)| t.text.as_str())
        .collect();
    assert_eq!(texts, ["Oslo is sunny today.", "Forecast: sun."]);
    // No name: named by its line.
    let unnamed = r#"{"turns":[{"role":"user","content":"hi"}]}"#;
    assert_eq!(read(&format!("\n{unnamed}")).unwrap()[0].id, "line-2");
}

#[test]
fn bad_lines_are_named_by_file_line_and_field() {
    let user = r#"{"role":"user","content":"hi"}"#;
    let call = r#"{"role":"assistant","tool_calls":[{"id":"t1","name":"search","args":{}}]}"#;
    let cases = [
        (
            format!(r#"{{"id":"a","turns":[{user},{{"role":"tool","content":"42"}}]}}"#),
            "chats.jsonl:1: `turns[1]`: a tool result with no tool call before it (a tool turn follows an assistant turn with `tool_calls`, or another tool turn)",
        ),
        (
            format!(r#"{{"id":"a","turns":[{user},{call},{{"role":"tool","tool_call_id":"t9","content":"42"}}]}}"#),
            "chats.jsonl:1: `turns[2]`: `tool_call_id` `t9` names no tool call made before it",
        ),
        (
            r#"{"id":"a","turns":[{"role":"system","content":"be brief"}]}"#.to_owned(),
            "chats.jsonl:1: `turns[0].role` is `system`, an unknown role (known: user, assistant, tool)",
        ),
        (
            format!(r#"{{"id":"a","turns":[{user}],"reference_tool_calls":[{{"args":{{"q":"x"}}}}]}}"#),
            "chats.jsonl:1: `reference_tool_calls[0]` has no `name`: a tool call names its tool",
        ),
        (
            format!(r#"{{"id":"a","turns":[{user}],"reference_tool_calls":[{{"name":"s","args":"q=x"}}]}}"#),
            "chats.jsonl:1: `reference_tool_calls[0]`.`args` is a string, expected an object of arguments by name",
        ),
        (
            r#"{"id":"a","turns":[{"role":"user","content":"hi","toolcalls":[]}]}"#.to_owned(),
            "chats.jsonl:1: `turns[0]`: unknown field `toolcalls` (known: role, content, tool_calls, tool_call_id, contexts, reference_answer, relevant_spans, metadata)",
        ),
        (
            r#"{"id":"a","turns":[{"role":"user","content":"hi","tool_calls":[{"name":"s"}]}]}"#.to_owned(),
            "chats.jsonl:1: `turns[0]`: a user turn has `tool_calls`: only assistant turns call tools, retrieve or have references",
        ),
        (
            r#"{"id":"a","turns":[{"role":"user"}]}"#.to_owned(),
            "chats.jsonl:1: `turns[0]`: a user turn has no `content`",
        ),
        (
            r#"{"user_input":[{"content":"hi","type":"robot"}]}"#.to_owned(),
            "chats.jsonl:1: `user_input[0].type` is `robot`, an unknown role (known: human, ai, tool)",
        ),
        (
            r#"{"user_input":[{"content":"hi","type":"human"},{"content":"42","type":"tool"}]}"#.to_owned(),
            "chats.jsonl:1: `turns[1]`: a tool result with no tool call before it (a tool turn follows an assistant turn with `tool_calls`, or another tool turn)",
        ),
        (
            format!("{{\"id\":\"a\",\"turns\":[{user}]}}\n\n{{\"id\":\"a\",\"turns\":[{user}]}}"),
            "chats.jsonl:3: conversation `a` appears again (first on line 1)",
        ),
        (
            format!("{{\"id\":\"a\",\"turns\":[{user}]}}\n{{\"id\":\"b\",\"turns\":["),
            "chats.jsonl:2: EOF while parsing a list at column 19",
        ),
        (
            r#"{"id":"a","turns":[]}"#.to_owned(),
            "chats.jsonl:1: the conversation has no turns",
        ),
        (
            r#"{"questions":[]}"#.to_owned(),
            "chats.jsonl:1: a conversation has `turns` (rag-eval's format, deepeval's) or `user_input` (ragas')",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(read(&text).unwrap_err(), want, "{text}");
    }
}

/// ToolCallF1 by its definition, on sets, for calls whose arguments are small integers.
fn naive_f1(made: &[(u8, u8)], expected: &[(u8, u8)]) -> Option<f64> {
    let made: BTreeSet<_> = made.iter().collect();
    let expected: BTreeSet<_> = expected.iter().collect();
    if made.is_empty() && expected.is_empty() {
        return None;
    }
    let tp = made.intersection(&expected).count() as f64;
    let (p, r) = (
        if made.is_empty() {
            0.0
        } else {
            tp / made.len() as f64
        },
        if expected.is_empty() {
            0.0
        } else {
            tp / expected.len() as f64
        },
    );
    let f1 = if p + r > 0.0 {
        2.0 * p * r / (p + r)
    } else {
        0.0
    };
    Some((f1 * 1e4).round() / 1e4)
}

fn calls(v: &[(u8, u8)]) -> Vec<ToolCall> {
    v.iter()
        .map(|(n, x)| ToolCall::new(format!("tool{n}"), json!({ "x": x })))
        .collect()
}

proptest! {
    #[test]
    fn f1_is_f1_of_the_sets(
        made in prop::collection::vec((0u8..3, 0u8..3), 0..6),
        expected in prop::collection::vec((0u8..3, 0u8..3), 0..6),
    ) {
        let ours = tool_call_f1(&calls(&made), &calls(&expected));
        let naive = naive_f1(&made, &expected);
        match (ours, naive) {
            (Some(a), Some(b)) => prop_assert!((a - b).abs() < 1e-12, "{a} vs {b}"),
            (a, b) => prop_assert_eq!(a, b),
        }
    }
}
