//! The CLI's behaviour and JSON contracts, through the real binary.

use crate::cli_support;
use crate::shared_data;

use cli_support::{bundled_copy, fails, ok, run, s, walk, write};

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Top-level keys of a JSON object line, in the order they are written.
fn key_order(line: &str) -> Vec<String> {
    let v: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
    let mut keys: Vec<(usize, String)> = v
        .keys()
        .map(|k| {
            let pos = find_top_level_key(line, k)
                .unwrap_or_else(|| panic!("key {k} not found at top level"));
            (pos, k.clone())
        })
        .collect();
    keys.sort();
    keys.into_iter().map(|(_, k)| k).collect()
}

/// Byte position of `"key":` at nesting depth 1, outside strings.
fn find_top_level_key(line: &str, key: &str) -> Option<usize> {
    let needle = format!("\"{key}\":");
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (i, c) in line.char_indices() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            '"' => {
                if depth == 1 && line[i..].starts_with(&needle) {
                    return Some(i);
                }
                in_str = true;
            }
            _ => {}
        }
    }
    None
}

#[test]
fn chunk_prints_jsonl_with_char_offsets_sorted_by_document() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("docs");
    write(&root, "z.md", "Zeta paragraph one.\n\nZeta paragraph two.");
    write(&root, "sub/a.md", "Ünïcödé fïrst.\n\nSecond part here.");
    write(&root, "skip.txt", "not markdown");
    let single = write(dir.path(), "single.md", "Just one.");
    let out = ok(&[
        "chunk",
        "--chunker",
        "recursive:size=20,overlap=0",
        s(&root),
        s(&single),
    ]);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        key_order(out.lines().next().unwrap()),
        ["doc_id", "start", "end", "text", "id", "chunk_id"],
        "documented key order"
    );
    let got: Vec<(&str, u64, u64, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["doc_id"].as_str().unwrap(),
                l["start"].as_u64().unwrap(),
                l["end"].as_u64().unwrap(),
                l["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("single.md", 0, 9, "Just one."),
            ("sub/a.md", 0, 14, "Ünïcödé fïrst."),
            ("sub/a.md", 16, 33, "Second part here."),
            ("z.md", 0, 19, "Zeta paragraph one."),
            ("z.md", 21, 40, "Zeta paragraph two."),
        ]
    );
    let expected_id =
        rag_eval::chunk::PositionAwareChunkId::new(&"sub/a.md".into(), 16, 33, "Second part here.");
    assert_eq!(lines[2]["id"], expected_id.as_str());
    assert_eq!(
        lines[2]["chunk_id"],
        rag_eval::chunk::ChunkId::from_content("Second part here.").as_str(),
        "the content id chunk-level files use"
    );

    let txt = ok(&[
        "chunk",
        "--chunker",
        "token:size=1,overlap=0",
        "--glob",
        "*.txt",
        s(&root),
    ]);
    // cl100k: "not" + " markdown"; only the .txt file matches the glob.
    let texts: Vec<String> = txt
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(texts, ["not", " markdown"], "{txt}");
}

/// `chunk` writes a document's chunks before it reads the next. The second document is a FIFO
/// that nobody writes to until the first document's chunks have arrived: a command that read
/// every document before writing would wait on it and print nothing.
#[cfg(unix)]
#[test]
fn chunk_writes_each_document_before_reading_the_next() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::Duration;

    let (first, second) = ("Alpha one.\n\nAlpha two.", "Beta one.\n\nBeta two.");
    let spec = "recursive:size=12,overlap=0";
    let plain = tempfile::tempdir().unwrap();
    let expected = ok(&[
        "chunk",
        "--chunker",
        spec,
        s(&write(plain.path(), "a.md", first)),
        s(&write(plain.path(), "b.md", second)),
    ]);
    assert_eq!(expected.lines().count(), 4, "{expected}");

    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.md", first);
    let fifo = dir.path().join("b.md");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["chunk", "--chunker", spec, s(&a), s(&fifo)])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if lines.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let mut got = Vec::new();
    while got.len() < 2 {
        match received.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => got.push(line),
            Err(e) => {
                child.kill().ok();
                panic!("the first document's chunks did not arrive before the second was read ({e}): {got:?}");
            }
        }
    }
    assert!(
        got.iter().all(|l| l.contains(r#""doc_id":"a.md""#)),
        "{got:?}"
    );

    // Opening a FIFO to write waits for its reader: on a thread, so a command that never opens
    // it fails the test instead of hanging it.
    let (done, written) = mpsc::channel();
    std::thread::spawn(move || {
        let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        w.write_all(second.as_bytes()).unwrap();
        done.send(()).unwrap();
    });
    if written.recv_timeout(Duration::from_secs(60)).is_err() {
        child.kill().ok();
        panic!("the command never read the second document");
    }
    got.extend(received.iter());
    assert!(child.wait().unwrap().success());
    assert_eq!(
        got.join("\n") + "\n",
        expected,
        "the same output as from regular files"
    );
}

#[test]
fn chunk_errors_are_one_line_and_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let e = fails(&["chunk", "--chunker", "recursive:sise=3", s(dir.path())]);
    assert!(
        e.contains("unknown key `sise` for `recursive` (did you mean `size`?)"),
        "{e}"
    );
    let e = fails(&[
        "chunk",
        "--chunker",
        "recursive:size=3",
        s(&dir.path().join("nope")),
    ]);
    assert!(e.contains("nope"), "{e}");
    let e = fails(&["chunk", "--chunker", "recursive:size=3", s(dir.path())]);
    assert!(e.contains("no documents matching `**/*.md`"), "{e}");
    write(dir.path(), "bad.md", "");
    std::fs::write(dir.path().join("bad.md"), b"\xff").unwrap();
    let e = fails(&["chunk", "--chunker", "recursive:size=3", s(dir.path())]);
    assert!(e.contains("bad.md") && e.contains("not valid UTF-8"), "{e}");
    let (code, _, _) = run(&["chunk"]);
    assert_eq!(code, 2, "usage errors exit with 2");
}

const TOKEN_DATASET: &str = concat!(
    r#"{"id":"q1","inputs":{"query":"first"},"outputs":{"relevant_spans":[{"doc_id":"a.md","start":10,"end":20}]}}"#,
    "\n",
    r#"{"id":"q2","inputs":{"query":"second"},"outputs":{"relevant_spans":[{"doc_id":"a.md","start":40,"end":45},{"doc_id":"b.md","start":0,"end":5}]}}"#,
    "\n"
);

fn token_fixture(dir: &Path) -> (PathBuf, PathBuf) {
    let d = write(dir, "d.jsonl", TOKEN_DATASET);
    let r = write(
        dir,
        "r.jsonl",
        concat!(
            r#"{"id":"q2","retrieved":[{"doc_id":"a.md","start":45,"end":50}]}"#,
            "\n",
            r#"{"id":"q1","retrieved":[{"doc_id":"a.md","start":5,"end":15},{"doc_id":"a.md","start":10,"end":20,"score":0.5}]}"#,
            "\n"
        ),
    );
    (d, r)
}

fn figure(v: &Value, q: usize, name: &str) -> f64 {
    v["per_query"][q]["metrics"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("no {name} in {v}"))
}

