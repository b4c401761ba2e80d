//! The paired t-test: Student's t distribution through the regularized incomplete beta
//! function, equal to scipy's `ttest_rel` to 1e-9 (checked against a scipy fixture in
//! `tests/lib/stats.rs`).

use serde::{Deserialize, Serialize};

/// A paired t-test's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TTest {
    /// The t statistic, `mean(d) / (sd(d) / √n)` with the sample standard deviation; `0` when
    /// it is undefined (see [`paired_t_test`]), `±∞` when every difference is the same
    /// non-zero value.
    pub t: f64,
    /// Degrees of freedom, `n − 1` (0 for fewer than two differences).
    pub df: usize,
    /// The two-sided p-value.
    pub p_value: f64,
}

/// The two-sided paired t-test of `differences` (treatment − control per query) against a
/// mean of zero, as scipy's `ttest_rel(treatment, control)`.
///
/// Where scipy answers NaN this answers a defined value:
/// - fewer than two differences, or every difference zero: no evidence, `t = 0`, `p = 1`;
/// - every difference the same non-zero value: `t = ±∞`, `p = 0` (scipy agrees).
pub fn paired_t_test(differences: &[f64]) -> TTest {
    let n = differences.len();
    if n < 2 {
        return TTest {
            t: 0.0,
            df: 0,
            p_value: 1.0,
        };
    }
    let nf = n as f64;
    let mean = differences.iter().sum::<f64>() / nf;
    let ss = differences
        .iter()
        .map(|d| (d - mean) * (d - mean))
        .sum::<f64>();
    let df = n - 1;
    let sd = (ss / df as f64).sqrt();
    if sd == 0.0 {
        return if mean == 0.0 {
            TTest {
                t: 0.0,
                df,
                p_value: 1.0,
            }
        } else {
            TTest {
                t: f64::INFINITY.copysign(mean),
                df,
                p_value: 0.0,
            }
        };
    }
    let t = mean / (sd / nf.sqrt());
    TTest {
        t,
        df,
        p_value: student_two_sided(t, df as f64),
    }
}

/// `P(|T| ≥ |t|)` for Student's t with `df` degrees of freedom: `I_x(df/2, 1/2)` with
/// `x = df / (df + t²)`.
pub fn student_two_sided(t: f64, df: f64) -> f64 {
    let t2 = t * t;
    if !t2.is_finite() {
        return 0.0;
    }
    // Both x and 1 − x computed directly, so a small t loses nothing to cancellation.
    let x = df / (df + t2);
    let one_minus_x = t2 / (df + t2);
    incomplete_beta(df / 2.0, 0.5, x, one_minus_x).clamp(0.0, 1.0)
}

/// The regularized incomplete beta function `I_x(a, b)`, given `x` and `1 − x`.
///
/// The continued fraction converges fast for `x < (a + 1) / (a + b + 2)`; above that the
/// symmetry `I_x(a, b) = 1 − I_{1−x}(b, a)` is used instead.
pub fn incomplete_beta(a: f64, b: f64, x: f64, one_minus_x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if one_minus_x <= 0.0 {
        return 1.0;
    }
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - incomplete_beta(b, a, one_minus_x, x);
    }
    let log_front = a * x.ln() + b * one_minus_x.ln() - ln_beta(a, b);
    log_front.exp() * beta_continued_fraction(a, b, x) / a
}

/// `ln B(a, b)`.
fn ln_beta(a: f64, b: f64) -> f64 {
    ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b)
}

/// The continued fraction of `I_x(a, b)` (the even and odd steps of its standard expansion),
/// evaluated by the modified Lentz method.
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-16;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0));
    let mut h = d;
    for m in 1..100_000 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// `ln Γ(x)` for `x > 0`: Lanczos' approximation with g = 7 and nine coefficients (relative
/// error near 1e-15), after the reflection-free shift `Γ(x) = Γ(x + 1) / x` for `x < 0.5`.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    // The published digits, more than an f64 holds: kept as printed so they can be checked.
    #[allow(clippy::excessive_precision)]
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_93,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_13,
        -176.615_029_162_140_59,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_571_6e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return ln_gamma(x + 1.0) - x.ln();
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_gamma_at_known_points() {
        assert!(ln_gamma(1.0).abs() < 1e-14);
        assert!(ln_gamma(2.0).abs() < 1e-14);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-14);
        // ln(10!) = ln 3628800.
        assert!((ln_gamma(11.0) - 3_628_800f64.ln()).abs() < 1e-12);
        // Stirling's series for a large argument.
        let x = 5000.0f64;
        let stirling =
            (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + 1.0 / (12.0 * x)
                - 1.0 / (360.0 * x.powi(3));
        assert!(
            (ln_gamma(x) - stirling).abs() < 1e-9,
            "{}",
            ln_gamma(x) - stirling
        );
    }

    #[test]
    fn student_tails_by_hand() {
        // df = 1 is the Cauchy distribution: P(|T| ≥ 1) = 1/2, P(|T| ≥ √3) = 1/3.
        assert!((student_two_sided(1.0, 1.0) - 0.5).abs() < 1e-14);
        assert!((student_two_sided(3f64.sqrt(), 1.0) - 1.0 / 3.0).abs() < 1e-14);
        // df = 2 has the closed form P(|T| ≥ t) = 1 − t / √(2 + t²).
        for t in [0.1, 1.0, 2.5, 10.0, 100.0] {
            let exact = 1.0 - t / (2.0f64 + t * t).sqrt();
            assert!((student_two_sided(t, 2.0) - exact).abs() < 1e-13, "t = {t}");
        }
        assert_eq!(student_two_sided(0.0, 5.0), 1.0);
        assert_eq!(student_two_sided(f64::INFINITY, 5.0), 0.0);
    }

    #[test]
    fn degenerate_samples_have_defined_results() {
        assert_eq!(paired_t_test(&[]).p_value, 1.0);
        assert_eq!(paired_t_test(&[0.3]).p_value, 1.0);
        let zeros = paired_t_test(&[0.0; 5]);
        assert_eq!((zeros.t, zeros.df, zeros.p_value), (0.0, 4, 1.0));
        let constant = paired_t_test(&[-0.25; 4]);
        assert_eq!((constant.t, constant.p_value), (f64::NEG_INFINITY, 0.0));
    }

    #[test]
    fn hand_worked_t() {
        // d = 1, 2, 3: mean 2, sd 1, t = 2√3, df 2: p = 1 − 2√3/√14.
        let r = paired_t_test(&[1.0, 2.0, 3.0]);
        assert!((r.t - 2.0 * 3f64.sqrt()).abs() < 1e-14);
        assert_eq!(r.df, 2);
        let p = 1.0 - 2.0 * 3f64.sqrt() / 14f64.sqrt();
        assert!((r.p_value - p).abs() < 1e-13);
    }
}
