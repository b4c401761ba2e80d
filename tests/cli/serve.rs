//! `rag-eval serve` over real HTTP: the API on a loopback port over a SQLite run store with 11
//! runs; list, detail, comparisons of 2, 10 and 11 runs, unknown ids, bad bodies, and the HTML
//! pages.

use rag_eval::metrics::{Figures, QueryResult, ResultLevel, RunResult};
use rag_eval::runs::{RunRecord, RunStore, SqliteRunStore};
use rag_eval::serve::LabelFile;
use serde_json::Value;
use std::sync::Arc;

fn result(shift: f64) -> RunResult {
    let per_query = (0..6)
        .map(|i| QueryResult {
            id: format!("q{i}"),
            query: Some(format!("question <{i}>")),
            difficulty: Some(if i % 2 == 0 { "factual" } else { "analytical" }.into()),
            metrics: Figures(vec![
                ("span_recall@5".into(), ((i as f64) / 6.0 + shift).min(1.0)),
                ("mrr".into(), 1.0 / (i + 1) as f64),
            ]),
            ..QueryResult::default()
        })
        .collect();
    let mut r = RunResult::from_queries(
        ResultLevel::Token,
        vec!["span_recall@5".into(), "mrr".into()],
        per_query,
    );
    r.k = Some(5);
    r.group_by_difficulty();
    r
}

struct Server {
    base: String,
    ids: Vec<String>,
    _dir: tempfile::TempDir,
    _runtime: tokio::runtime::Runtime,
}

fn server() -> Server {
    let dir = tempfile::tempdir().unwrap();
    let path = camino::Utf8PathBuf::from_path_buf(dir.path().join("runs.sqlite")).unwrap();
    let store = SqliteRunStore::open(path).unwrap();
    let mut ids = Vec::new();
    for i in 0..11 {
        let mut record = RunRecord::new(
            "test",
            "golden/datasets/tiny.jsonl",
            result(i as f64 / 100.0),
        );
        record.label = Some(format!("run {i}"));
        assert!(store.put(&record).unwrap());
        ids.push(record.id.as_str().to_owned());
    }
    let (base, runtime) = spawn(store, None);
    Server {
        base,
        ids,
        _dir: dir,
        _runtime: runtime,
    }
}

/// Serves `store` (with the labelling page when `labels` is given): its address and the
/// runtime that serves it.
pub(crate) fn spawn(
    store: SqliteRunStore,
    labels: Option<Arc<LabelFile>>,
) -> (String, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let store: Arc<dyn RunStore> = Arc::new(store);
    runtime.spawn(async move {
        rag_eval::serve::serve(store, 0, labels, move |addr| tx.send(addr).unwrap())
            .await
            .unwrap();
    });
    let addr = rx.recv().unwrap();
    (format!("http://{addr}"), runtime)
}

/// A request over a fresh connection: (status, content type, body).
pub(crate) fn request(method: &str, url: &str, body: Option<&str>) -> (u16, String, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = reqwest::Client::new();
        let mut req = client.request(method.parse().unwrap(), url);
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_owned());
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let kind = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, kind, resp.text().await.unwrap())
    })
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn compare(s: &Server, ids: &[String]) -> (u16, Value) {
    let body = serde_json::json!({ "run_ids": ids }).to_string();
    let (status, kind, text) = request("POST", &format!("{}/compare", s.base), Some(&body));
    assert!(kind.starts_with("application/json"), "{kind}");
    (status, json(&text))
}

