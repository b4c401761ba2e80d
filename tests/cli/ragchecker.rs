//! `score --ragchecker`: RAGChecker's claim-level metrics from the check matrices of its own
//! results files, pinned to what RAGChecker's `evaluate` computed from the same matrices
//! (tests/fixtures/ragchecker, produced by its `generate.py`), and its output format written back;
//! and the claims judge that fills the checks of results without them (and of `score --answers`).

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

/// Results without checks: one claim per answer (the answer itself), one chunk each.
fn unchecked() -> Value {
    json!({"results": [
        {"query_id": "a", "query": "Where are flags kept?", "gt_answer": "Flags are kept in memory.",
         "response": "Yes: Flags are kept in memory.",
         "retrieved_context": [{"doc_id": "d1", "text": "The server: Flags are kept in memory."}]},
        {"query_id": "b", "query": "How long is a restart?", "gt_answer": "A restart takes 2 s.",
         "response": "Flags are encrypted.",
         "retrieved_context": [{"doc_id": "d2", "text": "At rest: Flags are encrypted."}]}
    ]})
}

/// A judge whose claims of a text are the text itself, and whose check calls a claim entailed
/// when the reference text holds it word for word (quoting it).
fn claims_judge(
    calls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
) -> crate::support::TestServer {
    use crate::support::chat::{chat_server, completion, Chat};
    chat_server(move |c: &Chat| {
        calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let content = if let Some((_, text)) = c.prompt.rsplit_once("\nText: ") {
            json!({"claims": [text.trim()]}).to_string()
        } else {
            let (_, rest) = c.prompt.split_once("Reference text:\n").unwrap();
            let (against, claims) = rest.split_once("\n\nClaims:\n").unwrap();
            let verdicts: Vec<Value> = claims
                .lines()
                .map(|line| {
                    let claim = line.split_once(". ").unwrap().1;
                    let held = against.contains(claim);
                    json!({"verdict": if held {"Entailment"} else {"Neutral"},
                           "evidence": if held {claim} else {""}})
                })
                .collect();
            json!({ "verdicts": verdicts }).to_string()
        };
        completion(&content, (50, 5))
    })
}

#[test]
fn results_without_checks_are_judged_written_in_ragcheckers_format_and_replayed_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "in.json", &unchecked().to_string());
    let cache = format!("rw:path={}", s(&dir.path().join("cache.sqlite")));
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = claims_judge(calls.clone());
    let url = server.url("/v1");
    let judged = |out: &str, cache: &str, url: &str| {
        let out = dir.path().join(out);
        let (code, stdout, stderr) = run(&[
            "score",
            "--ragchecker",
            s(&input),
            "--ragchecker-out",
            s(&out),
            "--json",
            "--judge-model",
            "m",
            "--judge-url",
            url,
            "--cache",
            cache,
        ]);
        assert_eq!(code, 0, "{stderr}");
        (
            serde_json::from_str::<Value>(&stdout).unwrap(),
            read(&out),
            stderr,
        )
    };
    let (summary, written, stderr) = judged("out.json", &cache, &url);
    // Per result 2 extractions and 1 claim each against the other answer and 1 chunk.
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 12);
    assert!(stderr.contains("claims: 12 calls (0 repairs)"), "{stderr}");
    let a = &written["results"][0];
    assert_eq!(
        a["response_claims"],
        json!(["Yes: Flags are kept in memory."])
    );
    assert_eq!(a["gt_answer_claims"], json!(["Flags are kept in memory."]));
    assert_eq!(a["answer2response"], json!(["Neutral"]));
    assert_eq!(a["response2answer"], json!(["Entailment"]));
    assert_eq!(a["retrieved2response"], json!([["Neutral"]]));
    assert_eq!(a["retrieved2answer"], json!([["Entailment"]]));
    let b = &written["results"][1];
    assert_eq!(b["answer2response"], json!(["Neutral"]));
    assert_eq!(b["response2answer"], json!(["Neutral"]));
    assert_eq!(b["retrieved2response"], json!([["Entailment"]]));
    assert_eq!(b["retrieved2answer"], json!([["Neutral"]]));
    // b's one claim is wrong and entailed by a chunk no reference claim is in: noise.
    assert_eq!(b["metrics"]["noise_sensitivity_in_irrelevant"], json!(1.0));
    assert_eq!(b["metrics"]["context_utilization"], Value::Null);
    // a's one claim is wrong and entailed by no chunk: a hallucination.
    assert_eq!(a["metrics"]["f1"], json!(0.0));
    assert_eq!(a["metrics"]["hallucination"], json!(1.0));
    assert_eq!(summary["metrics"]["hallucination"]["mean"], json!(0.5));
    assert_eq!(
        written["metrics"]["generator_metrics"]["hallucination"],
        json!(50.0)
    );
    // The written checks score to the same figures without a judge...
    let first = dir.path().join("first.json");
    std::fs::copy(dir.path().join("out.json"), &first).unwrap();
    let (again, rescored) = score(dir.path(), s(&first));
    assert_eq!(again["metrics"], summary["metrics"]);
    assert_eq!(rescored["metrics"], written["metrics"]);
    // ...and the judge's answers replay from the cache with the server gone.
    drop(server);
    let replay = format!("replay:path={}", s(&dir.path().join("cache.sqlite")));
    let (replayed, rewritten, _) = judged("replayed.json", &replay, "http://127.0.0.1:9/v1");
    assert_eq!(replayed["metrics"], summary["metrics"]);
    assert_eq!(rewritten, written);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 12);
}

