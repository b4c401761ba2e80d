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

/// A conversation whose second assistant turn retrieves text the corpus holds, and one that
/// retrieves nothing.
const JUDGED: &str = concat!(
    r#"{"id":"c1","turns":["#,
    r#"{"role":"user","content":"When does Larkspur ship?"},"#,
    r#"{"role":"assistant","content":"Let me look."},"#,
    r#"{"role":"user","content":"Please."},"#,
    r#"{"role":"assistant","content":"It ships in May.","contexts":["Larkspur ships in May."],"relevant_spans":[{"doc_id":"releases.md","start":0,"end":22}],"reference_answer":"In May."}"#,
    r#"],"reference_outcome":"The user learns the month."}"#,
    "\n",
    r#"{"id":"c2","turns":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello."}]}"#,
    "\n",
);

fn conversation_judge() -> crate::support::TestServer {
    use crate::support::chat::{chat_server, completion, Chat};
    chat_server(|c: &Chat| {
        let content = match c.schema.as_str() {
            "faithfulness" => serde_json::json!({"statements": [
                {"statement": "It ships in May.", "verdict": "supported", "context": 1,
                 "evidence": "ships in May", "reason": "said"}]}),
            // The conversation that reaches its reference outcome achieves it.
            "goal_accuracy" => serde_json::json!({"user_goal": "g", "end_state": "e",
                "reason": "r", "achieved": c.prompt.contains("The user learns the month.")}),
            other => panic!("unexpected schema {other}"),
        };
        completion(&content.to_string(), (40, 8))
    })
}

#[test]
fn judged_turns_and_goals_print_a_run_result_that_the_record_keeps_and_the_cache_replays() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    std::fs::write(
        corpus.join("releases.md"),
        "Larkspur ships in May. Acme builds it.",
    )
    .unwrap();
    let path = write(dir.path(), "chats.jsonl", JUDGED);
    let store = dir.path().join("runs.sqlite");
    let server = conversation_judge();
    let url = server.url("/v1");
    let run = |url: &str, cache: &str| {
        let (code, out, err) = crate::cli_support::run_in(
            dir.path(),
            &store,
            &[
                "score",
                "--conversations",
                s(&path),
                "--corpus",
                s(&corpus),
                "-k",
                "3",
                "--judge-model",
                "m",
                "--judge-url",
                url,
                "--judges",
                "faithfulness,goal_accuracy",
                "--cache",
                cache,
                "--json",
            ],
        );
        assert_eq!(code, 0, "{err}");
        out
    };
    let raw = run(&url, "rw:path=c.sqlite");
    let out: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(out["level"], "conversation");
    assert_eq!(out["format"], "rag-eval");
    assert_eq!(out["queries"], 2);
    assert_eq!(out["k"], 3);
    let c1 = &out["per_query"][0];
    let turn = &c1["turns"][3];
    // The turn's text context is located in the corpus, its truth found, its one statement
    // supported, its answer compared with its reference.
    assert_eq!(turn["contexts"][0]["start"], 0);
    assert_eq!(turn["contexts"][0]["end"], 22);
    assert_eq!(turn["metrics"]["span_recall@3"], 1.0);
    assert_eq!(turn["metrics"]["faithfulness"], 1.0);
    // "it ships in may" against "in may": precision 2/4, recall 1, F1 2/3.
    let f1 = turn["metrics"]["token_f1"].as_f64().unwrap();
    assert!((f1 - 2.0 / 3.0).abs() < 1e-12, "{f1}");
    assert_eq!(turn["judges"][0]["metric"], "faithfulness");
    // A turn that did not retrieve has no figure.
    assert_eq!(c1["turns"][1].get("metrics"), None);
    assert_eq!(c1["metrics"]["faithfulness"], 1.0);
    assert_eq!(c1["metrics"]["goal_accuracy"], 1.0);
    assert_eq!(out["per_query"][1]["metrics"]["goal_accuracy"], 0.0);
    // The run's means are over the conversations that have a figure; c2 retrieved nothing.
    assert_eq!(out["metrics"]["faithfulness"], 1.0);
    assert_eq!(out["metrics"]["goal_accuracy"], 0.5);
    assert_eq!(out["missing"]["faithfulness"], 1);
    assert_eq!(out["missing"].get("goal_accuracy"), None);
    let judges: Vec<&str> = out["judges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["metric"].as_str().unwrap())
        .collect();
    assert_eq!(judges, ["faithfulness", "goal_accuracy"]);
    assert_eq!(out["judges"][1]["queries"], 2);

    // The record keeps the run as printed, the turns included.
    let (code, shown, err) =
        crate::cli_support::run_in(dir.path(), &store, &["runs", "show", "latest", "--json"]);
    assert_eq!(code, 0, "{err}");
    let record: Value = serde_json::from_str(shown.trim()).unwrap();
    assert_eq!(record["result"]["per_query"], out["per_query"]);
    assert_eq!(record["result"]["level"], "conversation");
    let prompts = record["config"]["judge_prompts"].to_string();
    assert!(prompts.contains("goal_accuracy/1"), "{prompts}");

    // Replayed from the cache with the server gone: the same figures.
    drop(server);
    let replayed: Value =
        serde_json::from_str(&run("http://127.0.0.1:9/v1", "replay:path=c.sqlite")).unwrap();
    assert_eq!(replayed["per_query"], out["per_query"]);
}

#[test]
fn an_unknown_judge_names_the_conversation_judges_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "chats.jsonl", JUDGED);
    let err = crate::cli_support::fails(&[
        "score",
        "--conversations",
        s(&path),
        "--judge-model",
        "m",
        "--judge-url",
        "http://127.0.0.1:9/v1",
        "--judges",
        "goal",
    ]);
    assert!(
        err.contains("unknown judge `goal`") && err.contains("goal_accuracy"),
        "{err}"
    );
}
