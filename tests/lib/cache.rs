//! Several processes using one cache file at once, as test binaries under nextest do: every
//! write lands, every read is either a miss or the right value, and nobody gets an error.
//!
//! The test starts copies of this test binary as workers (the ignored test `worker`, told its
//! number and the file through the environment), releases them together and reads the file
//! itself while they write. Run alone
//! (`cargo test --features cache --test lib cache::worker -- --ignored`), `worker` does one
//! worker's part on a file of its own.
//!
//! With `openai`, the keys of cached OpenAI-compatible clients: recorded against a local
//! server on one port, replayed against another port without a request, and caches recorded
//! with the keys of before (the base URL in the key) still replayed.
#![cfg(feature = "cache")]

#[cfg(feature = "openai")]
use crate::support;

use rag_eval::cache::{Cache, CacheMode, CachedEmbedder};
use rag_eval::embed::{Embedder, HashingEmbedder};
use rag_eval::llm::TokenUsage;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WORKER_ENV: &str = "RAG_EVAL_CACHE_TEST_WORKER";
const GO_ENV: &str = "RAG_EVAL_CACHE_TEST_GO";
const WORKERS: usize = 4;
/// Rounds per worker; each writes `PER_ROUND` texts of its own and `PER_ROUND` shared ones
/// through `CachedEmbedder`, one text through `put_embedding` and one response.
const ROUNDS: usize = 60;
const PER_ROUND: usize = 5;

fn embedder() -> HashingEmbedder {
    HashingEmbedder::new(16, 1)
}

fn own_text(worker: usize, round: usize, j: usize) -> String {
    format!("worker {worker} round {round} text {j}")
}

fn shared_text(round: usize, j: usize) -> String {
    format!("shared round {round} text {j}")
}

fn single_text(worker: usize, round: usize) -> String {
    format!("single {worker} {round}")
}

fn prompt(worker: usize, round: usize) -> serde_json::Value {
    json!([{"role": "user", "content": format!("question {round} from {worker}")}])
}

fn answer(worker: usize, round: usize) -> serde_json::Value {
    json!({"content": format!("answer {round} for {worker}")})
}

/// One worker's writes and reads; returns how many entries of other workers it saw.
fn work(worker: usize, cache: Arc<Cache>) -> usize {
    let e = CachedEmbedder::new(embedder(), Arc::clone(&cache));
    let reference = embedder();
    let params = json!({"temperature": 0});
    let mut seen_others = 0;
    for round in 0..ROUNDS {
        let mut texts: Vec<String> = (0..PER_ROUND).map(|j| own_text(worker, round, j)).collect();
        texts.extend((0..PER_ROUND).map(|j| shared_text(round, j)));
        let vectors = pollster::block_on(e.embed(&texts)).expect("embed through the cache");
        for (t, v) in texts.iter().zip(&vectors) {
            assert_eq!(*v, reference.embed_one(t), "{t}");
        }
        let single = single_text(worker, round);
        cache
            .put_embedding(
                "direct",
                "m",
                &json!({}),
                &single,
                &reference.embed_one(&single),
            )
            .expect("put_embedding");
        cache
            .put_response(
                "chat",
                "m",
                &params,
                &prompt(worker, round),
                &answer(worker, round),
                Some(TokenUsage {
                    prompt_tokens: 10,
                    completion_tokens: round as u64,
                }),
            )
            .expect("put_response");
        // Whatever the others have written so far must read back exactly.
        for other in (0..WORKERS).filter(|&o| o != worker) {
            let t = own_text(other, round, 0);
            let found = pollster::block_on(e.embed_query(&format!("probe {t}")));
            assert!(found.is_ok(), "{found:?}");
            if let Some(r) = cache
                .get_response("chat", "m", &params, &prompt(other, round))
                .expect("get_response")
            {
                assert_eq!(r.response, answer(other, round));
                seen_others += 1;
            }
            let single = single_text(other, round);
            if let Some(v) = cache
                .get_embedding("direct", "m", &json!({}), &single)
                .expect("get_embedding")
            {
                assert_eq!(v, reference.embed_one(&single));
                seen_others += 1;
            }
        }
    }
    // Everything this worker wrote is there.
    for round in 0..ROUNDS {
        let r = cache
            .get_response("chat", "m", &params, &prompt(worker, round))
            .expect("get_response")
            .expect("own response");
        assert_eq!(r.response, answer(worker, round));
    }
    seen_others
}

