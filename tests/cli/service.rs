//! A RAG service evaluated as a black box (`http:url=…`): against a real service started here
//! (`tests/support/rag_service.py`, Python's `http.server` over the bundled corpus), through
//! the library and through `rag-eval eval --rag`, with its slow, failing and malformed answers,
//! and replayed from the cache once the service is gone; and against the hostile double, a
//! service that never answers, redirects elsewhere or sends bodies without end.

use crate::support::rag_service::{judge, qa_pairs, Service};
use rag_eval::cache::{Cache, CacheMode};
use rag_eval::corpus::Corpus;
use rag_eval::service::HttpRag;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus() -> Corpus {
    Corpus::from_folder(root().join("examples/data/corpus").to_str().unwrap(), None).unwrap()
}

fn queries(n: usize) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("examples/data/questions.jsonl")).unwrap();
    text.lines()
        .take(n)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["id"].as_str().unwrap().to_owned(),
                v["inputs"]["query"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn answers_and_contexts_of_a_real_service_are_read_and_placed_in_the_corpus() {
    let service = Service::start("good");
    let rag = HttpRag::from_spec(&service.spec("/ask", "")).unwrap();
    let corpus = corpus();
    let asked = queries(10);
    let (answers, placed) = block_on(rag.ask_all(&asked, Some(&corpus))).unwrap();
    assert_eq!(answers.len(), 10);
    // Three sources per question, and a fourth in no document for q0007.
    let placed = placed.unwrap();
    assert_eq!(placed.total(), 31);
    assert_eq!(placed.unlocated, 1);
    assert!(placed.normalized > 0, "{placed:?}");
    for (id, _) in &asked {
        let a = answers.get(id).unwrap();
        assert!(!a.answer.is_empty(), "{id}");
        for c in a.contexts.iter().filter(|c| !c.chunk.span.is_empty()) {
            // Every placed context covers text of its document that reads as what the
            // service sent, whitespace aside.
            let doc = corpus.get(c.chunk.span.doc.as_str()).unwrap();
            let there = doc.slice(c.chunk.span.start, c.chunk.span.end).unwrap();
            let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(squash(there), squash(&c.chunk.content), "{id}");
        }
    }
    // The stub's best source for q0001 is the installation guide's requirement.
    let q1 = answers.get("q0001").unwrap();
    assert_eq!(
        q1.contexts[0].chunk.span.doc.as_str(),
        "guides/installation.md"
    );
    assert!(q1.answer.contains("4.18"), "{}", q1.answer);
    // What an answering `#[rag_eval]` case returns: the same answer and placed contexts.
    let one = block_on(rag.answer(&asked[0].1, Some(&corpus))).unwrap();
    assert_eq!(&one, q1);
}

#[test]
fn slow_failing_and_malformed_services_fail_naming_the_url_and_what_went_wrong() {
    let service = Service::start("good");
    let one = queries(1);
    let ask = |spec: String| {
        let rag = HttpRag::from_spec(&spec).unwrap();
        let started = Instant::now();
        let e = block_on(rag.ask_all(&one, None)).unwrap_err().to_string();
        (e, started.elapsed())
    };
    let (e, took) = ask(service.spec("/slow", ",timeout=1,retries=0,concurrency=1"));
    assert!(e.contains(&format!("{}/slow", service.base)), "{e}");
    assert!(e.contains("no complete answer within 1s"), "{e}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    let (e, _) = ask(service.spec("/fail", ",retries=1"));
    assert!(e.contains("500 Internal Server Error"), "{e}");
    assert!(
        e.contains("the model server is down") && e.contains("after 2 attempts"),
        "{e}"
    );
    let (e, _) = ask(service.spec("/malformed", ",retries=0"));
    assert!(
        e.contains("query `q0001`: the response has no `/answer` (set `answer=`"),
        "{e}"
    );
    let (e, _) = ask(service.spec("/broken", ",retries=0"));
    assert!(e.contains("invalid JSON in the answer"), "{e}");
    assert!(e.contains("Bad gateway"), "{e}");
}

#[test]
fn responses_are_recorded_and_replayed_without_the_service() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    let asked = queries(5);
    let corpus = corpus();
    let service = Service::start("good");
    let spec = service.spec("/ask", "");
    let rw = Arc::new(Cache::open(path.to_str().unwrap(), CacheMode::ReadWrite).unwrap());
    let rag = HttpRag::from_spec(&spec).unwrap().with_cache(rw);
    let (live, placed) = block_on(rag.ask_all(&asked, Some(&corpus))).unwrap();
    drop(rag);
    drop(service);
    let replay = Arc::new(Cache::open(path.to_str().unwrap(), CacheMode::Replay).unwrap());
    let rag = HttpRag::from_spec(&spec).unwrap().with_cache(replay);
    let (again, placed_again) = block_on(rag.ask_all(&asked, Some(&corpus))).unwrap();
    assert_eq!(placed, placed_again);
    for (id, _) in &asked {
        assert_eq!(live.get(id), again.get(id), "{id}");
    }
    // A question never asked is a miss, named, not a call to the absent service.
    let e = block_on(rag.ask_all(&[("q9".into(), "new?".into())], None)).unwrap_err();
    assert!(e.to_string().contains("replay"), "{e}");
}

/// `rag-eval` with the run store at `store`.
fn cli(store: &Path, args: &[&str]) -> (i32, String, String) {
    crate::cli_support::run_in(&root(), store, args)
}

fn recorded_id(stderr: &str) -> String {
    let at = stderr.find("recorded run ").expect(stderr) + "recorded run ".len();
    stderr[at..].split_whitespace().next().unwrap().to_owned()
}

/// The walkthrough of `docs/guide/service.md`: question/answer pairs, a service whose contexts
/// are text, `eval --rag` with judges, the answers saved and scored again from the file, a
/// report with the answers, a gate that fails on a worse service, and a replay with the
/// service and the judge stopped that gives the same figures.
#[test]
fn eval_rag_scores_a_service_reports_gates_and_replays_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let dataset = dir.path().join("qa.jsonl");
    std::fs::write(&dataset, qa_pairs()).unwrap();
    let (code, out, err) = cli(
        &store,
        &[
            "dataset",
            "validate",
            dataset.to_str().unwrap(),
            "--corpus",
            "examples/data/corpus",
            "--json",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(summary["shape"], "qa");
    assert_eq!(summary["with_reference_answer"], 40);

    let cache = format!("rw:path={}", dir.path().join("cache.sqlite").display());
    let judge = judge();
    let judge_url = judge.url("/v1");
    let saved = dir.path().join("saved.jsonl");
    let judged = [
        "--judge-model",
        "judge-m",
        "--judge-url",
        &judge_url,
        "--judges",
        "faithfulness,answer_relevancy",
        "--embedder",
        "hashing",
        "--save-answers",
        saved.to_str().unwrap(),
    ];
    let eval = |spec: &str, cache: &str, extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--rag",
            spec,
            "--dataset",
            dataset.to_str().unwrap(),
            "--corpus",
            "examples/data/corpus",
            "--cache",
            cache,
            "--json",
        ];
        args.extend(extra);
        let (code, out, err) = cli(&store, &args);
        assert_eq!(code, 0, "{err}");
        let card: Value = serde_json::from_str(out.trim()).unwrap();
        (card, recorded_id(&err), err)
    };
    let good = Service::start("good");
    let spec = good.spec("/ask", "");
    let (card, good_run, err) = eval(&spec, &cache, &judged);
    assert!(err.contains("40 answers"), "{err}");
    // Lexical answer metrics, and no retrieval figure anywhere: not measured, never 0.
    let metrics = card["metrics"].as_object().unwrap();
    assert!(metrics["token_f1"].as_f64().unwrap() > 0.1, "{card}");
    assert!(
        metrics.keys().all(|k| !k.contains('@') && k != "mrr"),
        "{card}"
    );
    assert!(card["per_query"][0]["metrics"]
        .get("span_recall@5")
        .is_none());
    assert_eq!(card["retrieval_not_measured"], 40);
    // 120 sources and 4 in no document; the plain-text ones with collapsed whitespace are
    // found ignoring whitespace.
    assert_eq!(
        card["contexts_located"],
        serde_json::json!({"exact": 82, "normalized": 38, "unlocated": 4})
    );
    assert!(err.contains("124 contexts given as text"), "{err}");

    // Every answer judged: a figure and a summary per judge, and per query what the judge
    // said.
    let judges: Vec<(&str, u64)> = card["judges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["metric"].as_str().unwrap(), j["ok"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        judges,
        [("faithfulness", 40), ("answer_relevancy", 40)],
        "{err}"
    );
    assert_eq!(metrics["faithfulness"], 1.0, "{card}");
    assert!(metrics["answer_relevancy"].as_f64().is_some(), "{card}");
    assert!(metrics["answer_similarity"].as_f64().is_some(), "{card}");

    // The record keeps the answers, their placed contexts and what the judges said.
    let (code, shown, err) = cli(&store, &["runs", "show", &good_run, "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        !shown.contains(&judge_url),
        "the judge's URL is not recorded"
    );
    let run: Value = serde_json::from_str(shown.trim()).unwrap();
    assert_eq!(
        run["config"]["judge_models"],
        serde_json::json!(["judge-m"])
    );
    let q1 = &run["result"]["per_query"][0];
    assert_eq!(q1["id"], "q0001");
    assert!(q1["answer"].as_str().unwrap().contains("4.18"), "{q1}");
    assert_eq!(
        q1["contexts"][0]["doc_id"], "guides/installation.md",
        "{q1}"
    );
    let statement = &q1["judges"][0]["samples"][0]["details"]["statements"][0];
    assert_eq!(statement["supported"], true, "{q1}");
    assert_eq!(statement["reason"], "passage 1 says it", "{q1}");
    assert_eq!(q1["judges"][1]["metric"], "answer_relevancy", "{q1}");

    // The saved answers score again from the file, without the service: the same figures.
    let (code, out, err) = cli(
        &store,
        &[
            "score",
            "--answers",
            saved.to_str().unwrap(),
            "--dataset",
            dataset.to_str().unwrap(),
            "--corpus",
            "examples/data/corpus",
            "--json",
            "--no-record",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let from_file: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(from_file["contexts_located"], card["contexts_located"]);
    for m in ["token_f1", "rouge_l", "bleu", "exact_match"] {
        assert_eq!(from_file["metrics"][m], metrics[m], "{m}");
    }

    // A report of the run.
    let report = dir.path().join("report.html");
    let (code, _, err) = cli(
        &store,
        &["report", &good_run, "-o", report.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    let page = std::fs::read_to_string(&report).unwrap();
    assert!(page.contains("token_f1"));
    // With the answers and what the judge said of them.
    assert!(page.contains("passage 1 says it"));
    assert!(page.contains("faithfulness"));

    // The same service answering worse: the gate fails.
    let poor = Service::start("poor");
    let (poor_card, poor_run, _) = eval(&poor.spec("/ask", ""), "off", &[]);
    assert!(poor_card["metrics"]["token_f1"].as_f64() < card["metrics"]["token_f1"].as_f64());
    let (code, out, err) = cli(
        &store,
        &["compare", &good_run, &poor_run, "--fail-on-regression"],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("token_f1"), "{out}");

    // The service and the judge stopped: the recorded responses give the same figures.
    drop(good);
    drop(judge);
    let replay = format!("replay:path={}", dir.path().join("cache.sqlite").display());
    let (again, _, err) = eval(&spec, &replay, &judged);
    assert!(err.contains("0 misses"), "{err}");
    assert_eq!(again["metrics"], card["metrics"]);
    assert_eq!(again["per_query"], card["per_query"]);
}

/// `rag-eval` in the crate's folder with the run store off and `env` set, killed after 60 s:
/// (exit code, stderr, seconds taken).
fn cli_with_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, f64) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_rag-eval"));
    command
        .args(args)
        .current_dir(root())
        .env("RAG_EVAL_RUNS", "off")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let started = Instant::now();
    let mut child = command.spawn().expect("the binary runs");
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("{args:?} still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed().as_secs_f64();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stderr).unwrap(),
        took,
    )
}

/// `eval --rag SPEC` over the bundled corpus and question/answer pairs written in `dir`, then
/// `extra`.
fn eval_rag(dir: &Path, spec: &str, extra: &[&str], env: &[(&str, &str)]) -> (i32, String, f64) {
    let dataset = dir.join("qa.jsonl");
    std::fs::write(&dataset, qa_pairs()).unwrap();
    let mut args = vec![
        "eval",
        "--rag",
        spec,
        "--dataset",
        dataset.to_str().unwrap(),
        "--corpus",
        "examples/data/corpus",
    ];
    args.extend(extra);
    cli_with_env(&args, env)
}

#[test]
fn a_service_that_never_answers_meets_the_deadline_of_the_cli_and_of_the_spec() {
    use crate::support::hostile::{HostileServer, Hostility};
    // It accepts every POST and never answers; its GETs (the client's liveness check) are
    // answered at once, so it looks alive.
    let server = HostileServer::start(Hostility::HangOnPost);
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("http:url={}", server.url("/ask"));
    let (code, err, took) = eval_rag(dir.path(), &spec, &["--timeout", "3"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("deadline of 3s"), "{err}");
    assert!(err.contains(&server.url("/ask")), "{err}");
    assert!(took < 10.0, "{took} s");
    // The spec's own key, shorter than --timeout's default.
    let spec = format!("http:url={},timeout=2", server.url("/ask"));
    let (code, err, took) = eval_rag(dir.path(), &spec, &[], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("deadline of 2s"), "{err}");
    assert!(took < 9.0, "{took} s");
    // What a `#[rag_eval]` case calls: the same deadline.
    let rag = HttpRag::from_spec(&spec).unwrap();
    let started = Instant::now();
    let e = block_on(rag.answer("When?", None)).unwrap_err().to_string();
    assert!(e.contains("deadline of 2s"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5), "{e}");
}

/// A server that answers every question and keeps each request's headers.
fn recording_service(
    seen: Arc<std::sync::Mutex<Vec<crate::support::Request>>>,
) -> crate::support::TestServer {
    crate::support::TestServer::start(move |request| {
        seen.lock().unwrap().push(request.clone());
        crate::support::Reply::json(
            200,
            &serde_json::json!({"answer": "elsewhere", "contexts": []}),
        )
    })
}

#[test]
fn a_redirect_to_another_origin_never_takes_the_services_headers_along() {
    use crate::support::hostile::{HostileServer, Hostility};
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let other = recording_service(Arc::clone(&seen));
    let server = HostileServer::start(Hostility::RedirectTo(other.url("/ask")));
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        "http:url={},headers=X-Api-Key:RAG_EVAL_TEST_REDIRECT_KEY,retries=0",
        server.url("/ask")
    );
    let env = [("RAG_EVAL_TEST_REDIRECT_KEY", "svc-s3cret-key")];
    let (code, err, _) = eval_rag(dir.path(), &spec, &[], &env);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("307") && err.contains("another origin") && err.contains(&other.url("/ask")),
        "{err}"
    );
    assert!(!err.contains("svc-s3cret-key"), "{err}");
    assert!(
        seen.lock().unwrap().is_empty(),
        "the other server was asked"
    );

    // Without a configured header or key nothing secret goes along: the redirect is followed,
    // and the output names the URL that answered.
    let spec = format!("http:url={}", server.url("/ask"));
    let (code, err, _) = eval_rag(dir.path(), &spec, &["--no-record"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains(&format!(
            "answered by {} after a redirect",
            other.url("/ask")
        )),
        "{err}"
    );
    let asked = seen.lock().unwrap();
    assert!(!asked.is_empty());
    assert!(asked.iter().all(|r| r.header("x-api-key").is_none()));
}

#[test]
fn a_token_given_as_the_user_name_of_the_url_is_not_shown() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err, _) = eval_rag(
        dir.path(),
        "http:url=http://ghp_T0KENabc123@127.0.0.1:9/ask",
        &[],
        &[],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("carries a user name or password"), "{err}");
    assert!(!err.contains("ghp_T0KENabc123"), "{err}");
    assert!(err.contains("http://***@127.0.0.1:9/ask"), "{err}");
}

#[test]
fn endless_bodies_read_at_once_stop_at_the_process_budget() {
    use crate::support::hostile::{HostileServer, Hostility};
    let server = HostileServer::start(Hostility::EndlessBody);
    let dir = tempfile::tempdir().unwrap();
    // 16 bodies without end at once; alone, each would be cut at 64 MiB.
    let spec = format!("http:url={},concurrency=16,retries=0", server.url("/ask"));
    let env = [("RAG_EVAL_HTTP_MEMORY", "8MiB")];
    let (code, err, took) = eval_rag(dir.path(), &spec, &[], &env);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("budget of 8388608 bytes for the whole process")
            && err.contains("RAG_EVAL_HTTP_MEMORY"),
        "{err}"
    );
    assert!(took < 30.0, "{took} s");
    // A budget that is not a size is refused, naming the variable.
    let env = [("RAG_EVAL_HTTP_MEMORY", "lots")];
    let (code, err, _) = eval_rag(dir.path(), &spec, &[], &env);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("RAG_EVAL_HTTP_MEMORY") && err.contains("`lots` is not a size"),
        "{err}"
    );
}
