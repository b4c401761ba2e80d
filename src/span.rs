//! Character spans and merged span sets.

use crate::doc_id::DocId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The largest character offset any document can have: a document is a `String`, which holds
/// at most `isize::MAX` bytes. Files that give larger offsets are refused when read.
pub const MAX_OFFSET: usize = isize::MAX as usize;

/// Why `start..end` of document `doc` cannot be a range of characters of any document, if it
/// cannot.
pub fn offset_problem(doc: &str, start: usize, end: usize) -> Option<String> {
    if start > end {
        Some(format!(
            "span {start}..{end} of `{doc}` ends before it starts"
        ))
    } else if end > MAX_OFFSET {
        Some(format!(
            "span {start}..{end} of `{doc}` ends past {MAX_OFFSET}, further than any document can reach"
        ))
    } else {
        None
    }
}

/// A range of characters `start..end` (end-exclusive, Unicode scalar offsets) in a document.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CharSpan {
    /// The document the span belongs to.
    #[serde(rename = "doc_id")]
    pub doc: DocId,
    /// First character (inclusive).
    pub start: usize,
    /// One past the last character.
    pub end: usize,
}

impl CharSpan {
    /// A span; `start > end` is normalised to an empty span at `start`.
    pub fn new(doc: impl Into<DocId>, start: usize, end: usize) -> Self {
        CharSpan {
            doc: doc.into(),
            start,
            end: end.max(start),
        }
    }

    /// The span of the byte range `bytes` of `text`, the document `doc`'s text: what Rust's
    /// `str` indices and `find` give, converted to the character offsets rag-eval scores.
    /// `None` when the range is reversed, past the end or not on character boundaries.
    ///
    /// ```
    /// use rag_eval::span::CharSpan;
    /// let text = "Größe: 42";
    /// let bytes = text.find("42").unwrap()..text.len(); // 8..10 in bytes
    /// assert_eq!(CharSpan::from_byte_range("doc.md", text, bytes), Some(CharSpan::new("doc.md", 7, 9)));
    /// ```
    pub fn from_byte_range(
        doc: impl Into<DocId>,
        text: &str,
        bytes: std::ops::Range<usize>,
    ) -> Option<Self> {
        let (start, end) = (bytes.start, bytes.end);
        text.get(start..end)?;
        let start_char = text[..start].chars().count();
        let end_char = start_char + text[start..end].chars().count();
        Some(CharSpan::new(doc, start_char, end_char))
    }

    /// Length in characters (0 for a span built reversed through its public fields).
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// Whether the span covers no character.
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// Whether the two spans share at least one character (same document); an empty span
    /// shares none.
    pub fn overlaps(&self, other: &CharSpan) -> bool {
        self.doc == other.doc && self.start.max(other.start) < self.end.min(other.end)
    }

    /// Whether the spans meet in the sense of chunking_evaluation: same document and
    /// `max(starts) <= min(ends)`, so touching ranges count.
    pub fn meets(&self, other: &CharSpan) -> bool {
        self.doc == other.doc && self.start.max(other.start) <= self.end.min(other.end)
    }

    /// Number of characters the spans share.
    pub fn overlap_len(&self, other: &CharSpan) -> usize {
        if self.doc != other.doc {
            return 0;
        }
        self.end
            .min(other.end)
            .saturating_sub(self.start.max(other.start))
    }
}

/// A set of characters across documents, in normal form: per document, sorted, disjoint
/// intervals with touching intervals merged and empty ones dropped. Lengths, unions,
/// intersections and differences are linear merges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpanSet {
    by_doc: BTreeMap<DocId, Vec<(usize, usize)>>,
}

impl SpanSet {
    /// The empty set.
    pub fn new() -> Self {
        SpanSet::default()
    }

