//! `rag-eval generate` through the real binary, against an OpenAI-compatible chat server in the
//! test process. The server answers like a small instruction-tuned model does: mostly usable
//! questions, with excerpts copied exactly or with changed whitespace or case, paraphrased
//! excerpts that are not in the document, chunk ids it was never shown, prose around or instead
//! of the JSON, empty answers, and 429s with `Retry-After`. The corpus is the bundled one in
//! `examples/data/corpus`. The run against a real model is in `tests/real_server.rs`.

use crate::support;

use rag_eval::chunk::ChunkId;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{Reply, Request, TestServer};

const MODEL: &str = "tiny-instruct-q4";
const KEY_VAR: &str = "RAG_EVAL_GENERATE_TEST_KEY";
const KEY: &str = "sk-local-7c1e9a";

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/corpus")
}

/// Document ids of the corpus (paths relative to it), sorted as the corpus sorts them.
fn corpus_ids() -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                let rel = p.strip_prefix(root).unwrap();
                out.push(rel.to_str().unwrap().replace('\\', "/"));
            }
        }
    }
    let mut ids = Vec::new();
    walk(&corpus_dir(), &corpus_dir(), &mut ids);
    ids.sort();
    ids
}

/// What the fake model was asked and what it answered.
#[derive(Default)]
struct Ledger {
    requests: usize,
    rate_limited: usize,
    /// Questions in answers that parse as the JSON asked for.
    questions_sent: usize,
    /// Answers sent per shape (`invalid json`, `empty`, `fenced`, `plain`) and questions in
    /// usable answers per shape (`verbatim`, `whitespace`, `case`, `paraphrased`, …).
    shapes: BTreeMap<&'static str, usize>,
}

/// The fake model: a server and what it saw.
struct FakeModel {
    server: TestServer,
    ledger: Arc<Mutex<Ledger>>,
}

impl FakeModel {
    /// Answers after `delay` (to give a test time to interrupt a run).
    fn start(delay: Duration) -> FakeModel {
        let ids = corpus_ids();
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let l = Arc::clone(&ledger);
        let server = TestServer::start(move |r| answer(&r, &ids, &l).delayed(delay));
        FakeModel { server, ledger }
    }

    fn base_url(&self) -> String {
        self.server.url("/v1")
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap()
    }
}

fn error(status: u16, message: &str) -> Reply {
    Reply::json(
        status,
        &json!({"error": {"message": message, "type": "invalid_request_error"}}),
    )
}

