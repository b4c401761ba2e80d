//! `OnnxEmbedder` throughput against the same ONNX model driven from Python, and an end-to-end
//! evaluation of chunking-eval-general with it.
//!
//! `cargo bench --features onnx --bench onnx` after `. .ci/onnx.sh` (which exports
//! `ORT_DYLIB_PATH` and `RAG_EVAL_ONNX_MODEL_DIR` and makes the venv `.ci/.venv-onnx` with
//! onnxruntime and tokenizers). Without those variables it prints a notice and exits.
//!
//! 1. Throughput: 1,000-character chunks (consecutive windows of the chunking-eval-general
//!    corpora, or of a fixed text when the data is absent), embedded in batches of 32 on 2
//!    onnxruntime threads, against `benches/scripts/onnx_peer.py` (onnxruntime + tokenizers +
//!    NumPy, same batch size, threads, truncation and pooling) run as a subprocess in the same
//!    run. Full passes alternate between the sides so that both see the same machine load; the
//!    peer times its own passes and prints its median. Both report texts/s; the first two
//!    vectors of each side are compared. The Python side is skipped with a notice when
//!    `.ci/.venv-onnx` is missing.
//! 2. Evaluation: `Pipeline` (chunker → `OnnxEmbedder` → `InMemoryStore`) over the five corpora
//!    and 472 questions of `../shared/data/chunking-eval-general`, k = 5, Chroma-mode metrics,
//!    under a Tokio runtime; one run per chunker, with its wall time split into indexing,
//!    retrieval and scoring. Skipped with a notice when the data is absent.
//!
//! Options after `--`: `--texts N` (default 320), `--reps N` (default 5), `--skip-eval`,
//! `--skip-throughput`. Under `cargo test --benches` (no `--bench` flag) it embeds a few texts
//! once, untimed, as a smoke test.

use rag_eval::chunker::{parse_spec, PositionAwareChunker, RecursiveCharacterChunker};
use rag_eval::corpus::Corpus;
use rag_eval::dataset::import::chroma_csv;
use rag_eval::embed::{cosine, Embedder, OnnxConfig, OnnxEmbedder};
use rag_eval::eval::TokenLevelEvaluation;
use rag_eval::metrics::{token_level_metrics, ChunkIndex, SpanMode};
use rag_eval::retrieve::Pipeline;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

const THREADS: usize = 2;
const BATCH: usize = 32;
const CHUNK_CHARS: usize = 1_000;

struct Options {
    bench: bool,
    texts: usize,
    reps: usize,
    eval: bool,
    throughput: bool,
}

fn options() -> Options {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str, default: usize| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    Options {
        bench: args.iter().any(|a| a == "--bench"),
        texts: value("--texts", 320).max(1),
        reps: value("--reps", 5).max(1),
        eval: !args.iter().any(|a| a == "--skip-eval"),
        throughput: !args.iter().any(|a| a == "--skip-throughput"),
    }
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// `count` texts of exactly `CHUNK_CHARS` characters: consecutive windows of the corpora, or
/// of a fixed paragraph repeated when the data is absent.
fn chunks(data: &Path, count: usize) -> (Vec<String>, &'static str) {
    let corpora = data.join("corpora");
    let mut text = String::new();
    let mut source = "chunking-eval-general corpora";
    if let Ok(corpus) = Corpus::from_folder(corpora.to_str().unwrap_or_default(), None) {
        for doc in corpus.documents() {
            text.push_str(doc.content());
            text.push('\n');
        }
    }
    if text.is_empty() {
        source = "a fixed paragraph (chunking-eval-general is absent)";
        text = "Retrieval-augmented generation answers a question from passages that a \
                retriever found in a corpus; how the corpus was cut into chunks decides what \
                the retriever can find, and how much irrelevant text comes along with it. "
            .repeat(1 + count * CHUNK_CHARS / 200);
    }
    let chars: Vec<char> = text.chars().collect();
    let texts = chars
        .chunks_exact(CHUNK_CHARS)
        .cycle()
        .take(count)
        .map(|c| c.iter().collect())
        .collect();
    (texts, source)
}

/// Token slots a pass feeds the model (batch size × longest text of the batch, summed), for
/// batches taken in `order`.
fn padded_slots(tokens: &[usize], order: &[usize]) -> usize {
    order
        .chunks(BATCH)
        .map(|b| b.len() * b.iter().map(|&i| tokens[i]).max().unwrap_or(0))
        .sum()
}

/// The Python peer, loaded and warmed up, waiting for `pass` lines.
struct Peer {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    ready: serde_json::Value,
}

impl Peer {
    fn start(
        root: &Path,
        model_dir: &Path,
        texts_file: &Path,
        max_len: usize,
    ) -> Result<Peer, String> {
        let python = root.join(".ci/.venv-onnx/bin/python");
        if !python.exists() {
            return Err(format!(
                "{} is missing (run `. .ci/onnx.sh`)",
                python.display()
            ));
        }
        let mut child = Command::new(&python)
            .arg(root.join("benches/scripts/onnx_peer.py"))
            .arg("--model-dir")
            .arg(model_dir)
            .arg("--texts")
            .arg(texts_file)
            .args(["--batch", &BATCH.to_string()])
            .args(["--threads", &THREADS.to_string()])
            .args(["--max-len", &max_len.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", python.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut peer = Peer {
            child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
            ready: serde_json::Value::Null,
        };
        peer.ready = peer.read()?;
        Ok(peer)
    }

    fn read(&mut self) -> Result<serde_json::Value, String> {
        let line = self
            .stdout
            .next()
            .ok_or("the peer exited")?
            .map_err(|e| e.to_string())?;
        serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))
    }

    /// One timed pass on the Python side; returns its own timing.
    fn pass(&mut self) -> Result<f64, String> {
        writeln!(self.stdin, "pass").map_err(|e| e.to_string())?;
        self.stdin.flush().map_err(|e| e.to_string())?;
        self.read()?["pass_s"]
            .as_f64()
            .ok_or_else(|| "no pass_s".to_owned())
    }

    /// Closes stdin and returns the peer's own median of its passes.
    fn finish(self) -> Result<f64, String> {
        let Peer {
            mut child,
            stdin,
            mut stdout,
            ..
        } = self;
        drop(stdin);
        let line = stdout
            .next()
            .ok_or("the peer exited")?
            .map_err(|e| e.to_string())?;
        let _ = child.wait();
        let summary: serde_json::Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
        summary["median_s"]
            .as_f64()
            .ok_or_else(|| "no median_s".to_owned())
    }
}