#[test]
fn score_token_level_json_contract_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let (d, r) = token_fixture(dir.path());
    let json = ok(&[
        "score",
        "--dataset",
        s(&d),
        "--retrieved",
        s(&r),
        "-k",
        "5",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        key_order(&json),
        [
            "level",
            "k",
            "mode",
            "queries",
            "metrics",
            "std",
            "per_query"
        ]
    );
    assert_eq!(
        (
            v["level"].as_str(),
            v["k"].as_u64(),
            v["mode"].as_str(),
            v["queries"].as_u64()
        ),
        (Some("token"), Some(5), Some("standard"), Some(2))
    );
    assert_eq!(v["per_query"][0]["id"], "q1", "dataset order");
    // q1: retrieved 5..15 and 10..20 merge to 5..20 (15 chars); truth 10..20 is covered.
    assert_eq!(figure(&v, 0, "span_recall@5"), 1.0);
    assert!((figure(&v, 0, "span_precision@5") - 10.0 / 15.0).abs() < 1e-12);
    assert!((figure(&v, 0, "span_iou@5") - 10.0 / 15.0).abs() < 1e-12);
    assert!((figure(&v, 0, "precision@5") - 0.4).abs() < 1e-12);
    assert_eq!(figure(&v, 0, "mrr"), 1.0);
    // q2: a chunk touching the truth does not overlap it.
    assert_eq!(figure(&v, 1, "span_recall@5"), 0.0);
    assert_eq!(figure(&v, 1, "hit@5"), 0.0);
    assert_eq!(v["metrics"]["span_recall@5"], 0.5);
    assert_eq!(v["std"]["span_recall@5"], 0.5);

    // Chroma mode sums retrieved lengths without merging: 10 / (10 + 10).
    let c: Value = serde_json::from_str(&ok(&[
        "score",
        "--dataset",
        s(&d),
        "--retrieved",
        s(&r),
        "--mode",
        "chroma",
        "--json",
    ]))
    .unwrap();
    assert_eq!(c["mode"], "chroma");
    assert_eq!(c["k"], 5, "default k");
    assert!((figure(&c, 0, "span_precision@5") - 0.5).abs() < 1e-12);

    let table = ok(&["score", "--dataset", s(&d), "--retrieved", s(&r)]);
    assert!(
        table.starts_with("token-level, k = 5, mode = standard, 2 queries\n"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("span_recall@5") && l.contains("0.5000")),
        "{table}"
    );
}

#[test]
fn score_with_chunks_adds_precision_omega() {
    let dir = tempfile::tempdir().unwrap();
    let (d, r) = token_fixture(dir.path());
    // The chunker's whole output: a.md in 10-char chunks, b.md in one.
    let chunks: String = (0..5)
        .map(|i| {
            format!(
                "{{\"doc_id\":\"a.md\",\"start\":{},\"end\":{},\"text\":\"\",\"id\":\"x\"}}\n",
                i * 10,
                i * 10 + 10
            )
        })
        .chain(["{\"doc_id\":\"b.md\",\"start\":0,\"end\":20}\n".to_string()])
        .collect();
    let c = write(dir.path(), "c.jsonl", &chunks);
    let v: Value = serde_json::from_str(&ok(&[
        "score",
        "--dataset",
        s(&d),
        "--retrieved",
        s(&r),
        "--mode",
        "chroma",
        "--chunks",
        s(&c),
        "--json",
    ]))
    .unwrap();
    // q1: truth 10..20; chunks 0..10 and 20..30 touch it, so they count: 10 of 30 characters.
    assert_eq!(figure(&v, 0, "precision_omega"), 10.0 / 30.0);
    // q2: a.md 30..50 (two chunks meeting 40..45) and b.md 0..20: 10 truth characters of 40.
    assert_eq!(figure(&v, 1, "precision_omega"), 0.25);
}

