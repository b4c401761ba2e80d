//! The OpenAI and Cohere clients against a local server that answers like those services and
//! fails like them: 500s, 429s with `Retry-After`, answers slower than the client's timeout,
//! bodies cut short, and invalid JSON; and against the hostile server of test support, which
//! asks for waits too long to represent, sends bodies without end or far too large, and leaves
//! requests unanswered while answering its health check.

use crate::support;

use rag_eval::chunk::{PositionAwareChunk, PositionAwareChunkId, RetrievedChunk};
use rag_eval::embed::{BatchingEmbedder, Embedder, OpenAiEmbedder};
use rag_eval::http::{ApiKey, HttpClient, HttpConfig};
use rag_eval::llm::{ChatMessage, ChatRequest, LlmClient, OpenAiChat};
use rag_eval::rerank::{CohereReranker, RerankUsage, Reranker};
use rag_eval::Error;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::hostile::{HostileServer, Hostility};
use support::{Reply, Request, TestServer};

const DIM: usize = 8;

/// The vector the fake service gives `text`: eight bytes of an FNV-1a hash, as multiples of
/// 1/256 (exact in binary, so they survive JSON unchanged).
fn vector_of(text: &str) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (0..DIM)
        .map(|i| (((h >> (8 * i)) & 0xff) as f32 - 128.0) / 256.0)
        .collect()
}

fn tokens_of(text: &str) -> u64 {
    text.split_whitespace().count().max(1) as u64
}

/// What the fake embeddings service saw.
#[derive(Default)]
struct Ledger {
    /// Texts per complete, successful answer.
    embedded: HashMap<String, usize>,
    requests: usize,
    faults: HashMap<&'static str, usize>,
    prompt_tokens: u64,
}

/// An OpenAI-style embeddings answer for `texts`, items in reverse order (answers need not
/// follow input order; `index` says where each belongs).
fn embeddings_answer(model: &str, texts: &[String]) -> Value {
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": vector_of(t)}))
        .collect();
    let tokens: u64 = texts.iter().map(|t| tokens_of(t)).sum();
    json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
    })
}

fn error_body(message: &str, kind: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}

/// Checks an embeddings request like the service would; `Err` is the 4xx to send.
fn parse_embeddings_request(
    request: &Request,
    auth: (&str, &str),
    model: &str,
) -> Result<Vec<String>, Reply> {
    if request.header(auth.0) != Some(auth.1) {
        return Err(Reply::json(
            401,
            &error_body("Incorrect API key provided", "invalid_request_error"),
        ));
    }
    let body = request
        .json()
        .ok_or_else(|| Reply::json(400, &error_body("invalid JSON", "invalid_request_error")))?;
    if body["model"] != model {
        return Err(Reply::json(
            404,
            &error_body("model not found", "invalid_request_error"),
        ));
    }
    let texts: Option<Vec<String>> = body["input"].as_array().and_then(|a| {
        a.iter()
            .map(|t| t.as_str().map(str::to_owned))
            .collect::<Option<Vec<String>>>()
    });
    texts.ok_or_else(|| {
        Reply::json(
            400,
            &error_body("'input' must be a list of strings", "invalid_request_error"),
        )
    })
}

const KEY: &str = "sk-test-9f8e7d6c5b4a39281706";

/// Request `n` (from 0) of the faulty service misbehaves in a fixed pattern of period 20:
/// two 500s (10 %), one 429, one answer slower than the client waits, one body cut short,
/// one body that ends mid-JSON (cut short, so retried); the other 14 succeed.
fn fault_for(n: usize) -> Option<&'static str> {
    match n % 20 {
        1 | 11 => Some("500"),
        4 => Some("429"),
        7 => Some("slow"),
        14 => Some("truncated"),
        17 => Some("invalid json"),
        _ => None,
    }
}

fn faulty_embeddings_server(ledger: Arc<Mutex<Ledger>>) -> TestServer {
    TestServer::start(move |request| {
        if request.method != "POST" || request.path() != "/v1/embeddings" {
            return Reply::json(404, &error_body("no such route", "invalid_request_error"));
        }
        let texts = match parse_embeddings_request(
            &request,
            ("authorization", &format!("Bearer {KEY}")),
            "test-embed",
        ) {
            Ok(texts) => texts,
            Err(reply) => return reply,
        };
        let mut l = ledger.lock().unwrap();
        let n = l.requests;
        l.requests += 1;
        let fault = fault_for(n);
        if let Some(kind) = fault {
            *l.faults.entry(kind).or_default() += 1;
        }
        let answer = embeddings_answer("test-embed", &texts);
        match fault {
            Some("500") => Reply::json(500, &error_body("The server had an error", "server_error")),
            Some("429") => Reply::json(429, &error_body("Rate limit reached", "requests"))
                .with_header("retry-after-ms", "25"),
            Some("slow") => Reply::json(200, &answer).delayed(Duration::from_millis(1500)),
            Some("truncated") => Reply::Truncated {
                body: answer.to_string().into_bytes(),
            },
            Some(_) => Reply::raw(200, format!("{{\"object\": \"list\", \"data\": [{}", "{")),
            None => {
                let ledger = Arc::clone(&ledger);
                Reply::json(200, &answer).on_sent(move || {
                    let mut l = ledger.lock().unwrap();
                    for t in &texts {
                        *l.embedded.entry(t.clone()).or_default() += 1;
                    }
                    l.prompt_tokens += texts.iter().map(|t| tokens_of(t)).sum::<u64>();
                })
            }
        }
    })
}

/// Fast settings for tests: short timeout, millisecond backoff.
fn quick(config: HttpConfig) -> HttpConfig {
    config
        .with_timeout(Duration::from_millis(300))
        .with_backoff(Duration::from_millis(1), Duration::from_millis(20))
}

