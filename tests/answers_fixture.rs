//! Full-RAG cases as a downstream crate runs them: a fixture crate whose cases answer (an
//! answering function, a retriever plus a generator, answers judged against reference
//! answers), judged by a scripted model, run through `cargo test` — recorded, then replayed
//! from the harness's LLM cache with no judge call, then uploaded to a fake LangSmith.
//!
//! Built in the target directory the macros' UI tests and `tests/harness_fixture.rs` use, with
//! their flags and the harness fixture's dependencies and features, so that rag-eval and its
//! dependencies are built once for both fixtures.

#[path = "support/langsmith.rs"]
mod fake;
#[path = "support/fixture_crate.rs"]
mod fixture_crate;
mod support;

use fake::{FakeLangSmith, Fault};
use fixture_crate::{cargo, copy_dir};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use support::chat::{chat_server, completion, first_passage_words};
use support::rag_service::{qa_pairs, Service};
use support::Reply;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn fixture(root: &Path) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::create_dir_all(root.join("golden")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    // Fixtures share one target folder, and cargo names a path package's artifacts
    // independently of where it sits: one package name per fixture folder, or two fixtures
    // built at once overwrite each other's test binaries.
    let unique = fixture_crate::package_suffix(root.parent().unwrap());
    std::fs::write(
        root.join("Cargo.toml"),
        format!(
            r#"[package]
name = "fx-answers-{unique}"
version = "0.1.0"
edition = "2021"
autotests = false

[workspace]

[dev-dependencies]
{dev}

[[test]]
name = "rag"
harness = false

[[test]]
name = "records"

[[test]]
name = "unreachable"
harness = false

[[test]]
name = "service"
harness = false
"#,
            dev = fixture_crate::dev_dependencies()
        ),
    )
    .unwrap();
    std::fs::copy(Path::new(REPO).join("Cargo.lock"), root.join("Cargo.lock")).unwrap();
    std::fs::copy(
        Path::new(REPO).join("tests/fixtures/answers/rag.rs"),
        root.join("tests/rag.rs"),
    )
    .unwrap();
    std::fs::write(root.join("tests/records.rs"), RECORDS).unwrap();
    std::fs::create_dir_all(root.join("judges")).unwrap();
    std::fs::write(root.join("judges/polite.md"), POLITE).unwrap();
    std::fs::copy(
        Path::new(REPO).join("tests/fixtures/answers/unreachable.rs"),
        root.join("tests/unreachable.rs"),
    )
    .unwrap();
    std::fs::copy(
        Path::new(REPO).join("tests/fixtures/answers/service.rs"),
        root.join("tests/service.rs"),
    )
    .unwrap();
    copy_dir(
        &Path::new(REPO).join("examples/data"),
        &root.join("examples/data"),
    );
    let qa: String = qa_pairs()
        .lines()
        .take(10)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(root.join("examples/data/qa.jsonl"), qa).unwrap();
    std::fs::write(root.join("examples/data/references.jsonl"), references()).unwrap();
    std::fs::write(
        root.join("examples/data/lexical.jsonl"),
        lexical_references(),
    )
    .unwrap();
}

/// The criteria judge of the `matched` case.
const POLITE: &str = "---
name: polite
scale: 1-5
inputs: question, answer
---
The answer is courteous and commits to an answer.
";

/// Prints every run of the store `FX_RUNS` names, one `RUN <json>` line each.
const RECORDS: &str = r#"
use rag_eval::runs::{RunStore, SqliteRunStore};

#[test]
fn print_runs() {
    let store = SqliteRunStore::open(&std::env::var("FX_RUNS").unwrap()).unwrap();
    for run in store.list().unwrap() {
        println!("RUN {}", store.get(&run.id).unwrap().unwrap().to_json());
    }
}
"#;

/// The first four questions of the example dataset with reference answers: one that the
/// scripted judge matches (it holds `MATCH`), two of which the second matches, one it does not
/// match, and none.
fn references() -> String {
    with_references([
        Some(serde_json::json!("MATCH: kernel 4.18 or later.")),
        Some(serde_json::json!([
            "UID 10001.",
            "MATCH: the user larkspur, UID 10001."
        ])),
        Some(serde_json::json!("Twenty-four hours.")),
        None,
    ])
}