#[test]
fn score_rejects_mismatched_retrieval_files() {
    let dir = tempfile::tempdir().unwrap();
    let (d, _) = token_fixture(dir.path());
    let only_q1 = write(dir.path(), "r1.jsonl", r#"{"id":"q1","retrieved":[]}"#);
    let e = fails(&["score", "--dataset", s(&d), "--retrieved", s(&only_q1)]);
    assert!(
        e.contains("1 of 2 dataset queries have no line")
            && e.contains("q2")
            && e.contains("--allow-missing"),
        "{e}"
    );
    let v: Value = serde_json::from_str(&ok(&[
        "score",
        "--dataset",
        s(&d),
        "--retrieved",
        s(&only_q1),
        "--allow-missing",
        "--json",
    ]))
    .unwrap();
    assert_eq!(v["queries"], 2);
    assert_eq!(figure(&v, 1, "span_recall@5"), 0.0);

    let extra = write(
        dir.path(),
        "r2.jsonl",
        "{\"id\":\"q1\",\"retrieved\":[]}\n{\"id\":\"q9\",\"retrieved\":[]}\n",
    );
    let e = fails(&["score", "--dataset", s(&d), "--retrieved", s(&extra)]);
    assert!(
        e.contains("r2.jsonl:2: query `q9` is not in the dataset"),
        "{e}"
    );
    let wrong_level = write(
        dir.path(),
        "r3.jsonl",
        r#"{"id":"q1","retrieved":["chunk_abc"]}"#,
    );
    let e = fails(&["score", "--dataset", s(&d), "--retrieved", s(&wrong_level)]);
    assert!(e.contains("r3.jsonl:1:"), "{e}");
    let bad_dataset = write(dir.path(), "bad.jsonl", "{\"id\":1}\n");
    let e = fails(&[
        "score",
        "--dataset",
        s(&bad_dataset),
        "--retrieved",
        s(&extra),
    ]);
    assert!(e.contains("bad.jsonl:1:"), "{e}");
    let e = fails(&[
        "score",
        "--dataset",
        s(&d),
        "--retrieved",
        s(&extra),
        "-k",
        "3",
        "-k",
        "5",
    ]);
    assert!(e.contains("one -k"), "{e}");
}

#[test]
fn score_chunk_level() {
    let dir = tempfile::tempdir().unwrap();
    let d = write(
        dir.path(),
        "d.jsonl",
        r#"{"id":"q1","inputs":{"query":"x"},"outputs":{"relevant_chunk_ids":["chunk_a","chunk_b"]},"metadata":{"chunker":"recursive:size=400,overlap=0"}}"#,
    );
    let r = write(
        dir.path(),
        "r.jsonl",
        r#"{"id":"q1","retrieved":["chunk_c","chunk_a","chunk_a"]}"#,
    );
    let v: Value = serde_json::from_str(&ok(&[
        "score",
        "--dataset",
        s(&d),
        "--retrieved",
        s(&r),
        "-k",
        "3",
        "--json",
    ]))
    .unwrap();
    assert_eq!(v["level"], "chunk");
    assert_eq!(figure(&v, 0, "chunk_recall@3"), 0.5);
    assert_eq!(
        figure(&v, 0, "chunk_precision@3"),
        0.5,
        "duplicates count once"
    );
    assert_eq!(figure(&v, 0, "mrr"), 0.5);
    let e = fails(&[
        "score",
        "--dataset",
        s(&d),
        "--retrieved",
        s(&r),
        "--mode",
        "chroma",
    ]);
    assert!(e.contains("chunk-level"), "{e}");
}

#[test]
fn score_trec_files_like_trec_eval() {
    let dir = tempfile::tempdir().unwrap();
    let q = write(
        dir.path(),
        "qrels",
        "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d1 1\nq3 0 d1 1\n",
    );
    let r = write(dir.path(), "run", "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 2.0 t\nq1 Q0 d3 3 3.0 t\nq2 Q0 d5 1 1.0 t\nq2 Q0 d1 2 0.5 t\n");
    let v: Value = serde_json::from_str(&ok(&[
        "score",
        "--qrels",
        s(&q),
        "--run",
        s(&r),
        "-k",
        "2",
        "--json",
    ]))
    .unwrap();
    assert_eq!(v["level"], "trec");
    assert_eq!(v["cutoffs"], serde_json::json!([2]));
    assert_eq!(
        v["queries"], 2,
        "q3 has judgements but no run line: skipped, as trec_eval does"
    );
    // q1 ranks d3 (rel 2), d2 (rel 0), d1 (rel 1) by score, whatever the rank column says.
    assert_eq!(figure(&v, 0, "precision@2"), 0.5);
    assert!((figure(&v, 0, "map") - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-12);
    let idcg = 2.0 + 1.0 / 3f64.log2();
    assert!((figure(&v, 0, "ndcg@2") - 2.0 / idcg).abs() < 1e-12);
    assert_eq!(figure(&v, 1, "mrr"), 0.5);
    assert!(
        (v["metrics"]["map"].as_f64().unwrap() - ((1.0 + 2.0 / 3.0) / 2.0 + 0.5) / 2.0).abs()
            < 1e-12
    );

    let only_map: Value = serde_json::from_str(&ok(&[
        "score",
        "--qrels",
        s(&q),
        "--run",
        s(&r),
        "-m",
        "map",
        "--json",
    ]))
    .unwrap();
    let names: Vec<&str> = only_map["metrics"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, ["map"]);

    let bad = write(dir.path(), "badrun", "q1 Q0 d1 1 notanumber t\n");
    let e = fails(&["score", "--qrels", s(&q), "--run", s(&bad)]);
    assert!(e.contains("badrun:1"), "{e}");
    let (code, _, _) = run(&["score", "--qrels", s(&q)]);
    assert_eq!(code, 2, "--qrels needs --run");
}

#[test]
#[ignore = "needs ../shared/data"]
fn dataset_import_checks_and_writes_the_shared_benchmark() {
    let data = shared_data::chunking_eval_general();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.jsonl");
    let (code, _, err) = run(&[
        "dataset",
        "import",
        "--from",
        "chroma-csv",
        s(&data.join("questions_df.csv")),
        "--corpus",
        s(&data.join("corpora")),
        "-o",
        s(&out),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("imported 472 token-level queries (790 spans over 5 documents)"),
        "{err}"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 472);
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["id"], "q0001");
    assert_eq!(
        first["outputs"]["relevant_spans"][0]["doc_id"],
        "state_of_the_union.md"
    );
    assert_eq!(first["outputs"]["relevant_spans"][0]["start"], 27346);
}

#[test]
fn key_order_reads_the_written_order() {
    assert_eq!(
        key_order(r#"{"b":1,"a":{"z":[1,"}"]},"c":"\"a\":"}"#),
        ["b", "a", "c"]
    );
}

#[test]
fn dataset_validate_summarises_and_reanchor_repairs_drift() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, dataset) = bundled_copy(dir.path());
    let out = ok(&["dataset", "validate", s(&dataset), "--corpus", s(&corpus)]);
    assert!(
        out.contains("40 token-level rows over 12 documents"),
        "{out}"
    );
    assert!(
        out.contains("difficulty: analytical 8, factual 16, inferential 6, paraphrased 10"),
        "{out}"
    );
    let v: Value = serde_json::from_str(&ok(&[
        "dataset",
        "validate",
        s(&dataset),
        "--corpus",
        s(&corpus),
        "--json",
    ]))
    .unwrap();
    assert_eq!(
        (v["rows"].as_u64(), v["truth_items"].as_u64()),
        (Some(40), Some(55))
    );
    assert_eq!(v["problems"], serde_json::json!([]));

    // The corpus changes: a new paragraph at the top of every document, one sentence re-wrapped.
    let mut drifted_docs = 0;
    for doc in walk(&corpus) {
        let text = std::fs::read_to_string(&doc).unwrap();
        std::fs::write(&doc, format!("> Note: this page was revised.\n\n{text}")).unwrap();
        drifted_docs += 1;
    }
    assert_eq!(drifted_docs, 12);
    let (code, _, err) = run(&["dataset", "validate", s(&dataset), "--corpus", s(&corpus)]);
    assert_eq!(code, 1);
    assert!(
        err.contains("error: 55 problems in") && err.contains("reanchor"),
        "{err}"
    );
    assert!(
        err.contains("questions.jsonl:1: example `q0001`, span 0: text at"),
        "{err}"
    );

    let fixed = dir.path().join("fixed.jsonl");
    let (code, _, err) = run(&[
        "dataset",
        "reanchor",
        s(&dataset),
        "--corpus",
        s(&corpus),
        "-o",
        s(&fixed),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("moved 55 spans (55 verbatim, 0 ignoring whitespace)"),
        "{err}"
    );
    ok(&["dataset", "validate", s(&fixed), "--corpus", s(&corpus)]);
    // The input was left alone because -o was given.
    let (code, _, _) = run(&["dataset", "validate", s(&dataset), "--corpus", s(&corpus)]);
    assert_eq!(code, 1);

    // Text that is gone cannot be placed: reported, exit 1, the rest still written in place.
    let first_doc = corpus.join("overview.md");
    std::fs::write(&first_doc, "Everything was rewritten.").unwrap();
    let (code, _, err) = run(&["dataset", "reanchor", s(&dataset), "--corpus", s(&corpus)]);
    assert_eq!(code, 1);
    assert!(err.contains("could not be placed"), "{err}");
    assert!(err.contains("no longer in `overview.md`"), "{err}");
}

#[test]
fn eval_on_the_bundled_data_reproduces_the_committed_figures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let expected: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(root.join("tests/fixtures/eval/bundled_expected.json")).unwrap(),
    )
    .unwrap();
    let corpus = root.join("examples/data/corpus");
    let dataset = root.join("examples/data/questions.jsonl");
    let mut got = Vec::new();
    for (retriever, chunkers) in [
        (
            "bm25",
            vec!["recursive:size=400,overlap=0", "markdown:size=400"],
        ),
        ("dense", vec!["recursive:size=400,overlap=0"]),
    ] {
        let mut args = vec![
            "eval",
            "--corpus",
            s(&corpus),
            "--dataset",
            s(&dataset),
            "--retriever",
            retriever,
            "--json",
        ];
        for c in &chunkers {
            args.extend(["--chunker", c]);
        }
        let out = ok(&args);
        assert_eq!(
            out.lines().count(),
            chunkers.len(),
            "one JSON line per chunker"
        );
        for line in out.lines() {
            assert_eq!(
                key_order(line),
                [
                    "level",
                    "k",
                    "mode",
                    "queries",
                    "metrics",
                    "std",
                    "per_query",
                    "by_difficulty",
                    "config",
                    "dataset_hash",
                    "timings"
                ],
                "eval extends the score contract"
            );
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(
                v["per_query"][0]["query"],
                "Which Linux kernel version does a Larkspur host need at minimum?"
            );
            assert_eq!(v["per_query"][0]["difficulty"], "factual");
            let labelled: u64 = v["by_difficulty"]
                .as_object()
                .unwrap()
                .values()
                .map(|d| d["queries"].as_u64().unwrap())
                .sum();
            assert_eq!(labelled, 40);
            got.push((retriever, v));
        }
    }
    assert_eq!(got.len(), expected.len());
    for ((retriever, v), e) in got.iter().zip(&expected) {
        assert_eq!(e["retriever"], *retriever);
        assert_eq!(v["config"]["chunker"], e["chunker"]);
        for part in ["metrics", "std"] {
            let (g, x) = (v[part].as_object().unwrap(), e[part].as_object().unwrap());
            assert_eq!(g.keys().collect::<Vec<_>>(), x.keys().collect::<Vec<_>>());
            for (name, want) in x {
                let have = g[name].as_f64().unwrap();
                assert!(
                    (have - want.as_f64().unwrap()).abs() < 1e-12,
                    "{retriever} {} {part} {name}: {have} != {want}",
                    e["chunker"]
                );
            }
        }
    }

    let table = ok(&[
        "eval",
        "--corpus",
        s(&corpus),
        "--dataset",
        s(&dataset),
        "--chunker",
        "recursive:size=400,overlap=0",
    ]);
    assert!(table.contains("by difficulty"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("paraphrased") && l.contains(" 10 ")),
        "{table}"
    );
    let e = fails(&[
        "eval",
        "--corpus",
        s(&corpus),
        "--dataset",
        s(&dataset),
        "--chunker",
        "recursive:size=400",
        "--retriever",
        "sparse",
    ]);
    assert!(
        e.contains("unknown retriever `sparse`; known: bm25, dense"),
        "{e}"
    );
}

