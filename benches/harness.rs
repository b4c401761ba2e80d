//! Harness overhead: a downstream test binary with one 5,000-query case whose retriever does no
//! work, so what is measured is the harness (trial set-up, scoring, golden comparison).
//!
//! ```sh
//! cargo bench --bench harness            # -- --queries N --reps R to change the size
//! ```
//!
//! It writes a fixture crate to a temporary folder, builds it in `target/harness-bench`, records
//! the golden snapshot once, then times (medians):
//! - the whole binary as `cargo test` runs it (all trials in one process), per trial;
//! - `--list`;
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
    let run = |args: &[&str], env: &[(&str, &str)]| -> Duration {
        let mut cmd = Command::new(&exe);
        cmd.args(args)
            .current_dir(dir.path())
            .env_remove("CI")
            .env_remove("INSTA_UPDATE")
            .env_remove("NEXTEST_RUN_ID");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let started = Instant::now();
        let out = cmd.output().expect("the fixture runs");
        let took = started.elapsed();
        assert!(
            out.status.success(),
            "{args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        took
    };
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
    let start = median(&|| run(&["--help"], &[]));
    let nextest_env = [("CI", "true"), ("NEXTEST_RUN_ID", "bench-run")];
    run(&["--exact", "case::q00001"], &nextest_env); // warms the per-run cache
    let per_process = median(&|| {
        let mut total = Duration::ZERO;
        for id in [1, queries / 2, queries] {
            total += run(&["--exact", &format!("case::q{id:05}")], &nextest_env);
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
            "id": format!("q{q:05}"),
            "inputs": {"query": format!("question {q}")},
            "outputs": {"relevant_spans": [{"doc_id": "a.md", "start": start, "end": start + 40, "text": text}]},
        });
        dataset.push_str(&row.to_string());
        dataset.push('\n');
    }
    std::fs::write(root.join("questions.jsonl"), dataset).unwrap();
    std::fs::write(
        root.join("tests/rag.rs"),
        r#"use rag_eval::prelude::*;

/// Returns the same chunk for every query: the cost measured is the harness's.
#[rag_eval(dataset = "questions.jsonl", corpus = "docs", k = 5)]
async fn case(_query: &str) -> Vec<RetrievedChunk> {
    vec![RetrievedChunk::new(PositionAwareChunk::new("a.md", 0, 100, "x".repeat(100)), 1.0)]
}

rag_eval::main!(case);
"#,
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
