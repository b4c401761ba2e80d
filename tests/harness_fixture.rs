//! The harness as a downstream crate sees it: a fixture crate using `#[rag_eval]` and
//! `main!` is built and run through `cargo test` and `cargo nextest run`, and its exit codes,
//! failing tests, reports and snapshot files are checked.
//!
//! The fixture builds offline, from this workspace's lock file, in the target directory of the
//! macros' UI tests (`target/tests/trybuild`), with the flags and target of trybuild's checks
//! and the dependencies and features of `tests/answers_fixture.rs`, so that rag-eval and its
//! dependencies are built once for both fixtures; it is not the directory of the build running
//! this test, so it never waits on that build's lock.

#[path = "support/fixture_crate.rs"]
mod fixture_crate;
use fixture_crate::copy_dir;
#[path = "support/junit_schema.rs"]
mod junit_schema;
#[path = "fixtures/harness/variant.rs"]
mod variant;

use rag_eval::prelude::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const TOLERANCE: f64 = 0.01;

/// The first `rust,ignore` block after `marker` in the repository's file `file`, unindented
/// by its fence's indentation (a list item's block is indented).
fn documented_test_file(file: &str, marker: &str) -> String {
    let text = std::fs::read_to_string(Path::new(REPO).join(file)).unwrap();
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("{file} has {marker:?}"));
    let open = "```rust,ignore\n";
    let fence = at + text[at..].find(open).expect("a Rust block");
    let indent = &text[text[..fence].rfind('\n').map_or(0, |i| i + 1)..fence];
    let start = fence + open.len();
    let end = start + text[start..].find("```\n").expect("the block ends");
    text[start..end]
        .lines()
        .map(|l| l.strip_prefix(indent).unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_owned()
}

/// The gate guide's `tests/rag.rs` (its walkthrough's step 3).
fn guide_gate_example() -> String {
    documented_test_file("docs/guide/gate.md", "3. Declare cases in `tests/rag.rs`")
}

/// The README's short `tests/rag.rs`.
fn readme_gate_example() -> String {
    documented_test_file("README.md", "## A gate in `cargo test`")
}