#[test]
fn the_api_lists_shows_and_compares_runs() {
    let s = server();
    // List: every run, oldest first, as summaries.
    let (status, kind, text) = request("GET", &format!("{}/runs", s.base), None);
    assert_eq!(status, 200);
    assert!(kind.starts_with("application/json"));
    let list = json(&text);
    let listed: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, s.ids.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(list[0]["metrics"]["span_recall@5"], 2.5 / 6.0);

    // Detail: the record, by id or a unique prefix or `latest`.
    let (status, _, text) = request("GET", &format!("{}/runs/{}", s.base, s.ids[3]), None);
    assert_eq!(status, 200, "{text}");
    let record = json(&text);
    assert_eq!(record["id"], s.ids[3].as_str());
    assert_eq!(record["label"], "run 3");
    assert_eq!(record["result"]["per_query"].as_array().unwrap().len(), 6);
    let (status, _, text) = request("GET", &format!("{}/runs/latest", s.base), None);
    assert_eq!(
        (status, json(&text)["id"].clone()),
        (200, Value::from(s.ids[10].as_str()))
    );

    // Unknown ids: 404 with a JSON error naming the id; nothing panics on odd ids.
    for bad in [
        "01ZZZZZZZZZZZZZZZZZZZZZZZZ",
        "nope",
        "%E2%98%83",
        "latest~99",
    ] {
        let (status, kind, text) = request("GET", &format!("{}/runs/{bad}", s.base), None);
        assert_eq!(status, 404, "{bad}: {text}");
        assert!(kind.starts_with("application/json"));
        assert!(
            json(&text)["error"]
                .as_str()
                .unwrap()
                .contains("has no run"),
            "{text}"
        );
    }

    // Compare 2 and 10 runs; 11, 1 and 0 are refused; an unknown id is 404.
    let (status, two) = compare(&s, &s.ids[..2]);
    assert_eq!(status, 200, "{two}");
    let (status, ten) = compare(&s, &s.ids[..10]);
    assert_eq!(status, 200, "{ten}");
    assert_ne!(two, ten);
    for n in [11, 1, 0] {
        let (status, err) = compare(&s, &s.ids[..n]);
        assert_eq!(status, 400, "{n}: {err}");
        assert!(
            err["error"].as_str().unwrap().contains("2 to 10 runs"),
            "{err}"
        );
    }
    let (status, err) = compare(&s, &[s.ids[0].clone(), "01ZZZZZZZZZZZZZZZZZZZZZZZZ".into()]);
    assert_eq!(status, 404, "{err}");
    // Bodies that are not the request: 400 with a JSON error.
    for body in ["not json", "{\"ids\": []}", "{\"run_ids\": 3}"] {
        let (status, kind, text) = request("POST", &format!("{}/compare", s.base), Some(body));
        assert_eq!(status, 400, "{body}: {text}");
        assert!(kind.starts_with("application/json"), "{kind}");
        assert!(json(&text)["error"].is_string());
    }
    let (status, _, text) = request("GET", &format!("{}/no/such/page", s.base), None);
    assert_eq!(status, 404);
    assert!(json(&text)["error"].is_string());

    // The HTML pages.
    let (status, kind, page) = request("GET", &format!("{}/", s.base), None);
    assert_eq!(status, 200);
    assert!(kind.starts_with("text/html"));
    assert_eq!(page.matches("/report\">").count(), 11, "a link per run");
    let (status, _, page) = request("GET", &format!("{}/runs/{}/report", s.base, s.ids[0]), None);
    assert_eq!(status, 200);
    assert!(page.contains("<h2>Queries</h2>") && page.contains("question &lt;3&gt;"));
    let url = format!("{}/report?run_ids={},{}", s.base, s.ids[0], s.ids[1]);
    let (status, _, page) = request("GET", &url, None);
    assert_eq!(status, 200);
    assert!(page.contains("Difference from the baseline"));
}

/// Kills the server process when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_command_prints_its_address_and_serves_the_store() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    let utf8 = camino::Utf8PathBuf::from_path_buf(path.clone()).unwrap();
    let store = SqliteRunStore::open(utf8).unwrap();
    let record = RunRecord::new("test", "golden/datasets/tiny.jsonl", result(0.0));
    store.put(&record).unwrap();
    drop(store);
    let mut child = Child(
        std::process::Command::new(env!("CARGO_BIN_EXE_rag-eval"))
            .args(["serve", "--port", "0", "--store", path.to_str().unwrap()])
            .arg("--labels")
            .arg(dir.path().join("labels.jsonl"))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .strip_prefix("listening on ")
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let (status, _, text) = request("GET", &format!("{url}/runs"), None);
    assert_eq!(status, 200);
    assert_eq!(json(&text)[0]["id"], record.id.as_str());
    // With --labels: the labelling page, every metric of a run without judges, and the file.
    assert!(line.contains("labels.jsonl"), "{line}");
    let (status, _, page) = request("GET", &format!("{url}/runs/latest/label"), None);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("name=\"label.span_recall@5\"") && page.contains("name=\"label.mrr\""));
    assert!(dir.path().join("labels.jsonl").is_file());
}

/// `rag-eval compare --json` on runs of the store the server serves.
fn compare_cli(s: &Server, args: &[&str]) -> Value {
    let store = s._dir.path().join("runs.sqlite");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["compare", "--json", "--store", store.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&String::from_utf8(out.stdout).unwrap())
}

