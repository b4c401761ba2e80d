//! LangSmith: datasets pushed and pulled back losslessly, experiments uploaded exactly once
//! through faults and resumed after a failure, the key kept out of logs, and the official
//! Python SDK reading and writing the same data (when `RAG_EVAL_LANGSMITH_PYTHON` names a
//! Python with the `langsmith` package; `.ci/langsmith.sh` sets it up).

use crate::fake;
use crate::support;

use camino::{Utf8Path, Utf8PathBuf};
use fake::{FakeLangSmith, Fault};
use rag_eval::chunk::ChunkId;
use rag_eval::chunker::PositionAwareChunker;
use rag_eval::dataset::{self, AnyDataset};
use rag_eval::eval::EvaluationResult;
use rag_eval::http::{ApiKey, AuthHeader, HttpConfig};
use rag_eval::langsmith::{self, Experiment, LangSmith};
use rag_eval::metrics::{Metric, MetricInput};
use rag_eval::prelude::*;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");
const KEY: &str = "lsv2_pt_test-secret-4f1d9c";

fn corpus_dir() -> String {
    format!("{DATA}/corpus")
}

fn client(fake: &FakeLangSmith) -> LangSmith {
    LangSmith::new(
        HttpConfig::new(fake.url())
            .with_api_key(ApiKey::new(KEY))
            .with_auth_header(AuthHeader::Header("x-api-key".into()))
            .with_backoff(Duration::from_millis(1), Duration::from_millis(5))
            .with_max_retries(4)
            .with_concurrency(4),
    )
    .unwrap()
}

fn rag_eval(fake: &FakeLangSmith, cwd: &Utf8Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args)
        .current_dir(cwd)
        .env("LANGSMITH_ENDPOINT", fake.url())
        .env("LANGSMITH_API_KEY", KEY)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn rows(text: &str) -> Vec<Map<String, Value>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn tempdir() -> (tempfile::TempDir, Utf8PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = Utf8PathBuf::from_path_buf(dir.path().to_owned()).unwrap();
    (dir, path)
}

/// The bundled token-level questions, with a reference answer, a split and extra metadata on
/// some rows: fields rag-eval does not read must survive too.
fn token_rows() -> String {
    let text = std::fs::read_to_string(format!("{DATA}/questions.jsonl")).unwrap();
    let mut out = String::new();
    for (i, mut row) in rows(&text).into_iter().enumerate() {
        if i % 3 == 0 {
            row["outputs"]["reference_answer"] = json!(format!("answer {i} — ünïcode"));
            row.insert("split".into(), json!("test"));
            row["metadata"]["generation_model"] = json!({"name": "m", "temperature": 0.5});
        }
        out.push_str(&serde_json::to_string(&row).unwrap());
        out.push('\n');
    }
    out
}

/// A chunk-level dataset over the bundled corpus: chunk ids of a recursive chunker, recorded
/// with the chunker's spec.
fn chunk_rows() -> String {
    let corpus = Corpus::from_folder(corpus_dir(), None).unwrap();
    let chunker = RecursiveCharacterChunker::new(400, 0);
    let chunks = chunker.chunk_corpus(&corpus);
    let mut out = String::new();
    for (i, pair) in chunks.chunks(2).take(12).enumerate() {
        let ids: Vec<String> = pair
            .iter()
            .map(|c| ChunkId::from_content(&c.content).to_string())
            .collect();
        let row = json!({
            "id": format!("c{i:03}"),
            "inputs": {"query": format!("question {i} about {}", pair[0].span.doc)},
            "outputs": {"relevant_chunk_ids": ids},
            "metadata": {"chunker": PositionAwareChunker::name(&chunker), "difficulty": if i % 2 == 0 {"easy"} else {"hard"}},
        });
        out.push_str(&serde_json::to_string(&row).unwrap());
        out.push('\n');
    }
    out
}

fn assert_same_dataset(a: &Utf8Path, b: &Utf8Path) {
    let (ra, rb) = (
        rows(&std::fs::read_to_string(a).unwrap()),
        rows(&std::fs::read_to_string(b).unwrap()),
    );
    assert_eq!(ra, rb, "the rows differ");
    match (dataset::load(a).unwrap(), dataset::load(b).unwrap()) {
        (AnyDataset::Token(x), AnyDataset::Token(y)) => assert_eq!(x.examples(), y.examples()),
        (AnyDataset::Chunk(x), AnyDataset::Chunk(y)) => assert_eq!(x.examples(), y.examples()),
        _ => panic!("the levels differ"),
    }
}

