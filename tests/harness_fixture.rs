//! The harness as a downstream crate sees it: a fixture crate using `#[rag_eval]` and
//! `main!` is built and run through `cargo test` and `cargo nextest run`, and its exit codes,
//! failing tests, reports and snapshot files are checked.
//!
//! The fixture builds in `target/harness-fixture` (its own target directory, so it never waits
//! on the lock of the build running this test) and offline, from this workspace's lock file.

#[path = "fixtures/harness/variant.rs"]
mod variant;

use rag_eval::prelude::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const TOLERANCE: f64 = 0.01;

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("fx");
        let repo = Path::new(REPO);
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::fs::write(
            root.join("Cargo.toml"),
            format!(
                r#"[package]
name = "fx"
version = "0.1.0"
edition = "2021"
autotests = false

[workspace]

[dev-dependencies]
rag-eval = {{ path = {repo:?} }}
async-trait = "0.1"

[[test]]
name = "rag"
harness = false

[[test]]
name = "scenarios"
harness = false
"#
            ),
        )
        .unwrap();
        std::fs::copy(repo.join("Cargo.lock"), root.join("Cargo.lock")).unwrap();
        std::fs::copy(repo.join("tests/rag.rs"), root.join("tests/rag.rs")).unwrap();
        std::fs::copy(
            repo.join("tests/fixtures/harness/scenarios.rs"),
            root.join("tests/scenarios.rs"),
        )
        .unwrap();
        std::fs::copy(
            repo.join("tests/fixtures/harness/variant.rs"),
            root.join("tests/variant.rs"),
        )
        .unwrap();
        copy_dir(&repo.join("examples/data"), &root.join("examples/data"));
        copy_dir(&repo.join("golden"), &root.join("golden"));
        Fixture { _dir: dir, root }
    }

    /// Runs cargo in the fixture with the given environment; CI and insta variables from the
    /// outer run are cleared so that each scenario sets exactly what it tests.
    fn cargo(&self, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
        // `--offline` goes with cargo's own options, before any `--` for the test binary.
        let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(&args[..split])
            .arg("--offline")
            .args(&args[split..])
            .current_dir(&self.root)
            .env(
                "CARGO_TARGET_DIR",
                Path::new(REPO).join("target/harness-fixture"),
            )
            .env_remove("CI")
            .env_remove("TF_BUILD")
            .env_remove("INSTA_UPDATE")
            .env_remove("INSTA_FORCE_PASS")
            .env_remove("RUST_BACKTRACE")
            .env_remove("NEXTEST_RUN_ID");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("cargo runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }

    fn snapshot(&self) -> Option<String> {
        std::fs::read_to_string(self.root.join("golden/scenario.snap")).ok()
    }

    fn pending(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.root.join("golden"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".snap.new"))
            .collect()
    }
}

/// Test names reported as failed by `cargo test`: the list libtest prints at the end
/// (`failures:` then one indented name per line), which no other output interleaves with.
fn failed_cargo_test(output: &str) -> BTreeSet<String> {
    let Some(list) = output
        .rsplit("\nfailures:\n")
        .next()
        .filter(|_| output.contains("\nfailures:\n"))
    else {
        return BTreeSet::new();
    };
    list.lines()
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_owned())
        .collect()
}

/// Test names reported as failed by nextest
/// (`FAIL [   0.012s] ( 3/41) fx::scenarios case::q0001`: the name is the last word).
fn failed_nextest(output: &str) -> BTreeSet<String> {
    output
        .lines()
        .filter(|l| l.trim_start().starts_with("FAIL ["))
        .filter_map(|l| l.split_whitespace().last())
        .map(str::to_owned)
        .collect()
}

/// The trials the harness must fail when `run` is evaluated against a `baseline` snapshot:
/// every query with a figure that dropped by more than the tolerance, and the summary if a
/// mean did. A second, independent account of the golden comparison.
fn expected_failures(baseline: &str, run: &str) -> BTreeSet<String> {
    let corpus =
        Arc::new(Corpus::from_folder(format!("{REPO}/examples/data/corpus"), None).unwrap());
    let AnyDataset::Token(questions) =
        rag_eval::dataset::load(format!("{REPO}/examples/data/questions.jsonl")).unwrap()
    else {
        panic!("token-level")
    };
    let eval = TokenLevelEvaluation::new(corpus.clone(), questions).unwrap();
    let result = |name: &str| {
        let v = variant::Variant::named(name);
        let chunker =
            rag_eval::chunker::parse_spec(&Retriever::<TokenLevel>::chunker(&v).unwrap()).unwrap();
        let spans: Vec<CharSpan> = chunker
            .chunk_corpus(&corpus)
            .into_iter()
            .map(|c| c.span)
            .collect();
        let metrics = token_level_metrics(SpanMode::Standard, Some(ChunkIndex::new(&spans)));
        eval.run_blocking(&v, 5, &metrics).unwrap().scores
    };
    let round = |x: f64| (x * 1e4).round() / 1e4;
    let dropped = |old: &[(String, f64)], new: &[(String, f64)]| {
        old.iter()
            .zip(new)
            .any(|((_, o), (_, n))| round(*o) - round(*n) > TOLERANCE + 0.5e-4 + 1e-12)
    };
    let (old, new) = (result(baseline), result(run));
    let mut failed: BTreeSet<String> = old
        .per_query
        .iter()
        .zip(&new.per_query)
        .filter(|(o, n)| dropped(&o.metrics.0, &n.metrics.0))
        .map(|(o, _)| format!("scenario::{}", o.id))
        .collect();
    if dropped(&old.metrics.0, &new.metrics.0) {
        failed.insert("scenario::summary".into());
    }
    failed
}