    /// The union of the given spans.
    pub fn from_spans<'a>(spans: impl IntoIterator<Item = &'a CharSpan>) -> Self {
        let mut raw: BTreeMap<DocId, Vec<(usize, usize)>> = BTreeMap::new();
        for s in spans {
            if !s.is_empty() {
                raw.entry(s.doc.clone()).or_default().push((s.start, s.end));
            }
        }
        let by_doc = raw
            .into_iter()
            .map(|(doc, mut iv)| {
                iv.sort_unstable();
                (doc, merge_sorted(iv))
            })
            .collect();
        SpanSet { by_doc }
    }

    /// Adds a span.
    pub fn insert(&mut self, span: &CharSpan) {
        if span.is_empty() {
            return;
        }
        let iv = self.by_doc.entry(span.doc.clone()).or_default();
        let pos = iv.partition_point(|&(s, _)| s < span.start);
        iv.insert(pos, (span.start, span.end));
        let merged = merge_sorted(std::mem::take(iv));
        *iv = merged;
    }

    /// Number of characters in the set (at most `usize::MAX`: sets that span several huge
    /// documents saturate; [`char_count`](SpanSet::char_count) is exact).
    pub fn len(&self) -> usize {
        usize::try_from(self.char_count()).unwrap_or(usize::MAX)
    }

    /// Number of characters in the set, exactly: lengths of intervals in different documents
    /// can add up past `usize::MAX`.
    pub fn char_count(&self) -> u128 {
        self.by_doc
            .values()
            .flat_map(|iv| iv.iter().map(|(s, e)| (e - s) as u128))
            .sum()
    }

    /// Whether the set holds no character.
    pub fn is_empty(&self) -> bool {
        self.by_doc.is_empty()
    }

    /// The merged intervals of one document.
    pub fn intervals(&self, doc: &str) -> &[(usize, usize)] {
        self.by_doc.get(doc).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The documents that have characters in the set.
    pub fn docs(&self) -> impl Iterator<Item = &DocId> {
        self.by_doc.keys()
    }

    /// The merged spans, by document then position.
    pub fn iter(&self) -> impl Iterator<Item = CharSpan> + '_ {
        self.by_doc.iter().flat_map(|(doc, iv)| {
            iv.iter().map(move |&(start, end)| CharSpan {
                doc: doc.clone(),
                start,
                end,
            })
        })
    }

    /// Number of merged intervals.
    pub fn interval_count(&self) -> usize {
        self.by_doc.values().map(Vec::len).sum()
    }

    /// Characters in both sets.
    pub fn intersection(&self, other: &SpanSet) -> SpanSet {
        self.combine(other, |a, b| a && b)
    }

    /// Characters in either set.
    pub fn union(&self, other: &SpanSet) -> SpanSet {
        self.combine(other, |a, b| a || b)
    }

    /// Characters in `self` but not in `other`.
    pub fn difference(&self, other: &SpanSet) -> SpanSet {
        self.combine(other, |a, b| a && !b)
    }

    /// `|self ∩ other|` without building the intersection (saturating like
    /// [`len`](SpanSet::len)).
    pub fn intersection_len(&self, other: &SpanSet) -> usize {
        usize::try_from(self.intersection_count(other)).unwrap_or(usize::MAX)
    }

    /// `|self ∩ other|`, exactly.
    pub fn intersection_count(&self, other: &SpanSet) -> u128 {
        let mut total = 0u128;
        for (doc, a) in &self.by_doc {
            let Some(b) = other.by_doc.get(doc) else {
                continue;
            };
            let (mut i, mut j) = (0, 0);
            while i < a.len() && j < b.len() {
                let lo = a[i].0.max(b[j].0);
                let hi = a[i].1.min(b[j].1);
                total += hi.saturating_sub(lo) as u128;
                if a[i].1 < b[j].1 {
                    i += 1;
                } else {
                    j += 1;
                }
            }
        }
        total
    }

    /// Whether any interval of the set shares a character with `span`.
    pub fn overlaps(&self, span: &CharSpan) -> bool {
        let iv = self.intervals(span.doc.as_str());
        let i = iv.partition_point(|&(_, e)| e <= span.start);
        iv.get(i).is_some_and(|&(s, _)| s < span.end)
    }

    /// Sweeps both interval lists per document, keeping the elementary segments where `keep`
    /// holds for (in self, in other).
    fn combine(&self, other: &SpanSet, keep: impl Fn(bool, bool) -> bool) -> SpanSet {
        let mut by_doc = BTreeMap::new();
        let empty = Vec::new();
        let docs: std::collections::BTreeSet<&DocId> =
            self.by_doc.keys().chain(other.by_doc.keys()).collect();
        for doc in docs {
            let a = self.by_doc.get(doc).unwrap_or(&empty);
            let b = other.by_doc.get(doc).unwrap_or(&empty);
            let mut cuts: Vec<usize> = a
                .iter()
                .chain(b.iter())
                .flat_map(|&(s, e)| [s, e])
                .collect();
            cuts.sort_unstable();
            cuts.dedup();
            let (mut i, mut j) = (0, 0);
            let mut out: Vec<(usize, usize)> = Vec::new();
            for w in cuts.windows(2) {
                let (lo, hi) = (w[0], w[1]);
                while i < a.len() && a[i].1 <= lo {
                    i += 1;
                }
                while j < b.len() && b[j].1 <= lo {
                    j += 1;
                }
                let in_a = i < a.len() && a[i].0 <= lo;
                let in_b = j < b.len() && b[j].0 <= lo;
                if keep(in_a, in_b) {
                    match out.last_mut() {
                        Some(last) if last.1 == lo => last.1 = hi,
                        _ => out.push((lo, hi)),
                    }
                }
            }
            if !out.is_empty() {
                by_doc.insert(doc.clone(), out);
            }
        }
        SpanSet { by_doc }
    }
}

