//! The intervals a report draws: 95% intervals of a mean and of a paired difference of means,
//! by the normal approximation (mean ± 1.96 standard errors, sample standard deviation). A
//! picture of the spread, not a test: `rag-eval compare` does the significance testing.

/// A closed interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

const Z95: f64 = 1.959_963_984_540_054;

/// Mean and 95% interval of `values`; no interval with fewer than two values.
pub(crate) fn mean_interval(values: &[f64]) -> (f64, Option<Interval>) {
    let n = values.len();
    if n == 0 {
        return (0.0, None);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, None);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = Z95 * (var / n as f64).sqrt();
    (
        mean,
        Some(Interval {
            lo: mean - half,
            hi: mean + half,
        }),
    )
}

/// Mean of the differences `other − base` over paired values, with its 95% interval.
pub(crate) fn paired_difference(pairs: &[(f64, f64)]) -> (f64, Option<Interval>) {
    let diffs: Vec<f64> = pairs.iter().map(|(b, o)| o - b).collect();
    mean_interval(&diffs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_by_hand() {
        // mean 2, sample variance 1, n 4: half-width 1.96 · 1/2.
        let (m, ci) = mean_interval(&[1.0, 2.0, 3.0, 2.0]);
        let ci = ci.unwrap();
        assert_eq!(m, 2.0);
        let sd = (2.0f64 / 3.0).sqrt();
        assert!((ci.hi - (2.0 + Z95 * sd / 2.0)).abs() < 1e-12);
        assert!((ci.lo - (2.0 - Z95 * sd / 2.0)).abs() < 1e-12);
        assert_eq!(mean_interval(&[0.5]), (0.5, None));
        assert_eq!(mean_interval(&[]), (0.0, None));
        let (d, ci) = paired_difference(&[(0.0, 1.0), (0.5, 0.5), (1.0, 1.0)]);
        assert!((d - 1.0 / 3.0).abs() < 1e-12);
        assert!(ci.unwrap().lo < d && d < ci.unwrap().hi);
    }
}
