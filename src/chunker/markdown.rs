//! Heading- and paragraph-aware Markdown splitting through `text-splitter`.

use super::{chunks_from_byte_ranges, Chunker, PositionAwareChunker};
use crate::chunk::PositionAwareChunk;
use crate::corpus::Document;
use crate::error::{Error, Result};
use std::ops::Range;
use std::sync::Arc;
use text_splitter::{Characters, ChunkConfig, MarkdownSplitter};

/// Splits Markdown into chunks of at most `max_chars` characters, preferring the largest
/// structural unit that fits: heading sections, then thematic breaks, blocks (paragraphs,
/// code blocks, lists), inline elements, lines, sentences, words, grapheme clusters and, as a
/// last resort, single characters. The work is done by the `text-splitter` crate's
/// `MarkdownSplitter` (CommonMark with GitHub extensions).
///
/// A chunk never exceeds `max_chars` characters (one character always fits) and is never
/// empty. Chunks lose trailing whitespace and leading line breaks; a chunk of one line loses
/// its leading whitespace too, while a chunk of several lines keeps the indentation of its
/// first line, which matters in Markdown. With an overlap, consecutive chunks may share up to
/// `overlap` characters.
///
/// ```
/// use rag_eval::chunker::{MarkdownChunker, PositionAwareChunker};
/// use rag_eval::corpus::Document;
///
/// let doc = Document::new("a.md", "# Title\n\nFirst paragraph.\n\n## Part\n\nMore text here.");
/// let chunks = MarkdownChunker::new(30).chunk_with_positions(&doc);
/// let texts: Vec<&str> = chunks.iter().map(|c| c.content.as_str()).collect();
/// assert_eq!(texts, ["# Title\n\nFirst paragraph.", "## Part\n\nMore text here."]);
/// assert_eq!(chunks[1].start(), 27);
/// ```
#[derive(Debug, Clone)]
pub struct MarkdownChunker {
    max_chars: usize,
    overlap: usize,
    splitter: Arc<MarkdownSplitter<Characters>>,
}