#[test]
fn push_and_pull_round_trip_both_levels_through_the_cli() {
    let fake = FakeLangSmith::start();
    fake.require_key(KEY);
    let (_dir, dir) = tempdir();
    for (level, text) in [("token", token_rows()), ("chunk", chunk_rows())] {
        let file = dir.join(format!("{level}.jsonl"));
        std::fs::write(&file, &text).unwrap();
        let name = format!("handbook-{level}");
        let (code, _, err) = rag_eval(
            &fake,
            &dir,
            &["dataset", "push", file.as_str(), "--name", &name],
        );
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains(&format!("created LangSmith dataset `{name}`")),
            "{err}"
        );
        let n = rows(&text).len();
        assert!(err.contains(&format!("{n} examples created")), "{err}");

        let back = dir.join(format!("{level}.pulled.jsonl"));
        let (code, out, err) = rag_eval(
            &fake,
            &dir,
            &[
                "dataset",
                "pull",
                &name,
                "-o",
                back.as_str(),
                "--corpus",
                &corpus_dir(),
            ],
        );
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(&format!("{n} {level}-level rows")), "{out}");
        assert!(out.contains("valid against"), "{out}");
        assert_same_dataset(&file, &back);
    }
    // A pull never writes into the corpus it is checked against.
    let inside = format!("{}/pulled.jsonl", corpus_dir());
    let (code, _, err) = rag_eval(
        &fake,
        &dir,
        &[
            "dataset",
            "pull",
            "handbook-token",
            "-o",
            &inside,
            "--corpus",
            &corpus_dir(),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("lies inside the corpus"), "{err}");
    assert!(!Utf8Path::new(&inside).exists());
    let s = fake.state();
    assert!(
        s.keys.iter().all(|k| k == KEY),
        "every request carries the key"
    );
    assert_eq!(s.datasets.len(), 2);
}

#[test]
fn pushing_again_updates_changed_examples_and_creates_missing_ones() {
    let fake = FakeLangSmith::start();
    let client = client(&fake);
    let text = token_rows();
    let d = dataset::parse(&text, "a.jsonl").unwrap();
    let first = pollster::block_on(langsmith::push(&client, "h", &d, Some("desc"))).unwrap();
    assert!(first.created);
    assert_eq!(first.examples_created, 40);

    let again = pollster::block_on(langsmith::push(&client, "h", &d, None)).unwrap();
    assert_eq!(
        (
            again.created,
            again.examples_created,
            again.examples_updated,
            again.examples_unchanged
        ),
        (false, 0, 0, 40)
    );

    // One query edited, one row added, one removed.
    let mut edited = rows(&text);
    edited[4]["inputs"]["query"] = json!("an edited question?");
    let removed = edited.remove(0);
    let mut extra = edited[1].clone();
    extra["id"] = json!("q9999");
    edited.push(extra);
    let edited_text: String = edited
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    let d2 = dataset::parse(&edited_text, "b.jsonl").unwrap();
    let third = pollster::block_on(langsmith::push(&client, "h", &d2, None)).unwrap();
    assert_eq!(third.examples_created, 1);
    assert_eq!(
        third.examples_updated, 39,
        "every position moved by one, and one query changed"
    );
    assert_eq!(
        third.remote_only,
        vec![removed["id"].as_str().unwrap().to_owned()]
    );
    assert_eq!(fake.count("PATCH", "/examples/"), 39);

    // A push of the other level to the same name is refused.
    let chunk = dataset::parse(&chunk_rows(), "c.jsonl").unwrap();
    let err = pollster::block_on(langsmith::push(&client, "h", &chunk, None)).unwrap_err();
    assert!(err.to_string().contains("token-level examples"), "{err}");
}

#[test]
fn a_pull_pages_through_more_examples_than_one_page_in_file_order() {
    let fake = FakeLangSmith::start();
    let client = client(&fake);
    let mut text = String::new();
    for i in 0..250 {
        text.push_str(&format!(
            "{{\"id\":\"r{:03}\",\"inputs\":{{\"query\":\"q{i}\"}},\"outputs\":{{\"relevant_spans\":[]}}}}\n",
            249 - i
        ));
    }
    let d = dataset::parse(&text, "big.jsonl").unwrap();
    pollster::block_on(langsmith::push(&client, "big", &d, None)).unwrap();
    assert_eq!(fake.count("POST", "/examples/bulk"), 3, "batches of 100");
    let pulled = pollster::block_on(langsmith::pull(&client, "big")).unwrap();
    assert_eq!(pulled.rows, 250);
    assert_eq!(rows(&pulled.jsonl), rows(&text));
    assert!(fake.count("GET", "/examples") >= 3, "paged by 100");
    let err = pollster::block_on(langsmith::pull(&client, "absent")).unwrap_err();
    assert!(
        err.to_string()
            .contains("no LangSmith dataset named `absent`"),
        "{err}"
    );
}

