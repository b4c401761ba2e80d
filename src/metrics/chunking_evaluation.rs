//! The Chroma-compatible token-level mode: chunking_evaluation's per-query figures, exactly.
//! The rules are documented on [`chunking_evaluation_scores`].

use super::{Metric, MetricInput};
use crate::corpus::DocId;
use crate::level::TokenLevel;
use crate::span::CharSpan;
use std::collections::HashMap;
use std::sync::Arc;

/// All four Chroma-mode figures of one query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChunkingEvaluationScores {
    /// `N / Σ|g|`.
    pub recall: f64,
    /// `N / Σ|r|`.
    pub precision: f64,
    /// `N / (Σ|r| + |U|)`.
    pub iou: f64,
    /// PrecisionΩ, when the chunker's output was given.
    pub precision_omega: Option<f64>,
}

/// Scores one query in the Chroma-compatible mode ([`SpanMode::Chroma`](super::SpanMode::Chroma)).
///
/// `retrieved` is the retrieved list already cut at k (every span in it counts); `truth` the
/// query's truth spans; `chunks`, when given, the chunker's whole output, for PrecisionΩ.
///
/// chunking_evaluation (the code behind Chroma's report "Evaluating Chunking Strategies for
/// Retrieval") scores a query from the top-k retrieved chunks `r` and the truth spans `g` as
/// follows. Each rule is listed with the reason it differs from the plain set definitions of
/// the standard mode ([`SpanMode::Standard`](super::SpanMode::Standard)).
///
/// - Two ranges **meet** when they are in the same document and `max(starts) <= min(ends)`.
///   Why: the reference's intersection test is non-strict, so touching ranges count. For the
///   retrieval figures this changes nothing (a touching pair shares no character); for
///   PrecisionΩ it decides which chunks enter the denominator.
/// - **N** `= |⋃ (r ∩ g)|` over pairs in the same document: the characters of the truth that some
///   retrieved chunk covers, counted once. Why: the reference merges the intersections before
///   summing them.
/// - **U** is what is left of each truth span after removing every intersection, summed over the
///   truth spans as given. Why: the reference subtracts from its list of references without
///   merging it, so two overlapping truth spans both count their uncovered characters.
/// - recall `= N / Σ|g|`. Why: the reference sums the truth spans as listed, unmerged.
/// - precision `= N / Σ|r|`, summed over all top-k chunks: chunks of other documents included,
///   and each of two overlapping chunks with its full length. Why: the reference's precision
///   denominator is a plain sum over the retrieved list.
/// - IoU `= N / (Σ|r| + |U|)`. Why: the reference adds the plain retrieved sum and the leftover
///   truth; it is no set union.
/// - Any zero denominator gives 0 (in particular, IoU of an empty retrieval against empty truth
///   is 0, unlike the standard mode's 1). Why: the current reference scores a zero denominator
///   as 0.
/// - **PrecisionΩ** scores a chunker without a retriever. Take every chunk of the chunker's output
///   that meets a truth span (touching included); then PrecisionΩ `= N_Ω / |⋃ chunks ∪ U_Ω|`
///   with `N_Ω = |⋃ (c ∩ g)|` and `U_Ω` the truth left after removing those intersections. Why:
///   here the reference does take a true union of the chunks and the leftover truth. As every
///   intersection lies inside a chunk, the denominator equals `|⋃ meeting chunks ∪ ⋃ g|`, which
///   is how it is computed here; a chunk that only touches a truth span adds its whole length.
///   It is 0 when no chunk meets the truth or the denominator is empty.
///
/// The reference keeps one document per question; here every truth span names its own
/// document and pairs are formed within a document, which is the same rule when all truth lies
/// in one document.
///
/// ```
/// use rag_eval::metrics::{chunking_evaluation_scores, ChunkIndex};
/// use rag_eval::span::CharSpan;
///
/// let truth = [CharSpan::new("a.md", 10, 30)];
/// let retrieved = [CharSpan::new("a.md", 0, 20), CharSpan::new("b.md", 0, 20)];
/// let chunks: ChunkIndex = [CharSpan::new("a.md", 0, 20), CharSpan::new("a.md", 20, 40)]
///     .iter()
///     .collect();
/// let s = chunking_evaluation_scores(&retrieved, &truth, Some(&chunks));
/// assert_eq!(s.recall, 10.0 / 20.0);
/// assert_eq!(s.precision, 10.0 / 40.0); // the chunk of b.md counts in the denominator
/// assert_eq!(s.iou, 10.0 / (40.0 + 10.0));
/// assert_eq!(s.precision_omega, Some(20.0 / 40.0));
/// ```
pub fn chunking_evaluation_scores(
    retrieved: &[CharSpan],
    truth: &[CharSpan],
    chunks: Option<&ChunkIndex>,
) -> ChunkingEvaluationScores {
    let parts = RetrievalParts::new(retrieved, truth);
    ChunkingEvaluationScores {
        recall: parts.recall(),
        precision: parts.precision(),
        iou: parts.iou(),
        precision_omega: chunks.map(|c| precision_omega(truth, c)),
    }
}

