//! [`Comparison`]: 2–10 runs over the same queries, each against the first.

use super::{CompareError, CompareOptions, PairedTest};
use crate::level::TokenLevel;
use crate::metrics::{mean_std, MetricContext, ReportedName, RunResult};
use crate::stats::{
    bootstrap_cis_until, corrected_difference, paired_t_test, randomization_tests_until,
    CorrectedDifference, Correction, WinTieLoss, TIE_TOLERANCE,
};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

/// The most runs one comparison takes.
pub const MAX_RUNS: usize = 10;

/// A run as the comparison saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedRun {
    /// The label it was given (a file name or run id).
    pub label: String,
    /// How many queries it scored.
    pub queries: usize,
    /// Its dataset hash, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_hash: Option<String>,
}

/// One run's figure for a metric over the compared queries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFigure {
    /// The run's label.
    pub label: String,
    /// Mean over the metric's paired queries.
    pub mean: f64,
    /// Population standard deviation over them.
    pub std: f64,
    /// Compared queries left out of this metric because this run has no figure for them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub missing: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A query whose figure changed, with what it asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryChange {
    /// The query id.
    pub id: String,
    /// The query text, when a run recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The query's difficulty label, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// The baseline's figure.
    pub baseline: f64,
    /// The run's figure.
    pub run: f64,
    /// `run − baseline`.
    pub difference: f64,
}

/// One run against the baseline on one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// The run's label.
    pub label: String,
    /// Mean of `run − baseline` over the queries.
    pub difference: f64,
    /// The paired bootstrap confidence interval of that mean, `[low, high]`.
    pub ci: [f64; 2],
    /// The paired test's two-sided p-value.
    pub p_value: f64,
    /// Whether `p_value` is exact (randomization over every sign pattern).
    pub exact: bool,
    /// The p-value after the correction across metrics × runs.
    pub corrected_p_value: f64,
    /// Queries better than, equal to and worse than the baseline.
    #[serde(flatten)]
    pub outcome: WinTieLoss,
    /// The queries that lost the most, most first (only queries that lost).
    pub most_worse: Vec<QueryChange>,
    /// The queries that gained the most, most first (only queries that gained).
    pub most_better: Vec<QueryChange>,
    /// With judge correction ([`CompareOptions::judge_corrected`]) and at least two labelled
    /// queries in both runs: the difference on judge-corrected figures, which the gate reads
    /// in place of the paired test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_corrected: Option<JudgeCorrected>,
}

/// A difference from the baseline on judge-corrected figures: each run's prediction-powered
/// mean over the metric's paired queries, corrected by the judge's error on that run's
/// labelled queries, and the interval and test of [`corrected_difference`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeCorrected {
    /// The estimate, its interval and its p-value.
    #[serde(flatten)]
    pub estimate: CorrectedDifference,
    /// The p-value after the correction across metrics × runs, in the family where each
    /// labelled metric's judge-corrected p-value stands in for its paired test's (the paired
    /// tests' own [`Difference::corrected_p_value`] are unchanged).
    pub corrected_p_value: f64,
}

impl Difference {
    /// What the gate reads: the judge-corrected difference and corrected p-value when there
    /// is one, else the paired test's; and whether they are judge-corrected.
    pub fn gate(&self) -> (f64, f64, bool) {
        match &self.judge_corrected {
            Some(j) => (j.estimate.difference, j.corrected_p_value, true),
            None => (self.difference, self.corrected_p_value, false),
        }
    }
}

/// Every run on one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricComparison {
    /// The metric's report name.
    pub metric: String,
    /// How many compared queries have a figure for it in every run: the paired queries all its
    /// figures are over (fewer than the comparison's `queries` when some run has no figure).
    #[serde(default)]
    pub queries: usize,
    /// Whether some run's figures of it are a judge's (a query holds a judgement of it): its
    /// means are over the `queries` every judge scored, of the comparison's `queries`, and say
    /// so beside them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub judged: bool,
    /// Each run's mean and standard deviation, baseline first.
    pub runs: Vec<RunFigure>,
    /// Each run after the first against the baseline.
    pub vs_baseline: Vec<Difference>,
}

