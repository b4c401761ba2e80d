//! Reports people read: one or more runs rendered as a self-contained HTML page, a Markdown
//! summary (a pull-request comment, `$GITHUB_STEP_SUMMARY`) or JUnit XML for CI dashboards.
//!
//! ```
//! use rag_eval::metrics::{Figures, QueryResult, ResultLevel, RunResult};
//! use rag_eval::report::{Bar, Report};
//!
//! let run = |v: f64| RunResult::from_queries(
//!     ResultLevel::Token,
//!     vec!["span_recall@5".into()],
//!     vec![QueryResult {
//!         id: "q1".into(),
//!         query: Some("what is <b>?".into()),
//!         metrics: Figures(vec![("span_recall@5".into(), v)]),
//!         ..QueryResult::default()
//!     }],
//! );
//! let report = Report::new(vec![("before".into(), run(0.5)), ("after".into(), run(0.75))])?
//!     .with_bars(vec!["span_recall=0.6".parse()?]);
//! let html = report.html();
//! assert!(html.contains("what is &lt;b&gt;?"));
//! assert!(report.markdown().contains("| span_recall@5 |"));
//! // `before` misses the bar: its mean and its one query fail.
//! assert!(report.junit().contains(r#"<testsuite name="before" tests="2" failures="2""#));
//! assert!(report.junit().contains(r#"<testsuite name="after" tests="2" failures="0""#));
//!
//! // Labels name the runs in every table, so two runs cannot share one.
//! let same = Report::new(vec![("a".into(), run(0.5)), ("a".into(), run(0.6))]);
//! let Err(rag_eval::Error::Report(rag_eval::ReportError::SameLabel(label))) = same else {
//!     panic!("two runs labelled `a`")
//! };
//! assert_eq!(label, "a");
//! # Ok::<(), rag_eval::Error>(())
//! ```

mod html;
mod junit;
mod markdown;
mod passage;
mod stats;
mod svg;
pub(crate) mod transcript;

pub use crate::metrics::{Bar, Bound};
#[cfg(feature = "serve")]
pub use stats::Interval;

use crate::compare::CompareOptions;
use crate::error::{Error, ReportError, Result};
use crate::metrics::{QueryResult, RunResult};
use camino::Utf8Path;

/// The first metric of `run` whose stored mean, or the mean of its per-query figures, is not
/// finite: finite figures can add up to an infinity (1e308 twice), and the report draws
/// intervals and differences from them.
fn non_finite_mean(run: &RunResult) -> Option<(String, f64)> {
    run.metrics.0.iter().find_map(|(name, stored)| {
        let (sum, count) = run
            .per_query
            .iter()
            .filter_map(|q| q.metrics.get(name))
            .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
        let value = if stored.is_finite() {
            sum / count.max(1) as f64
        } else {
            *stored
        };
        (!value.is_finite()).then(|| (name.clone(), value))
    })
}

/// The significance level a report marks by default, as `rag-eval compare --alpha`'s default.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// What `rag-eval report` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One self-contained HTML page.
    Html,
    /// GitHub-flavoured Markdown tables.
    Markdown,
    /// JUnit XML: one test case per query and bar.
    Junit,
}

/// Runs to report on, the first the baseline the others are compared with, and the bars they
/// are held to.
///
/// The intervals and p-values are the library's: each run's mean with its percentile bootstrap
/// interval ([`bootstrap_ci`](crate::stats::bootstrap_ci)) and, for two or more runs, the
/// [`Comparison`](crate::compare::Comparison) of them with the report's [`CompareOptions`]
/// (differences from the baseline with paired bootstrap intervals, corrected p-values, `*` where
/// the corrected p-value is at most [`Report::with_alpha`]'s level). Runs `rag-eval compare`
/// refuses for their datasets or query sets are compared on their shared query ids, and the
/// report says so.
#[derive(Debug, Clone)]
pub struct Report {
    runs: Vec<(String, RunResult)>,
    metrics: Vec<String>,
    bars: Vec<Bar>,
    title: String,
    options: CompareOptions,
    alpha: f64,
}

