//! The statistics of `rag-eval compare` against their references: scipy's `ttest_rel` and
//! ranx's Fisher randomization test (`tests/fixtures/stats/stats.json`, written by
//! `tests/fixtures/stats/generate.py`), exact enumeration, and a coverage simulation.

use rag_eval::stats::{
    bootstrap_ci, exact_test, monte_carlo_tests, paired_t_test, SplitMix64, EXACT_MAX_QUERIES,
};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    ranx_permutations: usize,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    control: Vec<f64>,
    treatment: Vec<f64>,
    scipy_t: f64,
    scipy_p: f64,
    ranx_fisher_p: Option<f64>,
}

impl Case {
    fn differences(&self) -> Vec<f64> {
        self.treatment
            .iter()
            .zip(&self.control)
            .map(|(t, c)| t - c)
            .collect()
    }
}

fn fixture() -> Fixture {
    let text = std::fs::read_to_string("tests/fixtures/stats/stats.json").unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn t_test_equals_scipy_ttest_rel_to_1e_9() {
    let fixture = fixture();
    assert!(fixture.cases.len() >= 30);
    for case in &fixture.cases {
        let r = paired_t_test(&case.differences());
        assert_eq!(r.df, case.control.len() - 1, "{}", case.name);
        assert!(
            (r.p_value - case.scipy_p).abs() <= 1e-9,
            "{}: p {} vs scipy {}",
            case.name,
            r.p_value,
            case.scipy_p
        );
        assert!(
            (r.t - case.scipy_t).abs() <= 1e-9 * case.scipy_t.abs().max(1.0),
            "{}: t {} vs scipy {}",
            case.name,
            r.t,
            case.scipy_t
        );
    }
}

/// Four standard deviations of the difference of two independent Monte-Carlo estimates of
/// `p` from `n` draws each, plus the `1/n` that the `(count + 1) / (n + 1)` estimator and
/// ranx's `count / n` can differ by.
fn monte_carlo_bound(p: f64, n: usize) -> f64 {
    4.0 * (2.0 * p * (1.0 - p) / n as f64).sqrt() + 1.0 / n as f64
}

#[test]
fn randomization_agrees_with_ranx_within_monte_carlo_error() {
    let fixture = fixture();
    let n = fixture.ranx_permutations;
    let mut compared = 0;
    for case in &fixture.cases {
        let Some(ranx) = case.ranx_fisher_p else {
            continue;
        };
        let d = case.differences();
        let ours = monte_carlo_tests(&[&d], n, 42)[0].p_value;
        let bound = monte_carlo_bound((ours + ranx) / 2.0, n);
        assert!(
            (ours - ranx).abs() <= bound,
            "{}: ours {ours} vs ranx {ranx} (bound {bound})",
            case.name
        );
        compared += 1;
    }
    assert!(compared >= 15, "{compared}");
}

#[test]
fn randomization_converges_to_exact_enumeration_on_small_samples() {
    let fixture = fixture();
    let mut samples: Vec<Vec<f64>> = fixture
        .cases
        .iter()
        .filter(|c| c.control.len() >= 5 && c.control.len() <= EXACT_MAX_QUERIES)
        .map(Case::differences)
        .collect();
    // Metric-like differences with ties, and one with a clear effect.
    samples.push(vec![
        0.5, 0.0, 0.25, -0.25, 1.0, 0.0, 0.5, 0.5, -0.5, 0.25, 0.0, 0.75,
    ]);
    samples.push(vec![0.2, 0.3, 0.1, 0.25, 0.4, -0.05, 0.3, 0.2, 0.35, 0.1]);
    let draws = 100_000;
    for d in &samples {
        let exact = exact_test(d).p_value;
        let mc = monte_carlo_tests(&[d], draws, 7)[0].p_value;
        // One estimate against the truth: half the variance of two estimates.
        let bound = 4.0 * (exact * (1.0 - exact) / draws as f64).sqrt() + 1.0 / draws as f64;
        assert!(
            (mc - exact).abs() <= bound,
            "{d:?}: monte carlo {mc} vs exact {exact}"
        );
    }
}

/// The exact test by the definition: every sign pattern, summed directly.
fn exact_by_definition(d: &[f64]) -> f64 {
    let observed: f64 = d.iter().sum();
    let tol = 1e-9 * d.iter().map(|x| x.abs()).sum::<f64>();
    let patterns = 1u32 << d.len();
    let count = (0..patterns)
        .filter(|m| {
            let s: f64 = d
                .iter()
                .enumerate()
                .map(|(i, x)| if m >> i & 1 == 1 { -x } else { *x })
                .sum();
            s.abs() >= observed.abs() - tol
        })
        .count();
    count as f64 / f64::from(patterns)
}

proptest::proptest! {
    #[test]
    fn exact_test_matches_its_definition(
        d in proptest::collection::vec(
            proptest::sample::select(vec![-1.0, -0.5, -0.25, 0.0, 0.1, 0.2, 0.3, 0.5, 1.0]),
            0..12,
        )
    ) {
        proptest::prop_assert_eq!(exact_test(&d).p_value, exact_by_definition(&d));
    }
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut SplitMix64) -> f64 {
    let u1 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let u2 = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * (1.0 - u1).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

#[test]
fn bootstrap_interval_covers_the_true_mean_about_95_percent_of_the_time() {
    // 1,000 simulated comparisons of 200 queries whose true mean difference is 0.1; each
    // interval from 1,000 resamples. A 95% interval covers 0.1 in Binomial(1000, 0.95) of
    // them: standard deviation √(0.95 · 0.05 / 1000) = 0.0069. The percentile interval runs a
    // little narrow at small n (the plug-in standard deviation, ≈ 94.8% expected at 200
    // queries), so the band is 0.95 ± 0.025: more than 3.5 standard deviations either side.
    const QUERIES: usize = 200;
    let replications = 1_000u32;
    let mut rng = SplitMix64::new(2024);
    let mut covered = 0u32;
    for r in 0..replications {
        let d: Vec<f64> = (0..QUERIES).map(|_| 0.1 + 0.3 * normal(&mut rng)).collect();
        let (lo, hi) = bootstrap_ci(&d, 1_000, u64::from(r) + 1_000_000, 0.95);
        if lo <= 0.1 && 0.1 <= hi {
            covered += 1;
        }
    }
    let coverage = f64::from(covered) / f64::from(replications);
    assert!((coverage - 0.95).abs() <= 0.025, "coverage {coverage}");
}