/// 2,000 texts, 1,400 of them distinct, of varied length.
fn corpus() -> Vec<String> {
    let words = [
        "river", "granite", "lantern", "orbit", "meadow", "cipher", "harbor", "quartz",
    ];
    let distinct: Vec<String> = (0..1400)
        .map(|i| {
            let n = 1 + (i * 7) % 23;
            let body: Vec<&str> = (0..n).map(|j| words[(i + j * 3) % words.len()]).collect();
            format!("passage {i}: {}", body.join(" "))
        })
        .collect();
    let mut texts = distinct.clone();
    texts.extend((0..600).map(|i| distinct[(i * 37) % 1400].clone()));
    texts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_texts_through_a_faulty_server_come_back_correct_and_embedded_once() {
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let server = faulty_embeddings_server(Arc::clone(&ledger));
    let openai = OpenAiEmbedder::builder("test-embed")
        .base_url(server.url("/v1"))
        .api_key(ApiKey::new(KEY))
        .expected_dimension(DIM)
        .max_inputs(20)
        .max_chars(1_500)
        .http(|c| quick(c).with_max_retries(8).with_concurrency(4))
        .build()
        .unwrap();
    let embedder = BatchingEmbedder::new(openai).with_batch_size(100);
    let texts = corpus();
    let started = Instant::now();
    let vectors = embedder.embed(&texts).await.unwrap();
    let elapsed = started.elapsed();

    assert_eq!(vectors.len(), texts.len());
    for (i, (text, vector)) in texts.iter().zip(&vectors).enumerate() {
        assert_eq!(vector, &vector_of(text), "vector {i} ({text:?})");
    }
    let distinct: std::collections::HashSet<&String> = texts.iter().collect();
    assert_eq!(distinct.len(), 1400);
    let l = ledger.lock().unwrap();
    assert_eq!(
        l.embedded.len(),
        distinct.len(),
        "every distinct text embedded"
    );
    let twice: Vec<(&String, &usize)> = l.embedded.iter().filter(|(_, &n)| n > 1).collect();
    assert!(twice.is_empty(), "embedded more than once: {twice:?}");
    // The faults happened, in the planned proportions.
    for kind in ["500", "429", "slow", "truncated", "invalid json"] {
        assert!(
            l.faults.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} fault"
        );
    }
    let faults: usize = l.faults.values().sum();
    let successes = l.requests - faults;
    let fives = l.faults["500"] as f64 / l.requests as f64;
    assert!(
        (0.08..=0.12).contains(&fives),
        "500s were {fives:.3} of requests"
    );

    let openai = embedder.inner();
    let http = openai.http_stats();
    assert_eq!(http.requests as usize, l.requests);
    assert_eq!(http.retries as usize, faults, "one retry per fault");
    assert_eq!(http.failures, 0);
    let usage = openai.usage();
    assert_eq!(usage.requests as usize, successes);
    assert_eq!(usage.texts, 1400);
    assert_eq!(usage.prompt_tokens, l.prompt_tokens);
    let stats = embedder.stats();
    assert_eq!((stats.texts_requested, stats.texts_embedded), (2000, 1400));
    eprintln!(
        "2000 texts (1400 distinct): {} requests, {} faults ({:?}), {} retries, {:.2?}",
        l.requests, faults, l.faults, http.retries, elapsed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_waited_for_and_a_too_long_one_fails_at_once() {
    let calls = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let seen = Arc::clone(&calls);
    let server = TestServer::start(move |request| {
        let texts = match parse_embeddings_request(&request, ("authorization", "Bearer k"), "m") {
            Ok(t) => t,
            Err(reply) => return reply,
        };
        let mut calls = seen.lock().unwrap();
        calls.push(Instant::now());
        match (texts[0].as_str(), calls.len()) {
            ("patient", 1) => Reply::json(429, &error_body("slow down", "requests"))
                .with_header("retry-after", "1"),
            ("impatient", _) => Reply::json(429, &error_body("come back later", "requests"))
                .with_header("retry-after", "600"),
            _ => Reply::json(200, &embeddings_answer("m", &texts)),
        }
    });
    let build = || {
        OpenAiEmbedder::builder("m")
            .base_url(server.url("/v1"))
            .api_key(ApiKey::new("k"))
            .http(|c| {
                quick(c)
                    .with_timeout(Duration::from_secs(5))
                    .with_max_retry_after(Duration::from_secs(10))
            })
            .build()
            .unwrap()
    };
    let e = build();
    let started = Instant::now();
    let v = e.embed(&["patient".to_owned()]).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(v, [vector_of("patient")]);
    let times = calls.lock().unwrap().clone();
    assert_eq!(times.len(), 2);
    let gap = times[1] - times[0];
    // The backoff alone would be at most 1 ms.
    assert!(gap >= Duration::from_millis(1000), "retried after {gap:?}");
    assert!(gap < Duration::from_millis(2500), "retried after {gap:?}");
    eprintln!("Retry-After: 1 -> retried after {gap:?} (call took {waited:?})");

    let e = build();
    let started = Instant::now();
    let err = e.embed(&["impatient".to_owned()]).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    let text = err.to_string();
    assert!(text.contains("429 Too Many Requests"), "{text}");
    assert!(
        text.contains("retry after 600s, more than the 10s allowed"),
        "{text}"
    );
    assert_eq!(e.http_stats().requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_error_names_status_body_and_endpoint_but_never_the_key() {
    // The service echoes the credentials it got, as some error pages do.
    let server = TestServer::start(|request| {
        let auth = request.header("authorization").unwrap_or("none").to_owned();
        Reply::json(
            503,
            &error_body(
                &format!("upstream overloaded; request carried {auth}"),
                "server_error",
            ),
        )
    });
    // The key comes from the environment, as in production; the name is this test's own.
    let var = "RAG_EVAL_PROVIDERS_TEST_KEY";
    std::env::set_var(var, KEY);
    let e = OpenAiEmbedder::builder("test-embed")
        .base_url(server.url("/v1"))
        .api_key_env(var)
        .http(|c| quick(c).with_max_retries(3))
        .build()
        .unwrap();
    let err = e.embed(&["a".to_owned()]).await.unwrap_err();
    let endpoint = format!("POST {}", server.url("/v1/embeddings"));
    match &err {
        Error::Http {
            endpoint: e,
            status,
            message,
        } => {
            assert_eq!(e, &endpoint);
            assert_eq!(*status, Some(503));
            assert!(message.contains("503 Service Unavailable"), "{message}");
            assert!(message.contains("upstream overloaded"), "{message}");
            assert!(message.contains("gave up after 4 attempts"), "{message}");
        }
        other => panic!("not an HTTP error: {other}"),
    }
    let shown = format!("{err} | {err:?} | {e:?} | {}", e.name());
    assert!(shown.contains(&endpoint), "{shown}");
    assert!(!shown.contains(KEY), "the key leaked: {shown}");
    assert!(shown.contains("Bearer <redacted>"), "{shown}");
    assert_eq!(e.http_stats().requests, 4);
    assert_eq!(e.http_stats().failures, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_error_is_not_retried() {
    let server = TestServer::start(|request| {
        match parse_embeddings_request(&request, ("authorization", "Bearer right"), "m") {
            Ok(texts) => Reply::json(200, &embeddings_answer("m", &texts)),
            Err(reply) => reply,
        }
    });
    let e = OpenAiEmbedder::builder("m")
        .base_url(server.url("/v1"))
        .api_key(ApiKey::new("wrong"))
        .http(quick)
        .build()
        .unwrap();
    let err = e.embed(&["a".to_owned()]).await.unwrap_err();
    assert!(
        err.to_string().contains("401 Unauthorized: {\"error\""),
        "{err}"
    );
    assert_eq!(e.http_stats().requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azure_deployments_use_their_path_and_api_key_header() {
    let server = TestServer::start(|request| {
        if request.target != "/openai/deployments/emb/embeddings?api-version=2024-02-01" {
            return Reply::json(404, &error_body("Resource not found", "not_found"));
        }
        if request.header("authorization").is_some() {
            return Reply::json(400, &error_body("use api-key", "invalid_request_error"));
        }
        match parse_embeddings_request(
            &request,
            ("api-key", "azure-secret"),
            "text-embedding-3-small",
        ) {
            Ok(texts) => Reply::json(200, &embeddings_answer("text-embedding-3-small", &texts)),
            Err(reply) => reply,
        }
    });
    let e = OpenAiEmbedder::builder("text-embedding-3-small")
        .azure(server.url(""), "emb", "2024-02-01")
        .api_key(ApiKey::new("azure-secret"))
        .expected_dimension(DIM)
        .http(quick)
        .build()
        .unwrap();
    // The table's 1536 for this model must not win over the declared dimension.
    assert_eq!(e.dimension(), DIM);
    let texts = vec!["one".to_owned(), "two".to_owned()];
    assert_eq!(
        e.embed(&texts).await.unwrap(),
        [vector_of("one"), vector_of("two")]
    );
}

#[test]
fn requests_run_without_an_async_runtime_of_the_callers() {
    let server = TestServer::start(|request| {
        match parse_embeddings_request(&request, ("authorization", "Bearer k"), "m") {
            Ok(texts) => Reply::json(200, &embeddings_answer("m", &texts)),
            Err(reply) => reply,
        }
    });
    let e = OpenAiEmbedder::builder("m")
        .base_url(server.url("/v1"))
        .api_key(ApiKey::new("k"))
        .http(quick)
        .build()
        .unwrap();
    assert_eq!(e.dimension(), 0);
    assert_eq!(pollster::block_on(e.detect_dimension()).unwrap(), DIM);
    let v = pollster::block_on(e.embed_query("where is the harbor?")).unwrap();
    assert_eq!(v, vector_of("where is the harbor?"));
    assert_eq!(e.dimension(), DIM);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_requests_are_in_flight_than_the_concurrency_allows() {
    let server = TestServer::start(|request| {
        match parse_embeddings_request(&request, ("authorization", "Bearer k"), "m") {
            Ok(texts) => {
                Reply::json(200, &embeddings_answer("m", &texts)).delayed(Duration::from_millis(40))
            }
            Err(reply) => reply,
        }
    });
    let e = OpenAiEmbedder::builder("m")
        .base_url(server.url("/v1"))
        .api_key(ApiKey::new("k"))
        .max_inputs(2)
        .http(|c| quick(c).with_concurrency(3))
        .build()
        .unwrap();
    let texts: Vec<String> = (0..40).map(|i| format!("text {i}")).collect();
    let v = e.embed(&texts).await.unwrap();
    assert_eq!(v[39], vector_of("text 39"));
    assert_eq!(e.usage().requests, 20);
    assert_eq!(server.max_in_flight(), 3);
}

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Verdict {
    question: String,
    words: usize,
    relevant: bool,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_with_a_json_schema_round_trips() {
    let schema = json!({
        "type": "object",
        "properties": {
            "question": {"type": "string"},
            "words": {"type": "integer"},
            "relevant": {"type": "boolean"}
        },
        "required": ["question", "words", "relevant"],
        "additionalProperties": false
    });
    let expected_schema = schema.clone();
    let server = TestServer::start(move |request| {
        if request.path() != "/v1/chat/completions"
            || request.header("authorization") != Some("Bearer chat-key")
        {
            return Reply::json(404, &error_body("no such route", "invalid_request_error"));
        }
        let body = request.json().unwrap_or_default();
        let format = &body["response_format"];
        let ok = format["type"] == "json_schema"
            && format["json_schema"]["name"] == "verdict"
            && format["json_schema"]["strict"] == true
            && format["json_schema"]["schema"] == expected_schema
            && body["temperature"] == 0.0
            && body["max_tokens"] == 64
            && body["messages"][0]["role"] == "system";
        if !ok {
            return Reply::json(
                400,
                &error_body("unexpected request", "invalid_request_error"),
            );
        }
        if body["model"] == "refuser" {
            return Reply::json(
                200,
                &json!({
                    "model": "refuser",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": null,
                                             "refusal": "I can't help with that."}}],
                }),
            );
        }
        let question = body["messages"][1]["content"].as_str().unwrap_or_default();
        let content = json!({
            "question": question,
            "words": question.split_whitespace().count(),
            "relevant": question.contains("harbor"),
        })
        .to_string();
        Reply::json(
            200,
            &json!({
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content, "refusal": null}}],
                "usage": {"prompt_tokens": 31, "completion_tokens": 12, "total_tokens": 43}
            }),
        )
    });
    let chat = OpenAiChat::builder("test-chat")
        .base_url(server.url("/v1"))
        .api_key(ApiKey::new("chat-key"))
        .http(quick)
        .build()
        .unwrap();
    let request = ChatRequest::new(vec![
        ChatMessage::system("Judge the question."),
        ChatMessage::user("where is the old harbor"),
    ])
    .with_temperature(0.0)
    .with_max_tokens(64)
    .with_json_schema("verdict", schema);
    let answer = chat.complete(&request).await.unwrap();
    assert_eq!(
        answer.json::<Verdict>().unwrap(),
        Verdict {
            question: "where is the old harbor".into(),
            words: 5,
            relevant: true
        }
    );
    assert_eq!(answer.finish_reason.as_deref(), Some("stop"));
    assert_eq!(answer.model, "test-chat");
    assert_eq!(
        (answer.usage.prompt_tokens, answer.usage.completion_tokens),
        (31, 12)
    );
    // A boxed client is a client too; usage adds up.
    let boxed: Box<dyn LlmClient> = Box::new(chat);
    boxed.complete(&request).await.unwrap();
    let err = boxed
        .complete(&request.clone().with_model("refuser"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the model refused: I can't help with that."),
        "{err}"
    );
}

/// Cohere-style relevance: the share of query words found in the document, rounded to
/// 1/64 so that equal shares tie exactly.
fn relevance(query: &str, document: &str) -> f64 {
    let words: Vec<&str> = query.split_whitespace().collect();
    let doc = document.to_lowercase();
    let hits = words
        .iter()
        .filter(|w| doc.contains(&w.to_lowercase()))
        .count();
    (hits as f64 / words.len() as f64 * 64.0).round() / 64.0
}

fn rerank_server(requests: Arc<Mutex<Vec<Value>>>) -> TestServer {
    TestServer::start(move |request| {
        if request.path() != "/v2/rerank"
            || request.header("authorization") != Some("Bearer co-key")
        {
            return Reply::json(401, &json!({"message": "invalid api token"}));
        }
        let Some(body) = request.json() else {
            return Reply::json(400, &json!({"message": "invalid json"}));
        };
        requests.lock().unwrap().push(body.clone());
        let query = body["query"].as_str().unwrap_or_default();
        let docs: Vec<&str> = body["documents"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut results: Vec<(usize, f64)> = docs
            .iter()
            .enumerate()
            .map(|(i, d)| (i, relevance(query, d)))
            .collect();
        results.sort_by(|a, b| b.1.total_cmp(&a.1));
        let top_n = body["top_n"].as_u64().unwrap_or(docs.len() as u64) as usize;
        results.truncate(top_n);
        Reply::json(
            200,
            &json!({
                "id": "rr-1",
                "results": results.iter().map(|(i, s)| json!({"index": i, "relevance_score": s})).collect::<Vec<_>>(),
                "meta": {"api_version": {"version": "2"}, "billed_units": {"search_units": 1}}
            }),
        )
    })
}

fn candidates() -> Vec<RetrievedChunk> {
    let texts = [
        "The harbor lights guide ships at night.",
        "Granite cliffs rise above the meadow.",
        "Old harbor maps show the river mouth.",
        "A lantern hangs by the harbor gate.",
        "Quartz forms in granite.",
        "Old harbor maps show the river mouth.",
        "Orbit of the moon.",
        "The river meets the harbor near old maps.",
    ];
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            RetrievedChunk::new(
                PositionAwareChunk::new("doc", i * 100, i * 100 + t.len(), *t),
                1.0 / (i + 1) as f32,
            )
        })
        .collect()
}

/// The expected ranking: by relevance, then by chunk id.
fn expected(query: &str, top_k: usize) -> Vec<(PositionAwareChunkId, f32)> {
    let mut all: Vec<(PositionAwareChunkId, f32)> = candidates()
        .into_iter()
        .map(|c| (c.chunk.id, relevance(query, &c.chunk.content) as f32))
        .collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    all.truncate(top_k);
    all
}

fn ranked(chunks: Vec<RetrievedChunk>) -> Vec<(PositionAwareChunkId, f32)> {
    chunks.into_iter().map(|c| (c.chunk.id, c.score)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cohere_rerank_orders_by_score_with_ties_by_chunk_id() {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let server = rerank_server(Arc::clone(&requests));
    let query = "old harbor river maps";
    let reranker = CohereReranker::builder("rerank-test")
        .base_url(server.url(""))
        .api_key(ApiKey::new("co-key"))
        .http(quick)
        .build()
        .unwrap();
    let got = reranker.rerank(query, candidates(), 4).await.unwrap();
    // The two copies of the best passage tie and both lead.
    assert_eq!(got[0].chunk.content, got[1].chunk.content);
    assert_eq!(got[0].score, got[1].score);
    assert!(got[0].chunk.id < got[1].chunk.id);
    assert!(got
        .windows(2)
        .all(|w| w[0].score > w[1].score || w[0].chunk.id < w[1].chunk.id));
    assert_eq!(ranked(got), expected(query, 4));
    {
        let sent = requests.lock().unwrap();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0]["model"], "rerank-test");
        assert_eq!(sent[0]["query"], query);
        assert_eq!(sent[0]["top_n"], 4);
        assert_eq!(sent[0]["documents"].as_array().unwrap().len(), 8);
    }

    // Split over requests of three documents, the merged ranking is the same.
    let split = CohereReranker::builder("rerank-test")
        .base_url(server.url(""))
        .api_key(ApiKey::new("co-key"))
        .max_documents(3)
        .http(quick)
        .build()
        .unwrap();
    let got = split.rerank(query, candidates(), 8).await.unwrap();
    assert_eq!(ranked(got), expected(query, 8));
    assert_eq!(
        split.usage(),
        RerankUsage {
            requests: 3,
            documents: 8
        }
    );
    assert_eq!(requests.lock().unwrap().len(), 4);

    // Nothing to rank: no request.
    assert!(split.rerank(query, Vec::new(), 5).await.unwrap().is_empty());
    assert!(split
        .rerank(query, candidates(), 0)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(requests.lock().unwrap().len(), 4);
}

/// The cache on top of the faulty server: the first run records every vector, a second run
/// makes no request at all, and replay works with the server gone.
#[cfg(feature = "cache")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recorded_run_replays_without_requests_and_without_the_server() {
    use rag_eval::cache::{Cache, CacheMode, CachedEmbedder};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    let path = path.to_str().unwrap();
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let server = faulty_embeddings_server(Arc::clone(&ledger));
    let make = |url: String| {
        OpenAiEmbedder::builder("test-embed")
            .base_url(url)
            .api_key(ApiKey::new(KEY))
            .expected_dimension(DIM)
            .max_inputs(20)
            .max_chars(1_500)
            .http(|c| quick(c).with_max_retries(8).with_concurrency(4))
            .build()
            .unwrap()
    };
    let texts = corpus();
    let url = server.url("/v1");

    let record = Arc::new(Cache::open(path, CacheMode::ReadWrite).unwrap());
    let first = BatchingEmbedder::new(CachedEmbedder::new(make(url.clone()), Arc::clone(&record)))
        .with_batch_size(100);
    let vectors = first.embed(&texts).await.unwrap();
    assert!(texts.iter().zip(&vectors).all(|(t, v)| v == &vector_of(t)));
    let recorded_requests = ledger.lock().unwrap().requests;
    assert!(recorded_requests > 0);
    assert_eq!(ledger.lock().unwrap().embedded.len(), 1400);

    record.checkpoint().unwrap();
    drop((first, record));

    // A second run, as a new process would make it: a fresh handle on the same file.
    let again = Arc::new(Cache::open(path, CacheMode::ReadWrite).unwrap());
    let second = CachedEmbedder::new(make(url), Arc::clone(&again));
    assert_eq!(second.embed(&texts).await.unwrap(), vectors);
    assert_eq!(
        ledger.lock().unwrap().requests,
        recorded_requests,
        "the second run makes zero requests"
    );
    assert_eq!(
        (second.stats().hits, second.stats().misses),
        (2000, 0),
        "every text a hit"
    );
    drop((second, again));

    // Replay with the server down: every vector comes from the file, and an unrecorded text
    // is an error naming it instead of a request.
    let down = server.url("/v1");
    drop(server);
    let replay = Arc::new(Cache::open(path, CacheMode::Replay).unwrap());
    let offline = CachedEmbedder::new(make(down), Arc::clone(&replay));
    assert_eq!(offline.embed(&texts).await.unwrap(), vectors);
    let err = offline
        .embed(&["never recorded".to_owned()])
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("replay") && err.contains("never recorded"),
        "{err}"
    );
}

/// A model the crate has no size for and no declared dimension (a local server's own model):
/// the cache learns the dimension from the first answer when recording, from the file when
/// replaying, and holds every later vector to it.
#[cfg(feature = "cache")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_of_unknown_size_records_and_replays_through_the_cache() {
    use rag_eval::cache::{Cache, CacheMode, CachedEmbedder};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    let path = path.to_str().unwrap();
    let requests = Arc::new(Mutex::new(0usize));
    // Answers with DIM-long vectors, or 3-long ones for texts starting with "short".
    let seen = Arc::clone(&requests);
    let server = TestServer::start(move |request| {
        let texts = match parse_embeddings_request(
            &request,
            ("authorization", "Bearer k"),
            "local-embed",
        ) {
            Ok(texts) => texts,
            Err(reply) => return reply,
        };
        *seen.lock().unwrap() += 1;
        let mut answer = embeddings_answer("local-embed", &texts);
        for item in answer["data"].as_array_mut().unwrap() {
            let i = item["index"].as_u64().unwrap() as usize;
            if texts[i].starts_with("short") {
                item["embedding"] = json!([0.5, 0.25, 0.125]);
            }
        }
        Reply::json(200, &answer)
    });
    let make = |url: String| {
        OpenAiEmbedder::builder("local-embed")
            .base_url(url)
            .api_key(ApiKey::new("k"))
            .http(quick)
            .build()
            .unwrap()
    };
    let texts: Vec<String> = (0..11).map(|i| format!("passage {i}")).collect();
    let url = server.url("/v1");

    let record = Arc::new(Cache::open(path, CacheMode::ReadWrite).unwrap());
    let first = CachedEmbedder::new(make(url.clone()), Arc::clone(&record));
    assert_eq!(first.dimension(), 0, "unknown before the first answer");
    let vectors = first.embed(&texts).await.unwrap();
    assert!(texts.iter().zip(&vectors).all(|(t, v)| v == &vector_of(t)));
    assert_eq!(first.dimension(), DIM, "learned from the first answer");
    assert_eq!(*requests.lock().unwrap(), 1);
    // A vector of another length later on is refused and not stored.
    let err = first
        .embed(&["short one".to_owned()])
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("vector 0 has dimension 3, expected 8"),
        "{err}"
    );
    let recorded_requests = *requests.lock().unwrap();
    record.checkpoint().unwrap();
    drop((first, record));

    // A second process: every vector from the file, the dimension learned from it.
    let again = Arc::new(Cache::open(path, CacheMode::ReadWrite).unwrap());
    let second = CachedEmbedder::new(make(url), Arc::clone(&again));
    assert_eq!(second.embed(&texts).await.unwrap(), vectors);
    assert_eq!(second.dimension(), DIM, "learned from the cache");
    assert_eq!(
        *requests.lock().unwrap(),
        recorded_requests,
        "the second run makes no request"
    );
    let err = second
        .embed(&["short two".to_owned()])
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("vector 0 has dimension 3, expected 8"),
        "a new answer is checked against the dimension the cache taught: {err}"
    );
    drop((second, again));

    // Replay with the server gone.
    let down = server.url("/v1");
    drop(server);
    let replay = Arc::new(Cache::open(path, CacheMode::Replay).unwrap());
    let offline = CachedEmbedder::new(make(down), Arc::clone(&replay));
    assert_eq!(offline.embed(&texts).await.unwrap(), vectors);
    let miss = offline
        .embed_query("passage 3")
        .await
        .unwrap_err()
        .to_string();
    assert!(miss.contains("replay"), "{miss}");
}

