//! Exact top-10 cosine search, 10,000 queries over 100,000 vectors of 384 dimensions:
//! `InMemoryStore::search_many` against a NumPy brute force (benches/scripts/numpy_search.py),
//! measured in one run with the same number of threads on both sides.
//!
//! `cargo bench --features matrix --bench vector_search`. The vectors and queries are seeded random
//! unit vectors, written to temporary raw float32 files that the Python side reads. Our side is
//! timed from the queries as given to the ranked rows (the stored vectors are normalised when
//! added, as NumPy's are before its clock starts). The Python side loads once and then runs one
//! pass per request, so passes alternate between the sides and meet the same load; each side
//! reports the median of its passes, and the median of the pass-by-pass ratios is printed too. The
//! ranked rows of every 100th query are compared (identical, or differing only where two scores are
//! within 1e-5 of each other). The Python side runs when benches/scripts/.venv exists
//! (benches/scripts/setup.sh creates it) and is skipped with a notice otherwise.
//!
//! `cargo bench --features matrix --bench vector_search -- --ours-only` measures our side alone
//! (for tuning); `-- --peer-coretype NAME` passes `--coretype NAME` to the Python side (its
//! default, `auto`, gives OpenBLAS its AVX-512 kernels wherever the CPU has them; `native` leaves
//! the choice to OpenBLAS and the environment).
//!
//! Under `cargo test --benches` (no `--bench` flag) it runs a small configuration once and
//! checks it against a sort-everything search, without timing and without Python.

use rag_eval::chunk::PositionAwareChunk;
use rag_eval::store::InMemoryStore;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const FULL: Config = Config {
    vectors: 100_000,
    queries: 10_000,
    dim: 384,
    k: 10,
};
const SMOKE: Config = Config {
    vectors: 3_000,
    queries: 300,
    dim: 384,
    k: 10,
};
/// Full passes per side and thread count.
const REPS: usize = 5;
/// Every `SAMPLE`-th query's ranking is compared between the sides.
const SAMPLE: usize = 100;
const NEAR_TIE: f32 = 1e-5;

#[derive(Clone, Copy)]
struct Config {
    vectors: usize,
    queries: usize,
    dim: usize,
    k: usize,
}

/// SplitMix64: seeded, portable, and enough for benchmark data.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// `count` vectors drawn uniformly from the unit sphere, row-major.
    fn unit_vectors(&mut self, count: usize, dim: usize) -> Vec<Vec<f32>> {
        (0..count)
            .map(|_| {
                let v: Vec<f64> = (0..dim).map(|_| self.normal()).collect();
                let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
                v.iter().map(|x| (x / norm) as f32).collect()
            })
            .collect()
    }
}

fn store_of(vectors: &[Vec<f32>], threads: usize) -> InMemoryStore {
    let chunks: Vec<PositionAwareChunk> = (0..vectors.len())
        .map(|i| PositionAwareChunk::new("synthetic.md", i * 8, i * 8 + 8, format!("{i:08}")))
        .collect();
    let store = InMemoryStore::new().with_threads(threads);
    store.insert(&chunks, vectors).expect("valid vectors");
    store
}

/// Whether two rankings agree: the same rows, except where both sides' scores at a position are
/// within [`NEAR_TIE`] (rounding can swap near-ties).
fn agree(ours: &[(usize, f32)], rows: &[usize], scores: &[f32]) -> bool {
    ours.len() == rows.len()
        && ours
            .iter()
            .zip(rows.iter().zip(scores))
            .all(|(&(row, score), (&r, &s))| row == r || (score - s).abs() <= NEAR_TIE)
}

