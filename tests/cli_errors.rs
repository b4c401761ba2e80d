//! What the CLI says when its input is wrong, through the real binary: one line, each cause
//! once, naming the path the user gave.

use std::path::Path;
use std::process::Command;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args)
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Runs a command that must fail with exit code 1 and one line on stderr.
fn fails(args: &[&str]) -> String {
    let (code, _, err) = run(args);
    assert_eq!(code, 1, "{args:?} should fail: {err}");
    assert!(err.starts_with("error: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The text the OS gives for a missing file, as Rust prints it.
fn not_found() -> String {
    std::io::Error::from_raw_os_error(2).to_string()
}

#[test]
fn an_os_error_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.txt");
    let qrels = dir.path().join("qrels.txt");
    std::fs::write(&qrels, "q1 0 d1 1\n").unwrap();
    for args in [
        vec!["score", "--qrels", s(&missing), "--run", s(&qrels)],
        vec!["score", "--qrels", s(&qrels), "--run", s(&missing)],
        vec![
            "dataset",
            "validate",
            s(&missing),
            "--corpus",
            s(dir.path()),
        ],
        vec![
            "chunk",
            s(&missing),
            "--chunker",
            "recursive:size=400,overlap=0",
        ],
    ] {
        let err = fails(&args);
        assert_eq!(err.matches(&not_found()).count(), 1, "{args:?}: {err}");
        assert!(err.contains(s(&missing)), "{args:?}: {err}");
    }
}

#[cfg(unix)]
#[test]
fn a_broken_link_beside_the_documents_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("docs");
    std::fs::create_dir_all(&corpus).unwrap();
    std::fs::write(corpus.join("a.md"), "Alpha beta gamma.").unwrap();
    std::os::unix::fs::symlink(dir.path().join("gone"), corpus.join("a.md.orig")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("gone"), corpus.join("old.txt")).unwrap();
    let (code, out, err) = run(&[
        "chunk",
        s(&corpus),
        "--chunker",
        "recursive:size=400,overlap=0",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 1, "{out}");

    // A link the glob reads is an error naming it and its target, once.
    std::os::unix::fs::symlink(dir.path().join("moved.md"), corpus.join("b.md")).unwrap();
    let err = fails(&[
        "chunk",
        s(&corpus),
        "--chunker",
        "recursive:size=400,overlap=0",
    ]);
    let b = corpus.join("b.md");
    let moved = dir.path().join("moved.md");
    assert_eq!(
        err.trim_end(),
        format!(
            "error: read `{}`: it is a link to `{}`, which cannot be read: {}",
            s(&b),
            s(&moved),
            not_found()
        )
    );
}

/// The chunker labels of the README's quickstart table, which the example prints.
fn quickstart_labels() -> Vec<String> {
    let readme = include_str!("../README.md");
    let table = readme
        .split("```text\nchunker ")
        .nth(1)
        .expect("the README shows the quickstart's table");
    table
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .map(|l| l.split_whitespace().next().unwrap().to_owned())
        .collect()
}

#[test]
fn the_quickstart_names_chunkers_as_the_cli_does() {
    let labels = quickstart_labels();
    assert_eq!(labels.len(), 4, "{labels:?}");
    let example = include_str!("../examples/quickstart.rs");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "Alpha beta gamma.").unwrap();
    for label in &labels {
        assert!(example.contains(&format!("\"{label}\"")), "{label}");
        let (code, _, err) = run(&["chunk", s(dir.path()), "--chunker", label]);
        assert_eq!(code, 0, "`{label}` is not a chunker spec: {err}");
    }
}