#[test]
fn compare_answers_what_the_command_prints() {
    let s = server();
    let post = |body: Value| {
        let (status, kind, text) = request(
            "POST",
            &format!("{}/compare", s.base),
            Some(&body.to_string()),
        );
        assert!(kind.starts_with("application/json"), "{kind}");
        (status, json(&text))
    };
    // The defaults, over 2 and over 10 runs.
    for n in [2, 10] {
        let ids: Vec<&str> = s.ids[..n].iter().map(String::as_str).collect();
        let (status, body) = post(serde_json::json!({ "run_ids": ids }));
        assert_eq!(status, 200, "{body}");
        assert_eq!(body, compare_cli(&s, &ids), "{n} runs");
        assert_eq!(body["test"], "fisher");
        assert_eq!(body["seed"], 42);
        assert_eq!(body["runs"][0]["label"], format!("run 0 {}", s.ids[0]));
    }
    // Every option, as the command's flags.
    let ids = [s.ids[4].as_str(), s.ids[0].as_str(), s.ids[9].as_str()];
    let (status, body) = post(serde_json::json!({
        "run_ids": ids, "test": "student", "correction": "bonferroni", "alpha": 0.01,
        "seed": 7, "permutations": 500, "resamples": 800, "allow_different_datasets": true
    }));
    assert_eq!(status, 200, "{body}");
    let flags = [
        "--test",
        "student",
        "--correction",
        "bonferroni",
        "--alpha",
        "0.01",
        "--seed",
        "7",
        "--permutations",
        "500",
        "--resamples",
        "800",
        "--allow-different-datasets",
    ];
    assert_eq!(body, compare_cli(&s, &[&flags[..], &ids[..]].concat()));
    assert_eq!(
        (&body["test"], &body["correction"], &body["resamples"]),
        (
            &Value::from("student"),
            &Value::from("bonferroni"),
            &Value::from(800)
        )
    );
    // The same run twice gets two labels, as on the command line.
    let twice = [s.ids[1].as_str(), s.ids[1].as_str()];
    let (status, body) = post(serde_json::json!({ "run_ids": twice }));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, compare_cli(&s, &twice));
    // Options the command would refuse: 400 with a JSON error naming them.
    for (bad, named) in [
        (serde_json::json!({"test": "welch"}), "welch"),
        (serde_json::json!({"correction": "sidak"}), "sidak"),
        (serde_json::json!({"alpha": 1.5}), "alpha"),
        (serde_json::json!({"seed": -1}), "seed"),
        (serde_json::json!({"colour": "red"}), "colour"),
    ] {
        let mut body = bad.clone();
        body["run_ids"] = serde_json::json!([s.ids[0], s.ids[1]]);
        let (status, err) = post(body);
        assert_eq!(status, 400, "{bad}: {err}");
        assert!(
            err["error"].as_str().unwrap().contains(named),
            "{bad}: {err}"
        );
    }
}

#[test]
fn compare_options_beyond_their_maximum_are_bad_requests() {
    let s = server();
    for (option, value, max) in [
        ("resamples", 10_000_000_000u64, "100000"),
        ("permutations", 1_000_000_000_000, "1000000"),
    ] {
        let body = serde_json::json!({"run_ids": &s.ids[..2], option: value}).to_string();
        let (status, kind, text) = request("POST", &format!("{}/compare", s.base), Some(&body));
        assert_eq!(status, 400, "{option}: {text}");
        assert!(kind.starts_with("application/json"), "{kind}");
        let error = json(&text)["error"].as_str().unwrap().to_owned();
        assert!(
            error.contains(option) && error.contains(max),
            "{option}: {error}"
        );
    }
}

#[test]
fn the_command_refuses_a_store_that_does_not_exist_and_creates_none() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent/runs.sqlite");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["serve", "--port", "0", "--store", path.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("there is no run store at `{}`", path.display())),
        "{stderr}"
    );
    assert!(!dir.path().join("absent").exists(), "no folder created");
}

/// One request written as `raw` on a fresh connection; the status and body of the answer
/// (status 0 when the server closed the connection without one).
fn raw_request(base: &str, raw: &str) -> (u16, String) {
    use std::io::{Read as _, Write as _};
    let addr = base.strip_prefix("http://").unwrap();
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    c.write_all(raw.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = c.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[test]
fn only_loopback_host_names_are_answered() {
    let s = server();
    let port = s.base.rsplit(':').next().unwrap().to_owned();
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "LOCALHOST".to_owned(),
        format!("[::1]:{port}"),
    ] {
        let (status, body) = raw_request(
            &s.base,
            &format!("GET /runs HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(status, 200, "{host}: {body}");
    }
    // A page of another site whose name now points at 127.0.0.1 (DNS rebinding).
    for host in [
        format!("attacker.example:{port}"),
        "localhost.attacker.example".to_owned(),
        "127.0.0.1.nip.io".to_owned(),
    ] {
        let (status, body) = raw_request(
            &s.base,
            &format!("GET /runs HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        );
        assert_eq!(status, 403, "{host}: {body}");
        assert!(
            json(&body)["error"].as_str().unwrap().contains("Host"),
            "{body}"
        );
    }
}

#[test]
fn requests_left_half_sent_are_dropped() {
    use std::io::{Read as _, Write as _};
    let s = server();
    let addr = s.base.strip_prefix("http://").unwrap().to_owned();
    let started = std::time::Instant::now();
    let connections: Vec<std::net::TcpStream> = (0..50)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(&addr).unwrap();
            c.write_all(b"GET /runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .unwrap();
            c
        })
        .collect();
    for mut c in connections {
        c.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        // Returns once the server closes the connection (perhaps after a 408), or after 30 s.
        let _ = c.read_to_end(&mut Vec::new());
    }
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_secs(20),
        "half-sent requests held for {took:?}"
    );
}

#[test]
fn bodies_trickled_a_byte_at_a_time_are_cut_off() {
    use std::io::{Read as _, Write as _};
    use std::time::{Duration, Instant};
    let s = server();
    let addr = s.base.strip_prefix("http://").unwrap().to_owned();
    let started = Instant::now();
    // Each client sends its headers at once, then a byte of its 1,000-byte body every
    // 200 ms: 200 s for the whole body, unless the server cuts it off.
    let clients: Vec<_> = (0..20)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut c = std::net::TcpStream::connect(&addr).unwrap();
                c.write_all(
                    b"POST /compare HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                      Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
                )
                .unwrap();
                c.set_read_timeout(Some(Duration::from_millis(200)))
                    .unwrap();
                let mut answer = Vec::new();
                let mut buf = [0u8; 4096];
                while started.elapsed() < Duration::from_secs(60) {
                    // A write the server no longer reads may fail: the answer is what counts.
                    let _ = c.write_all(b" ");
                    match c.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => answer.extend_from_slice(&buf[..n]),
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                        Err(_) => break,
                    }
                }
                String::from_utf8_lossy(&answer).into_owned()
            })
        })
        .collect();
    for client in clients {
        let answer = client.join().unwrap();
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
        assert!(answer.contains("not sent within 10 s"), "{answer}");
    }
    let took = started.elapsed();
    assert!(
        took < rag_eval::serve::BODY_READ_TIMEOUT + Duration::from_secs(10),
        "trickled bodies held for {took:?}"
    );
    // The server still answers.
    let (status, _, _) = request("GET", &format!("{}/runs", s.base), None);
    assert_eq!(status, 200);
}

