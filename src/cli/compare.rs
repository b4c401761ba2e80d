//! `rag-eval compare`: 2–10 runs against the first, with paired tests.

use super::output::Output;
use crate::compare::{CompareOptions, Comparison, PairedTest, MAX_RUNS};
use crate::metrics::RunResult;
use crate::stats::Correction;
use anyhow::{bail, Result};
use camino::Utf8PathBuf;
use clap::Args;

#[derive(Args)]
pub(super) struct CompareArgs {
    /// Runs: ids in the run store (a unique prefix, `latest`, `latest~N`), or JSON files
    /// written by `rag-eval eval --json`, `score --json` or `runs export` (a file with several
    /// runs, one per line, brings them all). The first is the baseline.
    #[arg(value_name = "RUN", required = true)]
    runs: Vec<String>,
    /// The store run ids are looked up in: a SQLite file, a `postgres://` URL (default:
    /// `RAG_EVAL_RUNS`, else `.rag-eval/runs.sqlite`).
    #[arg(long, value_name = "FILE|URL")]
    store: Option<String>,
    #[command(flatten)]
    stats: StatsArgs,
    /// Exit with code 1 when a run is significantly worse than the baseline on a metric
    /// (corrected p-value at most --alpha).
    #[arg(long)]
    fail_on_regression: bool,
    /// Compare (and gate on) only this metric, by report name (`span_recall@5`) or base name
    /// (`span_recall`); repeat for several. The p-values are corrected across these alone.
    #[arg(long = "metric", value_name = "METRIC")]
    metrics: Vec<String>,
    /// Compare runs of different datasets (or query sets) on their shared query ids.
    #[arg(long)]
    allow_different_datasets: bool,
    /// Judge-correct the metrics people labelled: each run's mean becomes its
    /// prediction-powered estimate (corrected by the judge's error on that run's labelled
    /// queries), each difference gets a normal interval and test, and --fail-on-regression
    /// judges those metrics on the corrected figures. Every run needs at least 2 labels of each
    /// labelled metric; labels are the runs' own (`score`/`eval --labels`) or --labels.
    #[arg(long)]
    corrected: bool,
    /// With --corrected, labels to put into the runs: given once, one file for every run (only
    /// where the runs' outputs for each labelled query are the same: a label is of one output);
    /// given once per run, in the runs' order, each run's own.
    #[arg(long, value_name = "FILE", requires = "corrected")]
    labels: Vec<Utf8PathBuf>,
    /// Print the comparison as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// The statistics options `compare` and `report` share.
#[derive(Args)]
pub(super) struct StatsArgs {
    /// The paired test: Fisher's randomization test or the paired t-test.
    #[arg(long, default_value = "fisher", value_parser = ["fisher", "student"])]
    test: String,
    /// Random sign patterns of the randomization test, at most 1000000 (up to 20 queries every
    /// pattern is enumerated instead).
    #[arg(
        long,
        default_value_t = crate::stats::DEFAULT_PERMUTATIONS,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
            .range(0..=crate::stats::MAX_PERMUTATIONS as u64)
    )]
    permutations: usize,
    #[command(flatten)]
    resampling: ResampleArgs,
    /// Correction of the p-values across metrics × runs.
    #[arg(long, default_value = "holm", value_parser = ["none", "bonferroni", "holm"])]
    correction: String,
    /// Significance level: `*` marks a corrected p-value at most this (and, for compare,
    /// --fail-on-regression gates on it).
    #[arg(long, default_value_t = crate::report::DEFAULT_ALPHA)]
    pub(super) alpha: f64,
}

/// The bootstrap options `compare`, `report` and `align` share.
#[derive(Args)]
pub(super) struct ResampleArgs {
    /// Bootstrap resamples of the confidence intervals, at most 100000.
    #[arg(
        long,
        default_value_t = crate::stats::DEFAULT_RESAMPLES,
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
            .range(0..=crate::stats::MAX_RESAMPLES as u64)
    )]
    pub(super) resamples: usize,
    /// Seed of the random draws: the resamples, and the permutations of `compare` and `report`.
    #[arg(long, default_value_t = 42)]
    pub(super) seed: u64,
}

