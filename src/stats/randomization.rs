//! Fisher's randomization test for paired samples: under the null hypothesis each query's
//! difference is as likely to have had the other sign, so the observed mean difference is
//! compared with the mean differences of sign-flipped copies.
//!
//! With at most [`EXACT_MAX_QUERIES`] differences every one of the `2^n` sign patterns is
//! enumerated and the p-value is exact. Above that, `permutations` random patterns are drawn
//! from a seeded [`SplitMix64`] (one bit per query) and the p-value is
//! `(count + 1) / (permutations + 1)`: the observed pattern counts as one of the draws, so the
//! estimate is a valid p-value and never 0.
//!
//! Many columns of differences over the same queries (every metric of every run against the
//! baseline) share the same random patterns, drawn once: each column's test is a randomization
//! test on its own, a column's p-value depends only on its values, `n`, the seed and the
//! number of permutations, and all columns are tested by one matrix product per block of
//! patterns.
//!
//! A flipped sum counts as at least as extreme as the observed one when its absolute value is
//! no smaller than the observed's minus `1e-9 · Σ|d|`: sums that are equal in exact arithmetic
//! (a zero difference flipped, repeated values swapped) then tie whatever order the floating
//! point additions took.

use super::rng::SplitMix64;
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};

/// The largest number of differences whose `2^n` sign patterns are all enumerated.
pub const EXACT_MAX_QUERIES: usize = 20;

/// The default number of random sign patterns.
pub const DEFAULT_PERMUTATIONS: usize = 10_000;

/// The most random sign patterns a [comparison](crate::compare::Comparison) draws: 100 times
/// the default, seconds of work per metric even over tens of thousands of queries.
pub const MAX_PERMUTATIONS: usize = 1_000_000;

/// Patterns per matrix product: 256 × 10,000 queries × 8 bytes = 20 MB at a time.
const BLOCK: usize = 256;

/// A randomization test's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Randomization {
    /// The two-sided p-value.
    pub p_value: f64,
    /// Whether every sign pattern was enumerated (`p_value` is then exact).
    pub exact: bool,
    /// How many patterns were compared: `2^n` when exact, else the random draws.
    pub patterns: u64,
}

/// The two-sided randomization test of one column of paired differences: exact for at most
/// [`EXACT_MAX_QUERIES`] values, else `permutations` random sign patterns seeded by `seed`.
///
/// No differences, or all zero: `p = 1`. `permutations = 0` above the exact limit: `p = 1`
/// (no evidence gathered).
pub fn randomization_test(differences: &[f64], permutations: usize, seed: u64) -> Randomization {
    randomization_tests(&[differences], permutations, seed)[0]
}

/// [`randomization_test`] of several columns over the same queries (every column has the same
/// length), sharing the random sign patterns.
///
/// # Panics
///
/// When the columns differ in length (a programming error: they are paired over queries).
pub fn randomization_tests(
    columns: &[&[f64]],
    permutations: usize,
    seed: u64,
) -> Vec<Randomization> {
    randomization_tests_until(columns, permutations, seed, &AtomicBool::new(false))
}

/// [`randomization_tests`] that stops drawing once `stop` is set; the figures are then
/// meaningless, for a caller that has given up on them.
pub(crate) fn randomization_tests_until(
    columns: &[&[f64]],
    permutations: usize,
    seed: u64,
    stop: &AtomicBool,
) -> Vec<Randomization> {
    let n = columns.first().map_or(0, |c| c.len());
    assert!(
        columns.iter().all(|c| c.len() == n),
        "randomization columns of different lengths"
    );
    if n <= EXACT_MAX_QUERIES {
        columns.iter().map(|c| exact_test(c)).collect()
    } else {
        monte_carlo_until(columns, permutations, seed, stop)
    }
}

fn tolerance(column: &[f64]) -> f64 {
    1e-9 * column.iter().map(|d| d.abs()).sum::<f64>()
}

/// The exact two-sided p-value over all `2^n` sign patterns (`n ≤ 30`).
///
/// # Panics
///
/// For more than 30 differences (2^30 patterns is the most this enumerates).
pub fn exact_test(differences: &[f64]) -> Randomization {
    let n = differences.len();
    assert!(n <= 30, "exact randomization over {n} differences");
    let observed: f64 = differences.iter().sum();
    let bar = observed.abs() - tolerance(differences);
    // Every pattern is a pattern of the first half and one of the second: 2^n pairs of two
    // partial sums, each partial sum computed once.
    let (left, right) = differences.split_at(n / 2);
    let (left, right) = (pattern_sums(left), pattern_sums(right));
    let mut count = 0u64;
    for l in &left {
        count += right.iter().filter(|r| (l + *r).abs() >= bar).count() as u64;
    }
    let patterns: u64 = 1 << n;
    Randomization {
        p_value: count as f64 / patterns as f64,
        exact: true,
        patterns,
    }
}

/// The sum of `values` under each of its `2^len` sign patterns (bit i set: value i negated).
fn pattern_sums(values: &[f64]) -> Vec<f64> {
    let mut sums = vec![0.0];
    for v in values {
        let flipped: Vec<f64> = sums.iter().map(|s| s - v).collect();
        for s in &mut sums {
            *s += v;
        }
        sums.extend(flipped);
    }
    sums
}

/// The Monte-Carlo test of each column with `permutations` seeded random sign patterns,
/// whatever `n` is.
///
/// # Panics
///
/// When the columns differ in length.
pub fn monte_carlo_tests(columns: &[&[f64]], permutations: usize, seed: u64) -> Vec<Randomization> {
    monte_carlo_until(columns, permutations, seed, &AtomicBool::new(false))
}