#[test]
fn the_api_key_never_appears_in_a_verbose_log() {
    let fake = FakeLangSmith::start();
    fake.require_key(KEY);
    fake.inject("POST", "/examples/bulk", 0, 1, Fault::RateLimit(0.05));
    fake.inject("GET", "/datasets", 0, 1, Fault::Status(503));
    let (_dir, dir) = tempdir();
    let file = dir.join("d.jsonl");
    std::fs::write(&file, token_rows()).unwrap();
    let (code, _, err) = rag_eval(
        &fake,
        &dir,
        &["-vv", "dataset", "push", file.as_str(), "--name", "x"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("retrying"), "the retries are logged: {err}");
    assert!(err.contains("langsmith"), "debug detail is logged: {err}");
    assert!(!err.contains(KEY) && !err.contains("test-secret"), "{err}");
    assert_eq!(fake.state().faults_applied, 2);

    // Nor in an error that echoes what the server was sent.
    let wrong = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args([
            "-vv",
            "dataset",
            "pull",
            "x",
            "-o",
            dir.join("p.jsonl").as_str(),
            "--corpus",
            &corpus_dir(),
        ])
        .env("LANGSMITH_ENDPOINT", fake.url())
        .env("LANGSMITH_API_KEY", "lsv2_wrong-key-77")
        .output()
        .unwrap();
    let err = String::from_utf8(wrong.stderr).unwrap();
    assert_eq!(wrong.status.code(), Some(1), "{err}");
    assert!(err.contains("401"), "{err}");
    assert!(!err.contains("wrong-key-77"), "{err}");
}

/// 1 when the first retrieved chunk overlaps the truth: a metric of the user's own.
struct FirstHit;

impl Metric<TokenLevel> for FirstHit {
    fn name(&self) -> &str {
        "first_hit"
    }
    fn at_k(&self) -> bool {
        false
    }
    fn compute(&self, input: &MetricInput<'_, TokenLevel>) -> f64 {
        let Some(first) = input.retrieved.first() else {
            return 0.0;
        };
        let hit = input
            .truth
            .iter()
            .any(|t| t.doc == first.doc && t.start < first.end && first.start < t.end);
        f64::from(u8::from(hit))
    }
}

fn evaluation() -> EvaluationResult {
    evaluation_at(5)
}

fn evaluation_at(k: usize) -> EvaluationResult {
    let corpus = Arc::new(Corpus::from_folder(corpus_dir(), None).unwrap());
    let AnyDataset::Token(d) = dataset::load(format!("{DATA}/questions.jsonl")).unwrap() else {
        panic!("token level")
    };
    let eval = TokenLevelEvaluation::new(corpus, d).unwrap();
    let mut metrics = token_level_metrics(SpanMode::Standard, None);
    metrics.push(Box::new(FirstHit));
    eval.run_blocking(
        &Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0)),
        k,
        &metrics,
    )
    .unwrap()
}

/// Every run and feedback the result implies is stored once, and each run and feedback id
/// arrived as often as `deliveries` allows.
fn assert_stored_once(fake: &FakeLangSmith, session: &str, result: &EvaluationResult) {
    let s = fake.state();
    let runs = s.runs_of(session);
    assert_eq!(runs.len(), result.scores.queries);
    let mut seen = std::collections::HashSet::new();
    for r in &runs {
        assert!(seen.insert(r["id"].as_str().unwrap()), "run stored twice");
    }
    let metrics = result.scores.metrics.0.len();
    let expected = result.scores.queries * metrics + metrics;
    let ours: Vec<&Value> = s
        .feedback
        .iter()
        .filter(|f| f["session_id"] == session)
        .collect();
    assert_eq!(
        ours.len(),
        expected,
        "one feedback per query and metric, and one per mean"
    );
    let mut ids = std::collections::HashSet::new();
    for f in &ours {
        assert!(
            ids.insert(f["id"].as_str().unwrap()),
            "feedback stored twice"
        );
    }
    // Per query: the feedback equals the local figure, and points at the query's run.
    for ((q, run), chunks) in result
        .scores
        .per_query
        .iter()
        .zip(&runs)
        .zip(&result.retrieved)
    {
        assert_eq!(run["extra"]["metadata"]["query_id"], q.id.as_str());
        assert_eq!(run["inputs"]["query"], q.query.as_deref().unwrap());
        let retrieved = run["outputs"]["retrieved"].as_array().unwrap();
        assert_eq!(retrieved.len(), chunks.len());
        for (r, c) in retrieved.iter().zip(chunks) {
            assert_eq!(r["id"], c.chunk.id.as_str());
            assert_eq!(r["doc_id"], c.chunk.span.doc.as_str());
            assert_eq!(
                (r["start"].as_u64(), r["end"].as_u64()),
                (
                    Some(c.chunk.span.start as u64),
                    Some(c.chunk.span.end as u64)
                )
            );
            assert_eq!(r["text"], c.chunk.content.as_str());
        }
        assert!(run["dotted_order"]
            .as_str()
            .unwrap()
            .ends_with(run["id"].as_str().unwrap()));
        assert_eq!(run["trace_id"], run["id"]);
        for (key, value) in &q.metrics.0 {
            let f = ours
                .iter()
                .find(|f| f["run_id"] == run["id"] && f["key"] == key.as_str())
                .unwrap_or_else(|| panic!("no feedback {key} for {}", q.id));
            // The fake reads JSON numbers to within an ulp (serde_json without float_roundtrip).
            assert!(
                (f["score"].as_f64().unwrap() - value).abs() < 1e-15,
                "{key}"
            );
        }
    }
    for (key, mean) in &result.scores.metrics.0 {
        let f = ours
            .iter()
            .find(|f| f["run_id"].is_null() && f["key"] == key.as_str())
            .unwrap();
        assert!((f["score"].as_f64().unwrap() - mean).abs() < 1e-12);
    }
}

