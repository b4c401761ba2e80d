//! The whole path against a real model: llama.cpp's `llama-server` serving SmolLM2-135M
//! (`.ci/llama.sh` builds and starts it). `RAG_EVAL_EMBED_URL` is a server started with
//! `--embeddings --pooling mean`, `RAG_EVAL_LLM_URL` one for chat, both like
//! `http://127.0.0.1:8080/v1`; `RAG_EVAL_LLM_MODEL` names the model (default `smollm2`). A test
//! whose variable is unset prints `skipped: …` and passes; `.ci/run` sets them and fails if a
//! test skipped anyway.
//!
//! The model knows nothing the crate has a table for: its dimension (576) is learned from the
//! server's first answer, the way any local model's is.

use rag_eval::cache::{Cache, CacheMode, CachedEmbedder};
use rag_eval::embed::{Embedder, OpenAiEmbedder};
use rag_eval::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

fn server(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            eprintln!("skipped: set {var} to a llama-server's /v1 URL (.ci/llama.sh starts one)");
            None
        }
    }
}

fn model() -> String {
    std::env::var("RAG_EVAL_LLM_MODEL").unwrap_or_else(|_| "smollm2".into())
}

fn embedder(url: &str) -> Arc<OpenAiEmbedder> {
    Arc::new(
        OpenAiEmbedder::builder(model())
            .base_url(url)
            .api_key_env("RAG_EVAL_NO_KEY")
            .build()
            .unwrap(),
    )
}

fn cache(path: &Path, mode: CacheMode) -> Arc<Cache> {
    Arc::new(Cache::open(path.to_str().unwrap(), mode).unwrap())
}

