//! `rag-eval score --conversations`: ragas' `to_jsonl` output scored as it is, one
//! `per_query` entry per conversation in file order, missing figures counted.

use crate::cli_support::{fails_on_one_line, ok, s, write};
use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/conversations")
        .join(name)
}

#[test]
fn ragas_samples_are_scored_with_ragas_figures() {
    let path = fixture("ragas.jsonl");
    let raw = ok(&["score", "--conversations", s(&path), "--json"]);
    let out: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(out["level"], "conversation");
    assert_eq!(out["format"], "ragas");
    assert_eq!(out["queries"], 18);
    let per_query = out["per_query"].as_array().unwrap();
    let ids: Vec<&str> = per_query
        .iter()
        .map(|q| q["id"].as_str().unwrap())
        .collect();
    let want_ids: Vec<String> = (1..=18).map(|n| format!("line-{n}")).collect();
    assert_eq!(ids, want_ids);
    let figures: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("ragas_figures.json")).unwrap())
            .unwrap();
    for (q, w) in per_query.iter().zip(figures["figures"].as_array().unwrap()) {
        for name in [
            "tool_call_accuracy",
            "tool_call_accuracy_flexible",
            "tool_call_f1",
        ] {
            if q["id"] == "line-16" {
                // Nothing expected, nothing made: missing, not ragas' 1 or 0, and only the
                // counts are left.
                assert_eq!(q["metrics"].get(name), None);
                let names: Vec<&String> = q["metrics"].as_object().unwrap().keys().collect();
                assert_eq!(names, ["steps", "tool_calls"], "{names:?}");
            } else {
                assert_eq!(q["metrics"][name], w[name], "{} {name}", q["id"]);
            }
        }
    }
    // The one conversation with nothing to compare is counted as missing for every metric
    // that compares, and left out of the means.
    for name in [
        "tool_call_accuracy",
        "tool_call_accuracy_flexible",
        "tool_call_f1",
        "tool_sequence_exact",
        "tool_sequence_in_order",
        "tool_args_match",
        "tool_args_match_exact",
    ] {
        assert_eq!(out["missing"][name], 1, "{name}");
    }
    assert_eq!(out["missing"]["steps_within_max"], 18);
    assert_eq!(out["missing"].get("steps"), None);
    assert_eq!(out["metrics"].get("steps_within_max"), None);
    // `missing` keeps the metrics' report order, as commands.md shows it.
    assert!(
        raw.contains(r#""missing":{"tool_call_accuracy":1,"tool_call_accuracy_flexible":1,"#)
            && raw.contains(r#""tool_args_match_exact":1,"steps_within_max":18}"#),
        "{raw}"
    );
    // The table: the means over 17, one missing; no mean at all where nothing has a figure.
    let text = ok(&["score", "--conversations", s(&path)]);
    let row = |name: &str| {
        text.lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|l| l[0] == name)
            .unwrap_or_else(|| panic!("no {name} row in {text}"))
    };
    assert_eq!(row("tool_call_f1")[3..], ["17", "1"], "{text}");
    assert_eq!(
        row("steps_within_max")[1..],
        ["-", "-", "0", "18"],
        "{text}"
    );
    let mean: f64 = per_query
        .iter()
        .filter_map(|q| q["metrics"]["tool_call_accuracy"].as_f64())
        .sum::<f64>()
        / 17.0;
    assert!((out["metrics"]["tool_call_accuracy"].as_f64().unwrap() - mean).abs() < 1e-12);
    // Line 3 calls the right tools in another order: promptfoo's in_order fails it too,
    // exact fails it, the argument match passes.
    let line3 = &per_query[2]["metrics"];
    assert_eq!(line3["tool_sequence_exact"], 0.0);
    assert_eq!(line3["tool_sequence_in_order"], 0.0);
    assert_eq!(line3["tool_args_match_exact"], 1.0);
    assert_eq!(line3["tool_calls"], 2.0);
    assert_eq!(line3["steps"], 2.0);
}

#[test]
fn our_format_in_a_table_with_a_step_bar() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "chats.jsonl",
        concat!(
            r#"{"id":"skips-tool","turns":[{"role":"user","content":"6*7?"},{"role":"assistant","content":"41."}],"reference_tool_calls":[{"name":"calculator","args":{"expr":"6*7"}}],"max_steps":1}"#,
            "\n",
            r#"{"id":"uses-tool","turns":[{"role":"user","content":"6*7?"},{"role":"assistant","tool_calls":[{"id":"t","name":"calculator","args":{"expr":"6*7","precise":true}}]},{"role":"tool","tool_call_id":"t","content":"42"},{"role":"assistant","content":"42."}],"reference_tool_calls":[{"name":"calculator","args":{"expr":"6*7"}}],"max_steps":1}"#,
            "\n"
        ),
    );
    let out: Value =
        serde_json::from_str(&ok(&["score", "--conversations", s(&path), "--json"])).unwrap();
    assert_eq!(out["format"], "rag-eval");
    let m = |i: usize| out["per_query"][i]["metrics"].clone();
    // Calls expected and none made: 0.
    assert_eq!(m(0)["tool_call_accuracy"], 0.0);
    assert_eq!(m(0)["tool_args_match"], 0.0);
    assert_eq!(m(0)["steps_within_max"], 1.0);
    // An extra argument: ragas' accuracy and promptfoo's partial match pass, F1 and the
    // exact match do not; two steps against a bar of one.
    assert_eq!(m(1)["tool_call_accuracy"], 1.0);
    assert_eq!(m(1)["tool_args_match"], 1.0);
    assert_eq!(m(1)["tool_args_match_exact"], 0.0);
    assert_eq!(m(1)["tool_call_f1"], 0.0);
    assert_eq!(m(1)["steps"], 2.0);
    assert_eq!(m(1)["steps_within_max"], 0.0);
    let text = ok(&["score", "--conversations", s(&path)]);
    assert!(
        text.starts_with("conversations (rag-eval), 2 conversations\n"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["tool_call_accuracy", "0.5000", "0.5000", "2", "0"]),
        "{text}"
    );
}

#[test]
fn a_bad_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "chats.jsonl",
        "{\"user_input\":[{\"content\":\"hi\",\"type\":\"human\"}]}\n{\"user_input\":[{\"content\":\"x\",\"type\":\"tool\"}]}\n",
    );
    let err = fails_on_one_line(&["score", "--conversations", s(&path)]);
    assert!(
        err.contains(&format!(
            "{}:2: `turns[0]`: a tool result with no tool call before it",
            s(&path)
        )),
        "{err}"
    );
}