#[test]
fn an_experiment_arrives_exactly_once_through_rate_limits_errors_and_dropped_connections() {
    let fake = FakeLangSmith::start();
    let client = client(&fake);
    let d = dataset::load(format!("{DATA}/questions.jsonl")).unwrap();
    pollster::block_on(langsmith::push(&client, "handbook", &d, None)).unwrap();
    let result = evaluation();
    assert!(result.scores.metrics.get("first_hit").is_some());

    fake.inject("POST", "/sessions", 0, 1, Fault::DropAfterApplying);
    fake.inject("POST", "/runs/batch", 0, 1, Fault::RateLimit(0.02));
    fake.inject("POST", "/runs/batch", 1, 1, Fault::DropAfterApplying);
    fake.inject("POST", "/runs/batch", 2, 1, Fault::Status(503));
    fake.inject("POST", "/runs/batch", 3, 1, Fault::DropBeforeApplying);
    fake.inject("POST", "/feedback", 7, 3, Fault::DropAfterApplying);
    fake.inject("POST", "/feedback", 30, 2, Fault::Status(502));
    fake.inject("POST", "/feedback", 50, 1, Fault::RateLimit(0.01));
    let (_dir, dir) = tempdir();
    let report = pollster::block_on(
        Experiment::new("bm25-400")
            .dataset("handbook")
            .answers(HashMap::from([("q0003".to_owned(), "24 hours".to_owned())]))
            .batch_size(7)
            .journal(dir.join("journal.jsonl"))
            .upload(&client, &result),
    )
    .unwrap();
    assert_eq!(fake.state().faults_applied, 11);
    assert_eq!(report.runs_sent, 40);
    let metrics = result.scores.metrics.0.len();
    assert_eq!(report.feedback_sent, 40 * metrics + metrics);
    assert_stored_once(&fake, &report.session_id, &result);
    let s = fake.state();
    // The runs link to the examples of the pushed dataset, and the experiment to the dataset.
    let session = s
        .sessions
        .iter()
        .find(|x| x["id"] == report.session_id.as_str())
        .unwrap();
    assert_eq!(session["name"], "bm25-400");
    assert_eq!(session["reference_dataset_id"], s.datasets[0]["id"]);
    assert!(session["end_time"].is_string());
    assert_eq!(session["extra"]["metadata"]["k"], 5);
    for r in s.runs_of(&report.session_id) {
        let e = s
            .examples
            .iter()
            .find(|e| e["id"] == r["reference_example_id"])
            .unwrap();
        assert_eq!(
            e["metadata"]["rag_eval"]["id"],
            r["extra"]["metadata"]["query_id"]
        );
    }
    for r in s.runs_of(&report.session_id) {
        let answer = &r["outputs"]["answer"];
        match r["extra"]["metadata"]["query_id"].as_str() {
            Some("q0003") => assert_eq!(answer, "24 hours"),
            _ => assert!(answer.is_null(), "no answer, no `answer` output"),
        }
    }
    // Dropped answers were sent again, and the server recognised them by id.
    let max = s.deliveries.values().copied().max().unwrap();
    assert_eq!(max, 2);
    assert!(s
        .feedback
        .iter()
        .any(|f| f["key"] == "first_hit" && f["run_id"].is_string()));
    assert!(s.feedback.iter().any(|f| f["key"] == "span_recall@5"));
    drop(s);

    // And it comes back as a run result with the same figures.
    let back = pollster::block_on(langsmith::fetch_experiment(&client, "bm25-400")).unwrap();
    let local = &result.scores;
    assert_eq!(
        (back.level, back.k, back.mode),
        (local.level, local.k, local.mode)
    );
    assert_eq!(back.dataset_hash, local.dataset_hash);
    assert_eq!(back.queries, local.queries);
    for (b, l) in back.per_query.iter().zip(&local.per_query) {
        assert_eq!(
            (&b.id, &b.query, &b.difficulty),
            (&l.id, &l.query, &l.difficulty)
        );
        assert_eq!(
            b.metrics.names().collect::<Vec<_>>(),
            l.metrics.names().collect::<Vec<_>>()
        );
        for (x, y) in b.metrics.values().zip(l.metrics.values()) {
            assert!((x - y).abs() < 1e-15, "{} {x} {y}", b.id);
        }
    }
    for (x, y) in back.metrics.values().zip(local.metrics.values()) {
        assert!((x - y).abs() < 1e-12);
    }
    assert_eq!(
        back.by_difficulty
            .as_ref()
            .map(|d| d.keys().cloned().collect::<Vec<_>>()),
        local
            .by_difficulty
            .as_ref()
            .map(|d| d.keys().cloned().collect::<Vec<_>>())
    );
    let err = pollster::block_on(langsmith::fetch_experiment(&client, "absent")).unwrap_err();
    assert!(
        err.to_string()
            .contains("no LangSmith experiment named `absent`"),
        "{err}"
    );
}

