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
use rag_eval::chunk::PositionAwareChunkId;
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

/// Wall and CPU times of runs; CPU time is the thread's time on a core, which a busy machine
/// inflates far less than wall time (empty where the system does not report it).
#[derive(Default)]
struct Times {
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
}

impl Times {
    /// Adds `reps` runs of `f`, after one warm-up run.
    fn add<T>(&mut self, reps: usize, mut f: impl FnMut() -> T) {
        black_box(f());
        for _ in 0..reps {
            let (t, c) = (Instant::now(), thread_cpu());
            black_box(f());
            self.wall.push(t.elapsed());
            if let (Some(c0), Some(c1)) = (c, thread_cpu()) {
                self.cpu.push(c1.saturating_sub(c0));
            }
        }
    }

    fn medians(self) -> (Duration, Option<Duration>) {
        let cpu = (!self.cpu.is_empty()).then(|| median(self.cpu));
        (median(self.wall), cpu)
    }
}

/// The calling thread's CPU time so far (`CLOCK_THREAD_CPUTIME_ID`, what Python's
/// `time.thread_time` reads).
#[cfg(unix)]
fn thread_cpu() -> Option<Duration> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec for the duration of the call.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } == 0;
    ok.then(|| Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
}

#[cfg(not(unix))]
fn thread_cpu() -> Option<Duration> {
    None
}

/// Median wall time of `reps` runs of `f`, after one warm-up run.
fn time<T>(reps: usize, f: impl FnMut() -> T) -> Duration {
    let mut times = Times::default();
    times.add(reps, f);
    times.medians().0
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
    let mut ours = Times::default();
    let mut with_ids = Times::default();
    let mut ids = Times::default();
    let mut plain = Times::default();
    let (mut theirs, mut their_split) = (Times::default(), Times::default());
    let mut tool = String::new();
    for _ in 0..rounds {
        ours.add(reps, || chunker.chunk_corpus(&corpus));
        // Where ids are used (indexes, the harness, chunk-level paths), every one is read: the
        // chunking plus SHA-256 of every chunk.
        with_ids.add(reps, || {
            let chunks = chunker.chunk_corpus(&corpus);
            for c in &chunks {
                black_box(c.id.as_str());
            }
            chunks
        });
        ids.add(reps, || {
            all.iter()
                .map(|c| PositionAwareChunkId::new(c.doc_id(), c.start(), c.end(), &c.content))
                .collect::<Vec<_>>()
        });
        plain.add(reps, || {
            corpus
                .documents()
                .iter()
                .map(|d| Chunker::chunk(&chunker, d.content()).len())
                .sum::<usize>()
        });
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
        theirs.wall.extend(seconds("times_s"));
        theirs.cpu.extend(seconds("cpu_times_s"));
        their_split.wall.extend(seconds("split_text_times_s"));
        their_split.cpu.extend(seconds("split_text_cpu_times_s"));
        let their_chunks = report["chunks"].as_u64().expect("chunks");
        assert_eq!(
            their_chunks as usize, chunks,
            "both sides must produce the same chunks"
        );
        tool = report["tool"].as_str().unwrap_or("?").to_owned();
    }
    let runs = theirs.wall.len();
    let rows = [
        (
            "rag-eval  chunk_corpus (chunks with offsets and ids; ids computed on first read)",
            ours.medians(),
        ),
        (
            "rag-eval  chunk_corpus, then every id read",
            with_ids.medians(),
        ),
        (
            "rag-eval    PositionAwareChunkId::new alone (SHA-256 ids)",
            ids.medians(),
        ),
        ("rag-eval  Chunker::chunk (texts only)", plain.medians()),
        (
            "LangChain create_documents(add_start_index=True)",
            theirs.medians(),
        ),
        ("LangChain split_text (texts only)", their_split.medians()),
    ];
    let cpu = |c: Option<Duration>| c.map_or_else(|| "-".to_owned(), ms);
    println!("{:<82} {:>12} {:>12}", "", "wall", "CPU");
    for (label, (wall, c)) in &rows[..if peer { 6 } else { 4 }] {
        println!("{label:<82} {:>12} {:>12}", ms(*wall), cpu(*c));
    }
    println!(
        "{chunks} chunks; ours {:.0} MB/s (wall)",
        bytes as f64 / rows[0].1 .0.as_secs_f64() / 1e6
    );
    if !peer {
        return;
    }
    println!("LangChain: {tool}, {runs} runs");
    let ratio = |a: usize, b: usize, cpu: bool| -> String {
        let pick = |r: (Duration, Option<Duration>)| if cpu { r.1 } else { Some(r.0) };
        match (pick(rows[a].1), pick(rows[b].1)) {
            (Some(x), Some(y)) => format!("{:.0}x", x.as_secs_f64() / y.as_secs_f64()),
            _ => "-".to_owned(),
        }
    };
    for (what, cpu) in [("wall", false), ("CPU", true)] {
        println!(
            "speed-up ({what}): {} (chunks with offsets: chunk_corpus vs create_documents), \
             {} (the same with every id read), {} (texts only: Chunker::chunk vs split_text)",
            ratio(4, 0, cpu),
            ratio(4, 1, cpu),
            ratio(5, 3, cpu)
        );
    }
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