/// Every cosine in f64, sorted, cut at k: the reference for the smoke run.
fn sort_everything(vectors: &[Vec<f32>], query: &[f32], k: usize) -> (Vec<usize>, Vec<f32>) {
    let mut all: Vec<(f64, usize)> = vectors
        .iter()
        .enumerate()
        .map(|(row, v)| {
            let dot: f64 = v.iter().zip(query).map(|(a, b)| f64::from(a * b)).sum();
            (dot, row)
        })
        .collect();
    all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    all.truncate(k);
    all.into_iter().map(|(s, row)| (row, s as f32)).unzip()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn write_f32(vectors: &[Vec<f32>]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
    let mut bytes = Vec::with_capacity(vectors.len() * vectors[0].len() * 4);
    for x in vectors.iter().flatten() {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    file.write_all(&bytes).expect("writing vectors");
    file.flush().expect("writing vectors");
    file
}

/// The Python side, loaded and waiting for one pass per request.
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

/// What the peer reports when its input closes.
struct PeerSummary {
    median: Duration,
    numpy: String,
    blas_core: String,
    sample: serde_json::Value,
}

impl Peer {
    fn start(
        python: &Path,
        script: &Path,
        files: (&Path, &Path),
        config: Config,
        threads: usize,
        coretype: &str,
    ) -> Result<Peer, String> {
        let mut child = Command::new(python)
            .arg(script)
            .arg(files.0)
            .arg(files.1)
            .args(["--dim", &config.dim.to_string()])
            .args(["--k", &config.k.to_string()])
            .args(["--threads", &threads.to_string()])
            .args(["--sample", &SAMPLE.to_string()])
            .args(["--coretype", coretype])
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("could not start {}: {e}", python.display()))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut peer = Peer {
            child,
            stdin,
            stdout,
        };
        let ready = peer.line()?;
        if ready["ready"] != serde_json::Value::Bool(true) {
            return Err(format!("unexpected first line {ready}"));
        }
        Ok(peer)
    }

    fn line(&mut self) -> Result<serde_json::Value, String> {
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| format!("reading the peer: {e}"))?;
        serde_json::from_str(&line).map_err(|e| format!("the peer printed {line:?}: {e}"))
    }

    /// One timed pass on the Python side.
    fn pass(&mut self) -> Result<Duration, String> {
        let stdin = self.stdin.as_mut().ok_or("the peer's input is closed")?;
        stdin
            .write_all(b"pass\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("writing to the peer: {e}"))?;
        let report = self.line()?;
        let secs = report["pass_s"].as_f64().ok_or("no pass_s")?;
        Ok(Duration::from_secs_f64(secs))
    }

    fn finish(mut self) -> Result<PeerSummary, String> {
        drop(self.stdin.take());
        let report = self.line()?;
        let status = self.child.wait().map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("the peer exited with {status}"));
        }
        Ok(PeerSummary {
            median: Duration::from_secs_f64(report["median_s"].as_f64().ok_or("no median_s")?),
            numpy: report["numpy"].as_str().unwrap_or("?").to_owned(),
            blas_core: report["blas_core"].as_str().unwrap_or("?").to_owned(),
            sample: report["sample"].clone(),
        })
    }
}

