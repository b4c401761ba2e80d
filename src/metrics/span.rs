//! Token-level span metrics: recall, precision and IoU over characters, in two modes
//! ([`SpanMode`]).
//!
//! ```
//! use rag_eval::metrics::{Metric, MetricInput, SpanIou, SpanMode, SpanPrecision, SpanRecall};
//! use rag_eval::span::CharSpan;
//!
//! let retrieved = [CharSpan::new("d", 0, 10), CharSpan::new("d", 5, 15)];
//! let truth = vec![CharSpan::new("d", 10, 20)];
//! let input = MetricInput::new(&retrieved, &truth, 5);
//! assert_eq!(SpanRecall::default().compute(&input), 0.5);
//! assert_eq!(SpanPrecision::default().compute(&input), 5.0 / 15.0);
//! assert_eq!(SpanIou::default().compute(&input), 5.0 / 20.0);
//! // The chunking_evaluation mode sums the two overlapping chunks: 5 / (10 + 10).
//! assert_eq!(SpanPrecision::new(SpanMode::ChunkingEvaluation).compute(&input), 0.25);
//! assert_eq!(SpanRecall::default().report_name(5), "span_recall@5");
//! ```

use super::chunking_evaluation::RetrievalParts;
use super::SpanMode;
use super::{Metric, MetricInput};
use crate::level::TokenLevel;
use crate::span::SpanSet;

/// The character counts the standard mode needs for one query.
/// Counted in `u128`: lengths from several documents can add up past `usize::MAX`.
struct Counts {
    inter: u128,
    retrieved: u128,
    truth: u128,
}

impl Counts {
    fn new(input: &MetricInput<'_, TokenLevel>) -> Self {
        let r = SpanSet::from_spans(input.top_k());
        let g = SpanSet::from_spans(input.truth);
        Counts {
            inter: r.intersection_count(&g),
            retrieved: r.char_count(),
            truth: g.char_count(),
        }
    }
}

fn ratio(num: u128, den: u128) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