/// Runs `args` with standard output sent to `stdout`; returns the exit code and stderr.
fn run_to(args: &[&str], stdout: impl Into<std::process::Stdio>) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        // Runs are recorded in tests/cli/runs_cli.rs, never in the crate's own folder.
        .env("RAG_EVAL_RUNS", "off")
        .args(args)
        .stdout(stdout)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("the binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A small corpus and a chunking_evaluation CSV over it.
fn csv_fixture(dir: &Path) -> (PathBuf, PathBuf) {
    let corpus = dir.join("corpus");
    write(&corpus, "a.md", "hello world, and more text here.");
    let csv = write(
        dir,
        "questions.csv",
        "question,references,corpus_id\n\"Who?\",\"[{\"\"content\"\": \"\"hello world\"\", \"\"start_index\"\": 0, \"\"end_index\"\": 11}]\",a\n",
    );
    (corpus, csv)
}

/// One invocation of every subcommand that prints to standard output.
fn printing_commands(dir: &Path) -> Vec<Vec<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = root.join("examples/data/corpus");
    let dataset = root.join("examples/data/questions.jsonl");
    let (d, r) = token_fixture(dir);
    let (csv_corpus, csv) = csv_fixture(dir);
    let owned = |v: &[&str]| v.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    vec![
        owned(&[
            "chunk",
            "--chunker",
            "recursive:size=50,overlap=0",
            s(&corpus),
        ]),
        owned(&["score", "--dataset", s(&d), "--retrieved", s(&r), "--json"]),
        owned(&["score", "--dataset", s(&d), "--retrieved", s(&r)]),
        owned(&[
            "dataset",
            "validate",
            s(&dataset),
            "--corpus",
            s(&corpus),
            "--json",
        ]),
        owned(&["dataset", "validate", s(&dataset), "--corpus", s(&corpus)]),
        owned(&[
            "eval",
            "--corpus",
            s(&corpus),
            "--dataset",
            s(&dataset),
            "--chunker",
            "recursive:size=400,overlap=0",
            "--json",
        ]),
        owned(&[
            "dataset",
            "import",
            "--from",
            "chroma-csv",
            s(&csv),
            "--corpus",
            s(&csv_corpus),
            "-o",
            "-",
        ]),
    ]
}

#[test]
fn a_reader_that_goes_away_ends_every_subcommand_quietly() {
    let dir = tempfile::tempdir().unwrap();
    for args in printing_commands(dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // The reading end is closed before the command starts: every write meets a broken pipe.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let (code, err) = run_to(&args, writer);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(
            err.is_empty() || err.starts_with("imported "),
            "{args:?}: nothing to say about a reader that left: {err}"
        );
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_one_line_and_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    for args in printing_commands(dir.path()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let (code, err) = run_to(&args, full);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert_eq!(
            err, "error: cannot write to standard output: No space left on device (os error 28)\n",
            "{args:?}"
        );
    }
}

#[test]
fn dataset_import_never_writes_over_its_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, csv) = csv_fixture(dir.path());
    let before_csv = std::fs::read(&csv).unwrap();
    let before_doc = std::fs::read(corpus.join("a.md")).unwrap();
    let import = |output: &str| {
        fails(&[
            "dataset",
            "import",
            "--from",
            "chroma-csv",
            s(&csv),
            "--corpus",
            s(&corpus),
            "-o",
            output,
        ])
    };
    let e = import(s(&csv));
    assert!(e.contains("is the input"), "{e}");
    let e = import(s(&dir.path().join(".").join("questions.csv")));
    assert!(e.contains("is the input"), "{e}");
    #[cfg(unix)]
    {
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&csv, &link).unwrap();
        let e = import(s(&link));
        assert!(e.contains("is the input"), "{e}");
        let e = import("/dev/null");
        assert!(e.contains("is not a regular file"), "{e}");
    }
    let e = import(s(&corpus.join("a.md")));
    assert!(e.contains("lies inside the corpus"), "{e}");
    let e = import(s(&corpus.join("questions.jsonl")));
    assert!(e.contains("lies inside the corpus"), "{e}");
    assert!(!corpus.join("questions.jsonl").exists());
    assert_eq!(std::fs::read(&csv).unwrap(), before_csv);
    assert_eq!(std::fs::read(corpus.join("a.md")).unwrap(), before_doc);

    // `-o -` is standard output, and a file elsewhere is written.
    let (code, out, err) = run(&[
        "dataset",
        "import",
        "--from",
        "chroma-csv",
        s(&csv),
        "--corpus",
        s(&corpus),
        "-o",
        "-",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("into standard output"), "{err}");
    let row: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(row["outputs"]["relevant_spans"][0]["text"], "hello world");
    assert!(!dir.path().join("-").exists());
    let elsewhere = dir.path().join("q.jsonl");
    let (code, _, err) = run(&[
        "dataset",
        "import",
        "--from",
        "chroma-csv",
        s(&csv),
        "--corpus",
        s(&corpus),
        "-o",
        s(&elsewhere),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(&elsewhere).unwrap().trim(),
        out.trim()
    );
}

#[test]
fn runs_that_produce_nothing_fail_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let (corpus, _) = csv_fixture(dir.path());
    let empty = write(dir.path(), "empty.csv", "question,references,corpus_id\n");
    let out = dir.path().join("q.jsonl");
    let e = fails(&[
        "dataset",
        "import",
        "--from",
        "chroma-csv",
        s(&empty),
        "--corpus",
        s(&corpus),
        "-o",
        s(&out),
    ]);
    assert!(e.contains("holds no questions"), "{e}");
    assert!(!out.exists(), "no empty dataset is left behind");

    // Blank documents: no question is asked, so no server is needed to see the run fail.
    let blank = dir.path().join("blank");
    write(&blank, "a.md", " \n\n ");
    let generated = dir.path().join("g.jsonl");
    let (code, _, err) = run(&[
        "generate",
        "token",
        "--corpus",
        s(&blank),
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "-o",
        s(&generated),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.lines().last().unwrap()
            == "error: no rows were generated: the documents are blank, so no question was asked",
        "{err}"
    );
}

#[test]
fn validate_lists_every_problem_and_no_summary_when_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("docs");
    write(&corpus, "a.md", "Alpha beta.\n\nGamma delta.");
    let d = write(
        dir.path(),
        "d.jsonl",
        concat!(
            "\u{feff}{\"id\":\"q1\",\"inputs\":{\"query\":\"a\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":5,\"text\":\"Alpha\"}]}}\n",
            "{broken\n",
            "{\"id\":\"q2\",\"inputs\":{\"query\":\"b\"},\"outputs\":{\"relevant_spans\":[]}}\n",
            "not json either\n",
        ),
    );
    let (code, out, err) = run(&["dataset", "validate", s(&d), "--corpus", s(&corpus)]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "", "no summary above a failure");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 4, "{err}");
    assert!(lines[0].contains("d.jsonl:2: "), "{err}");
    assert!(
        lines[1].contains("d.jsonl:3: example `q2` has nothing to find"),
        "{err}"
    );
    assert!(lines[2].contains("d.jsonl:4: "), "{err}");
    assert!(lines[3].starts_with("error: 3 problems in"), "{err}");

    let text = std::fs::read_to_string(&d).unwrap();
    let good = write(dir.path(), "good.jsonl", text.lines().next().unwrap());
    let out = ok(&["dataset", "validate", s(&good), "--corpus", s(&corpus)]);
    assert!(out.contains("1 token-level rows"), "{out}");
}

