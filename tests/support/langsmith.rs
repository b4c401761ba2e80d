//! A stateful stand-in for LangSmith's REST API on 127.0.0.1: datasets, examples, experiments
//! (tracer sessions), runs and feedback, with the endpoints and payloads the official Python
//! SDK uses (paths relative to the endpoint, JSON bodies, `offset`/`limit` paging capped at 100,
//! `x-api-key` authentication, 409 for an id or name that exists). Faults are injected per
//! endpoint (429 with `Retry-After`, any status, a connection dropped before or after the
//! request took effect), and every delivery of a run, example or feedback is counted by id, so
//! tests can prove each arrived and was stored exactly once.

#![allow(dead_code)]

use crate::support::{Reply, Request, TestServer};
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// What to do instead of (or after) answering normally.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 with `Retry-After: SECS`; nothing happens.
    RateLimit(f64),
    /// This status with a JSON error; nothing happens.
    Status(u16),
    /// The request takes effect, then the connection closes halfway through the answer.
    DropAfterApplying,
    /// The connection closes halfway through an answer; nothing happens.
    DropBeforeApplying,
}

struct Rule {
    method: String,
    path: String,
    skip: usize,
    times: usize,
    fault: Fault,
}

/// Everything the fake holds and has seen.
#[derive(Default)]
pub struct State {
    pub datasets: Vec<Value>,
    pub examples: Vec<Value>,
    pub sessions: Vec<Value>,
    pub runs: Vec<Value>,
    pub feedback: Vec<Value>,
    /// How often each run, example and feedback id arrived (retries and duplicates included).
    pub deliveries: HashMap<String, usize>,
    /// `METHOD /path` of every request, in order.
    pub requests: Vec<String>,
    /// The `x-api-key` of every request (empty when absent).
    pub keys: Vec<String>,
    /// Faults applied so far.
    pub faults_applied: usize,
    rules: Vec<Rule>,
    required_key: Option<String>,
    next_id: u64,
}

/// The fake server; stops when dropped.
pub struct FakeLangSmith {
    server: TestServer,
    state: Arc<Mutex<State>>,
}

pub const TENANT: &str = "00000000-0000-4000-8000-00000000000a";

impl FakeLangSmith {
    pub fn start() -> FakeLangSmith {
        let state = Arc::new(Mutex::new(State::default()));
        let s = Arc::clone(&state);
        let server = TestServer::start(move |req| handle(&s, req));
        FakeLangSmith { server, state }
    }

    /// Refuses requests without this `x-api-key` (401).
    pub fn require_key(&self, key: &str) {
        self.state.lock().unwrap().required_key = Some(key.to_owned());
    }

    /// The endpoint, for `LANGSMITH_ENDPOINT`.
    pub fn url(&self) -> String {
        self.server.url("")
    }

    /// Applies `fault` to `times` requests of `method` on paths starting with `path`, after
    /// letting `skip` of them through.
    pub fn inject(&self, method: &str, path: &str, skip: usize, times: usize, fault: Fault) {
        self.state.lock().unwrap().rules.push(Rule {
            method: method.to_owned(),
            path: path.to_owned(),
            skip,
            times,
            fault,
        });
    }

    /// Removes every fault not yet applied.
    pub fn heal(&self) {
        self.state.lock().unwrap().rules.clear();
    }

    pub fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// How many requests `METHOD /path…` arrived.
    pub fn count(&self, method: &str, path: &str) -> usize {
        let prefix = format!("{method} {path}");
        self.state()
            .requests
            .iter()
            .filter(|r| r.starts_with(&prefix))
            .count()
    }
}

fn handle(state: &Mutex<State>, req: Request) -> Reply {
    let mut s = state.lock().unwrap();
    let path = req.path().trim_end_matches('/').to_owned();
    s.requests.push(format!("{} {path}", req.method));
    let key = req.header("x-api-key").unwrap_or_default().to_owned();
    s.keys.push(key.clone());
    if path.is_empty() && req.method == "GET" {
        // The client's liveness probe of the base URL.
        return Reply::json(200, &json!({"ok": true}));
    }
    if let Some(required) = &s.required_key {
        if &key != required {
            return Reply::json(401, &json!({"detail": "Invalid token"}));
        }
    }
    let fault = s.rules.iter_mut().find_map(|r| {
        if r.method != req.method || !path.starts_with(&r.path) || r.times == 0 {
            return None;
        }
        if r.skip > 0 {
            r.skip -= 1;
            return None;
        }
        r.times -= 1;
        Some(r.fault.clone())
    });
    if fault.is_some() {
        s.faults_applied += 1;
    }
    match fault {
        Some(Fault::RateLimit(secs)) => {
            return Reply::json(429, &json!({"detail": "rate limited"}))
                .with_header("retry-after", &secs.to_string())
        }
        Some(Fault::Status(code)) => {
            return Reply::json(code, &json!({"detail": format!("injected {code}")}))
        }
        Some(Fault::DropBeforeApplying) => {
            return Reply::Truncated {
                body: br#"{"detail": "this answer never arrives whole"}"#.to_vec(),
            }
        }
        _ => {}
    }
    let (status, body) = route(&mut s, &req, &path);
    if matches!(fault, Some(Fault::DropAfterApplying)) {
        return Reply::Truncated {
            body: body.to_string().into_bytes(),
        };
    }
    Reply::json(status, &body)
}