#[test]
fn errors_are_json_and_name_no_path() {
    let s = server();
    let path = s._dir.path().to_str().unwrap().to_owned();
    let (status, kind, text) = request("GET", &format!("{}/runs/ZZZZ", s.base), None);
    assert_eq!(status, 404, "{text}");
    assert!(kind.starts_with("application/json"), "{kind}");
    assert!(!text.contains(&path), "{text}");
    let (status, kind, text) = request("GET", &format!("{}/runs/%FF", s.base), None);
    assert_eq!(status, 400, "{text}");
    assert!(kind.starts_with("application/json"), "{kind}: {text}");
    json(&text);
    let (status, kind, text) = request("GET", &format!("{}/runs/%FF/report", s.base), None);
    assert_eq!(status, 400, "{text}");
    assert!(kind.starts_with("application/json"), "{kind}: {text}");
}

#[test]
fn report_run_ids_are_decoded_and_may_repeat() {
    let s = server();
    for query in [
        format!("run_ids={}%2C{}", s.ids[0], s.ids[1]),
        format!("run_ids={}%2c{}", s.ids[0], s.ids[1]),
        format!("run_ids={}&run_ids={}", s.ids[0], s.ids[1]),
        format!("run%5Fids={},{}", s.ids[0], s.ids[1]),
    ] {
        let (status, _, page) = request("GET", &format!("{}/report?{query}", s.base), None);
        assert_eq!(status, 200, "{query}: {page}");
        assert!(page.contains("Difference from the baseline"), "{query}");
    }
    let (status, kind, text) = request("GET", &format!("{}/report?run_ids=%FF", s.base), None);
    assert_eq!(status, 400, "{text}");
    assert!(kind.starts_with("application/json"), "{kind}");
}

/// Five answered queries, each judged for faithfulness (two statements, the first supported
/// with its reason and evidence, the second not) and by a `polite` criteria judge on a 1–5
/// scale.
fn answered_run() -> RunResult {
    use rag_eval::metrics::{
        JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage, Passage, QueryJudgement, Statement,
    };
    let sample = |details, score| JudgeSample {
        sample: 0,
        status: JudgeStatus::Ok,
        score: Some(score),
        details,
        message: None,
        kind: None,
        usage: JudgeUsage::default(),
    };
    let per_query = (0..5)
        .map(|i| QueryResult {
            id: format!("q{i}"),
            query: Some(format!("When was release {i} shipped?")),
            metrics: Figures(vec![("faithfulness".into(), 0.5), ("polite".into(), 0.75)]),
            answer: Some(format!("Release {i} shipped in 201{i}.")),
            contexts: Some(vec![Passage {
                doc_id: "notes.md".into(),
                start: 0,
                end: 33,
                text: Some(format!("Release {i} shipped in 201{i}, in May.")),
                located: true,
                not_found: None,
            }]),
            references: vec![format!("In 201{i}.")],
            judges: vec![
                QueryJudgement {
                    metric: "faithfulness".into(),
                    query_id: format!("q{i}"),
                    samples: vec![sample(
                        JudgeDetails::Faithfulness {
                            statements: vec![
                                Statement {
                                    text: format!("Release {i} shipped in 201{i}."),
                                    supported: true,
                                    unlocated: false,
                                    reason: format!("the notes say 201{i} <b>"),
                                    evidence: format!("shipped in 201{i}"),
                                    support: None,
                                },
                                Statement {
                                    text: "It shipped on time.".into(),
                                    supported: false,
                                    unlocated: false,
                                    reason: "no date was planned".into(),
                                    evidence: String::new(),
                                    support: None,
                                },
                            ],
                        },
                        0.5,
                    )],
                },
                QueryJudgement {
                    metric: "polite".into(),
                    query_id: format!("q{i}"),
                    samples: vec![sample(
                        JudgeDetails::Criteria {
                            verdict: "4".into(),
                            reason: "courteous enough".into(),
                            probabilities: None,
                            scale: Some(
                                (1..=5)
                                    .map(|v| (v.to_string(), f64::from(v - 1) / 4.0))
                                    .collect(),
                            ),
                        },
                        0.75,
                    )],
                },
            ],
            ..QueryResult::default()
        })
        .collect();
    RunResult::from_queries(
        ResultLevel::Token,
        vec!["faithfulness".into(), "polite".into()],
        per_query,
    )
}

