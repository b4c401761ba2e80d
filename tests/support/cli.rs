//! Running the `rag-eval` binary from the CLI's tests, and the files they hand it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the binary: exit code, standard output, standard error.
pub fn run(args: &[&str]) -> (i32, String, String) {
    // Runs are recorded in tests/cli/runs_cli.rs, never in the crate's own folder.
    outcome(
        Command::new(env!("CARGO_BIN_EXE_rag-eval"))
            .env("RAG_EVAL_RUNS", "off")
            .args(args),
    )
}

/// Runs the binary in `cwd` with its run store at `store` (a path, or `off`) and no OpenAI key
/// from the environment: exit code, standard output, standard error.
pub fn run_in(
    cwd: &Path,
    store: impl AsRef<std::ffi::OsStr>,
    args: &[&str],
) -> (i32, String, String) {
    outcome(
        Command::new(env!("CARGO_BIN_EXE_rag-eval"))
            .args(args)
            .current_dir(cwd)
            .env("RAG_EVAL_RUNS", store)
            .env_remove("OPENAI_API_KEY"),
    )
}

fn outcome(command: &mut Command) -> (i32, String, String) {
    let out = command.output().expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Runs a command that must succeed; its standard output.
pub fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?} failed: {err}");
    out
}

/// Runs a command that must fail with exit code 1 and a clear error, never a panic; its
/// standard error.
pub fn fails(args: &[&str]) -> String {
    let (code, _, err) = run(args);
    assert_eq!(code, 1, "{args:?} should fail: {err}");
    assert!(err.starts_with("error: "), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
        "{err}"
    );
    err
}

/// As [`fails`], with the error on one line.
pub fn fails_on_one_line(args: &[&str]) -> String {
    let err = fails(args);
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

/// Writes `text` to `dir/name`, making folders on the way.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

/// A path as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Copies the bundled corpus into `dir`, returning the corpus folder and the dataset path.
pub fn bundled_copy(dir: &Path) -> (PathBuf, PathBuf) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data");
    let corpus = dir.join("corpus");
    for entry in walk(&src.join("corpus")) {
        let rel = entry.strip_prefix(src.join("corpus")).unwrap();
        let to = corpus.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &to).unwrap();
    }
    let dataset = dir.join("questions.jsonl");
    std::fs::copy(src.join("questions.jsonl"), &dataset).unwrap();
    (corpus, dataset)
}

/// Every file under `p`.
pub fn walk(p: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(p).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