fn monte_carlo_until(
    columns: &[&[f64]],
    permutations: usize,
    seed: u64,
    stop: &AtomicBool,
) -> Vec<Randomization> {
    let n = columns.first().map_or(0, |c| c.len());
    assert!(
        columns.iter().all(|c| c.len() == n),
        "randomization columns of different lengths"
    );
    let width = columns.len();
    let totals: Vec<f64> = columns.iter().map(|c| c.iter().sum()).collect();
    let bars: Vec<f64> = columns
        .iter()
        .zip(&totals)
        .map(|(c, t)| t.abs() - tolerance(c))
        .collect();
    let mut values = Array2::<f64>::zeros((n, width));
    for (j, c) in columns.iter().enumerate() {
        for (i, d) in c.iter().enumerate() {
            values[[i, j]] = *d;
        }
    }
    // A set bit flips the query's sign: the flipped sum is total − 2 · (sum over set bits).
    let mut counts = vec![0u64; width];
    let mut rng = SplitMix64::new(seed);
    let words = n.div_ceil(64);
    let mut done = 0;
    while done < permutations && !stop.load(Ordering::Relaxed) {
        let rows = BLOCK.min(permutations - done);
        let mut buffer = vec![0.0; rows * n];
        for row in buffer.chunks_exact_mut(n) {
            for w in 0..words {
                let bits = rng.next_u64();
                let start = w * 64;
                for (j, cell) in row[start..(start + 64).min(n)].iter_mut().enumerate() {
                    *cell = (bits >> j & 1) as f64;
                }
            }
        }
        let flips = ArrayView2::from_shape((rows, n), &buffer).expect("rows × n values");
        let mut selected = Array2::<f64>::zeros((rows, width));
        general_mat_mul(1.0, &flips, &values, 0.0, &mut selected);
        for row in selected.rows() {
            for (j, s) in row.iter().enumerate() {
                if (totals[j] - 2.0 * s).abs() >= bars[j] {
                    counts[j] += 1;
                }
            }
        }
        done += rows;
    }
    counts
        .into_iter()
        .zip(columns)
        .map(|(count, column)| Randomization {
            p_value: if column.iter().all(|d| *d == 0.0) {
                1.0
            } else {
                (count + 1) as f64 / (permutations + 1) as f64
            },
            exact: false,
            patterns: permutations as u64,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_by_hand() {
        // d = 1, 2, 3: sums over the 8 patterns are ±6, ±4, ±2, ±0: |sum| ≥ 6 twice.
        let r = exact_test(&[1.0, 2.0, 3.0]);
        assert_eq!((r.p_value, r.exact, r.patterns), (0.25, true, 8));
        // A zero difference flips to itself: every pattern ties.
        assert_eq!(exact_test(&[0.0, 0.0]).p_value, 1.0);
        assert_eq!(exact_test(&[]).p_value, 1.0);
        assert_eq!(exact_test(&[0.7]).p_value, 1.0);
        // Tenths are inexact in binary, yet the patterns that tie in exact arithmetic
        // (0.1 + 0.2 − 0.3 = 0) count as they do for the same values in whole numbers.
        let r = exact_test(&[0.1, 0.2, -0.3, 0.5]);
        let manual = (0..16u32)
            .filter(|m| {
                let s: f64 = [1.0, 2.0, -3.0, 5.0]
                    .iter()
                    .enumerate()
                    .map(|(i, d)| if m >> i & 1 == 1 { -d } else { *d })
                    .sum();
                s.abs() >= 5.0
            })
            .count();
        assert_eq!(r.p_value, manual as f64 / 16.0);
    }

    #[test]
    fn monte_carlo_is_reproducible_and_columns_are_independent_of_each_other() {
        let a: Vec<f64> = (0..100)
            .map(|i| ((i * 37 % 11) as f64 - 4.0) / 10.0)
            .collect();
        let b: Vec<f64> = (0..100)
            .map(|i| ((i * 13 % 7) as f64 - 3.5) / 7.0)
            .collect();
        let both = monte_carlo_tests(&[&a, &b], 1_000, 9);
        assert_eq!(both, monte_carlo_tests(&[&a, &b], 1_000, 9));
        assert_eq!(both[1], monte_carlo_tests(&[&b], 1_000, 9)[0]);
        assert_ne!(both[0], monte_carlo_tests(&[&a], 1_000, 10)[0]);
        assert_eq!(both[0].patterns, 1_000);
        assert!(!both[0].exact);
    }

    #[test]
    fn monte_carlo_degenerate_columns() {
        let zeros = [0.0; 40];
        assert_eq!(monte_carlo_tests(&[&zeros], 100, 1)[0].p_value, 1.0);
        let shifted = [1.0; 40];
        // Every flip but the identity moves the sum: p = 1 / (permutations + 1) at most a few.
        let p = monte_carlo_tests(&[&shifted], 999, 1)[0].p_value;
        assert!(p <= 2.0 / 1000.0, "{p}");
        assert_eq!(monte_carlo_tests(&[&shifted], 0, 1)[0].p_value, 1.0);
    }

    #[test]
    fn small_samples_are_exact() {
        let d: Vec<f64> = (0..EXACT_MAX_QUERIES).map(|i| i as f64 - 5.0).collect();
        let r = randomization_test(&d, 10, 1);
        assert!(r.exact);
        assert_eq!(r.patterns, 1 << EXACT_MAX_QUERIES);
        let d: Vec<f64> = (0..=EXACT_MAX_QUERIES).map(|i| i as f64 - 5.0).collect();
        assert!(!randomization_test(&d, 10, 1).exact);
    }
}