#[test]
fn score_refuses_position_aware_ids_empty_truth_and_impossible_spans() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("docs");
    write(&corpus, "a.md", "Alpha beta.\n\nGamma delta.");
    let chunks = ok(&[
        "chunk",
        "--chunker",
        "recursive:size=15,overlap=0",
        s(&corpus),
    ]);
    let gamma: Value = serde_json::from_str(chunks.lines().nth(1).unwrap()).unwrap();
    assert_eq!(gamma["text"], "Gamma delta.");
    let (pa, content) = (
        gamma["id"].as_str().unwrap(),
        gamma["chunk_id"].as_str().unwrap(),
    );

    // Chunk level: the content id scores; the position-aware id is refused, not scored 0.
    let row = |ids: &str| {
        format!("{{\"id\":\"q1\",\"inputs\":{{\"query\":\"g\"}},\"outputs\":{{\"relevant_chunk_ids\":[{ids}]}},\"metadata\":{{\"chunker\":\"recursive:size=15,overlap=0\"}}}}\n")
    };
    let d = write(dir.path(), "c.jsonl", &row(&format!("\"{content}\"")));
    let r = write(
        dir.path(),
        "r.jsonl",
        &format!("{{\"id\":\"q1\",\"retrieved\":[\"{content}\"]}}\n"),
    );
    let v: Value = serde_json::from_str(&ok(&[
        "score",
        "--dataset",
        s(&d),
        "--retrieved",
        s(&r),
        "--json",
    ]))
    .unwrap();
    assert_eq!(v["metrics"]["chunk_recall@5"], 1.0);
    let r_pa = write(
        dir.path(),
        "r_pa.jsonl",
        &format!("{{\"id\":\"q1\",\"retrieved\":[\"{pa}\"]}}\n"),
    );
    let e = fails(&["score", "--dataset", s(&d), "--retrieved", s(&r_pa)]);
    assert!(
        e.contains("r_pa.jsonl:1: ") && e.contains("is position-aware"),
        "{e}"
    );
    let d_pa = write(dir.path(), "c_pa.jsonl", &row(&format!("\"{pa}\"")));
    let e = fails(&["score", "--dataset", s(&d_pa), "--retrieved", s(&r)]);
    assert!(
        e.contains("c_pa.jsonl:1: ") && e.contains("`chunk_id`"),
        "{e}"
    );
    let (code, _, err) = run(&["dataset", "validate", s(&d), "--corpus", s(&corpus)]);
    assert_eq!(code, 0, "{err}");
    let d_bad = write(dir.path(), "c_bad.jsonl", &row("\"chunk_000000000000\""));
    let (code, _, err) = run(&["dataset", "validate", s(&d_bad), "--corpus", s(&corpus)]);
    assert_eq!(code, 1);
    assert!(
        err.contains("chunk id `chunk_000000000000` is not the id of any chunk"),
        "{err}"
    );

    // Token level: rows with nothing to find are refused unless left out on purpose.
    let d = write(
        dir.path(),
        "t.jsonl",
        concat!(
            "{\"id\":\"q1\",\"inputs\":{\"query\":\"a\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":5}]}}\n",
            "{\"id\":\"q2\",\"inputs\":{\"query\":\"b\"},\"outputs\":{\"relevant_spans\":[]}}\n",
        ),
    );
    let r = write(
        dir.path(),
        "rt.jsonl",
        "{\"id\":\"q1\",\"retrieved\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":5}]}\n{\"id\":\"q2\",\"retrieved\":[]}\n",
    );
    let e = fails(&["score", "--dataset", s(&d), "--retrieved", s(&r)]);
    assert!(
        e.contains("1 example of") && e.contains("t.jsonl:2: `q2`"),
        "{e}"
    );
    let (code, out, err) = run(&[
        "score",
        "--dataset",
        s(&d),
        "--retrieved",
        s(&r),
        "--skip-empty-truth",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("left out 1 of 2 rows"), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["queries"].as_u64(), v["metrics"]["span_iou@5"].as_f64()),
        (Some(1), Some(1.0))
    );

    // Offsets no document can have are refused when read; --corpus checks the real bounds.
    let text = std::fs::read_to_string(&d).unwrap();
    let d = write(dir.path(), "t1.jsonl", text.lines().next().unwrap());
    let huge = write(
        dir.path(),
        "huge.jsonl",
        "{\"id\":\"q1\",\"retrieved\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":18446744073709551615},{\"doc_id\":\"b.md\",\"start\":0,\"end\":5}]}\n",
    );
    let e = fails(&["score", "--dataset", s(&d), "--retrieved", s(&huge)]);
    assert!(
        e.contains("huge.jsonl:1: span 0..18446744073709551615 of `a.md` ends past"),
        "{e}"
    );
    let past = write(
        dir.path(),
        "past.jsonl",
        "{\"id\":\"q1\",\"retrieved\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":500}]}\n",
    );
    let args = ["score", "--dataset", s(&d), "--retrieved", s(&past)];
    ok(&args);
    let e = fails(&[&args[..], &["--corpus", s(&corpus)]].concat());
    assert!(
        e.contains(
            "past.jsonl:1: query `q1`, rank 1: span 0..500 is outside `a.md` (25 characters)"
        ),
        "{e}"
    );
}