/// PrecisionΩ of one query against a chunker's output (rules at [`chunking_evaluation_scores`]).
pub fn precision_omega(truth: &[CharSpan], chunks: &ChunkIndex) -> f64 {
    omega_with(truth, |g, out| out.extend(chunks.meeting_ranges(g)))
}

/// The integer quantities behind the retrieval figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
/// Counted in `u128`: plain sums of lengths can pass `usize::MAX`.
pub(crate) struct RetrievalParts {
    /// `|⋃ (r ∩ g)|`.
    pub(crate) covered: u128,
    /// `Σ|r|`.
    pub(crate) retrieved: u128,
    /// `Σ|g|`.
    pub(crate) truth: u128,
    /// `Σ_g |g \ ⋃ (r ∩ g)|`.
    pub(crate) unused: u128,
}

impl RetrievalParts {
    pub(crate) fn new(retrieved: &[CharSpan], truth: &[CharSpan]) -> Self {
        // Both lists are short (k chunks, a few truth spans): pairwise is cheapest.
        let mut pieces: Vec<(&DocId, usize, usize)> = Vec::new();
        for g in truth {
            for r in retrieved {
                if r.doc == g.doc {
                    let (s, e) = (r.start.max(g.start), r.end.min(g.end));
                    if s < e {
                        pieces.push((&g.doc, s, e));
                    }
                }
            }
        }
        pieces.sort_unstable();
        let mut merged: Vec<(&DocId, usize, usize)> = Vec::with_capacity(pieces.len());
        for (doc, s, e) in pieces {
            match merged.last_mut() {
                Some(last) if last.0 == doc && s <= last.2 => last.2 = last.2.max(e),
                _ => merged.push((doc, s, e)),
            }
        }
        let covered = merged.iter().map(|&(_, s, e)| (e - s) as u128).sum();
        let mut unused = 0u128;
        for g in truth {
            let lo = merged.partition_point(|&(d, _, e)| (d, e) <= (&g.doc, g.start));
            // Merged pieces are disjoint and inside `g` here, so `hit <= |g|`.
            let hit: u128 = merged[lo..]
                .iter()
                .take_while(|&&(d, s, _)| *d == g.doc && s < g.end)
                .map(|&(_, s, e)| e.min(g.end).saturating_sub(s.max(g.start)) as u128)
                .sum();
            unused += (g.len() as u128).saturating_sub(hit);
        }
        let sum = |spans: &[CharSpan]| spans.iter().map(|s| s.len() as u128).sum();
        RetrievalParts {
            covered,
            retrieved: sum(retrieved),
            truth: sum(truth),
            unused,
        }
    }

    pub(crate) fn recall(&self) -> f64 {
        ratio(self.covered, self.truth)
    }

    pub(crate) fn precision(&self) -> f64 {
        ratio(self.covered, self.retrieved)
    }

    pub(crate) fn iou(&self) -> f64 {
        ratio(self.covered, self.retrieved + self.unused)
    }
}

fn ratio(num: u128, den: u128) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// PrecisionΩ given a way to list, for one truth span, the `(start, end)` of every chunk of its
/// document that meets it.
fn omega_with(
    truth: &[CharSpan],
    mut meeting: impl FnMut(&CharSpan, &mut Vec<(usize, usize)>),
) -> f64 {
    let mut by_doc: Vec<&CharSpan> = truth.iter().collect();
    by_doc.sort_unstable_by(|a, b| a.doc.cmp(&b.doc));
    let (mut covered, mut denominator) = (0u128, 0u128);
    let mut chunks = Vec::new();
    let mut cover = Vec::new();
    let mut pieces = Vec::new();
    for group in by_doc.chunk_by(|a, b| a.doc == b.doc) {
        cover.clear();
        pieces.clear();
        for g in group {
            chunks.clear();
            meeting(g, &mut chunks);
            for &(s, e) in &chunks {
                let (is, ie) = (s.max(g.start), e.min(g.end));
                if is < ie {
                    pieces.push((is, ie));
                }
            }
            cover.extend_from_slice(&chunks);
            cover.push((g.start, g.end));
        }
        covered += merged_len(&mut pieces);
        denominator += merged_len(&mut cover);
    }
    ratio(covered, denominator)
}

