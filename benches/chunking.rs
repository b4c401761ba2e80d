//! Chunking speed: `RecursiveCharacterChunker` 400/0 by characters over the five corpora of
//! chunking-eval-general (1.45 MB) against LangChain's `RecursiveCharacterTextSplitter` with
//! `add_start_index=True`, both measured in the same run.
//!
//! Then `MarkdownChunker` on large synthetic inputs (prose, a one-line data URI, a line without
//! spaces) against `text-splitter`'s `MarkdownSplitter` handed the whole text at once, which is
//! what `MarkdownChunker` did before it split in windows (`-- --markdown-only` runs just this,
//! `-- --recursive-only` everything else).
//!
//! `cargo bench --bench chunking` (optional: `-- --reps N --rounds R`: R rounds, default 5, of
//! N runs of ours, default 31, each followed by 3 of LangChain's). The Python side runs
//! `benches/scripts/langchain_chunking.py` with `benches/scripts/.venv`, and is skipped with a
//! notice when that venv is missing. Under `cargo test --benches` it chunks once, unmeasured,
//! as a smoke test.

use camino::Utf8PathBuf;
use rag_eval::chunk::PaChunkId;
use rag_eval::chunker::{Chunker, PositionAwareChunker, RecursiveCharacterChunker};
use rag_eval::corpus::Corpus;
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const SIZE: usize = 400;
const OVERLAP: usize = 0;

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// Wall times of `reps` runs of `f`, after one warm-up run.
fn samples<T>(reps: usize, mut f: impl FnMut() -> T) -> Vec<Duration> {
    black_box(f());
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .collect()
}

