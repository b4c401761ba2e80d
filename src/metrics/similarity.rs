//! Similarity-based relevance and the hybrid log-rank score.
//!
//! See [`precision_at_k_similarity`] for relevance and [`HybridLogRank`] for the score.

use super::{Metric, MetricInput};
use crate::error::{Result, SettingError};
use crate::level::{ChunkLevel, TokenLevel};
use crate::span::{CharSpan, SpanSet};
use crate::vector::cosine;

/// The cosine similarity from which an item counts as relevant unless told otherwise.
pub const DEFAULT_THRESHOLD: f32 = 0.8;

/// `matches[i][j]`: whether ranked item `i` reaches the threshold against truth item `j`.
fn match_matrix(ranked: &[Vec<f32>], truth: &[Vec<f32>], threshold: f32) -> Vec<Vec<bool>> {
    ranked
        .iter()
        .map(|r| truth.iter().map(|g| cosine(r, g) >= threshold).collect())
        .collect()
}

fn top<T>(items: &[T], k: usize) -> &[T] {
    &items[..k.min(items.len())]
}

fn ratio(num: usize, den: usize) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

fn harmonic_mean(p: f64, r: f64) -> f64 {
    if p + r == 0.0 {
        0.0
    } else {
        2.0 * p * r / (p + r)
    }
}

fn relevant_count(ranked: &[Vec<f32>], truth: &[Vec<f32>], threshold: f32) -> usize {
    ranked
        .iter()
        .filter(|r| truth.iter().any(|g| cosine(r, g) >= threshold))
        .count()
}

fn found_count(ranked: &[Vec<f32>], truth: &[Vec<f32>], threshold: f32) -> usize {
    truth
        .iter()
        .filter(|g| ranked.iter().any(|r| cosine(r, g) >= threshold))
        .count()
}

/// Items among the first `k` whose best cosine to a truth embedding is at least `threshold`,
/// divided by `k`. Relevance by similarity is described on [`HybridLogRank`].
///
/// ```
/// use rag_eval::metrics::{precision_at_k_similarity, DEFAULT_THRESHOLD};
/// let truth = vec![vec![1.0, 0.0]];
/// let retrieved = vec![vec![0.0, 1.0], vec![0.9, 0.1]];
/// assert_eq!(precision_at_k_similarity(&retrieved, &truth, 2, DEFAULT_THRESHOLD), 0.5);
/// ```
pub fn precision_at_k_similarity(
    retrieved: &[Vec<f32>],
    truth: &[Vec<f32>],
    k: usize,
    threshold: f32,
) -> f64 {
    ratio(relevant_count(top(retrieved, k), truth, threshold), k)
}

/// Fraction of the truth embeddings that some item among the first `k` reaches with cosine at
/// least `threshold`.
pub fn recall_at_k_similarity(
    retrieved: &[Vec<f32>],
    truth: &[Vec<f32>],
    k: usize,
    threshold: f32,
) -> f64 {
    ratio(
        found_count(top(retrieved, k), truth, threshold),
        truth.len(),
    )
}

/// Harmonic mean of [`precision_at_k_similarity`] and [`recall_at_k_similarity`].
pub fn f1_at_k_similarity(
    retrieved: &[Vec<f32>],
    truth: &[Vec<f32>],
    k: usize,
    threshold: f32,
) -> f64 {
    harmonic_mean(
        precision_at_k_similarity(retrieved, truth, k, threshold),
        recall_at_k_similarity(retrieved, truth, k, threshold),
    )
}

/// The hybrid log-rank score (`hybrid_log_rank`).
///
/// # Similarity relevance and the hybrid score
///
/// When retrieved text is a paraphrase of the truth rather than the same chunk, relevance is
/// judged on embeddings: a retrieved item is relevant when its cosine similarity
/// ([`cosine`]) to *some* truth embedding is at least a threshold ([`DEFAULT_THRESHOLD`] = 0.8),
/// and a truth item is found when some retrieved item reaches the threshold against it.
///
/// - [`precision_at_k_similarity`]: relevant items among the first `k`, divided by `k`
///   (as `precision@k` does), 0 for `k = 0`;
/// - [`recall_at_k_similarity`]: fraction of the truth items matched by some item among the
///   first `k`, 0 for an empty truth;
/// - [`f1_at_k_similarity`]: their harmonic mean, 0 when both are 0.
///
/// Embeddings carry no identity, so two equal retrieved vectors are two relevant items.
///
/// [`HybridLogRank`] (`hybrid_log_rank`) rewards finding the truth *and* finding it early:
///
/// `alpha · recall + (1 − alpha) · Σ_g logrank(best rank of g) / |G|`, with
/// `logrank(r) = 1 − ln(1 + γ(r − 1)) / ln(1 + γ(n − 1))`,
///
/// where `n` is the number of ranked items, the best rank of a truth item g is the first rank
/// (from 1) of an item matching it, and a truth item matched by nothing contributes 0 (it is
/// missing from the recall too). `logrank` falls from 1 at rank 1 to 0 at rank `n`; with a
/// single ranked item (`n = 1`) the only rank is the best one and scores 1. `γ` sets how fast
/// the score falls near the top. It is available on embeddings
/// ([`HybridLogRank::score_similarity`]) and as a [`Metric`] at both levels on the first `k`
/// items (`n` = the number of items among the first `k`), matching truth by id at chunk level
/// and by overlap with a merged truth span at token level.
///
/// ```
/// use rag_eval::metrics::HybridLogRank;
/// let h = HybridLogRank::default(); // alpha 0.5, gamma 1
/// // two truth items, best ranks 1 and 3 of n = 3; logrank(3) = 0
/// assert_eq!(h.score_from_best_ranks(&[Some(1), Some(3)], 3), 0.5 + 0.5 * 0.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HybridLogRank {
    alpha: f64,
    gamma: f64,
}