impl Report {
    /// A report of `runs` (label, result), the first the baseline. At least one run; labels
    /// must differ, as they name the runs in every table; every mean, as stored and as its
    /// per-query figures give it, must be finite ([`ReportError::NonFiniteMean`]).
    pub fn new(runs: Vec<(String, RunResult)>) -> Result<Report> {
        if runs.is_empty() {
            return Err(ReportError::NoRuns.into());
        }
        for (i, (label, run)) in runs.iter().enumerate() {
            if runs[..i].iter().any(|(l, _)| l == label) {
                return Err(ReportError::SameLabel(label.clone()).into());
            }
            if let Some((metric, value)) = non_finite_mean(run) {
                return Err(ReportError::NonFiniteMean {
                    run: label.clone(),
                    metric,
                    value: value.to_string(),
                }
                .into());
            }
        }
        Ok(Report {
            runs,
            metrics: Vec::new(),
            bars: Vec::new(),
            title: "rag-eval report".into(),
            options: CompareOptions {
                allow_different_datasets: true,
                ..CompareOptions::default()
            },
            alpha: DEFAULT_ALPHA,
        })
    }

    /// The settings of the comparison and of the bootstrap intervals (default: those of
    /// `rag-eval compare`, different datasets allowed).
    pub fn with_compare_options(mut self, options: CompareOptions) -> Report {
        self.options = options;
        self
    }

    /// The level at or below which a corrected p-value is marked significant (default 0.05).
    pub fn with_alpha(mut self, alpha: f64) -> Report {
        self.alpha = alpha;
        self
    }

    /// The settings of the comparison and of the bootstrap intervals.
    pub fn options(&self) -> &CompareOptions {
        &self.options
    }

    /// The significance level of the `*` marker.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The metrics the charts, the by-difficulty table and the query table show, by report
    /// name (`span_recall@5`) or base name (`span_recall`); without any, the headline
    /// retrieval metrics and the answer metrics the runs have. A name no run has is an error
    /// that lists the metrics there are.
    pub fn with_metrics(mut self, metrics: &[String]) -> Result<Report> {
        let all = self.metric_names();
        let mut chosen = Vec::new();
        for m in metrics {
            let found: Vec<&String> = all
                .iter()
                .filter(|n| *n == m || crate::metrics::ReportedName::parse(n).is_of(m))
                .collect();
            if found.is_empty() {
                return Err(ReportError::UnknownMetric {
                    metric: m.clone(),
                    known: all.clone(),
                }
                .into());
            }
            chosen.extend(found.into_iter().cloned());
        }
        chosen.dedup();
        self.metrics = chosen;
        Ok(self)
    }

    /// The bars every run's means and every query's figures are held to.
    pub fn with_bars(mut self, bars: Vec<Bar>) -> Report {
        self.bars = bars;
        self
    }

    /// The page's title (default `rag-eval report`).
    pub fn with_title(mut self, title: impl Into<String>) -> Report {
        self.title = title.into();
        self
    }

    /// The runs, baseline first.
    pub fn runs(&self) -> &[(String, RunResult)] {
        &self.runs
    }

    /// The bars.
    pub fn bars(&self) -> &[Bar] {
        &self.bars
    }