/// A shared metric that got no test: fewer than 2 queries have a figure for it in every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UntestedMetric {
    /// The metric's report name.
    pub metric: String,
    /// How many queries have a figure for it in every run (0 or 1).
    pub queries: usize,
    /// Per run, baseline first: the compared queries it has no figure for.
    pub missing: Vec<usize>,
    /// Why, in words.
    pub reason: String,
}

/// A metric every run reports under one name but not with one definition: another ground
/// truth level, ranking cut-off or span mode (see [`Comparison::new`]). Not compared, never a
/// regression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedefinedMetric {
    /// The metric's report name.
    pub metric: String,
    /// Per run, baseline first: what its figures were computed under, e.g. `token level, k=5`
    /// or `token level, mode standard`.
    pub definitions: Vec<String>,
}

/// The comparison restricted to the queries with one difficulty label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DifficultyComparison {
    /// The label (`unlabelled` for queries without one).
    pub difficulty: String,
    /// How many compared queries have it.
    pub queries: usize,
    /// Per metric, as in [`Comparison::metrics`]; p-values corrected within the label.
    pub metrics: Vec<MetricComparison>,
    /// As [`Comparison::metrics_untested`], within the label.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics_untested: Vec<UntestedMetric>,
}

/// A metric on which a run is significantly worse than the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Regression {
    /// The metric.
    pub metric: String,
    /// The run's label.
    pub run: String,
    /// Mean difference from the baseline (negative).
    pub difference: f64,
    /// The corrected p-value.
    pub corrected_p_value: f64,
    /// Whether the difference and p-value are judge-corrected ([`Difference::judge_corrected`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub judge_corrected: bool,
}

/// 2–10 runs compared with the first (the baseline) on the queries and metrics they share:
/// per metric each run's mean ± std, its mean difference from the baseline with a paired
/// bootstrap confidence interval, a paired test's p-value before and after a correction across
/// metrics × runs, wins/ties/losses, and the queries that changed most; the same per
/// difficulty label.
///
/// Serialises to the JSON that `rag-eval compare --json` prints (`docs/reference/commands.md`,
/// *`rag-eval compare`*).
///
/// ```
/// use rag_eval::compare::{CompareOptions, Comparison};
/// use rag_eval::metrics::{Figures, QueryResult, ResultLevel, RunResult};
///
/// let run = |values: &[f64]| {
///     let per_query = values
///         .iter()
///         .enumerate()
///         .map(|(i, v)| QueryResult {
///             id: format!("q{i}"),
///             query: None,
///             difficulty: None,
///             metrics: Figures(vec![("recall@5".into(), *v)]),
///             ..QueryResult::default()
///         })
///         .collect();
///     RunResult::from_queries(ResultLevel::Chunk, vec!["recall@5".into()], per_query)
/// };
/// let baseline = run(&[1.0, 1.0, 0.5, 1.0, 0.5, 1.0, 1.0, 1.0]);
/// let worse = run(&[0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5]);
/// let c = Comparison::new(&[("main", &baseline), ("branch", &worse)], &CompareOptions::default())?;
/// let d = &c.metrics[0].vs_baseline[0];
/// assert_eq!(d.difference, -0.625);
/// assert!(d.exact && d.p_value < 0.01); // all 2^8 sign patterns: p = 2/256
/// assert_eq!(c.regressions(0.05).len(), 1);
/// # Ok::<(), rag_eval::compare::CompareError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline's label.
    pub baseline: String,
    /// The runs, baseline first.
    pub runs: Vec<ComparedRun>,
    /// How many queries were compared (those every run scored).
    pub queries: usize,
    /// Whether the runs' dataset hashes or query sets differ (allowed by the options).
    pub datasets_differ: bool,
    /// The test of the p-values.
    pub test: PairedTest,
    /// Random sign patterns of the randomization test.
    pub permutations: usize,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Seed of both.
    pub seed: u64,
    /// The correction across metrics × runs.
    pub correction: Correction,
    /// The confidence level of the intervals.
    pub confidence: f64,
    /// Metrics left out because some run lacks them.
    pub metrics_not_shared: Vec<String>,
    /// Metrics every run has, left out because some run defines them differently.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics_redefined: Vec<RedefinedMetric>,
    /// Per metric, in the baseline's order, each over its paired queries.
    pub metrics: Vec<MetricComparison>,
    /// Shared metrics that got no test because missing figures left fewer than 2 paired
    /// queries; not in `metrics`, not in the correction, never a regression.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics_untested: Vec<UntestedMetric>,
    /// The same per difficulty label, labels sorted; empty when no compared query has one.
    pub by_difficulty: Vec<DifficultyComparison>,
}