#[test]
fn eval_retriever_specs_spell_out_the_default_pipeline() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = root.join("examples/data/corpus");
    let dataset = root.join("examples/data/questions.jsonl");
    let eval = |extra: &[&str]| -> Value {
        let mut args = vec![
            "eval",
            "--corpus",
            s(&corpus),
            "--dataset",
            s(&dataset),
            "--json",
        ];
        args.extend(extra);
        serde_json::from_str(ok(&args).trim()).unwrap()
    };
    let chunker = "recursive:size=400,overlap=0";
    let short = eval(&["--chunker", chunker, "--retriever", "dense"]);
    for spelled in [
        "dense:embedder=hashing,store=memory".to_owned(),
        "dense:embedder=hashing:dim=384,ngrams=2,store=memory".to_owned(),
        // The chunker inside the spec instead of --chunker.
        format!("dense:chunker=({chunker}),embedder=hashing(dim=384,ngrams=2),store=memory"),
    ] {
        let extra: Vec<&str> = if spelled.contains("chunker=") {
            vec!["--retriever", &spelled]
        } else {
            vec!["--chunker", chunker, "--retriever", &spelled]
        };
        let long = eval(&extra);
        for part in ["metrics", "std", "per_query"] {
            assert_eq!(long[part], short[part], "{spelled}: {part}");
        }
        assert_eq!(long["config"], short["config"], "{spelled}");
    }
    // The configuration's spec rebuilds the run: the same figures and the same spec again.
    let rebuilt_from = short["config"]["spec"].as_str().unwrap().to_owned();
    assert!(rebuilt_from.starts_with("dense:chunker="), "{rebuilt_from}");
    let rebuilt = eval(&["--retriever", &rebuilt_from]);
    for part in ["metrics", "std", "per_query"] {
        assert_eq!(rebuilt[part], short[part], "{rebuilt_from}: {part}");
    }
    assert_eq!(rebuilt["config"]["spec"], short["config"]["spec"]);
    let bm25 = eval(&["--chunker", chunker]);
    let tuned = eval(&["--chunker", chunker, "--retriever", "bm25:k1=1.2,b=0.75"]);
    assert_eq!(bm25["metrics"], tuned["metrics"]);

    let base = ["eval", "--corpus", s(&corpus), "--dataset", s(&dataset)];
    let fails_with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend(extra);
        fails(&args)
    };
    let e = fails_with(&[
        "--chunker",
        chunker,
        "--retriever",
        "dense:embedder=hashing:dim=8,stor=memory",
    ]);
    assert!(
        e.contains("unknown key `stor` for `hashing` (did you mean `store` of `dense`?); keys: dim, ngrams"),
        "{e}"
    );
    let e = fails_with(&["--retriever", "bm25"]);
    assert!(e.contains("no chunker: give --chunker SPEC"), "{e}");
    let e = fails_with(&[
        "--chunker",
        chunker,
        "--retriever",
        "bm25:chunker=recursive(size=10)",
    ]);
    assert!(e.contains("names a chunker: leave out --chunker"), "{e}");
    let e = fails_with(&["--chunker", chunker, "--cache", "replai"]);
    assert!(
        e.contains("unknown cache `replai` (did you mean `replay`?)"),
        "{e}"
    );
    let e = fails_with(&[
        "--chunker",
        chunker,
        "--retriever",
        "dense:embedder=onnx:dir=m",
    ]);
    assert!(
        e.contains("the `onnx` embedder needs the `onnx` feature") || e.contains("`onnx`: "),
        "{e}"
    );
}

#[test]
fn reanchor_keeps_fields_it_does_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("docs");
    write(&corpus, "a.md", "New intro. Alpha beta.");
    let moved = "{\"id\":\"q1\",\"split\":\"test\",\"inputs\":{\"query\":\"a\"},\"outputs\":{\"reference_answer\":\"Alpha.\",\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":5,\"text\":\"Alpha\",\"page\":1}]}}";
    let same = "{\"id\":\"q2\",  \"split\":\"dev\",\"inputs\":{\"query\":\"b\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":3,\"text\":\"New\"}],\"reference_answer\":\"x\"},\"metadata\":{\"b\":1.50,\"a\":2}}";
    let d = write(dir.path(), "d.jsonl", &format!("{moved}\n{same}\n"));
    let (code, _, err) = run(&["dataset", "reanchor", s(&d), "--corpus", s(&corpus)]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&d).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        moved.replace("\"start\":0,\"end\":5", "\"start\":11,\"end\":16")
    );
    assert_eq!(lines[1], same, "an unchanged row keeps its bytes");
}

#[test]
fn eval_help_lists_every_component_and_key() {
    let help = ok(&["eval", "--help"]);
    let flat: String = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for kind in rag_eval::spec::Kind::ALL {
        assert!(flat.contains(&format!("{kind}:")), "{kind}");
        for c in kind.components() {
            assert!(
                flat.contains(&format!(" {} {}", c.name, c.about)),
                "{}",
                c.name
            );
            for k in c.keys {
                assert!(
                    flat.contains(&format!("{} ({})", k.name, k.about)),
                    "{}.{}",
                    c.name,
                    k.name
                );
            }
        }
    }
    for flag in [
        "--retriever <SPEC>",
        "--cache <MODE[:path=FILE]>",
        "--chunker <SPEC>",
    ] {
        assert!(help.contains(flag), "{flag}");
    }
}

/// `eval --help` says what `--cache` and `--dataset` take: the cache holds every provider's
/// answers (not embeddings alone), and a dataset for `--rag` may hold no retrieval truth.
#[test]
fn eval_help_says_what_the_cache_and_the_dataset_hold() {
    let help = ok(&["eval", "--help"]);
    let flat: String = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!flat.contains("Cache of embeddings"), "{help}");
    assert!(
        flat.contains(
            "embeddings, the generator's and the judges' responses, the service's with --rag"
        ),
        "{help}"
    );
    assert!(
        !flat.contains("Dataset JSONL (token- or chunk-level)"),
        "{help}"
    );
    assert!(
        flat.contains("with --rag, rows without retrieval truth score the answers alone"),
        "{help}"
    );
}

const ANSWER_DATASET: &str = concat!(
    r#"{"id":"q1","inputs":{"query":"first"},"outputs":{"relevant_spans":[{"doc_id":"a.md","start":10,"end":20}],"reference_answer":"The cat sat on the mat."},"metadata":{"difficulty":"factual"}}"#,
    "\n",
    r#"{"id":"q2","inputs":{"query":"second"},"outputs":{"relevant_spans":[{"doc_id":"a.md","start":40,"end":45}],"reference_answer":["Paris","the capital, Paris"]},"metadata":{"difficulty":"factual"}}"#,
    "\n",
    r#"{"id":"q3","inputs":{"query":"third"},"outputs":{"relevant_spans":[{"doc_id":"a.md","start":0,"end":5}]},"metadata":{"difficulty":"inferential"}}"#,
    "\n"
);

const ANSWERS: &str = concat!(
    r#"{"id":"q1","answer":"the cat sat","contexts":[{"doc_id":"a.md","start":10,"end":20,"text":"0123456789","score":0.9}]}"#,
    "\n",
    r#"{"id":"q2","answer":"Paris!","contexts":[]}"#,
    "\n",
    r#"{"id":"q3","answer":"no idea","contexts":[{"doc_id":"a.md","start":0,"end":5,"text":"abcde"}]}"#,
    "\n"
);

