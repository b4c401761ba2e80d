//! Heading- and paragraph-aware Markdown splitting through `text-splitter`.

use super::{chunks_from_byte_ranges, Chunker, PositionAwareChunker};
use crate::chunk::PositionAwareChunk;
use crate::corpus::Document;
use crate::error::{Result, SettingError};
use crate::spec::{Spec, Value};
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

    /// Like [`MarkdownChunker::new`], with an [`Error::Setting`](crate::Error::Setting) when `max_chars` is 0.
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

    /// Like [`MarkdownChunker::with_overlap`], with an [`Error::Setting`](crate::Error::Setting) when the overlap is
    /// not smaller than the chunk size.
    pub fn try_with_overlap(self, overlap: usize) -> Result<Self> {
        Self::build(self.max_chars, overlap)
    }

    fn build(max_chars: usize, overlap: usize) -> Result<Self> {
        if max_chars == 0 {
            return Err(SettingError::new(
                "markdown chunker",
                "size",
                0,
                "must be at least 1 character",
            )
            .into());
        }
        if overlap >= max_chars {
            return Err(SettingError::new(
                "markdown chunker",
                "overlap",
                overlap,
                format!("must be smaller than size ({max_chars})"),
            )
            .into());
        }
        let config = ChunkConfig::new(max_chars)
            .with_overlap(overlap)
            .map_err(|e| {
                SettingError::new(
                    "markdown chunker",
                    "overlap",
                    overlap,
                    format!("must fit the size ({e})"),
                )
            })?;
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
        PositionAwareChunker::spec(self).to_string()
    }

    /// The splitter is handed the text one window at a time, because its work per chunk grows
    /// with the text left after it: it re-lists every Markdown element to the end of the text
    /// for each chunk, and on text without sentence or word breaks (a data URI, a long line
    /// without spaces) it looks for the next break to the end of the text. Over a whole
    /// document that made chunking quadratic (50 MB: 97 s; a 4 MB one-line data URI: 63 s).
    /// A window holds [`WINDOW_CHUNKS`] chunks' worth of text (at least [`MIN_WINDOW`] bytes)
    /// and ends after the last blank line in its second half, else the last line break, else
    /// the last whitespace, else at a character; no chunk spans two windows. A document that
    /// fits in one window is split exactly as before.
    fn byte_ranges<'a>(&'a self, text: &'a str) -> impl Iterator<Item = Range<usize>> + 'a {
        let window = self.max_chars.saturating_mul(WINDOW_CHUNKS).max(MIN_WINDOW);
        let mut at = 0;
        std::iter::from_fn(move || {
            if at >= text.len() {
                return None;
            }
            let start = at;
            let end = window_end(text, start, window);
            at = end;
            Some(
                self.splitter
                    .chunk_indices(&text[start..end])
                    .map(move |(s, chunk)| start + s..start + s + chunk.len()),
            )
        })
        .flatten()
    }
}

/// Chunks' worth of text (at the largest chunk size) handed to the splitter at once.
const WINDOW_CHUNKS: usize = 16;

/// The smallest window, in bytes, so small chunk sizes do not cut the text into tiny windows.
const MIN_WINDOW: usize = 64;

/// Where the window of at most `window` bytes starting at `start` ends (see
/// [`MarkdownChunker::byte_ranges`]).
fn window_end(text: &str, start: usize, window: usize) -> usize {
    if text.len() - start <= window {
        return text.len();
    }
    let hard = floor_boundary(text, start + window);
    let half = floor_boundary(text, start + window / 2).max(start);
    let tail = &text[half..hard];
    let after = |i: usize, len: usize| half + i + len;
    tail.rfind("\n\n")
        .map(|i| after(i, 2))
        .or_else(|| tail.rfind('\n').map(|i| after(i, 1)))
        .or_else(|| {
            tail.char_indices()
                .rev()
                .find(|(_, c)| c.is_whitespace())
                .map(|(i, c)| after(i, c.len_utf8()))
        })
        .filter(|&e| e > start)
        .unwrap_or(if hard > start {
            hard
        } else {
            // A window smaller than one character: take the character.
            start + text[start..].chars().next().map_or(1, char::len_utf8)
        })
}

/// The largest character boundary at or before `i`.
fn floor_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
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

    /// `markdown:size=…,overlap=…`.
    fn spec(&self) -> Value {
        Spec::new("markdown")
            .with("size", self.max_chars.to_string())
            .with("overlap", self.overlap.to_string())
            .into()
    }

    fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk> {
        chunks_from_byte_ranges(doc, self.byte_ranges(doc.content()))
    }
}

impl Chunker for MarkdownChunker {
    fn name(&self) -> String {
        MarkdownChunker::name(self)
    }

    fn spec(&self) -> Value {
        PositionAwareChunker::spec(self)
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
            e.contains("overlap must be smaller than size (5), got 5"),
            "{e}"
        );
    }

    #[test]
    #[should_panic(expected = "size must be at least 1 character")]
    fn new_panics_on_zero_size() {
        let _ = MarkdownChunker::new(0);
    }

    #[test]
    fn long_documents_are_chunked_in_linear_time() {
        // Before windows: a one-line data URI took time quadratic in its length (4 MB: 63 s in
        // a release build), and `size=1` on a line without spaces did not finish.
        let uri = format!("![x](data:image/png;base64,{})", "QUJD".repeat(50_000));
        let para = "Some words in a paragraph, with a [link](http://x.y) and `code`.\n\n";
        let prose = format!("# Title\n\n{}", para.repeat(2_000));
        let solid = "x".repeat(30_000);
        for (text, size) in [(&uri, 800), (&prose, 800), (&solid, 1)] {
            let c = MarkdownChunker::new(size);
            let t = std::time::Instant::now();
            let chunks = spans(&c, text);
            let took = t.elapsed();
            assert!(
                took.as_secs() < 20,
                "{} bytes, size {size}: {took:?}",
                text.len()
            );
            // Nothing lost: every non-whitespace character is in a chunk, in order.
            let doc = Document::new("d", text.as_str());
            let mut covered = 0;
            for (s, e, content) in &chunks {
                assert!(*s >= covered && e - s <= size, "{s}..{e}");
                assert_eq!(doc.slice(*s, *e), Some(content.as_str()));
                covered = *e;
            }
            let kept: usize = chunks
                .iter()
                .map(|(_, _, c)| c.chars().filter(|c| !c.is_whitespace()).count())
                .sum();
            assert_eq!(kept, text.chars().filter(|c| !c.is_whitespace()).count());
        }
    }

    #[test]
    fn windows_end_at_blank_lines_then_lines_then_spaces() {
        let text = "aaaa\n\nbbbb\ncccc dddd";
        assert_eq!(window_end(text, 0, 100), text.len());
        assert_eq!(window_end(text, 0, 8), 6, "after the blank line");
        assert_eq!(window_end(text, 6, 8), 11, "after the line break");
        assert_eq!(window_end(text, 11, 8), 16, "after the space");
        assert_eq!(window_end("ééé", 0, 3), 2, "on a character boundary");
        assert_eq!(window_end("ééé", 0, 1), 2, "at least one character");
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
