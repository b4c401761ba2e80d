//! `score --answers` with LLM judges, end to end through the binary against a scripted
//! OpenAI-compatible server: the figures, the JSON and table, rows without a reference
//! answer, answer relevancy without an embedder, the invalid-share gate, and the run records
//! that `compare` reads; a judge server or a spec's embedder that never answers, given up
//! after `--timeout`.

use crate::support;

use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use support::chat::{chat_server, completion, Chat};
use support::{Reply, TestServer};

/// Three rows: q1 with one reference answer, q2 with two, q3 with none.
fn dataset() -> String {
    let row = |id: &str, query: &str, start: u32, end: u32, reference: Value, difficulty: &str| {
        let mut outputs =
            json!({"relevant_spans": [{"doc_id": "a.md", "start": start, "end": end}]});
        if !reference.is_null() {
            outputs["reference_answer"] = reference;
        }
        json!({"id": id, "inputs": {"query": query}, "outputs": outputs,
               "metadata": {"difficulty": difficulty}})
        .to_string()
            + "\n"
    };
    [
        row(
            "q1",
            "first",
            10,
            20,
            json!("The cat sat on the mat."),
            "factual",
        ),
        row(
            "q2",
            "second",
            40,
            45,
            json!(["Paris", "the capital, Paris"]),
            "factual",
        ),
        row("q3", "third", 0, 5, Value::Null, "inferential"),
    ]
    .concat()
}

/// An answer per row: q2's without contexts.
fn answers() -> String {
    let line = |id: &str, answer: &str, contexts: Value| {
        json!({"id": id, "answer": answer, "contexts": contexts}).to_string() + "\n"
    };
    [
        line(
            "q1",
            "the cat sat",
            json!([{"doc_id": "a.md", "start": 10, "end": 20, "text": "0123456789", "score": 0.9}]),
        ),
        line("q2", "Paris, the capital city!", json!([])),
        line(
            "q3",
            "no idea",
            json!([{"doc_id": "a.md", "start": 0, "end": 5, "text": "abcde"}]),
        ),
    ]
    .concat()
}

/// How the scripted judge behaves.
#[derive(Default)]
struct Script {
    /// Every answer is prose, never JSON.
    broken: AtomicBool,
    /// The faithfulness verdict on q1's answer.
    q1_unsupported: AtomicBool,
    /// q3's answer holds a supported statement (else none: undetermined).
    q3_statement: AtomicBool,
    /// The judge calls q1's statement supported with a quote found in no context.
    q1_unquoted: AtomicBool,
    /// The user messages received.
    seen: Mutex<Vec<String>>,
    /// Milliseconds each answer takes.
    delay_ms: std::sync::atomic::AtomicU64,
}

fn reply_for(schema: &str, prompt: &str, script: &Script) -> String {
    let answer_is = |a: &str| prompt.contains(&format!("Answer: {a}\n"));
    match schema {
        "faithfulness" if answer_is("the cat sat") => {
            let verdict = if script.q1_unsupported.load(Ordering::SeqCst) {
                "not_supported"
            } else {
                "supported"
            };
            // The first passage's text, as a judge quoting its evidence would.
            let first = prompt
                .split_once("Context passages:\n[1] ")
                .and_then(|(_, rest)| rest.lines().nth(1))
                .unwrap_or_default();
            let evidence = if script.q1_unquoted.load(Ordering::SeqCst) {
                "the cat sat on the mat"
            } else {
                first
            };
            json!({"statements": [{"statement": "The cat sat.", "verdict": verdict,
                "context": 0, "evidence": evidence, "reason": "r"}]})
        }
        "faithfulness" if answer_is("Paris, the capital city!") => {
            json!({"statements": [
                {"statement": "It is Paris.", "verdict": "not_supported", "context": 0, "evidence": "", "reason": "r"},
                {"statement": "Paris is a city.", "verdict": "not_supported", "context": 0, "evidence": "", "reason": "r"}]})
        }
        "faithfulness" if answer_is("no idea") && script.q3_statement.load(Ordering::SeqCst) => {
            json!({"statements": [{"statement": "No idea.", "verdict": "supported",
                "context": 1, "evidence": "abcde", "reason": "r"}]})
        }
        // "no idea" holds no statement: undetermined.
        "faithfulness" => json!({"statements": []}),
        "answer_relevancy" => json!({"questions": ["first", "second", "third"], "noncommittal": false}),
        "llm_context_precision" => {
            json!({"verdicts": [{"context": 1, "useful": true, "reason": "r"}]})
        }
        "llm_context_recall" => {
            json!({"statements": [{"statement": "s", "attributed": true, "context": 0, "reason": "r"}]})
        }
        "answer_match" => json!({"reason": "same", "matches": true}),
        other => panic!("unexpected schema {other}"),
    }
    .to_string()
}

fn judge_server(script: Arc<Script>) -> TestServer {
    chat_server(move |c: &Chat| {
        script.seen.lock().unwrap().push(c.prompt.clone());
        let content = if c.schema.is_empty() {
            // The generator of `eval --answers`.
            "the cat sat".to_owned()
        } else if script.broken.load(Ordering::SeqCst) {
            "I think the answer is fine.".to_owned()
        } else {
            reply_for(&c.schema, &c.prompt, &script)
        };
        Reply::from(completion(&content, (40, 8))).delayed(std::time::Duration::from_millis(
            script.delay_ms.load(Ordering::SeqCst),
        ))
    })
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run_in(cwd: &Path, store: &str, args: &[&str]) -> Out {
    let (code, stdout, stderr) = crate::cli_support::run_in(cwd, store, args);
    Out {
        code,
        stdout,
        stderr,
    }
}

fn ok(cwd: &Path, store: &str, args: &[&str]) -> Out {
    let out = run_in(cwd, store, args);
    assert_eq!(out.code, 0, "{args:?} failed: {}", out.stderr);
    out
}

struct Setup {
    dir: tempfile::TempDir,
    store: String,
    url: String,
    script: Arc<Script>,
    _server: TestServer,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.jsonl"), dataset()).unwrap();
        std::fs::write(dir.path().join("a.jsonl"), answers()).unwrap();
        let store = dir.path().join("runs.sqlite").to_str().unwrap().to_owned();
        let script = Arc::new(Script::default());
        let server = judge_server(Arc::clone(&script));
        Setup {
            url: server.url("/v1"),
            dir,
            store,
            script,
            _server: server,
        }
    }

    /// The requests the scripted chat server has had.
    fn chat_requests(&self) -> usize {
        self.script.seen.lock().unwrap().len()
    }

    fn score(&self, extra: &[&str]) -> Out {
        self.score_with(&self.url, extra)
    }

    /// `eval` answering `dataset` over `docs` with the generator at `base_url`, then `extra`.
    fn answer(&self, dataset: &str, base_url: &str, extra: &[&str]) -> Out {
        let mut args = vec![
            "eval",
            "--corpus",
            "docs",
            "--dataset",
            dataset,
            "--chunker",
            "recursive:size=20,overlap=0",
            "--answers",
            "--model",
            "gen-m",
            "--base-url",
            base_url,
        ];
        args.extend_from_slice(extra);
        run_in(self.dir.path(), &self.store, &args)
    }

    /// `score` of the answers with the judge at `judge_url`, then `extra`.
    fn score_with(&self, judge_url: &str, extra: &[&str]) -> Out {
        let mut args = vec![
            "score",
            "--dataset",
            "d.jsonl",
            "--answers",
            "a.jsonl",
            "--judge-model",
            "judge-m",
            "--judge-url",
            judge_url,
        ];
        args.extend_from_slice(extra);
        run_in(self.dir.path(), &self.store, &args)
    }
}

