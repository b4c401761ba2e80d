//! Rank metrics: precision, recall, F1, hit rate, reciprocal rank, nDCG and average precision
//! over a ranked list, with trec_eval's conventions.
//!
//! # The functions underneath
//!
//! Every metric here, and `rag-eval score` (the [`trec`](crate::trec) module), is computed by
//! the plain functions of this module over a list of relevance [`Grade`]s in rank order, so
//! there is exactly one implementation of each formula:
//!
//! | function | value |
//! |---|---|
//! | [`precision_at_k`] | relevant among the first `k`, divided by `k` even when fewer were retrieved (trec_eval `P_k`) |
//! | [`recall_at_k`] | relevant among the first `k`, divided by the number of relevant judged items (`recall_k`) |
//! | [`f1_at_k`] | harmonic mean of the two |
//! | [`hit_at_k`] | 1 when any of the first `k` is relevant |
//! | [`reciprocal_rank`] | `1 / rank` of the first relevant item (`recip_rank`) |
//! | [`average_precision`] | sum of the precision at each relevant rank, divided by the number of relevant judged items (`map`) |
//! | [`ndcg_at_k`] | `Σ grade / log2(rank + 1)` over the first `k`, divided by the same sum over the ideal ordering of every judged grade (`ndcg_cut_k`) |
//!
//! A grade is relevant when it is at least [`RELEVANCE_LEVEL`] (1). nDCG uses the grade itself
//! as the gain (grades ≤ 0 gain nothing). A denominator of zero gives 0 (no relevant item
//! judged, `k = 0`).
//!
//! The metrics built on them, and the rules for relevance at chunk and token level, are
//! documented on [`Precision`].

use super::{Metric, MetricInput};
use crate::chunk::ChunkId;
use crate::level::{ChunkLevel, TokenLevel};
use crate::span::{CharSpan, SpanSet};
use std::collections::HashSet;
use std::sync::OnceLock;

/// A relevance grade as a qrels file gives it: 0 for judged non-relevant, 1, 2, 3 … for
/// increasingly relevant. trec_eval marks retrieved items without a judgement with negative
/// values; those are simply not relevant here.
///
/// A ranking is a slice of grades in rank order. [`precision_at_k`], [`recall_at_k`],
/// [`f1_at_k`], [`hit_at_k`], [`reciprocal_rank`], [`average_precision`] and [`ndcg_at_k`] take
/// one, with trec_eval's conventions; both the rank metrics ([`Precision`] and its siblings)
/// and [`crate::trec`] are computed by them, so each formula exists once.
pub type Grade = i32;

/// The smallest grade that counts as relevant (trec_eval's default `-l 1`).
pub const RELEVANCE_LEVEL: Grade = 1;