impl Default for HybridLogRank {
    /// `alpha = 0.5`, `gamma = 1`, as the seed's functions default to.
    fn default() -> Self {
        HybridLogRank {
            alpha: 0.5,
            gamma: 1.0,
        }
    }
}

impl HybridLogRank {
    /// The metric's name.
    pub const NAME: &'static str = "hybrid_log_rank";

    /// A score weighting recall by `alpha` (in `[0, 1]`) and rank quality by `1 − alpha`, with
    /// log-rank steepness `gamma` (positive and finite).
    pub fn new(alpha: f64, gamma: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&alpha) {
            return Err(SettingError::new(Self::NAME, "alpha", alpha, "must be in [0, 1]").into());
        }
        if !(gamma.is_finite() && gamma > 0.0) {
            return Err(SettingError::new(
                Self::NAME,
                "gamma",
                gamma,
                "must be positive and finite",
            )
            .into());
        }
        Ok(HybridLogRank { alpha, gamma })
    }

    /// The weight of recall.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The log-rank steepness.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// `1 − ln(1 + γ(rank − 1)) / ln(1 + γ(n − 1))` for a 1-based `rank` among `n` items;
    /// 1 when `n ≤ 1`, and 0 for a rank outside `1..=n`.
    ///
    /// ```
    /// use rag_eval::metrics::HybridLogRank;
    /// let h = HybridLogRank::default();
    /// assert_eq!(h.log_rank(1, 5), 1.0);
    /// assert_eq!(h.log_rank(5, 5), 0.0);
    /// assert_eq!(h.log_rank(2, 5), 1.0 - 2f64.ln() / 5f64.ln());
    /// ```
    pub fn log_rank(&self, rank: usize, n: usize) -> f64 {
        if rank == 0 || rank > n.max(1) {
            return 0.0;
        }
        if n <= 1 {
            return 1.0;
        }
        let g = self.gamma;
        1.0 - (1.0 + g * (rank - 1) as f64).ln() / (1.0 + g * (n - 1) as f64).ln()
    }

    /// The score from the best rank of each truth item (`None`: not found) among `n` ranked
    /// items; 0 for an empty truth.
    pub fn score_from_best_ranks(&self, best_ranks: &[Option<usize>], n: usize) -> f64 {
        if best_ranks.is_empty() {
            return 0.0;
        }
        let total = best_ranks.len() as f64;
        let found = best_ranks.iter().flatten().count() as f64;
        let quality: f64 = best_ranks
            .iter()
            .flatten()
            .map(|&r| self.log_rank(r, n))
            .sum();
        self.alpha * found / total + (1.0 - self.alpha) * quality / total
    }

    /// The score on embeddings over the whole ranking given: a truth embedding's best rank is
    /// the first rank whose cosine to it is at least `threshold`.
    ///
    /// ```
    /// use rag_eval::metrics::{HybridLogRank, DEFAULT_THRESHOLD};
    /// let truth = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
    /// let retrieved = vec![vec![1.0, 0.05], vec![-1.0, 0.0]];
    /// // first truth found at rank 1 of 2, second never: 0.5·(1/2) + 0.5·(1/2)
    /// let s = HybridLogRank::default().score_similarity(&retrieved, &truth, DEFAULT_THRESHOLD);
    /// assert_eq!(s, 0.5);
    /// ```
    pub fn score_similarity(
        &self,
        retrieved: &[Vec<f32>],
        truth: &[Vec<f32>],
        threshold: f32,
    ) -> f64 {
        let matches = match_matrix(retrieved, truth, threshold);
        let best: Vec<Option<usize>> = (0..truth.len())
            .map(|j| matches.iter().position(|row| row[j]).map(|i| i + 1))
            .collect();
        self.score_from_best_ranks(&best, retrieved.len())
    }
}

