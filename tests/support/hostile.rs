//! A server that sends what real servers will not: waits too long to represent, bodies without
//! end or far too large, embedding vectors with huge or non-finite components, pagination that
//! never advances or never ends, a request's `Authorization` header echoed back, and requests
//! left unanswered while a health check is answered at once, a server that throttles for a
//! while (429) and counts the requests in flight it sees, redirects to another server, and
//! the same answer (a 200 that is not the JSON expected, a 500 no retry can help) to every
//! `POST`.
//!
//! Every `GET` that is not part of the LangSmith pagination (the liveness check of the HTTP
//! client, `GET /health`) is answered `200 {}` at once, whatever the hostility, so that a server
//! that hangs on `POST` looks alive.

use super::{Reply, Request, TestServer};
use serde_json::{json, Value};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the server does wrong.
#[derive(Debug, Clone)]
pub enum Hostility {
    /// Every `POST` is a 429 with `Retry-After` set to this text (e.g. `1e30`).
    RetryAfter(&'static str),
    /// Every `POST` is a 429 with `retry-after-ms` set to this text (e.g. `1e25`).
    RetryAfterMs(&'static str),
    /// Every `POST` is a 200 whose chunked body never ends.
    EndlessBody,
    /// Every `POST` is a 200 with a body of this many bytes (announced, then sent).
    HugeBody(u64),
    /// Every `POST` is an OpenAI-style embeddings answer: one vector per input, each component
    /// this JSON text (`1e20`, `1e39` (beyond `f32`), `NaN`, which is not even JSON).
    Embedding(&'static str),
    /// LangSmith: `POST /runs/query` always answers the same runs with the same next cursor.
    RepeatedCursor,
    /// LangSmith: list endpoints (`/examples`, `/feedback`, `/datasets`) answer a full page of
    /// the same items whatever the `offset`.
    IgnoredOffset,
    /// Every `POST` is a 401 whose body echoes the request's `Authorization` header.
    EchoAuthorization,
    /// `POST` is never answered (the connection stays open); `GET` is answered at once.
    HangOnPost,
    /// LangSmith: an experiment of two runs whose every feedback score is `1e308`, finite
    /// alone, infinite once summed.
    HugeScores,
    /// Every `POST` is answered after `delay`: `200 {}`, but a 429 with `Retry-After: 0` for
    /// the `POST`s numbered (from 0) in `busy`.
    Throttles { busy: Range<usize>, delay: Duration },
    /// The `POST`s numbered (from 0) below `failures` are a 503; the others are answered
    /// `200` with `body`: a server down for a moment.
    Unavailable { failures: usize, body: Value },
    /// Every request, whatever its method, is a `307` to this URL (another server).
    RedirectTo(String),
    /// LangSmith: `POST /runs/query` answers a full page of new runs with a new cursor every
    /// time.
    FreshCursor,
    /// LangSmith: `/feedback` answers a full page of feedback without ids whatever the
    /// `offset` (the runs are one short page).
    FeedbackWithoutIds,
    /// Every `POST` is answered with this status and body as they are.
    Answer { status: u16, body: &'static str },
}

/// The hostile server; stops when dropped.
pub struct HostileServer {
    server: TestServer,
    posts: Arc<AtomicUsize>,
    seen: Arc<Mutex<Vec<usize>>>,
}

/// The page size of the LangSmith client (a full page asks for the next).
const PAGE: usize = 100;

/// The dataset and experiment the LangSmith answers name.
pub const DATASET: &str = "hostile-dataset";
pub const EXPERIMENT: &str = "hostile-experiment";
const DATASET_ID: &str = "00000000-0000-4000-8000-000000000001";
const SESSION_ID: &str = "00000000-0000-4000-8000-000000000002";

impl HostileServer {
    /// Starts a server that misbehaves as `hostility` says.
    pub fn start(hostility: Hostility) -> HostileServer {
        let posts = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let (counter, log) = (Arc::clone(&posts), Arc::clone(&seen));
        let server = TestServer::start(move |request| {
            if request.method != "POST" {
                return answer(&hostility, &request);
            }
            let number = counter.fetch_add(1, Ordering::SeqCst);
            let Hostility::Throttles { busy, delay } = &hostility else {
                return match &hostility {
                    Hostility::Unavailable { failures, .. } if number < *failures => Reply::json(
                        503,
                        &json!({"error": {"message": "the server is overloaded"}}),
                    ),
                    Hostility::Unavailable { body, .. } => Reply::json(200, body),
                    _ => answer(&hostility, &request),
                };
            };
            log.lock()
                .unwrap()
                .push(in_flight.fetch_add(1, Ordering::SeqCst) + 1);
            let reply = if busy.contains(&number) {
                too_many().with_header("retry-after", "0")
            } else {
                Reply::json(200, &json!({}))
            };
            let done = Arc::clone(&in_flight);
            reply
                .on_sent(move || {
                    done.fetch_sub(1, Ordering::SeqCst);
                })
                .delayed(*delay)
        });
        HostileServer {
            server,
            posts,
            seen,
        }
    }

    /// [`Hostility::Throttles`]: for each `POST` in the order they came, the `POST`s in flight
    /// when it came, itself included.
    pub fn in_flight_seen(&self) -> Vec<usize> {
        self.seen.lock().unwrap().clone()
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        self.server.url(path)
    }

    /// `POST` requests received so far.
    pub fn posts(&self) -> usize {
        self.posts.load(Ordering::SeqCst)
    }
}

fn answer(hostility: &Hostility, request: &Request) -> Reply {
    let post = request.method == "POST";
    match hostility {
        Hostility::RetryAfter(v) if post => too_many().with_header("retry-after", v),
        Hostility::RetryAfterMs(v) if post => too_many().with_header("retry-after-ms", v),
        Hostility::EndlessBody if post => Reply::Endless,
        Hostility::HugeBody(len) if post => Reply::Filler { len: *len },
        Hostility::Embedding(component) if post => embeddings(request, component),
        Hostility::EchoAuthorization if post => Reply::json(
            401,
            &json!({"error": {"message": format!(
                "Incorrect API key provided: {}",
                request.header("authorization").unwrap_or_default()
            )}}),
        ),
        Hostility::HangOnPost if post => Reply::Hang,
        Hostility::RedirectTo(to) => Reply::Full {
            status: 307,
            headers: vec![("location".into(), to.clone())],
            body: Vec::new(),
            on_sent: None,
        },
        Hostility::Answer { status, body } if post => Reply::raw(*status, *body),
        Hostility::RepeatedCursor
        | Hostility::IgnoredOffset
        | Hostility::HugeScores
        | Hostility::Throttles { .. }
        | Hostility::Unavailable { .. }
        | Hostility::FreshCursor
        | Hostility::FeedbackWithoutIds => langsmith(hostility, request),
        _ => Reply::json(200, &json!({})),
    }
}

fn too_many() -> Reply {
    Reply::json(429, &json!({"error": {"message": "slow down"}}))
}

/// One vector of 4 components per input, each component `component` as written.
fn embeddings(request: &Request, component: &str) -> Reply {
    let inputs = request
        .json()
        .and_then(|b| b["input"].as_array().map(Vec::len))
        .unwrap_or(1);
    let vector = format!("[{}]", [component; 4].join(","));
    let data: Vec<String> = (0..inputs)
        .map(|i| format!(r#"{{"object":"embedding","index":{i},"embedding":{vector}}}"#))
        .collect();
    Reply::raw(
        200,
        format!(
            r#"{{"object":"list","data":[{}],"model":"m","usage":{{"prompt_tokens":1,"total_tokens":1}}}}"#,
            data.join(",")
        ),
    )
}

/// The few LangSmith endpoints `dataset pull` and `runs pull` read, with pagination that never
/// advances.
fn langsmith(hostility: &Hostility, request: &Request) -> Reply {
    let huge = matches!(hostility, Hostility::HugeScores);
    // A short page is the last; a full one asks for the next.
    let size = if huge || matches!(hostility, Hostility::FeedbackWithoutIds) {
        2
    } else {
        PAGE
    };
    let page = |make: &dyn Fn(usize) -> Value| -> Reply {
        Reply::json(200, &Value::Array((0..size).map(make).collect()))
    };
    match (request.method.as_str(), request.path()) {
        ("GET", "/datasets") => Reply::json(
            200,
            &json!([{"id": DATASET_ID, "name": DATASET, "data_type": "kv"}]),
        ),
        ("GET", "/sessions") => Reply::json(
            200,
            &json!([{"id": SESSION_ID, "name": EXPERIMENT, "reference_dataset_id": DATASET_ID,
                     "extra": {"metadata": {"metrics": ["recall"]}}}]),
        ),
        // Offsets ignored: always the first page.
        ("GET", "/examples") => page(&|i| {
            json!({"id": uuid(i), "dataset_id": DATASET_ID,
                   "inputs": {"query": format!("question {i}")}, "outputs": {}, "metadata": {}})
        }),
        ("GET", "/feedback") if matches!(hostility, Hostility::FeedbackWithoutIds) => Reply::json(
            200,
            &Value::Array(
                (0..PAGE)
                    .map(|i| json!({"run_id": uuid(i % 2), "key": "recall", "score": 1.0}))
                    .collect(),
            ),
        ),
        ("GET", "/feedback") => page(&|i| {
            let score = if huge { 1e308 } else { 1.0 };
            json!({"id": uuid(1000 + i), "run_id": uuid(i), "key": "recall", "score": score})
        }),
        ("POST", "/runs/query") => {
            // A new cursor names the page asked for next; its runs are new too.
            let from = match request
                .json()
                .and_then(|b| b["cursor"].as_str().map(str::to_owned))
            {
                Some(cursor) => cursor.parse::<usize>().unwrap_or(0),
                None => 0,
            };
            let runs: Vec<Value> = (from..from + size)
                .map(|i| {
                    json!({"id": uuid(i), "inputs": {"query": format!("question {i}")},
                                "extra": {"metadata": {"query_id": format!("q{i}")}}})
                })
                .collect();
            let next = match hostility {
                Hostility::RepeatedCursor => json!("the-same-cursor"),
                Hostility::FreshCursor => json!((from + size).to_string()),
                _ => Value::Null,
            };
            Reply::json(200, &json!({"runs": runs, "cursors": {"next": next}}))
        }
        _ => Reply::json(200, &json!({})),
    }
}

fn uuid(i: usize) -> String {
    format!("00000000-0000-4000-8000-{:012x}", 0x100 + i)
}
