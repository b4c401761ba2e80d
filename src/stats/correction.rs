//! Multiple-comparison corrections of p-values: one comparison of many metrics and runs makes
//! many tests, and without a correction some look significant by chance.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How p-values of a family of tests are adjusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Correction {
    /// Left as they are.
    None,
    /// Each multiplied by the number of tests (capped at 1): controls the family-wise error
    /// rate.
    Bonferroni,
    /// Holm's step-down method: the same guarantee as Bonferroni, never larger p-values.
    #[default]
    Holm,
}

impl Correction {
    /// `none`, `bonferroni` or `holm`.
    pub fn as_str(self) -> &'static str {
        match self {
            Correction::None => "none",
            Correction::Bonferroni => "bonferroni",
            Correction::Holm => "holm",
        }
    }

    /// The adjusted p-values, in the order given.
    pub fn apply(self, p_values: &[f64]) -> Vec<f64> {
        match self {
            Correction::None => p_values.to_vec(),
            Correction::Bonferroni => bonferroni(p_values),
            Correction::Holm => holm(p_values),
        }
    }
}

impl fmt::Display for Correction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Correction {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self, crate::Error> {
        match s {
            "none" => Ok(Correction::None),
            "bonferroni" => Ok(Correction::Bonferroni),
            "holm" => Ok(Correction::Holm),
            _ => Err(crate::Error::Unknown {
                what: "correction",
                given: s.to_owned(),
                known: "expected none, bonferroni or holm".into(),
            }),
        }
    }
}

/// Bonferroni: `min(1, m · p)` for `m` tests.
pub fn bonferroni(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len() as f64;
    p_values.iter().map(|p| (p * m).min(1.0)).collect()
}

/// Holm–Bonferroni: with the p-values sorted ascending, the i-th (from 0) is multiplied by
/// `m − i`, each kept at least as large as the one before it (so the order is preserved), and
/// capped at 1. Returned in the order given.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p_values[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_worked_example() {
        // Four tests, p = 0.01, 0.04, 0.03, 0.005. Sorted: 0.005, 0.01, 0.03, 0.04, times
        // 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 → running maximum 0.02, 0.03, 0.06, 0.06.
        // Bonferroni multiplies all by 4: 0.04, 0.16, 0.12, 0.02. At α = 0.05 both reject
        // the two smallest; Holm's adjusted values are never the larger.
        let p = [0.01, 0.04, 0.03, 0.005];
        let h = holm(&p);
        let expected = [0.03, 0.06, 0.06, 0.02];
        for (a, b) in h.iter().zip(expected) {
            assert!((a - b).abs() < 1e-15, "{h:?}");
        }
        let b = bonferroni(&p);
        for (a, e) in b.iter().zip([0.04, 0.16, 0.12, 0.02]) {
            assert!((a - e).abs() < 1e-15, "{b:?}");
        }
        assert_eq!(Correction::None.apply(&p), p.to_vec());
    }

    #[test]
    fn caps_at_one_and_keeps_ties() {
        assert_eq!(holm(&[0.5, 0.5, 0.9]), vec![1.0, 1.0, 1.0]);
        assert_eq!(bonferroni(&[0.3, 0.6]), vec![0.6, 1.0]);
        assert_eq!(holm(&[]), Vec::<f64>::new());
        assert_eq!(holm(&[0.2]), vec![0.2]);
    }

    #[test]
    fn names_round_trip() {
        for c in [Correction::None, Correction::Bonferroni, Correction::Holm] {
            assert_eq!(c.as_str().parse::<Correction>().unwrap(), c);
            assert_eq!(serde_json::to_string(&c).unwrap(), format!("\"{c}\""));
        }
        assert_eq!(
            "sidak".parse::<Correction>().unwrap_err().to_string(),
            "invalid configuration: unknown correction `sidak` (expected none, bonferroni or holm)"
        );
    }

    proptest::proptest! {
        #[test]
        fn holm_never_exceeds_bonferroni_and_never_undercuts_raw(
            p in proptest::collection::vec(0.0f64..=1.0, 0..30)
        ) {
            let h = holm(&p);
            let b = bonferroni(&p);
            for i in 0..p.len() {
                proptest::prop_assert!(h[i] >= p[i] && h[i] <= b[i] + 1e-15);
                for j in 0..p.len() {
                    if p[i] <= p[j] {
                        proptest::prop_assert!(h[i] <= h[j]);
                    }
                }
            }
        }
    }
}
