//! `OnnxEmbedder` throughput against the same ONNX model driven from Python, and an end-to-end
//! evaluation of chunking-eval-general with it.
//!
//! `cargo bench --features onnx --bench onnx` after `. .ci/onnx.sh` (which exports
//! `ORT_DYLIB_PATH` and `RAG_EVAL_ONNX_MODEL_DIR` and makes the venv `.ci/.venv-onnx` with
//! onnxruntime and tokenizers). Without those variables it prints a notice and exits.
//!
//! 1. Throughput: 1,000-character chunks (consecutive windows of the chunking-eval-general
//!    corpora, or of a fixed text when the data is absent), embedded in batches of 32 on 2
//!    onnxruntime threads (`--threads`), against `benches/scripts/onnx_peer.py` (onnxruntime + tokenizers +
//!    NumPy, same batch size, threads, truncation and pooling) run as a subprocess in the same
//!    run. Full passes alternate between the sides so that both see the same machine load; the
//!    peer times its own passes and prints its median. Both report texts/s; the first two
//!    vectors of each side are compared. The Python side is skipped with a notice when
//!    `.ci/.venv-onnx` is missing.
//! 2. Evaluation: `Pipeline` (chunker → `OnnxEmbedder` → `InMemoryStore`) over the five corpora
//!    and 472 questions of `../shared/data/chunking-eval-general`, k = 5, Chroma-mode metrics,
//!    under a Tokio runtime, per chunker (`--chunker SPEC`, default two), with the wall time
//!    taken apart: loading, chunking, tokenisation, input tensors, inference (chunks and
//!    queries), pooling, embedding overhead, store add and search, scoring. The embedder's calls
//!    are recorded on the way (texts per call). With the `cache` feature the embedder sits
//!    behind a `CachedEmbedder` on a fresh SQLite file, and the evaluation is then run again
//!    from that cache (`--reps` times, making the embedder included; the model is loaded only if
//!    a text is missing from the cache): the warm rerun.
//! 3. Replay: the recorded calls embedded again by our side and by the Python peer (given the
//!    same calls, it forms the same batches: sorted by token length per call, cut at 32),
//!    alternating, `--replay-reps` passes each (default 3, 0 skips); each side times its
//!    stages, so our whole pass is set against onnxruntime's own inference time for the same
//!    batches, and its CPU time, which other processes on the cores hardly change. Skipped
//!    with a notice when the data is absent.
//!
//! Options after `--`: `--texts N` (default 320), `--reps N` (default 5), `--skip-eval`,
//! `--skip-throughput`, `--threads N` (onnxruntime intra-op threads on both sides, default 2),
//! `--spinning on|off` (intra-op spinning on both sides; default onnxruntime's, on),
//! `--chunker SPEC`, `--replay-reps N`, `--call-size N` (texts per embedder call in the
//! evaluation, instead of the embedder's preference; 64 was the size before there was one). Under `cargo test --benches` (no `--bench` flag) it
//! embeds a few texts once, untimed, as a smoke test.

use rag_eval::chunker::{parse_spec, PositionAwareChunker};
use rag_eval::corpus::Corpus;
use rag_eval::dataset::import::chroma_csv;
use rag_eval::embed::{cosine, Embedder, OnnxConfig, OnnxEmbedder, OnnxProfile};
use rag_eval::eval::TokenLevelEvaluation;
use rag_eval::metrics::{token_level_metrics, ChunkIndex, SpanMode};
use rag_eval::retrieve::Pipeline;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BATCH: usize = 32;
const CHUNK_CHARS: usize = 1_000;

