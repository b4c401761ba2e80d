//! Agreement between two raters of the same items (a judge and a person): Cohen's κ over
//! categories, Spearman's ρ and Kendall's τ-b over numbers, and a percentile bootstrap of any
//! such statistic.
//!
//! Each statistic is the one scikit-learn's `cohen_kappa_score` and scipy's `spearmanr` and
//! `kendalltau` (variant b) compute, ties included, and is `None` where they give NaN (one rater
//! constant, fewer than two items).

use super::bootstrap::quantile;
use super::rng::SplitMix64;

/// Cohen's κ of two raters' categories (any indices): `(p_o − p_e) / (1 − p_e)`, with `p_e`
/// from the product of the raters' marginal shares. `None` without items, when the lengths
/// differ, or when chance agreement is certain (both raters always gave one category).
pub fn cohen_kappa(a: &[usize], b: &[usize]) -> Option<f64> {
    if a.is_empty() || a.len() != b.len() {
        return None;
    }
    let k = a.iter().chain(b).max().map_or(0, |m| m + 1);
    let n = a.len() as f64;
    let mut row = vec![0.0; k];
    let mut column = vec![0.0; k];
    let mut agree = 0.0;
    for (&x, &y) in a.iter().zip(b) {
        row[x] += 1.0;
        column[y] += 1.0;
        if x == y {
            agree += 1.0;
        }
    }
    // scikit-learn's form: 1 − Σ w·observed / Σ w·expected with w = 1 − I.
    let expected_agree: f64 = row.iter().zip(&column).map(|(r, c)| r * c / n).sum();
    let disagree_expected = n - expected_agree;
    (disagree_expected > 0.0).then(|| 1.0 - (n - agree) / disagree_expected)
}

/// Ranks 1..=n with ties given their average rank (scipy's `rankdata(method="average")`).
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold ranks start+1..=end: their mean.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// Pearson's correlation; `None` for fewer than two pairs or a constant side.
fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() < 2 || x.len() != y.len() {
        return None;
    }
    let n = x.len() as f64;
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| (sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0))
}

/// Spearman's ρ: Pearson's correlation of the average ranks. `None` for fewer than two pairs,
/// different lengths or a constant side.
pub fn spearman_rho(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() {
        return None;
    }
    pearson(&average_ranks(x), &average_ranks(y))
}

/// Kendall's τ-b: `(C − D) / √((C + D + Tx)(C + D + Ty))`, where `Tx` counts the pairs tied in
/// `x` only and `Ty` those tied in `y` only. `None` for fewer than two pairs, different lengths,
/// or a constant side. Counts all pairs (O(n²)): labelled sets are hundreds of items, not
/// millions.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() < 2 || x.len() != y.len() {
        return None;
    }
    let (mut concordant, mut discordant, mut tied_x, mut tied_y) = (0u64, 0u64, 0u64, 0u64);
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            let dx = x[i].total_cmp(&x[j]);
            let dy = y[i].total_cmp(&y[j]);
            use std::cmp::Ordering::Equal;
            match (dx, dy) {
                (Equal, Equal) => {}
                (Equal, _) => tied_x += 1,
                (_, Equal) => tied_y += 1,
                _ if dx == dy => concordant += 1,
                _ => discordant += 1,
            }
        }
    }
    let pairs = (concordant + discordant) as f64;
    let denominator = ((pairs + tied_x as f64) * (pairs + tied_y as f64)).sqrt();
    (denominator > 0.0).then(|| (concordant as f64 - discordant as f64) / denominator)
}

/// The `level` percentile bootstrap interval of `statistic` over `n` items: `resamples`
/// resamples of the item indices with replacement, seeded by `seed`; resamples on which the
/// statistic is undefined (`None`) are left out. `None` when it is undefined on every one (or
/// `n` is 0 or `resamples` 0).
///
/// # Panics
///
/// When `level` is not inside `(0, 1)`.
pub fn bootstrap_statistic(
    n: usize,
    resamples: usize,
    seed: u64,
    level: f64,
    statistic: impl Fn(&[usize]) -> Option<f64>,
) -> Option<(f64, f64)> {
    assert!(level > 0.0 && level < 1.0, "confidence level {level}");
    if n == 0 {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut indices = vec![0; n];
    let mut draws = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for i in indices.iter_mut() {
            *i = rng.below(n);
        }
        if let Some(v) = statistic(&indices) {
            draws.push(v);
        }
    }
    if draws.is_empty() {
        return None;
    }
    draws.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some((quantile(&draws, tail), quantile(&draws, 1.0 - tail)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kappa_by_hand() {
        // 10 items: 4 both yes, 4 both no, 2 disagree (one each way): p_o = 0.8, p_e = 0.5.
        let a = [1, 1, 1, 1, 0, 0, 0, 0, 1, 0];
        let b = [1, 1, 1, 1, 0, 0, 0, 0, 0, 1];
        assert!((cohen_kappa(&a, &b).unwrap() - 0.6).abs() < 1e-12);
        assert_eq!(cohen_kappa(&[1, 1], &[1, 1]), None);
        assert_eq!(cohen_kappa(&[], &[]), None);
        // One rater constant, the other not: p_e = p(that class), κ = 0.
        assert_eq!(cohen_kappa(&[1, 1, 1, 1], &[1, 0, 1, 0]), Some(0.0));
    }

    #[test]
    fn ranks_and_correlations_by_hand() {
        assert_eq!(average_ranks(&[3.0, 1.0, 3.0, 2.0]), [3.5, 1.0, 3.5, 2.0]);
        let x = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(spearman_rho(&x, &[10.0, 20.0, 30.0, 40.0]), Some(1.0));
        assert_eq!(spearman_rho(&x, &[4.0, 3.0, 2.0, 1.0]), Some(-1.0));
        assert_eq!(spearman_rho(&x, &[1.0; 4]), None);
        // Pairs of x = [1,2,3], y = [1,1,2]: (1,2) tied in y, (1,3) and (2,3) concordant:
        // τ-b = 2 / √(3 · 2).
        let t = kendall_tau_b(&[1.0, 2.0, 3.0], &[1.0, 1.0, 2.0]).unwrap();
        assert!((t - 2.0 / 6f64.sqrt()).abs() < 1e-12);
        assert_eq!(kendall_tau_b(&[1.0], &[1.0]), None);
    }

    #[test]
    fn bootstrap_of_a_statistic_brackets_it_and_repeats() {
        let x: Vec<f64> = (0..60).map(|i| (i * 7 % 13) as f64).collect();
        let y: Vec<f64> = x
            .iter()
            .enumerate()
            .map(|(i, v)| v + (i % 5) as f64)
            .collect();
        let rho = spearman_rho(&x, &y).unwrap();
        let stat = |idx: &[usize]| {
            let xs: Vec<f64> = idx.iter().map(|&i| x[i]).collect();
            let ys: Vec<f64> = idx.iter().map(|&i| y[i]).collect();
            spearman_rho(&xs, &ys)
        };
        let (lo, hi) = bootstrap_statistic(60, 500, 7, 0.95, stat).unwrap();
        assert!(lo < rho && rho < hi && hi <= 1.0, "{lo} {rho} {hi}");
        assert_eq!(bootstrap_statistic(60, 500, 7, 0.95, stat), Some((lo, hi)));
        assert_eq!(bootstrap_statistic(0, 500, 7, 0.95, stat), None);
        assert_eq!(bootstrap_statistic(3, 50, 7, 0.95, |_| None), None);
    }
}
