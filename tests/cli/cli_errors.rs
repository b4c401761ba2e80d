//! What the CLI says when its input is wrong, through the real binary: one line, each cause
//! once, naming the path the user gave; and a standard error that cannot be written to.

use crate::cli_support;

use cli_support::{fails_on_one_line, run, s, write};
use std::path::Path;

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
    std::fs::write(dir.path().join("a.md"), "Alpha.").unwrap();
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
        let err = fails_on_one_line(&args);
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
    let err = fails_on_one_line(&[
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
    let readme = include_str!("../../README.md");
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
    let example = include_str!("../../examples/quickstart.rs");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.md"), "Alpha beta gamma.").unwrap();
    for label in &labels {
        assert!(example.contains(&format!("\"{label}\"")), "{label}");
        let (code, _, err) = run(&["chunk", s(dir.path()), "--chunker", label]);
        assert_eq!(code, 0, "`{label}` is not a chunker spec: {err}");
    }
}

#[test]
fn a_run_whose_queries_are_not_judged_is_an_error_and_a_partial_match_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let qrels = write(dir.path(), "qrels.txt", "q1 0 d1 1\nq2 0 d2 1\n");
    let disjoint = write(
        dir.path(),
        "disjoint.txt",
        "Q1 Q0 d1 1 0.9 r\nQ2 Q0 d2 1 0.9 r\n",
    );
    let err = fails_on_one_line(&["score", "--qrels", s(&qrels), "--run", s(&disjoint)]);
    assert!(
        err.contains("no query of the run")
            && err.contains("(`Q1`, `Q2`) never match the judged ones (`q1`, `q2`)"),
        "{err}"
    );

    let partial = write(
        dir.path(),
        "partial.txt",
        "q1 Q0 d1 1 0.9 r\nq3 Q0 d2 1 0.9 r\nq4 Q0 d2 1 0.9 r\n",
    );
    let (code, out, err) = run(&[
        "score",
        "--qrels",
        s(&qrels),
        "--run",
        s(&partial),
        "-m",
        "P.1",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.starts_with("warning: 2 of 3 queries of the run")
            && err.contains("left out of the figures (`q3`, `q4`)"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["queries"], 1, "{v}");
}

#[test]
fn a_measure_named_twice_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let qrels = write(dir.path(), "qrels.txt", "q1 0 d1 1\n");
    let run_file = write(dir.path(), "run.txt", "q1 Q0 d1 1 0.9 r\n");
    let (code, out, err) = run(&[
        "score",
        "--qrels",
        s(&qrels),
        "--run",
        s(&run_file),
        "-m",
        "P.5",
        "-m",
        "map",
        "-m",
        "P_5",
        "-m",
        "precision@5",
        "-m",
        "map",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    // Keys in the order they are written: a JSON map would hide a repeated one.
    let keys = |section: &str| -> Vec<String> {
        let start = out.find(&format!("\"{section}\":{{")).unwrap() + section.len() + 4;
        let body = &out[start..start + out[start..].find('}').unwrap()];
        body.split(',')
            .map(|kv| kv.split(':').next().unwrap().trim_matches('"').to_owned())
            .collect()
    };
    assert_eq!(keys("metrics"), ["precision@5", "map"], "{out}");
    assert_eq!(keys("std"), ["precision@5", "map"], "{out}");
}

#[test]
fn a_chunk_listing_of_another_corpus_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let text = "Alpha beta gamma delta. Epsilon zeta eta theta. Iota kappa lambda mu.";
    write(dir.path(), "docs/a.md", text);
    let dataset = write(
        dir.path(),
        "d.jsonl",
        "{\"id\":\"q1\",\"inputs\":{\"query\":\"zeta?\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":24,\"end\":47}]}}\n",
    );
    let retrieved = write(
        dir.path(),
        "r.jsonl",
        "{\"id\":\"q1\",\"retrieved\":[{\"doc_id\":\"a.md\",\"start\":24,\"end\":47}]}\n",
    );
    let chunker = "recursive:size=30,overlap=0";
    let score = |chunks: &Path| {
        run(&[
            "score",
            "--dataset",
            s(&dataset),
            "--retrieved",
            s(&retrieved),
            "--chunks",
            s(chunks),
            "--json",
        ])
    };
    // The corpus chunked from its own folder: ids as the dataset has them.
    let (_, listing, _) = run(&["chunk", s(&dir.path().join("docs")), "--chunker", chunker]);
    let good = write(dir.path(), "good.jsonl", &listing);
    let (code, _, err) = score(&good);
    assert_eq!(code, 0, "{err}");

    // Chunked from the folder above: every id is `docs/a.md`, and PrecisionΩ would be 0.
    let (_, listing, _) = run(&["chunk", s(dir.path()), "--chunker", chunker]);
    let other = write(dir.path(), "other.jsonl", &listing);
    let (code, _, err) = score(&other);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "does not come from the dataset's corpus: it has no chunk of 1 of the 1 documents"
        ) && err.contains("(`a.md`); it lists `docs/a.md`"),
        "{err}"
    );

    // Chunks of another text under the same name miss the answer altogether.
    let short = write(
        dir.path(),
        "short.jsonl",
        "{\"doc_id\":\"a.md\",\"start\":0,\"end\":20}\n",
    );
    let (code, _, err) = score(&short);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("no chunk of `a.md` overlaps characters 24..47, the answer of query `q1`"),
        "{err}"
    );
}