struct Options {
    bench: bool,
    texts: usize,
    reps: usize,
    eval: bool,
    throughput: bool,
    threads: usize,
    spinning: Option<bool>,
    chunker: Option<String>,
    replay_reps: usize,
    call_size: Option<usize>,
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
    let text = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    Options {
        bench: args.iter().any(|a| a == "--bench"),
        texts: value("--texts", 320).max(1),
        reps: value("--reps", 5).max(1),
        eval: !args.iter().any(|a| a == "--skip-eval"),
        throughput: !args.iter().any(|a| a == "--skip-throughput"),
        threads: value("--threads", 2).max(1),
        spinning: text("--spinning").and_then(|v| match v.as_str() {
            "on" => Some(true),
            "off" => Some(false),
            _ => None,
        }),
        chunker: text("--chunker"),
        replay_reps: value("--replay-reps", 3),
        call_size: text("--call-size").and_then(|v| v.parse().ok()),
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
        opts: &Options,
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
            .args(["--threads", &opts.threads.to_string()])
            .args(["--max-len", &max_len.to_string()])
            .args(match opts.spinning {
                Some(true) => &["--spinning", "on"][..],
                Some(false) => &["--spinning", "off"][..],
                None => &[][..],
            })
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

    /// One timed pass on the Python side; returns its own timings: the whole pass, then
    /// tokenisation, input tensors, inference and pooling, then the pass's CPU time.
    fn stages(&mut self) -> Result<[f64; 6], String> {
        writeln!(self.stdin, "pass").map_err(|e| e.to_string())?;
        self.stdin.flush().map_err(|e| e.to_string())?;
        let v = self.read()?;
        let mut out = [0.0; 6];
        for (o, key) in out.iter_mut().zip([
            "pass_s",
            "tokenize_s",
            "tensors_s",
            "inference_s",
            "pool_s",
            "cpu_s",
        ]) {
            *o = v[key].as_f64().ok_or_else(|| format!("no {key} in {v}"))?;
        }
        Ok(out)
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
    let e = OnnxEmbedder::with_config(model_dir, config(opts)).expect("load the ONNX model");
    let tokens: Vec<usize> = texts.iter().map(|t| e.token_count(t).unwrap()).collect();
    let in_order: Vec<usize> = (0..texts.len()).collect();
    let mut by_length = in_order.clone();
    by_length.sort_by_key(|&i| std::cmp::Reverse(tokens[i]));
    println!(
        "throughput: {} texts of {CHUNK_CHARS} chars from {source}; {:.0} tokens on average after truncation at {}; batch {BATCH}, {} threads",
        texts.len(),
        tokens.iter().sum::<usize>() as f64 / tokens.len() as f64,
        e.max_len(),
        opts.threads
    );
    println!(
        "  token slots per pass incl. padding: ours (batches sorted by length) {}, python (input order) {}",
        padded_slots(&tokens, &by_length),
        padded_slots(&tokens, &in_order)
    );
    let ours_vectors = e.embed_blocking(&texts).expect("embed"); // warm-up
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), serde_json::to_string(&texts).unwrap()).expect("write texts");
    let mut peer = match Peer::start(root, model_dir, file.path(), e.max_len(), opts) {
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

/// An embedder that passes every call on to an [`OnnxEmbedder`] and keeps the texts of each
/// call, its wall time and the embedder's profile for it, documents and queries apart.
struct Recorder {
    inner: Arc<OnnxEmbedder>,
    /// Texts per call asked of batching wrappers, instead of the embedder's own preference.
    call_size: Option<usize>,
    log: Mutex<Log>,
}

#[derive(Default)]
struct Log {
    calls: Vec<Vec<String>>,
    documents: Part,
    queries: Part,
}

#[derive(Default, Clone, Copy)]
struct Part {
    wall: Duration,
    profile: OnnxProfile,
}

impl Recorder {
    fn note(&self, texts: &[String], query: bool, wall: Duration, before: OnnxProfile) {
        let profile = self.inner.profile().since(&before);
        let mut log = self.log.lock().unwrap();
        log.calls.push(texts.to_vec());
        let part = if query {
            &mut log.queries
        } else {
            &mut log.documents
        };
        part.wall += wall;
        part.profile += profile;
    }
}

#[async_trait::async_trait]
impl Embedder for Recorder {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn preferred_batch_size(&self) -> Option<usize> {
        self.call_size.or(self.inner.preferred_batch_size())
    }
    async fn embed(&self, texts: &[String]) -> rag_eval::Result<Vec<Vec<f32>>> {
        let (before, t) = (self.inner.profile(), Instant::now());
        let v = self.inner.embed(texts).await?;
        self.note(texts, false, t.elapsed(), before);
        Ok(v)
    }
    async fn embed_query(&self, query: &str) -> rag_eval::Result<Vec<f32>> {
        let (before, t) = (self.inner.profile(), Instant::now());
        let v = self.inner.embed_query(query).await?;
        self.note(&[query.to_owned()], true, t.elapsed(), before);
        Ok(v)
    }
    async fn embed_queries(&self, queries: &[String]) -> rag_eval::Result<Vec<Vec<f32>>> {
        let (before, t) = (self.inner.profile(), Instant::now());
        let v = self.inner.embed_queries(queries).await?;
        self.note(queries, true, t.elapsed(), before);
        Ok(v)
    }
}

fn config(opts: &Options) -> OnnxConfig {
    let mut c = OnnxConfig::new().threads(opts.threads).batch_size(BATCH);
    if let Some(on) = opts.spinning {
        c = c.intra_op_spinning(on);
    }
    c
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

/// The process's CPU time so far, user and system, all threads (onnxruntime's intra-op threads
/// included, and their spinning). Other processes on the same cores stretch a pass's wall time
/// but hardly its CPU time, so this compares the two sides' work on a busy machine.
fn cpu_time() -> f64 {
    #[cfg(unix)]
    {
        // SAFETY: `getrusage` only writes the struct it is given, which is plain data.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } == 0 {
            let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            return s(usage.ru_utime) + s(usage.ru_stime);
        }
    }
    f64::NAN
}

fn evaluation(root: &Path, model_dir: &Path, data: &Path, opts: &Options) {
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
    let specs = match &opts.chunker {
        Some(spec) => vec![spec.clone()],
        None => vec![
            "recursive:size=400,overlap=0".to_owned(),
            "recursive:size=250,overlap=0,length=tokens,separators=chroma".to_owned(),
        ],
    };
    for spec in specs {
        let chunker: Arc<dyn PositionAwareChunker> =
            Arc::from(parse_spec(&spec).expect("chunker spec"));
        let cache_dir = tempfile::tempdir().expect("temp dir");
        let cache_path = cache_dir.path().join("embeddings.sqlite");
        let start = Instant::now();
        let onnx = Arc::new(
            OnnxEmbedder::with_config(model_dir, config(opts)).expect("load the ONNX model"),
        );
        let loaded = start.elapsed();
        let initial = onnx.profile();
        let recorder = Arc::new(Recorder {
            inner: Arc::clone(&onnx),
            call_size: opts.call_size,
            log: Mutex::default(),
        });
        let embedder = cached(Arc::clone(&recorder) as Arc<dyn Embedder>, &cache_path);
        let chunking = Instant::now();
        let spans: Vec<_> = chunker
            .chunk_corpus(&corpus)
            .into_iter()
            .map(|c| c.span)
            .collect();
        let chunking = chunking.elapsed();
        let chunk_count = spans.len();
        let metrics =
            token_level_metrics(SpanMode::ChunkingEvaluation, Some(ChunkIndex::new(&spans)));
        let pipeline = Pipeline::from_arc(Arc::clone(&chunker), embedder);
        let eval = TokenLevelEvaluation::new(Arc::clone(&corpus), dataset.clone())
            .expect("evaluation")
            .with_mode(SpanMode::ChunkingEvaluation);
        let evaluating = Instant::now();
        let result = runtime
            .block_on(eval.run(&pipeline, 5, &metrics))
            .expect("run");
        let total = loaded + chunking + evaluating.elapsed();
        let pct = |name: &str| {
            let mean = result.scores.metrics.get(name).unwrap_or(f64::NAN) * 100.0;
            let std = result.scores.std.get(name).unwrap_or(f64::NAN) * 100.0;
            format!("{mean:.1}±{std:.1}")
        };
        let (calls, docs, mut queries) = {
            let log = recorder.log.lock().unwrap();
            (log.calls.clone(), log.documents, log.queries)
        };
        // Queries are embedded concurrently, so their calls' profiles overlap: take what the
        // whole run added beyond the (sequential) document calls instead.
        queries.profile = onnx.profile().since(&initial).since(&docs.profile);
        let t = &result.timings;
        let index = Duration::from_secs_f64(t.index_ms / 1e3);
        let retrieve = Duration::from_secs_f64(t.retrieve_ms / 1e3);
        println!("evaluation: {spec}");
        println!(
            "  {chunk_count} chunks, {} questions, k = 5, chroma mode; embedder {}, calls of up to {} texts, {} threads, spinning {}",
            result.scores.queries,
            pipeline.embedder().name(),
            pipeline.embedder().batch_size(),
            opts.threads,
            opts.spinning.map_or("default".to_owned(), |s| s.to_string())
        );
        println!(
            "  recall {} / precision {} / precisionΩ {} / IoU {}",
            pct("span_recall@5"),
            pct("span_precision@5"),
            pct("precision_omega"),
            pct("span_iou@5")
        );
        println!("  documents: {}", docs.profile);
        println!("  queries:   {}", queries.profile);
        let both = |f: fn(&OnnxProfile) -> Duration| secs(f(&docs.profile) + f(&queries.profile));
        let other = |p: &Part| secs(p.wall.saturating_sub(p.profile.total()));
        println!("  | stage | s |");
        println!("  |---|---|");
        // The model is loaded by the first call that needs it: that call's `load` stage.
        println!(
            "  | load the model | {:.2} |",
            secs(loaded + docs.profile.load + queries.profile.load)
        );
        println!(
            "  | chunking (timed apart; inside index too) | {:.2} |",
            secs(chunking)
        );
        println!("  | tokenisation | {:.2} |", both(|p| p.tokenize));
        println!("  | input tensors | {:.3} |", both(|p| p.tensors));
        println!(
            "  | inference: chunks ({} texts, {} batches) | {:.2} |",
            docs.profile.texts,
            docs.profile.batches,
            secs(docs.profile.inference)
        );
        println!(
            "  | inference: queries ({} texts, {} batches) | {:.2} |",
            queries.profile.texts,
            queries.profile.batches,
            secs(queries.profile.inference)
        );
        println!("  | pooling | {:.3} |", both(|p| p.pool));
        println!(
            "  | chunk embedding outside the model (cache, copies) | {:.2} |",
            other(&docs)
        );
        println!(
            "  | store: add (index − chunking − chunk embedding) | {:.2} |",
            secs(index.saturating_sub(chunking + docs.wall))
        );
        println!(
            "  | retrieval beyond query tokenisation, inference and pooling (search, blocking pool) | {:.2} |",
            secs(retrieve.saturating_sub(queries.profile.total()))
        );
        println!("  | scoring | {:.3} |", t.score_ms / 1e3);
        println!("  | total | {:.2} |", secs(total));
        warm_rerun(
            model_dir,
            &cache_path,
            &chunker,
            &corpus,
            &dataset,
            &runtime,
            opts,
        );
        replay(root, model_dir, &calls, &onnx, opts);
    }
}

/// `embedder` behind a cache at `path` when the `cache` feature is on.
fn cached(embedder: Arc<dyn Embedder>, path: &Path) -> Arc<dyn Embedder> {
    #[cfg(feature = "cache")]
    {
        use rag_eval::cache::{Cache, CacheMode, CachedEmbedder};
        let cache = Cache::open(path.to_str().unwrap(), CacheMode::ReadWrite).expect("cache");
        Arc::new(CachedEmbedder::new(embedder, Arc::new(cache)))
    }
    #[cfg(not(feature = "cache"))]
    {
        let _ = path;
        embedder
    }
}

/// The same evaluation again from the cache the first run filled: a fresh process would load
/// the model, open the cache, chunk, look every text up, search and score.
fn warm_rerun(
    model_dir: &Path,
    cache_path: &Path,
    chunker: &Arc<dyn PositionAwareChunker>,
    corpus: &Arc<Corpus>,
    dataset: &rag_eval::dataset::TokenDataset,
    runtime: &tokio::runtime::Runtime,
    opts: &Options,
) {
    #[cfg(feature = "cache")]
    {
        use rag_eval::cache::{Cache, CacheMode, CachedEmbedder};
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..opts.reps {
            let start = Instant::now();
            let onnx =
                OnnxEmbedder::with_config(model_dir, config(opts)).expect("load the ONNX model");
            let loaded = start.elapsed();
            let cache = Arc::new(
                Cache::open(cache_path.to_str().unwrap(), CacheMode::ReadWrite).expect("cache"),
            );
            let embedder = Arc::new(CachedEmbedder::new(onnx, Arc::clone(&cache)));
            let spans: Vec<_> = chunker
                .chunk_corpus(corpus)
                .into_iter()
                .map(|c| c.span)
                .collect();
            let metrics =
                token_level_metrics(SpanMode::ChunkingEvaluation, Some(ChunkIndex::new(&spans)));
            let pipeline = Pipeline::from_arc(Arc::clone(chunker), embedder.clone());
            let eval = TokenLevelEvaluation::new(Arc::clone(corpus), dataset.clone())
                .expect("evaluation")
                .with_mode(SpanMode::ChunkingEvaluation);
            let result = runtime
                .block_on(eval.run(&pipeline, 5, &metrics))
                .expect("run");
            times.push(start.elapsed().as_secs_f64());
            let profile = embedder.inner().profile();
            last = Some((
                loaded + profile.load,
                profile.sessions,
                result.timings,
                embedder.stats(),
            ));
        }
        if let Some((loaded, sessions, t, stats)) = last {
            println!(
                "  warm rerun from the cache: median {:.2} s (runs: {}); last run: make the embedder and load the model {:.2} s ({sessions} sessions), index {:.2} s, retrieve {:.2} s, score {:.3} s; {stats}",
                median(times.clone()),
                fmt_times(&times),
                secs(loaded),
                t.index_ms / 1e3,
                t.retrieve_ms / 1e3,
                t.score_ms / 1e3
            );
        }
    }
    #[cfg(not(feature = "cache"))]
    {
        let _ = (
            model_dir, cache_path, chunker, corpus, dataset, runtime, opts,
        );
        println!("  warm rerun: skipped, build with --features onnx,cache");
    }
}

/// The evaluation's embedder calls again, on our side and on the Python peer's in turn, with
/// each side's time split by stage.
fn replay(
    root: &Path,
    model_dir: &Path,
    calls: &[Vec<String>],
    onnx: &OnnxEmbedder,
    opts: &Options,
) {
    if opts.replay_reps == 0 {
        return;
    }
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(
        file.path(),
        serde_json::json!({ "calls": calls }).to_string(),
    )
    .expect("write calls");
    let mut peer = match Peer::start(root, model_dir, file.path(), onnx.max_len(), opts) {
        Ok(p) => Some(p),
        Err(err) => {
            println!("  replay: python skipped, {err}");
            None
        }
    };
    let mut ours: Vec<[f64; 6]> = Vec::new();
    let mut theirs: Vec<[f64; 6]> = Vec::new();
    for _ in 0..opts.replay_reps {
        let before = onnx.profile();
        let cpu = cpu_time();
        let t = Instant::now();
        for call in calls {
            std::hint::black_box(onnx.embed_blocking(call).expect("embed"));
        }
        let wall = secs(t.elapsed());
        let cpu = cpu_time() - cpu;
        let p = onnx.profile().since(&before);
        ours.push([
            wall,
            secs(p.tokenize),
            secs(p.tensors),
            secs(p.inference),
            secs(p.pool),
            cpu,
        ]);
        if let Some(pr) = peer.as_mut() {
            match pr.stages() {
                Ok(s) => theirs.push(s),
                Err(err) => {
                    println!("  replay: python failed: {err}");
                    peer = None;
                }
            }
        }
    }
    if let Some(p) = peer {
        let _ = p.finish();
    }
    let column = |rows: &[[f64; 6]], i: usize| median(rows.iter().map(|r| r[i]).collect());
    println!(
        "  replay of the {} embedder calls, {} passes each side, alternating; medians in s:",
        calls.len(),
        opts.replay_reps
    );
    println!("  | stage | ours | python |");
    println!("  |---|---|---|");
    for (i, stage) in [
        "whole pass",
        "tokenisation",
        "input tensors",
        "inference",
        "pooling",
        "CPU time of the whole pass (all threads)",
    ]
    .iter()
    .enumerate()
    {
        let py = if theirs.is_empty() {
            "–".to_owned()
        } else {
            format!("{:.3}", column(&theirs, i))
        };
        println!("  | {stage} | {:.3} | {py} |", column(&ours, i));
    }
    println!("  ours per pass: {}", fmt_rows(&ours));
    if !theirs.is_empty() {
        println!("  python per pass: {}", fmt_rows(&theirs));
        let ratios: Vec<f64> = ours.iter().zip(&theirs).map(|(o, p)| o[0] / p[3]).collect();
        let infer: Vec<f64> = ours.iter().zip(&theirs).map(|(o, p)| o[3] / p[3]).collect();
        let cpu: Vec<f64> = ours.iter().zip(&theirs).map(|(o, p)| o[5] / p[5]).collect();
        println!(
            "  ours' whole pass / python's inference, pass by pass: median {:.3} ({}); ours' inference / python's: median {:.3}; ours' CPU time / python's: median {:.3} ({})",
            median(ratios.clone()),
            fmt_times(&ratios),
            median(infer),
            median(cpu.clone()),
            fmt_times(&cpu)
        );
    }
}

fn fmt_rows(rows: &[[f64; 6]]) -> String {
    rows.iter()
        .map(|r| format!("{:.2}/{:.2}", r[0], r[3]))
        .collect::<Vec<_>>()
        .join(", ")
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
        evaluation(&root, &model_dir, &data, &opts);
    }
}