fn utf8(path: std::path::PathBuf) -> camino::Utf8PathBuf {
    camino::Utf8PathBuf::from_path_buf(path).unwrap()
}

/// A store in `dir` holding the answered run: the store and the run's id.
fn answered_store(dir: &std::path::Path) -> (SqliteRunStore, String) {
    let store = SqliteRunStore::open(utf8(dir.join("runs.sqlite"))).unwrap();
    let record = RunRecord::new("test", "answers.jsonl", answered_run());
    store.put(&record).unwrap();
    (store, record.id.as_str().to_owned())
}

/// A form posted as a browser without JavaScript posts it, redirects not followed:
/// (status, `Location`, body).
pub(crate) fn post_form(url: &str, form: &str) -> (u16, String, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let resp = client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form.to_owned())
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let location = resp
            .headers()
            .get("location")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, location, resp.text().await.unwrap())
    })
}

#[test]
fn the_labelling_page_saves_plain_forms_to_the_labels_file_and_shows_them_again() {
    let dir = tempfile::tempdir().unwrap();
    let labels = utf8(dir.path().join("labels.jsonl"));
    let (store, id) = answered_store(dir.path());
    let (base, runtime) = spawn(store, Some(Arc::new(LabelFile::open(&labels).unwrap())));
    assert_eq!(
        std::fs::read_to_string(&labels).unwrap(),
        "",
        "a new, empty file"
    );
    let page = |base: &str, q: &str| request("GET", &format!("{base}/runs/{id}/label?q={q}"), None);

    // The query, its contexts and what each judge said.
    let (status, kind, html) = page(&base, "1");
    assert_eq!(status, 200, "{html}");
    assert!(kind.starts_with("text/html"), "{kind}");
    for shown in [
        "When was release 1 shipped?",
        "Release 1 shipped in 2011.",
        "In 2011.",
        "Release 1 shipped in 2011, in May.",
        "the notes say 2011 &lt;b&gt;",
        "<td>shipped in 2011</td>",
        ">supported<",
        "verdict <b>4</b>: courteous enough",
        "name=\"label.faithfulness\"",
        "name=\"label.polite\"",
        "Query 2 of 5; 0 labelled",
    ] {
        assert!(html.contains(shown), "{shown}");
    }

    // A plain form: a fail with a note and a score, then the next query.
    let url = |q: u32| format!("{base}/runs/{id}/label?q={q}");
    let (status, location, _) = post_form(
        &url(1),
        "label.faithfulness=fail&score.faithfulness=&note.faithfulness=the+year+is+wrong\
         &label.polite=score&score.polite=0.25&note.polite=&go=next",
    );
    assert_eq!((status, location), (303, format!("/runs/{id}/label?q=2")));
    // The last query's next is itself; a label left empty is none.
    let (status, location, _) = post_form(
        &url(4),
        "label.faithfulness=pass&label.polite=&note.polite=curt%3F&go=next",
    );
    assert_eq!((status, location), (303, format!("/runs/{id}/label?q=4")));
    let written = std::fs::read_to_string(&labels).unwrap();
    assert_eq!(
        written,
        "{\"id\":\"q1\",\"labels\":{\"faithfulness\":0.0,\"polite\":0.25},\"notes\":{\"faithfulness\":\"the year is wrong\"}}\n\
         {\"id\":\"q4\",\"labels\":{\"faithfulness\":1.0},\"notes\":{\"polite\":\"curt?\"}}\n"
    );

    // What `align --labels` reads.
    let mut run = answered_run();
    assert!(rag_eval::align::Labels::load(&labels)
        .unwrap()
        .apply(&mut run)
        .is_empty());
    let alignment = rag_eval::align::Alignment::new(&run, &Default::default(), None);
    let pairs: Vec<(&str, usize)> = alignment
        .metrics
        .iter()
        .map(|m| (m.metric.as_str(), m.pairs))
        .collect();
    assert_eq!(pairs, [("faithfulness", 2), ("polite", 1)]);

    // Bad requests are JSON errors, and change nothing.
    for (form, error) in [
        (
            "label.mrr=pass",
            "`mrr` is not a metric labelled in this run",
        ),
        ("label.polite=score&score.polite=4", "between 0 and 1"),
        ("label.polite=great", "got `great`"),
    ] {
        let (status, _, body) = post_form(&url(0), form);
        assert_eq!(status, 400, "{form}");
        assert!(
            json(&body)["error"].as_str().unwrap().contains(error),
            "{body}"
        );
    }
    let (status, _, body) = post_form(&url(5), "label.polite=pass");
    assert_eq!(status, 404);
    assert!(json(&body)["error"]
        .as_str()
        .unwrap()
        .contains("the run has 5 queries"));
    let (status, _, body) = page(&base, "one");
    assert_eq!(status, 400, "{body}");
    assert_eq!(std::fs::read_to_string(&labels).unwrap(), written);
    drop(runtime);

    // A new server on the same file resumes: the saved labels are shown.
    let (store, _) = answered_store(dir.path());
    let (base, _runtime) = spawn(store, Some(Arc::new(LabelFile::open(&labels).unwrap())));
    let (_, _, html) = page(&base, "1");
    assert!(
        html.contains("value=\"fail\" data-score=\"0\" checked"),
        "{html}"
    );
    // The score 0.25 is the 1–5 judge's 2, and shown as such.
    assert!(html.contains("name=\"label.polite\" value=\"2\" data-score=\"0.25\" checked"));
    assert!(html.contains("value=\"the year is wrong\""));
    assert!(html.contains("Query 2 of 5; 2 labelled"));
    let (_, _, html) = page(&base, "4");
    assert!(html.contains("name=\"label.polite\" value=\"\" checked"));
    assert!(html.contains("value=\"curt?\""));

    // Without a labels file there is no labelling page; a bad labels file fails at start.
    let (store, _) = answered_store(dir.path());
    let (plain, _plain_runtime) = spawn(store, None);
    let (status, _, body) = page(&plain, "0");
    assert_eq!(status, 404);
    assert!(json(&body)["error"]
        .as_str()
        .unwrap()
        .contains("serve --labels FILE"));
    let broken = utf8(dir.path().join("broken.jsonl"));
    std::fs::write(&broken, "{\"id\":\"q1\",\"labels\":{}}\n{\"labels\":{}}\n").unwrap();
    let err = LabelFile::open(&broken).unwrap_err().to_string();
    assert!(err.contains("broken.jsonl:2"), "{err}");
}

