//! `Comparison::new` of 5 runs × 10,000 queries × 10 metrics with 10,000 permutations (and
//! 10,000 bootstrap resamples), against ranx's `compare` on the same figures.
//!
//! `cargo bench --bench compare`. The runs are read from `benches/scripts/.data/compare/`
//! when `benches/scripts/ranx_compare.py data` has written them there (ranx's own per-query
//! figures, so both sides compare the same numbers); otherwise seeded synthetic figures of the
//! same shape are used. ranx is timed by `benches/scripts/ranx_compare.py bench` in its own
//! process (see benches/README.md). Each side is timed 5 times and printed as min / median /
//! max. Under `cargo test --benches` one comparison of 200 queries runs, unmeasured.

use rag_eval::compare::{CompareOptions, Comparison};
use rag_eval::metrics::{Figures, QueryResult, ResultLevel, RunResult};
use rag_eval::stats::SplitMix64;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const RUNS: usize = 5;
const METRICS: usize = 10;

/// Samples of each side.
const SAMPLES: usize = 5;

fn main() {
    if !measuring() {
        let comparison = full_comparison();
        assert_eq!(comparison.metrics.len(), METRICS, "every metric compared");
        return;
    }
    runs(); // read or made once, outside the timings
    let sides = [
        ("full_comparison", full_comparison as fn() -> Comparison),
        ("randomization_only", randomization_only),
    ];
    for (name, side) in sides {
        let mut took: Vec<Duration> = (0..SAMPLES)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(side());
                started.elapsed()
            })
            .collect();
        took.sort();
        println!(
            "{name}: min {:.2} s, median {:.2} s, max {:.2} s ({SAMPLES} samples)",
            took[0].as_secs_f64(),
            took[SAMPLES / 2].as_secs_f64(),
            took[SAMPLES - 1].as_secs_f64()
        );
    }
}

/// `cargo bench` passes `--bench`; `cargo test --benches` does not.
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn queries() -> usize {
    if measuring() {
        10_000
    } else {
        200
    }
}

fn runs() -> &'static Vec<RunResult> {
    static RUNS_DATA: OnceLock<Vec<RunResult>> = OnceLock::new();
    RUNS_DATA.get_or_init(|| {
        let dir = Path::new("benches/scripts/.data/compare");
        let n = queries();
        if n == 10_000 && dir.join("run1.json").exists() {
            eprintln!("runs: ranx's figures from {}", dir.display());
            return (1..=RUNS)
                .map(|r| {
                    let text = std::fs::read_to_string(dir.join(format!("run{r}.json"))).unwrap();
                    serde_json::from_str(&text).unwrap()
                })
                .collect();
        }
        eprintln!("runs: synthetic, {n} queries");
        synthetic(n)
    })
}

/// Figures in steps of 0.1 (ties, as rank metrics have), each run a little better.
fn synthetic(n: usize) -> Vec<RunResult> {
    let names: Vec<String> = (0..METRICS).map(|m| format!("metric{m}@10")).collect();
    let mut rng = SplitMix64::new(7);
    (0..RUNS)
        .map(|r| {
            let per_query = (0..n)
                .map(|q| QueryResult {
                    id: format!("q{q:05}"),
                    query: None,
                    difficulty: None,
                    metrics: Figures(
                        names
                            .iter()
                            .map(|name| {
                                let step = (rng.below(10) + r / 2).min(10);
                                (name.clone(), step as f64 / 10.0)
                            })
                            .collect(),
                    ),
                    ..QueryResult::default()
                })
                .collect();
            RunResult::from_queries(ResultLevel::Trec, names.clone(), per_query)
        })
        .collect()
}

fn labelled(runs: &[RunResult]) -> Vec<(String, &RunResult)> {
    runs.iter()
        .enumerate()
        .map(|(i, r)| (format!("run{}", i + 1), r))
        .collect()
}

fn compare(options: &CompareOptions) -> Comparison {
    let runs = runs();
    let labelled = labelled(runs);
    let refs: Vec<(&str, &RunResult)> = labelled.iter().map(|(l, r)| (l.as_str(), *r)).collect();
    Comparison::new(&refs, options).unwrap()
}

/// Everything `rag-eval compare` computes: randomization tests and bootstrap intervals.
fn full_comparison() -> Comparison {
    compare(&CompareOptions::default())
}

/// The randomization tests alone (no resamples): the work ranx's Fisher test does.
fn randomization_only() -> Comparison {
    compare(&CompareOptions {
        resamples: 0,
        ..CompareOptions::default()
    })
}
