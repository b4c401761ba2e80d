//! Chunk-level set metrics: recall, precision and F1 of the top-k chunk ids against the
//! ground-truth ids, as sets.
//!
//! See [`ChunkRecall`] for the definitions and edge cases.

use super::{Metric, MetricInput};
use crate::chunk::ChunkId;
use crate::level::ChunkLevel;
use std::collections::HashSet;

/// `|R∩G|`, `|R|` and `|G|` for the top `k` ids `retrieved` and the truth ids, as sets.
fn set_counts(retrieved: &[ChunkId], truth: &[ChunkId]) -> (usize, usize, usize) {
    let truth: HashSet<&ChunkId> = truth.iter().collect();
    let retrieved: HashSet<&ChunkId> = retrieved.iter().collect();
    let hits = retrieved.iter().filter(|id| truth.contains(*id)).count();
    (hits, retrieved.len(), truth.len())
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

/// Fraction of the distinct truth ids found among the top `k` retrieved: `|R∩G| / |G|`
/// (0 when the truth is empty). Reported as `chunk_recall@k`.
///
/// # Chunk-level set metrics
///
/// With R = the distinct ids among the first `k` retrieved and G = the distinct truth ids:
///
/// - [`ChunkRecall`] (`chunk_recall@k`) = `|R∩G| / |G|`,
/// - [`ChunkPrecision`] (`chunk_precision@k`) = `|R∩G| / |R|`,
/// - [`ChunkF1`] (`chunk_f1@k`) = their harmonic mean.
///
/// Because both sides are sets, an id retrieved twice, or listed twice in the truth, counts
/// once. Note the difference from the rank metric `precision@k`, which divides by `k` whatever
/// was retrieved: a retriever that returns 2 ids for `k = 5`, both relevant, has
/// `chunk_precision@5 = 1` but `precision@5 = 0.4`.
///
/// Edge cases (every value stays in `[0, 1]`, and a zero denominator gives 0):
///
/// | case | recall | precision | F1 |
/// |---|---|---|---|
/// | empty truth | 0 | 0 | 0 |
/// | nothing retrieved | 0 | 0 | 0 |
/// | both empty | 0 | 0 | 0 |
/// | `k` larger than the list | the whole list is used | same | same |
///
/// ```
/// use rag_eval::chunk::ChunkId;
/// use rag_eval::level::ChunkLevel;
/// use rag_eval::metrics::{ChunkPrecision, ChunkRecall, Metric, MetricInput};
///
/// let id = |s: &str| ChunkId::from_raw(s);
/// let retrieved = [id("a"), id("x"), id("a"), id("b")];
/// let truth = vec![id("a"), id("b"), id("c")];
/// let input = MetricInput::<ChunkLevel>::new(&retrieved, &truth, 3);
/// // top 3 = {a, x}: one of three truth ids found, one of two distinct retrieved ids relevant
/// assert_eq!(ChunkRecall.compute(&input), 1.0 / 3.0);
/// assert_eq!(ChunkPrecision.compute(&input), 0.5);
/// assert_eq!(ChunkRecall.report_name(3), "chunk_recall@3");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkRecall;

/// Fraction of the distinct top-`k` retrieved ids that are in the truth: `|R∩G| / |R|`
/// (0 when nothing was retrieved). Reported as `chunk_precision@k`; edge cases on
/// [`ChunkRecall`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkPrecision;

/// Harmonic mean of [`ChunkPrecision`] and [`ChunkRecall`] (0 when both are 0). Reported as
/// `chunk_f1@k`; edge cases on [`ChunkRecall`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkF1;

impl Metric<ChunkLevel> for ChunkRecall {
    fn name(&self) -> &str {
        "chunk_recall"
    }

    fn compute(&self, input: &MetricInput<'_, ChunkLevel>) -> f64 {
        let (hits, _, truth) = set_counts(input.top_k(), input.truth);
        ratio(hits, truth)
    }
}

impl Metric<ChunkLevel> for ChunkPrecision {
    fn name(&self) -> &str {
        "chunk_precision"
    }

    fn compute(&self, input: &MetricInput<'_, ChunkLevel>) -> f64 {
        let (hits, retrieved, _) = set_counts(input.top_k(), input.truth);
        ratio(hits, retrieved)
    }
}

impl Metric<ChunkLevel> for ChunkF1 {
    fn name(&self) -> &str {
        "chunk_f1"
    }

    fn compute(&self, input: &MetricInput<'_, ChunkLevel>) -> f64 {
        let (hits, retrieved, truth) = set_counts(input.top_k(), input.truth);
        harmonic_mean(ratio(hits, retrieved), ratio(hits, truth))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ids(names: &[&str]) -> Vec<ChunkId> {
        names.iter().map(|s| ChunkId::from_raw(*s)).collect()
    }

    /// (recall, precision, f1) at `k`.
    fn all(retrieved: &[&str], truth: &[&str], k: usize) -> (f64, f64, f64) {
        let (r, t) = (ids(retrieved), ids(truth));
        let input = MetricInput::<ChunkLevel>::new(&r, &t, k);
        (
            ChunkRecall.compute(&input),
            ChunkPrecision.compute(&input),
            ChunkF1.compute(&input),
        )
    }

    #[test]
    fn names_are_reported_at_k() {
        assert_eq!(ChunkRecall.report_name(5), "chunk_recall@5");
        assert_eq!(ChunkPrecision.report_name(1), "chunk_precision@1");
        assert_eq!(ChunkF1.report_name(10), "chunk_f1@10");
    }

    #[test]
    fn hand_worked_case() {
        // top 4 = {a, x, b, y}; truth {a, b, c}: 2 hits.
        let (r, p, f) = all(&["a", "x", "b", "y", "c"], &["a", "b", "c"], 4);
        assert_eq!(r, 2.0 / 3.0);
        assert_eq!(p, 0.5);
        // 2·(1/2)(2/3)/(1/2 + 2/3) = (2/3)/(7/6) = 4/7
        assert!((f - 4.0 / 7.0).abs() < 1e-15);
        // at k = 5 the last id joins
        assert_eq!(all(&["a", "x", "b", "y", "c"], &["a", "b", "c"], 5).0, 1.0);
    }

    #[test]
    fn empty_truth_gives_zero_everywhere() {
        assert_eq!(all(&["a", "b"], &[], 5), (0.0, 0.0, 0.0));
    }

    #[test]
    fn empty_retrieval_gives_zero_everywhere() {
        assert_eq!(all(&[], &["a"], 5), (0.0, 0.0, 0.0));
    }

    #[test]
    fn both_empty_gives_zero() {
        assert_eq!(all(&[], &[], 5), (0.0, 0.0, 0.0));
    }

    #[test]
    fn duplicates_count_once_on_both_sides() {
        // R = {a, x}, G = {a, b}
        let (r, p, f) = all(&["a", "a", "x", "a"], &["a", "b", "a"], 4);
        assert_eq!((r, p), (0.5, 0.5));
        assert_eq!(f, 0.5);
    }

    #[test]
    fn k_larger_than_the_list_uses_the_whole_list() {
        assert_eq!(
            all(&["a", "b"], &["a", "b", "c", "d"], 100),
            all(&["a", "b"], &["a", "b", "c", "d"], 2)
        );
        let (r, p, _) = all(&["a", "b"], &["a", "b", "c", "d"], 100);
        assert_eq!((r, p), (0.5, 1.0));
    }

    #[test]
    fn k_zero_sees_nothing() {
        assert_eq!(all(&["a"], &["a"], 0), (0.0, 0.0, 0.0));
    }

    #[test]
    fn perfect_retrieval_scores_one() {
        assert_eq!(all(&["b", "a"], &["a", "b"], 2), (1.0, 1.0, 1.0));
    }

    proptest! {
        #[test]
        fn values_stay_in_unit_interval_and_f1_lies_between(
            retrieved in prop::collection::vec(0u8..8, 0..12),
            truth in prop::collection::vec(0u8..8, 0..6),
            k in 0usize..15,
        ) {
            let r: Vec<String> = retrieved.iter().map(|i| format!("c{i}")).collect();
            let t: Vec<String> = truth.iter().map(|i| format!("c{i}")).collect();
            let r: Vec<&str> = r.iter().map(String::as_str).collect();
            let t: Vec<&str> = t.iter().map(String::as_str).collect();
            let (rec, prec, f1) = all(&r, &t, k);
            for v in [rec, prec, f1] {
                prop_assert!((0.0..=1.0).contains(&v));
            }
            prop_assert!(f1 <= rec.max(prec) + 1e-12);
            prop_assert!(f1 + 1e-12 >= rec.min(prec));
        }
    }
}
