//! `rag-eval compare` from the command line: JSON output, the regression gate's exit code,
//! and the refusals.

use std::path::Path;
use std::process::{Command, Output};

fn rag_eval(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args)
        .output()
        .unwrap()
}

/// A `score --json`-shaped run of 30 queries: recall 0.5 each, lowered by `drop` on the first
/// 24.
fn write_run(dir: &Path, name: &str, hash: &str, drop: f64) -> String {
    let per_query: Vec<serde_json::Value> = (0..30)
        .map(|i| {
            let v = if i < 24 { 0.5 - drop } else { 0.5 };
            serde_json::json!({"id": format!("q{i}"), "query": format!("question {i}?"),
                               "metrics": {"recall@5": v}})
        })
        .collect();
    let json = serde_json::json!({"level": "token", "k": 5, "mode": "standard", "queries": 30,
        "metrics": {"recall@5": 0.5}, "std": {"recall@5": 0.0}, "per_query": per_query,
        "dataset_hash": hash});
    let path = dir.join(name);
    std::fs::write(&path, json.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn json_output_and_the_regression_gate() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_run(dir.path(), "a.json", "h1", 0.0);
    let b = write_run(dir.path(), "b.json", "h1", 0.25);
    let out = rag_eval(&["compare", &a, &b, "--json", "--permutations", "2000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["baseline"], "a", "labelled by the file's name");
    assert_eq!(v["permutations"], 2000);
    let d = &v["metrics"][0]["vs_baseline"][0];
    assert_eq!(d["losses"], 24);
    assert_eq!(d["most_worse"][0]["query"], "question 0?");

    let gate = rag_eval(&["compare", &a, &b, "--fail-on-regression"]);
    assert_eq!(gate.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&gate.stderr);
    assert!(
        stderr.contains("regression:") && stderr.contains("recall@5"),
        "{stderr}"
    );
    let text = String::from_utf8_lossy(&gate.stdout);
    assert!(
        text.contains("most worse queries") && text.contains("question 0?"),
        "{text}"
    );

    // The same runs the other way round: an improvement passes the gate.
    let ok = rag_eval(&["compare", &b, &a, "--fail-on-regression"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

#[test]
fn refusals_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_run(dir.path(), "a.json", "h1", 0.0);
    let other = write_run(dir.path(), "c.json", "h2", 0.0);

    let one = rag_eval(&["compare", &a]);
    assert_eq!(one.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&one.stderr).contains("2 to 10 runs"));

    let eleven: Vec<&str> = std::iter::once("compare")
        .chain(std::iter::repeat_n(a.as_str(), 11))
        .collect();
    let out = rag_eval(&eleven);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("got 11"));

    let out = rag_eval(&["compare", &a, &other]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("h1") && stderr.contains("h2"),
        "{stderr}"
    );
    let out = rag_eval(&[
        "compare",
        &a,
        &other,
        "--allow-different-datasets",
        "--json",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["datasets_differ"], true);

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"level\": 3}").unwrap();
    let out = rag_eval(&["compare", &a, bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.json:1: not a run"), "{stderr}");
}