fn query(req: &Request) -> Vec<(String, String)> {
    let Some((_, q)) = req.target.split_once('?') else {
        return Vec::new();
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn param<'a>(q: &'a [(String, String)], name: &str) -> Option<&'a str> {
    q.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn params<'a>(q: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    q.iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .collect()
}

/// `offset`/`limit` paging, the limit capped at 100 as the real service does.
fn page(items: Vec<Value>, q: &[(String, String)]) -> Value {
    let offset: usize = param(q, "offset").and_then(|v| v.parse().ok()).unwrap_or(0);
    let limit: usize = param(q, "limit")
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
        .min(100);
    Value::Array(items.into_iter().skip(offset).take(limit).collect())
}

fn now() -> String {
    "2026-11-24T00:00:00.000000Z".to_owned()
}

fn err(status: u16, detail: &str) -> (u16, Value) {
    (status, json!({ "detail": detail }))
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

impl State {
    fn new_id(&mut self) -> String {
        self.next_id += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.next_id)
    }

    fn deliver(&mut self, id: &str) {
        *self.deliveries.entry(id.to_owned()).or_default() += 1;
    }

    /// Stored runs of an experiment.
    pub fn runs_of(&self, session: &str) -> Vec<&Value> {
        self.runs
            .iter()
            .filter(|r| r["session_id"] == session)
            .collect()
    }

    fn feedback_stats(&self, session: &str, per_run: bool) -> Value {
        let mut by_key: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for f in &self.feedback {
            let in_session = if per_run {
                f["run_id"].is_string()
                    && self
                        .runs
                        .iter()
                        .any(|r| r["id"] == f["run_id"] && r["session_id"] == session)
            } else {
                f["run_id"].is_null() && f["session_id"] == session
            };
            if in_session {
                if let Some(score) = f["score"].as_f64() {
                    by_key
                        .entry(f["key"].as_str().unwrap_or("").to_owned())
                        .or_default()
                        .push(score);
                }
            }
        }
        let stats: Map<String, Value> = by_key
            .into_iter()
            .map(|(k, v)| {
                let n = v.len();
                let avg = v.iter().sum::<f64>() / n as f64;
                (k, json!({"n": n, "avg": avg}))
            })
            .collect();
        Value::Object(stats)
    }

    fn session_view(&self, s: &Value, stats: bool) -> Value {
        let mut v = s.clone();
        if stats {
            let id = s["id"].as_str().unwrap_or("");
            v["run_count"] = json!(self.runs_of(id).len());
            v["feedback_stats"] = self.feedback_stats(id, true);
            v["session_feedback_stats"] = self.feedback_stats(id, false);
        }
        v
    }
}

