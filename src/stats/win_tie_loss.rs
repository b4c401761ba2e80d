//! Wins, ties and losses over queries.

use serde::{Deserialize, Serialize};

/// Differences within this of zero are ties: figures computed the same way from the same input
/// can differ in the last bits when sums ran in another order.
pub const TIE_TOLERANCE: f64 = 1e-12;

/// How many queries a run did better on than the baseline, the same, and worse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WinTieLoss {
    /// Queries whose figure is higher than the baseline's.
    pub wins: usize,
    /// Queries whose figure equals the baseline's (within [`TIE_TOLERANCE`]).
    pub ties: usize,
    /// Queries whose figure is lower than the baseline's.
    pub losses: usize,
}

impl WinTieLoss {
    /// Counts over per-query differences (run − baseline).
    pub fn count(differences: &[f64]) -> WinTieLoss {
        let mut w = WinTieLoss::default();
        for d in differences {
            if *d > TIE_TOLERANCE {
                w.wins += 1;
            } else if *d < -TIE_TOLERANCE {
                w.losses += 1;
            } else {
                w.ties += 1;
            }
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_hand() {
        let w = WinTieLoss::count(&[0.5, 0.0, -0.25, 1e-15, 0.1 + 0.2 - 0.3, -1.0]);
        assert_eq!(
            w,
            WinTieLoss {
                wins: 1,
                ties: 3,
                losses: 2
            }
        );
    }
}