/// The latest recorded run, checked to carry the judge model (and not its URL), one sample
/// and `prompts` prompt versions, faithfulness's first.
fn latest_run_with_judges(s: &Setup, prompts: usize) -> Value {
    let shown = ok(
        s.dir.path(),
        &s.store,
        &["runs", "show", "latest", "--json"],
    )
    .stdout;
    assert!(!shown.contains(&s.url), "the judge's URL is not recorded");
    let run: Value = serde_json::from_str(shown.trim()).unwrap();
    let c = &run["config"];
    assert_eq!(c["judge_models"], json!(["judge-m"]));
    assert_eq!(c["judge_samples"], 1);
    let versions = c["judge_prompts"].as_array().unwrap();
    assert_eq!(versions.len(), prompts, "{c}");
    assert!(
        versions[0].as_str().unwrap().starts_with("faithfulness/"),
        "{c}"
    );
    run
}

fn figure(v: &Value, metric: &str) -> Option<f64> {
    v.get(metric).and_then(Value::as_f64)
}

#[test]
fn every_judge_scores_the_answers_rows_without_a_reference_get_no_figure_and_the_run_is_recorded() {
    let s = Setup::new();
    let out = s.score(&["--embedder", "hashing", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let m = &v["metrics"];
    // q1 1 of 1 statements supported, q2 0 of 2, q3 none: undetermined, out of the mean.
    assert_eq!(figure(m, "faithfulness"), Some(0.5));
    assert_eq!(figure(&v["std"], "faithfulness"), Some(0.5));
    // Only q1 and q2 have a reference answer; both match.
    assert_eq!(figure(m, "answer_match"), Some(1.0));
    assert_eq!(figure(m, "llm_context_recall"), Some(1.0));
    // q2 has no contexts: undetermined; q1's one useful chunk gives 1.
    assert_eq!(figure(m, "llm_context_precision"), Some(1.0));
    assert!(figure(m, "answer_relevancy").is_some(), "{m}");
    let q = |id: &str| {
        v["per_query"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["id"] == id)
            .unwrap()["metrics"]
            .clone()
    };
    assert_eq!(figure(&q("q1"), "faithfulness"), Some(1.0));
    assert_eq!(figure(&q("q2"), "faithfulness"), Some(0.0));
    assert_eq!(figure(&q("q3"), "faithfulness"), None);
    assert_eq!(figure(&q("q3"), "answer_match"), None, "no reference: no 0");
    assert!(figure(&q("q3"), "answer_relevancy").is_some());
    assert_eq!(v["without_reference"], 1);
    // The judges' summaries: counts and tokens.
    let judges = v["judges"].as_array().unwrap();
    let names: Vec<&str> = judges
        .iter()
        .map(|j| j["metric"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "faithfulness",
            "answer_relevancy",
            "llm_context_precision",
            "llm_context_recall",
            "answer_match"
        ]
    );
    let f = &judges[0];
    assert_eq!(
        (f["ok"].as_u64(), f["undetermined"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        (f["invalid"].as_u64(), f["error"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(f["usage"]["calls"], 3);
    assert_eq!(f["usage"]["prompt_tokens"], 120);
    let by = &v["by_difficulty"];
    assert_eq!(figure(&by["factual"]["metrics"], "faithfulness"), Some(0.5));
    assert_eq!(figure(&by["inferential"]["metrics"], "faithfulness"), None);
    // Several reference answers reach the judge one per paragraph.
    let seen = s.script.seen.lock().unwrap().clone();
    assert!(
        seen.iter()
            .any(|p| p.contains("Paris\n\nthe capital, Paris")),
        "{seen:?}"
    );
    assert!(out.stderr.contains("faithfulness: 3 calls (0 repairs) and 0 HTTP retries, 144 tokens; 2 of 3 samples scored, 1 undetermined, 0 invalid, 0 failed"), "{}", out.stderr);

    // The recorded run carries the judges, their figures per query, and their tokens.
    let run = latest_run_with_judges(&s, 5);
    let calls: u64 = judges
        .iter()
        .map(|j| j["usage"]["calls"].as_u64().unwrap())
        .sum();
    let judge = &run["usage"]["judge"];
    assert_eq!(judge["prompt_tokens"].as_u64(), Some(40 * calls));
    assert_eq!(judge["completion_tokens"].as_u64(), Some(8 * calls));
    let q1 = &run["result"]["per_query"][0];
    assert_eq!(q1["id"], "q1");
    assert_eq!(figure(&q1["metrics"], "faithfulness"), Some(1.0));

    // Two runs over rows that all have a reference answer and statements, the second with q1's
    // statement no longer supported: compare reports faithfulness.
    let rows = |text: &str| text.lines().take(2).collect::<Vec<_>>().join("\n") + "\n";
    std::fs::write(s.dir.path().join("d.jsonl"), rows(&dataset())).unwrap();
    std::fs::write(s.dir.path().join("a.jsonl"), rows(&answers())).unwrap();
    let before = s.score(&["--judges", "faithfulness,answer_match"]);
    assert_eq!(before.code, 0, "{}", before.stderr);
    s.script.q1_unsupported.store(true, Ordering::SeqCst);
    let after = s.score(&["--judges", "faithfulness,answer_match"]);
    assert_eq!(after.code, 0, "{}", after.stderr);
    assert!(after.stdout.contains("faithfulness"), "{}", after.stdout);
    let listed = ok(s.dir.path(), &s.store, &["runs", "list", "--json"]).stdout;
    let ids: Vec<String> = listed
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(ids.len(), 3);
    let compared = ok(
        s.dir.path(),
        &s.store,
        &["compare", "--json", &ids[1], &ids[2]],
    )
    .stdout;
    let c: Value = serde_json::from_str(compared.trim()).unwrap();
    let faithfulness = c["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "faithfulness")
        .unwrap_or_else(|| panic!("compare reports faithfulness: {compared}"));
    let d = faithfulness["vs_baseline"][0]["difference"]
        .as_f64()
        .unwrap();
    assert!((d.abs() - 0.5).abs() < 1e-12, "{faithfulness}");

    // Two runs over all three rows: in the first q3's faithfulness is undetermined, in the
    // second q3 has a supported statement and q1's is no longer supported. q3 has no reference
    // answer, so neither run has answer_match for it. Each metric is compared over q1 and q2.
    std::fs::write(s.dir.path().join("d.jsonl"), dataset()).unwrap();
    std::fs::write(s.dir.path().join("a.jsonl"), answers()).unwrap();
    s.script.q1_unsupported.store(false, Ordering::SeqCst);
    let before = s.score(&["--judges", "faithfulness,answer_match"]);
    assert_eq!(before.code, 0, "{}", before.stderr);
    s.script.q1_unsupported.store(true, Ordering::SeqCst);
    s.script.q3_statement.store(true, Ordering::SeqCst);
    let after = s.score(&["--judges", "faithfulness,answer_match"]);
    assert_eq!(after.code, 0, "{}", after.stderr);
    let compared = ok(
        s.dir.path(),
        &s.store,
        &["compare", "--json", "latest~1", "latest"],
    )
    .stdout;
    let c: Value = serde_json::from_str(compared.trim()).unwrap();
    assert_eq!(c["queries"], 3, "{compared}");
    let metric = |name: &str| -> Value {
        c["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["metric"] == name)
            .unwrap_or_else(|| panic!("compare reports {name}: {compared}"))
            .clone()
    };
    let f = metric("faithfulness");
    assert_eq!(f["queries"], 2, "{f}");
    // The baseline lacks q3; the later run has it, left out all the same.
    assert_eq!(f["runs"][0]["missing"], 1, "{f}");
    assert!(f["runs"][1].get("missing").is_none(), "{f}");
    // q1 1 → 0, q2 0 → 0: a mean difference of −1/2 over the pairs (not −1/3 over three).
    assert_eq!(f["runs"][0]["mean"].as_f64(), Some(0.5), "{f}");
    assert_eq!(f["runs"][1]["mean"].as_f64(), Some(0.0), "{f}");
    let d = &f["vs_baseline"][0];
    assert_eq!(d["difference"].as_f64(), Some(-0.5), "{f}");
    assert_eq!(
        (d["wins"].as_u64(), d["ties"].as_u64(), d["losses"].as_u64()),
        (Some(0), Some(1), Some(1))
    );
    assert_eq!(d["most_worse"][0]["id"], "q1", "{f}");
    let m = metric("answer_match");
    assert_eq!(m["queries"], 2, "{m}");
    assert_eq!(
        (
            m["runs"][0]["missing"].as_u64(),
            m["runs"][1]["missing"].as_u64()
        ),
        (Some(1), Some(1))
    );
    // The text says how many queries each metric is over and what each run left out.
    let text = ok(s.dir.path(), &s.store, &["compare", "latest~1", "latest"]).stdout;
    assert!(
        text.contains("faithfulness: over the 2 of 3 queries with a figure in every run (left out for a missing figure: "),
        "{text}"
    );
}

#[test]
fn a_supported_statement_whose_evidence_is_in_no_context_is_unsupported_and_counted() {
    let s = Setup::new();
    s.script.q1_unquoted.store(true, Ordering::SeqCst);
    let out = s.score(&["--judges", "faithfulness", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let q1 = &v["per_query"][0];
    assert_eq!(q1["id"], "q1");
    // The judge called it supported, quoting text that is in no context: 0, not 1.
    assert_eq!(figure(&q1["metrics"], "faithfulness"), Some(0.0));
    assert_eq!(v["judges"][0]["unlocated"], 1, "{}", v["judges"]);
    assert!(
        out.stderr.contains(
            "faithfulness: 3 calls (0 repairs) and 0 HTTP retries, 144 tokens; 2 of 3 samples scored, 1 undetermined, 0 invalid, 0 failed; statements counted unsupported for evidence in no context: 1"
        ),
        "{}",
        out.stderr
    );
    // Quoted as it stands in the context, the same statement is supported.
    s.script.q1_unquoted.store(false, Ordering::SeqCst);
    let out = s.score(&["--judges", "faithfulness", "--json"]);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(
        figure(&v["per_query"][0]["metrics"], "faithfulness"),
        Some(1.0)
    );
    assert_eq!(v["judges"][0]["unlocated"], 0);
    assert!(
        !out.stderr.contains("evidence in no context"),
        "{}",
        out.stderr
    );
}

#[test]
fn answer_relevancy_needs_an_embedder_only_when_asked_for() {
    let s = Setup::new();
    // Left out of the default set, with a notice.
    let out = s.score(&["--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("answer_relevancy is left out: it needs an embedder (give --embedder SPEC)"),
        "{}",
        out.stderr
    );
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert!(v["metrics"].get("answer_relevancy").is_none());
    assert!(v["metrics"].get("faithfulness").is_some());
    // Asked for by name: an error before any call.
    let calls = s.chat_requests();
    let out = s.score(&["--judges", "faithfulness,answer_relevancy"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("--judges answer_relevancy needs an embedder: give --embedder SPEC"),
        "{}",
        out.stderr
    );
    assert_eq!(s.chat_requests(), calls);
    let out = s.score(&["--judges", "faithfulness,relevance"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("unknown judge `relevance`"),
        "{}",
        out.stderr
    );
}

/// `--concurrency N` caps the requests in flight at the judge's server (and the answers judged
/// at once).
#[test]
fn the_concurrency_option_caps_the_requests_in_flight() {
    for (option, most) in [(None, 3), (Some("1"), 1)] {
        let s = Setup::new();
        s.script.delay_ms.store(100, Ordering::SeqCst);
        let mut args = vec!["--judges", "faithfulness"];
        args.extend(option.iter().flat_map(|n| ["--concurrency", n]));
        let out = s.score(&args);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(s._server.max_in_flight(), most, "{option:?}");
    }
    let out = Setup::new().score(&["--concurrency", "0"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--concurrency"), "{}", out.stderr);
}

#[test]
fn too_many_invalid_judge_answers_fail_the_command_after_the_figures() {
    let s = Setup::new();
    s.script.broken.store(true, Ordering::SeqCst);
    let out = s.score(&["--judges", "faithfulness"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("faithfulness: 3 invalid and 0 failed judge answers of 3 samples (100.0%) exceed the allowed share 5.0% (--max-invalid-share): the figures cannot gate anything"),
        "{}",
        out.stderr
    );
    // The table is still printed, and each answer got the two repair turns.
    assert!(out.stdout.contains("bleu"), "{}", out.stdout);
    assert_eq!(s.chat_requests(), 9);
    // A share the run stays under passes.
    let out = s.score(&["--judges", "faithfulness", "--max-invalid-share", "1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("3 invalid"), "{}", out.stderr);
}

#[test]
fn eval_answers_records_the_judges_with_the_run() {
    let s = Setup::new();
    let docs = s.dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    // The queries' words in the first chunk: every query retrieves it.
    std::fs::write(
        docs.join("a.md"),
        "first second third 0123456789abcdefghijABCDEFGHIJ",
    )
    .unwrap();
    let out = s.answer(
        "d.jsonl",
        &s.url,
        &[
            "--judge-model",
            "judge-m",
            "--judges",
            "faithfulness,answer_match",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("faithfulness"), "{}", out.stdout);
    let run = latest_run_with_judges(&s, 2);
    // Every generated answer is "the cat sat": one supported statement each.
    assert_eq!(figure(&run["result"]["metrics"], "faithfulness"), Some(1.0));
    // q3 has no reference answer: no answer_match figure for it, 1 for the others.
    let per_query = run["result"]["per_query"].as_array().unwrap();
    let q3 = per_query.iter().find(|q| q["id"] == "q3").unwrap();
    assert_eq!(figure(&q3["metrics"], "answer_match"), None);
    assert_eq!(figure(&q3["metrics"], "faithfulness"), Some(1.0));
    assert_eq!(figure(&run["result"]["metrics"], "answer_match"), Some(1.0));
    // Judge tokens: faithfulness on 3 answers and answer_match on the 2 with a reference, at
    // 40 + 8 tokens a call; the generator's apart: one call per query.
    let usage = &run["usage"];
    assert_eq!(
        usage["judge"],
        json!({"prompt_tokens": 5 * 40, "completion_tokens": 5 * 8}),
        "{usage}"
    );
    assert_eq!(
        usage["generator"],
        json!({"prompt_tokens": 3 * 40, "completion_tokens": 3 * 8}),
        "{usage}"
    );
    assert!(usage.get("embedding").is_none(), "{usage}");
    // The generator is in the configuration: its model and prompt version.
    let c = &run["config"];
    assert_eq!(c["generator_model"], "gen-m", "{c}");
    assert_eq!(c["generator_prompt"], "answer/1", "{c}");
    // Generation and judging are timed apart from retrieval.
    let t = &run["timings_ms"];
    for phase in ["index", "retrieve", "generate", "judge", "score"] {
        assert!(t[phase].as_f64().is_some(), "{phase}: {t}");
    }
    // What was judged is kept per query: the answer, its contexts, the references, and each
    // judge's samples with their status, verdicts and reasons.
    let q1 = per_query.iter().find(|q| q["id"] == "q1").unwrap();
    assert_eq!(q1["answer"], "the cat sat");
    assert_eq!(q1["references"], json!(["The cat sat on the mat."]));
    // The generator saw what was retrieved (nothing here: no chunk shares a word with it).
    assert_eq!(q1["contexts"], q1["retrieved"], "{q1}");
    assert!(q1["contexts"].is_array(), "{q1}");
    let judges = q1["judges"].as_array().unwrap();
    assert_eq!(judges.len(), 2, "{q1}");
    assert_eq!(judges[0]["metric"], "faithfulness");
    let sample = &judges[0]["samples"][0];
    assert_eq!(sample["status"], "ok");
    let statement = &sample["details"]["statements"][0];
    assert_eq!(
        (
            &statement["text"],
            &statement["supported"],
            &statement["reason"]
        ),
        (&json!("The cat sat."), &json!(true), &json!("r"))
    );
    assert_eq!(judges[1]["samples"][0]["details"]["reason"], "same");
    // With reference answers the lexical metrics are computed too: "the cat sat" against
    // "The cat sat on the mat.": 3 of 3 answer tokens, 3 of 6 reference tokens.
    let f1 = figure(&q1["metrics"], "token_f1").unwrap();
    assert!((f1 - 2.0 * 1.0 * 0.5 / 1.5).abs() < 1e-9, "{f1}");
    assert_eq!(figure(&q3["metrics"], "token_f1"), None);
    assert!(figure(&run["result"]["metrics"], "rouge_l").is_some());
    // `--json` carries the same, and the judges' summaries.
    let out = s.answer(
        "d.jsonl",
        &s.url,
        &["--judge-model", "judge-m", "--json", "--no-record"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(v["per_query"][0]["answer"], "the cat sat", "{v}");
    assert_eq!(v["judges"][0]["metric"], "faithfulness", "{v}");
    assert_eq!(v["judges"][0]["ok"], 3, "{v}");
    assert!(v["timings"]["generate_ms"].as_f64().is_some(), "{v}");
    assert!(figure(&v["metrics"], "exact_match").is_some(), "{v}");
}

#[test]
fn eval_answers_refuses_a_question_asked_twice_naming_both_rows() {
    let s = Setup::new();
    let twice = dataset().replace("\"second\"", "\"first\"");
    std::fs::write(s.dir.path().join("twice.jsonl"), twice).unwrap();
    std::fs::create_dir_all(s.dir.path().join("docs")).unwrap();
    std::fs::write(
        s.dir.path().join("docs/a.md"),
        "first second third 0123456789abcdefghijABCDEFGHIJ",
    )
    .unwrap();
    let out = s.answer("twice.jsonl", &s.url, &[]);
    assert_ne!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "twice.jsonl:2: query `q2` asks the same question as query `q1` (twice.jsonl:1)"
        ),
        "{}",
        out.stderr
    );
    // Nothing was generated.
    assert_eq!(s.chat_requests(), 0);
}

#[test]
fn score_answers_keeps_what_was_judged_and_takes_a_label() {
    let s = Setup::new();
    s.script.q1_unsupported.store(true, Ordering::SeqCst);
    let out = s.score(&["--judges", "faithfulness", "--json", "--label", "system-b"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let q = &v["per_query"];
    assert_eq!(q[0]["query"], "first");
    assert_eq!(q[0]["answer"], "the cat sat");
    assert_eq!(
        q[0]["contexts"],
        json!([{"doc_id": "a.md", "start": 10, "end": 20, "text": "0123456789"}])
    );
    assert_eq!(q[1]["references"], json!(["Paris", "the capital, Paris"]));
    let st = &q[0]["judges"][0]["samples"][0];
    assert_eq!(st["status"], "ok");
    assert_eq!(st["details"]["statements"][0]["supported"], false);
    // q3's answer holds no statement: undetermined, kept with its status.
    assert_eq!(q[2]["judges"][0]["samples"][0]["status"], "undetermined");
    let run: Value = serde_json::from_str(
        ok(
            s.dir.path(),
            &s.store,
            &["runs", "show", "latest", "--json"],
        )
        .stdout
        .trim(),
    )
    .unwrap();
    assert_eq!(run["label"], "system-b");
    assert_eq!(run["result"]["per_query"][0]["judges"], q[0]["judges"]);
    assert_eq!(run["usage"]["judge"]["prompt_tokens"], 3 * 40);
    // A judge that answers prose: each sample invalid, with the reason kept.
    s.script.broken.store(true, Ordering::SeqCst);
    let out = s.score(&[
        "--judges",
        "faithfulness",
        "--json",
        "--max-invalid-share",
        "1",
    ]);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let sample = &v["per_query"][0]["judges"][0]["samples"][0];
    assert_eq!(sample["status"], "invalid", "{sample}");
    assert!(
        sample["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{sample}"
    );
}

#[test]
fn a_judge_server_that_hangs_on_post_is_given_up_after_the_timeout() {
    use support::hostile::{HostileServer, Hostility};
    let s = Setup::new();
    let server = HostileServer::start(Hostility::HangOnPost);
    let url = server.url("/v1");
    let started = std::time::Instant::now();
    let out = s.score_with(&url, &["--judges", "faithfulness", "--timeout", "1"]);
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("faithfulness: 0 invalid and 3 failed judge answers of 3 samples (100.0%)"),
        "{}",
        out.stderr
    );
    assert!(server.posts() >= 1);
}

#[test]
fn an_embedder_built_from_its_spec_is_given_up_after_the_timeout() {
    use support::hostile::{HostileServer, Hostility};
    let s = Setup::new();
    let server = HostileServer::start(Hostility::HangOnPost);
    let embedder = format!("openai:model=m,base_url={}", server.url("/v1"));
    let started = std::time::Instant::now();
    let out = run_in(
        s.dir.path(),
        &s.store,
        &[
            "score",
            "--dataset",
            "d.jsonl",
            "--answers",
            "a.jsonl",
            "--embedder",
            &embedder,
            "--timeout",
            "1",
        ],
    );
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("deadline of 1s") && out.stderr.contains("/v1/embeddings"),
        "{}",
        out.stderr
    );
    assert!(server.posts() >= 1);
}

#[test]
fn judge_samples_beyond_the_maximum_are_a_usage_error() {
    let s = Setup::new();
    for samples in ["4294967295", "101", "0"] {
        let out = s.score(&["--judge-samples", samples]);
        assert_eq!(out.code, 2, "{samples}: {}", out.stderr);
        assert!(out.stderr.contains("--judge-samples"), "{}", out.stderr);
    }
    assert_eq!(s.chat_requests(), 0, "no judge was called");
}

#[test]
fn an_unreachable_judge_or_generator_fails_the_command_in_seconds_naming_the_url_and_the_cause() {
    // Port 1 on loopback refuses connections.
    let s = Setup::new();
    let dead = "http://127.0.0.1:1/v1";
    let started = std::time::Instant::now();
    let out = s.score_with(dead, &[]);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("error: faithfulness: 0 invalid and 3 failed judge answers of 3 samples (100.0%) exceed the allowed share 5.0% (--max-invalid-share): the figures cannot gate anything; judging failed: 3 × unreachable, first: `POST http://127.0.0.1:1/v1/chat/completions`: cannot connect (connection refused)"),
        "{}",
        out.stderr
    );

    // A generator that cannot be reached is named as one, not as a retriever.
    let docs = s.dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("a.md"),
        "0123456789abcdefghijABCDEFGHIJklmnopqrstKLMNOPQRST",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = s.answer("d.jsonl", dead, &[]);
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("generation failed for query `q"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(
            "`POST http://127.0.0.1:1/v1/chat/completions`: cannot connect (connection refused)"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("retrieval failed"), "{}", out.stderr);
}

/// The `judges` summary of a `score --json` run that let every failure through.
fn judges_summary(out: &Out) -> Value {
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    v["judges"][0].clone()
}

#[test]
fn the_first_failure_of_each_kind_is_printed_with_its_count_and_kept_in_the_summary() {
    use support::hostile::{HostileServer, Hostility};
    let s = Setup::new();
    let tolerant = [
        "--judges",
        "faithfulness",
        "--max-invalid-share",
        "1",
        "--json",
    ];
    // A 401 (the hostile server echoes the key back: it is scrubbed).
    let server = HostileServer::start(Hostility::EchoAuthorization);
    let url = server.url("/v1");
    let out = s.score_with(&url, &tolerant);
    let j = judges_summary(&out);
    assert_eq!(j["failures"].as_array().unwrap().len(), 1, "{j}");
    assert_eq!(j["failures"][0]["kind"], "HTTP 401", "{j}");
    assert_eq!(j["failures"][0]["count"], 3, "{j}");
    let first = j["failures"][0]["first"].as_str().unwrap();
    assert!(
        first.starts_with(&format!("`POST {url}/chat/completions`: 401 Unauthorized")),
        "{first}"
    );
    assert!(
        out.stderr.contains(&format!(
            "faithfulness:   3 × HTTP 401, first: `POST {url}/chat/completions`: 401"
        )),
        "{}",
        out.stderr
    );
    // A 404 from a wrong path.
    let wrong = format!("{}/wrong", s.url);
    let out = s.score_with(&wrong, &tolerant);
    let j = judges_summary(&out);
    assert_eq!(j["failures"][0]["kind"], "HTTP 404", "{j}");
    assert!(
        out.stderr.contains("3 × HTTP 404, first: `POST"),
        "{}",
        out.stderr
    );
    // A replay miss: a cache recorded with another judge.
    let recorded = s.score(&["--judges", "answer_match", "--cache", "rw:path=c.sqlite"]);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    let out = s.score(&[
        "--judges",
        "faithfulness",
        "--max-invalid-share",
        "1",
        "--json",
        "--cache",
        "replay:path=c.sqlite",
    ]);
    let j = judges_summary(&out);
    assert_eq!(j["failures"][0]["kind"], "replay miss", "{j}");
    assert!(
        out.stderr.contains("3 × replay miss, first: cache `"),
        "{}",
        out.stderr
    );
    // Answers that break the schema.
    s.script.broken.store(true, Ordering::SeqCst);
    let out = s.score(&tolerant);
    let j = judges_summary(&out);
    assert_eq!(j["failures"][0]["kind"], "invalid answer", "{j}");
    assert_eq!(j["failures"][0]["count"], 3, "{j}");
}

#[test]
fn http_retries_of_the_judge_are_counted_apart_from_its_calls() {
    use support::hostile::{HostileServer, Hostility};
    let s = Setup::new();
    // Every answer is a 429 asking for no wait: each call is retried until the client gives up.
    let server = HostileServer::start(Hostility::RetryAfter("0"));
    let url = server.url("/v1");
    let out = s.score_with(
        &url,
        &[
            "--judges",
            "faithfulness",
            "--max-invalid-share",
            "1",
            "--json",
        ],
    );
    let j = judges_summary(&out);
    let (calls, retries) = (
        j["usage"]["calls"].as_u64().unwrap(),
        j["retries"].as_u64().unwrap(),
    );
    assert_eq!(calls, 3, "{j}");
    assert!(retries > 0, "{j}");
    assert_eq!(
        (calls + retries) as usize,
        server.posts(),
        "every request the server saw: {j}"
    );
    assert!(
        out.stderr.contains(&format!(
            "faithfulness: 3 calls (0 repairs) and {retries} HTTP retries"
        )),
        "{}",
        out.stderr
    );
    assert_eq!(j["failures"][0]["kind"], "HTTP 429", "{j}");
}

/// The `total` entry of a dry run's JSON for the calls of `kind` named `name`.
fn planned<'a>(plan: &'a Value, kind: &str, name: &str) -> &'a Value {
    plan["total"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == kind && c["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in {plan}"))
}

fn dry_run(s: &Setup, extra: &[&str]) -> Value {
    let mut args = vec!["--dry-run", "--json"];
    args.extend_from_slice(extra);
    let out = s.score(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(out.stdout.trim()).unwrap()
}

#[test]
fn a_dry_run_counts_the_judge_calls_per_sample_and_shard_and_sends_nothing() {
    let s = Setup::new();
    let judges = ["--judges", "faithfulness,answer_match"];
    let plan = dry_run(&s, &[&judges[..], &["--judge-samples", "2"]].concat());
    assert_eq!(s.chat_requests(), 0, "a dry run sends nothing");
    assert_eq!(plan["queries"], 3);
    assert_eq!(plan["tokenizer"], "cl100k_base");
    // Faithfulness judges each of the 3 answers twice; answer_match only the 2 rows with a
    // reference answer. Each call may answer 1,024 tokens (the judges' limit).
    let f = planned(&plan, "judge", "faithfulness");
    assert_eq!(
        (f["calls"].as_u64(), f["cached"].as_u64()),
        (Some(6), Some(0))
    );
    assert_eq!(f["completion_tokens_max"], 6 * 1024);
    let m = planned(&plan, "judge", "answer_match");
    assert_eq!(m["calls"], 4);
    assert_eq!(m["cost_usd_max"], Value::Null, "no price, no cost");
    assert!(plan.get("shards").is_none(), "{plan}");

    // The prompt tokens are those of the prompts a real run sends, counted with cl100k_base.
    let plan = dry_run(
        &s,
        &["--judges", "faithfulness", "--price-per-1k-tokens", "0.5"],
    );
    let f = planned(&plan, "judge", "faithfulness").clone();
    assert_eq!(f["calls"], 3);
    let out = s.score(&["--judges", "faithfulness", "--no-record"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sent: usize = s
        .script
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|p| {
            tiktoken_rs::cl100k_base_singleton()
                .encode_ordinary(p)
                .len()
        })
        .sum();
    assert_eq!(f["prompt_tokens"], sent);
    let cost = (sent as f64 + 3.0 * 1024.0) * 0.5 / 1000.0;
    assert!(
        (f["cost_usd_max"].as_f64().unwrap() - cost).abs() < 1e-12,
        "{f}"
    );

    // Two shards: queries 0 and 2 (q1, q3) in the first, q2 in the second.
    let seen = s.chat_requests();
    let plan = dry_run(&s, &[&judges[..], &["--shards", "2"]].concat());
    let shards = plan["shards"].as_array().unwrap();
    let calls = |shard: &Value, name: &str| {
        shard["calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["calls"].as_u64().unwrap())
    };
    assert_eq!(shards.len(), 2);
    assert_eq!(
        (shards[0]["queries"].as_u64(), shards[1]["queries"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(calls(&shards[0], "faithfulness"), Some(2));
    assert_eq!(calls(&shards[1], "faithfulness"), Some(1));
    // q3 has no reference answer: answer_match asks nothing of it.
    assert_eq!(calls(&shards[0], "answer_match"), Some(1));
    assert_eq!(calls(&shards[1], "answer_match"), Some(1));
    let tokens = |v: &Value| v["prompt_tokens"].as_u64().unwrap();
    assert_eq!(
        tokens(planned(&plan, "judge", "faithfulness")),
        shards
            .iter()
            .flat_map(|s| s["calls"].as_array().unwrap())
            .filter(|c| c["name"] == "faithfulness")
            .map(tokens)
            .sum::<u64>()
    );
    assert_eq!(s.chat_requests(), seen, "a dry run sends nothing");
}

#[test]
fn a_dry_run_counts_what_the_cache_holds_apart_and_the_embeddings() {
    let s = Setup::new();
    let out = s.score(&[
        "--judges",
        "answer_match",
        "--cache",
        "rw:path=c.sqlite",
        "--no-record",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let seen = s.chat_requests();
    assert_eq!(seen, 2);
    let plan = dry_run(
        &s,
        &[
            "--judges",
            "faithfulness,answer_match",
            "--cache",
            "rw:path=c.sqlite",
        ],
    );
    let m = planned(&plan, "judge", "answer_match");
    assert_eq!(
        (m["calls"].as_u64(), m["cached"].as_u64()),
        (Some(0), Some(2)),
        "{m}"
    );
    assert_eq!(m["prompt_tokens"], 0, "a cached call costs nothing");
    assert_eq!(planned(&plan, "judge", "faithfulness")["calls"], 3);
    // answer_relevancy: per answer one judge call and two embedding calls (the 3 generated
    // questions, the question); answer_similarity embeds the 2 answers with a reference and
    // their 3 references in one batch.
    let plan = dry_run(
        &s,
        &["--judges", "answer_relevancy", "--embedder", "hashing"],
    );
    assert_eq!(planned(&plan, "judge", "answer_relevancy")["calls"], 3);
    assert_eq!(planned(&plan, "embedding", "answer_relevancy")["calls"], 6);
    let similarity = planned(&plan, "embedding", "answer_similarity");
    assert_eq!(similarity["calls"], 1);
    let texts = [
        "the cat sat",
        "The cat sat on the mat.",
        "Paris, the capital city!",
        "Paris",
        "the capital, Paris",
    ];
    let bpe = tiktoken_rs::cl100k_base_singleton();
    assert_eq!(
        similarity["prompt_tokens"],
        texts
            .iter()
            .map(|t| bpe.encode_ordinary(t).len())
            .sum::<usize>()
    );
    // The text form says the same.
    let out = s.score(&[
        "--dry-run",
        "--judges",
        "answer_match",
        "--cache",
        "rw:path=c.sqlite",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("dry run: 3 queries, nothing called"),
        "{}",
        out.stdout
    );
    // The report ends its last line, and only once.
    assert!(
        out.stdout.ends_with('\n') && !out.stdout.ends_with("\n\n"),
        "{:?}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("judge answer_match: 0 calls, 2 cached, 0 prompt tokens"),
        "{}",
        out.stdout
    );
    assert_eq!(s.chat_requests(), seen, "a dry run sends nothing");
}

#[test]
fn eval_rag_dry_run_counts_one_call_per_query_to_the_system_and_sends_nothing() {
    let s = Setup::new();
    std::fs::create_dir(s.dir.path().join("docs")).unwrap();
    std::fs::write(s.dir.path().join("docs/a.md"), "x".repeat(60)).unwrap();
    let spec = format!("http:url={}", s.url);
    let args = [
        "eval",
        "--rag",
        &spec,
        "--dataset",
        "d.jsonl",
        "--corpus",
        "docs",
        "--judge-model",
        "judge-m",
        "--judges",
        "answer_match",
        "--dry-run",
        "--json",
    ];
    let out = run_in(s.dir.path(), &s.store, &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plan: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let rag = plan["total"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "rag");
    assert_eq!(rag.map(|c| c["calls"].clone()), Some(json!(3)), "{plan}");
    assert_eq!(planned(&plan, "judge", "answer_match")["calls"], 2);
    assert_eq!(s.chat_requests(), 0, "a dry run sends nothing");
}

/// `eval` over `docs` and `d.jsonl` with one chunker.
const EVAL: [&str; 7] = [
    "eval",
    "--corpus",
    "docs",
    "--dataset",
    "d.jsonl",
    "--chunker",
    "recursive:size=20,overlap=0",
];

/// `eval --dry-run`'s plan (JSON) in `s`'s folder with `extra` after the corpus and dataset
/// (`docs/a.md`: the queries' words, then 30 characters).
fn eval_dry_run(s: &Setup, extra: &[&str]) -> Value {
    let docs = s.dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("a.md"),
        "first second third 0123456789abcdefghijABCDEFGHIJ",
    )
    .unwrap();
    let mut args = EVAL.to_vec();
    args.extend_from_slice(extra);
    let out = run_in(s.dir.path(), &s.store, &args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

#[test]
fn eval_dry_run_counts_the_generator_and_its_judges_over_bm25_and_sends_nothing() {
    let s = Setup::new();
    let answers = [
        "--answers",
        "--model",
        "gen-m",
        "--base-url",
        &s.url,
        "--judge-model",
        "judge-m",
        "--judges",
        "faithfulness,answer_match",
    ];
    let priced = [
        "--dry-run",
        "--json",
        "--price",
        "gen-m=0.001/0.002",
        "--price-per-1k-tokens",
        "0.5",
    ];
    let plan = eval_dry_run(&s, &[&answers[..], &priced[..]].concat());
    assert_eq!(s.chat_requests(), 0, "a dry run sends nothing");
    assert_eq!(plan["chunker"], "recursive:size=20,overlap=0");
    assert!(plan.get("note").is_none(), "bm25 calls nothing: {plan}");
    assert_eq!(
        plan["prices"]["gen-m"],
        json!({"prompt": 0.001, "completion": 0.002})
    );
    // One generator call per query, each of at most 512 completion tokens (the generator's
    // limit), priced at its own model's price.
    let g = planned(&plan, "generator", "answer");
    assert_eq!(
        (g["calls"].as_u64(), g["cached"].as_u64()),
        (Some(3), Some(0))
    );
    assert_eq!(g["model"], "gen-m");
    assert_eq!(g["completion_tokens_max"], 3 * 512);
    assert_eq!(g["repairs_max"], Value::Null);
    let prompt = g["prompt_tokens"].as_u64().unwrap();
    let cost = (prompt as f64 * 0.001 + 1536.0 * 0.002) / 1000.0;
    assert!(
        (g["cost_usd_max"].as_f64().unwrap() - cost).abs() < 1e-12,
        "{g}"
    );
    // Faithfulness judges the 3 answers, answer_match the 2 with a reference; each call may
    // be repaired twice (the judges' limit); judge-m has no price of its own: 0.5 for all.
    let f = planned(&plan, "judge", "faithfulness");
    assert_eq!(
        (f["calls"].as_u64(), f["repairs_max"].as_u64()),
        (Some(3), Some(6))
    );
    assert_eq!(f["model"], "judge-m");
    let m = planned(&plan, "judge", "answer_match");
    assert_eq!(
        (m["calls"].as_u64(), m["repairs_max"].as_u64()),
        (Some(2), Some(4))
    );
    let flat = (m["prompt_tokens"].as_u64().unwrap() as f64 + 2048.0) * 0.5 / 1000.0;
    assert!(
        (m["cost_usd_max"].as_f64().unwrap() - flat).abs() < 1e-12,
        "{m}"
    );

    // The generator's prompt tokens are those of the prompts a real run sends: the chunks
    // bm25 retrieves included. Generation ends before judging starts: the first 3 prompts.
    ok(
        s.dir.path(),
        &s.store,
        &[
            &EVAL[..],
            &["--cache", "rw:path=c.sqlite", "--no-record"],
            &answers[..],
        ]
        .concat(),
    );
    let sent: Vec<String> = s.script.seen.lock().unwrap().clone();
    assert_eq!(sent.len(), 3 + 3 + 2, "{sent:?}");
    let bpe = tiktoken_rs::cl100k_base_singleton();
    let generated: usize = sent[..3].iter().map(|p| bpe.encode_ordinary(p).len()).sum();
    assert_eq!(prompt, generated as u64);

    // Everything cached: nothing to send, the judges judging the cached answers.
    let plan = eval_dry_run(
        &s,
        &[
            &answers[..],
            &["--dry-run", "--json", "--cache", "rw:path=c.sqlite"],
        ]
        .concat(),
    );
    for (kind, name, cached) in [
        ("generator", "answer", 3),
        ("judge", "faithfulness", 3),
        ("judge", "answer_match", 2),
    ] {
        let c = planned(&plan, kind, name);
        assert_eq!(
            (c["calls"].as_u64(), c["cached"].as_u64()),
            (Some(0), Some(cached)),
            "{c}"
        );
        assert_eq!(c["prompt_tokens"], 0, "{c}");
    }
    assert_eq!(s.chat_requests(), sent.len(), "a dry run sends nothing");
}

#[test]
fn eval_dry_run_looks_a_remote_embedder_s_texts_up_in_the_cache_and_sends_nothing() {
    use support::hostile::{HostileServer, Hostility};
    let s = Setup::new();
    let embeddings = HostileServer::start(Hostility::Embedding("0.5"));
    let retriever = format!(
        "dense:embedder=openai:model=m,base_url={}",
        embeddings.url("/v1")
    );
    let dense = ["--retriever", &retriever];
    let plan = eval_dry_run(
        &s,
        &[&dense[..], &["--dry-run", "--json", "--shards", "2"]].concat(),
    );
    assert_eq!(embeddings.posts(), 0, "a dry run sends nothing");
    // The corpus's 3 chunks in one batch (of 64), each machine indexing it; the 3 questions,
    // one token each, in one batch.
    let bpe = tiktoken_rs::cl100k_base_singleton();
    let chunks: usize = ["first second third", "0123456789abcdefghi", "jABCDEFGHIJ"]
        .iter()
        .map(|t| bpe.encode_ordinary(t).len())
        .sum();
    let corpus = planned(&plan, "embedding", "corpus");
    assert_eq!(
        (
            corpus["calls"].as_u64(),
            corpus["cached"].as_u64(),
            corpus["prompt_tokens"].as_u64()
        ),
        (Some(2), Some(0), Some(2 * chunks as u64)),
        "{corpus}"
    );
    assert_eq!(corpus["model"], "m");
    let queries = planned(&plan, "embedding", "queries");
    assert_eq!(
        (queries["calls"].as_u64(), queries["prompt_tokens"].as_u64()),
        (Some(2), Some(3))
    );
    let shards = plan["shards"].as_array().unwrap();
    let of = |shard: &Value, name: &str| {
        shard["calls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["prompt_tokens"].as_u64().unwrap())
    };
    assert_eq!(of(&shards[0], "corpus"), Some(chunks as u64));
    // q1 and q3 ("first", "third") in shard 1, q2 in shard 2.
    assert_eq!(of(&shards[0], "queries"), Some(2));
    assert_eq!(of(&shards[1], "queries"), Some(1));
    assert!(
        plan["note"]
            .as_str()
            .unwrap()
            .contains("(6 texts the cache lacks)"),
        "{plan}"
    );

    // A run records every embedding; then the dry run finds them all and runs the dense
    // retriever itself (no stand-in), the generator's calls counted over its chunks.
    ok(
        s.dir.path(),
        &s.store,
        &[
            &EVAL[..],
            &dense[..],
            &["--cache", "rw:path=c.sqlite", "--no-record"],
        ]
        .concat(),
    );
    let posted = embeddings.posts();
    assert!(posted > 0);
    let cached = [
        "--cache",
        "rw:path=c.sqlite",
        "--answers",
        "--model",
        "gen-m",
        "--base-url",
        &s.url,
        "--dry-run",
    ];
    let plan = eval_dry_run(&s, &[&dense[..], &cached[..], &["--json"]].concat());
    assert!(plan.get("note").is_none(), "{plan}");
    for name in ["corpus", "queries"] {
        let c = planned(&plan, "embedding", name);
        assert_eq!(
            (c["calls"].as_u64(), c["cached"].as_u64()),
            (Some(0), Some(1)),
            "{c}"
        );
    }
    assert_eq!(planned(&plan, "generator", "answer")["calls"], 3);
    // The text form says the same.
    let out = run_in(
        s.dir.path(),
        &s.store,
        &[&EVAL[..], &dense[..], &cached[..]].concat(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("chunker: recursive:size=20,overlap=0\nembedding corpus: 0 calls, 1 cached, 0 prompt tokens\nembedding queries: 0 calls, 1 cached, 0 prompt tokens\ngenerator answer: 3 calls, 0 cached, "),
        "{}",
        out.stdout
    );
    // A replay cache and other chunks: the first chunk is the one recorded, the two others
    // are not (a run would fail on them), looked up one by one.
    let out = ok(
        s.dir.path(),
        &s.store,
        &[
            &EVAL[..6],
            &["recursive:size=30,overlap=0"],
            &dense[..],
            &["--cache", "replay:path=c.sqlite", "--dry-run", "--json"],
        ]
        .concat(),
    );
    let plan: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    let corpus = planned(&plan, "embedding", "corpus");
    let lacking =
        bpe.encode_ordinary("0123456789abcdefghijABCDEFGHI").len() + bpe.encode_ordinary("J").len();
    assert_eq!(
        (corpus["calls"].as_u64(), corpus["prompt_tokens"].as_u64()),
        (Some(1), Some(lacking as u64)),
        "{corpus}"
    );
    assert_eq!(planned(&plan, "embedding", "queries")["cached"], 1);
    assert!(
        plan["note"]
            .as_str()
            .unwrap()
            .contains("(2 texts the cache lacks)"),
        "{plan}"
    );
    assert_eq!(embeddings.posts(), posted, "a dry run sends nothing");
    assert_eq!(s.chat_requests(), 0, "a dry run sends nothing");
}

#[test]
fn dry_run_shards_by_hash_as_nextest_partitions_the_case_s_tests() {
    let s = Setup::new();
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/nextest_partitions/answers.json"
        ))
        .unwrap(),
    )
    .unwrap();
    for n in 2..=4usize {
        let shards = format!("hash:{n}");
        let plan = dry_run(
            &s,
            &[
                "--judges",
                "faithfulness",
                "--shards",
                &shards,
                "--case",
                "answers",
            ],
        );
        let got = plan["shards"].as_array().unwrap();
        assert_eq!(got.len(), n);
        for (i, shard) in got.iter().enumerate() {
            let tests = fixture["partitions"][format!("hash:{}/{n}", i + 1)]
                .as_array()
                .unwrap()
                .len();
            assert_eq!(shard["queries"], tests, "hash:{}/{n}: {plan}", i + 1);
            // Each of the 3 answers is judged once, in its test's shard.
            let judged = shard["calls"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["name"] == "faithfulness")
                .map_or(0, |c| c["calls"].as_u64().unwrap());
            assert_eq!(judged, tests as u64, "{shard}");
        }
    }
    // The text form names the repairs' bound.
    let out = s.score(&["--dry-run", "--judges", "faithfulness"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("judge faithfulness: 3 calls, 0 cached, "));
    assert!(
        line.is_some_and(|l| l.ends_with(", at most 3072 completion tokens, up to 6 repairs")),
        "{}",
        out.stdout
    );
    for (args, error) in [
        (
            &["--shards", "hash:2"][..],
            "--shards hash:N splits the tests as nextest does, by name: give --case CASE",
        ),
        (
            &["--shards", "2", "--case", "answers"][..],
            "--case answers names the tests that --shards hash:N splits",
        ),
        (&["--shards", "hash:0"][..], "expected N or hash:N"),
        (
            &["--price-per-1k-tokens=-1"][..],
            "--price-per-1k-tokens must be a number of dollars, 0 or more; got `-1`",
        ),
        (
            &["--price", "judge-m=0.1"][..],
            "--price `judge-m=0.1`: expected MODEL=IN/OUT",
        ),
        (
            &["--price", "judge-m=0.1/-1"][..],
            "--price `judge-m=0.1/-1`: OUT must be a number of dollars, 0 or more; got `-1`",
        ),
    ] {
        let out = s.score(&[&["--dry-run"][..], args].concat());
        assert_ne!(out.code, 0, "{args:?}");
        assert!(out.stderr.contains(error), "{args:?}: {}", out.stderr);
    }
    assert_eq!(s.chat_requests(), 0, "a dry run sends nothing");
}

#[test]
fn a_dry_run_looks_answer_similarity_s_texts_up_in_the_cache() {
    use support::hostile::{HostileServer, Hostility};
    let s = Setup::new();
    let embeddings = HostileServer::start(Hostility::Embedding("0.5"));
    let embedder = format!("openai:model=m,base_url={}", embeddings.url("/v1"));
    let args = [
        "--judges",
        "answer_match",
        "--embedder",
        &embedder,
        "--cache",
        "rw:path=e.sqlite",
    ];
    // Nothing recorded yet: the 5 texts (2 answers with a reference, 3 references) in one call.
    let plan = dry_run(&s, &args);
    let c = planned(&plan, "embedding", "answer_similarity");
    assert_eq!(
        (c["calls"].as_u64(), c["cached"].as_u64()),
        (Some(1), Some(0)),
        "{c}"
    );
    assert_eq!(c["model"], "m");
    assert_eq!(embeddings.posts(), 0, "a dry run sends nothing");
    let out = s.score(&[&args[..], &["--no-record"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let posted = embeddings.posts();
    assert!(posted > 0);
    let plan = dry_run(&s, &args);
    let c = planned(&plan, "embedding", "answer_similarity");
    assert_eq!(
        (
            c["calls"].as_u64(),
            c["cached"].as_u64(),
            c["prompt_tokens"].as_u64()
        ),
        (Some(0), Some(1), Some(0)),
        "{c}"
    );
    assert_eq!(embeddings.posts(), posted, "a dry run sends nothing");
}

#[test]
fn eval_answers_counts_the_generators_retries_and_never_retries_an_overflowing_context() {
    use support::hostile::{HostileServer, Hostility};
    let s = Setup::new();
    let docs = s.dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("a.md"),
        "first second third 0123456789abcdefghijABCDEFGHIJ",
    )
    .unwrap();
    // A generator down for its first request: one retry, counted beside its tokens.
    let server = HostileServer::start(Hostility::Unavailable {
        failures: 1,
        body: completion("the cat sat", (3, 1)),
    });
    let out = s.answer("d.jsonl", &server.url("/v1"), &["--no-record"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains("generator: 1 HTTP retries, 12 tokens"),
        "{}",
        out.stderr
    );
    assert_eq!(server.posts(), 4);

    // llama-server's 500 for a prompt longer than its context, to a request alone with the
    // server: the same on every try, so sent once.
    let server = HostileServer::start(Hostility::Answer {
        status: 500,
        body: r#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#,
    });
    let out = s.answer(
        "d.jsonl",
        &server.url("/v1"),
        &["--no-record", "--concurrency", "1"],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("Context size has been exceeded") && out.stderr.contains("not retried"),
        "{}",
        out.stderr
    );
    assert_eq!(server.posts(), 1);
}
