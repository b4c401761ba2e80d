//! Prediction-powered inference of a mean (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic,
//! *Science* 382, 2023): the mean of a judged metric corrected by the judge's error on the
//! queries a person labelled, with a normal interval that accounts for both samples.
//!
//! With the judge's score `f` on all `N` queries and the person's label `y` on `n` of them
//! (the labelled queries are among the `N`):
//!
//! ```text
//! θ̂ = mean_N(f) − mean_n(f − y)
//! interval: θ̂ ± z · √(σ²_(y − λf) / n + λ² · σ²_f / (N − n)),   λ = (N − n) / N
//! ```
//!
//! (`σ²` the sample variances, `σ²_(y − λf)` over the labelled queries and `σ²_f` over all N,
//! `z` = 1.959964 for 95%; see [`corrected_mean`] for why). θ̂ is unbiased whatever the judge's
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
    sample_covariance(values, values)
}

/// Sample covariance of the pairs `(x[i], y[i])` (n − 1 in the denominator); 0 for fewer than
/// two pairs.
fn sample_covariance(x: &[f64], y: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    x.iter()
        .zip(y)
        .map(|(a, b)| (a - mx) * (b - my))
        .sum::<f64>()
        / (n - 1.0)
}

/// The corrected mean of `judged` (the judge on every query) given `pairs` of (judge, label) on
/// the labelled ones, which are among the judged queries. `None` when fewer than two queries
/// are labelled (no variance of the judge's error can be estimated), no query is judged, or
/// more are labelled than judged.
///
/// The estimate is `θ̂ = mean_N(f) − mean_n(e)` with `e = f − y`. The labelled queries are a
/// random sample of the N, all of them draws from the same population, so the two means
/// covary: `mean_N(f)` holds the labelled queries' `f`, and
/// `Var θ̂ = σ²_f / N + σ²_e / n − 2 · cov(f, e) / N` (the covariance of `f_i` with `e_j` is
/// `cov(f, e)` for `i = j` and 0 otherwise, over `N · n` pairs of which `n` are the same query).
/// Leaving the covariance out (as if the labelled queries were apart from the N) makes the
/// interval too narrow when many queries are labelled: with all of them labelled θ̂ is the
/// labels' own mean and its variance `σ²_y / N`, not `(σ²_f + σ²_e) / N`.
///
/// The same variance, written over the two disjoint parts (θ̂ = `mean_n(y) + λ · (mean_(N−n)(f)
/// − mean_n(f))`, `λ = (N − n) / N`, the unlabelled queries' mean apart from the labelled ones'),
/// is `σ²_(y − λf) / n + λ² · σ²_f / (N − n)`; that form is what is estimated here (`σ²_(y − λf)`
/// over the labelled queries, `σ²_f` over all N, each with `n − 1` in the denominator), since it
/// cannot come out negative. With every query labelled (`λ = 0`) it is the labels' own `σ²_y /
/// n`. This is `ppi_py`'s `ppi_mean_ci(Y, Yhat, Yhat_unlabeled, lam)` with `Y` the labels,
/// `Yhat` the judge on the labelled queries, `Yhat_unlabeled` the judge on the *other* N − n
/// queries (its unlabelled sample is disjoint from the labelled one, and its N is their count)
/// and `lam = (N − n) / N`, except that `ppi_py` estimates `σ²_f` over its unlabelled sample
/// alone and divides by the count rather than the count less one.
pub fn corrected_mean(judged: &[f64], pairs: &[(f64, f64)]) -> Option<CorrectedMean> {
    if judged.is_empty() || pairs.len() < 2 || pairs.len() > judged.len() {
        return None;
    }
    let big_n = judged.len() as f64;
    let n = pairs.len() as f64;
    let error_mean = pairs.iter().map(|(f, y)| f - y).sum::<f64>() / n;
    let mean = judged.iter().sum::<f64>() / big_n - error_mean;
    let lambda = (big_n - n) / big_n;
    let rectified: Vec<f64> = pairs.iter().map(|(f, y)| y - lambda * f).collect();
    // λ² / (N − n) = (N − n) / N², which stays defined when every query is labelled.
    let variance =
        sample_variance(&rectified) / n + (big_n - n) / (big_n * big_n) * sample_variance(judged);
    let half = Z_95 * variance.sqrt();
    Some(CorrectedMean {
        mean,
        low: mean - half,
        high: mean + half,
        judged: judged.len(),
        labelled: pairs.len(),
    })
}

