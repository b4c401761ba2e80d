//! Comparing 2–10 runs of the same dataset with honest statistics: [`Comparison`].
//!
//! The first run is the baseline. For each metric every other run gets its mean difference
//! from the baseline with a paired bootstrap confidence interval, a paired test (Fisher's
//! randomization test by default, the t-test on request) whose p-values are corrected across
//! metrics × runs (Holm by default), and win/tie/loss counts over queries; the queries that
//! changed most are listed with their text, and the same is done per difficulty label.
//! [`Comparison::regressions`] is the gate: the metrics significantly worse than the baseline.
//! With judge correction ([`CompareOptions::judge_corrected`]) a metric people labelled is
//! judged on its prediction-powered figures instead ([`JudgeCorrected`]).
//! The statistics are in [`crate::stats`].

mod comparison;
mod error;
mod options;
mod text;

pub use comparison::{
    ComparedRun, Comparison, Difference, DifficultyComparison, JudgeCorrected, MetricComparison,
    QueryChange, RedefinedMetric, Regression, RunFigure, UntestedMetric, MAX_RUNS,
};
pub use error::CompareError;
pub use options::{CompareOptions, PairedTest};