macro_rules! span_metric {
    (
        $(#[$doc:meta])* $ty:ident, $name:literal,
        |$c:ident| $standard:expr,
        |$p:ident| $chroma:expr
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $ty {
            /// How characters are counted.
            pub mode: SpanMode,
        }

        impl $ty {
            /// The metric in the given mode.
            pub fn new(mode: SpanMode) -> Self {
                $ty { mode }
            }
        }

        impl Metric<TokenLevel> for $ty {
            fn name(&self) -> &str {
                $name
            }

            fn span_mode(&self) -> Option<SpanMode> {
                Some(self.mode)
            }

            fn compute(&self, input: &MetricInput<'_, TokenLevel>) -> f64 {
                match self.mode {
                    SpanMode::Standard => {
                        let $c = Counts::new(input);
                        $standard
                    }
                    SpanMode::ChunkingEvaluation => {
                        let $p = RetrievalParts::new(input.top_k(), input.truth);
                        $chroma
                    }
                }
            }
        }
    };
}

span_metric!(
    /// Span recall (`span_recall@k`): the share of truth characters the top-k chunks cover.
    /// 0 when the truth is empty.
    SpanRecall,
    "span_recall",
    |c| ratio(c.inter, c.truth),
    |p| p.recall()
);

span_metric!(
    /// Span precision (`span_precision@k`): the share of retrieved characters that are truth.
    /// 0 when nothing was retrieved.
    SpanPrecision,
    "span_precision",
    |c| ratio(c.inter, c.retrieved),
    |p| p.precision()
);

span_metric!(
    /// Span IoU (`span_iou@k`): intersection over union of retrieved and truth characters.
    /// Standard mode: 1 when both are empty, 0 when only one is.
    SpanIou,
    "span_iou",
    |c| {
        let union = c.retrieved + c.truth - c.inter;
        if union == 0 {
            1.0
        } else {
            c.inter as f64 / union as f64
        }
    },
    |p| p.iou()
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{ChunkIndex, PrecisionOmega};
    use crate::span::CharSpan;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn sp(doc: &str, s: usize, e: usize) -> CharSpan {
        CharSpan::new(doc, s, e)
    }

    fn all(mode: SpanMode, retrieved: &[CharSpan], truth: &[CharSpan], k: usize) -> [f64; 3] {
        let truth = truth.to_vec();
        let input = MetricInput::new(retrieved, &truth, k);
        [
            SpanRecall::new(mode).compute(&input),
            SpanPrecision::new(mode).compute(&input),
            SpanIou::new(mode).compute(&input),
        ]
    }

    #[test]
    fn standard_edge_cases() {
        let t = [sp("d", 0, 10)];
        let r = [sp("d", 20, 30)];
        assert_eq!(all(SpanMode::Standard, &[], &[], 5), [0.0, 0.0, 1.0]);
        assert_eq!(all(SpanMode::Standard, &[], &t, 5), [0.0, 0.0, 0.0]);
        assert_eq!(all(SpanMode::Standard, &r, &[], 5), [0.0, 0.0, 0.0]);
        assert_eq!(
            all(SpanMode::ChunkingEvaluation, &[], &[], 5),
            [0.0, 0.0, 0.0]
        );
    }

    #[test]
    fn standard_cuts_at_k_and_merges_overlaps() {
        let t = [sp("d", 0, 10)];
        let r = [sp("d", 0, 6), sp("d", 4, 10), sp("d", 0, 10)];
        // top-2 covers 0..10 once: 10 retrieved characters, all of them truth.
        assert_eq!(all(SpanMode::Standard, &r, &t, 2), [1.0, 1.0, 1.0]);
        assert_eq!(all(SpanMode::Standard, &r, &t, 1), [0.6, 1.0, 0.6]);
        // The chunking_evaluation mode sums 6 + 6 retrieved characters.
        assert_eq!(
            all(SpanMode::ChunkingEvaluation, &r, &t, 2),
            [1.0, 10.0 / 12.0, 10.0 / 12.0]
        );
    }

    #[test]
    fn names_and_modes() {
        assert_eq!(SpanRecall::default().mode, SpanMode::Standard);
        assert_eq!(
            SpanPrecision::new(SpanMode::ChunkingEvaluation).mode,
            SpanMode::ChunkingEvaluation
        );
        assert_eq!(SpanIou::default().report_name(3), "span_iou@3");
        assert_eq!(
            SpanPrecision::default().report_name(10),
            "span_precision@10"
        );
    }

    type CharSet = BTreeSet<(String, usize)>;

    /// The naive model: a set of (doc, char) pairs.
    fn chars<'a>(spans: impl IntoIterator<Item = &'a CharSpan>) -> CharSet {
        spans
            .into_iter()
            .flat_map(|s| (s.start..s.end).map(move |c| (s.doc.to_string(), c)))
            .collect()
    }

    fn frac(n: usize, d: usize) -> f64 {
        if d == 0 {
            0.0
        } else {
            n as f64 / d as f64
        }
    }

    /// chunking_evaluation's definitions transcribed literally, one character at a time.
    fn naive_chroma(retrieved: &[CharSpan], truth: &[CharSpan], chunks: &[CharSpan]) -> [f64; 4] {
        let meets =
            |a: &CharSpan, b: &CharSpan| a.doc == b.doc && a.start.max(b.start) <= a.end.min(b.end);
        let inter = |a: &CharSpan, b: &CharSpan| {
            CharSpan::new(a.doc.clone(), a.start.max(b.start), a.end.min(b.end))
        };
        // N: characters of any intersection of a meeting (retrieved, truth) pair.
        let mut hit = CharSet::new();
        for r in retrieved {
            for g in truth {
                if meets(r, g) {
                    hit.extend(chars([&inter(r, g)]));
                }
            }
        }
        let sum_r: usize = retrieved.iter().map(|r| r.end - r.start).sum();
        let sum_g: usize = truth.iter().map(|g| g.end - g.start).sum();
        let unused: usize = truth
            .iter()
            .map(|g| chars([g]).difference(&hit).count())
            .sum();
        // Ω: chunks meeting a truth span; true union of those chunks and the leftover truth.
        let mut omega_hit = CharSet::new();
        let mut denominator = CharSet::new();
        for c in chunks {
            for g in truth {
                if meets(c, g) {
                    omega_hit.extend(chars([&inter(c, g)]));
                    denominator.extend(chars([c]));
                }
            }
        }
        for g in truth {
            denominator.extend(chars([g]).difference(&omega_hit).cloned());
        }
        [
            frac(hit.len(), sum_g),
            frac(hit.len(), sum_r),
            frac(hit.len(), sum_r + unused),
            frac(omega_hit.len(), denominator.len()),
        ]
    }

    fn arb_spans(max: usize) -> impl Strategy<Value = Vec<CharSpan>> {
        prop::collection::vec(
            (
                prop::sample::select(vec!["a", "b", "c"]),
                0usize..70,
                0usize..25,
            )
                .prop_map(|(d, s, l)| sp(d, s, s + l)),
            0..max,
        )
    }

    /// Chunker output: per document, consecutive pieces (touching) plus some extra overlapping
    /// windows, as overlapping chunkers produce.
    fn arb_chunks() -> impl Strategy<Value = Vec<CharSpan>> {
        (prop::collection::vec(1usize..20, 1..8), arb_spans(6)).prop_map(|(sizes, extra)| {
            let mut out = Vec::new();
            for doc in ["a", "b"] {
                let mut at = 0;
                for &n in &sizes {
                    out.push(sp(doc, at, at + n));
                    at += n;
                }
            }
            out.extend(extra);
            out
        })
    }

    /// Spans anywhere in the offset range, huge ones included.
    fn arb_wide_spans(max: usize) -> impl Strategy<Value = Vec<CharSpan>> {
        let edge = prop_oneof![
            any::<usize>(),
            Just(usize::MAX),
            Just(1usize << 63),
            (usize::MAX - 100)..=usize::MAX,
            0usize..100,
        ];
        prop::collection::vec(
            (prop::sample::select(vec!["a", "b"]), edge.clone(), edge)
                .prop_map(|(d, x, y)| sp(d, x.min(y), x.max(y))),
            0..max,
        )
    }

    #[test]
    fn huge_spans_do_not_wrap() {
        // One retrieved span reaching the last offset and one in another document: the union
        // of the lengths passes 2^64.
        let r = [sp("a", 0, usize::MAX), sp("b", 0, 100)];
        let t = [sp("a", 0, 100)];
        for mode in [SpanMode::Standard, SpanMode::Chroma] {
            for v in all(mode, &r, &t, 5) {
                assert!((0.0..=1.0).contains(&v), "{mode:?}: {v}");
            }
        }
        let big = 1usize << 63;
        let r = [sp("a", big, usize::MAX), sp("a", big, usize::MAX)];
        let t = [sp("a", big, usize::MAX)];
        assert_eq!(all(SpanMode::Chroma, &r, &t, 5), [1.0, 0.5, 0.5]);
    }

    proptest! {
        #[test]
        fn figures_stay_in_unit_range_for_any_offsets(
            retrieved in arb_wide_spans(8),
            truth in arb_wide_spans(5),
            chunks in arb_wide_spans(8),
            k in 1usize..10,
        ) {
            for mode in [SpanMode::Standard, SpanMode::Chroma] {
                for v in all(mode, &retrieved, &truth, k) {
                    prop_assert!((0.0..=1.0).contains(&v), "{:?}: {}", mode, v);
                }
            }
            let t = truth.clone();
            let input = MetricInput::new(&retrieved, &t, k).with_chunker_output(&chunks);
            let omega = PrecisionOmega::new().compute(&input);
            prop_assert!((0.0..=1.0).contains(&omega), "{}", omega);
        }

        #[test]
        fn standard_agrees_with_a_per_character_model(
            retrieved in arb_spans(8), truth in arb_spans(5), k in 0usize..10
        ) {
            let top = &retrieved[..k.min(retrieved.len())];
            let (r, g) = (chars(top), chars(&truth));
            let inter = r.intersection(&g).count();
            let union = r.union(&g).count();
            let iou = if union == 0 { 1.0 } else { inter as f64 / union as f64 };
            let want = [frac(inter, g.len()), frac(inter, r.len()), iou];
            prop_assert_eq!(all(SpanMode::Standard, &retrieved, &truth, k), want);
        }

        #[test]
        fn chroma_agrees_with_its_definition(
            retrieved in arb_spans(8),
            truth in arb_spans(5),
            chunks in arb_chunks(),
            k in 0usize..10,
        ) {
            let top = &retrieved[..k.min(retrieved.len())];
            let want = naive_chroma(top, &truth, &chunks);
            let got = all(SpanMode::ChunkingEvaluation, &retrieved, &truth, k);
            prop_assert_eq!(&got[..], &want[..3]);
            let index = ChunkIndex::new(&chunks);
            let scores = crate::metrics::chunking_evaluation_scores(top, &truth, Some(&index));
            prop_assert_eq!([scores.recall, scores.precision, scores.iou], got);
            prop_assert_eq!(scores.precision_omega, Some(want[3]));
            let t = truth.clone();
            let input = MetricInput::new(&retrieved, &t, k).with_chunker_output(&chunks);
            prop_assert_eq!(PrecisionOmega::new().compute(&input), want[3]);
            prop_assert_eq!(PrecisionOmega::with_index(index).compute(&input), want[3]);
        }
    }
}