/// The crate documentation's test file is the README's, which the fixture builds and runs.
#[test]
fn the_crate_docs_show_the_readme_test_file() {
    let lib = std::fs::read_to_string(Path::new(REPO).join("src/lib.rs")).unwrap();
    let docs: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    let open = "```rust,ignore\n";
    let start = docs.find(open).expect("the crate docs show a test file") + open.len();
    let end = start + docs[start..].find("```\n").expect("the block ends");
    assert_eq!(docs[start..end].trim_end(), readme_gate_example());
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("fx");
        let repo = Path::new(REPO);
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("tests")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        let unique = fixture_crate::package_suffix(dir.path());
        // The repository's own cases (`tests/rag.rs`) split Markdown, which is not a default.
        std::fs::write(
            root.join("Cargo.toml"),
            format!(
                r#"[package]
name = "fx-{unique}"
version = "0.1.0"
edition = "2021"
autotests = false

[workspace]

[dev-dependencies]
{dev}

[[test]]
name = "rag"
harness = false

[[test]]
name = "scenarios"
harness = false

[[test]]
name = "readme"
harness = false

[[test]]
name = "front"
harness = false
"#,
                dev = fixture_crate::dev_dependencies()
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
        // The gate guide's walkthrough (and the README's short version of its test file): its
        // documents and dataset, and its test files as printed.
        copy_dir(&repo.join("examples/data/corpus"), &root.join("docs"));
        std::fs::create_dir_all(root.join("golden/datasets")).unwrap();
        std::fs::copy(
            repo.join("examples/data/questions.jsonl"),
            root.join("golden/datasets/handbook.jsonl"),
        )
        .unwrap();
        std::fs::write(root.join("tests/readme.rs"), guide_gate_example()).unwrap();
        std::fs::write(root.join("tests/front.rs"), readme_gate_example()).unwrap();
        Fixture { _dir: dir, root }
    }

    /// Runs cargo in the fixture with the given environment.
    fn cargo(&self, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
        fixture_crate::cargo(&self.root, args, env)
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

/// Test names reported as failed by `cargo test`: the list printed at the end (`failures:`
/// then indented names, several on a line for the query tests whose drops their summary
/// accounts for), which no other output interleaves with.
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
        .flat_map(str::split_whitespace)
        .map(str::to_owned)
        .collect()
}

/// Test names reported as failed by nextest
/// (`FAIL [   0.012s] ( 3/41) fx::scenarios case::q0001`: the name is the last word).
/// Names of the failed test cases of a JUnit file.
fn failed_junit(xml: &str) -> BTreeSet<String> {
    xml.split("<testcase name=\"")
        .skip(1)
        .filter(|case| {
            let end = case.find("</testcase>").unwrap_or(case.len());
            case[..end].contains("<failure ")
        })
        .map(|case| case[..case.find('"').unwrap()].to_owned())
        .collect()
}

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
        let spans: Vec<CharSpan> = Retriever::<TokenLevel>::chunker_object(&v)
            .unwrap()
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

/// What the test binary printed, without cargo's own lines: `Fixture::cargo` puts the
/// standard output first, and cargo's standard error starts with `Compiling` or `Finished`.
fn test_binary_output(out: &str) -> &str {
    let end = ["   Compiling ", "    Finished "]
        .iter()
        .filter_map(|m| out.find(m))
        .min()
        .unwrap_or(out.len());
    &out[..end]
}

/// What libtest printed for the failed test `name`.
fn failure_of<'a>(out: &'a str, name: &str) -> &'a str {
    let text = out
        .split(&format!("---- {name} ----"))
        .nth(1)
        .unwrap_or_else(|| panic!("{name}'s failure is printed:\n{out}"));
    let end = ["\n----", "\nfailures:\n"]
        .iter()
        .filter_map(|m| text.find(m))
        .min()
        .unwrap_or(text.len());
    &text[..end]
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

    // A shard of a PostgreSQL run group, in a build whose dependency has `runs` but not
    // `postgres`: every trial fails naming the feature and the line to write, rather than
    // computing every query and writing nothing.
    let shard = [
        ("FIXTURE_VARIANT", "base"),
        ("RAG_EVAL_RUNS", "postgres://ci@127.0.0.1:9/rag"),
        ("RAG_EVAL_RUN_GROUP", "nightly"),
        ("RAG_EVAL_SHARD", "1"),
    ];
    let (code, out) = fx.cargo(&scenarios, &shard);
    assert_eq!(code, 101, "{out}");
    let failed = failed_cargo_test(&out);
    assert!(
        failed.contains("scenario::summary") && failed.len() > 1,
        "{failed:?}\n{out}"
    );
    assert!(
        out.contains(
            "case `scenario`: `RAG_EVAL_RUNS` is set, but this build of rag-eval lacks the \
             `postgres` feature"
        ) && out.contains(r#"`rag-eval = { path = "../rag-eval", features = ["postgres"] }`"#),
        "{out}"
    );
    assert!(fx.snapshot().is_none() && fx.pending().is_empty(), "{out}");

    // The first local run passes and says in one line that a baseline waits to be accepted;
    // insta's own "Stopped on the first failure" and its diff of every line stay out of it.
    let (code, out) = fx.cargo(&scenarios, &[("FIXTURE_VARIANT", "base")]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("Stopped on the first failure"), "{out}");
    assert!(!out.contains("Snapshot Summary"), "{out}");
    let new_lines: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("scenario"))
        .filter(|l| !l.starts_with("test "))
        .collect();
    assert!(
        new_lines
            .iter()
            .any(|l| l.starts_with("NEW scenario: no baseline yet")
                && l.contains("cargo insta accept")),
        "{out}"
    );
    assert_eq!(fx.pending().len(), 1, "a pending snapshot: {out}");
    // The metric table comes after every test's line.
    let table = out
        .find("scenario — token-level")
        .expect("the summary's table");
    let last_test = out.rfind("\ntest scenario::").expect("test lines");
    assert!(table > last_test, "the table after the tests: {out}");

    // INSTA_UPDATE=always records the baseline, and the pending snapshot of the run before is
    // gone (it would offer an outdated run to `cargo insta review`); then everything passes.
    let (code, out) = fx.cargo(
        &scenarios,
        &[("FIXTURE_VARIANT", "base"), ("INSTA_UPDATE", "always")],
    );
    assert_eq!(code, 0, "{out}");
    assert!(fx.pending().is_empty(), "no stale .snap.new: {out}");
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
    let junit = fx.root.join("target-junit");
    let (code, out) = fx.cargo(
        &scenarios,
        &[
            ("FIXTURE_VARIANT", "worse"),
            ("CI", "true"),
            ("RAG_EVAL_JUNIT", junit.to_str().unwrap()),
        ],
    );
    assert_eq!(code, 101, "{out}");
    assert_eq!(failed_cargo_test(&out), expected, "{out}");
    // The same verdicts in the binary's JUnit file, which fits the schema.
    let xml_path = junit.join("scenarios.xml");
    let xml = std::fs::read_to_string(&xml_path).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(failed_junit(&xml), expected, "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 41, "{xml}");
    if let Some(Err(why)) = junit_schema::validate(&xml_path) {
        panic!("the harness's JUnit does not fit the schema: {why}\n{xml}");
    }
    // The summary leads with one table of the means, each before, after and its change, the
    // drops first and marked; then the few queries that dropped most, then how many more did.
    let summary = failure_of(&out, "scenario::summary");
    let (means, queries) = (
        summary
            .find("\n  mean ")
            .expect("the table of the means first"),
        summary.find("\n  queries (").expect("then the queries"),
    );
    assert!(means < queries, "{summary}");
    let rows: Vec<Vec<&str>> = summary[means..queries]
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0].last(), Some(&"dropped"), "{summary}");
    let marks: Vec<&str> = rows
        .iter()
        .map(|r| r.get(4).copied().unwrap_or(""))
        .collect();
    let first_other = marks
        .iter()
        .position(|m| *m != "dropped")
        .unwrap_or(marks.len());
    assert!(
        marks[first_other..].iter().all(|m| *m != "dropped"),
        "the drops first: {summary}"
    );
    for row in rows.iter().filter(|r| r.get(4) == Some(&"dropped")) {
        let figure = |i: usize| {
            row[i]
                .parse::<f64>()
                .unwrap_or_else(|e| panic!("{e}: {row:?}"))
        };
        assert!(figure(2) < figure(1), "{row:?}");
        assert!((figure(2) - figure(1) - figure(3)).abs() < 1e-9, "{row:?}");
    }
    assert_eq!(
        summary.matches("\n    q0").count(),
        5,
        "five queries: {summary}"
    );
    assert!(
        summary.contains(&format!("\n    … and {} more", expected.len() - 1 - 5)),
        "{summary}"
    );
    // One chunker change (400 → 200 characters) fits on a screen: the per-query tests are one
    // line, the mean drops come before any line that names a query, and the queries whose
    // drops the summary lists are named in the list of failures, not told again.
    let run = test_binary_output(&out);
    // Shown with `--nocapture`: the screen a team sees for this change.
    println!(
        "the chunker change's screen, {} lines:\n{run}",
        run.lines().count()
    );
    assert!(
        run.lines().count() <= 45,
        "{} lines: {run}",
        run.lines().count()
    );
    assert!(
        run.contains("\ntest scenario: 40 query tests ... "),
        "{run}"
    );
    let first_query = [" q0", "::q0"]
        .iter()
        .filter_map(|p| run.find(p))
        .min()
        .expect("queries named");
    assert!(run.find("\n  mean ").unwrap() < first_query, "{run}");
    // The means are one table, in the summary's failure; the report after the result line
    // does not repeat them.
    assert_eq!(run.matches("\n  mean ").count(), 1, "{run}");
    assert!(!run.contains("\n  means:"), "{run}");
    assert!(!run.contains("regressed beyond the tolerance"), "{run}");
    // Each failing query's own test still says what dropped, in one line: run alone, as
    // nextest and JUnit see it.
    let q = expected.iter().find(|n| *n != "scenario::summary").unwrap();
    let (code, alone) = fx.cargo(
        &["test", "--test", "scenarios", "--", "--exact", q],
        &[("FIXTURE_VARIANT", "worse"), ("CI", "true")],
    );
    assert_eq!(code, 101, "{alone}");
    let message = failure_of(&alone, q);
    assert!(
        message.contains("regressed beyond the tolerance 0.01: ") && message.contains(" → "),
        "{message}"
    );
    assert_eq!(message.trim().lines().count(), 1, "{message}");
    assert!(
        xml.contains("regressed beyond the tolerance 0.01: "),
        "{xml}"
    );
    // Some figures of this run are better than the baseline: said once, after the verdicts,
    // for no query whose test failed; and a run with drops is never advertised as a baseline
    // to accept.
    assert_eq!(out.matches("IMPROVED").count(), 1, "{out}");
    let improved = &out[out.find("IMPROVED scenario: ").expect("a mixed run")..];
    assert!(
        out.find("test result:") < out.find("IMPROVED scenario: "),
        "{out}"
    );
    for name in &expected {
        let id = name.trim_start_matches("scenario::");
        assert!(
            !improved.contains(&format!("    {id}: ")),
            "{id}: {improved}"
        );
    }
    assert!(!out.contains("DROPPED"), "the drops are said once: {out}");
    assert_eq!(
        out.matches("failures:").count(),
        2,
        "the summary once: {out}"
    );
    assert!(!out.contains("accept the new baseline"), "{out}");
    assert!(
        out.contains("other figures dropped: fix those before accepting a new baseline"),
        "{out}"
    );
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

    // A snapshot made with another k: one line naming the change, not every figure as
    // gone and new.
    let other_k = baseline
        .replace("\nk: 5\n", "\nk: 1\n")
        .replace("@5:", "@1:");
    std::fs::write(fx.root.join("golden/scenario.snap"), &other_k).unwrap();
    let (code, out) = fx.cargo(&scenarios, &[("FIXTURE_VARIANT", "base")]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("CHANGED scenario: the configuration changed (k 1 → 5): the snapshot"),
        "{out}"
    );
    // Each query's test is skipped with the same line: its figures cannot be compared either.
    // The screen says it once for the 40; libtest's own account (`--format pretty`) shows
    // each test skipped with it.
    assert!(
        out.contains("\ntest scenario: 40 query tests ... 40 ignored (the configuration changed (k 1 → 5): the snapshot"),
        "{out}"
    );
    let (code, pretty) = fx.cargo(
        &[
            "test",
            "--test",
            "scenarios",
            "--",
            "scenario::",
            "--format",
            "pretty",
        ],
        &[("FIXTURE_VARIANT", "base")],
    );
    assert_eq!(code, 0, "{pretty}");
    assert_eq!(
        pretty
            .matches("... ignored (the configuration changed (k 1 → 5): the snapshot")
            .count(),
        40,
        "{pretty}"
    );
    assert!(out.contains("cannot be compared; review it"), "{out}");
    assert!(!out.contains("is new") && !out.contains("is gone"), "{out}");
    assert!(
        out.lines().all(|l| l.len() < 400),
        "no line of every figure: {out}"
    );
    let (code, out) = fx.cargo(&scenarios, &[("FIXTURE_VARIANT", "base"), ("CI", "true")]);
    assert_eq!(code, 101, "under CI it fails: {out}");
    assert!(out.contains("the configuration changed (k 1 → 5)"), "{out}");
    assert_eq!(
        failed_cargo_test(&out),
        BTreeSet::from(["scenario::summary".to_owned()]),
        "only the summary fails, not per-query map or mrr: {out}"
    );
    std::fs::write(fx.root.join("golden/scenario.snap"), &baseline).unwrap();
    for p in fx.pending() {
        std::fs::remove_file(p).unwrap();
    }

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

    // The gate guide's walkthrough, its test file as printed: the first run leaves a baseline
    // to accept, `INSTA_UPDATE=always` accepts it, and CI passes against it.
    let readme = ["test", "--test", "readme"];
    let (code, out) = fx.cargo(&readme, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("NEW recursive_400: no baseline yet"), "{out}");
    assert!(out.contains("NEW production: no baseline yet"), "{out}");
    let (code, out) = fx.cargo(&readme, &[("INSTA_UPDATE", "always")]);
    assert_eq!(code, 0, "{out}");
    assert!(fx.pending().is_empty(), "{out}");
    let (code, out) = fx.cargo(&readme, &[("CI", "true")]);
    assert_eq!(code, 0, "{out}");
    for case in ["recursive_400", "production"] {
        let passed =
            |l: &&str| l.starts_with(&format!("test {case}::summary ")) && l.ends_with(" ok");
        assert!(out.lines().any(|l| passed(&l)), "{out}");
    }
    // The README's short test file is the guide's first case: it passes in CI against the
    // baseline the walkthrough accepted.
    let (code, out) = fx.cargo(&["test", "--test", "front"], &[("CI", "true")]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("test recursive_400::summary ") && l.ends_with(" ok")),
        "{out}"
    );

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
        out.contains(
            "run it with `--no-fail-fast` so that `scenario::summary` reports the whole case"
        ),
        "{out}"
    );
    assert!(
        fx.pending().is_empty(),
        "CI writes nothing under nextest either"
    );
}
