//! Why runs cannot be compared.

/// Why a comparison could not be made. Messages name the runs (by label), hashes and queries
/// involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    /// Fewer than 2 or more than 10 runs.
    #[error("compare takes 2 to 10 runs (the first is the baseline), got {0}")]
    RunCount(usize),
    /// Two runs were made on different datasets.
    #[error(
        "run `{run}` was made on dataset {run_hash}, the baseline `{baseline}` on {baseline_hash}: \
         compare runs of one dataset, or allow different datasets to compare their shared query ids"
    )]
    DifferentDatasets {
        /// The baseline's label.
        baseline: String,
        /// The baseline's dataset hash.
        baseline_hash: String,
        /// The other run's label.
        run: String,
        /// Its dataset hash.
        run_hash: String,
    },
    /// Two runs scored different queries.
    #[error(
        "run `{run}` scored other queries than the baseline `{baseline}`: {only_baseline} only in \
         the baseline (e.g. `{example}`), {only_run} only in `{run}`; allow different datasets to \
         compare the shared query ids"
    )]
    DifferentQueries {
        /// The baseline's label.
        baseline: String,
        /// The other run's label.
        run: String,
        /// Queries only the baseline has.
        only_baseline: usize,
        /// Queries only the other run has.
        only_run: usize,
        /// One query id in one run and not the other.
        example: String,
    },
    /// No query is in every run.
    #[error("the runs have no query id in common")]
    NoSharedQueries,
    /// No metric is in every run.
    #[error("the runs have no metric in common (the baseline `{baseline}` has {metrics})")]
    NoSharedMetrics {
        /// The baseline's label.
        baseline: String,
        /// The baseline's metric names, comma-separated.
        metrics: String,
    },
    /// Every metric the runs share is defined differently in some run (another level, cut-off
    /// or span mode).
    #[error(
        "the runs share no metric defined alike, so none can be compared: {metrics}; compare runs \
         of one level, cut-off k and span mode"
    )]
    NoComparableMetrics {
        /// Each shared metric with its definition per run.
        metrics: String,
    },
    /// A query id appears twice in one run.
    #[error("run `{run}` has query `{query}` twice")]
    DuplicateQuery {
        /// The run's label.
        run: String,
        /// The repeated id.
        query: String,
    },
    /// A query has a figure that is not a finite number for a compared metric.
    #[error("run `{run}`, query `{query}`: {metric} is {problem}")]
    BadFigure {
        /// The run's label.
        run: String,
        /// The query id.
        query: String,
        /// The metric.
        metric: String,
        /// `NaN` or `infinite`.
        problem: &'static str,
    },
    /// A figure the comparison computed from finite per-query figures is not finite: they are
    /// too large to add up (1e308 twice is infinite), so no mean, interval or test of them
    /// means anything.
    #[error(
        "run `{run}`: the {what} of {metric} is {value}, not a finite number: its per-query \
         figures are too large to add up, so {metric} cannot be compared"
    )]
    NonFiniteFigure {
        /// The run's label.
        run: String,
        /// The metric (`… over `label` queries` within a difficulty label).
        metric: String,
        /// Which figure, in words: `mean`, `standard deviation`, `difference from the
        /// baseline`, `interval of the difference` or their judge-corrected forms.
        what: &'static str,
        /// The figure (`inf`, `-inf` or `NaN`).
        value: f64,
    },
    /// Judge correction was asked for and no compared metric has a person's label in any run.
    #[error(
        "judge-corrected comparison: no compared query of any run carries a person's label; \
         label the runs' outputs (`--labels FILE`) or compare without judge correction"
    )]
    NoLabels,
    /// Judge correction was asked for and a run has fewer than two labels of a metric that
    /// other runs have labels of, so that metric could not be judged on corrected figures.
    #[error(
        "judge-corrected comparison: run `{run}` has {labelled} labelled of the {queries} \
         compared queries of {metric}, and 2 are needed; label its outputs (a label is of one \
         run's output and does not carry over to another's) or leave the metric out"
    )]
    TooFewLabels {
        /// The run's label.
        run: String,
        /// The metric.
        metric: String,
        /// The run's labels of it among the compared queries.
        labelled: usize,
        /// The compared queries with a figure of it in every run.
        queries: usize,
    },
    /// An option is out of range.
    #[error("invalid comparison option: {0}")]
    Option(String),
    /// The caller stopped the comparison before it was done.
    #[error("the comparison was stopped before it was done")]
    Cancelled,
}