/// The first four questions of the example dataset with reference answers for the lexical
/// metrics: the fixture's canned answers equal the first two (the second by its second
/// reference), overlap the third in part, and the fourth row has none.
fn lexical_references() -> String {
    with_references([
        Some(serde_json::json!("Kernel 4.18 or later.")),
        Some(serde_json::json!([
            "UID 10001.",
            "The user larkspur, UID 10001."
        ])),
        Some(serde_json::json!("Twenty-four hours.")),
        None,
    ])
}

/// The first rows of the example dataset, one per answer, each with its answer as
/// `outputs.reference_answer`, or none (the bundled one removed) for `None`.
fn with_references<const N: usize>(answers: [Option<Value>; N]) -> String {
    let questions =
        std::fs::read_to_string(Path::new(REPO).join("examples/data/questions.jsonl")).unwrap();
    let mut out = String::new();
    for (line, answer) in questions.lines().zip(answers) {
        let mut row: Value = serde_json::from_str(line).unwrap();
        match answer {
            Some(answer) => row["outputs"]["reference_answer"] = answer,
            // The bundled rows carry reference answers of their own.
            None => {
                row["outputs"]
                    .as_object_mut()
                    .unwrap()
                    .remove("reference_answer");
            }
        }
        out.push_str(&row.to_string());
        out.push('\n');
    }
    out
}

fn cargo_test(root: &Path, env: &[(&str, &str)]) -> (i32, String) {
    cargo_test_of(root, "rag", &[], env)
}

fn cargo_test_of(root: &Path, test: &str, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut all = vec!["test", "--test", test];
    if !args.is_empty() {
        all.push("--");
        all.extend_from_slice(args);
    }
    cargo(root, &all, env)
}

/// Names the harness lists after `failures:` (several on a line for the query tests whose
/// drops their summary accounts for).
fn failed(output: &str) -> Vec<String> {
    let Some(list) = output
        .rsplit("\nfailures:\n")
        .next()
        .filter(|_| output.contains("\nfailures:\n"))
    else {
        return Vec::new();
    };
    let mut names: Vec<String> = list
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .flat_map(str::split_whitespace)
        .map(str::to_owned)
        .collect();
    // In the order the tests finished.
    names.sort();
    names
}

fn calls(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// Judge calls by judge (the log holds one judge name per call).
fn calls_by_judge(path: &Path) -> BTreeMap<String, usize> {
    let mut by = BTreeMap::new();
    for l in std::fs::read_to_string(path).unwrap_or_default().lines() {
        *by.entry(l.to_owned()).or_default() += 1;
    }
    by
}

/// The `name: value` lines of a snapshot's `summary:` block.
fn summary_figures(snap: &str) -> BTreeMap<String, String> {
    let block = snap.split("\nsummary:\n").nth(1).expect("a summary block");
    block
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.trim().split_once(": "))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The lines of one query's block in a snapshot's `per_query:` section.
fn query_block<'a>(snap: &'a str, id: &str) -> &'a str {
    let start = snap
        .find(&format!("\n  {id}:\n"))
        .expect("the query is in the snapshot");
    let rest = &snap[start + id.len() + 5..];
    let end = rest.find("\n  q").unwrap_or(rest.len());
    &rest[..end]
}

/// The failure text libtest prints for `name`.
fn failure_of<'a>(out: &'a str, name: &str) -> &'a str {
    let text = out
        .split(&format!("---- {name} ----"))
        .nth(1)
        .unwrap_or_else(|| panic!("{name}'s failure is printed:\n{out}"));
    &text[..text.find("\n----").unwrap_or(text.len())]
}

/// The failure text of `name`, without the list of failures libtest prints after the last one.
fn last_failure<'a>(out: &'a str, name: &str) -> &'a str {
    let text = failure_of(out, name);
    text.split("\nfailures:\n").next().unwrap_or(text)
}