/// Each run's figures for the compared queries and metrics: `values[run][metric][query]`, none
/// where the run has no figure; with judge correction people's labels alike in `people`
/// (empty without).
struct Aligned<'a> {
    labels: Vec<&'a str>,
    metrics: Vec<String>,
    values: Vec<Vec<Vec<Option<f64>>>>,
    people: Vec<Vec<Vec<Option<f64>>>>,
    /// Per metric: whether some run holds a judgement of it.
    judged: Vec<bool>,
    ids: Vec<&'a str>,
    text: Vec<Option<&'a str>>,
    difficulty: Vec<Option<&'a str>>,
}

impl Comparison {
    /// Compares `runs` (label, result), the first being the baseline.
    ///
    /// Refuses fewer than 2 or more than [`MAX_RUNS`] runs, runs whose dataset hashes differ or
    /// that scored different query ids (unless `allow_different_datasets`, which compares the
    /// ids every run has), a query id repeated in a run, and a figure that is not finite.
    ///
    /// A metric is compared only where every run defines it alike: retrieval metrics over the
    /// same ground truth level ([`RunResult::level`]), those over the whole ranking (`mrr`,
    /// `map`) at the same cut-off [`RunResult::k`], and the span metrics in the same
    /// [`RunResult::mode`]; answer metrics and judges depend on none of these. Metrics that
    /// the registry does not know are taken to depend on all three. The others are listed in
    /// [`Comparison::metrics_redefined`]; when no metric is left the runs are refused
    /// ([`CompareError::NoComparableMetrics`]).
    ///
    /// A query without a figure for a metric in some run (an `undetermined` or `invalid` judge
    /// figure, a reference-based metric on a row without a reference) is left out of that
    /// metric only: each metric is compared over its paired queries, those with a figure in
    /// every run ([`MetricComparison::queries`], [`RunFigure::missing`]). A metric that missing
    /// figures leave with fewer than 2 paired queries gets no test and is listed in
    /// [`Comparison::metrics_untested`] with the reason.
    ///
    /// Options out of range are refused ([`CompareOptions::check`]).
    pub fn new(
        runs: &[(&str, &RunResult)],
        options: &CompareOptions,
    ) -> Result<Comparison, CompareError> {
        Comparison::new_until(runs, options, &AtomicBool::new(false))
    }

    /// [`Comparison::new`] that gives up with [`CompareError::Cancelled`] soon after `stop` is
    /// set (from another thread: say, when whoever asked for the comparison has gone away).
    pub fn new_until(
        runs: &[(&str, &RunResult)],
        options: &CompareOptions,
        stop: &AtomicBool,
    ) -> Result<Comparison, CompareError> {
        if !(2..=MAX_RUNS).contains(&runs.len()) {
            return Err(CompareError::RunCount(runs.len()));
        }
        options.check()?;
        let (aligned, datasets_differ, not_shared, redefined) = align(runs, options)?;
        let all: Vec<usize> = (0..aligned.ids.len()).collect();
        let (metrics, metrics_untested) = compare_rows(&aligned, &all, options, stop);
        let mut groups: Vec<(&str, Vec<usize>)> = Vec::new();
        if aligned.difficulty.iter().any(Option::is_some) {
            let mut by_label: HashMap<&str, Vec<usize>> = HashMap::new();
            for (i, d) in aligned.difficulty.iter().enumerate() {
                by_label
                    .entry(d.unwrap_or("unlabelled"))
                    .or_default()
                    .push(i);
            }
            groups = by_label.into_iter().collect();
            groups.sort_by(|a, b| a.0.cmp(b.0));
        }
        let by_difficulty = groups
            .into_iter()
            .map(|(label, rows)| {
                let (metrics, metrics_untested) = compare_rows(&aligned, &rows, options, stop);
                DifficultyComparison {
                    difficulty: label.to_owned(),
                    queries: rows.len(),
                    metrics,
                    metrics_untested,
                }
            })
            .collect();
        if stop.load(Ordering::Relaxed) {
            return Err(CompareError::Cancelled);
        }
        let comparison = Comparison {
            baseline: runs[0].0.to_owned(),
            runs: runs
                .iter()
                .map(|(label, r)| ComparedRun {
                    label: (*label).to_owned(),
                    queries: r.per_query.len(),
                    dataset_hash: r.dataset_hash.clone(),
                })
                .collect(),
            queries: aligned.ids.len(),
            datasets_differ,
            test: options.test,
            permutations: options.permutations,
            resamples: options.resamples,
            seed: options.seed,
            correction: options.correction,
            confidence: options.confidence,
            metrics_not_shared: not_shared,
            metrics_redefined: redefined,
            metrics,
            metrics_untested,
            by_difficulty,
        };
        comparison.check_finite()?;
        if options.judge_corrected {
            comparison.check_labels(&aligned)?;
        }
        Ok(comparison)
    }