fn throughput(root: &Path, model_dir: &Path, data: &Path, opts: &Options) {
    let (texts, source) = chunks(data, opts.texts);
    let e = OnnxEmbedder::with_config(
        model_dir,
        OnnxConfig::new().threads(THREADS).batch_size(BATCH),
    )
    .expect("load the ONNX model");
    let tokens: Vec<usize> = texts.iter().map(|t| e.token_count(t).unwrap()).collect();
    let in_order: Vec<usize> = (0..texts.len()).collect();
    let mut by_length = in_order.clone();
    by_length.sort_by_key(|&i| std::cmp::Reverse(tokens[i]));
    println!(
        "throughput: {} texts of {CHUNK_CHARS} chars from {source}; {:.0} tokens on average after truncation at {}; batch {BATCH}, {THREADS} threads",
        texts.len(),
        tokens.iter().sum::<usize>() as f64 / tokens.len() as f64,
        e.max_len()
    );
    println!(
        "  token slots per pass incl. padding: ours (batches sorted by length) {}, python (input order) {}",
        padded_slots(&tokens, &by_length),
        padded_slots(&tokens, &in_order)
    );
    let ours_vectors = e.embed_blocking(&texts).expect("embed"); // warm-up
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), serde_json::to_string(&texts).unwrap()).expect("write texts");
    let mut peer = match Peer::start(root, model_dir, file.path(), e.max_len()) {
        Ok(p) => Some(p),
        Err(err) => {
            println!("  python: skipped, {err}");
            None
        }
    };
    // Passes alternate between the sides, so that both see the same machine load.
    let mut ours_times = Vec::new();
    let mut peer_times = Vec::new();
    for _ in 0..opts.reps {
        let t = Instant::now();
        std::hint::black_box(e.embed_blocking(&texts).expect("embed"));
        ours_times.push(t.elapsed().as_secs_f64());
        if let Some(p) = peer.as_mut() {
            match p.pass() {
                Ok(s) => peer_times.push(s),
                Err(err) => {
                    println!("  python: failed: {err}");
                    peer = None;
                }
            }
        }
    }
    let ours = median(ours_times.clone());
    println!(
        "  ours:   median {ours:.3} s per pass = {:.1} texts/s  (passes: {})",
        texts.len() as f64 / ours,
        fmt_times(&ours_times)
    );
    let Some(peer) = peer else { return };
    let first = peer.ready["first_vectors"].clone();
    let version = peer.ready["onnxruntime"].as_str().unwrap_or("?").to_owned();
    let theirs = match peer.finish() {
        Ok(m) => m,
        Err(err) => {
            println!("  python: failed: {err}");
            return;
        }
    };
    println!(
        "  python: median {theirs:.3} s per pass = {:.1} texts/s  (passes: {}; onnxruntime {version})",
        texts.len() as f64 / theirs,
        fmt_times(&peer_times)
    );
    println!("  ours / python speed: {:.2}×", theirs / ours);
    for (i, v) in first.as_array().into_iter().flatten().enumerate() {
        let theirs: Vec<f32> = v
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_f64())
                    .map(|x| x as f32)
                    .collect()
            })
            .unwrap_or_default();
        println!(
            "  vector {i}: cosine(ours, python) = {:.7}",
            cosine(&ours_vectors[i], &theirs)
        );
    }
}