/// A server with one slot: it works through the requests it has in the order they came, each
/// taking `service`, so the last of several in flight waits for all the others. Counts the
/// requests it got.
fn single_slot_server(service: Duration, arrivals: Arc<Mutex<usize>>) -> TestServer {
    let busy_until = Arc::new(Mutex::new(Instant::now()));
    TestServer::start(move |request| {
        let texts = match parse_embeddings_request(&request, ("authorization", "Bearer k"), "m") {
            Ok(t) => t,
            Err(reply) => return reply,
        };
        *arrivals.lock().unwrap() += 1;
        let now = Instant::now();
        let mut busy = busy_until.lock().unwrap();
        *busy = (*busy).max(now) + service;
        Reply::json(200, &embeddings_answer("m", &texts)).delayed(*busy - now)
    })
}

/// A slow server is not a dead one: with four requests queued in a one-slot server, the last
/// waits four service times, longer than the timeout, yet answers keep coming, so nothing times
/// out and no work is sent twice. A server that answers nothing still times out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_queued_in_a_slow_single_slot_server_are_not_retried() {
    let service = Duration::from_millis(150);
    let arrivals = Arc::new(Mutex::new(0));
    let server = single_slot_server(service, Arc::clone(&arrivals));
    let e = OpenAiEmbedder::builder("m")
        .base_url(server.url("/v1"))
        .api_key(ApiKey::new("k"))
        .max_inputs(1)
        .http(|c| {
            c.with_timeout(Duration::from_millis(400))
                .with_backoff(Duration::from_millis(1), Duration::from_millis(20))
                .with_concurrency(4)
        })
        .build()
        .unwrap();
    let texts: Vec<String> = (0..12).map(|i| format!("text {i}")).collect();
    let started = Instant::now();
    let v = e.embed(&texts).await.unwrap();
    let took = started.elapsed();
    assert!(texts.iter().zip(&v).all(|(t, v)| v == &vector_of(t)));
    assert_eq!(server.max_in_flight(), 4, "the queue was four deep");
    assert_eq!(e.http_stats().retries, 0, "a slow server gets no retries");
    assert_eq!(*arrivals.lock().unwrap(), 12, "each text sent once");
    assert!(took >= service * 12, "{took:?}");
    eprintln!("12 requests, one slot of {service:?}, 4 in flight: {took:?}, no retries");

    // A server with four slots sharing one processor: four requests together take four
    // service times and none is answered before, yet the server answers a check meanwhile.
    let shared = TestServer::start(move |request| {
        match parse_embeddings_request(&request, ("authorization", "Bearer k"), "m") {
            Ok(texts) => Reply::json(200, &embeddings_answer("m", &texts)).delayed(service * 4),
            Err(reply) => reply,
        }
    });
    let e = OpenAiEmbedder::builder("m")
        .base_url(shared.url("/v1"))
        .api_key(ApiKey::new("k"))
        .max_inputs(1)
        .http(|c| {
            c.with_timeout(Duration::from_millis(400))
                .with_backoff(Duration::from_millis(1), Duration::from_millis(20))
                .with_concurrency(4)
        })
        .build()
        .unwrap();
    let v = e.embed(&texts[..8]).await.unwrap();
    assert!(texts.iter().zip(&v).all(|(t, v)| v == &vector_of(t)));
    assert_eq!(e.http_stats().retries, 0, "a busy server gets no retries");

    // Nothing answers: every attempt times out after the timeout and a failed check.
    let hung = TestServer::start(|_| Reply::json(200, &json!({})).delayed(Duration::from_secs(30)));
    let e = OpenAiEmbedder::builder("m")
        .base_url(hung.url("/v1"))
        .api_key(ApiKey::new("k"))
        .http(|c| {
            c.with_timeout(Duration::from_millis(200))
                .with_backoff(Duration::from_millis(1), Duration::from_millis(20))
                .with_max_retries(1)
                .with_concurrency(4)
        })
        .build()
        .unwrap();
    let started = Instant::now();
    let err = e.embed(&["x".to_owned()]).await.unwrap_err().to_string();
    assert!(
        err.contains(
            "no complete answer within 200ms, no answer to any other request either, and no \
             answer to GET http://127.0.0.1:"
        ) && err.contains("gave up after 2 attempts"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

/// A retry never joins other requests in flight: the server that failed under load sees the
/// retried work alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_is_sent_alone() {
    let service = Duration::from_millis(60);
    // Per request: when it arrived, when its answer was due (the answer is sent after that, so
    // a request that arrives later cannot have been sent while it was served), whether it was
    // a retry.
    let served = Arc::new(Mutex::new(Vec::<(Instant, Instant, bool)>::new()));
    let seen = Arc::new(Mutex::new(std::collections::HashSet::<String>::new()));
    let log = Arc::clone(&served);
    let server = TestServer::start(move |request| {
        let texts = match parse_embeddings_request(&request, ("authorization", "Bearer k"), "m") {
            Ok(t) => t,
            Err(reply) => return reply,
        };
        let first_time = seen.lock().unwrap().insert(texts[0].clone());
        let now = Instant::now();
        log.lock().unwrap().push((now, now + service, !first_time));
        let reply = if first_time && texts[0].ends_with('3') {
            Reply::json(
                500,
                &error_body("Context size has been exceeded.", "server_error"),
            )
        } else {
            Reply::json(200, &embeddings_answer("m", &texts))
        };
        reply.delayed(service)
    });
    let e = OpenAiEmbedder::builder("m")
        .base_url(server.url("/v1"))
        .api_key(ApiKey::new("k"))
        .max_inputs(1)
        .http(|c| {
            quick(c)
                .with_timeout(Duration::from_secs(5))
                .with_concurrency(4)
        })
        .build()
        .unwrap();
    let texts: Vec<String> = (0..16).map(|i| format!("text {i}")).collect();
    let v = e.embed(&texts).await.unwrap();
    assert!(texts.iter().zip(&v).all(|(t, v)| v == &vector_of(t)));
    assert_eq!(e.http_stats().retries, 2, "text 3 and text 13 failed once");
    let served = served.lock().unwrap().clone();
    let retries: Vec<_> = served.iter().filter(|r| r.2).collect();
    assert_eq!(retries.len(), 2);
    for (start, end, _) in retries {
        let beside = served
            .iter()
            .filter(|(s, e, _)| (s, e) != (start, end) && s < end && start < e)
            .count();
        assert_eq!(
            beside, 0,
            "a retry was served alongside {beside} other requests"
        );
    }
    assert_eq!(server.max_in_flight(), 4);
}

/// An embedder of the hostile server at `server`, with fast settings adjusted by `adjust`.
fn hostile_embedder(
    server: &HostileServer,
    adjust: impl FnOnce(HttpConfig) -> HttpConfig,
) -> OpenAiEmbedder {
    OpenAiEmbedder::builder("m")
        .base_url(server.url("/v1"))
        .api_key(ApiKey::new("k"))
        .http(|c| adjust(quick(c).with_max_retries(5)))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_too_long_to_represent_fails_the_call_at_once_without_a_panic() {
    for hostility in [
        Hostility::RetryAfter("1e30"),
        Hostility::RetryAfter("inf"),
        Hostility::RetryAfterMs("1e25"),
    ] {
        let server = HostileServer::start(hostility.clone());
        let e = hostile_embedder(&server, |c| c);
        let started = Instant::now();
        let err = e.embed(&["x".to_owned()]).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2), "{hostility:?}");
        let text = err.to_string();
        assert!(
            text.contains("429") && text.contains("more than the 120s allowed"),
            "{hostility:?}: {text}"
        );
        assert_eq!(server.posts(), 1, "{hostility:?}: not retried");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_or_huge_body_stops_at_the_size_limit_and_is_not_retried() {
    let server = HostileServer::start(Hostility::EndlessBody);
    let e = hostile_embedder(&server, |c| c.with_max_response_bytes(1 << 20));
    let started = Instant::now();
    let err = e.embed(&["x".to_owned()]).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    let text = err.to_string();
    assert!(
        text.contains("longer than the 1048576 bytes allowed")
            && text.contains(&server.url("/v1/embeddings")),
        "{text}"
    );
    assert_eq!(server.posts(), 1, "not retried");

    // 200 MB announced: refused before a byte of the body is read, at the default limit.
    let server = HostileServer::start(Hostility::HugeBody(200_000_000));
    let e = hostile_embedder(&server, |c| c);
    let err = e.embed(&["x".to_owned()]).await.unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("longer than the {} bytes", 64 << 20)),
        "{err}"
    );
    assert_eq!(server.posts(), 1, "not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_hangs_on_post_but_answers_its_health_check_meets_the_deadline() {
    let server = HostileServer::start(Hostility::HangOnPost);
    // Each attempt alone could wait timeout × concurrency = 8 × 300 ms, and 6 attempts twice
    // as long as the deadline.
    let e = hostile_embedder(&server, |c| {
        c.with_deadline(Some(Duration::from_secs(1)))
            .with_concurrency(8)
    });
    let started = Instant::now();
    let err = e.embed(&["x".to_owned()]).await.unwrap_err();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("deadline of 1s") && text.contains(&server.url("/v1/embeddings")),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vectors_with_components_beyond_f32_are_refused_naming_the_server() {
    for component in ["1e39", "-1e39"] {
        let server = HostileServer::start(Hostility::Embedding(component));
        let e = hostile_embedder(&server, |c| c);
        let err = e
            .embed(&["a".to_owned(), "b".to_owned()])
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("out of range") && err.contains(&server.url("/v1/embeddings")),
            "{component}: {err}"
        );
    }
    // Huge but finite components are kept: cosine copes with them.
    let server = HostileServer::start(Hostility::Embedding("1e20"));
    let v = hostile_embedder(&server, |c| c)
        .embed(&["a".to_owned()])
        .await
        .unwrap();
    assert!(v[0].iter().all(|x| x.is_finite()));
}

/// Requests in flight back off when the server throttles and come back when it recovers: the
/// server counts the requests in flight when each arrives. At the cap (8) before the 429s, at
/// most half of it right after them, and at the cap again once answers have come in good time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_halve_after_429s_and_climb_back_to_the_cap() {
    const CAP: usize = 8;
    let server = HostileServer::start(Hostility::Throttles {
        busy: 40..48,
        delay: Duration::from_millis(50),
    });
    let client = HttpClient::new(
        HttpConfig::new(server.url(""))
            .with_concurrency(CAP)
            .with_backoff(Duration::from_millis(1), Duration::from_millis(5)),
    )
    .unwrap();
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..160 {
        let client = client.clone();
        calls.spawn(async move { client.post_json::<_, Value>("/work", &json!({})).await });
    }
    while let Some(done) = calls.join_next().await {
        done.unwrap().unwrap();
    }
    let seen = server.in_flight_seen();
    assert_eq!(seen.len(), 168, "160 calls, 8 of them retried once");
    let max = |range: std::ops::Range<usize>| seen[range].iter().copied().max().unwrap();
    assert_eq!(max(0..40), CAP, "before the 429s: {seen:?}");
    assert!(max(48..56) <= CAP / 2, "right after the 429s: {seen:?}");
    assert_eq!(max(100..168), CAP, "after answers in good time: {seen:?}");
    assert_eq!(client.in_flight_limit(), CAP);
    assert_eq!(client.stats().retries, 8);
}

