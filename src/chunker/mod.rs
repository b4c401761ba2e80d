//! Chunkers: plain ([`Chunker`]) and position-aware ([`PositionAwareChunker`]).
//!
//! Built-in chunkers compute character offsets while they split, never by searching, so every
//! chunk satisfies `doc.slice(chunk.start, chunk.end) == chunk.content`. A third-party chunker
//! that only returns strings becomes position-aware through [`PositionAdapter`].

#[cfg(feature = "markdown")]
mod markdown;
mod recursive;
mod scan;
mod semantic;
mod spec;
#[cfg(feature = "tiktoken")]
mod token;

// Re-exports of the built-in chunkers go here, one line each.
#[cfg(feature = "markdown")]
pub use markdown::MarkdownChunker;
pub use recursive::{LengthUnit, RecursiveCharacterChunker};
pub use semantic::SemanticChunker;
#[cfg(feature = "cli")]
pub(crate) use spec::build_parsed_chunker;
pub(crate) use spec::chunker_from;
pub use spec::parse_spec;
#[cfg(feature = "tiktoken")]
pub use token::FixedTokenChunker;

use crate::chunk::PositionAwareChunk;
use crate::corpus::{Corpus, Document};
use crate::spec::Value;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Splits text into pieces, without positions.
pub trait Chunker: Send + Sync {
    /// The configuration as a spec string, e.g. `recursive:size=400,overlap=0`.
    fn name(&self) -> String;
    /// The [spec](crate::spec) that builds this chunker again, as a value (what a component
    /// that holds the chunker nests). Chunkers that no spec builds keep the default, their
    /// name as text.
    fn spec(&self) -> Value {
        Value::Text(self.name())
    }
    /// Splits `text` into chunks, in order.
    fn chunk(&self, text: &str) -> Vec<String>;
}

/// Splits a document into chunks that know their character span.
pub trait PositionAwareChunker: Send + Sync {
    /// The configuration as a spec string, e.g. `recursive:size=400,overlap=0`. Chunk-level
    /// datasets record it, and evaluations compare it.
    fn name(&self) -> String;
    /// The [spec](crate::spec) that builds this chunker again, as a value (what a retriever
    /// that holds the chunker nests); its printed form is [`PositionAwareChunker::name`].
    /// Chunkers that no spec builds keep the default, their name as text.
    fn spec(&self) -> Value {
        Value::Text(self.name())
    }
    /// Splits `doc` into chunks in document order, each with its exact char span.
    fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk>;

    /// Chunks every document of a corpus, documents in id order.
    fn chunk_corpus(&self, corpus: &Corpus) -> Vec<PositionAwareChunk> {
        corpus
            .documents()
            .iter()
            .flat_map(|d| self.chunk_with_positions(d))
            .collect()
    }
}

impl<T: PositionAwareChunker + ?Sized> PositionAwareChunker for Box<T> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn spec(&self) -> Value {
        (**self).spec()
    }
    fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk> {
        (**self).chunk_with_positions(doc)
    }
}

impl<T: PositionAwareChunker + ?Sized> PositionAwareChunker for std::sync::Arc<T> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn spec(&self) -> Value {
        (**self).spec()
    }
    fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk> {
        (**self).chunk_with_positions(doc)
    }
}

/// Turns byte ranges of `doc`'s text, in order, into position-aware chunks with char offsets.
/// Empty ranges are dropped.
pub(crate) fn chunks_from_byte_ranges(
    doc: &Document,
    ranges: impl IntoIterator<Item = Range<usize>>,
) -> Vec<PositionAwareChunk> {
    let text = doc.content();
    // One shared copy of the text lets every chunk compute its id when first read.
    let shared: std::sync::Arc<str> = std::sync::Arc::from(text);
    ranges
        .into_iter()
        .filter(|r| r.start < r.end)
        .map(|r| {
            let start = doc
                .byte_to_char(r.start)
                .expect("chunker produced a byte offset off a char boundary");
            let end = doc
                .byte_to_char(r.end)
                .expect("chunker produced a byte offset off a char boundary");
            PositionAwareChunk::in_shared_text(doc.id().clone(), start, end, &shared, r)
        })
        .collect()
}

