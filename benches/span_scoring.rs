//! Chroma-mode scoring of the chunking-eval-general set (472 questions, k = 5, all four
//! metrics) against a Python transcription of chunking_evaluation's scoring loops, measured in
//! one run.
//!
//! `cargo bench --bench span_scoring`. The retrieval is the one stored in
//! tests/fixtures/chroma/ (see its README); the chunker output is fixed 400-character windows
//! with a 100-character overlap over all five corpora. Our side's time includes building the
//! `ChunkIndex`, since the Python side gets the chunk list as it is. Reported figures are
//! medians of repeated full passes. The Python side runs when benches/scripts/.venv exists
//! (benches/scripts/setup.sh creates it) and is skipped with a notice otherwise.

use rag_eval::corpus::Corpus;
use rag_eval::dataset::import::chroma_csv;
use rag_eval::level::TokenLevel;
use rag_eval::metrics::{
    chunking_evaluation_scores, ChunkIndex, Metric, MetricInput, PrecisionOmega, SpanIou, SpanMode,
    SpanPrecision, SpanRecall,
};
use rag_eval::span::CharSpan;
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const FIXTURE: &str = "tests/fixtures/chroma/general_400_100_k5.json";
const DATA: &str = "../shared/data/chunking-eval-general";

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Runs `f` until `reps` passes and at least `min` wall time have elapsed; the median pass.
fn measure(reps: usize, min: Duration, mut f: impl FnMut() -> f64) -> Duration {
    let mut times = Vec::new();
    let started = Instant::now();
    while times.len() < reps || started.elapsed() < min {
        let t = Instant::now();
        black_box(f());
        times.push(t.elapsed());
    }
    median(times)
}

fn fmt(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = root.join(DATA);
    if !data.join("questions_df.csv").is_file() {
        println!("span_scoring: skipped, {DATA} is absent");
        return;
    }
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(FIXTURE)).expect("fixture"))
            .expect("fixture JSON");
    let data_utf8 = camino::Utf8PathBuf::from_path_buf(data.clone()).expect("UTF-8 path");
    let corpus = Corpus::from_folder(data_utf8.join("corpora"), Some("*.md")).expect("corpus");
    let dataset = chroma_csv(data_utf8.join("questions_df.csv"), &corpus).expect("questions");
    let size = fixture["chunk_size"].as_u64().expect("chunk_size") as usize;
    let step = size - fixture["chunk_overlap"].as_u64().expect("chunk_overlap") as usize;
    let k = fixture["k"].as_u64().expect("k") as usize;

    let mut chunks: Vec<CharSpan> = Vec::new();
    for doc in corpus.documents() {
        let mut start = 0;
        loop {
            let end = (start + size).min(doc.char_len());
            chunks.push(CharSpan::new(doc.id().clone(), start, end));
            if end >= doc.char_len() {
                break;
            }
            start += step;
        }
    }
    let retrievals: Vec<Vec<CharSpan>> = fixture["questions"]
        .as_array()
        .expect("questions")
        .iter()
        .map(|q| {
            q["retrieved"]
                .as_array()
                .expect("retrieved")
                .iter()
                .map(|r| {
                    let doc = r[0].as_str().expect("doc");
                    let at = |i: usize| r[i].as_u64().expect("offset") as usize;
                    CharSpan::new(doc, at(1), at(2))
                })
                .collect()
        })
        .collect();
    let truths: Vec<&Vec<CharSpan>> = dataset.examples().iter().map(|e| &e.truth).collect();
    assert_eq!(truths.len(), retrievals.len());

    // One full pass: index the chunker output, then all four figures for every question.
    let indexed = || {
        let index = ChunkIndex::new(&chunks);
        let mut columns = [0.0; 4];
        for (truth, retrieved) in truths.iter().zip(&retrievals) {
            let s = chunking_evaluation_scores(&retrieved[..k], truth, Some(&index));
            columns[0] += s.recall;
            columns[1] += s.precision;
            columns[2] += s.iou;
            columns[3] += s.precision_omega.unwrap_or(0.0);
        }
        columns
    };
    // The same through the `Metric` impls, PrecisionΩ scanning `chunker_output` per query.
    let metrics: [Box<dyn Metric<TokenLevel>>; 4] = [
        Box::new(SpanRecall::new(SpanMode::ChunkingEvaluation)),
        Box::new(SpanPrecision::new(SpanMode::ChunkingEvaluation)),
        Box::new(SpanIou::new(SpanMode::ChunkingEvaluation)),
        Box::new(PrecisionOmega::new()),
    ];
    let scanning = || {
        let mut total = 0.0;
        for (truth, retrieved) in truths.iter().zip(&retrievals) {
            let input = MetricInput::new(retrieved, *truth, k).with_chunker_output(&chunks);
            total += metrics.iter().map(|m| m.compute(&input)).sum::<f64>();
        }
        total
    };

    let n = truths.len() as f64;
    let means = indexed().map(|c| c / n);
    // `cargo test --benches` runs this binary without `--bench`: one pass of each side of ours
    // as a smoke test, no timing and no Python.
    if !std::env::args().any(|a| a == "--bench") {
        let scanned = scanning() / n;
        assert!((scanned - means.iter().sum::<f64>()).abs() < 1e-9);
        println!("span_scoring: smoke run (pass --bench to measure), means {means:?}");
        return;
    }
    let ours = measure(51, Duration::from_secs(2), || indexed().iter().sum());
    let ours_scan = measure(11, Duration::from_secs(2), scanning);
    let index_only = measure(51, Duration::from_millis(500), || {
        ChunkIndex::new(&chunks).len() as f64
    });

    println!(
        "span_scoring: Chroma mode, {} questions, k = {k}, {} chunks ({size}/{} windows)",
        truths.len(),
        chunks.len(),
        size - step
    );
    println!(
        "  means: recall {:.4}  precision {:.4}  iou {:.4}  precision_omega {:.4}",
        means[0], means[1], means[2], means[3]
    );
    println!(
        "  ours, chunking_evaluation_scores + ChunkIndex (index built in the pass): {} per pass (index alone {})",
        fmt(ours),
        fmt(index_only)
    );
    println!(
        "  ours, Metric impls scanning chunker_output:                {} per pass",
        fmt(ours_scan)
    );

    let python = root.join("benches/scripts/.venv/bin/python");
    if !python.is_file() {
        println!(
            "  python: skipped, benches/scripts/.venv is missing (run benches/scripts/setup.sh)"
        );
        return;
    }
    let output = Command::new(&python)
        .arg(root.join("benches/scripts/chroma_scoring.py"))
        .arg("bench")
        .arg(&data)
        .arg(root.join(FIXTURE))
        .args(["--reps", "5"])
        .output()
        .expect("running the Python peer");
    if !output.status.success() {
        println!(
            "  python: failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        return;
    }
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("the Python peer prints JSON");
    let py = Duration::from_secs_f64(report["median_s"].as_f64().expect("median_s"));
    let names = ["recall", "precision", "iou", "precision_omega"];
    let agree = names.iter().zip(means).all(|(name, ours)| {
        report["means"][name]
            .as_f64()
            .is_some_and(|theirs| (theirs - ours).abs() <= 1e-12)
    });
    println!(
        "  python, chunking_evaluation's loops ({} reps):               {} per pass",
        report["reps"],
        fmt(py)
    );
    println!(
        "  ratio: {:.0}× (indexed), {:.0}× (scanning); means agree to 1e-12: {agree}",
        py.as_secs_f64() / ours.as_secs_f64(),
        py.as_secs_f64() / ours_scan.as_secs_f64()
    );
}