/// The judge-corrected difference of two runs' means over the same queries, `run − baseline`
/// ([`corrected_difference`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CorrectedDifference {
    /// The baseline's corrected mean over the queries.
    pub baseline: CorrectedMean,
    /// The run's corrected mean over the queries.
    pub run: CorrectedMean,
    /// `run.mean − baseline.mean`.
    pub difference: f64,
    /// Its normal interval, `[low, high]`, at the confidence asked for.
    pub ci: [f64; 2],
    /// Whether both runs are labelled on the same queries, so that the judge's errors are
    /// paired too (see [`corrected_difference`]).
    pub paired_labels: bool,
    /// The two-sided p-value of no difference, from the normal.
    pub p_value: f64,
}

/// The judge-corrected difference `θ̂_run − θ̂_baseline` of two runs scored on the same
/// queries: element `i` of both slices is query `i`'s judge figure and, when a person labelled
/// that run's output, the label. `None` when either run has fewer than two labels or the
/// slices differ in length.
///
/// Each run's θ̂ is [`corrected_mean`]'s. Writing `d = f_run − f_baseline` per query and `e`
/// for a run's judge errors `f − y` on its labelled queries, the difference is
/// `mean_N(d) − (mean(e_run) − mean(e_baseline))`, and its variance is taken as
///
/// ```text
/// σ²_d / N + σ²_(e_run − e_baseline) / n − 2 · cov(d, e_run − e_baseline) / N
///     both runs labelled on the same n queries
/// σ²_d / N + σ²_(e_baseline) / n_baseline + σ²_(e_run) / n_run
///     − 2 · cov(d, e_run) / N + 2 · cov(d, e_baseline) / N       otherwise
/// ```
///
/// (each covariance over the labelled queries it names; the sum floored at 0). The judge part
/// is paired: both runs are judged on the same queries, so a query that is hard for both
/// cancels out (the two means are not independent, and `se_baseline² + se_run²` would
/// overstate or, with a negative correlation, understate the variance). The error part is
/// paired when the labelled queries are the same; when they differ the two error means are
/// treated as independent, which is exact for disjoint label sets and ignores the covariance
/// of the errors on queries labelled in both. The labelled queries are among the `N`, so the
/// judge part and the error part covary: the `cov(d, ·) / N` terms count it, as
/// [`corrected_mean`]'s interval does for one run.
///
/// The interval is `difference ± z · √variance` with `z` the standard normal's quantile of
/// `confidence` (two-sided), and the p-value `P(|Z| ≥ |difference| / √variance)`.
pub fn corrected_difference(
    baseline: &[(f64, Option<f64>)],
    run: &[(f64, Option<f64>)],
    confidence: f64,
) -> Option<CorrectedDifference> {
    if baseline.len() != run.len() {
        return None;
    }
    let d: Vec<f64> = baseline.iter().zip(run).map(|(x, y)| y.0 - x.0).collect();
    // A run's corrected mean, and its errors with the `d` of their queries.
    let split = |queries: &[(f64, Option<f64>)]| {
        let judged: Vec<f64> = queries.iter().map(|q| q.0).collect();
        let pairs: Vec<(f64, f64)> = queries.iter().filter_map(|&(f, y)| Some((f, y?))).collect();
        let errors: (Vec<f64>, Vec<f64>) = queries
            .iter()
            .zip(&d)
            .filter_map(|(&(f, y), &d)| Some((f - y?, d)))
            .unzip();
        corrected_mean(&judged, &pairs).map(|m| (m, errors))
    };
    let (a, (errors_a, d_a)) = split(baseline)?;
    let (b, (errors_b, d_b)) = split(run)?;
    let n = baseline.len() as f64;
    let paired_labels = baseline
        .iter()
        .zip(run)
        .all(|(x, y)| x.1.is_some() == y.1.is_some());
    let error_variance = if paired_labels {
        let e: Vec<f64> = errors_b.iter().zip(&errors_a).map(|(b, a)| b - a).collect();
        sample_variance(&e) / e.len() as f64 - 2.0 * sample_covariance(&d_a, &e) / n
    } else {
        sample_variance(&errors_a) / errors_a.len() as f64
            + sample_variance(&errors_b) / errors_b.len() as f64
            - 2.0 * sample_covariance(&d_b, &errors_b) / n
            + 2.0 * sample_covariance(&d_a, &errors_a) / n
    };
    let se = (sample_variance(&d) / n + error_variance).max(0.0).sqrt();
    let difference = b.mean - a.mean;
    let half = normal_z(confidence) * se;
    let p_value = if se > 0.0 {
        normal_two_sided(difference / se)
    } else {
        f64::from(u8::from(difference == 0.0))
    };
    Some(CorrectedDifference {
        baseline: a,
        run: b,
        difference,
        ci: [difference - half, difference + half],
        paired_labels,
        p_value,
    })
}

