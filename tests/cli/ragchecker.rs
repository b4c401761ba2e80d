//! `score --ragchecker`: RAGChecker's claim-level metrics from the check matrices of its own
//! results files, pinned to what RAGChecker's `evaluate` computed from the same matrices
//! (tests/fixtures/ragchecker, produced by its `generate.py`), and its output format written back.

use crate::cli_support::{fails, ok, run, s, write};
use serde_json::{json, Value};
use std::path::Path;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ragchecker");

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

fn read(path: impl AsRef<Path>) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Scores `input`, writing RAGChecker's output format to `dir/out.json`; the summary and that file.
fn score(dir: &Path, input: &str) -> (Value, Value) {
    let out = dir.join("out.json");
    let stdout = ok(&[
        "score",
        "--ragchecker",
        input,
        "--ragchecker-out",
        s(&out),
        "--json",
    ]);
    (serde_json::from_str(&stdout).unwrap(), read(&out))
}

#[test]
fn edge_cases_match_ragchecker_where_judged_and_are_missing_where_it_writes_zero() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, ours) = score(dir.path(), &fixture("edge_cases.input.json"));
    let theirs = read(fixture("edge_cases.ragchecker.json"));
    let (ours_r, theirs_r) = (
        ours["results"].as_array().unwrap(),
        theirs["results"].as_array().unwrap(),
    );
    assert_eq!(ours_r.len(), 9);
    let (mut equal, mut missing) = (0, 0);
    for (o, t) in ours_r.iter().zip(theirs_r) {
        let (om, tm) = (
            o["metrics"].as_object().unwrap(),
            t["metrics"].as_object().unwrap(),
        );
        assert_eq!(om.len(), 11);
        for (name, theirs) in tm {
            let theirs = theirs.as_f64().unwrap();
            match om[name].as_f64() {
                Some(v) => {
                    assert!(
                        (v - theirs).abs() <= 1e-12,
                        "{} {name}: {v} vs {theirs}",
                        o["query_id"]
                    );
                    equal += 1;
                }
                None => {
                    // Missing only where RAGChecker fell back to its 0 for nothing judged.
                    assert!(om[name].is_null());
                    assert_eq!(theirs, 0.0, "{} {name}", o["query_id"]);
                    missing += 1;
                }
            }
        }
    }
    assert_eq!((equal, missing), (64, 35));
    // Nothing at all: every figure missing. No chunks: only precision, recall and F1.
    assert!(ours_r[0]["metrics"]
        .as_object()
        .unwrap()
        .values()
        .all(Value::is_null));
    let no_chunks = ours_r[1]["metrics"].as_object().unwrap();
    let present: Vec<&str> = no_chunks
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(present, ["f1", "precision", "recall"]);
    // No response claims: F1 is missing, not RAGChecker's 0.
    assert_eq!(ours_r[2]["metrics"]["f1"], Value::Null);
    assert_eq!(theirs_r[2]["metrics"]["f1"], json!(0.0));
    // The counts, and means over the judged queries only.
    let cu = &summary["metrics"]["context_utilization"];
    assert_eq!(
        (cu["scored"].as_u64(), cu["missing"].as_u64()),
        (Some(4), Some(5))
    );
    assert_eq!(cu["ragchecker"], "context_utilization");
    assert_eq!(
        ours["metrics"]["generator_metrics"]["context_utilization"],
        json!(87.5)
    );
    assert_eq!(
        theirs["metrics"]["generator_metrics"]["context_utilization"],
        json!(38.9)
    );
    assert_eq!(
        summary["metrics"]["chunk_usefulness"]["ragchecker"],
        "context_precision"
    );
}

#[test]
fn with_something_to_judge_everywhere_the_output_is_ragcheckers_to_the_last_digit() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, ours) = score(dir.path(), &fixture("mixed.input.json"));
    let theirs = read(fixture("mixed.ragchecker.json"));
    // Every result (its fields and its metrics) and the three groups, bit for bit.
    assert_eq!(ours, theirs);
    assert_eq!(summary["queries"], 12);
    assert!(summary["metrics"]
        .as_object()
        .unwrap()
        .values()
        .all(|m| m["missing"] == 0));

    // Read back (RAGChecker's output, or ours, as input), the same file comes out.
    let again = dir.path().join("again.json");
    let first = dir.path().join("out.json");
    ok(&[
        "score",
        "--ragchecker",
        s(&first),
        "--ragchecker-out",
        s(&again),
    ]);
    assert_eq!(
        std::fs::read(&first).unwrap(),
        std::fs::read(&again).unwrap()
    );
    let (_, from_theirs) = score(dir.path(), &fixture("mixed.ragchecker.json"));
    assert_eq!(from_theirs, theirs);
}