/// `rag-eval serve --labels labels.jsonl` over the store in `dir`, its standard error piped:
/// the process and its address.
fn labelling_server(dir: &std::path::Path) -> (Child, String) {
    use std::io::BufRead as _;
    let mut child = Child(
        std::process::Command::new(env!("CARGO_BIN_EXE_rag-eval"))
            .args(["serve", "--port", "0", "--store"])
            .arg(dir.join("runs.sqlite"))
            .arg("--labels")
            .arg(dir.join("labels.jsonl"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    std::io::BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .strip_prefix("listening on ")
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{line:?}"))
        .to_owned();
    (child, url)
}

#[test]
fn a_second_server_on_a_labels_file_is_refused_and_a_failed_save_says_why_on_stderr() {
    use std::io::Read as _;
    let dir = tempfile::tempdir().unwrap();
    let (store, id) = answered_store(dir.path());
    drop(store);
    let (mut first, url) = labelling_server(dir.path());
    // A second server would rewrite the file without the first one's labels.
    let mut second = Child(
        std::process::Command::new(env!("CARGO_BIN_EXE_rag-eval"))
            .args(["serve", "--port", "0", "--store"])
            .arg(dir.path().join("runs.sqlite"))
            .arg("--labels")
            .arg(dir.path().join("labels.jsonl"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // A second server that starts serving is the failure: it is ended after 20 s.
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = second.0.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > std::time::Duration::from_secs(20) {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = second.0.kill();
    let mut stderr = String::new();
    second
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(1), "{stderr}");
    assert!(
        stderr.contains("labels.jsonl` is being labelled by another server"),
        "{stderr}"
    );
    // The first one saves; then its file becomes something it cannot replace.
    let form = "label.faithfulness=pass&go=stay";
    let (status, _, body) = post_form(&format!("{url}/runs/{id}/label?q=0"), form);
    assert_eq!(status, 303, "{body}");
    let labels = dir.path().join("labels.jsonl");
    std::fs::remove_file(&labels).unwrap();
    std::fs::create_dir(&labels).unwrap();
    let (status, _, body) = post_form(&format!("{url}/runs/{id}/label?q=0"), form);
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("the server's standard error says why"),
        "{body}"
    );
    first.0.kill().unwrap();
    stderr.clear();
    first
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        stderr.contains("the labels could not be saved")
            && stderr.contains("labels.jsonl")
            && stderr.contains("not a regular file"),
        "{stderr}"
    );
    // Killed, the first server left `labels.jsonl.lock` behind, and holds no lock on it: the
    // next server on the file starts.
    first.0.wait().unwrap();
    std::fs::remove_dir(&labels).unwrap();
    assert!(dir.path().join("labels.jsonl.lock").exists());
    let (mut next, url) = labelling_server(dir.path());
    let (status, _, body) = post_form(&format!("{url}/runs/{id}/label?q=0"), form);
    assert_eq!(status, 303, "{body}");
    next.0.kill().unwrap();
}

#[test]
fn statement_verdicts_flipped_in_a_plain_form_are_saved_and_label_the_metric() {
    let dir = tempfile::tempdir().unwrap();
    let labels = utf8(dir.path().join("labels.jsonl"));
    let (store, id) = answered_store(dir.path());
    let (base, _runtime) = spawn(store, Some(Arc::new(LabelFile::open(&labels).unwrap())));
    let url = |q: u32| format!("{base}/runs/{id}/label?q={q}");
    let page = |q: u32| request("GET", &url(q), None).2;

    // Each statement has the person's verdict beside the judge's, at first the judge's.
    let html = page(0);
    for shown in [
        "<tr data-judge=\"supported\"><td>Release 0 shipped in 2010.</td>",
        "name=\"verdict.faithfulness.0\" value=\"supported\" checked",
        "name=\"verdict.faithfulness.1\" value=\"unsupported\" checked",
        "<span class=\"share\">1 of 2</span>",
    ] {
        assert!(html.contains(shown), "{shown}\n{html}");
    }
    assert!(
        !html.contains("verdict.polite"),
        "a criteria judge has no statements"
    );

    // q0: the second statement flipped, no label: the verdicts are kept. q1: a label and the
    // judge's verdicts: kept too, as the person saw them. q2: neither: nothing.
    let both = |a: &str, b: &str| format!("verdict.faithfulness.0={a}&verdict.faithfulness.1={b}");
    for (q, form) in [
        (
            0,
            format!(
                "label.faithfulness=&label.polite=&{}",
                both("supported", "supported")
            ),
        ),
        (
            1,
            format!(
                "label.faithfulness=fail&label.polite=4&{}",
                both("supported", "unsupported")
            ),
        ),
        (
            2,
            format!(
                "label.faithfulness=&label.polite=&{}",
                both("supported", "unsupported")
            ),
        ),
    ] {
        let (status, _, body) = post_form(&url(q), &form);
        assert_eq!(status, 303, "{body}");
    }
    let written = std::fs::read_to_string(&labels).unwrap();
    assert_eq!(
        written,
        "{\"id\":\"q0\",\"labels\":{},\"statements\":{\"faithfulness\":[\
         {\"supported\":true,\"text\":\"Release 0 shipped in 2010.\"},\
         {\"supported\":true,\"text\":\"It shipped on time.\"}]}}\n\
         {\"id\":\"q1\",\"labels\":{\"faithfulness\":0.0,\"polite\":0.75},\"statements\":{\"faithfulness\":[\
         {\"supported\":true,\"text\":\"Release 1 shipped in 2011.\"},\
         {\"supported\":false,\"text\":\"It shipped on time.\"}]}}\n"
    );
    // The flipped verdicts label q0's faithfulness with their share; q1 keeps its own label,
    // and the 1–5 judge's 4 is 0.75.
    let mut run = answered_run();
    assert!(rag_eval::align::Labels::load(&labels)
        .unwrap()
        .apply(&mut run)
        .is_empty());
    assert_eq!(
        run.labels["q0"],
        Figures(vec![("faithfulness".into(), 1.0)])
    );
    assert_eq!(
        run.labels["q1"],
        Figures(vec![("faithfulness".into(), 0.0), ("polite".into(), 0.75)])
    );
    assert!(!run.labels.contains_key("q2"));

    // The page shows them again, the flipped row marked.
    let html = page(0);
    for shown in [
        "<tr data-judge=\"unsupported\" class=\"flipped\"><td>It shipped on time.</td>",
        "name=\"verdict.faithfulness.1\" value=\"supported\" checked",
        "labelled 1 by your statement verdicts",
        "<span class=\"share\">2 of 2</span>",
        "Query 1 of 5; 2 labelled",
    ] {
        assert!(html.contains(shown), "{shown}");
    }

    // Bad verdicts are JSON errors, and change nothing.
    for (form, error) in [
        ("verdict.faithfulness.0=maybe", "got `maybe`"),
        ("label.polite=6", "got `6`"),
        (
            "verdict.faithfulness.0=supported",
            "`verdict.faithfulness.1` is missing",
        ),
        (
            "verdict.faithfulness.2=supported",
            "there is no statement 2",
        ),
        ("verdict.polite.0=supported", "gave no statements"),
        ("verdict.mrr.0=supported", "`mrr` is not a metric labelled"),
        (
            "verdict.faithfulness=supported",
            "`verdict.<metric>.<statement number>`",
        ),
    ] {
        let (status, _, body) = post_form(&url(3), form);
        assert_eq!(status, 400, "{form}: {body}");
        assert!(
            json(&body)["error"].as_str().unwrap().contains(error),
            "{form}: {body}"
        );
    }
    assert_eq!(std::fs::read_to_string(&labels).unwrap(), written);

    // Flipped back with no label: q0's verdicts are dropped, and with them its line.
    let (status, _, _) = post_form(&url(0), &both("supported", "unsupported"));
    assert_eq!(status, 303);
    assert!(std::fs::read_to_string(&labels)
        .unwrap()
        .starts_with("{\"id\":\"q1\""));
}

#[cfg(target_os = "linux")]
use crate::support::cdp;

/// The page in headless Chromium, as a person uses it: five queries by keyboard, statement
/// verdicts flipped on two, then one by mouse and a reload; the file holds exactly what was
/// pressed and clicked.
#[cfg(target_os = "linux")]
#[test]
fn the_labelling_page_by_keyboard_and_mouse_in_chromium() {
    let Some(chromium) = std::env::var("RAG_EVAL_CHROMIUM")
        .ok()
        .filter(|p| !p.is_empty())
    else {
        eprintln!("skipped: RAG_EVAL_CHROMIUM is not set (source .ci/chromium.sh)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let labels = utf8(dir.path().join("labels.jsonl"));
    let (store, id) = answered_store(dir.path());
    let (base, _runtime) = spawn(store, Some(Arc::new(LabelFile::open(&labels).unwrap())));
    let mut b = cdp::Browser::launch(&chromium, 1200, 1500);
    b.open(&format!("{base}/runs/{id}/label?q=0"));
    assert_eq!(b.eval("document.body.dataset.ready"), "yes");
    let here = |b: &mut cdp::Browser| b.eval("location.search").as_str().unwrap().to_owned();
    let flipped = "[...document.querySelectorAll('tr.flipped td:first-child')]\
                   .map(e => e.textContent).join('|') + ' ' + document.querySelector('.share').textContent";
    // q0: pass, pass; q1: fail, pass; q2: the second statement flipped (no faithfulness label),
    // polite fails; q3: metric 2 first, fail, then 1, pass; q4: the first statement flipped.
    // On polite's 1–5 scale `p` is 5 and `f` is 1.
    for (q, keys) in [
        (0, &["p", "p"][..]),
        (1, &["f", "p"]),
        (2, &["j", "x", "2", "f"]),
        (3, &["2", "f", "1", "p"]),
        (4, &["x"]),
    ] {
        assert_eq!(here(&mut b), format!("?q={q}"));
        for key in keys {
            b.press(key);
        }
        match q {
            2 => assert_eq!(b.eval(flipped), "It shipped on time. 2 of 2"),
            4 => assert_eq!(b.eval(flipped), "Release 4 shipped in 2014. 0 of 2"),
            _ => assert_eq!(b.eval(flipped), " 1 of 2"),
        }
        b.until_loaded(|b| b.press("Enter"));
    }
    // The last query's next is itself.
    assert_eq!(here(&mut b), "?q=4");
    // q4 by mouse: polite gets a 2 of the judge's 1–5 (0.25), with a note typed into its
    // field, and the second statement flipped as well; saved in place.
    b.click("input[name='label.polite'][value='2']");
    b.click("input[name='note.polite']");
    b.type_text("too curt");
    b.click("input[name='verdict.faithfulness.1'][value='supported']");
    assert_eq!(
        b.eval(flipped),
        "Release 4 shipped in 2014.|It shipped on time. 1 of 2"
    );
    b.until_loaded(|b| b.click("button[value='stay']"));
    assert_eq!(here(&mut b), "?q=4");
    let verdicts = |i: usize, first: bool, second: bool| {
        format!(
            "\"statements\":{{\"faithfulness\":[{{\"supported\":{first},\"text\":\"Release {i} shipped in 201{i}.\"}},\
             {{\"supported\":{second},\"text\":\"It shipped on time.\"}}]}}"
        )
    };
    assert_eq!(
        std::fs::read_to_string(&labels).unwrap(),
        format!(
            "{{\"id\":\"q0\",\"labels\":{{\"faithfulness\":1.0,\"polite\":1.0}},{}}}\n\
             {{\"id\":\"q1\",\"labels\":{{\"faithfulness\":0.0,\"polite\":1.0}},{}}}\n\
             {{\"id\":\"q2\",\"labels\":{{\"polite\":0.0}},{}}}\n\
             {{\"id\":\"q3\",\"labels\":{{\"faithfulness\":1.0,\"polite\":0.0}},{}}}\n\
             {{\"id\":\"q4\",\"labels\":{{\"polite\":0.25}},\"notes\":{{\"polite\":\"too curt\"}},{}}}\n",
            verdicts(0, true, false),
            verdicts(1, true, false),
            verdicts(2, true, true),
            verdicts(3, true, false),
            verdicts(4, false, true),
        )
    );
    // A reload, and another query reopened: the saved labels and verdicts are checked.
    let checked = "[...document.querySelectorAll('input[type=radio]:checked')]\
                   .map(e => e.name + '=' + e.value).join(' ')";
    b.until_loaded(|b| {
        b.call("Page.reload", serde_json::json!({}));
    });
    assert_eq!(
        b.eval(checked),
        "verdict.faithfulness.0=unsupported verdict.faithfulness.1=supported \
         label.faithfulness= label.polite=2"
    );
    assert_eq!(
        b.eval("document.querySelector(\"input[name='note.polite']\").value"),
        "too curt"
    );
    assert!(b
        .eval("document.querySelector('legend').textContent")
        .as_str()
        .unwrap()
        .contains("labelled 0.5 by your statement verdicts"));
    b.open(&format!("{base}/runs/{id}/label?q=2"));
    assert_eq!(
        b.eval(checked),
        "verdict.faithfulness.0=supported verdict.faithfulness.1=supported \
         label.faithfulness= label.polite=1"
    );
    assert_eq!(b.eval(flipped), "It shipped on time. 2 of 2");
    assert_eq!(
        b.eval("[...document.querySelectorAll('nav .done')].map(a => a.textContent).join(',')"),
        "1,2,3,4,5"
    );
    assert!(b.console().is_empty(), "console: {:#?}", b.console());

    // A screenshot for a person to look at.
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("../reports");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("label-page.png");
    let png = b.screenshot();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
    std::fs::write(&shot, png).unwrap();
    eprintln!("screenshot: {}", shot.canonicalize().unwrap().display());
}
