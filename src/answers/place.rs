//! Placing contexts given as text: most vector stores keep a chunk's text, not where it came
//! from, so a context may arrive as text alone (or text and a document id) and is found in the
//! corpus with [`locate`](crate::locate) (verbatim first, then ignoring case, whitespace,
//! typographic punctuation and Unicode composition; never fuzzily: a retrieved chunk is a copy,
//! not a quote).
//!
//! A context that is found gets the document's offsets and keeps its text (what the answer was
//! written from, which the judges read; a `#[rag_eval]` case scores the retrieval of one found
//! ignoring case or whitespace on the document's own text at its span); one that is not found
//! keeps its text with no characters placed, so the judges still read it and the span metrics
//! leave it out.

use crate::chunk::{PositionAwareChunk, RetrievedChunk};
use crate::corpus::Corpus;
use crate::locate::{Located, Locator, MatchKind};
use serde::Serialize;
use std::sync::OnceLock;

/// A context without offsets, as a service or an answers file gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct TextContext {
    /// The text retrieved.
    pub text: String,
    /// The document it names, if any: searched alone when given.
    pub doc_id: Option<String>,
    /// The retriever's score, if given.
    pub score: Option<f32>,
}

/// How the contexts given as text were placed: counts per match kind and of those not found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Placement {
    /// Found verbatim.
    pub exact: usize,
    /// Found after folding case, whitespace, punctuation and Unicode composition.
    pub normalized: usize,
    /// Not found in the corpus (or its document is not in it): judged, not span-scored.
    pub unlocated: usize,
}

impl Placement {
    /// Contexts counted.
    pub fn total(&self) -> usize {
        self.exact + self.normalized + self.unlocated
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: Placement) {
        self.exact += other.exact;
        self.normalized += other.normalized;
        self.unlocated += other.unlocated;
    }
}

impl std::fmt::Display for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} context{} given as text: {} found verbatim, {} found ignoring case, whitespace and Unicode form, {} not found in the corpus (judged, not span-scored)",
            self.total(),
            if self.total() == 1 { "" } else { "s" },
            self.exact,
            self.normalized,
            self.unlocated
        )
    }
}

/// Finds contexts in a corpus; each document's normalized form is built once, when first
/// searched.
pub struct ContextLocator<'c> {
    corpus: &'c Corpus,
    locators: Vec<OnceLock<Locator<'c>>>,
}

impl<'c> ContextLocator<'c> {
    /// A locator over `corpus`.
    pub fn new(corpus: &'c Corpus) -> Self {
        ContextLocator {
            corpus,
            locators: corpus.documents().iter().map(|_| OnceLock::new()).collect(),
        }
    }

    fn locator(&self, i: usize) -> &Locator<'c> {
        self.locators[i].get_or_init(|| Locator::new(self.corpus.documents()[i].content()))
    }

    /// Where `text` is: in `doc_id` when given, else in the first document (in corpus order)
    /// that holds it verbatim, else in the first that holds it normalized.
    pub fn find(&self, text: &str, doc_id: Option<&str>) -> Option<(usize, Located)> {
        let docs = self.corpus.documents();
        let candidates: Vec<usize> = match doc_id {
            Some(id) => docs
                .iter()
                .position(|d| d.id().as_str() == id)
                .into_iter()
                .collect(),
            None => (0..docs.len()).collect(),
        };
        let mut normalized = None;
        for i in candidates {
            // A threshold of 1 allows no edit: the fuzzy step never runs.
            match self.locator(i).locate(text, 1.0) {
                Some(hit) if hit.kind == MatchKind::Exact => return Some((i, hit)),
                Some(hit) if normalized.is_none() => normalized = Some((i, hit)),
                _ => {}
            }
        }
        normalized
    }

    /// The context as a retrieved chunk: at its place in the corpus when found, else with its
    /// text and no character placed (at its document, or at no document). `placement` counts
    /// how it went.
    pub fn place(&self, c: &TextContext, placement: &mut Placement) -> RetrievedChunk {
        let score = c.score.unwrap_or(0.0);
        let chunk = match self.find(&c.text, c.doc_id.as_deref()) {
            Some((i, hit)) => {
                match hit.kind {
                    MatchKind::Exact => placement.exact += 1,
                    _ => placement.normalized += 1,
                }
                let doc = self.corpus.documents()[i].id().clone();
                PositionAwareChunk::new(doc, hit.start, hit.end, c.text.clone())
            }
            None => {
                placement.unlocated += 1;
                unplaced(c)
            }
        };
        RetrievedChunk::new(chunk, score)
    }
}