fn seconds(times: &[Duration]) -> String {
    times
        .iter()
        .map(|t| format!("{:.3}", t.as_secs_f64()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let config = if bench { FULL } else { SMOKE };
    let mut rng = Rng(0x5eed_0fba_5e00);
    let vectors = rng.unit_vectors(config.vectors, config.dim);
    let queries = rng.unit_vectors(config.queries, config.dim);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    if !bench {
        let store = store_of(&vectors, cores);
        let got = store
            .search_many_rows(&queries, config.k)
            .expect("search_many");
        let checked = (0..config.queries).step_by(7).count();
        for i in (0..config.queries).step_by(7) {
            let (rows, scores) = sort_everything(&vectors, &queries[i], config.k);
            assert!(
                agree(&got[i], &rows, &scores),
                "query {i}: ours {:?}, sorting everything {rows:?}",
                got[i]
            );
        }
        println!(
            "vector_search: smoke run (pass --bench to measure): {} queries over {} vectors, \
             {checked} rankings match sorting everything",
            config.queries, config.vectors
        );
        return;
    }

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join("benches/scripts/.venv/bin/python");
    let script = root.join("benches/scripts/numpy_search.py");
    let ours_only = std::env::args().any(|a| a == "--ours-only");
    let args: Vec<String> = std::env::args().collect();
    let coretype = args
        .iter()
        .position(|a| a == "--peer-coretype")
        .and_then(|i| args.get(i + 1))
        .map_or("auto", String::as_str);
    let files =
        (python.is_file() && !ours_only).then(|| (write_f32(&vectors), write_f32(&queries)));
    println!(
        "vector_search: exact top-{} cosine, {} queries over {} vectors of {} dimensions, {cores} cores",
        config.k, config.queries, config.vectors, config.dim
    );
    if files.is_none() && !ours_only {
        println!(
            "  python: skipped, benches/scripts/.venv is missing (run benches/scripts/setup.sh)"
        );
    }

    let mut thread_counts = vec![cores];
    if cores > 1 {
        thread_counts.push(1);
    }
    let mut table = Vec::new();
    for threads in thread_counts {
        let store = store_of(&vectors, threads);
        let mut peer = files.as_ref().and_then(|(x, q)| {
            Peer::start(
                &python,
                &script,
                (x.path(), q.path()),
                config,
                threads,
                coretype,
            )
            .map_err(|e| println!("  numpy, {threads} thread(s): failed to start: {e}"))
            .ok()
        });
        // Passes alternate, ours then the peer's, so that both sides meet the same load.
        let (mut ours, mut theirs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let mut results = Vec::new();
        for _ in 0..REPS {
            let started = Instant::now();
            results = store
                .search_many_rows(&queries, config.k)
                .expect("search_many");
            ours.push(started.elapsed());
            if let Some(p) = peer.as_mut() {
                match p.pass() {
                    Ok(t) => {
                        ratios.push(t.as_secs_f64() / ours[ours.len() - 1].as_secs_f64());
                        theirs.push(t);
                    }
                    Err(e) => {
                        println!("  numpy, {threads} thread(s): failed: {e}");
                        peer = None;
                    }
                }
            }
        }
        drop(store);
        let our_median = median(ours.clone());
        println!(
            "  ours,  {threads} thread(s): median {:.3} s of {REPS} ({})",
            our_median.as_secs_f64(),
            seconds(&ours)
        );
        let Some(peer) = peer else {
            continue;
        };
        let py = match peer.finish() {
            Ok(py) => py,
            Err(e) => {
                println!("  numpy, {threads} thread(s): failed: {e}");
                continue;
            }
        };
        let mut compared = 0;
        let mut identical = 0;
        for (i, entry) in py.sample.as_object().into_iter().flatten() {
            let i: usize = i.parse().expect("query index");
            let rows: Vec<usize> = serde_json::from_value(entry["rows"].clone()).expect("rows");
            let scores: Vec<f32> = serde_json::from_value(entry["scores"].clone()).expect("scores");
            compared += 1;
            identical += usize::from(results[i].iter().map(|h| h.0).eq(rows.iter().copied()));
            assert!(
                agree(&results[i], &rows, &scores),
                "query {i}: ours {:?}, numpy {rows:?} {scores:?}",
                results[i]
            );
        }
        println!(
            "  numpy, {threads} thread(s): median {:.3} s of {REPS} ({}; numpy {}, OpenBLAS {} kernels)",
            py.median.as_secs_f64(),
            seconds(&theirs),
            py.numpy,
            py.blas_core
        );
        ratios.sort_by(f64::total_cmp);
        let ratio = py.median.as_secs_f64() / our_median.as_secs_f64();
        let pair_ratio = ratios[ratios.len() / 2];
        println!(
            "  {threads} thread(s): numpy / ours = {ratio:.2}× (medians), {pair_ratio:.2}× (median of \
             pass-by-pass ratios); top-{} rows of {compared} sampled queries agree ({identical} \
             identical, {} differing only in near-ties)",
            config.k,
            compared - identical
        );
        table.push((threads, our_median, py.median, ratio, pair_ratio));
    }
    if !table.is_empty() {
        println!(
            "\n| threads (both sides) | ours, median | NumPy, median | NumPy / ours | median pass ratio |"
        );
        println!("|---|---|---|---|---|");
        for (threads, ours, py, ratio, pair_ratio) in table {
            println!(
                "| {threads} | {:.2} s | {:.2} s | {ratio:.2}× | {pair_ratio:.2}× |",
                ours.as_secs_f64(),
                py.as_secs_f64()
            );
        }
    }
}