    /// The report in `format`.
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Html => self.html(),
            Format::Markdown => self.markdown(),
            Format::Junit => self.junit(),
        }
    }

    /// One self-contained HTML page: no network access, inline CSS, SVG and a little script
    /// for searching and sorting.
    pub fn html(&self) -> String {
        html::render(self)
    }

    /// Markdown: the runs, the metric table (with differences from the baseline), the means
    /// per difficulty and the bars.
    pub fn markdown(&self) -> String {
        markdown::render(self)
    }

    /// JUnit XML: a test suite per run, a test case per bar (the mean) and per query and bar,
    /// failed where the bar is missed; without bars, a passing test case per query.
    pub fn junit(&self) -> String {
        junit::of_report(self)
    }

    /// Every metric of any run, in the order they first appear.
    pub(crate) fn metric_names(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (_, r) in &self.runs {
            for n in r.metrics.names() {
                if !names.iter().any(|m| m == n) {
                    names.push(n.to_owned());
                }
            }
        }
        names
    }

    /// The metrics shown where space is short: those chosen ([`Report::with_metrics`]), else
    /// the headline retrieval metrics (span, chunk, PrecisionΩ, nDCG, and a
    /// conversation's `tool_call_accuracy` and `tool_call_f1`) followed by the headline
    /// answer metrics the runs have ([`ANSWER_HEADLINE`]); all when none of them is there.
    pub(crate) fn headline_metrics(&self) -> Vec<String> {
        if !self.metrics.is_empty() {
            return self.metrics.clone();
        }
        let all = self.metric_names();
        let mut head: Vec<String> = all
            .iter()
            .filter(|n| {
                n.starts_with("span_")
                    || n.starts_with("chunk_")
                    || *n == "precision_omega"
                    || n.starts_with("ndcg")
                    // A conversation's headline: how well it used its tools.
                    || *n == "tool_call_accuracy"
                    || *n == "tool_call_f1"
            })
            .cloned()
            .collect();
        head.extend(
            ANSWER_HEADLINE
                .iter()
                .filter(|a| all.iter().any(|n| n == *a))
                .map(|a| (*a).to_owned()),
        );
        if head.is_empty() {
            all
        } else {
            head
        }
    }

    /// The few metrics of the per-query table: the chosen ones, else the first two retrieval
    /// and the first two answer metrics of [`Report::headline_metrics`].
    pub(crate) fn query_metrics(&self) -> Vec<String> {
        let head = self.headline_metrics();
        if !self.metrics.is_empty() {
            return head;
        }
        let (answer, retrieval): (Vec<String>, Vec<String>) = head
            .into_iter()
            .partition(|n| ANSWER_HEADLINE.contains(&n.as_str()));
        let take = if answer.is_empty() { 3 } else { 2 };
        retrieval
            .into_iter()
            .take(take)
            .chain(answer.into_iter().take(2))
            .collect()
    }

    /// The short name of run `i` in crowded tables and charts: `R1`, `R2`, … (the runs table
    /// is their legend).
    pub(crate) fn short_label(i: usize) -> String {
        format!("R{}", i + 1)
    }

    /// Every difficulty label of any run, sorted.
    pub(crate) fn difficulty_labels(&self) -> Vec<&String> {
        let mut labels: Vec<&String> = self
            .runs
            .iter()
            .flat_map(|(_, r)| r.by_difficulty.iter().flat_map(|d| d.keys()))
            .collect();
        labels.sort();
        labels.dedup();
        labels
    }

    /// Each query id in the order first seen over the runs, with each run's result for it.
    pub(crate) fn queries(&self) -> Vec<(&str, Vec<Option<&QueryResult>>)> {
        let index: Vec<std::collections::HashMap<&str, &QueryResult>> = self
            .runs
            .iter()
            .map(|(_, r)| r.per_query.iter().map(|q| (q.id.as_str(), q)).collect())
            .collect();
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for (_, r) in &self.runs {
            for q in &r.per_query {
                if seen.insert(q.id.as_str()) {
                    let row = index
                        .iter()
                        .map(|m| m.get(q.id.as_str()).copied())
                        .collect();
                    out.push((q.id.as_str(), row));
                }
            }
        }
        out
    }
}

/// The answer metrics a report shows by default, in this order, where the runs have them.
pub const ANSWER_HEADLINE: [&str; 6] = [
    "faithfulness",
    "answer_match",
    "answer_relevancy",
    "token_f1",
    "rouge_l",
    "answer_similarity",
];

/// Reads the runs in a JSON file written by `rag-eval score --json` or `rag-eval eval --json`
/// (one object per line: `eval` with several chunkers writes several), labelled by the file's
/// name, followed by the chunker's spec when the file holds several runs; or the run records
/// of `rag-eval runs export` (or `runs show --json`), labelled by their label or id.
pub fn load_runs(path: &Utf8Path) -> Result<Vec<(String, RunResult)>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("read", path, e))?;
    let stem = path.file_stem().unwrap_or(path.as_str()).to_owned();
    let mut runs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |message: String| Error::Parse {
            path: path.to_owned(),
            line: i + 1,
            message,
        };
        if is_record(line) {
            let record = crate::runs::RunRecord::from_json(line).map_err(|e| at(e.to_string()))?;
            runs.push((Some(record_label(&record)), record.into_result()));
            continue;
        }
        let run: RunResult = serde_json::from_str(line).map_err(|e| {
            at(format!(
                "not a run as `rag-eval eval --json`, `score --json` or `runs export` writes it: {e}"
            ))
        })?;
        runs.push((None, run));
    }
    if runs.is_empty() {
        return Err(Error::Parse {
            path: path.to_owned(),
            line: 1,
            message: "holds no run".into(),
        });
    }
    let many = runs.len() > 1;
    Ok(runs
        .into_iter()
        .enumerate()
        .map(|(i, (label, r))| {
            if let Some(label) = label {
                return (label, r);
            }
            let label = if many {
                let which = r
                    .config
                    .as_ref()
                    .and_then(|c| c.chunker.clone())
                    .unwrap_or_else(|| (i + 1).to_string());
                format!("{stem} {which}")
            } else {
                stem.clone()
            };
            (label, r)
        })
        .collect())
}

