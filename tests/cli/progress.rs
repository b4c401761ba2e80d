//! The long commands' progress line on stderr when it is not a terminal (a CI log): one line
//! after five seconds, then one every ten at most, naming the stage, what is done of its total
//! and the time since it began; and judge answers kept in the cache when a run is killed
//! halfway.

use crate::support::chat::{chat_server, completion, Chat};
use crate::support::{Reply, Request, TestServer};
use serde_json::json;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn rag_eval(args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args)
        .env("RAG_EVAL_RUNS", "off")
        .current_dir(REPO)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out, started.elapsed())
}

/// A judge that finds no statement in any answer, each reply after `delay`; it counts them.
fn slow_judge(delay: Duration, asked: Arc<AtomicUsize>) -> TestServer {
    chat_server(move |_: &Chat| {
        asked.fetch_add(1, Ordering::SeqCst);
        Reply::from(completion(r#"{"statements": []}"#, (40, 8))).delayed(delay)
    })
}

/// The progress lines of `stderr` of `prefix`, checked to be whole lines (no terminal
/// rewriting) and at most one per ten seconds of `took` after the first at five.
fn progress_lines<'a>(stderr: &'a str, prefix: &str, took: Duration) -> Vec<&'a str> {
    assert!(
        !stderr.contains('\r'),
        "no terminal rewriting in a log: {stderr:?}"
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with(prefix)).collect();
    let most = 1 + (took.as_secs_f64() - 5.0).max(0.0) as usize / 10;
    assert!(
        !lines.is_empty() && lines.len() <= most,
        "{} lines in {took:?}: {stderr}",
        lines.len()
    );
    lines
}

/// `done/total unit, Ns` at the end of a progress line: (done, total, seconds).
fn count(line: &str, unit: &str) -> (usize, usize, u64) {
    let (head, time) = line.rsplit_once(", ").unwrap();
    let counted = head.strip_suffix(&format!(" {unit}")).expect(line);
    let (done, total) = counted.rsplit_once(' ').unwrap().1.split_once('/').unwrap();
    let secs = time.strip_suffix('s').expect(line).parse().expect(line);
    (done.parse().unwrap(), total.parse().unwrap(), secs)
}