impl StatsArgs {
    /// The library's options, after checking --alpha.
    pub(super) fn options(&self, allow_different_datasets: bool) -> Result<CompareOptions> {
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            bail!("--alpha must be between 0 and 1 (got {})", self.alpha);
        }
        Ok(CompareOptions {
            test: self
                .test
                .parse::<PairedTest>()
                .map_err(anyhow::Error::msg)?,
            permutations: self.permutations,
            resamples: self.resampling.resamples,
            seed: self.resampling.seed,
            correction: self
                .correction
                .parse::<Correction>()
                .map_err(anyhow::Error::msg)?,
            allow_different_datasets,
            ..CompareOptions::default()
        })
    }
}

/// Prints the comparison; returns whether --fail-on-regression found a regression.
pub(super) fn run(a: CompareArgs, out: &mut Output) -> Result<bool> {
    let mut runs = super::runs::load(&a.runs, a.store.as_deref())?;
    if !a.metrics.is_empty() {
        for (label, run) in &mut runs {
            keep_metrics(run, &a.metrics).map_err(|m| anyhow::anyhow!("run `{label}`: {m}"))?;
        }
    }
    if !(2..=MAX_RUNS).contains(&runs.len()) {
        bail!(
            "compare takes 2 to {MAX_RUNS} runs (the first is the baseline), got {}",
            runs.len()
        );
    }
    match a.labels.len() {
        0 => {}
        1 => {
            let labels = crate::align::Labels::load(&a.labels[0])?;
            let all: Vec<(&str, &RunResult)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
            if let Some(problem) = crate::align::carry_over_problem(&labels, &all) {
                bail!(
                    "--labels `{}` cannot label every run: {problem}; give one --labels per run, in the runs' order",
                    a.labels[0]
                );
            }
            for (_, run) in &mut runs {
                super::labels::apply(&a.labels[0], run)?;
            }
        }
        n if n == runs.len() => {
            for (path, (_, run)) in a.labels.iter().zip(&mut runs) {
                super::labels::apply(path, run)?;
            }
        }
        n => bail!(
            "--labels is given {n} times for {} runs: give it once (one file for every run) or once per run",
            runs.len()
        ),
    }
    let options = CompareOptions {
        judge_corrected: a.corrected,
        ..a.stats.options(a.allow_different_datasets)?
    };
    let labelled: Vec<(&str, &RunResult)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
    let comparison = Comparison::new(&labelled, &options)?;
    if a.json {
        out.json_line(&comparison)?;
    } else {
        out.text(&comparison.to_text(a.stats.alpha))?;
    }
    let regressions = comparison.regressions(a.stats.alpha);
    if a.fail_on_regression && !regressions.is_empty() {
        out.flush()?;
        for r in &regressions {
            note!(
                "regression: {} on {}: {:+.4}{} (corrected p = {:.4} ≤ {})",
                r.run,
                r.metric,
                r.difference,
                if r.judge_corrected {
                    " judge-corrected"
                } else {
                    ""
                },
                r.corrected_p_value,
                a.stats.alpha
            );
        }
        return Ok(true);
    }
    Ok(false)
}

/// Leaves in `run` only the figures of `metrics` (report or base names); a name the run has
/// no figure of is an error listing those it has.
fn keep_metrics(run: &mut RunResult, metrics: &[String]) -> std::result::Result<(), String> {
    let wanted = |n: &str| {
        let name = crate::metrics::ReportedName::parse(n);
        metrics.iter().any(|m| name.is_of(m))
    };
    if let Some(missing) = metrics.iter().find(|m| {
        !run.metrics
            .names()
            .any(|n| crate::metrics::ReportedName::parse(n).is_of(m))
    }) {
        return Err(format!(
            "--metric `{missing}`: no such figure (the run has {})",
            run.metrics.names().collect::<Vec<_>>().join(", ")
        ));
    }
    let keep = |f: &mut crate::metrics::Figures| f.0.retain(|(n, _)| wanted(n));
    keep(&mut run.metrics);
    keep(&mut run.std);
    for q in &mut run.per_query {
        keep(&mut q.metrics);
    }
    for g in run.by_difficulty.iter_mut().flat_map(|d| d.values_mut()) {
        keep(&mut g.metrics);
    }
    Ok(())
}