impl<'a> FromIterator<&'a CharSpan> for SpanSet {
    fn from_iter<T: IntoIterator<Item = &'a CharSpan>>(iter: T) -> Self {
        SpanSet::from_spans(iter)
    }
}

/// Merges sorted intervals; touching intervals merge, empty ones vanish.
fn merge_sorted(iv: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(iv.len());
    for (s, e) in iv {
        if s >= e {
            continue;
        }
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn sp(doc: &str, s: usize, e: usize) -> CharSpan {
        CharSpan::new(doc, s, e)
    }

    #[test]
    fn merges_overlapping_and_touching_spans_per_document() {
        let set = SpanSet::from_spans(&[
            sp("a", 5, 10),
            sp("a", 0, 3),
            sp("a", 3, 4),
            sp("a", 8, 12),
            sp("b", 0, 2),
            sp("a", 20, 20),
        ]);
        assert_eq!(set.intervals("a"), &[(0, 4), (5, 12)]);
        assert_eq!(set.intervals("b"), &[(0, 2)]);
        assert_eq!(set.len(), 4 + 7 + 2);
        assert_eq!(set.interval_count(), 3);
    }

    #[test]
    fn set_operations_by_hand() {
        let a = SpanSet::from_spans(&[sp("d", 0, 10), sp("e", 0, 5)]);
        let b = SpanSet::from_spans(&[sp("d", 5, 15), sp("f", 0, 1)]);
        assert_eq!(
            a.intersection(&b).iter().collect::<Vec<_>>(),
            vec![sp("d", 5, 10)]
        );
        assert_eq!(a.intersection_len(&b), 5);
        assert_eq!(a.union(&b).len(), 15 + 5 + 1);
        assert_eq!(
            a.difference(&b).iter().collect::<Vec<_>>(),
            vec![sp("d", 0, 5), sp("e", 0, 5)]
        );
        assert!(a.overlaps(&sp("d", 9, 20)));
        assert!(!a.overlaps(&sp("d", 10, 20)), "touching is not overlapping");
        assert!(sp("d", 0, 10).meets(&sp("d", 10, 20)), "touching meets");
        assert!(
            !sp("d", 5, 5).overlaps(&sp("d", 0, 10)),
            "an empty span shares no character"
        );
        assert!(sp("d", 9, 10).overlaps(&sp("d", 0, 10)));
        assert!(!sp("d", 0, 10).meets(&sp("x", 0, 20)));
    }

    /// The naive model: a set of (doc, char) pairs.
    fn chars(spans: &[CharSpan]) -> BTreeSet<(String, usize)> {
        spans
            .iter()
            .flat_map(|s| (s.start..s.end).map(move |c| (s.doc.to_string(), c)))
            .collect()
    }

    fn arb_spans() -> impl Strategy<Value = Vec<CharSpan>> {
        prop::collection::vec(
            (
                prop::sample::select(vec!["a", "b", "c"]),
                0usize..60,
                0usize..25,
            )
                .prop_map(|(d, s, l)| sp(d, s, s + l)),
            0..12,
        )
    }

    proptest! {
        #[test]
        fn span_set_agrees_with_a_per_character_model(x in arb_spans(), y in arb_spans()) {
            let (a, b) = (SpanSet::from_spans(&x), SpanSet::from_spans(&y));
            let (ca, cb) = (chars(&x), chars(&y));
            prop_assert_eq!(a.len(), ca.len());
            let i = a.intersection(&b);
            prop_assert_eq!(chars(&i.iter().collect::<Vec<_>>()), &ca & &cb);
            prop_assert_eq!(a.intersection_len(&b), (&ca & &cb).len());
            prop_assert_eq!(chars(&a.union(&b).iter().collect::<Vec<_>>()), &ca | &cb);
            prop_assert_eq!(chars(&a.difference(&b).iter().collect::<Vec<_>>()), &ca - &cb);
            // normal form: sorted, disjoint, non-touching, non-empty
            for doc in a.docs() {
                for w in a.intervals(doc.as_str()).windows(2) {
                    prop_assert!(w[0].1 < w[1].0);
                }
            }
            let mut inc = SpanSet::new();
            for s in &x { inc.insert(s); }
            prop_assert_eq!(inc, a);
        }
    }
}