#[test]
fn full_rag_cases_are_judged_recorded_replayed_and_uploaded() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("fx");
    fixture(&root);
    let log = dir.path().join("calls.log");
    let log_str = log.to_str().unwrap();
    let runs = dir.path().join("runs.sqlite");
    let runs_str = runs.to_str().unwrap();

    let (code, out) = cargo_test(
        &root,
        &[("FX_JUDGE_CALLS", log_str), ("RAG_EVAL_RUNS", runs_str)],
    );
    assert_eq!(code, 101, "the ungrounded case fails:\n{out}");
    let failures = failed(&out);
    // 40 questions of `ungrounded`, each answer failing its bar, its summary, and the one
    // answer of `matched` that neither matches its reference nor commits to an answer.
    let mut expected: Vec<String> = (1..=40).map(|i| format!("ungrounded::q{i:04}")).collect();
    expected.push("ungrounded::summary".into());
    expected.push("matched::q0003".into());
    // Exact match: 2 of the 3 answers with a reference, below the bar of 0.9; q0003's answer
    // is not its reference.
    expected.push("lexical::summary".into());
    expected.push("lexical::q0003".into());
    expected.sort();
    assert_eq!(failures, expected, "{out}");
    assert!(
        out.contains("faithfulness = 0.0000 is below the bar 0.9000 (min_faithfulness)"),
        "{out}"
    );
    // The per-query failure shows the question, the answer and what the judge did not find.
    let q1 = failure_of(&out, "ungrounded::q0001");
    for part in [
        "question: Which Linux kernel version does a Larkspur host need at minimum?",
        "answer: Larkspur was written on the moon (11 words asked).",
        "unsupported statements:\n  - Larkspur was written on the moon (11 words asked).",
        "reference: Linux kernel 4.18 or later, on a 64-bit host (x86_64 or arm64).",
    ] {
        assert!(q1.contains(part), "`{part}` in:\n{q1}");
    }
    // The reference answer reached the judges and the failure message.
    let q3 = failure_of(&out, "matched::q0003");
    for part in [
        "answer_match = 0.0000 is below the bar 0.5000 (min_answer_match)",
        "answer_relevancy = 0.0000 is below the bar 0.7000 (min_answer_relevancy)",
        "answer: I don't know.",
        "reference: Twenty-four hours.",
        // The criteria judge's bar, on the verdict weighted by its token's probabilities.
        "polite = 0.1250 is below the bar 0.5000 (min_polite)",
    ] {
        assert!(q3.contains(part), "`{part}` in:\n{q3}");
    }
    // Without a key the upload is skipped, on one line, and its test passes.
    assert_eq!(
        out.matches("NOTE rag: LANGSMITH_API_KEY is not set; the LangSmith experiment `fx-rag` was not uploaded").count(),
        1,
        "{out}"
    );
    assert!(out.contains("test rag::langsmith_upload ... ok"), "{out}");

    // Faithfulness once per answer of the four cases (3 × 40 + 4); answer relevancy once per
    // answer of `matched`; answer match once per answer with a reference (q0004 has none).
    let by_judge = calls_by_judge(&log);
    let want: BTreeMap<String, usize> = [
        ("answer_match".to_owned(), 3),
        ("answer_relevancy".to_owned(), 4),
        ("faithfulness".to_owned(), 124),
        ("polite".to_owned(), 4),
    ]
    .into();
    assert_eq!(by_judge, want, "{out}");
    let recorded = calls(&log);
    assert!(root.join("golden/llm-cache.sqlite").exists());
    // The grounded case's snapshot keeps the judge's mean, not its per-query verdicts.
    // A first run outside CI leaves the new baseline pending review.
    let grounded = std::fs::read_to_string(root.join("golden/grounded.snap.new")).unwrap();
    assert!(grounded.contains("  faithfulness: 1.0000\n"), "{grounded}");
    assert_eq!(grounded.matches("faithfulness").count(), 1, "{grounded}");

    // The retriever plus generator gives `grounded`'s answers from the same BM25: the same
    // figures, and precision_omega besides, since the harness sees its chunker.
    let rag = std::fs::read_to_string(root.join("golden/rag.snap.new")).unwrap();
    let (g, mut r) = (summary_figures(&grounded), summary_figures(&rag));
    let omega: Vec<String> = r
        .keys()
        .filter(|k| k.starts_with("precision_omega"))
        .cloned()
        .collect();
    assert_eq!(omega.len(), 1, "{rag}");
    r.remove(&omega[0]);
    assert!(
        !g.keys().any(|k| k.starts_with("precision_omega")),
        "{grounded}"
    );
    assert_eq!(g, r, "{grounded}\n{rag}");

    // Reference answers: q0001 and q0002 match (q0002 by its second reference), q0003 does
    // not, q0004 has none and so no figure; relevancy is 1 for an answer asked back as the
    // question itself and 0 for the noncommittal one.
    let matched = std::fs::read_to_string(root.join("golden/matched.snap.new")).unwrap();
    let m = summary_figures(&matched);
    assert_eq!(m["answer_match"], "0.6667", "{matched}");
    assert_eq!(m["answer_relevancy"], "0.7500", "{matched}");
    // The criteria judge: 1 for three answers, 0.125 for the one that does not know.
    assert_eq!(m["polite"], "0.7812", "{matched}");
    assert!(
        query_block(&matched, "q0003").contains("polite: 0.1250"),
        "{matched}"
    );
    for (id, answer_match, relevancy) in [
        ("q0001", Some("1.0000"), "1.0000"),
        ("q0002", Some("1.0000"), "1.0000"),
        ("q0003", Some("0.0000"), "0.0000"),
        ("q0004", None, "1.0000"),
    ] {
        let block = query_block(&matched, id);
        match answer_match {
            Some(v) => assert!(
                block.contains(&format!("answer_match: {v}")),
                "{id}: {block}"
            ),
            None => assert!(!block.contains("answer_match"), "{id}: {block}"),
        }
        assert!(
            block.contains(&format!("answer_relevancy: {relevancy}")),
            "{id}: {block}"
        );
    }

    // The lexical metrics, by hand: q0001 and q0002 answer with a reference (q0002 with its
    // second), so every figure is 1; q0003 answers "Twenty-four hours at most." to
    // "Twenty-four hours.": SQuAD tokens {twentyfour, hours, at, most} against {twentyfour,
    // hours} give F1 2·(1/2·1)/(3/2) = 2/3; rouge-score's tokens {twenti, four, hour, at, most}
    // against {twenti, four, hour} give ROUGE-1 and ROUGE-L F1 2·(3/5·1)/(8/5) = 3/4 and ROUGE-2
    // F1 2/3 (recall 1); q0004 has no reference and no figure. The means are over 3 queries.
    let lexical = std::fs::read_to_string(root.join("golden/lexical.snap.new")).unwrap();
    let l = summary_figures(&lexical);
    for (metric, mean) in [
        ("exact_match", "0.6667"),
        ("token_f1", "0.8889"),
        ("rouge_1", "0.9167"),
        ("rouge_l", "0.9167"),
        ("rouge_2", "0.8889"),
        ("rouge_2_recall", "1.0000"),
    ] {
        assert_eq!(l[metric], mean, "{metric}: {lexical}");
    }
    for id in ["q0001", "q0002"] {
        let block = query_block(&lexical, id);
        for metric in [
            "exact_match",
            "token_f1",
            "bleu",
            "chrf",
            "rouge_1",
            "rouge_2",
            "rouge_l",
            "answer_similarity",
        ] {
            let line = format!("{metric}: 1.0000");
            assert!(
                block.lines().any(|l| l.trim() == line),
                "{id} {metric}: {block}"
            );
        }
    }
    let q3 = query_block(&lexical, "q0003");
    for figure in [
        "exact_match: 0.0000",
        "token_f1: 0.6667",
        "rouge_1: 0.7500",
        "rouge_1_precision: 0.6000",
        "rouge_1_recall: 1.0000",
        "rouge_2: 0.6667",
        "rouge_l: 0.7500",
    ] {
        assert!(q3.contains(figure), "`{figure}` in q0003: {q3}");
    }
    let bleu: f64 = q3
        .lines()
        .find_map(|l| l.trim().strip_prefix("bleu: "))
        .and_then(|v| v.parse().ok())
        .expect("q0003 has a BLEU figure");
    assert!(bleu > 0.0 && bleu < 1.0, "{q3}");
    let q4 = query_block(&lexical, "q0004");
    for metric in [
        "exact_match",
        "bleu",
        "chrf",
        "rouge",
        "token_f1",
        "answer_similarity",
    ] {
        assert!(!q4.contains(metric), "q0004 has no reference: {q4}");
    }
    // The summary's failure names the query left out; the query's shows its answer and reference.
    let summary = failure_of(&out, "lexical::summary");
    for part in [
        "exact_match = 0.6667 is below the bar 0.9000 (min_exact_match); worst queries:\n  q0003 0.0000",
        "1 query without a reference answer (left out of the mean): q0004",
    ] {
        assert!(summary.contains(part), "`{part}` in:\n{summary}");
    }
    assert!(!summary.contains("token_f1"), "{summary}");
    let q3 = failure_of(&out, "lexical::q0003");
    for part in [
        "exact_match = 0.0000 is below the bar 0.9000 (min_exact_match)",
        "question: How long is the bootstrap admin token valid after the first start?",
        "answer: Twenty-four hours at most.",
        "reference: Twenty-four hours.",
    ] {
        assert!(q3.contains(part), "`{part}` in:\n{q3}");
    }
    // The same answers from a retriever and a generator: the same answer figures, and the
    // queries its bars leave out printed though the bars hold.
    let lexical_rag = std::fs::read_to_string(root.join("golden/lexical_rag.snap.new")).unwrap();
    let lr = summary_figures(&lexical_rag);
    let answer_figures = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        m.iter()
            .filter(|(k, _)| {
                ["bleu", "chrf", "rouge", "exact_match", "token_f1"]
                    .iter()
                    .any(|p| k.starts_with(p))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(answer_figures(&l).len(), 13, "{lexical}");
    assert_eq!(
        answer_figures(&l),
        answer_figures(&lr),
        "{lexical}\n{lexical_rag}"
    );
    assert!(
        !lr.contains_key("answer_similarity"),
        "no embedder: {lexical_rag}"
    );
    for metric in ["rouge_l", "rouge_2_recall"] {
        assert!(
            out.contains(&format!(
                "{metric}:\n  1 query without a reference answer (left out of the mean): q0004"
            )),
            "{metric}: {out}"
        );
    }

    // The recorded runs carry the judge figures per query and the judge's model.
    let (code, printed) =
        cargo_test_of(&root, "records", &["--nocapture"], &[("FX_RUNS", runs_str)]);
    assert_eq!(code, 0, "{printed}");
    let records: BTreeMap<String, Value> = printed
        .lines()
        .filter_map(|l| l.strip_prefix("RUN "))
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| (r["label"].as_str().unwrap().to_owned(), r))
        .collect();
    assert_eq!(
        records.keys().collect::<Vec<_>>(),
        [
            "grounded",
            "lexical",
            "lexical_rag",
            "matched",
            "rag",
            "ungrounded"
        ],
        "{printed}"
    );
    // The lexical figures are recorded per query and as means, with no judge behind them.
    let run = &records["lexical"];
    let per_query = run["result"]["per_query"].as_array().unwrap();
    assert_eq!(per_query[0]["metrics"]["exact_match"], 1.0, "{run}");
    assert_eq!(per_query[2]["metrics"]["exact_match"], 0.0, "{run}");
    assert_eq!(per_query[3]["metrics"].get("exact_match"), None, "{run}");
    let mean = run["result"]["metrics"]["exact_match"].as_f64().unwrap();
    assert!((mean - 2.0 / 3.0).abs() < 1e-12, "{run}");
    assert!(run.get("usage").is_none_or(Value::is_null), "{run}");
    assert_eq!(records["lexical_rag"]["config"]["generator"], "canned");
    let run = &records["rag"];
    assert_eq!(
        run["config"]["judge_models"],
        serde_json::json!(["scripted-judge-rag"])
    );
    assert_eq!(run["config"]["generator"], "first-sentence");
    // One faithfulness call of 100 + 20 tokens per query, the judge's share of the usage.
    assert_eq!(run["usage"]["judge"]["prompt_tokens"], 4000);
    assert_eq!(run["usage"]["judge"]["completion_tokens"], 800);
    let per_query = run["result"]["per_query"].as_array().unwrap();
    assert_eq!(per_query.len(), 40);
    for q in per_query {
        assert_eq!(q["metrics"]["faithfulness"], 1.0, "{q}");
    }
    assert_eq!(run["result"]["metrics"]["faithfulness"], 1.0);
    let run = &records["matched"];
    assert_eq!(
        run["config"]["judge_models"],
        serde_json::json!(["scripted-judge-ref"])
    );
    let q4 = &run["result"]["per_query"][3];
    assert_eq!(
        (q4["id"].as_str(), q4["metrics"].get("answer_match")),
        (Some("q0004"), None)
    );
    assert_eq!(
        q4["metrics"]["answer_relevancy"]
            .as_f64()
            .map(|v| (v * 1e4).round()),
        Some(1e4)
    );

    // Replayed: the same verdicts, and not one call (a miss would be an error in replay mode).
    let replay = [("FX_JUDGE_CALLS", log_str), ("RAG_EVAL_CACHE", "replay")];
    let (code, again) = cargo_test(&root, &replay);
    assert_eq!(code, 101, "{again}");
    assert_eq!(failed(&again), failures, "{again}");
    assert_eq!(
        calls(&log),
        recorded,
        "the replay called the judge:\n{again}"
    );

    // An upload that fails is its own failing test; every other verdict stays as it was.
    let fake = FakeLangSmith::start();
    fake.require_key("fx-key");
    let url = fake.url();
    let langsmith = [
        ("FX_JUDGE_CALLS", log_str),
        ("RAG_EVAL_CACHE", "replay"),
        ("LANGSMITH_API_KEY", "fx-key"),
        ("LANGSMITH_ENDPOINT", url.as_str()),
    ];
    fake.inject("POST", "/runs/batch", 0, 1000, Fault::Status(400));
    let (code, broken) = cargo_test(&root, &langsmith);
    assert_eq!(code, 101, "{broken}");
    let mut with_upload = failures.clone();
    with_upload.push("rag::langsmith_upload".into());
    with_upload.sort();
    assert_eq!(failed(&broken), with_upload, "{broken}");
    let upload = failure_of(&broken, "rag::langsmith_upload");
    assert!(
        upload.contains(
            "uploading the LangSmith experiment `fx-rag` failed (the local results are complete"
        ),
        "{upload}"
    );
    assert!(fake.state().runs.is_empty());

    // Healed, the next run continues the upload: one run per query with its answer, one
    // feedback per query and figure, each delivered once.
    fake.heal();
    let (code, uploaded) = cargo_test(&root, &langsmith);
    assert_eq!(code, 101, "{uploaded}");
    assert_eq!(failed(&uploaded), failures, "{uploaded}");
    {
        let state = fake.state();
        assert_eq!(state.sessions.len(), 1);
        assert_eq!(state.sessions[0]["name"], "fx-rag");
        let session = state.sessions[0]["id"].as_str().unwrap().to_owned();
        let runs = state.runs_of(&session);
        assert_eq!(runs.len(), 40);
        let q1 = runs
            .iter()
            .find(|r| r["extra"]["metadata"]["query_id"] == "q0001")
            .expect("q0001's run");
        assert_eq!(
            q1["inputs"]["query"],
            "Which Linux kernel version does a Larkspur host need at minimum?"
        );
        assert!(
            q1["outputs"]["answer"]
                .as_str()
                .is_some_and(|a| !a.is_empty()),
            "{q1}"
        );
        let faithfulness = state
            .feedback
            .iter()
            .filter(|f| f["key"] == "faithfulness" && f["run_id"].is_string())
            .count();
        assert_eq!(faithfulness, 40);
        assert!(
            state.deliveries.values().all(|&n| n == 1),
            "{:?}",
            state.deliveries
        );
    }
    let sent = uploaded
        .lines()
        .find(|l| l.starts_with("LANGSMITH rag: experiment `fx-rag`: 40 runs and "))
        .unwrap_or_else(|| panic!("the upload is reported:\n{uploaded}"));
    assert!(sent.ends_with(" already there"), "{sent}");

    // Run again: nothing is sent twice.
    let (feedback, deliveries) = {
        let state = fake.state();
        (state.feedback.len(), state.deliveries.clone())
    };
    let (code, again) = cargo_test(&root, &langsmith);
    assert_eq!(code, 101, "{again}");
    assert!(
        again.contains("LANGSMITH rag: experiment `fx-rag`: 0 runs and 0 feedback sent"),
        "{again}"
    );
    assert_eq!(fake.state().feedback.len(), feedback);
    assert_eq!(fake.state().deliveries, deliveries);
    assert_eq!(calls(&log), recorded, "{again}");
}