fn nextest_available() -> bool {
    Command::new(env!("CARGO"))
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn a_downstream_crate_gates_on_golden_snapshots_and_thresholds() {
    let fx = Fixture::new();
    let scenarios = ["test", "--test", "scenarios", "--", "scenario::"];

    // No snapshot: under CI the summary fails and nothing is written.
    let (code, out) = fx.cargo(&scenarios, &[("FIXTURE_VARIANT", "base"), ("CI", "true")]);
    assert_eq!(code, 101, "{out}");
    assert_eq!(
        failed_cargo_test(&out),
        BTreeSet::from(["scenario::summary".to_owned()]),
        "{out}"
    );
    assert!(out.contains("no golden snapshot at"), "{out}");
    assert!(
        fx.snapshot().is_none() && fx.pending().is_empty(),
        "CI writes nothing"
    );

    // INSTA_UPDATE=always records the baseline; then everything passes.
    let (code, out) = fx.cargo(
        &scenarios,
        &[("FIXTURE_VARIANT", "base"), ("INSTA_UPDATE", "always")],
    );
    assert_eq!(code, 0, "{out}");
    let baseline = fx.snapshot().expect("baseline written");
    assert!(baseline.contains("per_query:\n  q0001:\n"), "{baseline}");
    let (code, out) = fx.cargo(&scenarios, &[("FIXTURE_VARIANT", "base"), ("CI", "true")]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("IMPROVED"), "{out}");
    assert!(out.contains("test result: ok. 41 passed"), "{out}");

    // A worse chunker fails exactly the queries whose figures dropped, and the summary.
    let expected = expected_failures("base", "worse");
    assert!(
        expected.len() >= 4,
        "the scenario must regress some queries: {expected:?}"
    );
    assert!(expected.contains("scenario::summary"), "{expected:?}");
    let (code, out) = fx.cargo(&scenarios, &[("FIXTURE_VARIANT", "worse"), ("CI", "true")]);
    assert_eq!(code, 101, "{out}");
    assert_eq!(failed_cargo_test(&out), expected, "{out}");
    assert!(out.contains("regressed beyond the tolerance 0.01"), "{out}");
    assert!(
        out.contains("--- golden\n+++ this run"),
        "a diff of the figures: {out}"
    );
    assert!(out.contains(" → "), "old → new per metric: {out}");
    assert_eq!(
        fx.snapshot().as_deref(),
        Some(baseline.as_str()),
        "CI writes nothing"
    );
    assert!(fx.pending().is_empty(), "CI writes nothing");

    // Locally the same run leaves a pending snapshot for `cargo insta review`.
    let (code, _) = fx.cargo(&scenarios, &[("FIXTURE_VARIANT", "worse")]);
    assert_eq!(code, 101);
    assert_eq!(fx.pending().len(), 1, "a .snap.new to review");
    std::fs::remove_file(&fx.pending()[0]).unwrap();

    // A better retriever passes and says so.
    let (code, out) = fx.cargo(&scenarios, &[("FIXTURE_VARIANT", "better"), ("CI", "true")]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("IMPROVED scenario\n"), "{out}");
    assert!(out.contains("cargo insta review"), "{out}");

    // Accepting the worse figures makes them the baseline.
    let (code, out) = fx.cargo(
        &scenarios,
        &[("FIXTURE_VARIANT", "worse"), ("INSTA_UPDATE", "always")],
    );
    assert_eq!(code, 0, "{out}");
    let (code, out) = fx.cargo(&scenarios, &[("FIXTURE_VARIANT", "worse"), ("CI", "true")]);
    assert_eq!(code, 0, "{out}");

    // A bar the case cannot reach fails its summary with the figure, the bar and the worst
    // queries.
    let (code, out) = fx.cargo(
        &["test", "--test", "scenarios", "--", "strict::"],
        &[("CI", "true")],
    );
    assert_eq!(code, 101, "{out}");
    assert_eq!(
        failed_cargo_test(&out),
        BTreeSet::from(["strict::summary".to_owned()]),
        "{out}"
    );
    assert!(out.contains("case `strict`"), "{out}");
    assert!(
        out.contains("is below the bar 0.9900 (min_span_recall); worst queries:"),
        "{out}"
    );
    assert_eq!(
        out.matches("\n  q0").count(),
        5,
        "five worst queries: {out}"
    );

    // This repository's own harness target, run from outside: its deliberately failing case
    // is ignored by default and fails when asked for.
    let (code, out) = fx.cargo(&["test", "--test", "rag"], &[("CI", "true")]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(" ignored"), "{out}");
    let (code, out) = fx.cargo(
        &["test", "--test", "rag", "--", "--ignored"],
        &[("CI", "true")],
    );
    assert_eq!(code, 101, "{out}");
    assert!(out.contains("case `too_strict`"), "{out}");

    if !nextest_available() {
        eprintln!("skipping the nextest half: `cargo nextest` is not installed");
        return;
    }
    let nextest = [
        "nextest",
        "run",
        "--test",
        "scenarios",
        "--no-fail-fast",
        "-E",
        "test(/^scenario::/)",
    ];
    // The same gate under nextest, one process per test: the accepted `worse` baseline passes,
    // and `base` against it fails exactly its own regressions.
    let (code, out) = fx.cargo(&nextest, &[("FIXTURE_VARIANT", "worse"), ("CI", "true")]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("41 tests run: 41 passed"), "{out}");
    let expected = expected_failures("worse", "base");
    assert!(!expected.is_empty());
    let (code, out) = fx.cargo(&nextest, &[("FIXTURE_VARIANT", "base"), ("CI", "true")]);
    assert_eq!(code, 100, "{out}");
    assert_eq!(failed_nextest(&out), expected, "{out}");
    assert!(
        fx.pending().is_empty(),
        "CI writes nothing under nextest either"
    );
}
