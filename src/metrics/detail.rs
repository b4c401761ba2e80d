//! What a query should have found and what was retrieved for it, kept beside its figures so a
//! report can show the question, the ground truth and the retrieved text side by side.
//!
//! Both are optional parts of a [`QueryResult`](super::QueryResult): evaluations fill them in,
//! `rag-eval score` and TREC scoring leave them out, and results written before they existed
//! read back unchanged.

use crate::chunk::{ChunkId, RetrievedChunk};
use crate::corpus::Corpus;
use crate::level::TruthView;
use crate::span::CharSpan;
use serde::{Deserialize, Serialize};

/// A stretch of a document, end-exclusive character offsets, with its text when known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Passage {
    /// The document.
    pub doc_id: String,
    /// First character.
    pub start: usize,
    /// One past the last character.
    pub end: usize,
    /// The text at `start..end`, when it is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `false` for a context given as text that was not found in the corpus: it has no
    /// characters placed (`start` = `end` = 0), and `doc_id` is the one it was given with, if
    /// any. Left out of the JSON when `true`.
    #[serde(default = "located", skip_serializing_if = "is_located")]
    pub located: bool,
    /// How the search for an unlocated context failed (`in no document of the corpus`,
    /// `` `faq.md` is not in the corpus ``, `no corpus was given to search`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_found: Option<String>,
}

fn located() -> bool {
    true
}

fn is_located(located: &bool) -> bool {
    *located
}

impl Passage {
    /// A retrieved chunk's place and text. Its score is left out: stores that rank alike give
    /// different scores, and only the order (the position in the list) is part of a result.
    /// A chunk with text and no character placed is a context that was not found in the
    /// corpus: not `located`.
    pub fn of_retrieved(chunk: &RetrievedChunk) -> Passage {
        let c = &chunk.chunk;
        Passage {
            doc_id: c.span.doc.as_str().to_owned(),
            start: c.span.start,
            end: c.span.end,
            text: Some(c.content.clone()),
            located: !c.span.is_empty() || c.content.is_empty(),
            not_found: None,
        }
    }

    /// A truth span, its text taken from `corpus` (or `recorded`, the dataset's copy, when the
    /// corpus does not hold the document).
    pub fn of_span(span: &CharSpan, recorded: Option<&str>, corpus: &Corpus) -> Passage {
        let text = corpus
            .get(span.doc.as_str())
            .and_then(|d| d.slice(span.start, span.end))
            .or(recorded)
            .map(str::to_owned);
        Passage {
            doc_id: span.doc.as_str().to_owned(),
            start: span.start,
            end: span.end,
            text,
            located: true,
            not_found: None,
        }
    }

    /// The character ranges, relative to the passage's start, that overlap `truth` spans of
    /// the same document: the characters a report marks as found. Sorted and merged.
    pub fn matched(&self, truth: &[Passage]) -> Vec<(usize, usize)> {
        let mut hits: Vec<(usize, usize)> = truth
            .iter()
            .filter(|t| t.doc_id == self.doc_id)
            .filter_map(|t| {
                let (s, e) = (t.start.max(self.start), t.end.min(self.end));
                (s < e).then(|| (s - self.start, e - self.start))
            })
            .collect();
        hits.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(hits.len());
        for (s, e) in hits {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        merged
    }

    /// The content-addressed chunk id of the passage's text (chunk-level ground truth names
    /// chunks this way).
    pub fn chunk_id(&self) -> Option<ChunkId> {
        self.text.as_deref().map(ChunkId::from_content)
    }
}

/// A query's ground truth: character spans (token level) or chunk ids (chunk level).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Truth {
    /// Token level: the spans to find, with their text.
    Spans(Vec<Passage>),
    /// Chunk level: the ids of the chunks to find.
    ChunkIds(Vec<String>),
}

impl Truth {
    /// The truth of a dataset row: spans get their text from `corpus`, falling back to
    /// `recorded` (the dataset's copy of each span's text, in the same order).
    pub fn of(view: TruthView<'_>, recorded: &[Option<String>], corpus: &Corpus) -> Truth {
        match view {
            TruthView::Spans(spans) => Truth::Spans(
                spans
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        Passage::of_span(s, recorded.get(i).and_then(|t| t.as_deref()), corpus)
                    })
                    .collect(),
            ),
            TruthView::ChunkIds(ids) => {
                Truth::ChunkIds(ids.iter().map(|i| i.as_str().to_owned()).collect())
            }
        }
    }

    /// Whether a retrieved passage is relevant: it overlaps a truth span, or its text's chunk
    /// id is a truth id.
    pub fn is_hit(&self, p: &Passage) -> bool {
        match self {
            Truth::Spans(spans) => !p.matched(spans).is_empty(),
            Truth::ChunkIds(ids) => p
                .chunk_id()
                .is_some_and(|id| ids.iter().any(|t| t == id.as_str())),
        }
    }

    /// The characters of `p` a report marks as found, relative to its start: the overlaps
    /// with truth spans, or the whole passage when its chunk id is a truth id.
    pub fn matched(&self, p: &Passage) -> Vec<(usize, usize)> {
        match self {
            Truth::Spans(spans) => p.matched(spans),
            Truth::ChunkIds(_) if self.is_hit(p) => vec![(0, p.end.saturating_sub(p.start))],
            Truth::ChunkIds(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(doc: &str, start: usize, end: usize) -> Passage {
        Passage {
            doc_id: doc.into(),
            start,
            end,
            text: None,
            located: true,
            not_found: None,
        }
    }

    #[test]
    fn matched_ranges_are_relative_merged_and_per_document() {
        let chunk = p("a", 10, 30);
        let truth = [
            p("a", 5, 12),
            p("a", 11, 15),
            p("b", 10, 30),
            p("a", 25, 40),
            p("a", 30, 35),
        ];
        // 5..12 and 11..15 merge to 10..15 inside the chunk; 25..40 clips to 25..30; 30..35
        // only touches the end; the other document does not count.
        assert_eq!(chunk.matched(&truth), vec![(0, 5), (15, 20)]);
        assert!(chunk.matched(&[p("a", 0, 10)]).is_empty());
    }

    #[test]
    fn chunk_level_hits_by_content_id() {
        let mut hit = p("a", 0, 5);
        hit.text = Some("hello".into());
        let mut miss = p("a", 5, 10);
        miss.text = Some("world".into());
        let truth = Truth::ChunkIds(vec![ChunkId::from_content("hello").as_str().to_owned()]);
        assert!(truth.is_hit(&hit) && !truth.is_hit(&miss));
        assert_eq!(truth.matched(&hit), vec![(0, 5)]);
        assert!(truth.matched(&miss).is_empty());
    }

    #[test]
    fn json_shape() {
        let t = Truth::Spans(vec![Passage {
            text: Some("x".into()),
            ..p("a.md", 1, 2)
        }]);
        assert_eq!(
            serde_json::to_string(&t).unwrap(),
            r#"{"spans":[{"doc_id":"a.md","start":1,"end":2,"text":"x"}]}"#
        );
        let ids = Truth::ChunkIds(vec!["chunk_1".into()]);
        assert_eq!(
            serde_json::to_string(&ids).unwrap(),
            r#"{"chunk_ids":["chunk_1"]}"#
        );
    }
}