/// Pairs of (baseline, other) values of `metric` over the queries both runs scored, in the
/// baseline's order.
pub(crate) fn pairs(base: &RunResult, other: &RunResult, metric: &str) -> Vec<(f64, f64)> {
    let by_id: std::collections::HashMap<&str, &QueryResult> =
        other.per_query.iter().map(|q| (q.id.as_str(), q)).collect();
    base.per_query
        .iter()
        .filter_map(|q| {
            let a = q.metrics.get(metric)?;
            let b = by_id.get(q.id.as_str())?.metrics.get(metric)?;
            Some((a, b))
        })
        .collect()
}

/// Whether a line is a run record (`format` and `result` at its top level) rather than a bare
/// result. Probed without building a `serde_json::Value`, which would reorder the metrics.
fn is_record(line: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        format: Option<serde::de::IgnoredAny>,
        result: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_str::<Probe>(line).is_ok_and(|p| p.format.is_some() && p.result.is_some())
}

/// Adds `run` to `runs` under `label`, or under `label (2)`, `label (3)`, … when a run already
/// has that label: the same file name in two folders, or one stored run given twice, still
/// needs two names. `compare`, `report` and `serve` label runs alike through it.
pub fn push_labelled(runs: &mut Vec<(String, RunResult)>, label: String, run: RunResult) {
    let mut unique = label.clone();
    let mut n = 2;
    while runs.iter().any(|(l, _)| *l == unique) {
        unique = format!("{label} ({n})");
        n += 1;
    }
    runs.push((unique, run));
}

/// How a report names a stored run: its label (the chunker `eval` compared, the harness case)
/// and its id, or the id alone.
pub fn record_label(record: &crate::runs::RunRecord) -> String {
    match &record.label {
        Some(l) => format!("{l} {}", record.id.as_str()),
        None => record.id.as_str().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Figures, ResultLevel};

    fn run(values: &[f64]) -> RunResult {
        let per_query = values
            .iter()
            .enumerate()
            .map(|(i, v)| QueryResult {
                id: format!("q{i}"),
                metrics: Figures(vec![("rouge_l".into(), *v)]),
                ..QueryResult::default()
            })
            .collect();
        RunResult::from_queries(ResultLevel::Token, vec!["rouge_l".into()], per_query)
    }

    /// Figures of 1e308 are finite, their mean is not: the report refuses the run rather than
    /// draw `inf`.
    #[test]
    fn a_mean_that_is_not_finite_is_refused() {
        let mut huge = run(&[1e308, 1e308, 0.5]);
        // As a run file can hold it: a finite mean beside the figures.
        huge.metrics.0[0].1 = 0.5;
        let err = Report::new(vec![("ok".into(), run(&[0.5, 1.0])), ("huge".into(), huge)])
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("run `huge`: the mean of rouge_l is inf, not a finite number: its per-query figures are too large to add up"),
            "{err}"
        );
        // A stored mean that per-query figures do not back is refused alike.
        let mut stored = run(&[0.5, 1.0]);
        stored.metrics.0[0].1 = f64::NEG_INFINITY;
        let err = Report::new(vec![("s".into(), stored)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("the mean of rouge_l is -inf"), "{err}");
        assert!(Report::new(vec![("ok".into(), run(&[0.5, 1.0]))]).is_ok());
    }

    /// A judge that scored 1 of 5 queries: the report says so beside its mean, in Markdown
    /// and HTML; a mean over every query says nothing more.
    #[test]
    fn a_judged_mean_says_how_many_queries_it_covers() {
        let mut r = run(&[0.5, 1.0, 0.5, 1.0, 0.5]);
        for q in &mut r.per_query {
            q.judges.push(crate::metrics::QueryJudgement {
                metric: "faithfulness".into(),
                query_id: q.id.clone(),
                samples: Vec::new(),
            });
        }
        r.per_query[0]
            .metrics
            .0
            .push(("faithfulness".into(), 1.0 / 3.0));
        r.add_means(&["faithfulness".into()]);
        let report = Report::new(vec![("judged".into(), r)]).unwrap();
        let markdown = report.markdown();
        assert!(
            markdown.contains("| faithfulness | 0.3333 ± 0.0000 over 1 of 5 queries |"),
            "{markdown}"
        );
        assert!(
            markdown.contains("| rouge_l | 0.7000 ± 0.2449 |"),
            "{markdown}"
        );
        assert!(report.html().contains("over 1 of 5 queries</span>"));
    }
}