fn fmt_times(times: &[f64]) -> String {
    times
        .iter()
        .map(|t| format!("{t:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn evaluation(model_dir: &Path, data: &Path) {
    let corpus = match Corpus::from_folder(data.join("corpora").to_str().unwrap_or_default(), None)
    {
        Ok(c) => Arc::new(c),
        Err(e) => {
            println!("evaluation: skipped, {}: {e}", data.display());
            return;
        }
    };
    let questions = data.join("questions_df.csv");
    let dataset = chroma_csv(questions.to_str().unwrap(), &corpus).expect("questions");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let chunkers: Vec<(String, Arc<dyn PositionAwareChunker>)> = vec![
        (
            "RecursiveCharacterChunker::new(400, 0)".into(),
            Arc::new(RecursiveCharacterChunker::new(400, 0)),
        ),
        (
            "recursive:size=250,overlap=0,length=tokens,separators=chroma (published row: 78.5±39.5 / 5.4±4.9 / 26.7±18.3 / 5.4±4.9)".into(),
            Arc::from(
                parse_spec("recursive:size=250,overlap=0,length=tokens,separators=chroma")
                    .expect("spec"),
            ),
        ),
    ];
    for (label, chunker) in chunkers {
        let start = Instant::now();
        let embedder = OnnxEmbedder::from_dir(model_dir).expect("load the ONNX model");
        let loaded = start.elapsed().as_secs_f64();
        let spans: Vec<_> = chunker
            .chunk_corpus(&corpus)
            .into_iter()
            .map(|c| c.span)
            .collect();
        let chunk_count = spans.len();
        let metrics =
            token_level_metrics(SpanMode::ChunkingEvaluation, Some(ChunkIndex::new(&spans)));
        let pipeline = Pipeline::from_arc(Arc::clone(&chunker), Arc::new(embedder));
        let eval = TokenLevelEvaluation::new(Arc::clone(&corpus), dataset.clone())
            .expect("evaluation")
            .with_mode(SpanMode::ChunkingEvaluation);
        let result = runtime
            .block_on(eval.run(&pipeline, 5, &metrics))
            .expect("run");
        let total = start.elapsed().as_secs_f64();
        let pct = |name: &str| {
            let mean = result.scores.metrics.get(name).unwrap_or(f64::NAN) * 100.0;
            let std = result.scores.std.get(name).unwrap_or(f64::NAN) * 100.0;
            format!("{mean:.1}±{std:.1}")
        };
        println!("evaluation: {label}");
        println!(
            "  {chunk_count} chunks, {} questions, k = 5, chroma mode; embedder {}",
            result.scores.queries,
            pipeline.embedder().name()
        );
        println!(
            "  total {total:.1} s = load {loaded:.1} s + index {:.1} s + retrieve {:.1} s + score {:.3} s",
            result.timings.index_ms / 1e3,
            result.timings.retrieve_ms / 1e3,
            result.timings.score_ms / 1e3
        );
        println!(
            "  recall {} / precision {} / precisionΩ {} / IoU {}",
            pct("span_recall@5"),
            pct("span_precision@5"),
            pct("precision_omega"),
            pct("span_iou@5")
        );
    }
}

fn main() {
    let opts = options();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let data = root.join("../shared/data/chunking-eval-general");
    let (Some(_), Some(model_dir)) = (
        std::env::var_os("ORT_DYLIB_PATH"),
        std::env::var_os("RAG_EVAL_ONNX_MODEL_DIR"),
    ) else {
        println!(
            "onnx: skipped, ORT_DYLIB_PATH and RAG_EVAL_ONNX_MODEL_DIR must be set (`. .ci/onnx.sh`)"
        );
        return;
    };
    let model_dir = PathBuf::from(model_dir);
    if !opts.bench {
        let e = OnnxEmbedder::from_dir(&model_dir).expect("load the ONNX model");
        let v = e
            .embed_blocking(&["a smoke test", "", "ünïcödé"])
            .expect("embed");
        assert!(v.iter().all(|v| v.len() == e.dimension()));
        println!("onnx: smoke run (pass --bench to measure): {} ok", e.name());
        return;
    }
    if opts.throughput {
        throughput(&root, &model_dir, &data, &opts);
    }
    if opts.eval {
        evaluation(&model_dir, &data);
    }
}