#[test]
fn the_table_shows_missing_figures_with_their_count() {
    let dir = tempfile::tempdir().unwrap();
    let edge = read(fixture("edge_cases.input.json"));
    let only_empty = json!({"results": [edge["results"][0].clone(), edge["results"][4].clone()]});
    let input = write(dir.path(), "in.json", &only_empty.to_string());
    let text = ok(&["score", "--ragchecker", s(&input)]);
    assert!(
        text.starts_with(&format!(
            "RAGChecker checks of `{}`: 2 queries\n",
            s(&input)
        )),
        "{text}"
    );
    let line = |name: &str| {
        let l = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap();
        l.split_whitespace().skip(1).collect::<Vec<_>>()
    };
    // The empty result has nothing; the all-true one has every figure.
    assert_eq!(
        line("answer_claim_precision"),
        ["1.0000", "1", "1", "precision"]
    );
    assert_eq!(line("hallucination"), ["0.0000", "1", "1", "hallucination"]);
    let only_empty = json!({"results": [edge["results"][0].clone()]});
    let input = write(dir.path(), "empty.json", &only_empty.to_string());
    let text = ok(&["score", "--ragchecker", s(&input)]);
    assert!(text.contains("chunk_usefulness"), "{text}");
    let rows: Vec<&str> = text.lines().skip(2).collect();
    assert_eq!(rows.len(), 11);
    assert!(
        rows.iter()
            .all(|l| l.split_whitespace().nth(1) == Some("missing")),
        "{text}"
    );
}

#[test]
fn results_without_checks_or_with_bad_ones_are_errors_naming_the_result_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    let edge = read(fixture("edge_cases.input.json"));
    let with = |i: usize, field: &str, value: Value| {
        let mut doc = json!({"results": [edge["results"][4].clone(), edge["results"][i].clone()]});
        match value {
            Value::Null => doc["results"][1].as_object_mut().unwrap().remove(field),
            v => doc["results"][1]
                .as_object_mut()
                .unwrap()
                .insert(field.into(), v),
        };
        let input = write(dir.path(), "in.json", &doc.to_string());
        fails(&[
            "score",
            "--ragchecker",
            s(&input),
            "--ragchecker-out",
            s(&out),
        ])
    };
    let err = with(6, "retrieved2answer", Value::Null);
    assert!(
        err.contains("results[1] (query_id `one-chunk`): has no `retrieved2answer`: judging claims needs a judge"),
        "{err}"
    );
    let err = with(
        6,
        "answer2response",
        json!(["Entailment", "Supported", "Neutral"]),
    );
    assert!(err.contains("results[1] (query_id `one-chunk`): `answer2response`[1] is \"Supported\", not a verdict"), "{err}");
    let err = with(
        6,
        "retrieved2response",
        json!([["Entailment"], ["Neutral", "Neutral"], ["Neutral"]]),
    );
    assert!(
        err.contains("`retrieved2response` row 1: 2 entries, expected 1 (one per retrieved chunk)"),
        "{err}"
    );
    let err = with(6, "gt_answer_claims", json!(["one"]));
    assert!(
        err.contains("`gt_answer_claims` has 1 claims but `response2answer` 2 verdicts"),
        "{err}"
    );
    let err = with(6, "retrieved_context", Value::Null);
    assert!(
        err.contains("results[1] (query_id `one-chunk`): has no `retrieved_context` list"),
        "{err}"
    );
    // Nothing is written when any result fails.
    assert!(!out.exists());

    // The output never replaces the input, named the same or by another path.
    let input = write(dir.path(), "same.json", &edge.to_string());
    let before = std::fs::read(&input).unwrap();
    for out in [
        s(&input).to_owned(),
        format!("{}/./same.json", s(dir.path())),
    ] {
        let err = fails(&["score", "--ragchecker", s(&input), "--ragchecker-out", &out]);
        assert!(err.contains("is the input file"), "{err}");
    }
    assert_eq!(std::fs::read(&input).unwrap(), before);

    let input = write(dir.path(), "list.json", "[]");
    let err = fails(&["score", "--ragchecker", s(&input)]);
    assert!(err.contains("has no `results` list"), "{err}");
    let (code, _, err) = run(&["score", "--ragchecker", s(&input), "-k", "3"]);
    assert_ne!(code, 0);
    assert!(err.contains("--ragchecker") && err.contains("-k"), "{err}");
}