#[test]
fn a_failed_upload_continues_without_sending_anything_twice() {
    let fake = FakeLangSmith::start();
    let client = LangSmith::new(
        HttpConfig::new(fake.url())
            .with_backoff(Duration::from_millis(1), Duration::from_millis(2))
            .with_max_retries(1),
    )
    .unwrap();
    let result = evaluation();
    let (_dir, dir) = tempdir();
    let journal = dir.join("j.jsonl");
    // The service goes down after two batches of runs.
    fake.inject("POST", "/runs/batch", 2, usize::MAX, Fault::Status(500));
    let upload = Experiment::new("resumed").batch_size(10).journal(&journal);
    let err = pollster::block_on(upload.upload(&client, &result)).unwrap_err();
    assert!(err.to_string().contains("500"), "{err}");
    assert_eq!(fake.state().runs.len(), 20);

    // Back up; later the feedback endpoint fails for a while.
    fake.heal();
    fake.inject("POST", "/feedback", 100, usize::MAX, Fault::Status(503));
    let err = pollster::block_on(upload.upload(&client, &result)).unwrap_err();
    assert!(err.to_string().contains("503"), "{err}");
    fake.heal();
    let report = pollster::block_on(upload.upload(&client, &result)).unwrap();
    assert_eq!(report.runs_sent, 0, "all runs were acknowledged before");
    assert!(report.already_acknowledged >= 40 + 100);
    assert_stored_once(&fake, &report.session_id, &result);
    let s = fake.state();
    assert!(
        s.deliveries.values().all(|&n| n == 1),
        "nothing acknowledged was sent again"
    );
    assert_eq!(s.sessions.len(), 1);
    drop(s);

    // Once complete, running it again sends nothing.
    let requests = fake.state().requests.len();
    let again = pollster::block_on(upload.upload(&client, &result)).unwrap();
    assert_eq!((again.runs_sent, again.feedback_sent), (0, 0));
    assert_eq!(fake.state().requests.len(), requests);

    // Another result under the same name and journal is refused, not mixed in.
    let err = pollster::block_on(upload.upload(&client, &evaluation_at(3))).unwrap_err();
    assert!(err.to_string().contains("other figures"), "{err}");
    assert_eq!(fake.state().requests.len(), requests);
}

#[test]
fn without_a_key_the_hosted_api_is_refused_before_any_evaluation() {
    let (_dir, dir) = tempdir();
    let questions = format!("{DATA}/questions.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["eval", "--corpus", "/nonexistent", "--dataset", &questions])
        .args([
            "--chunker",
            "recursive:size=400",
            "--langsmith-experiment",
            "x",
        ])
        .current_dir(&dir)
        .env_remove("LANGSMITH_API_KEY")
        .env_remove("LANGSMITH_ENDPOINT")
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("LANGSMITH_API_KEY is not set"), "{err}");
    assert!(
        !err.contains("nonexistent"),
        "checked before the corpus is read: {err}"
    );
}

