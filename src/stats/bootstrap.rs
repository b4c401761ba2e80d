//! The paired bootstrap confidence interval of a mean difference: the queries are resampled
//! with replacement, each resample's mean difference computed, and the interval is the
//! percentile interval of those means (quantiles interpolated linearly between order
//! statistics, numpy's default).
//!
//! Several columns over the same queries share the resamples, drawn once from a seeded
//! [`SplitMix64`]; as for [`randomization_tests`](super::randomization_tests), a column's
//! interval depends only on its values, the seed and the number of resamples, and all columns
//! are resampled by one matrix product per block (resample counts × differences).

use super::rng::SplitMix64;
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2};
use std::sync::atomic::{AtomicBool, Ordering};

/// The default number of bootstrap resamples.
pub const DEFAULT_RESAMPLES: usize = 10_000;

/// The most bootstrap resamples a [comparison](crate::compare::Comparison) draws: 10 times the
/// default. Every resample's mean is kept per column until the quantiles are taken, so this
/// bounds memory (8 bytes × resamples × metrics × runs).
pub const MAX_RESAMPLES: usize = 100_000;

/// Resamples per matrix product.
const BLOCK: usize = 256;

/// The `level` (e.g. 0.95) percentile bootstrap interval of the mean of `differences`, from
/// `resamples` resamples seeded by `seed`.
///
/// No differences: `(0, 0)`. One difference, or no resamples: the observed mean at both ends.
pub fn bootstrap_ci(differences: &[f64], resamples: usize, seed: u64, level: f64) -> (f64, f64) {
    bootstrap_cis(&[differences], resamples, seed, level)[0]
}

/// [`bootstrap_ci`] of several columns over the same queries, sharing the resamples.
///
/// # Panics
///
/// When the columns differ in length, or `level` is not inside `(0, 1)`.
pub fn bootstrap_cis(
    columns: &[&[f64]],
    resamples: usize,
    seed: u64,
    level: f64,
) -> Vec<(f64, f64)> {
    bootstrap_cis_until(columns, resamples, seed, level, &AtomicBool::new(false))
}

/// [`bootstrap_cis`] that stops resampling once `stop` is set; the intervals are then
/// meaningless, for a caller that has given up on them.
pub(crate) fn bootstrap_cis_until(
    columns: &[&[f64]],
    resamples: usize,
    seed: u64,
    level: f64,
    stop: &AtomicBool,
) -> Vec<(f64, f64)> {
    assert!(level > 0.0 && level < 1.0, "confidence level {level}");
    let n = columns.first().map_or(0, |c| c.len());
    assert!(
        columns.iter().all(|c| c.len() == n),
        "bootstrap columns of different lengths"
    );
    if n == 0 {
        return vec![(0.0, 0.0); columns.len()];
    }
    let means: Vec<f64> = columns
        .iter()
        .map(|c| c.iter().sum::<f64>() / n as f64)
        .collect();
    if n == 1 || resamples == 0 {
        return means.into_iter().map(|m| (m, m)).collect();
    }
    let width = columns.len();
    let mut values = Array2::<f64>::zeros((n, width));
    for (j, c) in columns.iter().enumerate() {
        for (i, d) in c.iter().enumerate() {
            values[[i, j]] = *d / n as f64;
        }
    }
    let mut draws: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); width];
    let mut rng = SplitMix64::new(seed);
    let mut done = 0;
    while done < resamples {
        if stop.load(Ordering::Relaxed) {
            return means.into_iter().map(|m| (m, m)).collect();
        }
        let rows = BLOCK.min(resamples - done);
        let mut buffer = vec![0.0; rows * n];
        for row in buffer.chunks_exact_mut(n) {
            for _ in 0..n {
                row[rng.below(n)] += 1.0;
            }
        }
        let counts = ArrayView2::from_shape((rows, n), &buffer).expect("rows × n values");
        let mut resampled = Array2::<f64>::zeros((rows, width));
        general_mat_mul(1.0, &counts, &values, 0.0, &mut resampled);
        for row in resampled.rows() {
            for (j, m) in row.iter().enumerate() {
                draws[j].push(*m);
            }
        }
        done += rows;
    }
    let tail = (1.0 - level) / 2.0;
    draws
        .into_iter()
        .map(|mut d| {
            d.sort_by(f64::total_cmp);
            (quantile(&d, tail), quantile(&d, 1.0 - tail))
        })
        .collect()
}

/// The `q` quantile of sorted values, interpolated linearly between order statistics.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let fraction = position - below as f64;
    sorted[below] + (sorted[above] - sorted[below]) * fraction
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_as_numpy() {
        // numpy.quantile([1, 2, 3, 4], [0.025, 0.5, 0.975]) = [1.075, 2.5, 3.925].
        let v = [1.0, 2.0, 3.0, 4.0];
        assert!((quantile(&v, 0.025) - 1.075).abs() < 1e-12);
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert!((quantile(&v, 0.975) - 3.925).abs() < 1e-12);
        assert_eq!(quantile(&v, 1.0), 4.0);
    }

    #[test]
    fn degenerate_samples() {
        assert_eq!(bootstrap_ci(&[], 100, 1, 0.95), (0.0, 0.0));
        assert_eq!(bootstrap_ci(&[0.4], 100, 1, 0.95), (0.4, 0.4));
        assert_eq!(bootstrap_ci(&[0.0; 30], 100, 1, 0.95), (0.0, 0.0));
        let c = bootstrap_ci(&[0.25; 30], 100, 1, 0.95);
        assert!(
            (c.0 - 0.25).abs() < 1e-15 && (c.1 - 0.25).abs() < 1e-15,
            "{c:?}"
        );
    }

    #[test]
    fn interval_brackets_the_mean_and_is_reproducible() {
        let d: Vec<f64> = (0..200)
            .map(|i| ((i * 31 % 17) as f64 - 6.0) / 10.0)
            .collect();
        let mean = d.iter().sum::<f64>() / d.len() as f64;
        let (lo, hi) = bootstrap_ci(&d, 2_000, 3, 0.95);
        assert!(lo < mean && mean < hi, "{lo} {mean} {hi}");
        assert_eq!(bootstrap_ci(&d, 2_000, 3, 0.95), (lo, hi));
        // Shared resamples: a column's interval does not depend on its neighbours.
        let other: Vec<f64> = d.iter().map(|x| x * x).collect();
        assert_eq!(bootstrap_cis(&[&other, &d], 2_000, 3, 0.95)[1], (lo, hi));
        // The normal approximation: half-width ≈ 1.96 · sd / √n, within 15%.
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / d.len() as f64).sqrt();
        let expected = 1.96 * sd / (d.len() as f64).sqrt();
        let half = (hi - lo) / 2.0;
        assert!((half / expected - 1.0).abs() < 0.15, "{half} vs {expected}");
    }
}