/// Characters covered by the ranges (sorted in place).
fn merged_len(ranges: &mut [(usize, usize)]) -> u128 {
    ranges.sort_unstable();
    let mut total = 0u128;
    let mut current: Option<(usize, usize)> = None;
    for &(s, e) in ranges.iter() {
        match current {
            Some((cs, ce)) if s <= ce => current = Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += (ce - cs) as u128;
                current = Some((s, e));
            }
            None => current = Some((s, e)),
        }
    }
    total + current.map_or(0, |(s, e)| (e - s) as u128)
}

/// A chunker's output indexed by document, for finding the chunks that meet a span in
/// `O(log n + m)`.
///
/// Build it once per chunker run and reuse it for every query: PrecisionΩ looks at the whole
/// corpus' chunks for each query, which is what makes it slow when done by scanning.
/// Identical chunks are kept once (PrecisionΩ takes a union, so repeats change nothing).
#[derive(Debug, Clone, Default)]
pub struct ChunkIndex {
    docs: HashMap<DocId, DocChunks>,
    len: usize,
}

/// One document's chunks sorted by `(start, end)`, with the running maximum of the ends so that
/// chunks nested inside earlier ones are still found.
#[derive(Debug, Clone, Default)]
struct DocChunks {
    spans: Vec<(usize, usize)>,
    reach: Vec<usize>,
}

impl ChunkIndex {
    /// Indexes the given chunks.
    pub fn new<'a>(chunks: impl IntoIterator<Item = &'a CharSpan>) -> Self {
        let mut docs: HashMap<DocId, DocChunks> = HashMap::new();
        for c in chunks {
            match docs.get_mut(c.doc.as_str()) {
                Some(d) => d.spans.push((c.start, c.end)),
                None => {
                    docs.insert(
                        c.doc.clone(),
                        DocChunks {
                            spans: vec![(c.start, c.end)],
                            reach: Vec::new(),
                        },
                    );
                }
            }
        }
        let mut len = 0;
        for d in docs.values_mut() {
            d.spans.sort_unstable();
            d.spans.dedup();
            let mut max = 0;
            d.reach = d
                .spans
                .iter()
                .map(|&(_, e)| {
                    max = max.max(e);
                    max
                })
                .collect();
            len += d.spans.len();
        }
        ChunkIndex { docs, len }
    }

    /// Number of distinct chunks.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the index holds no chunk.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunks that meet `span`: same document and `max(starts) <= min(ends)`, so chunks that
    /// only touch it are included. In order of start.
    pub fn meeting<'a>(&'a self, span: &CharSpan) -> impl Iterator<Item = CharSpan> + 'a {
        let doc = span.doc.clone();
        self.meeting_ranges(span).map(move |(start, end)| CharSpan {
            doc: doc.clone(),
            start,
            end,
        })
    }

    fn meeting_ranges<'a>(&'a self, span: &CharSpan) -> impl Iterator<Item = (usize, usize)> + 'a {
        let (gs, ge) = (span.start, span.end);
        let (spans, range) = match self.docs.get(span.doc.as_str()) {
            Some(d) => {
                // Every chunk before `lo` ends before the span starts; every chunk from `hi`
                // on starts after it ends.
                let hi = d.spans.partition_point(|&(s, _)| s <= ge);
                let lo = d.reach[..hi].partition_point(|&r| r < gs);
                (d.spans.as_slice(), lo..hi)
            }
            None => (&[][..], 0..0),
        };
        spans[range].iter().copied().filter(move |&(_, e)| e >= gs)
    }
}

impl<'a> FromIterator<&'a CharSpan> for ChunkIndex {
    fn from_iter<T: IntoIterator<Item = &'a CharSpan>>(iter: T) -> Self {
        ChunkIndex::new(iter)
    }
}

/// PrecisionΩ (`precision_omega`): how tightly a chunker's chunks fit the truth, independent of
/// any retriever (the exact rule is given at [`chunking_evaluation_scores`]).
///
/// It reads the chunker's whole output from [`MetricInput::chunker_output`]; that is a scan of
/// every chunk per query. For many queries over one chunker run, build a [`ChunkIndex`] once
/// and use [`PrecisionOmega::with_index`], which then ignores `chunker_output`. With neither,
/// the value is 0 (an evaluation checks [`Metric::needs_chunker_output`] up front).
///
/// ```
/// use rag_eval::metrics::{ChunkIndex, Metric, MetricInput, PrecisionOmega};
/// use rag_eval::span::CharSpan;
///
/// let chunks = [CharSpan::new("d", 0, 50), CharSpan::new("d", 50, 100)];
/// let truth = vec![CharSpan::new("d", 40, 60)];
/// let scan = PrecisionOmega::new();
/// let input = MetricInput::new(&[], &truth, 5).with_chunker_output(&chunks);
/// assert_eq!(scan.compute(&input), 20.0 / 100.0);
/// let indexed = PrecisionOmega::with_index(ChunkIndex::new(&chunks));
/// assert_eq!(indexed.compute(&MetricInput::new(&[], &truth, 5)), 20.0 / 100.0);
/// ```
#[derive(Debug, Clone, Default)]
pub struct PrecisionOmega {
    index: Option<Arc<ChunkIndex>>,
}