/// A chat server down for a moment (one 503) is retried, and the retry is counted by the
/// client and by the cache in front of it, which a judge's summary reports; an answer from the
/// cache costs no request and no retry.
#[cfg(feature = "cache")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_server_down_for_a_moment_shows_as_one_http_retry_through_the_cache() {
    use rag_eval::cache::{Cache, CacheMode, CachedLlm};
    let completion = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "fine"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    });
    let server = HostileServer::start(Hostility::Unavailable {
        failures: 1,
        body: completion,
    });
    let chat = OpenAiChat::builder("m")
        .base_url(server.url("/v1"))
        .api_key(ApiKey::new("k"))
        .http(quick)
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    let cache = Arc::new(Cache::open(path.to_str().unwrap(), CacheMode::ReadWrite).unwrap());
    let client: Arc<dyn LlmClient> = Arc::new(CachedLlm::new(chat, cache));
    assert_eq!(client.http_retries(), 0);
    let request = ChatRequest::new(vec![ChatMessage::user("is it up?")]);
    assert_eq!(client.complete(&request).await.unwrap().content, "fine");
    assert_eq!((client.http_retries(), server.posts()), (1, 2));
    client.complete(&request).await.unwrap();
    assert_eq!((client.http_retries(), server.posts()), (1, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_complete_answer_that_is_not_the_json_expected_is_not_retried() {
    for body in [
        "<html><body>Welcome to the portal</body></html>",
        r#"{"object": "list", "results": []}"#,
    ] {
        let server = HostileServer::start(Hostility::Answer { status: 200, body });
        let e = hostile_embedder(&server, |c| c);
        let err = e.embed(&["x".to_owned()]).await.unwrap_err().to_string();
        assert_eq!(server.posts(), 1, "{body}: retried: {err}");
        assert!(
            err.contains("200 OK") && err.contains("not retried"),
            "{err}"
        );
        // The body's excerpt says what came back.
        assert!(err.contains(&body[..20]), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_that_no_retry_can_help_is_not_retried() {
    // llama-server's answer to a prompt longer than its context.
    let body = r#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#;
    let server = HostileServer::start(Hostility::Answer { status: 500, body });
    let chat = OpenAiChat::builder("m")
        .base_url(server.url("/v1"))
        .api_key(ApiKey::new("k"))
        .http(|c| quick(c).with_max_retries(5))
        .build()
        .unwrap();
    let request = ChatRequest::new(vec![ChatMessage::user("a very long prompt")]);
    let err = chat.complete(&request).await.unwrap_err().to_string();
    assert_eq!(server.posts(), 1, "retried: {err}");
    assert!(
        err.contains("Context size has been exceeded") && err.contains("not retried"),
        "{err}"
    );
    assert_eq!(chat.http_stats().retries, 0);
}

/// A server that answers anything `200 {}` and keeps what it was sent.
fn recording_server(seen: Arc<Mutex<Vec<Request>>>) -> TestServer {
    TestServer::start(move |request| {
        seen.lock().unwrap().push(request);
        Reply::json(200, &json!({}))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_provider_follows_a_redirect_to_another_origin_with_its_key() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let other = recording_server(Arc::clone(&seen));
    let server = HostileServer::start(Hostility::RedirectTo(other.url("/elsewhere")));
    let refused = |err: String| {
        assert!(
            err.contains("307") && err.contains("another origin") && err.contains(&other.url("")),
            "{err}"
        );
    };
    // OpenAI's embedder and chat, with a bearer key.
    let e = hostile_embedder(&server, |c| c);
    refused(e.embed(&["x".to_owned()]).await.unwrap_err().to_string());
    let chat = OpenAiChat::builder("m")
        .base_url(server.url("/v1"))
        .api_key(ApiKey::new("k"))
        .http(quick)
        .build()
        .unwrap();
    let request = ChatRequest::new(vec![ChatMessage::user("hi")]);
    refused(chat.complete(&request).await.unwrap_err().to_string());
    // Azure's `api-key` header, which the HTTP stack itself would keep on another host.
    let azure = OpenAiEmbedder::builder("m")
        .azure(server.url(""), "emb", "2024-02-01")
        .api_key(ApiKey::new("azure-k"))
        .http(quick)
        .build()
        .unwrap();
    refused(
        azure
            .embed(&["x".to_owned()])
            .await
            .unwrap_err()
            .to_string(),
    );
    // Cohere's reranker.
    let cohere = CohereReranker::builder("rerank-test")
        .base_url(server.url(""))
        .api_key(ApiKey::new("co-key"))
        .http(quick)
        .build()
        .unwrap();
    refused(
        cohere
            .rerank("q", candidates(), 2)
            .await
            .unwrap_err()
            .to_string(),
    );
    // Chroma with a token header.
    #[cfg(feature = "chroma")]
    {
        let config = quick(HttpConfig::new(server.url(""))).with_header("x-chroma-token", "ch-t");
        let chroma = rag_eval::store::ChromaStore::with_http(config, "docs").unwrap();
        refused(chroma.connect().await.unwrap_err().to_string());
    }
    assert!(
        seen.lock().unwrap().is_empty(),
        "the other server was sent {} requests",
        seen.lock().unwrap().len()
    );

    // Nothing configured to keep: the redirect is followed, and the client tells where the
    // answer came from.
    let plain = HttpClient::new(quick(HttpConfig::new(server.url("")))).unwrap();
    let got: Value = plain.post_json("/x", &json!({})).await.unwrap();
    assert_eq!(got, json!({}));
    assert_eq!(plain.redirected_to(), Some(other.url("/elsewhere")));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_read_at_once_never_hold_more_than_the_shared_budget() {
    use rag_eval::http::ResponseBudget;
    let server = HostileServer::start(Hostility::EndlessBody);
    let budget = Arc::new(ResponseBudget::new(2 << 20));
    // 16 requests at once, each with a body without end, each alone allowed 64 MiB: without
    // the budget they would hold 1 GiB.
    let client = HttpClient::new(
        quick(HttpConfig::new(server.url("")))
            .with_concurrency(16)
            .with_max_retries(0)
            .with_response_budget(Arc::clone(&budget)),
    )
    .unwrap();
    let body = json!({});
    let calls = (0..16).map(|_| client.post_json::<_, Value>("/x", &body));
    let errors = futures_util::future::join_all(calls).await;
    for e in errors {
        let e = e.unwrap_err().to_string();
        assert!(
            e.contains("would hold more than the budget of 2097152 bytes for the whole process"),
            "{e}"
        );
    }
    assert!(budget.peak() <= 2 << 20, "{}", budget.peak());
    assert!(budget.peak() > 1 << 20, "{}", budget.peak());
    // Every call failed, and every byte it counted was given back with it.
    assert_eq!(budget.held(), 0);
    assert_eq!(server.posts(), 16, "not retried");
}