/// How the search for `c` went wrong when [`ContextLocator::place`] did not find it.
pub(crate) fn not_found(corpus: &Corpus, c: &TextContext) -> String {
    match c.doc_id.as_deref() {
        Some(doc) if corpus.get(doc).is_none() => format!("`{doc}` is not in the corpus"),
        Some(doc) => format!("not in `{doc}`"),
        None => "in no document of the corpus".to_owned(),
    }
}

/// What [`Answers::not_found`](super::Answers::not_found) says of a context given as text
/// before any corpus was searched.
pub(crate) const NOT_SEARCHED: &str = "no corpus was given to search";

/// A context with its text and no character placed: what a context given as text is when
/// there is no corpus to find it in, or it is not there. Span metrics leave it out.
pub fn unplaced(c: &TextContext) -> PositionAwareChunk {
    PositionAwareChunk::new(c.doc_id.as_deref().unwrap_or(""), 0, 0, c.text.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Document;

    fn corpus() -> Corpus {
        Corpus::new([
            Document::new(
                "a.md",
                "The Larkspur release ships in May.\nIt needs  Rust 1.80.",
            ),
            Document::new(
                "b.md",
                "it needs rust 1.80. Also: the Larkspur release ships in May.",
            ),
        ])
        .unwrap()
    }

    fn text(t: &str, doc: Option<&str>) -> TextContext {
        TextContext {
            text: t.into(),
            doc_id: doc.map(str::to_owned),
            score: None,
        }
    }

    #[test]
    fn verbatim_anywhere_beats_normalized_earlier_and_a_named_document_is_searched_alone() {
        let corpus = corpus();
        let l = ContextLocator::new(&corpus);
        let mut p = Placement::default();
        // a.md holds it only with two spaces; b.md verbatim: b.md wins.
        let c = l.place(&text("it needs rust 1.80.", None), &mut p);
        assert_eq!(
            (
                c.chunk.span.doc.as_str(),
                c.chunk.span.start,
                c.chunk.span.end
            ),
            ("b.md", 0, 19)
        );
        // Named: a.md only, found ignoring case and whitespace, at a.md's characters.
        let c = l.place(&text("it needs rust 1.80.", Some("a.md")), &mut p);
        assert_eq!(
            (
                c.chunk.span.doc.as_str(),
                c.chunk.span.start,
                c.chunk.span.end
            ),
            ("a.md", 35, 55)
        );
        assert_eq!(c.chunk.content, "it needs rust 1.80.");
        // Not in the corpus, and a document the corpus lacks: text kept, nothing placed.
        let c = l.place(&text("Larkspur ships in June.", None), &mut p);
        assert!(c.chunk.span.is_empty());
        assert_eq!(c.chunk.content, "Larkspur ships in June.");
        let c = l.place(&text("ships in May", Some("zzz.md")), &mut p);
        assert_eq!(
            (c.chunk.span.doc.as_str(), c.chunk.span.is_empty()),
            ("zzz.md", true)
        );
        assert_eq!(
            p,
            Placement {
                exact: 1,
                normalized: 1,
                unlocated: 2
            }
        );
        assert_eq!(p.total(), 4);
    }
}