/// Median wall time of `reps` runs of `f`, after one warm-up run.
fn time<T>(reps: usize, f: impl FnMut() -> T) -> Duration {
    median(samples(reps, f))
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(31usize)
        .max(1);

    if args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--recursive-only") {
        markdown(reps.min(3));
        if args.iter().any(|a| a == "--markdown-only") {
            return;
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpora = root.join("../shared/data/chunking-eval-general/corpora");
    if !corpora.is_dir() {
        println!(
            "skipping the chunking benchmark: {} is absent",
            corpora.display()
        );
        return;
    }
    let corpora = Utf8PathBuf::from_path_buf(corpora).expect("UTF-8 path");
    let corpus = Corpus::from_folder(&corpora, None).expect("corpora load");
    let bytes: usize = corpus.documents().iter().map(|d| d.content().len()).sum();
    let chunker = RecursiveCharacterChunker::new(SIZE, OVERLAP);
    if !args.iter().any(|a| a == "--bench") {
        let chunks = chunker.chunk_corpus(&corpus);
        let plain: usize = corpus
            .documents()
            .iter()
            .map(|d| Chunker::chunk(&chunker, d.content()).len())
            .sum();
        assert_eq!(chunks.len(), plain);
        println!(
            "chunking smoke run: {} chunks; use `cargo bench` to measure",
            chunks.len()
        );
        return;
    }
    let rounds = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(5usize)
        .max(1);
    let python = root.join("benches/scripts/.venv/bin/python");
    let peer = python.exists();
    if !peer {
        println!(
            "skipping the LangChain side: {} is missing (run benches/scripts/setup.sh)",
            python.display()
        );
    }
    // The machine is shared: ours and the peer take turns, round after round, so that both
    // see the same load; the figures are medians over every run of every round.
    let py_reps = 3usize;
    println!(
        "{} over {} documents, {} chars ({bytes} bytes); {rounds} rounds, each {reps} runs of ours \
         then {py_reps} of LangChain's; medians over all runs",
        PositionAwareChunker::name(&chunker),
        corpus.len(),
        corpus.char_len(),
    );

    let chunks = chunker.chunk_corpus(&corpus).len();
    let all = chunker.chunk_corpus(&corpus);
    let (mut ours, mut with_ids, mut ids, mut plain) = (vec![], vec![], vec![], vec![]);
    let (mut theirs, mut their_split) = (vec![], vec![]);
    let mut tool = String::new();
    for _ in 0..rounds {
        ours.extend(samples(reps, || chunker.chunk_corpus(&corpus)));
        // Where ids are used (indexes, the harness, chunk-level paths), every one is read: the
        // chunking plus SHA-256 of every chunk.
        with_ids.extend(samples(reps, || {
            let chunks = chunker.chunk_corpus(&corpus);
            for c in &chunks {
                black_box(c.id.as_str());
            }
            chunks
        }));
        ids.extend(samples(reps, || {
            all.iter()
                .map(|c| PaChunkId::new(c.doc_id(), c.start(), c.end(), &c.content))
                .collect::<Vec<_>>()
        }));
        plain.extend(samples(reps, || {
            corpus
                .documents()
                .iter()
                .map(|d| Chunker::chunk(&chunker, d.content()).len())
                .sum::<usize>()
        }));
        if !peer {
            continue;
        }
        let out = Command::new(&python)
            .arg(root.join("benches/scripts/langchain_chunking.py"))
            .arg(corpora.as_str())
            .args([
                "--size",
                &SIZE.to_string(),
                "--overlap",
                &OVERLAP.to_string(),
            ])
            .args(["--reps", &py_reps.to_string()])
            .output()
            .expect("run the LangChain benchmark script");
        if !out.status.success() {
            println!(
                "the LangChain side failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("the script prints one JSON object");
        let seconds = |key: &str| -> Vec<Duration> {
            report[key]
                .as_array()
                .unwrap_or_else(|| panic!("{key}"))
                .iter()
                .map(|t| Duration::from_secs_f64(t.as_f64().expect("seconds")))
                .collect()
        };
        theirs.extend(seconds("times_s"));
        their_split.extend(seconds("split_text_times_s"));
        let their_chunks = report["chunks"].as_u64().expect("chunks");
        assert_eq!(
            their_chunks as usize, chunks,
            "both sides must produce the same chunks"
        );
        tool = report["tool"].as_str().unwrap_or("?").to_owned();
    }
    let (ours, with_ids, ids, plain) = (median(ours), median(with_ids), median(ids), median(plain));
    println!(
        "rag-eval  chunk_corpus (chunks with offsets and ids): {:>12}  ({chunks} chunks, {:.0} MB/s; ids computed on first read)",
        ms(ours),
        bytes as f64 / ours.as_secs_f64() / 1e6
    );
    println!(
        "rag-eval  chunk_corpus, then every id read:            {:>12}",
        ms(with_ids)
    );
    println!(
        "rag-eval    PaChunkId::new alone (SHA-256 ids):        {:>12}",
        ms(ids)
    );
    println!(
        "rag-eval  Chunker::chunk (texts only):                {:>12}",
        ms(plain)
    );
    if !peer {
        return;
    }
    let runs = theirs.len();
    let (theirs, their_split) = (median(theirs), median(their_split));
    println!(
        "LangChain create_documents(add_start_index=True):     {:>12}  ({chunks} chunks, median of {runs}, {tool})",
        ms(theirs),
    );
    println!(
        "LangChain split_text (texts only):                    {:>12}",
        ms(their_split)
    );
    println!(
        "speed-up: {:.0}x (chunks with offsets: chunk_corpus vs create_documents), \
         {:.0}x (the same with every id read), {:.0}x (texts only: Chunker::chunk vs split_text)",
        theirs.as_secs_f64() / ours.as_secs_f64(),
        theirs.as_secs_f64() / with_ids.as_secs_f64(),
        their_split.as_secs_f64() / plain.as_secs_f64()
    );
}

/// `MarkdownChunker` against the unwindowed splitter on inputs where the latter's work per chunk
/// grows with the text left.
fn markdown(reps: usize) {
    use rag_eval::chunker::MarkdownChunker;
    use text_splitter::{ChunkConfig, MarkdownSplitter};
    let para = "Some words in a paragraph, with a [link](http://example.com) and `code`.\n\n";
    let prose = |mb: usize| format!("# Title\n\n{}", para.repeat(mb * 1_000_000 / para.len()));
    let uri = |mb: usize| {
        format!(
            "![x](data:image/png;base64,{})",
            "QUJD".repeat(mb * 1_000_000 / 4)
        )
    };
    let cases: Vec<(String, String, usize, bool)> = vec![
        ("prose 5 MB".into(), prose(5), 800, true),
        ("prose 20 MB".into(), prose(20), 800, false),
        ("prose 50 MB".into(), prose(50), 800, false),
        ("data URI 1 MB, one line".into(), uri(1), 800, true),
        ("data URI 4 MB, one line".into(), uri(4), 800, false),
        (
            "50k chars without spaces, size=1".into(),
            "x".repeat(50_000),
            1,
            true,
        ),
        (
            "200k chars without spaces, size=1".into(),
            "x".repeat(200_000),
            1,
            false,
        ),
    ];
    println!("markdown:size=N,overlap=0, median of {reps}");
    for (name, text, size, unwindowed) in cases {
        let doc = rag_eval::corpus::Document::new("d.md", text.as_str());
        let chunker = MarkdownChunker::new(size);
        let n = chunker.chunk_with_positions(&doc).len();
        let ours = time(reps, || chunker.chunk_with_positions(&doc).len());
        let before = if unwindowed {
            let whole = MarkdownSplitter::new(ChunkConfig::new(size));
            let t = time(1, || whole.chunk_indices(&text).count());
            format!("{:>12}", ms(t))
        } else {
            "(not run)".into()
        };
        println!(
            "{name:<36} windowed {:>12} ({n} chunks)   whole text at once {before}",
            ms(ours)
        );
    }
}