#[test]
fn eval_prints_its_result_when_the_upload_fails_and_the_same_command_continues() {
    let fake = FakeLangSmith::start();
    let (_dir, dir) = tempdir();
    let questions = format!("{DATA}/questions.jsonl");
    let corpus = corpus_dir();
    let args = [
        "eval",
        "--corpus",
        &corpus,
        "--dataset",
        &questions,
        "--chunker",
        "recursive:size=400",
        "--json",
        "--langsmith-experiment",
        "cli-run",
        "--langsmith-dataset",
        "handbook",
    ];
    // The dataset is not in LangSmith yet: nothing is sent, the result is printed, exit 3.
    let (code, out, err) = rag_eval(&fake, &dir, &args);
    assert_eq!(code, 3, "{err}");
    let local: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(local["queries"], 40);
    assert!(
        err.contains("no LangSmith dataset named `handbook`"),
        "{err}"
    );
    assert!(err.contains("run the same command again"), "{err}");
    assert!(fake.state().sessions.is_empty());

    let (code, _, err) = rag_eval(
        &fake,
        &dir,
        &["dataset", "push", &questions, "--name", "handbook"],
    );
    assert_eq!(code, 0, "{err}");
    // The service fails every feedback for now.
    fake.inject("POST", "/feedback", 10, usize::MAX, Fault::Status(400));
    let (code, out2, err) = rag_eval(&fake, &dir, &args);
    assert_eq!(code, 3, "{err}");
    let mut again: Value = serde_json::from_str(out2.trim()).unwrap();
    let mut first = local.clone();
    again.as_object_mut().unwrap().remove("timings");
    first.as_object_mut().unwrap().remove("timings");
    assert_eq!(again, first, "the local result is the same, and complete");
    assert!(dir
        .join("target/rag-eval-langsmith/cli-run.jsonl")
        .is_file());
    fake.heal();
    let (code, _, err) = rag_eval(&fake, &dir, &args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("0 runs"), "{err}");
    assert!(err.contains("already there"), "{err}");
    let s = fake.state();
    assert_eq!(s.sessions.len(), 1);
    assert_eq!(s.runs.len(), 40);
    let metrics = local["metrics"].as_object().unwrap().len();
    assert_eq!(s.feedback.len(), 40 * metrics + metrics);
    assert!(s.deliveries.values().all(|&n| n == 1));
    let recall = local["metrics"]["span_recall@5"].as_f64().unwrap();
    let summary = s
        .feedback
        .iter()
        .find(|f| f["key"] == "span_recall@5" && f["run_id"].is_null())
        .unwrap();
    assert!((summary["score"].as_f64().unwrap() - recall).abs() < 1e-12);

    // `runs pull` brings the experiment back as a stored run with the same figures.
    drop(s);
    let store = dir.join("pulled.sqlite");
    let (code, out, err) = rag_eval(
        &fake,
        &dir,
        &["runs", "--store", store.as_str(), "pull", "cli-run"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("stored LangSmith experiment `cli-run` (40 queries) as run "));
    let (code, shown, err) = rag_eval(
        &fake,
        &dir,
        &[
            "runs",
            "--store",
            store.as_str(),
            "show",
            "latest",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let shown: Value = serde_json::from_str(shown.trim()).unwrap();
    assert_eq!(shown["origin"], "langsmith");
    assert_eq!(shown["label"], "cli-run");
    let pulled = shown["result"]["metrics"].as_object().unwrap();
    let printed = local["metrics"].as_object().unwrap();
    assert_eq!(
        pulled.keys().collect::<Vec<_>>(),
        printed.keys().collect::<Vec<_>>()
    );
    for (name, v) in printed {
        let back = pulled[name].as_f64().unwrap();
        assert!(
            (back - v.as_f64().unwrap()).abs() < 1e-12,
            "{name}: {back} vs {v}"
        );
    }
    let (code, _, err) = rag_eval(
        &fake,
        &dir,
        &["runs", "--store", store.as_str(), "pull", "absent"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("no LangSmith experiment named `absent`"),
        "{err}"
    );
}

#[test]
fn the_client_covers_datasets_sessions_and_run_patches() {
    let fake = FakeLangSmith::start();
    let client = client(&fake);
    let a = pollster::block_on(client.create_dataset("a", None, Map::new())).unwrap();
    pollster::block_on(client.create_dataset("b c/d", Some("x"), Map::new())).unwrap();
    let listed = pollster::block_on(client.list_datasets()).unwrap();
    assert_eq!(listed.len(), 2);
    let found = pollster::block_on(client.find_dataset("b c/d"))
        .unwrap()
        .unwrap();
    assert_eq!(found.description.as_deref(), Some("x"));
    pollster::block_on(client.delete_dataset(&a.id)).unwrap();
    assert!(pollster::block_on(client.find_dataset("a"))
        .unwrap()
        .is_none());
    let err = pollster::block_on(client.create_dataset("b c/d", None, Map::new())).unwrap_err();
    assert!(langsmith::is_conflict(&err), "{err}");

    let start = langsmith::ids::Timestamp::now();
    let sid = langsmith::ids::random_uuid();
    pollster::block_on(client.create_session(&sid, "exp", None, None, Map::new(), &start)).unwrap();
    assert_eq!(
        pollster::block_on(client.find_session("exp"))
            .unwrap()
            .unwrap()
            .id,
        sid
    );
    let run = langsmith::ids::random_uuid();
    let new_run = langsmith::NewRun {
        id: run.clone(),
        trace_id: run.clone(),
        dotted_order: langsmith::ids::root_dotted_order(&start, &run),
        name: "r".into(),
        run_type: "chain".into(),
        start_time: start.rfc3339(),
        end_time: None,
        inputs: json!({"query": "q"}),
        outputs: None,
        session_id: sid.clone(),
        reference_example_id: None,
        extra: json!({}),
    };
    pollster::block_on(client.batch_runs(std::slice::from_ref(&new_run), &[])).unwrap();
    pollster::block_on(client.patch_run(
        &run,
        &json!({"outputs": {"answer": "42"}, "end_time": start.rfc3339()}),
    ))
    .unwrap();
    let s = fake.state();
    assert_eq!(s.runs[0]["outputs"]["answer"], "42");
    drop(s);
    let mut bad = new_run;
    bad.dotted_order.clear();
    let err = pollster::block_on(client.batch_runs(&[bad], &[])).unwrap_err();
    assert!(err.to_string().contains("dotted_order"), "{err}");
    assert!(
        pollster::block_on(client.read_session(&langsmith::ids::random_uuid()))
            .unwrap()
            .is_none()
    );
}

// --- the official Python SDK against the same fake ---

fn python() -> Option<String> {
    match std::env::var("RAG_EVAL_LANGSMITH_PYTHON") {
        Ok(p) if !p.is_empty() => Some(p),
        _ => {
            println!("skipped: RAG_EVAL_LANGSMITH_PYTHON is not set (.ci/langsmith.sh sets up the langsmith SDK)");
            None
        }
    }
}

fn sdk(python: &str, fake: &FakeLangSmith, script: &str, env: &[(&str, &str)]) -> Value {
    let out = Command::new(python)
        .args(["-c", script])
        .env("LANGSMITH_ENDPOINT", fake.url())
        .env("LANGSMITH_API_KEY", KEY)
        .env("LANGSMITH_TRACING", "false")
        .envs(env.iter().copied())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the SDK script failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn the_python_sdk_reads_a_dataset_pushed_by_rag_eval() {
    let Some(python) = python() else { return };
    let fake = FakeLangSmith::start();
    fake.require_key(KEY);
    let (_dir, dir) = tempdir();
    for (level, text) in [("token", token_rows()), ("chunk", chunk_rows())] {
        let file = dir.join(format!("{level}.jsonl"));
        std::fs::write(&file, &text).unwrap();
        let name = format!("sdk-{level}");
        let (code, _, err) = rag_eval(
            &fake,
            &dir,
            &["dataset", "push", file.as_str(), "--name", &name],
        );
        assert_eq!(code, 0, "{err}");
        let examples = sdk(
            &python,
            &fake,
            r#"
import json, os
from langsmith import Client
c = Client()
ds = c.read_dataset(dataset_name=os.environ["DS"])
ex = list(c.list_examples(dataset_id=ds.id))
print(json.dumps([{"id": str(e.id), "inputs": e.inputs, "outputs": e.outputs, "metadata": e.metadata} for e in ex]))
"#,
            &[("DS", &name)],
        );
        let examples = examples.as_array().unwrap();
        let local = rows(&text);
        assert_eq!(examples.len(), local.len());
        for row in &local {
            let e = examples
                .iter()
                .find(|e| e["metadata"]["rag_eval"]["id"] == row["id"])
                .unwrap_or_else(|| panic!("{} not read by the SDK", row["id"]));
            assert_eq!(e["inputs"], row["inputs"]);
            assert_eq!(e["outputs"], row["outputs"]);
            let mut metadata = e["metadata"].as_object().unwrap().clone();
            metadata.remove("rag_eval");
            assert_eq!(Some(&Value::Object(metadata)), row.get("metadata"));
        }
    }
}

#[test]
fn a_dataset_made_with_the_python_sdk_is_pulled_and_validates() {
    let Some(python) = python() else { return };
    let fake = FakeLangSmith::start();
    fake.require_key(KEY);
    let questions = rows(&std::fs::read_to_string(format!("{DATA}/questions.jsonl")).unwrap());
    let examples: Vec<Value> = questions[..8]
        .iter()
        .map(|r| json!({"inputs": r["inputs"], "reference_outputs": r["outputs"], "metadata": r["metadata"]}))
        .collect();
    let created = sdk(
        &python,
        &fake,
        r#"
import json, os
from langsmith import Client
c = Client()
ds = c.create_dataset("from-sdk", description="made in Python")
c.create_examples(dataset_id=ds.id, examples=json.loads(os.environ["EXAMPLES"]))
print(json.dumps({"id": str(ds.id), "count": len(list(c.list_examples(dataset_id=ds.id)))}))
"#,
        &[("EXAMPLES", &serde_json::to_string(&examples).unwrap())],
    );
    assert_eq!(created["count"], 8);
    let (_dir, dir) = tempdir();
    let out = dir.join("pulled.jsonl");
    let (code, stdout, err) = rag_eval(
        &fake,
        &dir,
        &[
            "dataset",
            "pull",
            "from-sdk",
            "-o",
            out.as_str(),
            "--corpus",
            &corpus_dir(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("8 token-level rows"), "{stdout}");
    let AnyDataset::Token(d) = dataset::load(&out).unwrap() else {
        panic!("token level")
    };
    for (e, q) in d.examples().iter().zip(&questions[..8]) {
        assert!(langsmith::ids::is_uuid(&e.id), "{}", e.id);
        assert_eq!(e.query, q["inputs"]["query"].as_str().unwrap());
        assert_eq!(e.difficulty(), q["metadata"]["difficulty"].as_str());
    }
}

#[test]
fn the_python_sdk_lists_an_experiment_uploaded_by_rag_eval_with_its_feedback() {
    let Some(python) = python() else { return };
    let fake = FakeLangSmith::start();
    fake.require_key(KEY);
    let client = client(&fake);
    let d = dataset::load(format!("{DATA}/questions.jsonl")).unwrap();
    pollster::block_on(langsmith::push(&client, "handbook", &d, None)).unwrap();
    let result = evaluation();
    let (_dir, dir) = tempdir();
    let mut answers = HashMap::new();
    answers.insert("q0001".to_owned(), "kernel 4.18".to_owned());
    pollster::block_on(
        Experiment::new("bm25 from rag-eval")
            .dataset("handbook")
            .answers(answers)
            .journal(dir.join("j.jsonl"))
            .upload(&client, &result),
    )
    .unwrap();
    let seen = sdk(
        &python,
        &fake,
        r#"
import json
from langsmith import Client
c = Client()
ds = c.read_dataset(dataset_name="handbook")
projects = list(c.list_projects(reference_dataset_id=ds.id))
p = c.read_project(project_name="bm25 from rag-eval", include_stats=True)
runs = list(c.list_runs(project_id=p.id))
fb = list(c.list_feedback(run_ids=[r.id for r in runs]))
examples = {str(e.id): e.metadata["rag_eval"]["id"] for e in c.list_examples(dataset_id=ds.id)}
print(json.dumps({
    "projects": [x.name for x in projects],
    "stats": p.feedback_stats,
    "session_stats": p.session_feedback_stats,
    "runs": {examples[str(r.reference_example_id)]: r.outputs for r in runs},
    "feedback": [[examples[str(next(r for r in runs if r.id == f.run_id).reference_example_id)], f.key, f.score] for f in fb],
}))
"#,
        &[],
    );
    assert_eq!(seen["projects"], json!(["bm25 from rag-eval"]));
    let metrics = &result.scores.metrics;
    for (key, mean) in &metrics.0 {
        let stat = &seen["stats"][key];
        assert_eq!(stat["n"], 40, "{key}");
        assert!((stat["avg"].as_f64().unwrap() - mean).abs() < 1e-9, "{key}");
        assert!((seen["session_stats"][key]["avg"].as_f64().unwrap() - mean).abs() < 1e-12);
    }
    assert_eq!(seen["runs"]["q0001"]["answer"], "kernel 4.18");
    assert_eq!(
        seen["runs"]["q0002"]["retrieved"].as_array().unwrap().len(),
        5
    );
    let feedback = seen["feedback"].as_array().unwrap();
    assert_eq!(feedback.len(), 40 * metrics.0.len());
    for q in &result.scores.per_query {
        for (key, value) in &q.metrics.0 {
            assert!(
                feedback.iter().any(|f| f[0] == q.id.as_str()
                    && f[1] == key.as_str()
                    && f[2].as_f64().is_some_and(|s| (s - value).abs() < 1e-15)),
                "{} {key}",
                q.id
            );
        }
    }
}

/// Runs the binary against `url` as LangSmith, killing it after 30 s: (exit code, stderr).
fn rag_eval_at(url: &str, cwd: &Utf8Path, args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args)
        .current_dir(cwd)
        .env("LANGSMITH_ENDPOINT", url)
        .env("LANGSMITH_API_KEY", KEY)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("{args:?} still running after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn pages_that_never_advance_are_an_error_not_an_endless_loop() {
    use support::hostile::{HostileServer, Hostility, DATASET, EXPERIMENT};
    let (_dir, dir) = tempdir();
    let store = dir.join("runs.sqlite");

    let server = HostileServer::start(Hostility::RepeatedCursor);
    let (code, err) = rag_eval_at(
        &server.url(""),
        &dir,
        &["runs", "--store", store.as_str(), "pull", EXPERIMENT],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("POST")
            && err.contains("/runs/query")
            && err.contains("cursor `the-same-cursor` a second time"),
        "{err}"
    );

    let server = HostileServer::start(Hostility::IgnoredOffset);
    let (code, err) = rag_eval_at(
        &server.url(""),
        &dir,
        &["runs", "--store", store.as_str(), "pull", EXPERIMENT],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("/feedback") && err.contains("ignores `offset`"),
        "{err}"
    );
    let out = dir.join("pulled.jsonl");
    let (code, err) = rag_eval_at(
        &server.url(""),
        &dir,
        &[
            "dataset",
            "pull",
            DATASET,
            "-o",
            out.as_str(),
            "--corpus",
            &corpus_dir(),
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("/examples") && err.contains("offset=100") && err.contains("ignores `offset`"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn scores_too_large_to_average_are_an_error_and_nothing_is_stored() {
    use support::hostile::{HostileServer, Hostility, EXPERIMENT};
    let (_dir, dir) = tempdir();
    let store = dir.join("runs.sqlite");
    let server = HostileServer::start(Hostility::HugeScores);
    let (code, err) = rag_eval_at(
        &server.url(""),
        &dir,
        &["runs", "--store", store.as_str(), "pull", EXPERIMENT],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(EXPERIMENT) && err.contains("`recall`") && err.contains("not finite"),
        "{err}"
    );
    if store.exists() {
        let list = std::process::Command::new(env!("CARGO_BIN_EXE_rag-eval"))
            .args(["runs", "--store", store.as_str(), "list", "--json"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(list.stdout).unwrap(),
            "",
            "nothing stored"
        );
    }
}

#[test]
fn a_listing_that_never_ends_stops_at_max_rows_with_an_error() {
    use support::hostile::{HostileServer, Hostility, EXPERIMENT};
    let (_dir, dir) = tempdir();
    let store = dir.join("runs.sqlite");
    // A new cursor, and 100 new runs, on every page.
    let server = HostileServer::start(Hostility::FreshCursor);
    let (code, err) = rag_eval_at(
        &server.url(""),
        &dir,
        &[
            "runs",
            "--store",
            store.as_str(),
            "pull",
            EXPERIMENT,
            "--max-rows",
            "1000",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("/runs/query")
            && err.contains("more than 1000 runs (after 11 pages)")
            && err.contains("--max-rows"),
        "{err}"
    );
    assert_eq!(server.posts(), 11, "one page past the limit, no more");

    // Pages of feedback without ids, whatever the offset: nothing tells them apart.
    let server = HostileServer::start(Hostility::FeedbackWithoutIds);
    let (code, err) = rag_eval_at(
        &server.url(""),
        &dir,
        &[
            "runs",
            "--store",
            store.as_str(),
            "pull",
            EXPERIMENT,
            "--max-rows",
            "1000",
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("GET") && err.contains("more than 1000 feedback (after 11 pages)"),
        "{err}"
    );
    // The default is documented and sane: the flag shows it.
    let help = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["runs", "pull", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("--max-rows <N>") && help.contains("[default: 250000]"),
        "{help}"
    );
}

#[test]
fn a_redirect_to_another_origin_never_takes_the_api_key_along() {
    use support::hostile::{HostileServer, Hostility, EXPERIMENT};
    use support::{Reply, TestServer};
    let (_dir, dir) = tempdir();
    let store = dir.join("runs.sqlite");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&seen);
    let other = TestServer::start(move |request| {
        log.lock().unwrap().push(request);
        Reply::json(200, &serde_json::json!([]))
    });
    let server = HostileServer::start(Hostility::RedirectTo(other.url("/sessions")));
    let (code, err) = rag_eval_at(
        &server.url(""),
        &dir,
        &["runs", "--store", store.as_str(), "pull", EXPERIMENT],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("307") && err.contains("another origin") && err.contains(&other.url("")),
        "{err}"
    );
    assert!(!err.contains(KEY), "{err}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "the other server was asked"
    );
}