    /// Refuses a comparison with a mean, standard deviation, difference or interval that is
    /// not finite: per-query figures are checked, but finite ones can add up to an infinity
    /// (1e308 and 1e308), which would print as `inf ± inf` and gate as a difference.
    fn check_finite(&self) -> Result<(), CompareError> {
        let groups = std::iter::once((None, &self.metrics)).chain(
            self.by_difficulty
                .iter()
                .map(|g| (Some(g.difficulty.as_str()), &g.metrics)),
        );
        for (difficulty, metrics) in groups {
            for m in metrics.iter() {
                let metric = || match difficulty {
                    Some(label) => format!("{} over `{label}` queries", m.metric),
                    None => m.metric.clone(),
                };
                let mut figures: Vec<(&String, &'static str, f64)> = Vec::new();
                for r in &m.runs {
                    figures.push((&r.label, "mean", r.mean));
                    figures.push((&r.label, "standard deviation", r.std));
                }
                for d in &m.vs_baseline {
                    figures.push((&d.label, "difference from the baseline", d.difference));
                    figures.push((&d.label, "interval of the difference", d.ci[0]));
                    figures.push((&d.label, "interval of the difference", d.ci[1]));
                    if let Some(j) = &d.judge_corrected {
                        let e = &j.estimate;
                        figures.push((&d.label, "judge-corrected difference", e.difference));
                        figures.push((
                            &d.label,
                            "interval of the judge-corrected difference",
                            e.ci[0],
                        ));
                        figures.push((
                            &d.label,
                            "interval of the judge-corrected difference",
                            e.ci[1],
                        ));
                    }
                }
                if let Some(&(run, what, value)) = figures.iter().find(|(_, _, v)| !v.is_finite()) {
                    return Err(CompareError::NonFiniteFigure {
                        run: run.clone(),
                        metric: metric(),
                        what,
                        value,
                    });
                }
            }
        }
        Ok(())
    }

    /// The metrics on which a run is significantly worse than the baseline: a negative mean
    /// difference with a corrected p-value at most `alpha`, both judge-corrected where the
    /// comparison has them ([`Difference::gate`]). Over all compared queries (the
    /// per-difficulty figures are for reading, not for the gate).
    pub fn regressions(&self, alpha: f64) -> Vec<Regression> {
        self.metrics
            .iter()
            .flat_map(|m| {
                m.vs_baseline.iter().filter_map(move |d| {
                    let (difference, corrected_p_value, judge_corrected) = d.gate();
                    (difference < -TIE_TOLERANCE && corrected_p_value <= alpha).then(|| {
                        Regression {
                            metric: m.metric.clone(),
                            run: d.label.clone(),
                            difference,
                            corrected_p_value,
                            judge_corrected,
                        }
                    })
                })
            })
            .collect()
    }

    /// With judge correction, refuses a comparison where no metric has labels, or where a
    /// tested metric that some run has labels of lacks a judge-corrected difference (a run with
    /// fewer than two labels of it).
    fn check_labels(&self, a: &Aligned<'_>) -> Result<(), CompareError> {
        // A run's labels of metric `m` on its paired queries (a figure in every run).
        let labelled = |r: usize, m: usize| {
            (0..a.ids.len())
                .filter(|&i| a.people[r][m][i].is_some())
                .filter(|&i| a.values.iter().all(|run| run[m][i].is_some()))
                .count()
        };
        let metric_index = |name: &str| a.metrics.iter().position(|n| n == name);
        let mut any = false;
        for mc in &self.metrics {
            let Some(m) = metric_index(&mc.metric) else {
                continue;
            };
            if (0..a.labels.len()).all(|r| labelled(r, m) == 0) {
                continue;
            }
            any = true;
            if mc.vs_baseline.iter().all(|d| d.judge_corrected.is_some()) {
                continue;
            }
            let (r, n) = (0..a.labels.len())
                .map(|r| (r, labelled(r, m)))
                .min_by_key(|&(_, n)| n)
                .unwrap_or((0, 0));
            return Err(CompareError::TooFewLabels {
                run: a.labels[r].to_owned(),
                metric: mc.metric.clone(),
                labelled: n,
                queries: mc.queries,
            });
        }
        if any {
            Ok(())
        } else {
            Err(CompareError::NoLabels)
        }
    }
}

/// What a figure named `metric` means in `run` beyond its name: the level, cut-off and span
/// mode it depends on (see [`Comparison::new`]); empty for answer metrics and judges.
fn definition(run: &RunResult, metric: &str) -> String {
    let name = ReportedName::parse(metric);
    let info = crate::metrics::registry::lookup(name.metric);
    if info.is_some_and(|i| i.is_answer_metric()) {
        return String::new();
    }
    let mut parts = vec![format!("{} level", run.level.as_str())];
    // A cut-off in the name is the one the figure was computed at; a metric over the whole
    // ranking depends on how deep the ranking went.
    let ranked = info.is_none_or(|i| i.needs(crate::metrics::Need::Ranking));
    if name.k.is_none() && ranked {
        parts.push(match run.k {
            Some(k) => format!("k={k}"),
            None => "no k".to_owned(),
        });
    }
    let counts_characters = info.is_none_or(|i| {
        i.build::<TokenLevel>(&MetricContext::default())
            .is_some_and(|m| m.span_mode().is_some())
    });
    if counts_characters {
        parts.push(match run.mode {
            Some(mode) => format!("mode {mode}"),
            None => "no mode".to_owned(),
        });
    }
    parts.join(", ")
}

fn align<'a>(
    runs: &[(&'a str, &'a RunResult)],
    options: &CompareOptions,
) -> Result<(Aligned<'a>, bool, Vec<String>, Vec<RedefinedMetric>), CompareError> {
    let (base_label, base) = runs[0];
    let mut datasets_differ = false;
    let mut indexes = Vec::with_capacity(runs.len());
    for (label, run) in runs {
        let mut index: HashMap<&str, usize> = HashMap::with_capacity(run.per_query.len());
        for (i, q) in run.per_query.iter().enumerate() {
            if index.insert(q.id.as_str(), i).is_some() {
                return Err(CompareError::DuplicateQuery {
                    run: (*label).to_owned(),
                    query: q.id.clone(),
                });
            }
        }
        indexes.push(index);
    }
    for (k, (label, run)) in runs.iter().enumerate().skip(1) {
        if let (Some(a), Some(b)) = (&base.dataset_hash, &run.dataset_hash) {
            if a != b {
                if !options.allow_different_datasets {
                    return Err(CompareError::DifferentDatasets {
                        baseline: base_label.to_owned(),
                        baseline_hash: a.clone(),
                        run: (*label).to_owned(),
                        run_hash: b.clone(),
                    });
                }
                datasets_differ = true;
            }
        }
        let only_baseline: Vec<&str> = base
            .per_query
            .iter()
            .map(|q| q.id.as_str())
            .filter(|id| !indexes[k].contains_key(id))
            .collect();
        let only_run: Vec<&str> = run
            .per_query
            .iter()
            .map(|q| q.id.as_str())
            .filter(|id| !indexes[0].contains_key(id))
            .collect();
        if !only_baseline.is_empty() || !only_run.is_empty() {
            if !options.allow_different_datasets {
                return Err(CompareError::DifferentQueries {
                    baseline: base_label.to_owned(),
                    run: (*label).to_owned(),
                    only_baseline: only_baseline.len(),
                    only_run: only_run.len(),
                    example: only_baseline
                        .first()
                        .or(only_run.first())
                        .map_or_else(String::new, |s| (*s).to_owned()),
                });
            }
            datasets_differ = true;
        }
    }
    let shared: Vec<usize> = (0..base.per_query.len())
        .filter(|&i| {
            let id = base.per_query[i].id.as_str();
            indexes.iter().all(|ix| ix.contains_key(id))
        })
        .collect();
    if shared.is_empty() {
        return Err(CompareError::NoSharedQueries);
    }
    let mut metrics = Vec::new();
    let mut not_shared = Vec::new();
    let mut redefined = Vec::new();
    let mut seen = HashSet::new();
    for (_, run) in runs {
        for name in run.metrics.names() {
            if !seen.insert(name.to_owned()) {
                continue;
            }
            if !runs.iter().all(|(_, r)| r.metrics.get(name).is_some()) {
                not_shared.push(name.to_owned());
                continue;
            }
            let definitions: Vec<String> = runs.iter().map(|(_, r)| definition(r, name)).collect();
            if definitions.iter().all(|d| *d == definitions[0]) {
                metrics.push(name.to_owned());
            } else {
                redefined.push(RedefinedMetric {
                    metric: name.to_owned(),
                    definitions,
                });
            }
        }
    }
    if metrics.is_empty() && !redefined.is_empty() {
        return Err(CompareError::NoComparableMetrics {
            metrics: redefined
                .iter()
                .map(|r| r.describe(runs.iter().map(|(l, _)| *l)))
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    if metrics.is_empty() {
        return Err(CompareError::NoSharedMetrics {
            baseline: base_label.to_owned(),
            metrics: base.metrics.names().collect::<Vec<_>>().join(", "),
        });
    }
    let ids: Vec<&str> = shared
        .iter()
        .map(|&i| base.per_query[i].id.as_str())
        .collect();
    let mut values = Vec::with_capacity(runs.len());
    let mut people = Vec::new();
    for (k, (label, run)) in runs.iter().enumerate() {
        if options.judge_corrected {
            people.push(
                metrics
                    .iter()
                    .map(|m| {
                        ids.iter()
                            .map(|id| run.labels.get(*id).and_then(|l| l.get(m)))
                            .collect()
                    })
                    .collect(),
            );
        }
        let rows: Vec<&crate::metrics::QueryResult> = ids
            .iter()
            .map(|id| &run.per_query[indexes[k][id]])
            .collect();
        let mut per_metric = Vec::with_capacity(metrics.len());
        for m in &metrics {
            // Figures are usually in the run's metric order: try the same position first.
            let position = run.metrics.names().position(|n| n == m);
            let mut column = Vec::with_capacity(rows.len());
            for q in &rows {
                let value = position
                    .and_then(|p| q.metrics.0.get(p).filter(|(n, _)| n == m).map(|(_, v)| *v))
                    .or_else(|| q.metrics.get(m));
                let problem = match value {
                    None => None,
                    Some(v) if v.is_nan() => Some("NaN"),
                    Some(v) if v.is_infinite() => Some("infinite"),
                    Some(_) => None,
                };
                if let Some(problem) = problem {
                    return Err(CompareError::BadFigure {
                        run: (*label).to_owned(),
                        query: q.id.clone(),
                        metric: m.clone(),
                        problem,
                    });
                }
                column.push(value);
            }
            per_metric.push(column);
        }
        values.push(per_metric);
    }
    let judged = metrics
        .iter()
        .map(|m| {
            runs.iter()
                .flat_map(|(_, r)| &r.per_query)
                .any(|q| q.judges.iter().any(|j| j.metric == *m))
        })
        .collect();
    let mut text = Vec::with_capacity(ids.len());
    let mut difficulty = Vec::with_capacity(ids.len());
    for id in &ids {
        let rows: Vec<&'a crate::metrics::QueryResult> = (0..runs.len())
            .map(|k| &runs[k].1.per_query[indexes[k][id]])
            .collect();
        text.push(rows.iter().find_map(|q| q.query.as_deref()));
        difficulty.push(rows.iter().find_map(|q| q.difficulty.as_deref()));
    }
    Ok((
        Aligned {
            labels: runs.iter().map(|(l, _)| *l).collect(),
            metrics,
            values,
            people,
            judged,
            ids,
            text,
            difficulty,
        },
        datasets_differ,
        not_shared,
        redefined,
    ))
}

impl RedefinedMetric {
    /// `mrr (main: token level, k=10; branch: token level, k=5)`, the runs labelled `labels`
    /// (baseline first).
    pub fn describe<'a>(&self, labels: impl IntoIterator<Item = &'a str>) -> String {
        let each: Vec<String> = labels
            .into_iter()
            .zip(&self.definitions)
            .map(|(label, d)| format!("{label}: {d}"))
            .collect();
        format!("{} ({})", self.metric, each.join("; "))
    }
}

/// A tested metric: its paired rows, and per run after the baseline its difference column, its
/// test (p-value, exact) and its interval.
struct Tested {
    metric: usize,
    paired: Vec<usize>,
    columns: Vec<Vec<f64>>,
    tests: Vec<(f64, bool)>,
    cis: Vec<(f64, f64)>,
}

/// Every metric of every run against the baseline over the queries `rows`, each metric over
/// those of `rows` every run has a figure for; the metrics left with fewer than 2 such queries
/// by missing figures come back untested.
fn compare_rows(
    a: &Aligned<'_>,
    rows: &[usize],
    options: &CompareOptions,
    stop: &AtomicBool,
) -> (Vec<MetricComparison>, Vec<UntestedMetric>) {
    let others = a.labels.len() - 1;
    let mut untested = Vec::new();
    // Metrics over the same paired queries are tested together, so that with no figure missing
    // every metric is in one group and the figures are those of one call, as they always were.
    let mut groups: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    let mut missing_of = vec![Vec::new(); a.metrics.len()];
    for (m, name) in a.metrics.iter().enumerate() {
        let paired: Vec<usize> = rows
            .iter()
            .copied()
            .filter(|&i| a.values.iter().all(|run| run[m][i].is_some()))
            .collect();
        let missing: Vec<usize> = a
            .values
            .iter()
            .map(|run| rows.iter().filter(|&&i| run[m][i].is_none()).count())
            .collect();
        if paired.len() < 2 && paired.len() < rows.len() {
            untested.push(UntestedMetric {
                metric: name.clone(),
                queries: paired.len(),
                reason: format!(
                    "{} of {} queries have a figure in every run; a test needs 2",
                    paired.len(),
                    rows.len()
                ),
                missing,
            });
            continue;
        }
        missing_of[m] = missing;
        match groups.iter_mut().find(|(p, _)| *p == paired) {
            Some((_, ms)) => ms.push(m),
            None => groups.push((paired, vec![m])),
        }
    }
    let value = |run: usize, m: usize, i: usize| a.values[run][m][i].unwrap_or_default();
    // Per tested metric: its paired rows, its difference columns, and per run its test and
    // interval.
    let mut tested: Vec<Tested> = Vec::new();
    for (paired, ms) in &groups {
        // Columns in metric-major order: (metric 0, run 1), (metric 0, run 2), …
        let mut columns = Vec::with_capacity(ms.len() * others);
        for &m in ms {
            for r in 1..=others {
                columns.push(
                    paired
                        .iter()
                        .map(|&i| value(r, m, i) - value(0, m, i))
                        .collect::<Vec<f64>>(),
                );
            }
        }
        let refs: Vec<&[f64]> = columns.iter().map(Vec::as_slice).collect();
        let tests: Vec<(f64, bool)> = match options.test {
            PairedTest::Fisher => {
                randomization_tests_until(&refs, options.permutations, options.seed, stop)
                    .into_iter()
                    .map(|r| (r.p_value, r.exact))
                    .collect()
            }
            PairedTest::Student => refs
                .iter()
                .map(|c| (paired_t_test(c).p_value, false))
                .collect(),
        };
        let cis = bootstrap_cis_until(
            &refs,
            options.resamples,
            options.seed,
            options.confidence,
            stop,
        );
        let mut columns = columns.into_iter();
        for (k, &m) in ms.iter().enumerate() {
            let span = k * others..(k + 1) * others;
            tested.push(Tested {
                metric: m,
                paired: paired.clone(),
                columns: columns.by_ref().take(others).collect(),
                tests: tests[span.clone()].to_vec(),
                cis: cis[span].to_vec(),
            });
        }
    }
    // Back in the metrics' order, so that the correction sees the p-values as it always did.
    tested.sort_by_key(|t| t.metric);
    let raw: Vec<f64> = tested
        .iter()
        .flat_map(|t| t.tests.iter().map(|p| p.0))
        .collect();
    let corrected = options.correction.apply(&raw);
    // With judge correction: per tested metric and run its judge-corrected difference, and the
    // correction over the p-values the gate reads (judge-corrected where there is one).
    let judged: Vec<Vec<Option<CorrectedDifference>>> = tested
        .iter()
        .map(|t| {
            let queries = |r: usize| -> Vec<(f64, Option<f64>)> {
                t.paired
                    .iter()
                    .map(|&i| (value(r, t.metric, i), a.people[r][t.metric][i]))
                    .collect()
            };
            (1..=others)
                .map(|r| {
                    if !options.judge_corrected {
                        return None;
                    }
                    corrected_difference(&queries(0), &queries(r), options.confidence)
                })
                .collect()
        })
        .collect();
    let gate: Vec<f64> = judged
        .iter()
        .flatten()
        .zip(&raw)
        .map(|(j, &p)| j.map_or(p, |j| j.p_value))
        .collect();
    let gate_corrected = options.correction.apply(&gate);
    let mut out = Vec::with_capacity(tested.len());
    for (k, t) in tested.into_iter().enumerate() {
        let Tested {
            metric: m,
            paired,
            columns,
            tests,
            cis,
        } = t;
        let runs = (0..=others)
            .map(|r| {
                let figures: Vec<f64> = paired.iter().map(|&i| value(r, m, i)).collect();
                let (mean, std) = mean_std(&figures);
                RunFigure {
                    label: a.labels[r].to_owned(),
                    mean,
                    std,
                    missing: missing_of[m][r],
                }
            })
            .collect();
        let vs_baseline = (1..=others)
            .map(|r| {
                let d = &columns[r - 1];
                let change = |j: usize| QueryChange {
                    id: a.ids[paired[j]].to_owned(),
                    query: a.text[paired[j]].map(str::to_owned),
                    difficulty: a.difficulty[paired[j]].map(str::to_owned),
                    baseline: value(0, m, paired[j]),
                    run: value(r, m, paired[j]),
                    difference: d[j],
                };
                let mut order: Vec<usize> = (0..d.len()).collect();
                // Stable: equal changes keep the queries' order.
                order.sort_by(|&x, &y| d[x].total_cmp(&d[y]));
                let most_worse = order
                    .iter()
                    .take_while(|&&j| d[j] < -TIE_TOLERANCE)
                    .take(options.top)
                    .map(|&j| change(j))
                    .collect();
                order.sort_by(|&x, &y| d[y].total_cmp(&d[x]));
                let most_better = order
                    .iter()
                    .take_while(|&&j| d[j] > TIE_TOLERANCE)
                    .take(options.top)
                    .map(|&j| change(j))
                    .collect();
                Difference {
                    label: a.labels[r].to_owned(),
                    difference: mean_std(d).0,
                    ci: [cis[r - 1].0, cis[r - 1].1],
                    p_value: tests[r - 1].0,
                    exact: tests[r - 1].1,
                    corrected_p_value: corrected[k * others + r - 1],
                    outcome: WinTieLoss::count(d),
                    most_worse,
                    most_better,
                    judge_corrected: judged[k][r - 1].map(|estimate| JudgeCorrected {
                        estimate,
                        corrected_p_value: gate_corrected[k * others + r - 1],
                    }),
                }
            })
            .collect();
        out.push(MetricComparison {
            metric: a.metrics[m].clone(),
            queries: paired.len(),
            judged: a.judged[m],
            runs,
            vs_baseline,
        });
    }
    (out, untested)
}