#[test]
#[ignore = "a worker process of `processes_share_one_cache_file_without_losing_writes`"]
fn worker() {
    let Some(index) = std::env::var_os(WORKER_ENV) else {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(
            dir.path().join("solo.sqlite").to_str().unwrap(),
            CacheMode::ReadWrite,
        )
        .unwrap();
        assert_eq!(work(0, Arc::new(cache)), 0, "no other worker");
        return;
    };
    let index: usize = index.to_str().unwrap().parse().unwrap();
    let go = PathBuf::from(std::env::var_os(GO_ENV).unwrap());
    let started = Instant::now();
    while !go.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "never released"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // The file and the mode come from RAG_EVAL_CACHE_PATH and RAG_EVAL_CACHE.
    let cache = Arc::new(Cache::from_env().unwrap());
    assert_eq!(cache.mode(), CacheMode::ReadWrite);
    let seen = work(index, Arc::clone(&cache));
    println!(
        "worker {index}: saw {seen} entries of others while writing; {}",
        cache.stats()
    );
}

fn spawn_worker(index: usize, cache: &Path, go: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["cache::worker", "--exact", "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(WORKER_ENV, index.to_string())
        .env(GO_ENV, go)
        .env("RAG_EVAL_CACHE_PATH", cache)
        .env("RAG_EVAL_CACHE", "rw")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a worker")
}

#[test]
fn processes_share_one_cache_file_without_losing_writes() {
    let dir = tempfile::tempdir().unwrap();
    // The workers create the file together: the schema setup races too.
    let path = dir.path().join("shared.sqlite");
    let go = dir.path().join("go");
    let mut children: Vec<_> = (0..WORKERS).map(|i| spawn_worker(i, &path, &go)).collect();
    std::fs::write(&go, "").unwrap();

    // This process reads while they write, through a connection of its own.
    let reference = embedder();
    let mut reads = 0usize;
    let mut seen = 0usize;
    let mut reader: Option<Cache> = None;
    while children.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        if reader.is_none() && path.exists() {
            // The file may exist before its tables do; opening waits for or creates them.
            reader = Some(Cache::open(path.to_str().unwrap(), CacheMode::ReadWrite).unwrap());
        }
        if let Some(cache) = &reader {
            let texts: Vec<String> = (0..ROUNDS)
                .map(|r| single_text(reads % WORKERS, r))
                .collect();
            let got = cache
                .get_embeddings("direct", "m", &json!({}), &texts)
                .expect("concurrent read");
            for (t, v) in texts.iter().zip(got).filter_map(|(t, v)| v.map(|v| (t, v))) {
                assert_eq!(v, reference.embed_one(t));
                seen += 1;
            }
            reads += 1;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut saw_others = 0;
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "worker {i} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        // The harness prints its own "test worker ... " before the worker's line.
        let tag = format!("worker {i}: ");
        let line = stdout
            .lines()
            .find_map(|l| l.find(&tag).map(|at| &l[at..]))
            .unwrap_or_else(|| panic!("worker {i} did not run its part:\n{stdout}"));
        println!("{line}");
        saw_others += line
            .split_whitespace()
            .nth(3)
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap();
    }
    println!("reader: {reads} batch reads, {seen} entries seen; workers saw {saw_others} of each other's");
    drop(reader);

    // No lost writes: every entry once, with its value.
    let cache = Cache::open(path.to_str().unwrap(), CacheMode::Replay).unwrap();
    let counts = cache.entry_counts().unwrap();
    // Own and shared document texts, the workers' probes of each other (query entries),
    // and the direct entries.
    let documents = WORKERS * ROUNDS * PER_ROUND + ROUNDS * PER_ROUND;
    let probes = WORKERS * ROUNDS;
    let direct = WORKERS * ROUNDS;
    assert_eq!(counts.embeddings as usize, documents + probes + direct);
    assert_eq!(counts.responses as usize, WORKERS * ROUNDS);
    let e = CachedEmbedder::new(embedder(), Arc::new(cache));
    for w in 0..WORKERS {
        for r in 0..ROUNDS {
            let mut texts: Vec<String> = (0..PER_ROUND).map(|j| own_text(w, r, j)).collect();
            texts.extend((0..PER_ROUND).map(|j| shared_text(r, j)));
            let got = pollster::block_on(e.embed(&texts)).expect("recorded");
            for (t, v) in texts.iter().zip(got) {
                assert_eq!(v, reference.embed_one(t));
            }
            let single = single_text(w, r);
            assert_eq!(
                e.cache()
                    .get_embedding("direct", "m", &json!({}), &single)
                    .unwrap(),
                Some(reference.embed_one(&single))
            );
            let resp = e
                .cache()
                .get_response("chat", "m", &json!({"temperature": 0}), &prompt(w, r))
                .unwrap()
                .unwrap();
            assert_eq!(resp.response, answer(w, r));
            assert_eq!(
                resp.usage,
                Some(TokenUsage {
                    prompt_tokens: 10,
                    completion_tokens: r as u64
                })
            );
        }
    }
}

#[cfg(feature = "openai")]
mod keys {
    use super::support::{Reply, TestServer};
    use rag_eval::cache::{Cache, CacheMode, CachedEmbedder, CachedLlm, EmbeddingEntry};
    use rag_eval::embed::{Embedder, OpenAiEmbedder};
    use rag_eval::http::ApiKey;
    use rag_eval::llm::{
        ChatMessage, ChatRequest, ChatResponse, LlmClient, OpenAiChat, TokenUsage,
    };
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    const DIM: usize = 4;

    fn vector_of(text: &str) -> Vec<f32> {
        let n = text.len() as f32;
        vec![n, n / 2.0, n / 4.0, 1.0]
    }

    /// An OpenAI-compatible server for embeddings and chat, counting the requests it got.
    fn server(requests: Arc<AtomicUsize>) -> TestServer {
        TestServer::start(move |request| {
            requests.fetch_add(1, Ordering::SeqCst);
            let body = request.json().unwrap_or_default();
            match request.path() {
                "/v1/embeddings" => {
                    let data: Vec<_> = body["input"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .enumerate()
                        .map(|(i, t)| json!({"index": i, "embedding": vector_of(t.as_str().unwrap())}))
                        .collect();
                    Reply::json(
                        200,
                        &json!({"data": data, "model": body["model"],
                        "usage": {"prompt_tokens": 3, "total_tokens": 3}}),
                    )
                }
                "/v1/chat/completions" => {
                    let last = body["messages"][0]["content"].as_str().unwrap_or_default();
                    Reply::json(
                        200,
                        &json!({
                            "model": body["model"],
                            "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": last.to_uppercase()}}],
                            "usage": {"prompt_tokens": 5, "completion_tokens": 2}
                        }),
                    )
                }
                _ => Reply::json(404, &json!({"error": {"message": "no such route"}})),
            }
        })
    }

    fn embedder(base: &str) -> OpenAiEmbedder {
        OpenAiEmbedder::builder("local-embed")
            .base_url(base)
            .api_key(ApiKey::new("k"))
            .expected_dimension(DIM)
            .build()
            .unwrap()
    }

    fn chat(base: &str) -> OpenAiChat {
        OpenAiChat::builder("local-chat")
            .base_url(base)
            .api_key(ApiKey::new("k"))
            .build()
            .unwrap()
    }

    fn texts() -> Vec<String> {
        ["a harbour", "the old lighthouse", "tides"]
            .map(String::from)
            .into()
    }

    fn question() -> ChatRequest {
        ChatRequest::new(vec![ChatMessage::user("which port?")]).with_temperature(0.0)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn recorded_on_one_port_replays_on_another_without_a_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite");
        let path = path.to_str().unwrap();
        let (first_count, second_count) =
            (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let first = server(Arc::clone(&first_count));
        let second = server(Arc::clone(&second_count));
        let (one, two) = (first.url("/v1"), second.url("/v1"));
        assert_ne!(one, two, "two ports");

        let record = Arc::new(Cache::open(path, CacheMode::ReadWrite).unwrap());
        let e = CachedEmbedder::new(embedder(&one), Arc::clone(&record));
        let vectors = e.embed(&texts()).await.unwrap();
        let query = e.embed_query("where is it").await.unwrap();
        let llm = CachedLlm::new(chat(&one), Arc::clone(&record));
        let answer = llm.complete(&question()).await.unwrap();
        assert_eq!(answer.content, "WHICH PORT?");
        assert_eq!(
            first_count.load(Ordering::SeqCst),
            3,
            "recorded from the first server"
        );
        record.checkpoint().unwrap();
        drop((e, llm, record));

        // Read-write, so a miss would call the second server: it gets nothing.
        let again = Arc::new(Cache::open(path, CacheMode::ReadWrite).unwrap());
        let e = CachedEmbedder::new(embedder(&two), Arc::clone(&again));
        assert_eq!(e.embed(&texts()).await.unwrap(), vectors);
        assert_eq!(e.embed_query("where is it").await.unwrap(), query);
        assert_eq!((e.stats().hits, e.stats().misses), (4, 0));
        let llm = CachedLlm::new(chat(&two), Arc::clone(&again));
        assert_eq!(llm.complete(&question()).await.unwrap(), answer);
        assert_eq!(
            second_count.load(Ordering::SeqCst),
            0,
            "zero requests on the other port"
        );
        assert_eq!(first_count.load(Ordering::SeqCst), 3);
        drop((e, llm, again));

        // Replay with both servers gone, at a third address.
        drop((first, second));
        let replay = Arc::new(Cache::open(path, CacheMode::Replay).unwrap());
        let elsewhere = "http://localhost:9/v1";
        let e = CachedEmbedder::new(embedder(elsewhere), Arc::clone(&replay));
        assert_eq!(e.embed(&texts()).await.unwrap(), vectors);
        let llm = CachedLlm::new(chat(elsewhere), Arc::clone(&replay));
        assert_eq!(llm.complete(&question()).await.unwrap(), answer);
        // What defines the output still does: another model is a miss, not a wrong answer.
        let other = OpenAiChat::builder("other-chat")
            .base_url(elsewhere)
            .build()
            .unwrap();
        let miss = CachedLlm::new(other, Arc::clone(&replay))
            .complete(&question())
            .await
            .unwrap_err()
            .to_string();
        assert!(miss.contains("replay"), "{miss}");
    }

    /// A cache recorded before the base URL left the key: entries stored under the whole name
    /// (`openai(model=…,dimensions=…,base=…)`), written here through the cache's own calls with
    /// that name spelled out, as the files recorded then hold them.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn caches_keyed_by_the_whole_name_still_replay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        let path = path.to_str().unwrap();
        let base = "http://127.0.0.1:8080/v1";
        let old = Cache::open(path, CacheMode::ReadWrite).unwrap();
        let texts = texts();
        let vectors: Vec<Vec<f32>> = texts.iter().map(|t| vector_of(t)).collect();
        let entries: Vec<EmbeddingEntry<'_>> = texts
            .iter()
            .zip(&vectors)
            .map(|(text, vector)| EmbeddingEntry {
                text,
                vector,
                tokens: Some(2),
            })
            .collect();
        old.put_embeddings(
            "openai",
            "openai(model=local-embed,base=http://127.0.0.1:8080/v1)",
            &json!({"dimension": DIM, "input": "document"}),
            &entries,
        )
        .unwrap();
        let recorded = ChatResponse {
            content: "RECORDED BEFORE".into(),
            finish_reason: Some("stop".into()),
            usage: TokenUsage {
                prompt_tokens: 5,
                completion_tokens: 2,
            },
            model: "local-chat".into(),
            logprobs: None,
        };
        old.put_response(
            "openai-chat",
            "openai-chat(model=local-chat,base=http://127.0.0.1:8080/v1)",
            &json!({"json_schema": null, "max_tokens": null, "temperature": 0.0}),
            &question().messages,
            &recorded,
            Some(recorded.usage),
        )
        .unwrap();
        old.checkpoint().unwrap();
        drop(old);

        // Replayed against the server they were recorded with: found under the old keys.
        let replay = Arc::new(Cache::open(path, CacheMode::Replay).unwrap());
        let e = CachedEmbedder::new(embedder(base), Arc::clone(&replay));
        assert_eq!(e.embed(&texts).await.unwrap(), vectors);
        assert_eq!(
            (e.stats().hits, e.stats().misses),
            (3, 0),
            "each a hit, once"
        );
        assert_eq!(e.stats().saved_tokens, 6);
        let llm = CachedLlm::new(chat(base), Arc::clone(&replay));
        assert_eq!(llm.complete(&question()).await.unwrap(), recorded);
        // The old keys held the address: elsewhere they are not found.
        let moved = CachedEmbedder::new(embedder("http://127.0.0.1:8081/v1"), Arc::clone(&replay));
        let miss = moved.embed(&texts).await.unwrap_err().to_string();
        assert!(miss.contains("replay"), "{miss}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn token_counts_beyond_what_the_cache_holds_read_the_same_live_and_replayed() {
        let server = TestServer::start(|_| {
            Reply::raw(
                200,
                r#"{"model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "ok"}}],
                    "usage": {"prompt_tokens": 18446744073709551615,
                              "completion_tokens": 9223372036854775808}}"#,
            )
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache.sqlite");
        let path = path.to_str().unwrap();
        let record = Arc::new(Cache::open(path, CacheMode::ReadWrite).unwrap());
        let live = CachedLlm::new(chat(&server.url("/v1")), Arc::clone(&record))
            .complete(&question())
            .await
            .unwrap();
        let most = rag_eval::llm::MAX_TOKENS;
        assert_eq!(
            live.usage,
            TokenUsage {
                prompt_tokens: most,
                completion_tokens: most
            }
        );
        assert_eq!(live.usage.total(), most, "no overflow");
        drop(server);
        let replay = Arc::new(Cache::open(path, CacheMode::Replay).unwrap());
        let again = CachedLlm::new(chat("http://127.0.0.1:1/v1"), replay)
            .complete(&question())
            .await
            .unwrap();
        assert_eq!(again, live);
    }
}