/// `P(|Z| ≥ |z|)` for the standard normal.
fn normal_two_sided(z: f64) -> f64 {
    libm::erfc(z.abs() / std::f64::consts::SQRT_2)
}

/// The `z` of a two-sided normal interval at `confidence` in (0, 1): [`normal_two_sided`]
/// inverted by bisection.
fn normal_z(confidence: f64) -> f64 {
    let (mut low, mut high) = (0.0, 40.0);
    for _ in 0..100 {
        let mid = (low + high) / 2.0;
        if normal_two_sided(mid) > 1.0 - confidence {
            low = mid;
        } else {
            high = mid;
        }
    }
    (low + high) / 2.0
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
        // λ = (4 − 2) / 4 = 0.5; y − λf = 0.5, −0.5: σ² = 0.5, over n = 2; σ²_f = 0.25 (1, 1,
        // 0, 1), times (N − n) / N² = 2 / 16: half-width z · √(0.25 + 0.03125).
        let half = Z_95 * (0.5f64 / 2.0 + 0.25 * 2.0 / 16.0).sqrt();
        assert!((c.high - c.mean - half).abs() < 1e-12 && (c.mean - c.low - half).abs() < 1e-12);
        assert_eq!((c.judged, c.labelled), (4, 2));
        // Python, ppi_py's formula over the disjoint parts (λ = 0.5, ddof 1):
        // statistics.variance([0.5, -0.5]) / 2 + 0.25 * statistics.variance([0, 1]) / 2
        // = 0.3125 with σ²_f over the unlabelled two; 0.28125 with it over all four, as here.
        assert!(((c.high - c.mean) / Z_95 - 0.28125f64.sqrt()).abs() < 1e-12);

        // Every query labelled: θ̂ is the labels' mean and its interval theirs, whatever the
        // judge said (σ²_y = 1/3 over 4 queries).
        let all = corrected_mean(
            &[1.0, 0.0, 1.0, 1.0],
            &[(1.0, 1.0), (0.0, 0.0), (1.0, 0.0), (1.0, 1.0)],
        )
        .unwrap();
        assert!((all.mean - 0.5).abs() < 1e-12);
        let half = Z_95 * (1.0f64 / 3.0 / 4.0).sqrt();
        assert!((all.high - all.mean - half).abs() < 1e-12);

        assert_eq!(corrected_mean(&[1.0], &[(1.0, 1.0)]), None);
        assert_eq!(corrected_mean(&[], &[(1.0, 1.0), (0.0, 0.0)]), None);
        // More labelled than judged: the labels cannot be among the judged queries.
        assert_eq!(
            corrected_mean(&[1.0, 0.0], &[(1.0, 1.0), (0.0, 0.0), (1.0, 1.0)]),
            None
        );
    }

    #[test]
    fn a_difference_by_hand() {
        // Baseline: judge 1, 1, 0, 1, people 1, 0 on the first two: θ̂ = 0.75 − 0.5 = 0.25.
        let baseline = [(1.0, Some(1.0)), (1.0, Some(0.0)), (0.0, None), (1.0, None)];
        // The run: judge 1 everywhere, people 1, 1 on the same two: θ̂ = 1.
        let run = [(1.0, Some(1.0)), (1.0, Some(1.0)), (1.0, None), (1.0, None)];
        let c = corrected_difference(&baseline, &run, 0.95).unwrap();
        assert!((c.baseline.mean - 0.25).abs() < 1e-12 && (c.run.mean - 1.0).abs() < 1e-12);
        assert!((c.difference - 0.75).abs() < 1e-12);
        assert!(c.paired_labels);
        // d = 0, 0, 1, 0: σ²_d = 0.25, over N = 4; paired errors 0 − 0, 0 − 1: σ² = 0.5, over
        // n = 2; d is 0 on both labelled queries, so no covariance. Variance 0.0625 + 0.25 =
        // 0.3125.
        let half = Z_95 * 0.3125f64.sqrt();
        assert!((c.ci[0] - (0.75 - half)).abs() < 1e-9 && (c.ci[1] - (0.75 + half)).abs() < 1e-9);
        // Python: math.erfc(0.75 / math.sqrt(0.3125) / math.sqrt(2)).
        assert!((c.p_value - 0.179_712_494_878_999_85).abs() < 1e-12);

        // The run labelled on the other two queries instead (people 1, 0): θ̂ = 1 − 0.5 = 0.5.
        // Errors unpaired: 0.0625 + σ²(0, 1) / 2 + σ²(0, 1) / 2 = 0.5625; on the run's labelled
        // queries d = 1, 0 and its errors 0, 1 covary by −0.5, which adds −2 · −0.5 / 4 = 0.25:
        // 0.8125 for a difference of 0.25.
        let run = [(1.0, None), (1.0, None), (1.0, Some(1.0)), (1.0, Some(0.0))];
        let c = corrected_difference(&baseline, &run, 0.90).unwrap();
        assert!(!c.paired_labels);
        assert!((c.difference - 0.25).abs() < 1e-12);
        // Python: statistics.NormalDist().inv_cdf(0.95),
        // math.erfc(0.25 / math.sqrt(0.8125) / math.sqrt(2)).
        let half = 1.644_853_626_951_471_5 * 0.8125f64.sqrt();
        assert!((c.ci[0] - (0.25 - half)).abs() < 1e-9 && (c.ci[1] - (0.25 + half)).abs() < 1e-9);
        assert!((c.p_value - 0.781_511_294_998_713_3).abs() < 1e-12);

        // Fewer than two labels, or queries that do not line up: no estimate.
        let one = [(1.0, Some(1.0)), (1.0, None), (0.0, None), (1.0, None)];
        assert_eq!(corrected_difference(&baseline, &one, 0.95), None);
        assert_eq!(corrected_difference(&baseline, &run[..3], 0.95), None);
    }

    #[test]
    fn the_normal_quantile_and_tail() {
        assert!((normal_z(0.95) - Z_95).abs() < 1e-12);
        assert!((normal_two_sided(Z_95) - 0.05).abs() < 1e-15);
        assert_eq!(normal_two_sided(0.0), 1.0);
    }

    /// Two runs on the same queries, the run truly better by 0.1 (a query passes the baseline
    /// when u < 0.6 and the run when u < 0.7, so the two are strongly correlated), judged by
    /// the biased judge below (each answer's slip its own) and labelled on the same 60
    /// queries: over 1,000 trials the paired interval covers 0.1 ≈ 95% of the time, and it is
    /// narrower on the whole than the one that takes the two estimates as independent
    /// (√(se_baseline² + se_run²)). (A Python run of the same design: 0.941 and 0.947 over two
    /// seeds, widths 0.82 of the independent ones; without the `cov(d, ·)` terms 0.97.)
    #[test]
    fn the_difference_interval_covers_and_pairing_narrows_it() {
        let mut rng = SplitMix64::new(7);
        let mut uniform = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let (trials, big_n, n) = (1_000, 400, 60);
        let (mut covers, mut paired_width, mut independent_width) = (0, 0.0, 0.0);
        for _ in 0..trials {
            let (mut baseline, mut run) = (Vec::new(), Vec::new());
            for i in 0..big_n {
                let u = uniform();
                let slips = [uniform(), uniform()];
                for ((pass_below, side), slip) in [(0.6, &mut baseline), (0.7, &mut run)]
                    .into_iter()
                    .zip(slips)
                {
                    let label = f64::from(u8::from(u < pass_below));
                    let judge = if label == 1.0 || slip < 0.5 { 1.0 } else { 0.0 };
                    side.push((judge, (i < n).then_some(label)));
                }
            }
            let c = corrected_difference(&baseline, &run, 0.95).unwrap();
            covers += usize::from(c.ci[0] <= 0.1 && 0.1 <= c.ci[1]);
            let half = |m: &CorrectedMean| (m.high - m.mean) / Z_95;
            independent_width += (half(&c.baseline).powi(2) + half(&c.run).powi(2)).sqrt();
            paired_width += (c.ci[1] - c.difference) / Z_95;
        }
        let coverage = covers as f64 / trials as f64;
        assert!((0.93..=0.97).contains(&coverage), "coverage {coverage}");
        let ratio = paired_width / independent_width;
        assert!(ratio < 0.9, "paired widths {ratio} of the independent ones");
    }

    /// Two judges over 1,000 seeded trials at each share of labelled queries n/N ∈ {0.15, 0.5,
    /// 1} (60 and 200 of 400, all of 80): the corrected interval covers the true mean ≈ 95% of
    /// the time, and the plain interval of the judge's mean hardly ever does.
    ///
    /// - *lenient*: the truth is pass with probability 0.6; the judge passes every true pass and
    ///   half the true fails (its mean ≈ 0.8).
    /// - *compressed*: the truth is a grade uniform on [0, 1]; the judge gives 0.3 + 0.4 ·
    ///   grade ± 0.05 (its mean 0.5 too, its spread much less), so that its errors covary
    ///   negatively with its figures.
    ///
    /// Coverage with these seeds, and (in brackets) with the variance σ²_f/N + σ²_e/n that
    /// leaves the covariance of the two means out: lenient 0.930 (0.940), 0.953 (0.971),
    /// 0.944 (0.964); compressed 0.942 (0.914), 0.955 (0.897), 0.951 (0.850).
    #[test]
    fn corrected_interval_covers_at_any_share_labelled() {
        let mut rng = SplitMix64::new(2023);
        let mut uniform = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let trials = 1_000;
        for judge in ["lenient", "compressed"] {
            let truth = if judge == "lenient" { 0.6 } else { 0.5 };
            for (big_n, n) in [(400, 60), (400, 200), (80, 80)] {
                let (mut corrected_covers, mut plain_covers) = (0, 0);
                for _ in 0..trials {
                    let mut judged = Vec::with_capacity(big_n);
                    let mut pairs = Vec::with_capacity(n);
                    for i in 0..big_n {
                        let (label, figure) = if judge == "lenient" {
                            let label = f64::from(uniform() < truth);
                            let passes = label == 1.0 || uniform() < 0.5;
                            (label, f64::from(u8::from(passes)))
                        } else {
                            let grade = uniform();
                            (grade, 0.3 + 0.4 * grade + 0.1 * (uniform() - 0.5))
                        };
                        judged.push(figure);
                        if i < n {
                            pairs.push((figure, label));
                        }
                    }
                    let c = corrected_mean(&judged, &pairs).unwrap();
                    corrected_covers += usize::from(c.low <= truth && truth <= c.high);
                    let mean = judged.iter().sum::<f64>() / big_n as f64;
                    let half = Z_95 * (sample_variance(&judged) / big_n as f64).sqrt();
                    plain_covers += usize::from(mean - half <= truth && truth <= mean + half);
                }
                let coverage = corrected_covers as f64 / trials as f64;
                eprintln!("{judge}, {n} of {big_n} labelled: coverage {coverage}");
                // Binomial(1000, 0.95): sd ≈ 0.007; 0.92–0.975 is 4 sd below and 3.5 above.
                assert!(
                    (0.92..=0.975).contains(&coverage),
                    "{judge}, {n} of {big_n} labelled: corrected coverage {coverage}"
                );
                if judge == "lenient" {
                    assert!(
                        plain_covers < trials / 20,
                        "{n} of {big_n} labelled: plain coverage {plain_covers} of {trials}"
                    );
                }
            }
        }
    }
}