impl Metric<ChunkLevel> for HybridLogRank {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn compute(&self, input: &MetricInput<'_, ChunkLevel>) -> f64 {
        let ranked = input.top_k();
        let mut truth: Vec<_> = input.truth.iter().collect();
        truth.sort_unstable();
        truth.dedup();
        let best: Vec<Option<usize>> = truth
            .iter()
            .map(|g| ranked.iter().position(|r| r == *g).map(|i| i + 1))
            .collect();
        self.score_from_best_ranks(&best, ranked.len())
    }
}

impl Metric<TokenLevel> for HybridLogRank {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn compute(&self, input: &MetricInput<'_, TokenLevel>) -> f64 {
        let ranked = input.top_k();
        let merged: Vec<CharSpan> = SpanSet::from_spans(input.truth).iter().collect();
        let best: Vec<Option<usize>> = merged
            .iter()
            .map(|g| {
                ranked
                    .iter()
                    .position(|r| !r.is_empty() && r.overlaps(g))
                    .map(|i| i + 1)
            })
            .collect();
        self.score_from_best_ranks(&best, ranked.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::ChunkId;

    const EPS: f64 = 1e-12;

    /// Unit vectors at the given angles (degrees), so cosines are easy to work out by hand.
    fn at(degrees: &[f32]) -> Vec<Vec<f32>> {
        degrees
            .iter()
            .map(|d| {
                let r = d.to_radians();
                vec![r.cos(), r.sin()]
            })
            .collect()
    }

    #[test]
    fn similarity_precision_recall_f1_by_hand() {
        // cos 30° ≈ 0.866 ≥ 0.8, cos 45° ≈ 0.707 < 0.8
        let truth = at(&[0.0, 90.0, 180.0]);
        let retrieved = at(&[30.0, 45.0, 95.0, 10.0]);
        let t = DEFAULT_THRESHOLD;
        // relevant: 30° (→0°), 95° (→90°), 10° (→0°)
        assert_eq!(precision_at_k_similarity(&retrieved, &truth, 2, t), 0.5);
        assert_eq!(precision_at_k_similarity(&retrieved, &truth, 4, t), 0.75);
        assert_eq!(
            precision_at_k_similarity(&retrieved, &truth, 8, t),
            3.0 / 8.0
        );
        // found: 0° by the first, 90° by the third; 180° never
        assert_eq!(recall_at_k_similarity(&retrieved, &truth, 1, t), 1.0 / 3.0);
        assert_eq!(recall_at_k_similarity(&retrieved, &truth, 3, t), 2.0 / 3.0);
        let f = f1_at_k_similarity(&retrieved, &truth, 3, t);
        assert!((f - 2.0 * (2.0 / 3.0) * (2.0 / 3.0) / (4.0 / 3.0)).abs() < EPS);
        // a lower threshold lets 45° in
        assert_eq!(precision_at_k_similarity(&retrieved, &truth, 2, 0.7), 1.0);
    }

    #[test]
    fn similarity_edge_cases() {
        let t = DEFAULT_THRESHOLD;
        let some = at(&[0.0]);
        assert_eq!(precision_at_k_similarity(&some, &[], 1, t), 0.0);
        assert_eq!(recall_at_k_similarity(&some, &[], 1, t), 0.0);
        assert_eq!(precision_at_k_similarity(&[], &some, 1, t), 0.0);
        assert_eq!(recall_at_k_similarity(&[], &some, 1, t), 0.0);
        assert_eq!(f1_at_k_similarity(&[], &[], 1, t), 0.0);
        assert_eq!(precision_at_k_similarity(&some, &some, 0, t), 0.0);
        // an all-zero vector has cosine 0 to everything
        assert_eq!(
            precision_at_k_similarity(&[vec![0.0, 0.0]], &some, 1, t),
            0.0
        );
        // equal vectors are two relevant items
        let twice = at(&[0.0, 0.0]);
        assert_eq!(precision_at_k_similarity(&twice, &some, 2, t), 1.0);
    }

    #[test]
    fn log_rank_by_hand() {
        let h = HybridLogRank::new(0.5, 2.0).unwrap();
        // n = 4, γ = 2: ln(1 + 2(r−1)) / ln 7
        assert_eq!(h.log_rank(1, 4), 1.0);
        assert!((h.log_rank(2, 4) - (1.0 - 3f64.ln() / 7f64.ln())).abs() < EPS);
        assert!((h.log_rank(3, 4) - (1.0 - 5f64.ln() / 7f64.ln())).abs() < EPS);
        assert!(h.log_rank(4, 4).abs() < EPS);
        assert_eq!(h.log_rank(1, 1), 1.0, "n = 1");
        assert_eq!(h.log_rank(5, 4), 0.0, "outside the ranking");
        assert_eq!(h.log_rank(0, 4), 0.0);
        // steeper γ penalises rank 2 more
        let soft = HybridLogRank::new(0.5, 0.1).unwrap();
        assert!(soft.log_rank(2, 4) > h.log_rank(2, 4));
    }

    #[test]
    fn hybrid_score_by_hand() {
        let h = HybridLogRank::new(0.25, 1.0).unwrap();
        // three truth items among n = 3: best ranks 1, 2, none
        // recall 2/3; rank quality (1 + (1 − ln2/ln3) + 0) / 3
        let quality = (1.0 + (1.0 - 2f64.ln() / 3f64.ln())) / 3.0;
        let expected = 0.25 * (2.0 / 3.0) + 0.75 * quality;
        let got = h.score_from_best_ranks(&[Some(1), Some(2), None], 3);
        assert!((got - expected).abs() < EPS);
        assert_eq!(h.score_from_best_ranks(&[], 3), 0.0, "empty truth");
        assert_eq!(
            h.score_from_best_ranks(&[None, None], 0),
            0.0,
            "nothing ranked"
        );
        assert_eq!(h.score_from_best_ranks(&[Some(1)], 1), 1.0, "n = 1");
    }

    #[test]
    fn hybrid_on_embeddings_uses_the_first_matching_rank() {
        let h = HybridLogRank::default();
        let truth = at(&[0.0, 90.0]);
        // rank 1 matches nothing, ranks 2 and 3 both match 90°, rank 4 matches 0°
        let retrieved = at(&[45.0, 85.0, 90.0, 5.0]);
        let q = (1.0 - 4f64.ln() / 4f64.ln()) + (1.0 - 2f64.ln() / 4f64.ln());
        let expected = 0.5 * 1.0 + 0.5 * q / 2.0;
        let got = h.score_similarity(&retrieved, &truth, DEFAULT_THRESHOLD);
        assert!((got - expected).abs() < EPS);
    }

    #[test]
    fn invalid_parameters_are_errors() {
        for (a, g) in [
            (-0.1, 1.0),
            (1.5, 1.0),
            (0.5, 0.0),
            (0.5, -1.0),
            (0.5, f64::NAN),
        ] {
            let err = HybridLogRank::new(a, g).unwrap_err().to_string();
            assert!(err.contains("hybrid_log_rank"), "{err}");
        }
        assert!(HybridLogRank::new(0.0, 1e-3).is_ok());
        assert!(HybridLogRank::new(1.0, 10.0).is_ok());
    }

    #[test]
    fn as_a_chunk_level_metric() {
        let h = HybridLogRank::default();
        let id = |s: &str| ChunkId::from_raw(s);
        let retrieved = [id("x"), id("a"), id("b"), id("a")];
        let truth = vec![id("a"), id("c"), id("a")];
        // k = 3: n = 3; distinct truth {a, c}; a at rank 2, c missing
        let input = MetricInput::<ChunkLevel>::new(&retrieved, &truth, 3);
        let expected = 0.5 * 0.5 + 0.5 * (1.0 - 2f64.ln() / 3f64.ln()) / 2.0;
        assert!((h.compute(&input) - expected).abs() < EPS);
        assert_eq!(
            Metric::<ChunkLevel>::report_name(&h, 3),
            "hybrid_log_rank@3"
        );
        // k larger than the list: n is the list's length
        let input = MetricInput::<ChunkLevel>::new(&retrieved[..2], &truth, 10);
        let expected = 0.5 * 0.5 + 0.5 * 0.0 / 2.0;
        assert!((h.compute(&input) - expected).abs() < EPS);
    }

    #[test]
    fn as_a_token_level_metric() {
        let h = HybridLogRank::default();
        let truth = vec![CharSpan::new("d", 0, 10), CharSpan::new("d", 10, 20)];
        // the two truth spans touch and merge into one, met at rank 1 of 2
        let retrieved = [CharSpan::new("d", 15, 25), CharSpan::new("e", 0, 5)];
        let input = MetricInput::<TokenLevel>::new(&retrieved, &truth, 5);
        assert_eq!(h.compute(&input), 1.0);
        let missed = [CharSpan::new("d", 20, 25)];
        let input = MetricInput::<TokenLevel>::new(&missed, &truth, 5);
        assert_eq!(h.compute(&input), 0.0, "touching is not overlapping");
    }
}