#[test]
fn a_case_whose_judge_cannot_be_reached_fails_in_seconds_naming_the_url_and_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("fx");
    fixture(&root);
    let (code, out) = cargo(&root, &["test", "--test", "unreachable", "--no-run"], &[]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = cargo_test_of(&root, "unreachable", &[], &[]);
    // The run's own time, as libtest reports it: a rebuild by cargo (another fixture test
    // sharing the target folder) is not the judge's doing.
    let took: f64 = out
        .rsplit("finished in ")
        .next()
        .and_then(|t| t.split('s').next())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `finished in` line: {out}"));
    assert!(took < 15.0, "{took} s: {out}");
    assert_eq!(code, 101, "{out}");
    // Every query's test fails, saying why it has no figure, and so does the summary.
    let failures = failed(&out);
    assert_eq!(failures.len(), 41, "{out}");
    let q1 = failure_of(&out, "unreachable::q0001");
    assert!(
        q1.contains("faithfulness has no figure: judging failed: `POST http://127.0.0.1:1/v1/chat/completions`: cannot connect (connection refused)"),
        "{q1}"
    );
    let summary = failure_of(&out, "unreachable::summary");
    assert!(
        summary.contains("`faithfulness` has a bar but was not computed (judging failed for every query: 40 × unreachable, first: `POST http://127.0.0.1:1/v1/chat/completions`: cannot connect (connection refused)"),
        "{summary}"
    );
    assert!(!out.contains("precision_omega needs"), "{out}");
    // No baseline without the gated figure is offered.
    assert!(
        summary.contains("was neither compared nor written"),
        "{summary}"
    );
    assert!(!out.contains("cargo insta accept"), "{out}");
    let snapshots: Vec<_> = std::fs::read_dir(root.join("golden"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".snap"))
        .collect();
    assert!(snapshots.is_empty(), "{snapshots:?}");
}