fn route(s: &mut State, req: &Request, path: &str) -> (u16, Value) {
    let q = query(req);
    let body = req.json().unwrap_or(Value::Null);
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (req.method.as_str(), parts.as_slice()) {
        ("GET", ["info"]) => (
            200,
            json!({"version": "0.0.0-fake", "instance_flags": {}, "batch_ingest_config": null}),
        ),

        // --- datasets ---
        ("POST", ["datasets"]) => {
            let Some(name) = body["name"].as_str() else {
                return err(422, "name is required");
            };
            if s.datasets.iter().any(|d| d["name"] == name) {
                return err(409, "Dataset with this name already exists");
            }
            let id = s.new_id();
            let d = json!({
                "id": id, "name": name, "description": body["description"],
                "data_type": body["data_type"].as_str().unwrap_or("kv"),
                "created_at": now(), "modified_at": now(),
                "example_count": 0, "session_count": 0, "tenant_id": TENANT,
                "metadata": body["extra"]["metadata"],
            });
            s.datasets.push(d.clone());
            (200, d)
        }
        ("GET", ["datasets"]) => {
            let names = params(&q, "name");
            let list: Vec<Value> = s
                .datasets
                .iter()
                .filter(|d| names.is_empty() || names.iter().any(|n| d["name"] == *n))
                .map(|d| with_count(s, d))
                .collect();
            (200, page(list, &q))
        }
        ("GET", ["datasets", id]) => match s.datasets.iter().find(|d| d["id"] == *id) {
            Some(d) => (200, with_count(s, d)),
            None => err(404, "Dataset not found"),
        },
        ("DELETE", ["datasets", id]) => {
            let before = s.datasets.len();
            s.datasets.retain(|d| d["id"] != *id);
            if s.datasets.len() == before {
                return err(404, "Dataset not found");
            }
            s.examples.retain(|e| e["dataset_id"] != *id);
            (200, json!({}))
        }

        // --- examples ---
        ("POST", ["examples", "bulk"]) => {
            let Some(items) = body.as_array() else {
                return err(422, "expected a list of examples");
            };
            let mut created = Vec::new();
            for item in items {
                let ds = item["dataset_id"].as_str().unwrap_or("");
                if !s.datasets.iter().any(|d| d["id"] == ds) {
                    return err(404, "Dataset not found");
                }
                if let Some(id) = item["id"].as_str() {
                    if !is_uuid(id) {
                        return err(422, "id is not a UUID");
                    }
                }
                if !item["inputs"].is_object() {
                    return err(422, "inputs must be an object");
                }
            }
            for item in items {
                if let Some(id) = item["id"].as_str() {
                    s.deliver(id);
                }
            }
            for item in items {
                if let Some(id) = item["id"].as_str() {
                    if s.examples.iter().any(|e| e["id"] == id) {
                        return err(409, "Example with this id already exists");
                    }
                }
            }
            for item in items {
                let id = match item["id"].as_str() {
                    Some(id) => id.to_owned(),
                    None => s.new_id(),
                };
                let e = json!({
                    "id": id, "dataset_id": item["dataset_id"], "inputs": item["inputs"],
                    "outputs": item["outputs"], "metadata": item["metadata"],
                    "created_at": now(), "modified_at": now(),
                });
                s.examples.push(e.clone());
                created.push(e);
            }
            (200, Value::Array(created))
        }
        ("GET", ["examples"]) => {
            let ds = param(&q, "dataset").unwrap_or("");
            let list: Vec<Value> = s
                .examples
                .iter()
                .filter(|e| ds.is_empty() || e["dataset_id"] == ds)
                .cloned()
                .collect();
            (200, page(list, &q))
        }
        ("GET", ["examples", id]) => match s.examples.iter().find(|e| e["id"] == *id) {
            Some(e) => (200, e.clone()),
            None => err(404, "Example not found"),
        },
        ("PATCH", ["examples", id]) => {
            let Some(e) = s.examples.iter_mut().find(|e| e["id"] == *id) else {
                return err(404, "Example not found");
            };
            for k in ["inputs", "outputs", "metadata"] {
                if !body[k].is_null() {
                    e[k] = body[k].clone();
                }
            }
            e["modified_at"] = Value::from(now());
            (200, json!({"message": "Example updated successfully"}))
        }

        // --- experiments ---
        ("POST", ["sessions"]) => {
            let id = match body["id"].as_str() {
                Some(id) if is_uuid(id) => id.to_owned(),
                Some(_) => return err(422, "id is not a UUID"),
                None => s.new_id(),
            };
            let name = body["name"].as_str().unwrap_or("").to_owned();
            if s.sessions
                .iter()
                .any(|x| x["id"] == id.as_str() || x["name"] == name.as_str())
            {
                return err(409, "Session already exists");
            }
            if let Some(r) = body["reference_dataset_id"].as_str() {
                if !s.datasets.iter().any(|d| d["id"] == r) {
                    return err(404, "Reference dataset not found");
                }
            }
            let v = json!({
                "id": id, "name": name, "description": body["description"],
                "start_time": body["start_time"].as_str().map_or_else(now, str::to_owned),
                "end_time": null, "extra": body["extra"], "tenant_id": TENANT,
                "reference_dataset_id": body["reference_dataset_id"],
            });
            s.sessions.push(v.clone());
            (200, v)
        }
        ("GET", ["sessions"]) => {
            let names = params(&q, "name");
            let reference = param(&q, "reference_dataset");
            let stats = param(&q, "include_stats") == Some("True")
                || param(&q, "include_stats") == Some("true");
            let list: Vec<Value> = s
                .sessions
                .iter()
                .filter(|x| names.is_empty() || names.iter().any(|n| x["name"] == *n))
                .filter(|x| reference.is_none_or(|r| x["reference_dataset_id"] == r))
                .map(|x| s.session_view(x, stats))
                .collect();
            (200, page(list, &q))
        }
        ("GET", ["sessions", id]) => {
            let stats = param(&q, "include_stats").is_some_and(|v| v.eq_ignore_ascii_case("true"));
            match s.sessions.iter().find(|x| x["id"] == *id) {
                Some(x) => (200, s.session_view(x, stats)),
                None => err(404, "Session not found"),
            }
        }
        ("PATCH", ["sessions", id]) => {
            let Some(x) = s.sessions.iter_mut().find(|x| x["id"] == *id) else {
                return err(404, "Session not found");
            };
            for k in ["name", "description", "end_time", "extra"] {
                if !body[k].is_null() {
                    x[k] = body[k].clone();
                }
            }
            (200, x.clone())
        }

        // --- runs ---
        ("POST", ["runs", "batch"]) => {
            let post = body["post"].as_array().cloned().unwrap_or_default();
            let patch = body["patch"].as_array().cloned().unwrap_or_default();
            for r in &post {
                let id = r["id"].as_str().unwrap_or("");
                let (Some(trace), Some(dotted)) =
                    (r["trace_id"].as_str(), r["dotted_order"].as_str())
                else {
                    return err(422, "trace_id and dotted_order are required");
                };
                if !is_uuid(id) || !is_uuid(trace) || !dotted.ends_with(id) {
                    return err(422, "dotted_order must end with the run's id");
                }
                let session = r["session_id"].as_str().unwrap_or("");
                if !s.sessions.iter().any(|x| x["id"] == session) {
                    return err(404, "Session not found");
                }
                if r["start_time"].as_str().is_none() || r["name"].as_str().is_none() {
                    return err(422, "name and start_time are required");
                }
            }
            for r in post {
                let id = r["id"].as_str().unwrap_or("").to_owned();
                s.deliver(&id);
                // Ingestion is idempotent by id, as the service's is.
                if !s.runs.iter().any(|x| x["id"] == id.as_str()) {
                    s.runs.push(r);
                }
            }
            for p in patch {
                let id = p["id"].as_str().unwrap_or("").to_owned();
                if let Some(x) = s.runs.iter_mut().find(|x| x["id"] == id.as_str()) {
                    merge(x, &p);
                }
            }
            (202, json!({}))
        }
        ("PATCH", ["runs", id]) => {
            let Some(x) = s.runs.iter_mut().find(|x| x["id"] == *id) else {
                return err(404, "Run not found");
            };
            merge(x, &body);
            (202, json!({}))
        }
        ("GET", ["runs", id]) => match s.runs.iter().find(|x| x["id"] == *id) {
            Some(x) => (200, x.clone()),
            None => err(404, "Run not found"),
        },
        ("POST", ["runs", "query"]) => {
            let sessions: Vec<String> = body["session"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let runs: Vec<Value> = s
                .runs
                .iter()
                .filter(|r| {
                    sessions.is_empty() || sessions.iter().any(|x| r["session_id"] == x.as_str())
                })
                .cloned()
                .collect();
            (200, json!({"runs": runs, "cursors": {"next": null}}))
        }

        // --- feedback ---
        ("POST", ["feedback"]) => {
            let id = match body["id"].as_str() {
                Some(id) if is_uuid(id) => id.to_owned(),
                Some(_) => return err(422, "id is not a UUID"),
                None => s.new_id(),
            };
            if body["key"].as_str().is_none() {
                return err(422, "key is required");
            }
            s.deliver(&id);
            if s.feedback.iter().any(|f| f["id"] == id.as_str()) {
                return err(409, "Feedback with this id already exists");
            }
            let mut f = body.clone();
            f["id"] = Value::from(id);
            f["created_at"] = Value::from(now());
            f["modified_at"] = Value::from(now());
            if let Some(run) = body["run_id"].as_str() {
                if let Some(r) = s.runs.iter().find(|r| r["id"] == run) {
                    f["session_id"] = r["session_id"].clone();
                }
            }
            s.feedback.push(f.clone());
            (200, f)
        }
        ("GET", ["feedback"]) => {
            let runs = params(&q, "run");
            let keys = params(&q, "key");
            let session = params(&q, "session");
            let list: Vec<Value> = s
                .feedback
                .iter()
                .filter(|f| runs.is_empty() || runs.iter().any(|r| f["run_id"] == *r))
                .filter(|f| keys.is_empty() || keys.iter().any(|k| f["key"] == *k))
                .filter(|f| session.is_empty() || session.iter().any(|x| f["session_id"] == *x))
                .cloned()
                .collect();
            (200, page(list, &q))
        }
        _ => err(404, &format!("no route for {} {path}", req.method)),
    }
}

fn with_count(s: &State, d: &Value) -> Value {
    let mut d = d.clone();
    d["example_count"] = json!(s
        .examples
        .iter()
        .filter(|e| e["dataset_id"] == d["id"])
        .count());
    d
}

fn merge(into: &mut Value, from: &Value) {
    if let (Some(into), Some(from)) = (into.as_object_mut(), from.as_object()) {
        for (k, v) in from {
            if !v.is_null() {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}