fn answer(r: &Request, ids: &[String], ledger: &Mutex<Ledger>) -> Reply {
    let n = {
        let mut l = ledger.lock().unwrap();
        l.requests += 1;
        l.requests
    };
    if r.method != "POST" || r.path() != "/v1/chat/completions" {
        return error(404, "not found");
    }
    if r.header("authorization") != Some(&format!("Bearer {KEY}")) {
        return error(401, "Incorrect API key provided");
    }
    let Some(body) = r.json() else {
        return error(400, "invalid JSON body");
    };
    if body["model"] != MODEL {
        return error(404, "model not found");
    }
    if body["response_format"]["type"] != "json_schema" {
        return error(400, "expected a json_schema response format");
    }
    // A busy server: every seventh request is turned away for a moment.
    if n % 7 == 3 {
        ledger.lock().unwrap().rate_limited += 1;
        return error(429, "Rate limit reached for requests").with_header("retry-after-ms", "20");
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let text = |role: &str| {
        messages
            .iter()
            .find(|m| m["role"] == role)
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let (system, user) = (text("system"), text("user"));
    if system.contains("from what you already know") {
        let mut l = ledger.lock().unwrap();
        *l.shapes.entry("closed book").or_default() += 1;
        return completion(n, &system, &user, closed_book(&user).to_string());
    }
    let second_try = messages.iter().any(|m| m["role"] == "assistant");
    let wanted = user
        .rsplit("Write ")
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|w| w.parse().ok())
        .unwrap_or(3usize);
    let doc = user
        .split('`')
        .nth(1)
        .and_then(|id| ids.iter().position(|d| d == id))
        .unwrap_or(0);
    let questions = if system.contains("chunk_ids") {
        chunk_questions(&user, wanted, doc)
    } else {
        token_questions(&user, wanted, doc)
    };
    let body = json!({ "questions": questions.iter().map(|(_, q)| q).collect::<Vec<_>>() });
    let (shape, content) = match (doc % 6, second_try) {
        // Prose and JSON cut short, as when the model runs out of tokens; fine when reminded.
        (1, false) => (
            "invalid json",
            "Sure! Here are the questions:\n{\"questions\": [{\"question\": \"What is".to_owned(),
        ),
        // Never valid, not even after the reminder.
        (4, _) if doc < 6 => (
            "invalid json",
            "I cannot help with that document.".to_owned(),
        ),
        (3, false) => ("empty", String::new()),
        (5, _) => ("fenced", format!("```json\n{body}\n```")),
        _ => ("plain", body.to_string()),
    };
    let mut l = ledger.lock().unwrap();
    *l.shapes.entry(shape).or_default() += 1;
    if matches!(shape, "fenced" | "plain") {
        l.questions_sent += questions.len();
        for (q, _) in &questions {
            *l.shapes.entry(q).or_default() += 1;
        }
    }
    drop(l);
    completion(n, &system, &user, content)
}

/// A chat completion answering `content`.
fn completion(n: usize, system: &str, user: &str, content: String) -> Reply {
    let usage = json!({
        "prompt_tokens": (system.len() + user.len()) / 4,
        "completion_tokens": content.len() / 4 + 1,
        "total_tokens": (system.len() + user.len()) / 4 + content.len() / 4 + 1,
    });
    Reply::json(
        200,
        &json!({
            "id": format!("chatcmpl-{n}"),
            "object": "chat.completion",
            "created": 1_760_000_000,
            "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": usage,
        }),
    )
}

const LABELS: [&str; 5] = [
    "factual",
    "analytical",
    "inferential",
    "paraphrased",
    "Factual",
];

/// A question about `text`, the same every time it is asked about the same text.
fn question_about(text: &str) -> String {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .take(8)
        .collect();
    format!("What does the documentation say about {}?", words.join(" "))
}

/// Sentences of each document window shown in `user`, long enough to be excerpts.
fn sentences(user: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for part in user.split("<document>\n").skip(1) {
        let window = part.split("\n</document>").next().unwrap_or_default();
        let mut found = Vec::new();
        for line in window.lines() {
            let line = line.trim();
            if line.starts_with('#') || line.starts_with('|') || line.starts_with("```") {
                continue;
            }
            for s in line.split_inclusive(". ") {
                let s = s.trim();
                if (40..=300).contains(&s.chars().count()) {
                    found.push(s.to_owned());
                }
            }
        }
        out.push(found);
    }
    out
}

/// Word swaps of a model that rephrases instead of copying.
fn paraphrase(s: &str) -> String {
    s.split_whitespace()
        .map(|w| match w.to_lowercase().as_str() {
            "the" => "this",
            "is" => "happens to be",
            "a" => "one",
            "and" => "as well as",
            "to" => "in order to",
            "of" => "belonging to",
            "in" => "inside",
            "it" => "that thing",
            _ => w,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Questions about the windows in `user`, each with the way its answer was written.
fn token_questions(user: &str, wanted: usize, doc: usize) -> Vec<(&'static str, Value)> {
    let windows = sentences(user);
    let Some(candidates) = windows.first().filter(|c| !c.is_empty()) else {
        return Vec::new();
    };
    let pick = |c: &[String], j: usize| c[(j * c.len() / wanted.max(1) + doc) % c.len()].clone();
    // A question needing two documents quotes both.
    let partner = windows.get(1).filter(|c| !c.is_empty());
    (0..wanted)
        .map(|j| {
            let s = pick(candidates, j);
            let (shape, excerpt) = match (doc + j) % 6 {
                0 | 4 => ("verbatim", s.clone()),
                1 => (
                    "whitespace",
                    s.replacen(' ', "\n", 1).replacen(' ', "  ", 2),
                ),
                2 => ("case", s.to_lowercase()),
                3 => ("paraphrased", paraphrase(&s)),
                _ => ("no question", s.clone()),
            };
            let mut excerpts = vec![excerpt];
            let question = match partner {
                _ if shape == "no question" => String::new(),
                Some(p) => {
                    let other = pick(p, j);
                    let q = format!(
                        "{} And how does that relate to {other}?",
                        question_about(&s)
                    );
                    excerpts.push(other);
                    q
                }
                None => question_about(&s),
            };
            let mut q = json!({
                "question": question,
                "excerpts": excerpts,
                "difficulty": LABELS[(doc + j) % LABELS.len()],
            });
            with_answer(&mut q, &excerpts[0], doc + j);
            (shape, q)
        })
        .collect()
}

/// The short answer the model writes with a question: the passage's first words, except that
/// one question in five has none and one in five a blank one (the row then has no reference
/// answer).
fn with_answer(q: &mut Value, passage: &str, n: usize) {
    let answer = match n % 5 {
        0 => return,
        1 => " \n".to_owned(),
        _ => passage
            .split_whitespace()
            .take(6)
            .collect::<Vec<_>>()
            .join(" "),
    };
    q["answer"] = json!(answer);
}

/// A closed-book answer to `question`: confident and right (it repeats the passage the
/// question names) for one question in three, an honest "unknown" otherwise.
fn closed_book(question: &str) -> Value {
    let topic = question
        .strip_prefix("What does the documentation say about ")
        .unwrap_or(question)
        .trim_end_matches('?');
    if question.len().is_multiple_of(3) {
        json!({"answer": format!("It says that {topic}."), "confidence": "high"})
    } else {
        json!({"answer": "unknown", "confidence": "low"})
    }
}

/// `(id, text)` of the chunks shown in `user` (`[chunk_…]` lines followed by the chunk).
fn shown_chunks(user: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for part in user.split("\n[chunk_").skip(1) {
        let Some((hex, rest)) = part.split_once("]\n") else {
            continue;
        };
        let text = rest.split("\n\n[chunk_").next().unwrap_or_default();
        out.push((format!("chunk_{hex}"), text.to_owned()));
    }
    out
}

/// Questions citing the chunks in `user`, each with the way its ids were written.
fn chunk_questions(user: &str, wanted: usize, doc: usize) -> Vec<(&'static str, Value)> {
    let chunks = shown_chunks(&format!("\n{user}"));
    if chunks.is_empty() {
        return Vec::new();
    }
    (0..wanted)
        .map(|j| {
            let i = (j * chunks.len() / wanted.max(1) + doc) % chunks.len();
            let (id, text) = &chunks[i];
            let next = &chunks[(i + 1) % chunks.len()].0;
            let (shape, ids) = match (doc + j) % 6 {
                0 => ("verbatim", json!([id])),
                1 => ("verbatim", json!([id, next])),
                2 => ("hallucinated id", json!([id, "chunk_0badc0ffee00"])),
                3 => ("only hallucinated", json!(["chunk_123456abcdef"])),
                4 => ("bare hex id", json!([id.trim_start_matches("chunk_")])),
                _ => ("bracketed id", json!([format!("[{id}]")])),
            };
            let mut q = json!({
                "question": question_about(text),
                "chunk_ids": ids,
                "difficulty": LABELS[(doc + j) % LABELS.len()],
            });
            with_answer(&mut q, text, doc + j);
            (shape, q)
        })
        .collect()
}

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rag-eval"));
    c.env(KEY_VAR, KEY);
    c
}

fn generate_args(level: &str, model: &FakeModel, out: &Path) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "generate".into(),
        level.into(),
        "--corpus".into(),
        corpus_dir().to_str().unwrap().into(),
        "-o".into(),
        out.to_str().unwrap().into(),
        "--queries-per-doc".into(),
        "3".into(),
        "--model".into(),
        MODEL.into(),
        "--base-url".into(),
        model.base_url(),
        "--api-key-env".into(),
        KEY_VAR.into(),
        "--concurrency".into(),
        "2".into(),
        "--price-per-1k-tokens".into(),
        "0.002".into(),
    ];
    if level == "chunk" {
        args.extend(["--chunker".into(), CHUNKER.into()]);
    }
    args
}

const CHUNKER: &str = "recursive:size=400,overlap=0";

fn run(args: &[String]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn ok(args: &[String]) -> String {
    let out = run(args);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?} failed: {err}");
    err
}

/// Runs `rag-eval dataset validate` on `out`; it must accept the file.
fn validates(out: &Path) -> Value {
    let o = bin()
        .args(["dataset", "validate", "--json", "--corpus"])
        .arg(corpus_dir())
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "validate: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

fn rows(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn progress_lines(out: &Path) -> Vec<Value> {
    let p = PathBuf::from(format!("{}.progress", out.display()));
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn documents_done(out: &Path) -> Vec<Value> {
    progress_lines(out)
        .into_iter()
        .filter(|l| l["kind"] == "document")
        .collect()
}

/// `(source document, question)` of every row.
fn row_set(out: &Path) -> BTreeSet<(String, String)> {
    rows(out)
        .iter()
        .map(|r| {
            (
                r["metadata"]["source_docs"][0].as_str().unwrap().to_owned(),
                r["inputs"]["query"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn dropped_questions(d: &Value) -> u64 {
    d.as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| *k != "invalid_json" && *k != "unknown_chunk_ids")
        .map(|(_, v)| v.as_u64().unwrap())
        .sum()
}

fn sum(lines: &[Value], f: impl Fn(&Value) -> u64) -> u64 {
    lines.iter().map(f).sum()
}

/// Every question of every usable answer is a row or a dropped count, and the final file has
/// the per-document rows less what the corpus-wide filters removed.
fn check_accounting(out: &Path, questions_sent: usize) {
    let lines = progress_lines(out);
    let docs: Vec<Value> = lines
        .iter()
        .filter(|l| l["kind"] == "document")
        .cloned()
        .collect();
    let finished = lines
        .iter()
        .find(|l| l["kind"] == "finished")
        .expect("a finished line");
    let per_doc_rows = sum(&docs, |d| d["rows"].as_u64().unwrap());
    let per_doc_dropped = sum(&docs, |d| dropped_questions(&d["dropped"]));
    assert_eq!(
        per_doc_rows + per_doc_dropped,
        questions_sent as u64,
        "every question is kept or counted"
    );
    let final_rows = rows(out).len() as u64;
    assert_eq!(finished["rows"].as_u64().unwrap(), final_rows);
    assert_eq!(
        final_rows + dropped_questions(&finished["dropped"]),
        per_doc_rows
    );
}

#[test]
fn token_level_rows_all_validate_and_every_question_is_accounted_for() {
    let model = FakeModel::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("questions.jsonl");
    let err = ok(&generate_args("token", &model, &out));
    let summary = validates(&out);
    let ids = corpus_ids();

    let got = rows(&out);
    assert!(got.len() >= ids.len(), "{} rows", got.len());
    assert_eq!(summary["rows"].as_u64().unwrap() as usize, got.len());
    assert!(summary["problems"].as_array().unwrap().is_empty());
    for r in &got {
        assert_eq!(r["metadata"]["generation_model"], MODEL);
        let source = r["metadata"]["source_docs"][0].as_str().unwrap();
        let spans = r["outputs"]["relevant_spans"].as_array().unwrap();
        assert!(!spans.is_empty());
        assert!(spans.iter().all(|s| s["doc_id"] == source), "{r}");
        assert!(r["inputs"]["query"]
            .as_str()
            .unwrap()
            .starts_with("What does"));
    }
    // Rows follow the corpus order.
    let order: Vec<usize> = got
        .iter()
        .map(|r| {
            let d = r["metadata"]["source_docs"][0].as_str().unwrap();
            ids.iter().position(|i| i == d).unwrap()
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");

    let l = model.ledger();
    check_accounting(&out, l.questions_sent);
    for shape in [
        "invalid json",
        "empty",
        "fenced",
        "whitespace",
        "case",
        "paraphrased",
    ] {
        assert!(l.shapes.get(shape).copied().unwrap_or(0) > 0, "{shape}");
    }
    assert!(l.rate_limited > 0);
    drop(l);
    let docs = documents_done(&out);
    assert_eq!(docs.len(), ids.len());
    let dropped = |k: &str| sum(&docs, |d| d["dropped"][k].as_u64().unwrap());
    assert!(
        dropped("unlocated") > 0,
        "paraphrased excerpts are not found"
    );
    assert!(
        dropped("invalid_json") > 0,
        "answers never valid are counted"
    );
    assert!(dropped("empty") > 0, "questions without text are counted");

    // Every kept question has its short answer as reference, but those the model gave none;
    // those rows are kept and counted.
    let with: Vec<&Value> = got
        .iter()
        .filter(|r| r["outputs"].get("reference_answer").is_some())
        .collect();
    let without = got.len() - with.len();
    assert!(
        !with.is_empty() && without > 0,
        "{} of {}",
        with.len(),
        got.len()
    );
    for r in &with {
        let a = r["outputs"]["reference_answer"].as_str().unwrap();
        assert!(!a.trim().is_empty() && a == a.trim(), "{r}");
    }
    assert_eq!(
        summary["with_reference_answer"].as_u64(),
        Some(with.len() as u64)
    );

    // Not a terminal: no line per document (a progress line at most every ten seconds), then
    // the summary.
    assert!(!err.lines().any(|l| l.starts_with('[')), "{err}");
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("wrote {} rows to ", got.len())),
        "{last}"
    );
    assert!(
        last.contains("tokens") && last.contains("calls") && last.contains('$'),
        "{last}"
    );
    assert!(
        last.contains(&format!("; {without} without a reference answer;")),
        "{last}"
    );

    // A rerun of a finished output has nothing to do.
    let calls_before = model.ledger().requests;
    let again = ok(&generate_args("token", &model, &out));
    assert_eq!(model.ledger().requests, calls_before, "{again}");
    assert_eq!(rows(&out).len(), got.len());
}

#[test]
fn chunk_level_rows_cite_only_chunks_of_the_chunker() {
    let model = FakeModel::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("chunks.jsonl");
    let mut args = generate_args("chunk", &model, &out);
    args.extend([
        "--difficulty-mix".into(),
        "factual=0.5,analytical=0.5".into(),
    ]);
    ok(&args);
    let summary = validates(&out);
    assert_eq!(summary["level"], "chunk");
    assert!(summary["chunker"].as_str().unwrap().starts_with(CHUNKER));

    let listing = bin()
        .args(["chunk", "--chunker", CHUNKER])
        .arg(corpus_dir())
        .output()
        .unwrap();
    assert!(listing.status.success());
    let known: BTreeSet<String> = String::from_utf8(listing.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            ChunkId::from_content(v["text"].as_str().unwrap()).to_string()
        })
        .collect();
    let got = rows(&out);
    assert!(!got.is_empty());
    let with = got
        .iter()
        .filter(|r| r["outputs"]["reference_answer"].is_string())
        .count();
    assert!(with > 0, "chunk-level rows carry reference answers too");
    assert_eq!(summary["with_reference_answer"].as_u64(), Some(with as u64));
    for r in &got {
        let cited = r["outputs"]["relevant_chunk_ids"].as_array().unwrap();
        assert!(!cited.is_empty(), "{r}");
        for id in cited {
            assert!(known.contains(id.as_str().unwrap()), "{id} in {r}");
        }
    }
    check_accounting(&out, model.ledger().questions_sent);
    let docs = documents_done(&out);
    let dropped = |k: &str| sum(&docs, |d| d["dropped"][k].as_u64().unwrap());
    assert!(dropped("unknown_chunk_ids") > 0);
    assert!(dropped("unlocated") > 0, "questions citing no real chunk");
    let finished = progress_lines(&out).pop().unwrap();
    assert!(
        finished["dropped"]["over_mix"].as_u64().unwrap() > 0,
        "{finished}"
    );

    // Another spelling of the same chunker continues the same run: nothing left to do.
    let requests = model.ledger().requests;
    let respelled: Vec<String> = args
        .iter()
        .map(|a| {
            if a == CHUNKER {
                format!("{CHUNKER},length=chars")
            } else {
                a.clone()
            }
        })
        .collect();
    ok(&respelled);
    assert_eq!(model.ledger().requests, requests);

    // The dataset gates an evaluation with the same chunker.
    let eval = bin()
        .args(["eval", "--json", "--corpus"])
        .arg(corpus_dir())
        .arg("--dataset")
        .arg(&out)
        .args(["--chunker", CHUNKER])
        .output()
        .unwrap();
    assert!(
        eval.status.success(),
        "{}",
        String::from_utf8_lossy(&eval.stderr)
    );
    let card: Value = serde_json::from_slice(&eval.stdout).unwrap();
    assert_eq!(card["queries"].as_u64().unwrap() as usize, got.len());
}

#[test]
fn cross_document_questions_and_the_closed_book_check_go_through_the_cli() {
    let model = FakeModel::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cross.jsonl");
    let mut args = generate_args("token", &model, &out);
    args.extend(["--cross-document".into(), "--check-answerable".into()]);
    ok(&args);
    validates(&out);
    let got = rows(&out);
    let cross: Vec<&Value> = got
        .iter()
        .filter(|r| r["metadata"]["cross_document"] == true)
        .collect();
    assert!(!cross.is_empty());
    for r in &cross {
        let docs: BTreeSet<&str> = r["outputs"]["relevant_spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["doc_id"].as_str().unwrap())
            .collect();
        assert_eq!(docs.len(), 2, "{r}");
        assert_eq!(r["metadata"]["source_docs"].as_array().unwrap().len(), 2);
    }
    let l = model.ledger();
    assert!(l.shapes["closed book"] > 0);
    check_accounting(&out, l.questions_sent);
    drop(l);
    let docs = documents_done(&out);
    assert!(sum(&docs, |d| d["dropped"]["unanswerable"].as_u64().unwrap()) > 0);

    // The check shapes the rows, so a continuation must keep it.
    args.retain(|a| a != "--check-answerable");
    let e = fails(&args);
    assert!(
        e.contains("--check-answerable = true and this run has --check-answerable = false"),
        "{e}"
    );
}

/// Waits until the progress file records at least `k` documents; false if the child ended
/// first.
fn wait_for_documents(child: &mut Child, out: &Path, k: usize) -> bool {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if documents_done(out).len() >= k {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("no progress within two minutes");
}

fn spawn(args: &[String]) -> Child {
    bin()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_run_continues_without_losing_or_repeating_rows() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.jsonl");
    let fast = FakeModel::start(Duration::ZERO);
    ok(&generate_args("token", &fast, &whole));
    let expected = row_set(&whole);

    let slow = FakeModel::start(Duration::from_millis(150));
    let out = dir.path().join("killed.jsonl");
    let mut child = spawn(&generate_args("token", &slow, &out));
    assert!(wait_for_documents(&mut child, &out, 3), "ended too early");
    child.kill().unwrap();
    child.wait().unwrap();
    let done = documents_done(&out).len();
    let total = corpus_ids().len();
    assert!(done < total, "the run was killed before its end");

    let err = ok(&generate_args("token", &fast, &out));
    assert!(err.starts_with("continuing "), "{err}");
    let summary = err.lines().last().unwrap();
    assert!(
        summary.contains(&format!(
            "({total} of {total} documents, {done} from an earlier run)"
        )),
        "only documents not recorded are redone: {err}"
    );
    validates(&out);
    assert_eq!(row_set(&out), expected);
    let ids: BTreeSet<String> = rows(&out)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), expected.len(), "unique ids");
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_after_the_documents_in_flight_and_leaves_a_valid_file() {
    let dir = tempfile::tempdir().unwrap();
    let slow = FakeModel::start(Duration::from_millis(200));
    let out = dir.path().join("stopped.jsonl");
    let mut child = spawn(&generate_args("token", &slow, &out));
    assert!(wait_for_documents(&mut child, &out, 2), "ended too early");
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    let err = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(130), "{err}");
    assert!(
        err.contains("stopping after the documents in flight"),
        "{err}"
    );
    let docs = documents_done(&out);
    assert!(docs.len() < corpus_ids().len());
    let recorded = sum(&docs, |d| d["rows"].as_u64().unwrap());
    assert!(
        recorded > 0,
        "only one document of the corpus gives no rows"
    );
    assert_eq!(
        rows(&out).len() as u64,
        recorded,
        "whole rows, all recorded"
    );
    validates(&out);
    let last = err.lines().last().unwrap();
    assert!(
        last.starts_with(&format!("interrupted: {recorded} rows in "))
            && last.ends_with("run the same command again to continue"),
        "{last}"
    );
    assert!(progress_lines(&out).iter().all(|l| l["kind"] != "finished"));

    let fast = FakeModel::start(Duration::ZERO);
    ok(&generate_args("token", &fast, &out));
    validates(&out);
    assert_eq!(documents_done(&out).len(), corpus_ids().len());
}

/// Runs a command that must fail with exit code 1 and one line on stderr.
fn fails(args: &[String]) -> String {
    let out = run(args);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{args:?} should fail: {err}");
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn errors_are_one_line_naming_what_failed() {
    let model = FakeModel::start(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("d.jsonl");

    // A wrong key: the server's 401, the endpoint, and what is kept.
    let mut args = generate_args("token", &model, &out);
    let var = args.iter().position(|a| a == KEY_VAR).unwrap();
    args[var] = "RAG_EVAL_GENERATE_TEST_UNSET".into();
    let e = fails(&args);
    assert!(
        e.contains("401") && e.contains("/v1/chat/completions"),
        "{e}"
    );
    assert!(e.contains("0 of 12 documents done"), "{e}");
    assert!(e.contains("run the same command again to continue"), "{e}");
    assert!(!e.contains(KEY), "{e}");

    // Continuing with other settings.
    let mut other = generate_args("token", &model, &out);
    let q = other.iter().position(|a| a == "--queries-per-doc").unwrap();
    other[q + 1] = "5".into();
    let e = fails(&other);
    assert!(
        e.contains(
            "it was started with --queries-per-doc = 3 and this run has --queries-per-doc = 5"
        ),
        "{e}"
    );

    // A file not written by a generation run is never overwritten.
    let foreign = dir.path().join("mine.jsonl");
    std::fs::write(&foreign, "{\"id\":\"mine\"}\n").unwrap();
    let e = fails(&generate_args("token", &model, &foreign));
    assert!(e.contains("has no progress file"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&foreign).unwrap(),
        "{\"id\":\"mine\"}\n"
    );

    let mut zero = generate_args("token", &model, &dir.path().join("z.jsonl"));
    let c = zero.iter().position(|a| a == "--concurrency").unwrap();
    zero[c + 1] = "0".into();
    assert!(fails(&zero).contains("--concurrency must be at least 1"));

    let mut mix = generate_args("token", &model, &dir.path().join("m.jsonl"));
    mix.extend(["--difficulty-mix".into(), "factual=0.5,easy=0.5".into()]);
    assert!(fails(&mix).contains("unknown difficulty `easy`"));

    // Shares that do not make a whole are refused with their sum, not rescaled.
    let mut partial = generate_args("token", &model, &dir.path().join("p.jsonl"));
    partial.extend([
        "--difficulty-mix".into(),
        "factual=0.4,analytical=0.3".into(),
    ]);
    let e = fails(&partial);
    assert!(
        e.contains("the shares must sum to 1, got factual=0.4 + analytical=0.3 = 0.7"),
        "{e}"
    );
    assert!(!dir.path().join("p.jsonl").exists(), "{e}");

    // A temperature that is no number in the servers' range is a usage error before any
    // request (NaN used to be sent as `null`).
    for bad in ["NaN", "inf", "-0.5", "2.5"] {
        let mut t = generate_args("token", &model, &dir.path().join("t.jsonl"));
        t.push(format!("--temperature={bad}"));
        let o = run(&t);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains("--temperature") && err.contains("is not a temperature from 0 to 2"),
            "{bad}: {err}"
        );
    }

    // The chunk level needs its chunker: a usage error.
    let mut no_chunker = generate_args("chunk", &model, &dir.path().join("c.jsonl"));
    no_chunker.truncate(no_chunker.len() - 2);
    let o = run(&no_chunker);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--chunker"));
}

#[cfg(unix)]
#[test]
fn on_a_terminal_a_progress_bar_replaces_the_per_document_lines() {
    // util-linux `script` runs the command on a pseudo-terminal and copies what it shows.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: `script` (util-linux) is not installed");
        return;
    }
    let model = FakeModel::start(Duration::from_millis(40));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tty.jsonl");
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut line = vec![
        "env".to_owned(),
        format!("{KEY_VAR}={KEY}"),
        quote(env!("CARGO_BIN_EXE_rag-eval")),
    ];
    line.extend(
        generate_args("token", &model, &out)
            .iter()
            .map(|a| quote(a)),
    );
    let o = Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{screen}");
    assert!(screen.contains("/12 documents"), "{screen}");
    assert!(
        screen.contains("questions:") && screen.contains("located") && screen.contains('$'),
        "{screen}"
    );
    assert!(
        !screen.contains("[1/12]"),
        "no per-document lines: {screen}"
    );
    let n = rows(&out).len();
    assert!(screen.contains(&format!("wrote {n} rows to ")), "{screen}");
    validates(&out);
}

/// What the small-context model was sent.
#[derive(Default)]
struct ContextLedger {
    /// `max_tokens` of every request.
    max_tokens: Vec<Option<u64>>,
    /// Requests refused as longer than the context, by the document they showed.
    refused: BTreeMap<String, usize>,
    /// The prompt's tokens and the `max_tokens` of every request answered.
    answered: Vec<(usize, Option<u64>)>,
}

/// The model's context in the small-context server, in tokens of 4 characters.
const N_CTX: usize = 2048;

/// A llama-server with `-c 2048`: a request whose messages exceed the context (4 characters a
/// token) is refused with llama-server's HTTP 400; `never.md` is refused at any length, as a
/// document whose prompt cannot fit. Otherwise one question, its excerpt the first 60
/// characters of the document text shown.
fn small_context_model(ledger: Arc<Mutex<ContextLedger>>) -> TestServer {
    context_model(ledger, N_CTX)
}

/// [`small_context_model`] with a context of `n_ctx` tokens.
fn context_model(ledger: Arc<Mutex<ContextLedger>>, n_ctx: usize) -> TestServer {
    TestServer::start(move |r: Request| {
        let body = r.json().expect("a JSON body");
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let chars: usize = messages
            .iter()
            .map(|m| m["content"].as_str().unwrap_or_default().chars().count())
            .sum();
        let user = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned();
        let doc = user.split('`').nth(1).unwrap_or_default().to_owned();
        let mut l = ledger.lock().unwrap();
        l.max_tokens.push(body["max_tokens"].as_u64());
        let prompt = if doc == "never.md" {
            50 * n_ctx
        } else {
            chars / 4
        };
        if prompt > n_ctx {
            *l.refused.entry(doc).or_default() += 1;
            return Reply::json(
                400,
                &json!({"error": {"code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": n_ctx}}),
            );
        }
        l.answered.push((prompt, body["max_tokens"].as_u64()));
        drop(l);
        let text = user
            .split_once("<document>\n")
            .map(|(_, t)| t)
            .unwrap_or_default();
        let excerpt: String = text.chars().take(60).collect();
        let question = json!({"question": format!("What does the passage `{excerpt}` say?"),
            "excerpts": [excerpt], "answer": "It says so.", "difficulty": "factual"});
        completion(1, "", &user, json!({ "questions": [question] }).to_string())
    })
}

#[test]
fn documents_longer_than_the_context_are_cut_into_windows_that_fit_and_never_stop_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    let long: String = (0..400)
        .map(|i| {
            let end = if i % 5 == 4 { "\n\n" } else { " " };
            format!(
                "Sentence {i} of the long document is about topic {}.{end}",
                i * 7
            )
        })
        .collect();
    assert!(long.len() > 20_000);
    std::fs::write(corpus.join("long.md"), &long).unwrap();
    std::fs::write(
        corpus.join("never.md"),
        "A document whose prompt never fits the model's context, however it is cut.",
    )
    .unwrap();
    std::fs::write(
        corpus.join("short.md"),
        "A short document that fits the context in one request, with room to spare.",
    )
    .unwrap();
    let ledger = Arc::new(Mutex::new(ContextLedger::default()));
    let server = small_context_model(Arc::clone(&ledger));
    let args = |out: &Path, extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "generate",
            "token",
            "--corpus",
            corpus.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--queries-per-doc",
            "4",
            "--model",
            MODEL,
            "--base-url",
            &server.url("/v1"),
            "--api-key-env",
            KEY_VAR,
            "--concurrency",
            "1",
            "--no-dedup",
            "--max-tokens",
            "256",
        ]
        .map(String::from)
        .to_vec();
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        a
    };

    // Learned from the server's refusal.
    let out = dir.path().join("learned.jsonl");
    let err = ok(&args(&out, &[]));
    assert!(
        err.contains(
            "document `never.md` left out: the model's context of 2048 tokens cannot hold the \
             prompt (about "
        ) && err.contains("exceed_context_size_error"),
        "{err}"
    );
    assert!(err.contains("1 documents left out"), "{err}");
    let docs = documents_done(&out);
    let record = |id: &str| docs.iter().find(|d| d["doc_id"] == id).unwrap().clone();
    assert_eq!(record("never.md")["dropped"]["documents"], 1);
    assert!(record("never.md")["dropped_reason"]
        .as_str()
        .unwrap()
        .contains("n_ctx"));
    // The long document was refused whole, then asked about in windows that fit: 4 rows.
    assert_eq!(record("long.md")["rows"], 4, "{:?}", record("long.md"));
    assert_eq!(record("short.md")["rows"], 1);
    let o = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["dataset", "validate", "--json", "--corpus"])
        .arg(&corpus)
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    {
        let l = ledger.lock().unwrap();
        assert!(l.refused["long.md"] >= 1, "{:?}", l.refused);
        assert!(
            l.max_tokens.iter().all(|m| *m == Some(256)),
            "{:?}",
            l.max_tokens
        );
    }

    // Told the context: the long document is cut to fit before any refusal.
    ledger.lock().unwrap().refused.clear();
    let out = dir.path().join("told.jsonl");
    ok(&args(&out, &["--context-tokens", "2048"]));
    let refused = ledger.lock().unwrap().refused.clone();
    assert_eq!(
        refused.keys().collect::<Vec<_>>(),
        ["never.md"],
        "{refused:?}"
    );
    assert_eq!(
        documents_done(&out)
            .iter()
            .map(|d| d["rows"].as_u64().unwrap())
            .sum::<u64>(),
        5
    );
}

/// llama-server started with `-c 1024` and every setting left at its default: the default
/// answer budget (2,048 tokens) would leave the document no room, so once the server names its
/// context the budget is fitted to it and the long document is asked about in windows that
/// fit; a document that fits in no window is named with the reason, never called blank.
#[test]
fn a_small_context_with_the_default_budget_keeps_long_documents() {
    const SMALL: usize = 1024;
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    let long: String = (0..200)
        .map(|i| {
            format!(
                "Sentence {i} of the long document is about topic {}.\n\n",
                i * 7
            )
        })
        .collect();
    assert!(long.len() > 8000);
    std::fs::write(corpus.join("long.md"), &long).unwrap();
    let ledger = Arc::new(Mutex::new(ContextLedger::default()));
    let server = context_model(Arc::clone(&ledger), SMALL);
    let args = |corpus: &Path, out: &Path| -> Vec<String> {
        [
            "generate",
            "token",
            "--corpus",
            corpus.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--model",
            MODEL,
            "--base-url",
            &server.url("/v1"),
            "--api-key-env",
            KEY_VAR,
            "--concurrency",
            "1",
        ]
        .map(String::from)
        .to_vec()
    };
    let out = dir.path().join("long.jsonl");
    let err = ok(&args(&corpus, &out));
    assert!(!err.contains("left out"), "{err}");
    let docs = documents_done(&out);
    assert_eq!(docs[0]["doc_id"], "long.md");
    assert_eq!(docs[0]["rows"], 3, "{:?}\n{err}", docs[0]);
    {
        let l = ledger.lock().unwrap();
        assert_eq!(l.refused["long.md"], 1, "{:?}", l.refused);
        // Every request answered after the refusal left its answer room in the context: the
        // budget fitted to it, not the 2,048 asked for.
        assert_eq!(l.answered.len(), 3, "{:?}", l.answered);
        for &(prompt, max_tokens) in &l.answered {
            let budget = max_tokens.unwrap() as usize;
            assert!(
                budget < SMALL / 4 && prompt + budget <= SMALL,
                "{:?}",
                l.answered
            );
        }
    }

    // The prompt alone fills the context: left out, named, and the reason given.
    let never = dir.path().join("never");
    std::fs::create_dir(&never).unwrap();
    std::fs::write(
        never.join("never.md"),
        "A document whose prompt never fits the model's context, however it is cut.",
    )
    .unwrap();
    let run = run(&args(&never, &dir.path().join("never.jsonl")));
    let err = String::from_utf8(run.stderr).unwrap();
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "error: no rows were generated: 1 of 1 documents were left out; `never.md`: the \
             model's context of 1024 tokens cannot hold the prompt"
        ),
        "{err}"
    );
    assert!(!err.contains("blank"), "{err}");
}