#[test]
fn ndcg_is_trec_evals_whole_ranking_figure() {
    let dir = tempfile::tempdir().unwrap();
    let qrels = write(dir.path(), "qrels.txt", "q1 0 d1 1\nq1 0 d2 1\n");
    // d1 at rank 7: past a cut-off of 5, inside the whole ranking.
    let lines: String = (1..=7)
        .map(|r| {
            let doc = if r == 7 {
                "d1".to_owned()
            } else {
                format!("x{r}")
            };
            format!("q1 Q0 {doc} {r} {} t\n", 10 - r)
        })
        .collect();
    let run_file = write(dir.path(), "run.txt", &lines);
    let (code, out, err) = run(&[
        "score",
        "--qrels",
        s(&qrels),
        "--run",
        s(&run_file),
        "-m",
        "ndcg",
        "-k",
        "5",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let want = (1.0 / 8f64.log2()) / (1.0 + 1.0 / 3f64.log2());
    let got = v["metrics"]["ndcg"]
        .as_f64()
        .unwrap_or_else(|| panic!("{v}"));
    assert!((got - want).abs() < 1e-12, "{got} {want}");
    assert_eq!(v["metrics"].as_object().unwrap().len(), 1, "{v}");

    let err = fails_on_one_line(&[
        "score",
        "--qrels",
        s(&qrels),
        "--run",
        s(&run_file),
        "-m",
        "ndcg.5",
    ]);
    assert!(
        err.contains("nDCG at a cut-off is `ndcg_cut` (`ndcg_cut.5`)"),
        "{err}"
    );
}

#[test]
fn a_failed_write_names_the_path_given_not_a_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "docs/a.md", "Alpha beta gamma.");
    let dataset = write(
        dir.path(),
        "d.jsonl",
        "{\"id\":\"q1\",\"inputs\":{\"query\":\"beta?\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":6,\"end\":10,\"text\":\"beta\"}]}}\n",
    );
    let out = dir.path().join("missing/out.jsonl");
    let err = fails_on_one_line(&[
        "dataset",
        "reanchor",
        s(&dataset),
        "--corpus",
        s(&dir.path().join("docs")),
        "-o",
        s(&out),
    ]);
    assert!(err.contains(s(&out)), "{err}");
    // tempfile's own message ends "at path <the temporary file>".
    assert!(
        !err.contains(" at path ") && !err.contains(".rag-eval-"),
        "{err}"
    );
    assert_eq!(err.matches(&not_found()).count(), 1, "{err}");
}

/// A `score` that succeeds with a warning on standard error, whose standard error is `stderr`.
#[cfg(target_os = "linux")]
fn score_with_a_warning(dir: &Path, stderr: impl Into<std::process::Stdio>) -> std::process::Child {
    let qrels = write(dir, "qrels.txt", "q1 0 d1 1\nq2 0 d2 1\n");
    let partial = write(dir, "partial.txt", "q1 Q0 d1 1 0.9 r\nq3 Q0 d2 1 0.9 r\n");
    std::process::Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .env("RAG_EVAL_RUNS", "off")
        .args([
            "score",
            "--qrels",
            s(&qrels),
            "--run",
            s(&partial),
            "-m",
            "P.1",
            "--json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

#[test]
#[cfg(target_os = "linux")]
fn a_failed_write_to_standard_error_is_exit_code_1_and_a_closed_one_is_quiet() {
    let dir = tempfile::tempdir().unwrap();
    // A full disk: the work is done and printed, the exit code says the warning was lost.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = score_with_a_warning(dir.path(), full)
        .wait_with_output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["queries"], 1, "{v}");

    // A reader that went away: no error.
    let mut child = score_with_a_warning(dir.path(), std::process::Stdio::piped());
    drop(child.stderr.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["queries"], 1, "{v}");
}

#[test]
fn credentials_in_a_provider_url_are_refused_and_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let d = write(
        dir.path(),
        "d.jsonl",
        r#"{"id":"q1","inputs":{"query":"x"},"outputs":{"relevant_spans":[{"doc_id":"a.md","start":0,"end":5}],"reference_answer":"yes"}}"#,
    );
    let a = write(
        dir.path(),
        "a.jsonl",
        r#"{"id":"q1","answer":"yes","contexts":[]}"#,
    );
    let err = fails_on_one_line(&[
        "score",
        "--dataset",
        s(&d),
        "--answers",
        s(&a),
        "--embedder",
        "openai:model=m,base_url=http://user:pa55w0rd@127.0.0.1:1/v1",
    ]);
    assert!(
        err.contains("carries a user name or password") && !err.contains("pa55w0rd"),
        "{err}"
    );
}

#[test]
fn dataset_problems_quote_control_characters_escaped() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "docs/a.md", "Alpha beta.");
    let d = write(
        dir.path(),
        "d.jsonl",
        "{\"id\":\"q\\u001b]0;pwned\\u0007\\r\\nforged\",\"inputs\":{\"query\":\"x\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"missing.md\",\"start\":0,\"end\":5}]}}\n",
    );
    let (code, _, err) = run(&[
        "dataset",
        "validate",
        s(&d),
        "--corpus",
        s(&dir.path().join("docs")),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains(['\u{1b}', '\u{7}', '\r']), "{err:?}");
    assert!(!err.contains("\nforged"), "{err}");
    assert!(err.contains("\\u{1b}]0;pwned"), "{err}");
}
