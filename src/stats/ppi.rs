//! Prediction-powered inference of a mean (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic,
//! *Science* 382, 2023): the mean of a judged metric corrected by the judge's error on the
//! queries a person labelled, with a normal interval that accounts for both samples.
//!
//! With the judge's score `f` on all `N` queries and the person's label `y` on `n` of them:
//!
//! ```text
//! θ̂ = mean_N(f) − mean_n(f − y)
//! interval: θ̂ ± z · √(σ²_f / N + σ²_(f−y) / n)
//! ```
//!
//! (`σ²` the sample variances, `z` = 1.959964 for 95%). θ̂ is unbiased whatever the judge's
//! bias; the interval is narrower than the labels' own mean's when the judge tracks the person.

use serde::{Deserialize, Serialize};

/// The standard normal's 97.5% quantile: the `z` of a two-sided 95% interval.
pub const Z_95: f64 = 1.959_963_984_540_054;

/// A judge-corrected mean with its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CorrectedMean {
    /// θ̂: the judge's mean over every query less its mean error on the labelled ones.
    pub mean: f64,
    /// Lower end of the 95% interval.
    pub low: f64,
    /// Upper end of the 95% interval.
    pub high: f64,
    /// Queries the judge scored (`N`).
    pub judged: usize,
    /// Of those, queries a person labelled (`n`).
    pub labelled: usize,
}

/// Sample variance (n − 1 in the denominator); 0 for fewer than two values.
fn sample_variance(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)
}

/// The corrected mean of `judged` (the judge on every query) given `pairs` of (judge, label) on
/// the labelled ones. `None` when fewer than two queries are labelled (no variance of the
/// judge's error can be estimated) or no query is judged.
pub fn corrected_mean(judged: &[f64], pairs: &[(f64, f64)]) -> Option<CorrectedMean> {
    if judged.is_empty() || pairs.len() < 2 {
        return None;
    }
    let big_n = judged.len() as f64;
    let n = pairs.len() as f64;
    let errors: Vec<f64> = pairs.iter().map(|(f, y)| f - y).collect();
    let mean = judged.iter().sum::<f64>() / big_n - errors.iter().sum::<f64>() / n;
    let half = Z_95 * (sample_variance(judged) / big_n + sample_variance(&errors) / n).sqrt();
    Some(CorrectedMean {
        mean,
        low: mean - half,
        high: mean + half,
        judged: judged.len(),
        labelled: pairs.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::SplitMix64;

    #[test]
    fn by_hand() {
        // Judge 1, 1, 0, 1 (mean 0.75); labelled: (1, 1), (1, 0): error mean 0.5 → θ̂ = 0.25.
        let c = corrected_mean(&[1.0, 1.0, 0.0, 1.0], &[(1.0, 1.0), (1.0, 0.0)]).unwrap();
        assert!((c.mean - 0.25).abs() < 1e-12);
        // σ²_f = 0.25, σ²_err = 0.5: half-width z · √(0.25/4 + 0.5/2).
        let half = Z_95 * (0.25f64 / 4.0 + 0.5 / 2.0).sqrt();
        assert!((c.high - c.mean - half).abs() < 1e-12 && (c.mean - c.low - half).abs() < 1e-12);
        assert_eq!((c.judged, c.labelled), (4, 2));
        assert_eq!(corrected_mean(&[1.0], &[(1.0, 1.0)]), None);
        assert_eq!(corrected_mean(&[], &[(1.0, 1.0), (0.0, 0.0)]), None);
    }

    /// A biased judge: the truth is pass with probability 0.6; the judge passes every true pass
    /// and 50% of true fails, so its mean is ≈ 0.8. Over 1,000 seeded trials (N = 400 judged,
    /// n = 60 labelled) the corrected interval covers 0.6 ≈ 95% of the time; the plain
    /// interval of the judge's mean never does.
    #[test]
    fn corrected_interval_covers_where_the_biased_judges_does_not() {
        let truth = 0.6;
        let mut rng = SplitMix64::new(2023);
        let mut uniform = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let (trials, big_n, n) = (1_000, 400, 60);
        let (mut corrected_covers, mut plain_covers) = (0, 0);
        for _ in 0..trials {
            let mut judged = Vec::with_capacity(big_n);
            let mut pairs = Vec::with_capacity(n);
            for i in 0..big_n {
                let label = f64::from(uniform() < truth);
                let judge = if label == 1.0 || uniform() < 0.5 {
                    1.0
                } else {
                    0.0
                };
                judged.push(judge);
                if i < n {
                    pairs.push((judge, label));
                }
            }
            let c = corrected_mean(&judged, &pairs).unwrap();
            corrected_covers += usize::from(c.low <= truth && truth <= c.high);
            let mean = judged.iter().sum::<f64>() / big_n as f64;
            let half = Z_95 * (sample_variance(&judged) / big_n as f64).sqrt();
            plain_covers += usize::from(mean - half <= truth && truth <= mean + half);
        }
        let coverage = corrected_covers as f64 / trials as f64;
        // Binomial(1000, 0.95): sd ≈ 0.007; 0.93–0.97 is about 3 sd either side.
        assert!(
            (0.93..=0.97).contains(&coverage),
            "corrected coverage {coverage}"
        );
        assert!(
            plain_covers < trials / 100,
            "plain coverage {plain_covers} of {trials}"
        );
    }
}
