//! One query's test in a process of its own, as `cargo nextest run` runs each test, over a case
//! of many queries: what such a process costs beyond the binary's start, with the dataset's row
//! index the harness keeps under the target folder and without it (every process then reads
//! and checks the whole dataset, as before the index).
//!
//! ```sh
//! # the figures of benches/README.md, in the test (debug) profile:
//! cargo test --bench one_query -- --queries 100000 --reps 3
//! ```
//!
//! The binary is its own test binary: it writes a dataset of `--queries` questions over one
//! document and a case whose retriever returns the same chunk for every query (so that what is
//! timed is the harness), records the golden snapshot with one whole run, then runs itself as
//! nextest would, `--exact case::qNNNNNN` with `NEXTEST_RUN_ID` set, for three queries
//! (first, middle, last), and reports the median of `--reps` rounds of each process's wall and
//! CPU time (user + system, from the kernel's account of the child). Without `--queries` (as
//! under `cargo test --benches`) it checks 200 queries and that the index is used.

use rag_eval::__private::{Build, CaseSpec, Levels, Mode};
use rag_eval::prelude::*;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// Set in the processes the bench starts: the folder of the fixture.
const FIXTURE: &str = "RAG_EVAL_BENCH_FIXTURE";
/// The one document's text.
const PARAGRAPHS: usize = 200;

fn arg(name: &str) -> Option<usize> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

fn document() -> String {
    (0..PARAGRAPHS)
        .map(|i| format!("Paragraph {i} says something about topic {}.\n\n", i % 17))
        .collect()
}

/// Returns the same chunk for every query: the cost measured is the harness's.
fn same_chunk(_query: String) -> rag_eval::__private::BoxFuture<Vec<RetrievedChunk>> {
    Box::pin(async {
        let doc = document();
        vec![RetrievedChunk::new(
            PositionAwareChunk::new("a.md", 0, 100, &doc[..100]),
            1.0,
        )]
    })
}

fn main() -> ExitCode {
    if let Some(dir) = std::env::var_os(FIXTURE) {
        return worker(PathBuf::from(dir));
    }
    let queries = arg("--queries");
    let reps = arg("--reps").unwrap_or(3);
    let dir = tempfile::tempdir().expect("a temporary folder");
    write_fixture(dir.path(), queries.unwrap_or(200));
    measure(dir.path(), queries.unwrap_or(200), reps, queries.is_some());
    ExitCode::SUCCESS
}

/// The case over the fixture in `dir`, run as a test binary with this process's arguments.
fn worker(dir: PathBuf) -> ExitCode {
    let root: &'static str = Box::leak(dir.to_str().expect("a UTF-8 path").into());
    let spec = CaseSpec {
        name: "case",
        manifest_dir: root,
        source: file!(),
        line: line!(),
        dataset: "questions.jsonl",
        corpus: Some("docs"),
        glob: None,
        k: 5,
        tolerance: 0.0,
        mode: Mode::Standard,
        per_query: true,
        ignore: false,
        thresholds: &[],
        levels: Levels::BOTH,
        build: Build::Function(same_chunk),
        judge: None,
        criteria: &[],
        embedder: None,
        langsmith_experiment: None,
        concurrency: None,
        agreement: None,
    };
    rag_eval::__private::run(vec![spec], rag_eval::__private::insta_hook!())
}

/// Query `q`'s id, zero-padded to sort as numbers.
fn id_of(q: usize) -> String {
    format!("q{q:06}")
}

fn write_fixture(root: &Path, queries: usize) {
    std::fs::create_dir_all(root.join("docs")).unwrap();
    let doc = document();
    std::fs::write(root.join("docs/a.md"), &doc).unwrap();
    let mut dataset = String::new();
    for q in 1..=queries {
        let start = (q * 37) % (doc.len() - 60);
        let row = serde_json::json!({
            "id": id_of(q),
            "inputs": {"query": format!("question {q}")},
            "outputs": {"relevant_spans": [{"doc_id": "a.md", "start": start, "end": start + 40, "text": &doc[start..start + 40]}]},
        });
        dataset.push_str(&row.to_string());
        dataset.push('\n');
    }
    std::fs::write(root.join("questions.jsonl"), dataset).unwrap();
}

/// Runs this binary over the fixture in `root` with `args` and `env`: its wall time and CPU
/// time (user + system).
fn run(root: &Path, args: &[&str], env: &[(&str, &str)]) -> (Duration, Duration) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(args)
        .env(FIXTURE, root)
        .env("RAG_EVAL_HARNESS_CACHE", root.join("harness"))
        .env_remove("CI")
        .env_remove("INSTA_UPDATE")
        .env_remove("NEXTEST_RUN_ID")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let before = children_cpu();
    let started = Instant::now();
    let out = cmd.output().expect("the fixture runs");
    let wall = started.elapsed();
    let cpu = children_cpu().saturating_sub(before);
    assert!(
        out.status.success(),
        "{args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (wall, cpu)
}

/// The CPU time (user + system) of this process's children that have ended.
fn children_cpu() -> Duration {
    #[cfg(unix)]
    {
        // SAFETY: a zeroed `rusage` is a valid value; `getrusage` writes only into it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
        let time = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        time(usage.ru_utime) + time(usage.ru_stime)
    }
    #[cfg(not(unix))]
    Duration::ZERO
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn measure(root: &Path, queries: usize, reps: usize, print: bool) {
    let index_files = || -> Vec<PathBuf> {
        std::fs::read_dir(root.join("harness"))
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|e| e == "rows"))
                    .collect()
            })
            .unwrap_or_default()
    };
    // The golden snapshot, then the nextest run's outcome cache, each written once.
    run(root, &["-q"], &[("INSTA_UPDATE", "always")]);
    let nextest = [("NEXTEST_RUN_ID", "bench-run")];
    let first = format!("case::{}", id_of(1));
    run(root, &["--exact", &first], &nextest);
    assert_eq!(index_files().len(), 1, "the whole run wrote the index");
    let start = median((0..reps).map(|_| run(root, &["--help"], &[]).0).collect());
    let picked = [1, queries / 2, queries].map(|q| format!("case::{}", id_of(q)));
    let rounds = |indexed: bool, env: &[(&str, &str)]| -> (Duration, Duration) {
        let (mut walls, mut cpus) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            for name in &picked {
                if !indexed {
                    for f in index_files() {
                        std::fs::remove_file(f).unwrap();
                    }
                }
                let (wall, cpu) = run(root, &["--exact", name], env);
                walls.push(wall);
                cpus.push(cpu);
            }
        }
        (median(walls), median(cpus))
    };
    let with_index = rounds(true, &nextest);
    let without = rounds(false, &nextest);
    let filtered = rounds(true, &[]);
    if !print {
        println!("one-query processes over {queries} queries run, with and without the index");
        return;
    }
    println!("one query's test in its own process, a case of {queries} queries, median of {reps} rounds of 3 queries");
    println!(
        "binary start (--help):                     {:>8.1} ms",
        ms(start)
    );
    for (what, (wall, cpu)) in [
        ("nextest, without the index (read whole)", without),
        ("nextest, with the index", with_index),
        ("`--exact` without nextest, with the index", filtered),
    ] {
        println!(
            "{what:<42} {:>8.1} ms wall, {:>8.1} ms CPU",
            ms(wall),
            ms(cpu)
        );
    }
}