#[test]
fn llama_server_embeddings_record_then_replay() {
    let Some(url) = server("RAG_EVAL_EMBED_URL") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    let texts: Vec<String> = (0..11)
        .map(|i| format!("Passage {i}: the harbor lantern burns until dawn."))
        .collect();

    // Recording: the dimension comes from the first answer.
    let live = embedder(&url);
    let first = CachedEmbedder::new(Arc::clone(&live), cache(&path, CacheMode::ReadWrite));
    assert_eq!(first.dimension(), 0, "a model the crate has no size for");
    let vectors = pollster::block_on(first.embed(&texts)).unwrap();
    let dimension = vectors[0].len();
    assert!(dimension > 0);
    assert!(vectors.iter().all(|v| v.len() == dimension));
    assert_eq!(first.dimension(), dimension);
    assert_ne!(vectors[0], vectors[1], "different texts, different vectors");
    let query = pollster::block_on(first.embed_query("when does the lantern burn?")).unwrap();
    assert_eq!(query.len(), dimension);
    let recorded = live.http_stats().requests;
    assert!(recorded > 0);
    first.cache().checkpoint().unwrap();
    drop(first);
    eprintln!(
        "recorded {} vectors of {dimension} in {recorded} requests",
        texts.len() + 1
    );

    // A second run against the live server makes no request.
    let live = embedder(&url);
    let second = CachedEmbedder::new(Arc::clone(&live), cache(&path, CacheMode::ReadWrite));
    assert_eq!(pollster::block_on(second.embed(&texts)).unwrap(), vectors);
    assert_eq!(
        pollster::block_on(second.embed_query("when does the lantern burn?")).unwrap(),
        query
    );
    assert_eq!(
        live.http_stats().requests,
        0,
        "the second run makes no request"
    );
    assert_eq!(second.dimension(), dimension, "learned from the cache");
    drop(second);

    // Replay: the inner embedder is never asked (the entries are keyed by its name, which
    // holds the base URL, so the URL stays; the fake-server tests in tests/providers.rs
    // replay with their server gone).
    let gone = embedder(&url);
    let replay = CachedEmbedder::new(Arc::clone(&gone), cache(&path, CacheMode::Replay));
    assert_eq!(pollster::block_on(replay.embed(&texts)).unwrap(), vectors);
    let err = pollster::block_on(replay.embed(&["never recorded".to_owned()]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("replay") && err.contains("never recorded"),
        "an unrecorded text is an error naming it: {err}"
    );
    assert_eq!(gone.http_stats().requests, 0);
}

fn bundled(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The README's providers example (chunker, embedder on a local server, cache from the
/// environment) evaluated on the bundled dataset, then replayed from the file to the same
/// figures without a request.
#[test]
fn llama_server_readme_pipeline_records_then_replays() {
    let Some(url) = server("RAG_EVAL_EMBED_URL") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let golden = dir.path().join("golden/rag-eval-cache.sqlite");
    std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
    let corpus =
        Corpus::from_folder(bundled("examples/data/corpus").to_str().unwrap(), None).unwrap();
    let AnyDataset::Token(questions) =
        rag_eval::dataset::load(bundled("examples/data/questions.jsonl").to_str().unwrap())
            .unwrap()
    else {
        panic!("the bundled dataset is token-level")
    };
    let evaluation = TokenLevelEvaluation::new(corpus, questions).unwrap();
    let metrics = token_level_metrics(SpanMode::Standard, None);

    let run = |url: &str, cache: Arc<Cache>| {
        let live = embedder(url);
        let pipeline = Pipeline::new(
            RecursiveCharacterChunker::new(400, 0),
            CachedEmbedder::new(Arc::clone(&live), cache),
        );
        let started = Instant::now();
        let result = evaluation.run_blocking(&pipeline, 5, &metrics).unwrap();
        (result, live.http_stats().requests, started.elapsed())
    };
    let recording = Arc::new(Cache::from_env_or(golden.to_str().unwrap()).unwrap());
    assert_eq!(recording.mode(), CacheMode::ReadWrite);
    let (recorded, requests, took) = run(&url, Arc::clone(&recording));
    recording.checkpoint().unwrap();
    drop(recording);
    let recall = recorded.scores.metrics.get("span_recall@5").unwrap();
    assert!(requests > 0);
    assert!((0.0..=1.0).contains(&recall));
    eprintln!("recorded: span_recall@5 {recall:.3} in {requests} requests, {took:?}");

    let (replayed, requests, took) = run(
        &url,
        Arc::new(Cache::open(golden.to_str().unwrap(), CacheMode::Replay).unwrap()),
    );
    assert_eq!(requests, 0);
    assert_eq!(replayed.scores.metrics, recorded.scores.metrics);
    eprintln!("replayed: the same figures in {took:?}, no request");
}

/// `rag-eval generate` at its default concurrency against a one-slot server: requests queue,
/// the server is slow but alive, and no request is sent twice.
#[test]
fn llama_server_generate_at_default_concurrency_retries_nothing() {
    let Some(url) = server("RAG_EVAL_LLM_URL") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("real.jsonl");
    let started = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["-v", "generate", "token", "--corpus"])
        .arg(bundled("examples/data/corpus"))
        .args([
            "--glob",
            "{glossary,changelog,overview,troubleshooting}.md",
            "-o",
        ])
        .arg(&out)
        .args(["--queries-per-doc", "2", "--model", &model()])
        .args(["--base-url", &url, "--temperature", "0"])
        .args(["--api-key-env", "RAG_EVAL_NO_KEY"])
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    eprintln!("{err}");
    // A 135M-parameter model often asks questions whose excerpts cannot be found in the
    // document; a run that keeps none ends with exit 1 and says so. What this test is about is
    // the transport: every request answered once, none retried.
    let kept_none = err.contains("no rows were generated: every question was dropped");
    assert!(
        o.status.code() == Some(0) || (o.status.code() == Some(1) && kept_none),
        "{err}"
    );
    assert!(err.contains(" 0 retried requests"), "{err}");
    assert!(!err.contains("retrying"), "{err}");
    eprintln!("4 documents at the default concurrency: {took:?}");
    if kept_none {
        eprintln!("notice: the model's questions were all dropped; no rows to validate");
        return;
    }

    let v = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["dataset", "validate", "--corpus"])
        .arg(bundled("examples/data/corpus"))
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        v.status.code(),
        Some(0),
        "the dataset validates: {}",
        String::from_utf8_lossy(&v.stderr)
    );
}