/// Whether a grade counts as relevant.
#[inline]
pub fn is_relevant(grade: Grade) -> bool {
    grade >= RELEVANCE_LEVEL
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

fn relevant_in_top(grades: &[Grade], k: usize) -> usize {
    grades[..k.min(grades.len())]
        .iter()
        .filter(|&&g| is_relevant(g))
        .count()
}

/// Relevant items among the first `k` grades divided by `k` (trec_eval `P_k`); 0 for `k = 0`.
///
/// ```
/// # use rag_eval::metrics::precision_at_k;
/// assert_eq!(precision_at_k(&[1, 0, 2], 5), 0.4); // divides by k, not by 3
/// ```
pub fn precision_at_k(grades: &[Grade], k: usize) -> f64 {
    ratio(relevant_in_top(grades, k), k)
}

/// Relevant items among the first `k` grades divided by `num_relevant`, the number of relevant
/// items judged (trec_eval `recall_k`); 0 when `num_relevant` is 0.
///
/// ```
/// # use rag_eval::metrics::recall_at_k;
/// assert_eq!(recall_at_k(&[1, 0, 2], 2, 4), 0.25);
/// ```
pub fn recall_at_k(grades: &[Grade], k: usize, num_relevant: usize) -> f64 {
    ratio(relevant_in_top(grades, k), num_relevant)
}

/// Harmonic mean of [`precision_at_k`] and [`recall_at_k`]; 0 when both are 0.
pub fn f1_at_k(grades: &[Grade], k: usize, num_relevant: usize) -> f64 {
    let hits = relevant_in_top(grades, k);
    harmonic_mean(ratio(hits, k), ratio(hits, num_relevant))
}

/// 1 when any of the first `k` grades is relevant, else 0.
pub fn hit_at_k(grades: &[Grade], k: usize) -> f64 {
    if relevant_in_top(grades, k) > 0 {
        1.0
    } else {
        0.0
    }
}

/// `1 / rank` of the first relevant grade (ranks start at 1), 0 when none is relevant
/// (trec_eval `recip_rank`).
///
/// ```
/// # use rag_eval::metrics::reciprocal_rank;
/// assert_eq!(reciprocal_rank(&[0, -1, 3]), 1.0 / 3.0);
/// ```
pub fn reciprocal_rank(grades: &[Grade]) -> f64 {
    grades
        .iter()
        .position(|&g| is_relevant(g))
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// Average precision (trec_eval `map` for one query): the sum of the precision at the rank of
/// every relevant grade, divided by `num_relevant`, the number of relevant items judged (so
/// relevant items never retrieved count as 0); 0 when `num_relevant` is 0.
///
/// ```
/// # use rag_eval::metrics::average_precision;
/// // relevant at ranks 1 and 3 of 3 judged relevant: (1/1 + 2/3) / 3
/// assert_eq!(average_precision(&[1, 0, 1], 3), (1.0 + 2.0 / 3.0) / 3.0);
/// ```
pub fn average_precision(grades: &[Grade], num_relevant: usize) -> f64 {
    if num_relevant == 0 {
        return 0.0;
    }
    let mut found = 0usize;
    let mut sum = 0.0;
    for (i, &g) in grades.iter().enumerate() {
        if is_relevant(g) {
            found += 1;
            sum += found as f64 / (i + 1) as f64;
        }
    }
    sum / num_relevant as f64
}

/// Ranks whose discount is kept in a table; the sums below run over short prefixes, and
/// `log2` dominates their cost otherwise.
const DISCOUNT_TABLE: usize = 1024;

fn discount_table() -> &'static [f64] {
    static TABLE: OnceLock<Vec<f64>> = OnceLock::new();
    TABLE.get_or_init(|| {
        (0..DISCOUNT_TABLE)
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .collect()
    })
}

/// `1 / log2(rank + 1)` for the 0-based position `i` (rank `i + 1`).
#[inline]
fn discount(table: &[f64], i: usize) -> f64 {
    match table.get(i) {
        Some(&d) => d,
        None => 1.0 / ((i + 2) as f64).log2(),
    }
}

/// Discounted cumulative gain of the first `k` grades: `Σ grade / log2(rank + 1)` over the
/// positive grades, the gain being the grade itself (trec_eval's default gains).
pub fn dcg_at_k(grades: &[Grade], k: usize) -> f64 {
    let table = discount_table();
    let mut sum = 0.0;
    // Summing in rank order, as trec_eval does, keeps the last bits equal.
    for (i, &g) in grades[..k.min(grades.len())].iter().enumerate() {
        if g > 0 {
            sum += f64::from(g) * discount(table, i);
        }
    }
    sum
}

/// The judged grades in the order of an ideal ranking: positive grades only, highest first.
/// This is the `ideal` argument of [`ndcg_at_k`].
///
/// ```
/// # use rag_eval::metrics::ideal_grades;
/// assert_eq!(ideal_grades([0, 2, 1, 3, 0, 2]), vec![3, 2, 2, 1]);
/// ```
pub fn ideal_grades(judged: impl IntoIterator<Item = Grade>) -> Vec<Grade> {
    let mut ideal: Vec<Grade> = judged.into_iter().filter(|&g| g > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    ideal
}

/// Normalised DCG at `k` (trec_eval `ndcg_cut_k`): [`dcg_at_k`] of the ranking divided by
/// [`dcg_at_k`] of `ideal`, which must hold every judged grade in descending order (see
/// [`ideal_grades`]), whether retrieved or not. 0 when the ideal gains nothing.
///
/// ```
/// # use rag_eval::metrics::{ideal_grades, ndcg_at_k};
/// let ideal = ideal_grades([1, 2]);
/// // ranking 1, 2 against the ideal 2, 1
/// let expected = (1.0 + 2.0 / 3f64.log2()) / (2.0 + 1.0 / 3f64.log2());
/// assert!((ndcg_at_k(&[1, 2], &ideal, 10) - expected).abs() < 1e-15);
/// ```
pub fn ndcg_at_k(grades: &[Grade], ideal: &[Grade], k: usize) -> f64 {
    let idcg = dcg_at_k(ideal, k);
    if idcg > 0.0 {
        dcg_at_k(grades, k) / idcg
    } else {
        0.0
    }
}

/// Chunk-level grades: 1 for an id in the truth seen for the first time, 0 otherwise, for the
/// given ids; plus the number of distinct truth ids.
fn chunk_grades(ranked: &[ChunkId], truth: &[ChunkId]) -> (Vec<Grade>, usize) {
    let truth: HashSet<&ChunkId> = truth.iter().collect();
    let mut seen: HashSet<&ChunkId> = HashSet::with_capacity(ranked.len());
    let grades = ranked
        .iter()
        .map(|id| Grade::from(seen.insert(id) && truth.contains(id)))
        .collect();
    (grades, truth.len())
}

/// Token-level judgement of a ranking against merged truth spans.
struct SpanGrades {
    /// 1 when the chunk overlaps a truth span (and is not a repeat), else 0.
    relevant: Vec<Grade>,
    /// Number of truth spans the chunk is the first to overlap.
    first_hits: Vec<u32>,
    /// Number of merged truth spans.
    spans: usize,
}

impl SpanGrades {
    fn new(ranked: &[CharSpan], truth: &[CharSpan]) -> Self {
        // SpanSet iterates by document, then position: sorted, disjoint, per document.
        let merged: Vec<CharSpan> = SpanSet::from_spans(truth).iter().collect();
        let mut met = vec![false; merged.len()];
        let mut seen: HashSet<&CharSpan> = HashSet::with_capacity(ranked.len());
        let mut relevant = Vec::with_capacity(ranked.len());
        let mut first_hits = Vec::with_capacity(ranked.len());
        for chunk in ranked {
            let fresh = seen.insert(chunk);
            let from = merged
                .partition_point(|g| (g.doc.as_str(), g.end) <= (chunk.doc.as_str(), chunk.start));
            let mut overlaps = false;
            let mut new_spans = 0;
            // An empty chunk shares no character, though `CharSpan::overlaps` would accept one
            // lying strictly inside a span.
            let skip = if chunk.is_empty() { merged.len() } else { from };
            for (j, g) in merged.iter().enumerate().skip(skip) {
                if !g.overlaps(chunk) {
                    break;
                }
                overlaps = true;
                if !met[j] {
                    met[j] = true;
                    new_spans += 1;
                }
            }
            relevant.push(Grade::from(fresh && overlaps));
            first_hits.push(new_spans);
        }
        SpanGrades {
            relevant,
            first_hits,
            spans: merged.len(),
        }
    }

    fn recall_at_k(&self, k: usize) -> f64 {
        let met: u32 = self.first_hits[..k.min(self.first_hits.len())].iter().sum();
        ratio(met as usize, self.spans)
    }

    fn average_precision(&self) -> f64 {
        if self.spans == 0 {
            return 0.0;
        }
        let mut relevant_so_far = 0usize;
        let mut sum = 0.0;
        for (i, (&rel, &hits)) in self.relevant.iter().zip(&self.first_hits).enumerate() {
            relevant_so_far += usize::from(is_relevant(rel));
            if hits > 0 {
                sum += f64::from(hits) * relevant_so_far as f64 / (i + 1) as f64;
            }
        }
        sum / self.spans as f64
    }

    fn ndcg_at_k(&self, k: usize) -> f64 {
        let gains: Vec<Grade> = self
            .first_hits
            .iter()
            .map(|&h| Grade::from(h > 0))
            .collect();
        let ideal = vec![1; self.spans.min(k)];
        ndcg_at_k(&gains, &ideal, k)
    }
}

macro_rules! rank_metric {
    ($(#[$doc:meta])* $ty:ident, $name:literal, at_k = $at_k:literal,
     chunk: |$cg:ident, $cn:ident, $ck:ident| $chunk:expr,
     token: |$sg:ident, $tk:ident| $token:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct $ty;

        impl Metric<ChunkLevel> for $ty {
            fn name(&self) -> &str {
                $name
            }

            fn at_k(&self) -> bool {
                $at_k
            }

            fn compute(&self, input: &MetricInput<'_, ChunkLevel>) -> f64 {
                let ranked = if $at_k { input.top_k() } else { input.retrieved };
                let ($cg, $cn) = chunk_grades(ranked, input.truth);
                let $ck = input.k;
                $chunk
            }
        }

        impl Metric<TokenLevel> for $ty {
            fn name(&self) -> &str {
                $name
            }

            fn at_k(&self) -> bool {
                $at_k
            }

            fn compute(&self, input: &MetricInput<'_, TokenLevel>) -> f64 {
                let ranked = if $at_k { input.top_k() } else { input.retrieved };
                let $sg = SpanGrades::new(ranked, input.truth);
                let $tk = input.k;
                $token
            }
        }
    };
}

rank_metric!(
    /// Relevant among the first `k`, divided by `k` (`precision@k`).
    ///
    /// # Relevance at each level
    ///
    /// [`Precision`] (`precision@k`), [`Recall`] (`recall@k`), [`F1`] (`f1@k`), [`Hit`]
    /// (`hit@k`), [`Ndcg`] (`ndcg@k`), [`Mrr`] (`mrr`) and [`Map`] (`map`) are [`Metric`]s at both
    /// levels. `mrr` and `map` are measures over the whole ranked list handed to them
    /// ([`Metric::at_k`] is false); the others look at the first `k`. The ranking is taken in the
    /// order given: ties were already broken by the retriever.
    ///
    /// **Chunk level.** A retrieved id is relevant (grade 1) when it is in the truth. An id that
    /// occurs again further down the ranking is *not* relevant the second time: it occupies a slot
    /// (it still counts in the `k` of `precision@k`) but adds nothing, so returning the same chunk
    /// twice never raises a figure. The number of relevant items is the number of distinct truth
    /// ids, and the ideal nDCG ranking is that many ones.
    ///
    /// **Token level.** The truth spans are first merged ([`SpanSet`]: overlapping and touching
    /// spans become one); call the merged spans G. A retrieved chunk *overlaps* a truth span when
    /// they share at least one character ([`CharSpan::overlaps`]).
    ///
    /// - `precision@k`, `hit@k` and `mrr` count a chunk as relevant when it overlaps some span of
    ///   G. A chunk whose exact span (document, start, end) was already retrieved higher up is not
    ///   relevant again, as at chunk level.
    /// - `recall@k` is the fraction of the spans of G overlapped by some chunk among the first `k`.
    /// - `map` is the mean, over the spans of G, of the precision at the rank of the first chunk
    ///   that overlaps that span, with 0 for a span no chunk meets.
    /// - `ndcg@k` uses binary *first-hit* gains: a chunk gains 1 when it is the first to overlap at
    ///   least one span of G not met higher up, and 0 otherwise; the ideal is `min(k, |G|)` ones.
    ///   At most `|G|` chunks gain, so the value never exceeds 1.
    /// - `f1@k` is the harmonic mean of the token-level `precision@k` and `recall@k`.
    ///
    /// With these definitions every value is in `[0, 1]`; with no truth or nothing retrieved every
    /// metric is 0.
    ///
    /// ```
    /// use rag_eval::chunk::ChunkId;
    /// use rag_eval::level::ChunkLevel;
    /// use rag_eval::metrics::{Map, Metric, MetricInput, Ndcg, Precision};
    ///
    /// let id = |s: &str| ChunkId::from_raw(s);
    /// let retrieved = [id("x"), id("a"), id("a"), id("b")];
    /// let truth = vec![id("a"), id("b")];
    /// let input = MetricInput::<ChunkLevel>::new(&retrieved, &truth, 3);
    /// // grades 0 1 0 (the second `a` is a repeat): one relevant in the first three
    /// assert_eq!(Precision.compute(&input), 1.0 / 3.0);
    /// // AP = (1/2 + 2/4) / 2 over the whole list
    /// assert_eq!(Map.compute(&input), 0.5);
    /// // both levels implement the metric, so name the one meant
    /// assert_eq!(Metric::<ChunkLevel>::report_name(&Map, 3), "map");
    /// assert_eq!(Metric::<ChunkLevel>::report_name(&Ndcg, 3), "ndcg@3");
    /// ```
    Precision, "precision", at_k = true,
    chunk: |g, _n, k| precision_at_k(&g, k),
    token: |s, k| precision_at_k(&s.relevant, k)
);

rank_metric!(
    /// Share of the truth found in the first `k` (`recall@k`): distinct truth ids at chunk
    /// level, merged truth spans overlapped at token level (see [`Precision`] for the rules).
    Recall, "recall", at_k = true,
    chunk: |g, n, k| recall_at_k(&g, k, n),
    token: |s, k| s.recall_at_k(k)
);

rank_metric!(
    /// Harmonic mean of [`Precision`] and [`Recall`] at `k` (`f1@k`).
    F1, "f1", at_k = true,
    chunk: |g, n, k| f1_at_k(&g, k, n),
    token: |s, k| harmonic_mean(precision_at_k(&s.relevant, k), s.recall_at_k(k))
);

rank_metric!(
    /// 1 when any of the first `k` is relevant, else 0 (`hit@k`); its mean is the hit rate.
    /// Relevance as defined on [`Precision`].
    Hit, "hit", at_k = true,
    chunk: |g, _n, k| hit_at_k(&g, k),
    token: |s, k| hit_at_k(&s.relevant, k)
);

rank_metric!(
    /// Reciprocal rank of the first relevant item over the whole ranking given (`mrr`, the
    /// mean over queries being the MRR); relevance as defined on [`Precision`].
    Mrr, "mrr", at_k = false,
    chunk: |g, _n, _k| reciprocal_rank(&g),
    token: |s, _k| reciprocal_rank(&s.relevant)
);

rank_metric!(
    /// Normalised discounted cumulative gain at `k` (`ndcg@k`) with binary gains: relevance at
    /// chunk level, first hits of merged truth spans at token level (see [`Precision`]).
    Ndcg, "ndcg", at_k = true,
    chunk: |g, n, k| ndcg_at_k(&g, &vec![1; n.min(k)], k),
    token: |s, k| s.ndcg_at_k(k)
);

rank_metric!(
    /// Average precision over the whole ranking given (`map`, the mean over queries being the
    /// MAP); truth never retrieved counts as 0. At token level it averages over merged truth
    /// spans (see [`Precision`]).
    Map, "map", at_k = false,
    chunk: |g, n, _k| average_precision(&g, n),
    token: |s, _k| s.average_precision()
);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const EPS: f64 = 1e-12;

    fn ids(names: &[&str]) -> Vec<ChunkId> {
        names.iter().map(|s| ChunkId::from_raw(*s)).collect()
    }

    fn sp(doc: &str, s: usize, e: usize) -> CharSpan {
        CharSpan::new(doc, s, e)
    }

    fn chunk<M: Metric<ChunkLevel>>(m: M, retrieved: &[&str], truth: &[&str], k: usize) -> f64 {
        let (r, t) = (ids(retrieved), ids(truth));
        m.compute(&MetricInput::<ChunkLevel>::new(&r, &t, k))
    }

    fn token<M: Metric<TokenLevel>>(
        m: M,
        retrieved: &[CharSpan],
        truth: &[CharSpan],
        k: usize,
    ) -> f64 {
        m.compute(&MetricInput::<TokenLevel>::new(
            retrieved,
            &truth.to_vec(),
            k,
        ))
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < EPS
    }

    // ---- the grade functions, by hand ----

    #[test]
    fn precision_divides_by_k_and_zero_k_is_zero() {
        assert_eq!(precision_at_k(&[1, 0, 3, 0], 2), 0.5);
        assert_eq!(precision_at_k(&[1, 0, 3, 0], 4), 0.5);
        assert_eq!(precision_at_k(&[1, 0, 3, 0], 10), 0.2);
        assert_eq!(precision_at_k(&[1], 0), 0.0);
        assert_eq!(precision_at_k(&[], 3), 0.0);
        assert_eq!(
            precision_at_k(&[-1, -2, 0], 3),
            0.0,
            "unjudged is not relevant"
        );
    }

    #[test]
    fn recall_f1_hit_by_hand() {
        let g = [0, 2, 0, 1];
        assert_eq!(recall_at_k(&g, 2, 4), 0.25);
        assert_eq!(recall_at_k(&g, 10, 4), 0.5);
        assert_eq!(recall_at_k(&g, 10, 0), 0.0);
        // P@2 = 1/2, R@2 = 1/4 → 2·(1/8)/(3/4) = 1/3
        assert!(close(f1_at_k(&g, 2, 4), 1.0 / 3.0));
        assert_eq!(f1_at_k(&[0, 0], 2, 3), 0.0);
        assert_eq!(hit_at_k(&g, 1), 0.0);
        assert_eq!(hit_at_k(&g, 2), 1.0);
        assert_eq!(hit_at_k(&[], 2), 0.0);
    }

    #[test]
    fn reciprocal_rank_and_average_precision_by_hand() {
        assert_eq!(reciprocal_rank(&[0, 0, 1]), 1.0 / 3.0);
        assert_eq!(reciprocal_rank(&[2]), 1.0);
        assert_eq!(reciprocal_rank(&[0, -1]), 0.0);
        // relevant at ranks 2 and 4, 3 relevant judged: (1/2 + 2/4) / 3
        assert!(close(average_precision(&[0, 1, 0, 3], 3), 1.0 / 3.0));
        assert_eq!(average_precision(&[1, 1], 0), 0.0);
        assert_eq!(average_precision(&[], 2), 0.0);
    }

    #[test]
    fn ndcg_uses_grades_as_gains_and_every_judged_grade_for_the_ideal() {
        // ranking grades 0, 3, 1; judged grades {3, 2, 1, 0}
        let ideal = ideal_grades([3, 2, 1, 0]);
        assert_eq!(ideal, vec![3, 2, 1]);
        let l2 = |x: f64| x.log2();
        let dcg = 3.0 / l2(3.0) + 1.0 / l2(4.0);
        let idcg3 = 3.0 + 2.0 / l2(3.0) + 1.0 / l2(4.0);
        assert!(close(dcg_at_k(&[0, 3, 1], 3), dcg));
        assert!(close(ndcg_at_k(&[0, 3, 1], &ideal, 3), dcg / idcg3));
        // at k = 2 the ideal is cut too
        let idcg2 = 3.0 + 2.0 / l2(3.0);
        assert!(close(
            ndcg_at_k(&[0, 3, 1], &ideal, 2),
            (3.0 / l2(3.0)) / idcg2
        ));
        assert_eq!(ndcg_at_k(&[1, 1], &[], 2), 0.0, "nothing relevant judged");
        assert_eq!(ndcg_at_k(&[-1, 0], &ideal, 2), 0.0);
        assert_eq!(ndcg_at_k(&[3, 2, 1], &ideal, 3), 1.0);
    }

    #[test]
    fn discounts_beyond_the_table_agree() {
        let mut g = vec![0; DISCOUNT_TABLE + 10];
        g[DISCOUNT_TABLE + 5] = 2;
        let expected = 2.0 / ((DISCOUNT_TABLE + 7) as f64).log2();
        assert!(close(dcg_at_k(&g, g.len()), expected));
    }

    // ---- chunk level ----

    #[test]
    fn names_and_at_k() {
        assert_eq!(
            Metric::<ChunkLevel>::report_name(&Precision, 5),
            "precision@5"
        );
        assert_eq!(Metric::<TokenLevel>::report_name(&Recall, 5), "recall@5");
        assert_eq!(Metric::<ChunkLevel>::report_name(&F1, 3), "f1@3");
        assert_eq!(Metric::<ChunkLevel>::report_name(&Hit, 1), "hit@1");
        assert_eq!(Metric::<TokenLevel>::report_name(&Ndcg, 10), "ndcg@10");
        assert_eq!(Metric::<ChunkLevel>::report_name(&Mrr, 10), "mrr");
        assert_eq!(Metric::<TokenLevel>::report_name(&Map, 10), "map");
        assert!(!Metric::<TokenLevel>::at_k(&Mrr));
        assert!(!Metric::<ChunkLevel>::at_k(&Map));
    }

    #[test]
    fn chunk_level_hand_worked() {
        let r = ["x", "a", "y", "b", "c"];
        let t = ["a", "b", "c", "d"];
        assert_eq!(chunk(Precision, &r, &t, 4), 0.5);
        assert_eq!(chunk(Recall, &r, &t, 4), 0.5);
        assert_eq!(chunk(F1, &r, &t, 4), 0.5);
        assert_eq!(chunk(Hit, &r, &t, 1), 0.0);
        assert_eq!(chunk(Hit, &r, &t, 2), 1.0);
        assert_eq!(chunk(Mrr, &r, &t, 1), 0.5, "mrr ignores k");
        // AP over the whole list: (1/2 + 2/4 + 3/5) / 4
        assert!(close(chunk(Map, &r, &t, 1), (0.5 + 0.5 + 0.6) / 4.0));
        // nDCG@4: gains at ranks 2 and 4 over an ideal of four ones
        let l2 = |x: f64| x.log2();
        let dcg = 1.0 / l2(3.0) + 1.0 / l2(5.0);
        let idcg = 1.0 + 1.0 / l2(3.0) + 1.0 / l2(4.0) + 1.0 / l2(5.0);
        assert!(close(chunk(Ndcg, &r, &t, 4), dcg / idcg));
    }

    #[test]
    fn chunk_level_repeats_occupy_a_slot_but_add_nothing() {
        let r = ["a", "a", "a", "b"];
        let t = ["a", "b"];
        assert_eq!(chunk(Precision, &r, &t, 3), 1.0 / 3.0);
        assert_eq!(chunk(Recall, &r, &t, 3), 0.5);
        assert!(close(chunk(Map, &r, &t, 3), (1.0 + 2.0 / 4.0) / 2.0));
        // duplicates in the truth count once
        assert_eq!(chunk(Recall, &["a"], &["a", "a", "b"], 5), 0.5);
        assert_eq!(chunk(Ndcg, &["a", "a"], &["a"], 2), 1.0);
    }

    #[test]
    fn chunk_level_edge_cases() {
        let every = |r: &[&str], t: &[&str], k: usize| {
            [
                chunk(Precision, r, t, k),
                chunk(Recall, r, t, k),
                chunk(F1, r, t, k),
                chunk(Hit, r, t, k),
                chunk(Mrr, r, t, k),
                chunk(Ndcg, r, t, k),
                chunk(Map, r, t, k),
            ]
        };
        assert_eq!(every(&["a", "b"], &[], 2), [0.0; 7], "empty truth");
        assert_eq!(every(&[], &["a"], 2), [0.0; 7], "empty retrieval");
        assert_eq!(every(&[], &[], 2), [0.0; 7], "both empty");
        // k beyond the list: precision (and so F1) still divides by k; the rest see the
        // whole list
        let long_k = every(&["a", "x"], &["a"], 10);
        let whole = every(&["a", "x"], &["a"], 2);
        assert_eq!(long_k[0], 0.1);
        assert!(close(long_k[2], 2.0 * 0.1 / 1.1));
        assert_eq!(long_k[1], whole[1]);
        assert_eq!(&long_k[3..], &whole[3..]);
        assert_eq!(long_k[5], 1.0);
    }

    #[test]
    fn ranking_order_decides_between_equally_relevant_items() {
        // Swapping two relevant items, or two non-relevant ones, changes nothing.
        let t = ["a", "b"];
        for m in [
            &Precision as &dyn Metric<ChunkLevel>,
            &Recall,
            &Ndcg,
            &Map,
            &Mrr,
        ] {
            let x = m.compute(&MetricInput::new(&ids(&["a", "x", "b", "y"]), &ids(&t), 3));
            let y = m.compute(&MetricInput::new(&ids(&["b", "y", "a", "x"]), &ids(&t), 3));
            assert_eq!(x, y, "{}", m.name());
        }
    }

    // ---- token level ----

    #[test]
    fn token_level_hand_worked() {
        // truth: two spans in d (merged from three) and one in e
        let truth = [
            sp("d", 0, 10),
            sp("d", 5, 20),
            sp("d", 50, 60),
            sp("e", 0, 5),
        ];
        let ranked = [
            sp("d", 100, 120), // 1: nothing
            sp("d", 15, 55),   // 2: meets d[0,20) and d[50,60)
            sp("d", 55, 70),   // 3: overlaps d[50,60) again: relevant, no new span
            sp("e", 5, 9),     // 4: touches e[0,5) only: not relevant
            sp("e", 2, 3),     // 5: meets e[0,5)
        ];
        assert_eq!(token(Precision, &ranked, &truth, 4), 0.5);
        assert_eq!(token(Hit, &ranked, &truth, 1), 0.0);
        assert_eq!(token(Hit, &ranked, &truth, 2), 1.0);
        assert_eq!(token(Mrr, &ranked, &truth, 1), 0.5);
        assert_eq!(token(Recall, &ranked, &truth, 2), 2.0 / 3.0);
        assert_eq!(token(Recall, &ranked, &truth, 5), 1.0);
        assert!(close(
            token(F1, &ranked, &truth, 4),
            2.0 * 0.5 * (2.0 / 3.0) / (0.5 + 2.0 / 3.0)
        ));
        // MAP: spans first met at ranks 2, 2, 5; precision there 1/2, 1/2, 3/5
        assert!(close(
            token(Map, &ranked, &truth, 1),
            (0.5 + 0.5 + 0.6) / 3.0
        ));
        // nDCG@5: first-hit gains at ranks 2 and 5; ideal min(5, 3) = 3 ones
        let l2 = |x: f64| x.log2();
        let dcg = 1.0 / l2(3.0) + 1.0 / l2(6.0);
        let idcg = 1.0 + 1.0 / l2(3.0) + 1.0 / l2(4.0);
        assert!(close(token(Ndcg, &ranked, &truth, 5), dcg / idcg));
        // at k = 1 the ideal is a single one and nothing was gained
        assert_eq!(token(Ndcg, &ranked, &truth, 1), 0.0);
    }

    #[test]
    fn token_level_edge_cases() {
        let every = |r: &[CharSpan], t: &[CharSpan], k: usize| {
            [
                token(Precision, r, t, k),
                token(Recall, r, t, k),
                token(F1, r, t, k),
                token(Hit, r, t, k),
                token(Mrr, r, t, k),
                token(Ndcg, r, t, k),
                token(Map, r, t, k),
            ]
        };
        let t = [sp("d", 0, 10)];
        assert_eq!(every(&[sp("d", 0, 5)], &[], 3), [0.0; 7], "empty truth");
        assert_eq!(every(&[], &t, 3), [0.0; 7], "empty retrieval");
        assert_eq!(every(&[], &[], 3), [0.0; 7], "both empty");
        // an empty truth span merges away, so it is no truth at all
        assert_eq!(every(&[sp("d", 0, 5)], &[sp("d", 3, 3)], 3), [0.0; 7]);
        // an empty chunk inside a truth span shares no character with it
        assert_eq!(every(&[sp("d", 3, 3)], &t, 3), [0.0; 7]);
        // k beyond the list
        let v = every(&[sp("d", 2, 4)], &t, 4);
        assert_eq!(v, [0.25, 1.0, 0.4, 1.0, 1.0, 1.0, 1.0]);
        // a repeated span takes a slot but is not relevant again; another overlapping one is
        let r = [sp("d", 2, 4), sp("d", 2, 4), sp("d", 3, 5)];
        assert_eq!(token(Precision, &r, &t, 3), 2.0 / 3.0);
        assert_eq!(token(Recall, &r, &t, 3), 1.0);
        assert!(close(token(Map, &r, &t, 3), 1.0));
    }

    #[test]
    fn token_level_one_chunk_meeting_many_spans_cannot_exceed_one() {
        let truth = [sp("d", 0, 2), sp("d", 4, 6), sp("d", 8, 10)];
        let ranked = [sp("d", 0, 10)];
        assert_eq!(token(Recall, &ranked, &truth, 1), 1.0);
        assert_eq!(token(Map, &ranked, &truth, 1), 1.0);
        // one gain at rank 1 against an ideal of min(1, 3) = 1 one
        assert_eq!(token(Ndcg, &ranked, &truth, 1), 1.0);
        // at k = 3 the ideal wants three first hits
        let idcg = 1.0 + 1.0 / 3f64.log2() + 0.5;
        assert!(close(token(Ndcg, &ranked, &truth, 3), 1.0 / idcg));
    }

    // ---- property tests against naive models ----

    /// Chunk level, straight from the definitions with no shared code.
    fn naive_chunk(r: &[ChunkId], t: &[ChunkId], k: usize) -> [f64; 7] {
        let truth: Vec<&ChunkId> = {
            let mut v: Vec<&ChunkId> = t.iter().collect();
            v.sort();
            v.dedup();
            v
        };
        let rel: Vec<bool> = (0..r.len())
            .map(|i| truth.contains(&&r[i]) && !r[..i].contains(&r[i]))
            .collect();
        let top = k.min(r.len());
        let hits = rel[..top].iter().filter(|&&x| x).count() as f64;
        let n = truth.len() as f64;
        let p = if k == 0 { 0.0 } else { hits / k as f64 };
        let rec = if n == 0.0 { 0.0 } else { hits / n };
        let f1 = if p + rec == 0.0 {
            0.0
        } else {
            2.0 * p * rec / (p + rec)
        };
        let hit = if hits > 0.0 { 1.0 } else { 0.0 };
        let mrr = rel
            .iter()
            .position(|&x| x)
            .map_or(0.0, |i| 1.0 / (i as f64 + 1.0));
        let mut ap = 0.0;
        for i in 0..r.len() {
            if rel[i] {
                let above = rel[..=i].iter().filter(|&&x| x).count() as f64;
                ap += above / (i as f64 + 1.0);
            }
        }
        let ap = if n == 0.0 { 0.0 } else { ap / n };
        let dcg: f64 = (0..top)
            .filter(|&i| rel[i])
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .sum();
        let idcg: f64 = (0..k.min(truth.len()))
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .sum();
        let ndcg = if idcg == 0.0 { 0.0 } else { dcg / idcg };
        [p, rec, f1, hit, mrr, ndcg, ap]
    }

    /// Token level, per character: a chunk overlaps a span when they share a (doc, char).
    fn naive_token(r: &[CharSpan], t: &[CharSpan], k: usize) -> [f64; 7] {
        use std::collections::BTreeSet;
        let chars = |s: &CharSpan| -> BTreeSet<(String, usize)> {
            (s.start..s.end).map(|c| (s.doc.to_string(), c)).collect()
        };
        // merge truth by growing groups of characters that touch or overlap
        let mut all: BTreeSet<(String, usize)> = BTreeSet::new();
        for s in t {
            all.extend(chars(s));
        }
        let mut merged: Vec<BTreeSet<(String, usize)>> = Vec::new();
        for (doc, c) in all {
            match merged.last_mut() {
                Some(g) if g.last().is_some_and(|(d, e)| *d == doc && e + 1 == c) => {
                    g.insert((doc, c));
                }
                _ => merged.push(BTreeSet::from([(doc, c)])),
            }
        }
        let meets = |chunk: &CharSpan, g: &BTreeSet<(String, usize)>| !chars(chunk).is_disjoint(g);
        let rel: Vec<bool> = (0..r.len())
            .map(|i| !r[..i].contains(&r[i]) && merged.iter().any(|g| meets(&r[i], g)))
            .collect();
        let first: Vec<Option<usize>> = merged
            .iter()
            .map(|g| r.iter().position(|c| meets(c, g)))
            .collect();
        let top = k.min(r.len());
        let hits = rel[..top].iter().filter(|&&x| x).count() as f64;
        let n = merged.len() as f64;
        let p = if k == 0 { 0.0 } else { hits / k as f64 };
        let met = first.iter().filter(|f| f.is_some_and(|i| i < top)).count() as f64;
        let rec = if n == 0.0 { 0.0 } else { met / n };
        let f1 = if p + rec == 0.0 {
            0.0
        } else {
            2.0 * p * rec / (p + rec)
        };
        let hit = if hits > 0.0 { 1.0 } else { 0.0 };
        let mrr = rel
            .iter()
            .position(|&x| x)
            .map_or(0.0, |i| 1.0 / (i as f64 + 1.0));
        let prec_at = |i: usize| rel[..=i].iter().filter(|&&x| x).count() as f64 / (i as f64 + 1.0);
        let ap = first.iter().flatten().map(|&i| prec_at(i)).sum::<f64>();
        let ap = if n == 0.0 { 0.0 } else { ap / n };
        let gain_ranks: BTreeSet<usize> = first.iter().flatten().copied().collect();
        let dcg: f64 = gain_ranks
            .iter()
            .filter(|&&i| i < top)
            .map(|&i| 1.0 / ((i + 2) as f64).log2())
            .sum();
        let idcg: f64 = (0..k.min(merged.len()))
            .map(|i| 1.0 / ((i + 2) as f64).log2())
            .sum();
        let ndcg = if idcg == 0.0 { 0.0 } else { dcg / idcg };
        [p, rec, f1, hit, mrr, ndcg, ap]
    }

    fn all_chunk(r: &[ChunkId], t: &[ChunkId], k: usize) -> [f64; 7] {
        let t = t.to_vec();
        let input = MetricInput::<ChunkLevel>::new(r, &t, k);
        [
            Precision.compute(&input),
            Recall.compute(&input),
            F1.compute(&input),
            Hit.compute(&input),
            Mrr.compute(&input),
            Ndcg.compute(&input),
            Map.compute(&input),
        ]
    }

    fn all_token(r: &[CharSpan], t: &[CharSpan], k: usize) -> [f64; 7] {
        let t = t.to_vec();
        let input = MetricInput::<TokenLevel>::new(r, &t, k);
        [
            Precision.compute(&input),
            Recall.compute(&input),
            F1.compute(&input),
            Hit.compute(&input),
            Mrr.compute(&input),
            Ndcg.compute(&input),
            Map.compute(&input),
        ]
    }

    fn arb_spans(max: usize) -> impl Strategy<Value = Vec<CharSpan>> {
        prop::collection::vec(
            (prop::sample::select(vec!["a", "b"]), 0usize..40, 0usize..12)
                .prop_map(|(d, s, l)| sp(d, s, s + l)),
            0..max,
        )
    }

    proptest! {
        #[test]
        fn chunk_metrics_agree_with_the_naive_model(
            r in prop::collection::vec(0u8..10, 0..14),
            t in prop::collection::vec(0u8..10, 0..7),
            k in 0usize..16,
        ) {
            let r: Vec<ChunkId> = r.iter().map(|i| ChunkId::from_raw(format!("c{i}"))).collect();
            let t: Vec<ChunkId> = t.iter().map(|i| ChunkId::from_raw(format!("c{i}"))).collect();
            let ours = all_chunk(&r, &t, k);
            let naive = naive_chunk(&r, &t, k);
            for (i, (a, b)) in ours.iter().zip(naive).enumerate() {
                prop_assert!((a - b).abs() < 1e-12, "metric {i}: {a} vs {b}");
                prop_assert!((0.0..=1.0).contains(a), "metric {i} out of range: {a}");
            }
        }

        #[test]
        fn token_metrics_agree_with_the_per_character_model(
            r in arb_spans(10),
            t in arb_spans(5),
            k in 0usize..12,
        ) {
            let ours = all_token(&r, &t, k);
            let naive = naive_token(&r, &t, k);
            for (i, (a, b)) in ours.iter().zip(naive).enumerate() {
                prop_assert!((a - b).abs() < 1e-12, "metric {i}: {a} vs {b}");
                prop_assert!((0.0..=1.0).contains(a), "metric {i} out of range: {a}");
            }
        }

        #[test]
        fn graded_functions_stay_in_range(
            grades in prop::collection::vec(-2i32..4, 0..30),
            extra in prop::collection::vec(0i32..4, 0..10),
            k in 0usize..40,
        ) {
            // the judged set holds every retrieved judged grade plus some never retrieved
            let judged: Vec<Grade> = grades.iter().copied().filter(|&g| g >= 0).chain(extra).collect();
            let n = judged.iter().filter(|&&g| is_relevant(g)).count();
            let ideal = ideal_grades(judged);
            for v in [
                precision_at_k(&grades, k),
                recall_at_k(&grades, k, n),
                f1_at_k(&grades, k, n),
                reciprocal_rank(&grades),
                average_precision(&grades, n),
                ndcg_at_k(&grades, &ideal, k),
            ] {
                prop_assert!((0.0..=1.0 + 1e-12).contains(&v), "{v}");
            }
        }
    }
}
