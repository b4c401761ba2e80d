//! Statistics for comparing runs over the same queries: paired tests of a mean difference,
//! its bootstrap confidence interval, multiple-comparison corrections and win/tie/loss counts;
//! and for checking a judge against people: agreement (Cohen's κ, Spearman's ρ, Kendall's τ-b)
//! and the judge-corrected mean of prediction-powered inference.
//!
//! Every function takes per-query differences (run − baseline) and returns a defined,
//! NaN-free result for every input without NaN, including no queries, one query and all
//! differences zero (each function documents what it returns then). Random draws come from a
//! seeded generator: the same input and seed give the same p-values and intervals.
//!
//! ```
//! use rag_eval::stats::{bootstrap_ci, paired_t_test, randomization_test, Correction};
//!
//! let differences = [0.2, 0.1, 0.0, 0.3, -0.1, 0.2, 0.25, 0.15];
//! let fisher = randomization_test(&differences, 10_000, 42);
//! assert!(fisher.exact); // 8 queries: all 256 sign patterns enumerated
//! let student = paired_t_test(&differences);
//! let (low, high) = bootstrap_ci(&differences, 10_000, 42, 0.95);
//! assert!(low > 0.0 && high < 0.3);
//! let adjusted = Correction::Holm.apply(&[fisher.p_value, student.p_value]);
//! assert!(adjusted[0] >= fisher.p_value);
//! ```

mod agreement;
mod bootstrap;
mod correction;
mod ppi;
mod randomization;
mod rng;
mod student;
mod win_tie_loss;

pub use agreement::{average_ranks, bootstrap_statistic, cohen_kappa, kendall_tau_b, spearman_rho};
pub(crate) use bootstrap::bootstrap_cis_until;
pub use bootstrap::{bootstrap_ci, bootstrap_cis, quantile, DEFAULT_RESAMPLES, MAX_RESAMPLES};
pub use correction::{bonferroni, holm, Correction};
pub use ppi::{corrected_difference, corrected_mean, CorrectedDifference, CorrectedMean, Z_95};
pub(crate) use randomization::randomization_tests_until;
pub use randomization::{
    exact_test, monte_carlo_tests, randomization_test, randomization_tests, Randomization,
    DEFAULT_PERMUTATIONS, EXACT_MAX_QUERIES, MAX_PERMUTATIONS,
};
pub use rng::SplitMix64;
pub use student::{incomplete_beta, ln_gamma, paired_t_test, student_two_sided, TTest};
pub use win_tie_loss::{WinTieLoss, TIE_TOLERANCE};
