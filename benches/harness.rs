//! Harness overhead: a downstream test binary with one 5,000-query case whose retriever does no
//! work, so what is measured is the harness (trial set-up, scoring, golden comparison).
//!
//! ```sh
//! cargo bench --bench harness            # -- --queries N --reps R to change the size
//! cargo bench --bench harness -- --queries 100000 --reps 3   # the large-suite figures
//! ```
//!
//! It writes a fixture crate to a temporary folder, builds it in `target/harness-bench`, records
//! the golden snapshot once, then times (medians):
//! - the whole binary as `cargo test` runs it (all trials in one process), per trial;
//! - `--list`;
//! - the peak memory (largest resident set) of the whole run and of `--list`;
//! - one trial per process, as `cargo nextest run` does, with the nextest cache warm, against
//!   the binary's own start (`--help`, which exits before any case is read).
//!
//! Under `cargo test --benches` it only checks that the fixture builds and passes, with 50
//! queries.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let queries = arg("--queries", if measuring { 5_000 } else { 50 });
    let reps = arg("--reps", 5);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let exe = build_fixture(dir.path(), queries);
    if std::env::args().any(|a| a == "--keep") {
        // For profiling: leave the fixture in place and say where it is.
        let kept = dir.keep();
        println!(
            "fixture kept at {} (binary {})",
            kept.display(),
            exe.display()
        );
        return;
    }
    let output = dir.path().join("output.txt");
    // The time a run took and its peak resident set in KiB.
    let measure = |args: &[&str], env: &[(&str, &str)]| -> (Duration, u64) {
        let mut cmd = Command::new(&exe);
        let file = std::fs::File::create(&output).expect("the output file");
        cmd.args(args)
            .current_dir(dir.path())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .env_remove("CI")
            .env_remove("INSTA_UPDATE")
            .env_remove("NEXTEST_RUN_ID");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let started = Instant::now();
        let child = cmd.spawn().expect("the fixture runs");
        let (status, peak_kib) = wait_with_peak(child);
        let took = started.elapsed();
        assert!(
            status == 0,
            "{args:?} failed:\n{}",
            std::fs::read_to_string(&output).unwrap_or_default()
        );
        (took, peak_kib)
    };
    let run = |args: &[&str], env: &[(&str, &str)]| measure(args, env).0;
    // Record the baseline, then every later run compares against it.
    run(&["-q"], &[("INSTA_UPDATE", "always")]);
    if !measuring {
        run(&["-q"], &[("CI", "true")]);
        println!("harness fixture with {queries} queries builds and passes");
        return;
    }
    let median = |f: &dyn Fn() -> Duration| {
        let mut t: Vec<Duration> = (0..reps).map(|_| f()).collect();
        t.sort();
        t[t.len() / 2]
    };
    let trials = queries + 1;
    let whole = median(&|| run(&["-q"], &[("CI", "true")]));
    let list = median(&|| run(&["--list"], &[]));
    let whole_peak = measure(&["-q"], &[("CI", "true")]).1;
    let list_peak = measure(&["--list"], &[]).1;
    let start = median(&|| run(&["--help"], &[]));
    let nextest_env = [("CI", "true"), ("NEXTEST_RUN_ID", "bench-run")];
    // Warms the per-run cache.
    run(
        &["--exact", &format!("case::{}", id_of(1, queries))],
        &nextest_env,
    );
    let per_process = median(&|| {
        let mut total = Duration::ZERO;
        for id in [1, queries / 2, queries] {
            total += run(
                &["--exact", &format!("case::{}", id_of(id, queries))],
                &nextest_env,
            );
        }
        total / 3
    });
    let summary_process = median(&|| run(&["--exact", "case::summary"], &nextest_env));
    println!(
        "harness overhead, one case of {queries} queries, trivial retriever, median of {reps}"
    );
    println!(
        "cargo test (one process, all {trials} trials): {:>9.1} ms  = {:.3} ms per trial",
        ms(whole),
        ms(whole) / trials as f64
    );
    println!(
        "--list:                                   {:>9.1} ms",
        ms(list)
    );
    println!(
        "peak memory: whole run {:.1} MiB, --list {:.1} MiB",
        whole_peak as f64 / 1024.0,
        list_peak as f64 / 1024.0
    );
    println!(
        "binary start (--help):                    {:>9.1} ms",
        ms(start)
    );
    println!(
        "one query trial per process (nextest):    {:>9.1} ms  = {:.1} ms beyond the binary's start",
        ms(per_process),
        ms(per_process) - ms(start)
    );
    println!(
        "the summary trial in its own process:     {:>9.1} ms  = {:.1} ms beyond the binary's start",
        ms(summary_process),
        ms(summary_process) - ms(start)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Query `q`'s id, zero-padded to the width of the largest (at least 5 digits) so that ids
/// sort as numbers.
fn id_of(q: usize, queries: usize) -> String {
    let width = queries.to_string().len().max(5);
    format!("q{q:0width$}")
}

/// Waits for `child`: its exit status (0 for success) and its peak resident set in KiB, from
/// the kernel's account of that one process (`wait4`).
fn wait_with_peak(child: std::process::Child) -> (i32, u64) {
    let pid = i32::try_from(child.id()).expect("a process id");
    let mut status = 0;
    // SAFETY: a zeroed `rusage` is a valid value, and `wait4` writes only into the two
    // pointers given, which outlive the call.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    // Linux reports ru_maxrss in KiB.
    (status, u64::try_from(usage.ru_maxrss).unwrap_or(0))
}

/// Writes the fixture crate (corpus, dataset of `queries` questions, one case) and builds its
/// test binary in release mode, returning the binary's path.
fn build_fixture(root: &Path, queries: usize) -> PathBuf {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    let doc: String = (0..200)
        .map(|i| format!("Paragraph {i} says something about topic {}.\n\n", i % 17))
        .collect();
    std::fs::write(root.join("docs/a.md"), &doc).unwrap();
    let mut dataset = String::new();
    for q in 1..=queries {
        let start = (q * 37) % (doc.len() - 60);
        let text = &doc[start..start + 40];
        let row = serde_json::json!({
            "id": id_of(q, queries),
            "inputs": {"query": format!("question {q}")},
            "outputs": {"relevant_spans": [{"doc_id": "a.md", "start": start, "end": start + 40, "text": text}]},
        });
        dataset.push_str(&row.to_string());
        dataset.push('\n');
    }
    std::fs::write(root.join("questions.jsonl"), dataset).unwrap();
    // The chunk holds the document's own text: the harness checks it against the document.
    std::fs::write(
        root.join("tests/rag.rs"),
        format!(
            r#"use rag_eval::prelude::*;

/// Returns the same chunk for every query: the cost measured is the harness's.
#[rag_eval(dataset = "questions.jsonl", corpus = "docs", k = 5)]
async fn case(_query: &str) -> Vec<RetrievedChunk> {{
    vec![RetrievedChunk::new(PositionAwareChunk::new("a.md", 0, 100, {:?}), 1.0)]
}}

rag_eval::main!(case);
"#,
            &doc[..100]
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        format!(
            "[package]\nname = \"bench-fx\"\nversion = \"0.1.0\"\nedition = \"2021\"\nautotests = false\n\n[workspace]\n\n\
             [dev-dependencies]\nrag-eval = {{ path = {REPO:?} }}\n\n[[test]]\nname = \"rag\"\nharness = false\n"
        ),
    )
    .unwrap();
    std::fs::copy(Path::new(REPO).join("Cargo.lock"), root.join("Cargo.lock")).unwrap();
    let out = Command::new(env!("CARGO"))
        .args([
            "test",
            "--release",
            "--no-run",
            "--offline",
            "--message-format=json",
        ])
        .current_dir(root)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(REPO).join("target/harness-bench"),
        )
        .output()
        .expect("cargo builds the fixture");
    assert!(
        out.status.success(),
        "the fixture does not build:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| {
            (v["target"]["name"] == "rag" && v["profile"]["test"] == true)
                .then(|| v["executable"].as_str().map(PathBuf::from))
                .flatten()
        })
        .expect("cargo reports the test binary")
}
