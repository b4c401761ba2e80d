//! `Comparison::new` of 5 runs × 10,000 queries × 10 metrics with 10,000 permutations (and
//! 10,000 bootstrap resamples), against ranx's `compare` on the same figures.
//!
//! `cargo bench --bench compare`. The runs are read from `benches/scripts/.data/compare/`
//! when `benches/scripts/ranx_compare.py data` has written them there (ranx's own per-query
//! figures, so both sides compare the same numbers); otherwise seeded synthetic figures of the
//! same shape are used. ranx is timed by `benches/scripts/ranx_compare.py bench` in its own
//! process (see benches/README.md). Under `cargo test --benches` one comparison of 200 queries
//! runs, unmeasured.

use rag_eval::compare::{CompareOptions, Comparison};
use rag_eval::metrics::{Figures, QueryResult, ResultLevel, RunResult};
use rag_eval::stats::SplitMix64;
use std::path::Path;
use std::sync::OnceLock;

const RUNS: usize = 5;
const METRICS: usize = 10;

fn main() {
    divan::main();
}

fn queries() -> usize {
    if std::env::args().any(|a| a == "--test") {
        200
    } else {
        10_000
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
#[divan::bench(sample_count = 5, sample_size = 1)]
fn full_comparison() -> Comparison {
    compare(&CompareOptions::default())
}

/// The randomization tests alone (no resamples): the work ranx's Fisher test does.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn randomization_only() -> Comparison {
    compare(&CompareOptions {
        resamples: 0,
        ..CompareOptions::default()
    })
}