/// The Must-show of a team's service gated in `cargo test`: a case over the stub RAG service
/// (HTTP, its sources given as text and found in the corpus) and ten questions with reference
/// answers only, judged by a scripted judge that is down for its first request; its record
/// keeps the answers, the placed sources and the judge's statements; its token-F1 bar fails
/// the gate; then, the service and the judge stopped, the replay gives the same verdicts.
#[test]
fn a_service_case_over_question_answer_pairs_is_judged_recorded_gated_and_replayed_offline() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("fx");
    fixture(&root);
    let runs = dir.path().join("runs.sqlite");
    let runs_str = runs.to_str().unwrap();
    let service = Service::start("good");
    let spec = service.spec("/ask", "");
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = calls.clone();
    let judge = chat_server(move |c| {
        if seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            return Reply::json(
                503,
                &serde_json::json!({"error": {"message": "warming up"}}),
            );
        }
        let quote = first_passage_words(&c.prompt).expect("the judge is shown the sources");
        let content = serde_json::json!({"statements": [
            {"statement": "The answer is in the documentation.", "verdict": "supported",
             "context": 1, "evidence": quote, "reason": "passage 1 says it"}]});
        Reply::json(200, &completion(&content.to_string(), (50, 10)))
    });
    let judge_url = judge.url("/v1");
    let env = [
        ("FX_SERVICE", spec.as_str()),
        ("FX_JUDGE_URL", judge_url.as_str()),
        ("RAG_EVAL_RUNS", runs_str),
    ];
    let (code, out) = cargo_test_of(&root, "service", &[], &env);
    assert_eq!(code, 101, "the token-F1 bar fails:\n{out}");
    let failures = failed(&out);
    assert!(
        failures.contains(&"service_answers::summary".to_owned()),
        "{out}"
    );
    let summary = last_failure(&out, "service_answers::summary");
    assert!(
        summary.contains("is below the bar 0.9000 (min_token_f1); worst queries:"),
        "{summary}"
    );
    // Faithfulness holds: no query fails on it, and the judge's retry shows.
    assert!(!out.contains("(min_faithfulness)"), "{out}");
    assert!(
        out.contains("faithfulness: 10 calls (0 repairs) and 1 HTTP retries"),
        "{out}"
    );
    assert!(
        out.contains("retrieval not measured: examples/data/qa.jsonl holds questions with reference answers and no retrieval truth"),
        "{out}"
    );
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 11);
    // The snapshot holds the answers' figures and no retrieval figure.
    let snap = std::fs::read_to_string(root.join("golden/service_answers.snap.new")).unwrap();
    let figures = summary_figures(&snap);
    assert!(
        figures.contains_key("token_f1") && figures.contains_key("faithfulness"),
        "{snap}"
    );
    assert!(
        !snap.contains("span_") && !snap.contains("precision_omega"),
        "{snap}"
    );

    // The record: each answer, the sources the service sent (found in the documents), what
    // the judge said, and no retrieval figure.
    let (code, printed) =
        cargo_test_of(&root, "records", &["--nocapture"], &[("FX_RUNS", runs_str)]);
    assert_eq!(code, 0, "{printed}");
    let run: Value = printed
        .lines()
        .find_map(|l| l.strip_prefix("RUN "))
        .map(|l| serde_json::from_str(l).unwrap())
        .expect("the case's run is recorded");
    assert_eq!(run["label"], "service_answers", "{run}");
    let per_query = run["result"]["per_query"].as_array().unwrap();
    assert_eq!(per_query.len(), 10);
    let q1 = &per_query[0];
    assert!(q1["answer"].as_str().unwrap().contains("4.18"), "{q1}");
    let contexts = q1["contexts"].as_array().unwrap();
    assert_eq!(contexts[0]["doc_id"], "guides/installation.md", "{q1}");
    assert!(
        contexts[0]["end"].as_u64() > contexts[0]["start"].as_u64(),
        "{q1}"
    );
    let judged = &q1["judges"][0];
    assert_eq!(judged["metric"], "faithfulness", "{q1}");
    let statement = &judged["samples"][0]["details"]["statements"][0];
    assert_eq!(statement["supported"], true, "{q1}");
    assert_eq!(statement["reason"], "passage 1 says it", "{q1}");
    for q in per_query {
        let names: Vec<&String> = q["metrics"].as_object().unwrap().keys().collect();
        assert!(!names.iter().any(|n| n.starts_with("span_")), "{q}");
        assert!(q.get("truth").is_none(), "{q}");
    }

    // The service and the judge stopped, the replay passes and fails the same.
    drop(service);
    drop(judge);
    let replay = [
        ("FX_SERVICE", spec.as_str()),
        ("FX_JUDGE_URL", judge_url.as_str()),
        ("RAG_EVAL_CACHE", "replay"),
    ];
    let (code, again) = cargo_test_of(&root, "service", &[], &replay);
    assert_eq!(code, 101, "{again}");
    assert_eq!(failed(&again), failures, "{again}");
    assert_eq!(
        last_failure(&again, "service_answers::summary"),
        summary,
        "{again}"
    );
    assert!(again.contains("and 0 HTTP retries"), "{again}");
}
