//! Full-RAG cases as a downstream crate runs them: a fixture crate whose cases answer, judged by
//! a scripted model, run through `cargo test` twice — recorded, then replayed from the harness's
//! LLM cache with no judge call.
//!
//! Built in the target directory the macros' UI tests and `tests/harness_fixture.rs` use, with
//! their flags, so that most dependencies are built once.

use std::path::{Path, PathBuf};
use std::process::Command;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn shared_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the temporary folder is inside the target folder")
        .join("tests/trybuild")
}

fn host() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().expect("rustc runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_owned()
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

fn fixture(root: &Path) {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::create_dir_all(root.join("golden")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        format!(
            r#"[package]
name = "fx-answers"
version = "0.1.0"
edition = "2021"
autotests = false

[workspace]

[dev-dependencies]
rag-eval = {{ path = {REPO:?}, features = ["cache"] }}
async-trait = "0.1"
serde_json = "1"

[[test]]
name = "rag"
harness = false
"#
        ),
    )
    .unwrap();
    std::fs::copy(Path::new(REPO).join("Cargo.lock"), root.join("Cargo.lock")).unwrap();
    std::fs::copy(
        Path::new(REPO).join("tests/fixtures/answers/rag.rs"),
        root.join("tests/rag.rs"),
    )
    .unwrap();
    copy_dir(
        &Path::new(REPO).join("examples/data"),
        &root.join("examples/data"),
    );
}

fn cargo_test(root: &Path, env: &[(&str, &str)]) -> (i32, String) {
    let flags =
        r#"["--cfg", "trybuild", "--verbose", "-A", "dead_code", "--diagnostic-width=140"]"#;
    let host = host();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["test", "--test", "rag", "--offline"])
        .arg(format!("--config=build.rustflags={flags}"))
        .arg(format!("--config=target.{host}.rustflags={flags}"))
        .args(["--target", &host])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", shared_target())
        .env("CARGO_INCREMENTAL", "0")
        .env_remove("RUSTFLAGS")
        .env_remove("CI")
        .env_remove("TF_BUILD")
        .env_remove("INSTA_UPDATE")
        .env_remove("INSTA_FORCE_PASS")
        .env_remove("INSTA_OUTPUT")
        .env_remove("RAG_EVAL_CACHE")
        .env_remove("RAG_EVAL_CACHE_PATH")
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

/// Names libtest lists after `failures:`.
fn failed(output: &str) -> Vec<String> {
    let Some(list) = output
        .rsplit("\nfailures:\n")
        .next()
        .filter(|_| output.contains("\nfailures:\n"))
    else {
        return Vec::new();
    };
    let mut names: Vec<String> = list
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_owned())
        .collect();
    // In the order the tests finished.
    names.sort();
    names
}

fn calls(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

#[test]
fn a_grounded_case_passes_an_ungrounded_one_fails_faithfulness_and_a_rerun_replays() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("fx");
    fixture(&root);
    let log = dir.path().join("calls.log");
    let log_str = log.to_str().unwrap();

    let (code, out) = cargo_test(&root, &[("FX_JUDGE_CALLS", log_str)]);
    assert_eq!(code, 101, "the ungrounded case fails:\n{out}");
    let failures = failed(&out);
    assert!(
        failures.iter().all(|f| f.starts_with("ungrounded::")),
        "only the ungrounded case fails: {failures:?}\n{out}"
    );
    // 40 questions, each answer failing its bar, and the summary.
    assert_eq!(failures.len(), 41, "{failures:?}\n{out}");
    assert!(failures.contains(&"ungrounded::summary".to_owned()));
    assert!(
        out.contains("faithfulness = 0.0000 is below the bar 0.9000 (min_faithfulness)"),
        "{out}"
    );
    // The per-query failure shows the question, the answer and what the judge did not find.
    let q1 = out
        .split("---- ungrounded::q0001 ----")
        .nth(1)
        .expect("q0001's failure is printed");
    let q1 = &q1[..q1.find("\n----").unwrap_or(q1.len())];
    for part in [
        "question: Which Linux kernel version does a Larkspur host need at minimum?",
        "answer: Larkspur was written on the moon (11 words asked).",
        "unsupported statements:\n  - Larkspur was written on the moon (11 words asked).",
        "reference: (the dataset has none)",
    ] {
        assert!(q1.contains(part), "`{part}` in:\n{q1}");
    }
    // One faithfulness call per answer of both cases.
    let recorded = calls(&log);
    assert_eq!(recorded, 80, "{out}");
    assert!(root.join("golden/llm-cache.sqlite").exists());
    // The grounded case's snapshot keeps the judge's mean, not its per-query verdicts.
    // A first run outside CI leaves the new baseline pending review.
    let snap = std::fs::read_to_string(root.join("golden/grounded.snap.new")).unwrap();
    assert!(snap.contains("  faithfulness: 1.0000\n"), "{snap}");
    assert_eq!(snap.matches("faithfulness").count(), 1, "{snap}");

    // Replayed: the same verdicts, and not one call (a miss would be an error in replay mode).
    let (code, again) = cargo_test(
        &root,
        &[("FX_JUDGE_CALLS", log_str), ("RAG_EVAL_CACHE", "replay")],
    );
    assert_eq!(code, 101, "{again}");
    assert_eq!(failed(&again), failures, "{again}");
    assert_eq!(
        calls(&log),
        recorded,
        "the replay called the judge:\n{again}"
    );
}