#[test]
fn score_answers_runs_the_claims_judge_when_named_and_reports_its_figures_under_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = write(
        dir.path(),
        "qa.jsonl",
        &(json!({"id": "q1", "inputs": {"query": "Where are flags kept?"},
                 "outputs": {"reference_answer": "Flags are kept in memory."}})
        .to_string()
            + "\n"),
    );
    let answers = write(
        dir.path(),
        "answers.jsonl",
        &(json!({"id": "q1", "answer": "Flags are encrypted.",
                 "contexts": [{"doc_id": "d.md", "start": 10, "end": 39,
                               "text": "Flags are kept in memory. Ok."}]})
        .to_string()
            + "\n"),
    );
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let server = claims_judge(calls.clone());
    let stdout = ok(&[
        "score",
        "--dataset",
        s(&dataset),
        "--answers",
        s(&answers),
        "--judge-model",
        "m",
        "--judge-url",
        &server.url("/v1"),
        "--judges",
        "claims",
        "--json",
        "--no-record",
    ]);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    // 2 extractions, then the one claim of each side against the other answer and the chunk.
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 6);
    assert_eq!(v["judges"][0]["metric"], "claims");
    assert_eq!(v["judges"][0]["usage"]["calls"], 6);
    let m = &v["metrics"];
    assert_eq!(m["hallucination"], json!(1.0), "{m}");
    assert_eq!(m["claim_recall"], json!(1.0), "{m}");
    assert_eq!(m["chunk_usefulness"], json!(1.0), "{m}");
    assert_eq!(m["answer_claim_recall"], json!(0.0), "{m}");
    assert!(
        m.get("claims").is_none() && m.get("faithfulness").is_none(),
        "{m}"
    );
    let q = &v["per_query"][0];
    assert_eq!(q["metrics"]["hallucination"], json!(1.0));
    let details = &q["judges"][0]["samples"][0]["details"];
    assert_eq!(details["kind"], "claims");
    assert_eq!(
        details["reference_claims"],
        json!(["Flags are kept in memory."])
    );
    // The reference claim's quote, located in the chunk as document characters.
    let support = &details["retrieved2answer"][0][0]["support"];
    assert_eq!(
        (
            support["span"]["start"].as_u64(),
            support["span"]["end"].as_u64()
        ),
        (Some(10), Some(35))
    );
}
