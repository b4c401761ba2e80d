//! How runs are compared.

use super::CompareError;
use crate::stats::{
    Correction, DEFAULT_PERMUTATIONS, DEFAULT_RESAMPLES, MAX_PERMUTATIONS, MAX_RESAMPLES,
};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The paired test of each metric's mean difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PairedTest {
    /// Fisher's randomization test (sign flips; exact up to 20 queries).
    #[default]
    Fisher,
    /// The paired t-test.
    Student,
}

impl PairedTest {
    /// `fisher` or `student`.
    pub fn as_str(self) -> &'static str {
        match self {
            PairedTest::Fisher => "fisher",
            PairedTest::Student => "student",
        }
    }
}

impl fmt::Display for PairedTest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PairedTest {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self, crate::Error> {
        match s {
            "fisher" => Ok(PairedTest::Fisher),
            "student" => Ok(PairedTest::Student),
            _ => Err(crate::Error::Unknown {
                what: "test",
                given: s.to_owned(),
                known: "expected fisher or student".into(),
            }),
        }
    }
}

/// The settings of a [`Comparison`](super::Comparison); `Default` is what `rag-eval compare`
/// does without options.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareOptions {
    /// The paired test (default Fisher's randomization test).
    pub test: PairedTest,
    /// Random sign patterns of the randomization test (default 10,000, at most
    /// [`MAX_PERMUTATIONS`], 1,000,000).
    pub permutations: usize,
    /// Bootstrap resamples of the confidence intervals (default 10,000, at most
    /// [`MAX_RESAMPLES`], 100,000).
    pub resamples: usize,
    /// Seed of the permutations and resamples (default 42).
    pub seed: u64,
    /// Correction of the p-values across metrics × runs (default Holm).
    pub correction: Correction,
    /// Confidence level of the intervals (default 0.95).
    pub confidence: f64,
    /// Compare runs of different datasets (or different query sets) on their shared query ids
    /// instead of refusing (default false).
    pub allow_different_datasets: bool,
    /// Judge-correct the labelled metrics (default false): each run's mean of a metric people
    /// labelled becomes its prediction-powered estimate and each difference from the baseline
    /// gets a judge-corrected interval and test ([`Difference::judge_corrected`](super::Difference::judge_corrected)),
    /// which [`Comparison::regressions`](super::Comparison::regressions) then reads. Labels are
    /// each run's own ([`RunResult::labels`](crate::metrics::RunResult::labels)).
    pub judge_corrected: bool,
    /// How many most-worsened and most-improved queries to list per metric and run (default 5).
    pub top: usize,
}

impl CompareOptions {
    /// Refuses a confidence level outside `(0, 1)` and more permutations or resamples than
    /// [`MAX_PERMUTATIONS`] and [`MAX_RESAMPLES`].
    pub fn check(&self) -> Result<(), CompareError> {
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(CompareError::Option(format!(
                "confidence {} is not between 0 and 1",
                self.confidence
            )));
        }
        if self.permutations > MAX_PERMUTATIONS {
            return Err(CompareError::Option(format!(
                "permutations {} is more than the {MAX_PERMUTATIONS} allowed",
                self.permutations
            )));
        }
        if self.resamples > MAX_RESAMPLES {
            return Err(CompareError::Option(format!(
                "resamples {} is more than the {MAX_RESAMPLES} allowed",
                self.resamples
            )));
        }
        Ok(())
    }
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            test: PairedTest::Fisher,
            permutations: DEFAULT_PERMUTATIONS,
            resamples: DEFAULT_RESAMPLES,
            seed: 42,
            correction: Correction::Holm,
            confidence: 0.95,
            allow_different_datasets: false,
            judge_corrected: false,
            top: 5,
        }
    }
}