/// Contexts given as text are found in `--corpus` and scored as spans; without a corpus a
/// token-level dataset refuses them, and a question/answer dataset is scored on its answers
/// alone (and refused by a retrieval evaluation).
#[test]
fn score_answers_places_text_contexts_and_scores_question_answer_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = write(
        dir.path(),
        "docs/a.md",
        "0123456789The cat sat.  It was\nhappy. Then more text follows here.",
    );
    let d = write(dir.path(), "d.jsonl", ANSWER_DATASET);
    // q1's context is a.md 10..37 written with its whitespace collapsed; q3's is a string the
    // corpus does not hold.
    let a = write(
        dir.path(),
        "text.jsonl",
        concat!(
            r#"{"id":"q1","answer":"the cat sat","contexts":[{"text":"The cat sat. It was happy.","doc_id":"a.md"}]}"#,
            "\n",
            r#"{"id":"q2","answer":"Paris"}"#,
            "\n",
            r#"{"id":"q3","answer":"x","contexts":["nowhere to be found"]}"#,
            "\n"
        ),
    );
    let docs = s(corpus.parent().unwrap());
    let json = ok(&[
        "score",
        "--dataset",
        s(&d),
        "--answers",
        s(&a),
        "-k",
        "3",
        "--corpus",
        docs,
        "--json",
    ]);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["contexts_located"],
        serde_json::json!({"exact": 0, "normalized": 1, "unlocated": 1})
    );
    // q1's context is placed at 10..37 and covers its truth 10..20: recall 1. q2 has no
    // context and q3 none found: not measured.
    assert_eq!(figure(&v, 0, "span_recall@3"), 1.0);
    assert!(v["per_query"][1]["metrics"].get("span_recall@3").is_none());
    assert!(v["per_query"][2]["metrics"].get("span_recall@3").is_none());
    assert_eq!(v["retrieval_not_measured"], 2);
    let err = fails(&["score", "--dataset", s(&d), "--answers", s(&a)]);
    assert!(
        err.contains("2 contexts of")
            && err.contains("are given as text without offsets: give --corpus"),
        "{err}"
    );

    let qa = write(
        dir.path(),
        "qa.jsonl",
        concat!(
            r#"{"id":"q1","inputs":{"query":"first"},"outputs":{"reference_answer":"The cat sat on the mat."}}"#,
            "\n",
            r#"{"id":"q2","inputs":{"query":"second"},"outputs":{"reference_answer":"Paris"}}"#,
            "\n",
            r#"{"id":"q3","inputs":{"query":"third"},"outputs":{"reference_answer":"x"}}"#,
            "\n"
        ),
    );
    let json = ok(&["score", "--dataset", s(&qa), "--answers", s(&a), "--json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let names: Vec<&String> = v["metrics"].as_object().unwrap().keys().collect();
    assert!(
        names
            .iter()
            .all(|n| !n.contains('@') && *n != "mrr" && *n != "map"),
        "{names:?}"
    );
    assert_eq!(v["retrieval_not_measured"], 3);
    assert_eq!(v["metrics"]["exact_match"], 2.0 / 3.0);
    let text = ok(&["score", "--dataset", s(&qa), "--answers", s(&a)]);
    assert!(!text.contains("span_recall"), "{text}");
    assert!(
        text.contains("retrieval not measured for 3 of 3 queries"),
        "{text}"
    );
    let err = fails(&[
        "eval",
        "--dataset",
        s(&qa),
        "--corpus",
        docs,
        "--chunker",
        "recursive:size=10",
    ]);
    assert!(
        err.contains("holds questions with reference answers and no retrieval truth"),
        "{err}"
    );
}

#[test]
fn score_answers_json_contract_and_figures() {
    use rag_eval::metrics::answer::{rouge, sentence_bleu, token_f1};
    let dir = tempfile::tempdir().unwrap();
    let d = write(dir.path(), "d.jsonl", ANSWER_DATASET);
    let a = write(dir.path(), "answers.jsonl", ANSWERS);
    let json = ok(&[
        "score",
        "--dataset",
        s(&d),
        "--answers",
        s(&a),
        "-k",
        "3",
        "--json",
    ]);
    let v: Value = serde_json::from_str(&json).unwrap();
    // `score --json`'s keys, with the means per difficulty and the count of rows without a
    // reference answer.
    assert_eq!(
        key_order(&json),
        [
            "level",
            "k",
            "mode",
            "queries",
            "metrics",
            "std",
            "per_query",
            "by_difficulty",
            "without_reference",
            "retrieval_not_measured"
        ]
    );
    assert_eq!(v["queries"], 3);
    assert_eq!(v["without_reference"], 1);
    // Retrieval figures come from the contexts; q2 gave none, so its retrieval is not
    // measured: no figure (not 0), and the mean is over q1 and q3.
    assert_eq!(figure(&v, 0, "span_recall@3"), 1.0);
    assert!(v["per_query"][1]["metrics"].get("span_recall@3").is_none());
    assert_eq!(figure(&v, 2, "span_recall@3"), 1.0);
    assert_eq!(v["metrics"]["span_recall@3"], 1.0);
    assert_eq!(v["retrieval_not_measured"], 1);
    // Answer figures, by hand and through the library functions.
    let refs = ["The cat sat on the mat."];
    assert_eq!(
        figure(&v, 0, "rouge_1"),
        rouge("the cat sat", &refs).unwrap().rouge_1.f1
    );
    // "the cat sat" vs six words: P = 1, R = 1/2, F1 = 2/3 (SQuAD drops "the": 2/2, 2/4).
    assert!((figure(&v, 0, "rouge_1") - 2.0 / 3.0).abs() < 1e-12);
    assert!((figure(&v, 0, "token_f1") - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(
        figure(&v, 0, "bleu"),
        sentence_bleu("the cat sat", &refs).unwrap().score
    );
    assert_eq!(figure(&v, 0, "exact_match"), 0.0);
    // Several references: the best one counts ("Paris!" normalises to "paris").
    assert_eq!(figure(&v, 1, "exact_match"), 1.0);
    assert_eq!(
        figure(&v, 1, "token_f1"),
        token_f1("Paris!", &["Paris", "the capital, Paris"]).unwrap()
    );
    // q3 has no reference: its answer metrics are absent, not 0, and the means leave it out.
    let q3 = v["per_query"][2]["metrics"].as_object().unwrap();
    assert!(q3.contains_key("mrr") && !q3.contains_key("bleu") && !q3.contains_key("token_f1"));
    assert_eq!(v["metrics"]["exact_match"], 0.5);
    assert!(
        v["metrics"].get("answer_similarity").is_none(),
        "no embedder given"
    );
    let by = &v["by_difficulty"];
    assert_eq!(by["factual"]["queries"], 2);
    assert_eq!(by["inferential"]["queries"], 1);
    assert_eq!(by["factual"]["metrics"]["exact_match"], 0.5);

    // With an embedder, answer_similarity joins; an answer equal to its reference scores 1.
    let same = write(
        dir.path(),
        "same.jsonl",
        &ANSWERS.replace("\"the cat sat\"", "\"The cat sat on the mat.\""),
    );
    let e: Value = serde_json::from_str(&ok(&[
        "score",
        "--dataset",
        s(&d),
        "--answers",
        s(&same),
        "--embedder",
        "hashing",
        "--json",
    ]))
    .unwrap();
    assert!((figure(&e, 0, "answer_similarity") - 1.0).abs() < 1e-6);
    assert_eq!(figure(&e, 0, "exact_match"), 1.0);
    assert!(e["per_query"][2]["metrics"]
        .get("answer_similarity")
        .is_none());

    let table = ok(&["score", "--dataset", s(&d), "--answers", s(&a)]);
    assert!(
        table.starts_with("token-level, k = 5, mode = standard, 3 queries\n"),
        "{table}"
    );
    assert!(
        table.contains("1 of 3 queries have no reference answer"),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("exact_match") && l.contains("0.5000")),
        "{table}"
    );
    assert!(table.contains("by difficulty"), "{table}");
}

#[test]
fn score_answers_errors_name_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = write(dir.path(), "d.jsonl", ANSWER_DATASET);
    let score = |name: &str, text: &str| {
        let a = write(dir.path(), name, text);
        fails(&["score", "--dataset", s(&d), "--answers", s(&a)])
    };
    let e = score(
        "unknown.jsonl",
        &format!("{ANSWERS}{}\n", r#"{"id":"q9","answer":"x","contexts":[]}"#),
    );
    assert!(
        e.contains("1 answer in") && e.contains("unknown.jsonl:4: `q9`"),
        "{e}"
    );
    let e = score("missing.jsonl", r#"{"id":"q1","contexts":[]}"#);
    assert!(e.contains("missing.jsonl:1: missing field `answer`"), "{e}");
    let e = score("broken.jsonl", &format!("{ANSWERS}\n{{\"id\":\"q4\","));
    assert!(e.contains("broken.jsonl:5: EOF while parsing"), "{e}");
    let e = score(
        "context.jsonl",
        r#"{"id":"q1","answer":"a","contexts":[{"doc_id":"a.md","start":0,"end":3}]}"#,
    );
    assert!(
        e.contains("context.jsonl:1: `contexts[0]`: missing field `text`"),
        "{e}"
    );
    let first = ANSWERS.lines().next().unwrap();
    let e = score("partial.jsonl", first);
    assert!(
        e.contains("2 of 3 dataset queries have no line") && e.contains("--allow-missing"),
        "{e}"
    );
    let a = write(dir.path(), "partial.jsonl", first);
    let v: Value = serde_json::from_str(&ok(&[
        "score",
        "--dataset",
        s(&d),
        "--answers",
        s(&a),
        "--allow-missing",
        "--json",
    ]))
    .unwrap();
    assert_eq!(figure(&v, 1, "exact_match"), 0.0, "an empty answer");
    let (code, _, e) = run(&[
        "score",
        "--dataset",
        s(&d),
        "--answers",
        s(&a),
        "--retrieved",
        s(&a),
    ]);
    assert_eq!(code, 2, "a usage error");
    assert!(e.contains("cannot be used with"), "{e}");
}

#[test]
fn score_answers_checks_contexts_against_the_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let d = write(dir.path(), "d.jsonl", ANSWER_DATASET);
    let corpus = dir.path().join("docs");
    write(&corpus, "a.md", &"abcdefghij0123456789".repeat(3));
    let a = write(dir.path(), "answers.jsonl", ANSWERS);
    let args = [
        "score",
        "--dataset",
        s(&d),
        "--answers",
        s(&a),
        "--corpus",
        s(&corpus),
    ];
    ok(&args);
    write(&corpus, "a.md", &"abcdefghijABCDEFGHIJ".repeat(3));
    let e = fails(&args);
    assert!(
        e.contains("answers.jsonl:1: query `q1`, `contexts[0]`: retrieved chunk `a.md` 10..20 does not match the document"),
        "{e}"
    );
}

/// The answers-file line the README shows, and the one of the command reference's
/// `score --answers` section, both parse as an answers file.
#[test]
fn the_documented_answers_lines_parse() {
    for (file, heading) in [
        ("README.md", "## Evaluate answers"),
        (
            "docs/reference/commands.md",
            "## `rag-eval score` (answers)",
        ),
    ] {
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
        let at = text
            .find(heading)
            .unwrap_or_else(|| panic!("{file} has the section {heading:?}"));
        let section = &text[at..];
        let start = section.find("```json\n").unwrap() + "```json\n".len();
        let block = &section[start..start + section[start..].find("```").unwrap()];
        let answers = rag_eval::answers::Answers::parse(block, file.into())
            .unwrap_or_else(|e| panic!("the example of {file} parses: {e}"));
        assert!(!answers.is_empty(), "{file}");
    }
}

/// `--help` of the command `path` (empty: `rag-eval` itself), wrapped at 100 columns whatever
/// the terminal: with no terminal on any standard stream clap reads the width from `COLUMNS`.
fn help(path: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(path)
        .arg("--help")
        .env("COLUMNS", "100")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "rag-eval {path:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The commands a help lists under `Commands:`, `help` left out: the first word of each line
/// indented by two spaces (a wrapped description's lines are indented further).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.strip_prefix("  ").filter(|l| !l.starts_with(' ')))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The Markdown of `docs/reference/cli.md`: the help of `path` and of every command under it,
/// depth first, in the order the helps list them.
fn help_reference(path: &mut Vec<String>, out: &mut String) {
    let text = help(path);
    let name = std::iter::once("rag-eval")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    out.push_str(&format!(
        "\n## `{name}`\n\n```text\n{}\n```\n",
        text.trim_end()
    ));
    for command in subcommands(&text) {
        path.push(command);
        help_reference(path, out);
        path.pop();
    }
}

/// `docs/reference/cli.md` is the `--help` of every command as the binary prints it; with
/// `RAG_EVAL_BLESS=1` the test writes the file instead of comparing it.
#[test]
fn the_cli_reference_is_the_help_of_every_command() {
    let mut generated = String::from(
        "# Command-line help\n\n\
         The `--help` of `rag-eval` and of every command under it, at 100 columns. \
         `tests/cli/cli.rs`\ngenerates it and fails when this file differs; \
         `RAG_EVAL_BLESS=1 cargo test --all-features\n--test cli the_cli_reference` rewrites \
         it. What each command does, its input files and its JSON\noutput are in \
         `docs/reference/commands.md`.\n",
    );
    help_reference(&mut Vec::new(), &mut generated);
    let listed = generated.matches("\n## `rag-eval").count();
    for command in [
        "chunk",
        "score",
        "dataset import",
        "dataset validate",
        "dataset reanchor",
        "dataset push",
        "dataset pull",
        "eval",
        "generate token",
        "generate chunk",
        "compare",
        "runs list",
        "runs show",
        "runs delete",
        "runs export",
        "runs pull",
        "runs import",
        "report",
        "gate",
        "serve",
    ] {
        assert!(
            generated.contains(&format!("\n## `rag-eval {command}`\n")),
            "the reference lacks `rag-eval {command}` ({listed} commands found)"
        );
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/reference/cli.md");
    if std::env::var_os("RAG_EVAL_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != generated {
        let diff = similar::TextDiff::from_lines(&committed, &generated);
        panic!(
            "docs/reference/cli.md differs from the binary's help (run with RAG_EVAL_BLESS=1 \
             to rewrite it):\n{}",
            diff.unified_diff()
                .context_radius(2)
                .header("committed", "generated")
        );
    }
}
