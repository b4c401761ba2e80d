//! The agreement statistics of `rag-eval align` against their references: scikit-learn's
//! `cohen_kappa_score` and scipy's `spearmanr` and `kendalltau` (variant b)
//! (`tests/fixtures/agreement/agreement.json`, written by
//! `tests/fixtures/agreement/generate.py`), and against naive definitions on random input.

use proptest::prelude::*;
use rag_eval::stats::{cohen_kappa, kendall_tau_b, spearman_rho};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    categorical: Vec<Categorical>,
    numeric: Vec<Numeric>,
}

#[derive(Deserialize)]
struct Categorical {
    name: String,
    judge: Vec<usize>,
    person: Vec<usize>,
    kappa: Option<f64>,
}

#[derive(Deserialize)]
struct Numeric {
    name: String,
    judge: Vec<f64>,
    person: Vec<f64>,
    spearman: Option<f64>,
    kendall_tau_b: Option<f64>,
}

fn fixture() -> Fixture {
    let text = std::fs::read_to_string("tests/fixtures/agreement/agreement.json").unwrap();
    serde_json::from_str(&text).unwrap()
}

fn close(ours: Option<f64>, theirs: Option<f64>, what: &str) {
    match (ours, theirs) {
        (Some(a), Some(b)) => assert!((a - b).abs() <= 1e-9, "{what}: {a} vs {b}"),
        (a, b) => assert_eq!(a, b, "{what}: one is undefined"),
    }
}

#[test]
fn kappa_equals_scikit_learn_to_1e_9() {
    let f = fixture();
    assert!(f.categorical.len() >= 20);
    for c in &f.categorical {
        close(cohen_kappa(&c.judge, &c.person), c.kappa, &c.name);
    }
    // The undefined case is in the fixture: both raters constant.
    assert!(f.categorical.iter().any(|c| c.kappa.is_none()));
}

#[test]
fn spearman_and_kendall_tau_b_equal_scipy_to_1e_9() {
    let f = fixture();
    assert!(f.numeric.len() >= 15);
    for c in &f.numeric {
        close(spearman_rho(&c.judge, &c.person), c.spearman, &c.name);
        close(kendall_tau_b(&c.judge, &c.person), c.kendall_tau_b, &c.name);
    }
}

/// κ from its definition: observed agreement against the chance agreement of the marginals.
fn naive_kappa(a: &[usize], b: &[usize], k: usize) -> Option<f64> {
    let n = a.len() as f64;
    let po = a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / n;
    let pe: f64 = (0..k)
        .map(|c| {
            let pa = a.iter().filter(|&&x| x == c).count() as f64 / n;
            let pb = b.iter().filter(|&&x| x == c).count() as f64 / n;
            pa * pb
        })
        .sum();
    (pe < 1.0).then(|| (po - pe) / (1.0 - pe))
}

/// τ-b from its definition: sign products over all pairs.
fn naive_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    let sign = |d: f64| (d > 0.0) as i64 - (d < 0.0) as i64;
    let (mut s, mut nx, mut ny) = (0i64, 0i64, 0i64);
    for i in 0..x.len() {
        for j in 0..i {
            let (a, b) = (sign(x[i] - x[j]), sign(y[i] - y[j]));
            s += a * b;
            nx += a * a;
            ny += b * b;
        }
    }
    (nx > 0 && ny > 0).then(|| s as f64 / ((nx as f64) * (ny as f64)).sqrt())
}

/// ρ without ties: 1 − 6 Σ d² / (n (n² − 1)).
fn naive_spearman_distinct(x: &[f64], y: &[f64]) -> f64 {
    let rank = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .map(|a| v.iter().filter(|b| *b < a).count() as f64 + 1.0)
            .collect()
    };
    let (rx, ry) = (rank(x), rank(y));
    let n = x.len() as f64;
    let d2: f64 = rx.iter().zip(&ry).map(|(a, b)| (a - b).powi(2)).sum();
    1.0 - 6.0 * d2 / (n * (n * n - 1.0))
}

proptest! {
    #[test]
    fn kappa_matches_its_definition(pairs in prop::collection::vec((0usize..4, 0usize..4), 1..60)) {
        let (a, b): (Vec<usize>, Vec<usize>) = pairs.into_iter().unzip();
        match (cohen_kappa(&a, &b), naive_kappa(&a, &b, 4)) {
            (Some(x), Some(y)) => prop_assert!((x - y).abs() < 1e-9, "{} vs {}", x, y),
            (x, y) => prop_assert_eq!(x, y),
        }
    }

    #[test]
    fn tau_b_matches_its_definition(pairs in prop::collection::vec((0u8..6, 0u8..6), 2..50)) {
        let x: Vec<f64> = pairs.iter().map(|p| f64::from(p.0)).collect();
        let y: Vec<f64> = pairs.iter().map(|p| f64::from(p.1)).collect();
        match (kendall_tau_b(&x, &y), naive_tau_b(&x, &y)) {
            (Some(a), Some(b)) => prop_assert!((a - b).abs() < 1e-9, "{} vs {}", a, b),
            (a, b) => prop_assert_eq!(a, b),
        }
    }

    #[test]
    fn spearman_without_ties_matches_the_rank_difference_formula(
        x in prop::collection::hash_set(0u32..10_000, 3..40),
        seed in any::<u64>(),
    ) {
        let x: Vec<f64> = x.into_iter().map(f64::from).collect();
        // y: a distinct permutation-like transform of x, so neither side has ties.
        let y: Vec<f64> = x.iter().map(|v| ((v * 7919.0 + seed as f64 % 977.0) % 10_007.0) + v / 1e6).collect();
        let ours = spearman_rho(&x, &y).unwrap();
        prop_assert!((ours - naive_spearman_distinct(&x, &y)).abs() < 1e-9);
        prop_assert!((-1.0..=1.0).contains(&ours));
    }
}
