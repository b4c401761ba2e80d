//! How runs are compared.

use crate::stats::{Correction, DEFAULT_PERMUTATIONS, DEFAULT_RESAMPLES};
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
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fisher" => Ok(PairedTest::Fisher),
            "student" => Ok(PairedTest::Student),
            _ => Err(format!("unknown test `{s}` (expected fisher or student)")),
        }
    }
}

/// The settings of a [`Comparison`](super::Comparison); `Default` is what `rag-eval compare`
/// does without options.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareOptions {
    /// The paired test (default Fisher's randomization test).
    pub test: PairedTest,
    /// Random sign patterns of the randomization test (default 10,000).
    pub permutations: usize,
    /// Bootstrap resamples of the confidence intervals (default 10,000).
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
    /// How many most-worsened and most-improved queries to list per metric and run (default 5).
    pub top: usize,
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
            top: 5,
        }
    }
}
