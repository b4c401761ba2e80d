//! `rag-eval align` and `--labels` from the command line, on the labelled faithfulness set of
//! `examples/data/labelled/`: agreement figures worked by hand, the `--min-agreement` gate,
//! and the judge-corrected means of `score --labels`.

use std::path::Path;
use std::process::{Command, Output};

const SET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/labelled");

fn rag_eval(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args)
        .env("RAG_EVAL_RUNS", "off")
        .output()
        .unwrap()
}

fn lines(name: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(format!("{SET}/{name}"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A `score --json`-shaped run of a lenient judge over the set: 1 for every supported answer;
/// for the altered ones 1 for every third (it misses the changed sentence), 0.5 for the rest.
fn lenient_judge_run(dir: &Path) -> String {
    let mut altered = 0;
    let per_query: Vec<serde_json::Value> = lines("dataset.jsonl")
        .iter()
        .map(|row| {
            let id = row["id"].as_str().unwrap();
            let v = if id.ends_with("-s") {
                1.0
            } else {
                altered += 1;
                if (altered - 1) % 3 == 0 {
                    1.0
                } else {
                    0.5
                }
            };
            // What the judge said: one statement, with its reason.
            let sample = serde_json::json!({"sample": 0, "status": "ok", "score": v,
                "details": {"kind": "faithfulness", "statements": [{"text": format!("claim of {id}"),
                    "supported": v == 1.0, "reason": format!("reason for {id}"), "evidence": "",
                    "support": null}]},
                "usage": {"calls": 1, "repairs": 0, "prompt_tokens": 0, "completion_tokens": 0}});
            serde_json::json!({"id": id, "query": row["inputs"]["query"],
                               "metrics": {"faithfulness": v},
                               "judges": [{"metric": "faithfulness", "query_id": id,
                                           "samples": [sample]}]})
        })
        .collect();
    let n = per_query.len();
    let json = serde_json::json!({"level": "token", "k": 5, "mode": "standard", "queries": n,
        "metrics": {"faithfulness": 0.0}, "std": {"faithfulness": 0.0}, "per_query": per_query});
    let path = dir.join("judge.json");
    std::fs::write(&path, json.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn agreement_of_a_lenient_judge_by_hand_and_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let run = lenient_judge_run(dir.path());
    let labels = format!("{SET}/labels.jsonl");
    let answers = format!("{SET}/answers.jsonl");
    let out = rag_eval(&[
        "align",
        &run,
        "--labels",
        &labels,
        "--answers",
        &answers,
        "--threshold",
        "1",
        "--resamples",
        "2000",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &v["metrics"][0];
    assert_eq!(m["metric"], "faithfulness");
    assert_eq!(
        (m["pairs"].as_u64(), m["labels"].as_str()),
        (Some(79), Some("binary"))
    );
    // 40 supported all pass; of 39 altered, 13 pass (missed) and 26 fail.
    assert_eq!(m["confusion"], serde_json::json!([[26, 13], [0, 40]]));
    assert!((m["accuracy"]["value"].as_f64().unwrap() - 66.0 / 79.0).abs() < 1e-12);
    // p_o = 66/79, p_e = (53·40 + 26·39)/79²: κ = 2080/3107.
    assert!((m["kappa"]["value"].as_f64().unwrap() - 2080.0 / 3107.0).abs() < 1e-12);
    let [lo, hi] = [0, 1].map(|i| m["kappa"]["interval"][i].as_f64().unwrap());
    assert!(
        lo < 2080.0 / 3107.0 && 2080.0 / 3107.0 < hi && hi <= 1.0,
        "{lo} {hi}"
    );
    // The disagreements: altered answers the judge passed, with question and answer.
    let d = &m["disagreements"][0];
    assert_eq!(d["id"], "q0001-a");
    assert_eq!(
        (d["figure"].as_f64(), d["label"].as_f64()),
        (Some(1.0), Some(0.0))
    );
    assert!(d["question"].as_str().unwrap().contains("kernel"));
    assert!(d["answer"].as_str().unwrap().contains("74-bit"));
    assert_eq!(
        d["reason"],
        "\"claim of q0001-a\" supported: reason for q0001-a"
    );
    assert_eq!(m["disagreements"].as_array().unwrap().len(), 5);
    // Every query labelled: the corrected mean is the labels' mean (40/79).
    assert!((m["corrected"]["mean"].as_f64().unwrap() - 40.0 / 79.0).abs() < 1e-12);

    // The gate: κ ≈ 0.67 passes 0.6 and fails 0.8, naming the metric.
    let pass = rag_eval(&[
        "align",
        &run,
        "--labels",
        &labels,
        "--threshold",
        "1",
        "--min-agreement",
        "0.6",
    ]);
    assert_eq!(
        pass.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&pass.stderr)
    );
    let text = String::from_utf8_lossy(&pass.stdout);
    assert!(
        text.contains("faithfulness: 79 labelled queries (binary labels, threshold 1)"),
        "{text}"
    );
    assert!(
        text.contains("label fail: 26 fail, 13 pass; label pass: 0 fail, 40 pass"),
        "{text}"
    );
    assert!(
        text.contains("    judge: \"claim of q0001-a\" supported: reason for q0001-a\n"),
        "{text}"
    );
    let fail = rag_eval(&[
        "align",
        &run,
        "--labels",
        &labels,
        "--threshold",
        "1",
        "--min-agreement",
        "0.8",
    ]);
    assert_eq!(fail.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&fail.stderr);
    assert!(
        stderr.contains("disagreement: faithfulness: Cohen's κ 0.6695"),
        "{stderr}"
    );
}

#[test]
fn align_refuses_a_run_without_labels_and_bad_labels() {
    let dir = tempfile::tempdir().unwrap();
    let run = lenient_judge_run(dir.path());
    let out = rag_eval(&["align", &run]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no query of the run has a label"));
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"id\":\"q0001-s\",\"labels\":{\"faithfulness\":\"yes\"}}\n",
    )
    .unwrap();
    let out = rag_eval(&["align", &run, "--labels", bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.jsonl:1: query `q0001-s`: label `faithfulness`"),
        "{stderr}"
    );
}

#[test]
fn align_refuses_a_label_of_a_metric_the_run_lacks_naming_the_runs_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let run = lenient_judge_run(dir.path());
    let labels = dir.path().join("labels.jsonl");
    std::fs::write(
        &labels,
        "{\"id\":\"q0001-s\",\"labels\":{\"faithfulnes\":1}}\n",
    )
    .unwrap();
    let out = rag_eval(&["align", &run, "--labels", labels.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        stderr.contains("unknown labelled metric `faithfulnes` (the run's metrics are ")
            && stderr.contains("faithfulness"),
        "{stderr}"
    );
    assert!(stderr.contains("labels.jsonl"), "{stderr}");
    assert!(!stderr.contains("undefined"), "{stderr}");
}

/// `score --labels` keeps the labels in the run and prints the corrected mean beside the raw
/// one: here the labels are `exact_match`'s own figures on 20 queries, so the judge's error is
/// 0 and the corrected mean is the raw one.
#[test]
fn score_with_labels_prints_the_corrected_mean() {
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("labels.jsonl");
    let text: String = lines("labels.jsonl")
        .iter()
        .take(20)
        .map(|l| {
            let y = &l["labels"]["faithfulness"];
            format!(
                "{{\"id\":{},\"labels\":{{\"exact_match\":{y}}}}}\n",
                l["id"]
            )
        })
        .collect();
    std::fs::write(&labels, text).unwrap();
    let dataset = format!("{SET}/dataset.jsonl");
    let answers = format!("{SET}/answers.jsonl");
    let args = [
        "score",
        "--dataset",
        &dataset,
        "--answers",
        &answers,
        "--labels",
        labels.to_str().unwrap(),
    ];
    let out = rag_eval(&[&args[..], &["--json"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["corrected"][0];
    assert_eq!(
        (
            c["metric"].as_str(),
            c["labelled"].as_u64(),
            c["judged"].as_u64()
        ),
        (Some("exact_match"), Some(20), Some(79))
    );
    assert_eq!(c["mean"], c["raw"]);
    assert!(c["low"].as_f64().unwrap() < c["mean"].as_f64().unwrap());
    assert_eq!(v["labels"].as_object().unwrap().len(), 20);
    let out = rag_eval(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("judge-corrected means") && text.contains("20 of 79 queries labelled"),
        "{text}"
    );
}