impl PrecisionOmega {
    /// PrecisionΩ over [`MetricInput::chunker_output`].
    pub fn new() -> Self {
        PrecisionOmega::default()
    }

    /// PrecisionΩ over a prebuilt index of the chunker's output.
    pub fn with_index(index: impl Into<Arc<ChunkIndex>>) -> Self {
        PrecisionOmega {
            index: Some(index.into()),
        }
    }

    /// The index given to [`PrecisionOmega::with_index`], if any.
    pub fn index(&self) -> Option<&ChunkIndex> {
        self.index.as_deref()
    }
}

impl Metric<TokenLevel> for PrecisionOmega {
    fn name(&self) -> &str {
        "precision_omega"
    }

    fn at_k(&self) -> bool {
        false
    }

    fn needs_chunker_output(&self) -> bool {
        true
    }

    fn compute(&self, input: &MetricInput<'_, TokenLevel>) -> f64 {
        if let Some(index) = &self.index {
            return precision_omega(input.truth, index);
        }
        let Some(chunks) = input.chunker_output else {
            return 0.0;
        };
        omega_with(input.truth, |g, out| {
            out.extend(
                chunks
                    .iter()
                    .filter(|c| c.meets(g))
                    .map(|c| (c.start, c.end)),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sp(doc: &str, s: usize, e: usize) -> CharSpan {
        CharSpan::new(doc, s, e)
    }

    #[test]
    fn index_finds_nested_and_touching_chunks() {
        // (0,100) reaches past the short chunks after it; (120,130) only touches the span.
        let chunks = [
            sp("d", 0, 100),
            sp("d", 10, 20),
            sp("d", 30, 40),
            sp("d", 120, 130),
            sp("d", 131, 140),
            sp("e", 50, 60),
            sp("d", 30, 40),
        ];
        let index = ChunkIndex::new(&chunks);
        assert_eq!(index.len(), 6, "the repeated chunk is kept once");
        let found: Vec<_> = index.meeting(&sp("d", 35, 120)).collect();
        assert_eq!(
            found,
            vec![sp("d", 0, 100), sp("d", 30, 40), sp("d", 120, 130)]
        );
        assert_eq!(index.meeting(&sp("x", 0, 1000)).count(), 0);
        assert!(ChunkIndex::default().is_empty());
    }

    #[test]
    fn merged_len_counts_each_character_once() {
        assert_eq!(merged_len(&mut []), 0);
        assert_eq!(merged_len(&mut [(5, 9), (0, 3), (3, 4), (8, 12)]), 4 + 7);
        assert_eq!(merged_len(&mut [(2, 2), (7, 7)]), 0);
    }

    #[test]
    fn metric_reports_without_cut_off_and_needs_chunks() {
        let m = PrecisionOmega::new();
        assert_eq!(m.report_name(5), "precision_omega");
        assert!(m.needs_chunker_output());
        let truth = vec![sp("d", 0, 10)];
        assert_eq!(m.compute(&MetricInput::new(&[], &truth, 5)), 0.0);
        assert!(m.index().is_none());
    }

    fn arb_spans(max: usize) -> impl Strategy<Value = Vec<CharSpan>> {
        prop::collection::vec(
            (prop::sample::select(vec!["a", "b"]), 0usize..80, 0usize..30)
                .prop_map(|(d, s, l)| sp(d, s, s + l)),
            0..max,
        )
    }

    proptest! {
        #[test]
        fn index_agrees_with_a_scan(chunks in arb_spans(30), truth in arb_spans(6)) {
            let index = ChunkIndex::new(&chunks);
            for g in &truth {
                let mut found: Vec<CharSpan> = index.meeting(g).collect();
                let mut want: Vec<CharSpan> =
                    chunks.iter().filter(|c| c.meets(g)).cloned().collect();
                want.sort();
                want.dedup();
                found.sort();
                prop_assert_eq!(found, want);
            }
            let scan = PrecisionOmega::new()
                .compute(&MetricInput::new(&[], &truth, 5).with_chunker_output(&chunks));
            prop_assert_eq!(precision_omega(&truth, &index), scan);
        }
    }
}
