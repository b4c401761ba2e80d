//! `rag-eval eval` with component specs: an OpenAI-compatible embeddings server (in this
//! process) and a Chroma server, then the same run replayed from the cache with the embeddings
//! server stopped.
//!
//! The Chroma server comes from `RAG_EVAL_CHROMA_URL` (`.ci/run` starts one through
//! `.ci/chroma.sh`); without it the Chroma test prints a notice and passes without checking
//! anything, while the in-memory store test still runs.

use crate::support;

use rag_eval::embed::HashingEmbedder;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use support::{Reply, TestServer};

/// Runs the binary; panics with its stderr unless it succeeds.
fn eval(args: &[&str]) -> (Vec<Value>, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = root.join("examples/data/corpus");
    let dataset = root.join("examples/data/questions.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        // Runs are recorded in tests/cli/runs_cli.rs, never in the crate's own folder.
        .env("RAG_EVAL_RUNS", "off")
        .args([
            "eval",
            "--corpus",
            corpus.to_str().unwrap(),
            "--dataset",
            dataset.to_str().unwrap(),
            "--json",
        ])
        .args(args)
        .env_remove("RAG_EVAL_CACHE")
        .env_remove("RAG_EVAL_CACHE_PATH")
        .env("TEST_EMBED_KEY", "sk-test-secret")
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{args:?} failed: {stderr}");
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, stderr)
}

/// An OpenAI-compatible `/v1/embeddings` answering with the hashing embedder's vectors, so its
/// figures must be the offline `dense` retriever's; counts the requests it answers.
fn embeddings_server(requests: Arc<AtomicUsize>) -> TestServer {
    TestServer::start(move |request| {
        if request.method != "POST" || request.path() != "/v1/embeddings" {
            return Reply::json(404, &json!({"error": {"message": "not found"}}));
        }
        if request.header("authorization") != Some("Bearer sk-test-secret") {
            return Reply::json(401, &json!({"error": {"message": "bad key"}}));
        }
        let body = request.json().unwrap_or_default();
        let texts: Vec<String> = serde_json::from_value(body["input"].clone()).unwrap_or_default();
        requests.fetch_add(1, Ordering::SeqCst);
        let e = HashingEmbedder::default();
        let data: Vec<Value> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": e.embed_one(t)}))
            .collect();
        Reply::json(
            200,
            &json!({"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
        )
    })
}

fn figures(v: &Value) -> Vec<(String, f64)> {
    ["metrics", "std"]
        .iter()
        .flat_map(|part| {
            v[part]
                .as_object()
                .unwrap()
                .iter()
                .map(move |(k, x)| (format!("{part}.{k}"), x.as_f64().unwrap()))
        })
        .collect()
}

fn assert_close(got: &Value, want: &Value, tolerance: f64, what: &str) {
    let (g, w) = (figures(got), figures(want));
    assert_eq!(
        g.iter().map(|x| &x.0).collect::<Vec<_>>(),
        w.iter().map(|x| &x.0).collect::<Vec<_>>()
    );
    for ((name, a), (_, b)) in g.iter().zip(&w) {
        assert!((a - b).abs() <= tolerance, "{what}: {name} {a} != {b}");
    }
}

const CHUNKER: &str = "recursive:size=400,overlap=0";

/// Records through the embeddings server into a cache, checks the figures against the offline
/// dense retriever, stops the server and replays.
fn record_then_replay(store: &str, replay_store: &str, tolerance: f64) {
    let (offline, _) = eval(&["--chunker", CHUNKER, "--retriever", "dense"]);
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite");
    let requests = Arc::new(AtomicUsize::new(0));
    let server = embeddings_server(requests.clone());
    let base = server.url("/v1");
    let retriever = |store: &str| {
        format!("dense:embedder=openai:model=test-embed,expected_dimension=384,base_url={base},api_key_env=TEST_EMBED_KEY,store={store}")
    };
    let (recorded, stderr) = eval(&[
        "--chunker",
        CHUNKER,
        "--retriever",
        &retriever(store),
        "--cache",
        &format!("rw:path={}", cache.display()),
    ]);
    assert!(requests.load(Ordering::SeqCst) > 0);
    assert!(stderr.contains("miss"), "{stderr}");
    assert_close(&recorded[0], &offline[0], tolerance, "openai vs hashing");
    let config = recorded[0]["config"].to_string();
    assert!(!config.contains("sk-test-secret"), "{config}");

    drop(server);
    let before = requests.load(Ordering::SeqCst);
    let (replayed, stderr) = eval(&[
        "--chunker",
        CHUNKER,
        "--retriever",
        &retriever(replay_store),
        "--cache",
        &format!("replay:path={}", cache.display()),
    ]);
    assert_eq!(requests.load(Ordering::SeqCst), before);
    assert!(stderr.contains(" 0 misses"), "{stderr}");
    assert_close(&replayed[0], &recorded[0], 0.0, "replay vs record");
}

#[test]
fn openai_embeddings_then_replay_offline() {
    record_then_replay("memory", "memory", 0.0);
}

#[test]
fn openai_embeddings_into_chroma_then_replay_offline() {
    let url = match std::env::var("RAG_EVAL_CHROMA_URL") {
        Ok(url) if !url.trim().is_empty() => url.trim().to_owned(),
        _ => {
            eprintln!(
                "skipped: RAG_EVAL_CHROMA_URL is unset (`bash .ci/run` starts a Chroma server and sets it)"
            );
            return;
        }
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let collection = |label: &str| format!("rag-eval-specs-{label}-{}-{nanos}", std::process::id());
    let (first, second) = (collection("record"), collection("replay"));
    let store = |c: &str| format!("chroma:url={url},collection={c}");
    struct Cleanup(Vec<rag_eval::store::ChromaStore>);
    impl Drop for Cleanup {
        fn drop(&mut self) {
            for s in &self.0 {
                if let Err(e) = pollster::block_on(s.delete_collection()) {
                    eprintln!("could not delete collection `{}`: {e}", s.collection());
                }
            }
        }
    }
    let _cleanup = Cleanup(
        [&first, &second]
            .iter()
            .map(|c| rag_eval::store::ChromaStore::new(url.as_str(), c.as_str()).unwrap())
            .collect(),
    );
    // Chroma's index is approximate and rounds otherwise than the in-memory store: the figures
    // agree with the offline run to rounding, and the replay with the recording exactly.
    record_then_replay(&store(&first), &store(&second), 1e-6);
}