#[test]
fn judging_answers_shows_its_stage_and_count_in_a_log() {
    let asked = Arc::new(AtomicUsize::new(0));
    let judge = slow_judge(Duration::from_millis(170), asked.clone());
    let url = judge.url("/v1");
    let (out, took) = rag_eval(&[
        "score",
        "--dataset",
        "examples/data/questions.jsonl",
        "--answers",
        "examples/data/answers.jsonl",
        "--corpus",
        "examples/data/corpus",
        "--judge-model",
        "m",
        "--judge-url",
        &url,
        "--judges",
        "faithfulness",
        "--concurrency",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        took > Duration::from_secs(6),
        "{took:?}: a run long enough to show a line"
    );
    let lines = progress_lines(&stderr, "rag-eval: judge faithfulness ", took);
    let (done, total, secs) = count(lines[0], "queries");
    assert_eq!(total, 40, "{}", lines[0]);
    assert!(done > 0 && done < 40, "{}", lines[0]);
    assert!((5..=7).contains(&secs), "{}", lines[0]);
    // The figures still go to stdout alone.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("rag-eval: "));
}

#[test]
fn eval_answering_shows_its_generate_stage_under_the_chunker_in_a_log() {
    let generator = chat_server(|_: &Chat| {
        Reply::from(completion("Kernel 4.18.", (40, 8))).delayed(Duration::from_millis(170))
    });
    let url = generator.url("/v1");
    let (out, took) = rag_eval(&[
        "eval",
        "--corpus",
        "examples/data/corpus",
        "--dataset",
        "examples/data/questions.jsonl",
        "--chunker",
        "recursive:size=400,overlap=0",
        "--answers",
        "--model",
        "m",
        "--base-url",
        &url,
        "--concurrency",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = progress_lines(&stderr, "recursive:size=400,overlap=0: generate ", took);
    let (done, total, _) = count(lines[0], "queries");
    assert!(done > 0 && done < total && total == 40, "{stderr}");
}

#[test]
fn asking_a_service_shows_its_stage_and_count_and_says_what_was_replayed() {
    let served = Arc::new(AtomicUsize::new(0));
    let count_served = served.clone();
    let service = TestServer::start(move |_: Request| {
        count_served.fetch_add(1, Ordering::SeqCst);
        Reply::json(
            200,
            &json!({"answer": "Kernel 4.18.", "contexts": ["kernel 4.18"]}),
        )
        .delayed(Duration::from_millis(150))
    });
    let dir = tempfile::tempdir().unwrap();
    let cache = format!("rw:path={}", dir.path().join("c.sqlite").display());
    let spec = format!("http:url={},concurrency=1", service.url("/ask"));
    let eval = |cache: &str| {
        rag_eval(&[
            "eval",
            "--rag",
            &spec,
            "--corpus",
            "examples/data/corpus",
            "--dataset",
            "examples/data/questions.jsonl",
            "--cache",
            cache,
        ])
    };
    let (out, took) = eval(&cache);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = progress_lines(&stderr, "rag-eval: ask the system ", took);
    assert_eq!(count(lines[0], "queries").1, 40, "{stderr}");
    assert!(stderr.contains("asked http://127.0.0.1:"), "{stderr}");
    assert!(stderr.contains("/ask for 40 answers in "), "{stderr}");
    // Replayed, the service is not asked, and the note says so.
    let before = served.load(Ordering::SeqCst);
    let replay = cache.replacen("rw", "replay", 1);
    let (out, _) = eval(&replay);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(served.load(Ordering::SeqCst), before);
    assert!(
        stderr.contains("replayed the 40 answers of http://127.0.0.1:")
            && !stderr.contains("asked http"),
        "{stderr}"
    );
}

#[test]
fn generating_a_dataset_shows_the_documents_done_instead_of_a_line_each() {
    let chat = chat_server(|_: &Chat| {
        Reply::from(completion(r#"{"questions": []}"#, (40, 8))).delayed(Duration::from_millis(700))
    });
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("d.jsonl");
    let (out, took) = rag_eval(&[
        "generate",
        "token",
        "--corpus",
        "examples/data/corpus",
        "--output",
        output.to_str().unwrap(),
        "--model",
        "m",
        "--base-url",
        &chat.url("/v1"),
        "--concurrency",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines = progress_lines(&stderr, "rag-eval: generate ", took);
    let (done, total, _) = count(lines[0], "documents");
    assert!(done < total, "{stderr}");
    assert!(!stderr.contains("[1/"), "no line per document: {stderr}");
}

/// Kills `child` with SIGTERM, as a CI runner's timeout does.
fn terminate(child: &std::process::Child) {
    // SAFETY: a plain kill(2) of our own child's pid.
    let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0);
}

#[test]
fn judge_answers_received_before_a_kill_are_replayed_from_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = format!("rw:path={}", dir.path().join("c.sqlite").display());
    // The first ten answers come at once; the eleventh never does.
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let hanging = chat_server(move |_: &Chat| {
        let n = seen.fetch_add(1, Ordering::SeqCst);
        let reply = Reply::from(completion(r#"{"statements": []}"#, (40, 8)));
        match n {
            0..10 => reply,
            _ => reply.delayed(Duration::from_secs(600)),
        }
    });
    let args = |url: &str| -> Vec<String> {
        [
            "score",
            "--dataset",
            "examples/data/questions.jsonl",
            "--answers",
            "examples/data/answers.jsonl",
            "--corpus",
            "examples/data/corpus",
            "--judge-model",
            "m",
            "--judge-url",
            url,
            "--judges",
            "faithfulness",
            "--concurrency",
            "1",
            "--cache",
            &cache,
        ]
        .map(str::to_owned)
        .to_vec()
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args(&hanging.url("/v1")))
        .env("RAG_EVAL_RUNS", "off")
        .current_dir(REPO)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while asked.load(Ordering::SeqCst) < 11 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the run never got far"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The eleventh request is waiting: the ten answers before it are in.
    std::thread::sleep(Duration::from_millis(300));
    terminate(&child);
    let status = child.wait().unwrap();
    assert!(!status.success());

    // Run again: only the thirty answers not received before are asked for.
    let again = Arc::new(AtomicUsize::new(0));
    let judge = slow_judge(Duration::ZERO, again.clone());
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args(&judge.url("/v1")))
        .env("RAG_EVAL_RUNS", "off")
        .current_dir(REPO)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(again.load(Ordering::SeqCst), 30, "{stderr}");
    assert!(stderr.contains("cache: 10 hits, 30 misses"), "{stderr}");
}