impl MarkdownChunker {
    /// Chunks of at most `max_chars` characters, without overlap.
    ///
    /// # Panics
    /// Panics if `max_chars` is 0; [`MarkdownChunker::try_new`] returns an error instead.
    pub fn new(max_chars: usize) -> Self {
        match Self::try_new(max_chars) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    /// Like [`MarkdownChunker::new`], with an [`Error::Config`] when `max_chars` is 0.
    pub fn try_new(max_chars: usize) -> Result<Self> {
        Self::build(max_chars, 0)
    }

    /// The same chunker with consecutive chunks sharing up to `overlap` characters.
    ///
    /// # Panics
    /// Panics if `overlap >= max_chars`; [`MarkdownChunker::try_with_overlap`] returns an
    /// error instead.
    #[must_use]
    pub fn with_overlap(self, overlap: usize) -> Self {
        match self.try_with_overlap(overlap) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    /// Like [`MarkdownChunker::with_overlap`], with an [`Error::Config`] when the overlap is
    /// not smaller than the chunk size.
    pub fn try_with_overlap(self, overlap: usize) -> Result<Self> {
        Self::build(self.max_chars, overlap)
    }

    fn build(max_chars: usize, overlap: usize) -> Result<Self> {
        if max_chars == 0 {
            return Err(Error::Config(
                "markdown chunker: size must be at least 1 character".into(),
            ));
        }
        if overlap >= max_chars {
            return Err(Error::Config(format!(
                "markdown chunker: overlap ({overlap}) must be smaller than size ({max_chars})"
            )));
        }
        let config = ChunkConfig::new(max_chars)
            .with_overlap(overlap)
            .map_err(|e| Error::Config(format!("markdown chunker: {e}")))?;
        Ok(MarkdownChunker {
            max_chars,
            overlap,
            splitter: Arc::new(MarkdownSplitter::new(config)),
        })
    }

    /// Largest chunk, in characters.
    pub fn max_chars(&self) -> usize {
        self.max_chars
    }

    /// Characters consecutive chunks may share.
    pub fn overlap(&self) -> usize {
        self.overlap
    }

    /// The configuration as a spec string, e.g. `markdown:size=800,overlap=0`.
    pub fn name(&self) -> String {
        format!("markdown:size={},overlap={}", self.max_chars, self.overlap)
    }

    fn byte_ranges<'a>(&'a self, text: &'a str) -> impl Iterator<Item = Range<usize>> + 'a {
        self.splitter
            .chunk_indices(text)
            .map(|(start, chunk)| start..start + chunk.len())
    }
}

impl PartialEq for MarkdownChunker {
    fn eq(&self, other: &Self) -> bool {
        (self.max_chars, self.overlap) == (other.max_chars, other.overlap)
    }
}

impl Eq for MarkdownChunker {}

impl PositionAwareChunker for MarkdownChunker {
    fn name(&self) -> String {
        MarkdownChunker::name(self)
    }

    fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk> {
        chunks_from_byte_ranges(doc, self.byte_ranges(doc.content()))
    }
}

impl Chunker for MarkdownChunker {
    fn name(&self) -> String {
        MarkdownChunker::name(self)
    }

    fn chunk(&self, text: &str) -> Vec<String> {
        self.byte_ranges(text)
            .filter(|r| r.start < r.end)
            .map(|r| text[r].to_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(c: &MarkdownChunker, text: &str) -> Vec<(usize, usize, String)> {
        let doc = Document::new("d", text);
        c.chunk_with_positions(&doc)
            .into_iter()
            .map(|c| (c.start(), c.end(), c.content))
            .collect()
    }

    #[test]
    fn sections_stay_together_when_they_fit() {
        let text = "# A\n\nalpha beta.\n\n# B\n\ngamma delta.\n";
        // Each section is 16 chars; both together are 34 with the blank line.
        assert_eq!(
            spans(&MarkdownChunker::new(20), text),
            [
                (0, 16, "# A\n\nalpha beta.".to_owned()),
                (18, 35, "# B\n\ngamma delta.".to_owned()),
            ]
        );
        assert_eq!(
            spans(&MarkdownChunker::new(100), text),
            [(0, 35, text.trim_end().to_owned())]
        );
    }

    #[test]
    fn offsets_are_characters_and_chunks_are_trimmed() {
        let text = "  é😀\n\n# Größe\n\nü ü ü ü ü\n";
        let got = spans(&MarkdownChunker::new(7), text);
        // Byte offsets would differ from these from the first "é" on.
        assert_eq!(
            got,
            [
                (2, 4, "é😀".to_owned()),
                (6, 13, "# Größe".to_owned()),
                // Filled greedily: seven characters fit, the last word goes on.
                (15, 22, "ü ü ü ü".to_owned()),
                (23, 24, "ü".to_owned()),
            ]
        );
        let doc = Document::new("d", text);
        for (s, e, c) in got {
            assert_eq!(doc.slice(s, e), Some(c.as_str()));
        }
    }

    #[test]
    fn multi_line_chunks_keep_their_indentation() {
        // "para one" and the code block together are 41 chars, one more than fits; the code
        // block and the last paragraph are 39 (10..49) and fit.
        let text = "para one\n\n    code line 1\n    code line 2\n\n  last  ";
        assert_eq!(
            spans(&MarkdownChunker::new(40), text),
            [
                (0, 8, "para one".to_owned()),
                (
                    10,
                    49,
                    "    code line 1\n    code line 2\n\n  last".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn overlap_repeats_the_tail_of_the_previous_chunk() {
        let c = MarkdownChunker::new(11).with_overlap(5);
        let got = c.chunk("one two three four five");
        assert_eq!(got, ["one two", "two three", "three four", "four five"]);
        assert_eq!(c.name(), "markdown:size=11,overlap=5");
    }

    #[test]
    fn empty_and_blank_documents_have_no_chunks() {
        assert!(MarkdownChunker::new(10).chunk("").is_empty());
        assert!(spans(&MarkdownChunker::new(10), " \r\n\t ").is_empty());
    }

    #[test]
    fn invalid_configurations_are_errors() {
        let e = MarkdownChunker::try_new(0).unwrap_err().to_string();
        assert!(e.contains("size must be at least 1"), "{e}");
        let e = MarkdownChunker::new(5)
            .try_with_overlap(5)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("overlap (5) must be smaller than size (5)"),
            "{e}"
        );
    }

    #[test]
    #[should_panic(expected = "size must be at least 1 character")]
    fn new_panics_on_zero_size() {
        let _ = MarkdownChunker::new(0);
    }

    #[test]
    fn name_and_getters() {
        let c = MarkdownChunker::new(800);
        assert_eq!(c.name(), "markdown:size=800,overlap=0");
        assert_eq!(PositionAwareChunker::name(&c), Chunker::name(&c));
        assert_eq!((c.max_chars(), c.overlap()), (800, 0));
        assert_eq!(c.clone().with_overlap(100).overlap(), 100);
    }
}