/// Makes any [`Chunker`] position-aware by locating each piece in the document.
///
/// Each piece is searched for from just after the previous piece's start, so overlapping
/// pieces are found at their real place. A piece that cannot be found (the chunker changed
/// the text) is skipped with a warning and counted in [`PositionAdapter::skipped`].
#[derive(Debug)]
pub struct PositionAdapter<C> {
    inner: C,
    skipped: AtomicUsize,
}

impl<C: Chunker> PositionAdapter<C> {
    /// Wraps a chunker.
    pub fn new(inner: C) -> Self {
        PositionAdapter {
            inner,
            skipped: AtomicUsize::new(0),
        }
    }

    /// How many pieces could not be located so far.
    pub fn skipped(&self) -> usize {
        self.skipped.load(Ordering::Relaxed)
    }

    /// The wrapped chunker.
    pub fn inner(&self) -> &C {
        &self.inner
    }
}

impl<C: Chunker> PositionAwareChunker for PositionAdapter<C> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn spec(&self) -> Value {
        self.inner.spec()
    }

    fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk> {
        let text = doc.content();
        let mut from = 0usize;
        let mut ranges = Vec::new();
        for piece in self.inner.chunk(text) {
            if piece.is_empty() {
                continue;
            }
            match text[from..].find(piece.as_str()) {
                Some(rel) => {
                    let start = from + rel;
                    ranges.push(start..start + piece.len());
                    // Next search starts one char after this piece's start.
                    from = start + text[start..].chars().next().map_or(1, char::len_utf8);
                }
                None => {
                    self.skipped.fetch_add(1, Ordering::Relaxed);
                    let preview: String = piece.chars().take(50).collect();
                    tracing::warn!(
                        doc = %doc.id(),
                        chunker = %self.inner.name(),
                        "could not locate a chunk in its document (the chunker changed the text); skipping it: {preview:?}"
                    );
                }
            }
        }
        chunks_from_byte_ranges(doc, ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Words;
    impl Chunker for Words {
        fn name(&self) -> String {
            "words".into()
        }
        fn chunk(&self, text: &str) -> Vec<String> {
            let mut v: Vec<String> = text.split(' ').map(str::to_owned).collect();
            v.push("NOT THERE".into());
            v
        }
    }

    #[test]
    fn adapter_locates_pieces_and_counts_the_missing() {
        let doc = Document::new("d", "añb añb c");
        let a = PositionAdapter::new(Words);
        let chunks = a.chunk_with_positions(&doc);
        let spans: Vec<_> = chunks.iter().map(|c| (c.start(), c.end())).collect();
        assert_eq!(
            spans,
            [(0, 3), (4, 7), (8, 9)],
            "second copy found at its own place"
        );
        for c in &chunks {
            assert_eq!(doc.slice(c.start(), c.end()), Some(c.content.as_str()));
        }
        assert_eq!(a.skipped(), 1);
    }

    struct Overlapping;
    impl Chunker for Overlapping {
        fn name(&self) -> String {
            "overlapping".into()
        }
        fn chunk(&self, _: &str) -> Vec<String> {
            vec!["abcab".into(), "cabca".into(), "abc".into()]
        }
    }

    #[test]
    fn adapter_finds_overlapping_pieces() {
        let doc = Document::new("d", "abcabcabc");
        let chunks = PositionAdapter::new(Overlapping).chunk_with_positions(&doc);
        let spans: Vec<_> = chunks.iter().map(|c| (c.start(), c.end())).collect();
        assert_eq!(spans, [(0, 5), (2, 7), (3, 6)]);
    }
}
