//! Recursive character splitting with LangChain's exact semantics and exact positions.
//!
//! [`RecursiveCharacterChunker`] produces the same chunks as LangChain's
//! `RecursiveCharacterTextSplitter` (default `keep_separator=True`, `strip_whitespace=True`),
//! and the true character offset of each, tracked while splitting.

use super::scan::{find, find_byte, rfind_byte, scan_pieces};
use super::{Chunker, PositionAwareChunker};
use crate::chunk::PositionAwareChunk;
use crate::corpus::Document;
use crate::error::{Result, SettingError};
use crate::spec::{Spec, Value};
use std::ops::Range;
use std::sync::Arc;

/// How [`RecursiveCharacterChunker`] measures a piece of text against its chunk size and
/// overlap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LengthUnit {
    /// Unicode scalar values, as Python's `len(str)`.
    #[default]
    Chars,
    /// cl100k_base tokens (special-token text counts as ordinary text), as Chroma's
    /// chunking_evaluation measures its recursive chunker.
    #[cfg(feature = "tiktoken")]
    Cl100kTokens,
}

impl LengthUnit {
    /// The value of `length=` in a chunker spec.
    fn spec_name(self) -> &'static str {
        match self {
            LengthUnit::Chars => "chars",
            #[cfg(feature = "tiktoken")]
            LengthUnit::Cl100kTokens => "tokens",
        }
    }
}

/// Splits text on the first separator of a list that occurs in it, merges the pieces into
/// chunks of at most `chunk_size`, and splits pieces that are too long with the remaining
/// separators, exactly as LangChain's `RecursiveCharacterTextSplitter` does.
///
/// The rules, all LangChain's:
/// - The separator for a text is the first of the list that occurs in it; `""` means "every
///   character". If none occurs, the text is one piece.
/// - Each separator stays at the start of the piece that follows it.
/// - Pieces shorter than `chunk_size` are merged greedily; when the next piece does not fit,
///   the chunk is emitted and pieces are dropped from its front until at most `overlap` is
///   left and the next piece fits.
/// - A piece of `chunk_size` or more is split again with the separators after the one used;
///   when none are left it becomes a chunk of its own, as it is (not stripped).
/// - Merged chunks are stripped of whitespace as Python's `str.strip()` does (which also
///   strips `\x1c`–`\x1f`); chunks left empty are dropped.
///
/// Where LangChain recovers a chunk's `start_index` by searching for its text, and so can land
/// on an earlier copy of repeated text, this chunker reports where the chunk really is.
///
/// ```
/// use rag_eval::chunker::{PositionAwareChunker, RecursiveCharacterChunker};
/// use rag_eval::corpus::Document;
///
/// let doc = Document::new("d", "ab cd ef gh");
/// let chunks = RecursiveCharacterChunker::new(6, 3).chunk_with_positions(&doc);
/// let got: Vec<_> = chunks.iter().map(|c| (c.content.as_str(), c.start())).collect();
/// assert_eq!(got, [("ab cd", 0), ("cd ef", 3), ("ef gh", 6)]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecursiveCharacterChunker {
    chunk_size: usize,
    overlap: usize,
    separators: Vec<String>,
    length: LengthUnit,
}

impl RecursiveCharacterChunker {
    /// LangChain's default separators: paragraphs, lines, words, characters.
    pub const LANGCHAIN_SEPARATORS: &'static [&'static str] = &["\n\n", "\n", " ", ""];
    /// The separators of Chroma's chunking_evaluation recursive chunker, which also splits at
    /// sentence punctuation.
    pub const CHROMA_SEPARATORS: &'static [&'static str] = &["\n\n", "\n", ".", "?", "!", " ", ""];

    /// A chunker with LangChain's separators that measures in characters.
    ///
    /// # Panics
    /// Panics if `chunk_size` is 0 or `overlap` is larger than `chunk_size`; use
    /// [`RecursiveCharacterChunker::try_new`] for sizes that come from users.
    pub fn new(chunk_size: usize, overlap: usize) -> Self {
        Self::try_new(chunk_size, overlap).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A chunker with LangChain's separators that measures in characters; a `chunk_size` of 0
    /// or an `overlap` larger than `chunk_size` is an [`Error::Setting`](crate::Error::Setting).
    pub fn try_new(chunk_size: usize, overlap: usize) -> Result<Self> {
        if chunk_size == 0 {
            return Err(
                SettingError::new("recursive chunker", "size", 0, "must be at least 1").into(),
            );
        }
        if overlap > chunk_size {
            return Err(SettingError::new(
                "recursive chunker",
                "overlap",
                overlap,
                format!("must be at most the chunk size ({chunk_size})"),
            )
            .into());
        }
        Ok(RecursiveCharacterChunker {
            chunk_size,
            overlap,
            separators: Self::LANGCHAIN_SEPARATORS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            length: LengthUnit::Chars,
        })
    }

    /// Replaces the separators, tried in the given order. An empty list means LangChain's
    /// defaults, as in LangChain.
    pub fn with_separators(mut self, seps: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let seps: Vec<String> = seps.into_iter().map(Into::into).collect();
        self.separators = if seps.is_empty() {
            Self::LANGCHAIN_SEPARATORS
                .iter()
                .map(|s| (*s).to_owned())
                .collect()
        } else {
            seps
        };
        self
    }

    /// Sets how chunk size and overlap are measured.
    ///
    /// With [`LengthUnit::Cl100kTokens`] a chunk's size is, as in LangChain, the sum of the
    /// token counts of its pieces, counted one piece at a time.
    pub fn with_length(mut self, unit: LengthUnit) -> Self {
        self.length = unit;
        self
    }

    /// Largest size of a merged chunk.
    pub fn chunk_size(&self) -> usize {
        self.chunk_size
    }

    /// Most of the previous chunk that a chunk may repeat.
    pub fn overlap(&self) -> usize {
        self.overlap
    }

    /// The separators, in the order they are tried.
    pub fn separators(&self) -> &[String] {
        &self.separators
    }

    /// How sizes are measured.
    pub fn length(&self) -> LengthUnit {
        self.length
    }

    fn separators_spec_name(&self) -> &'static str {
        let is = |list: &[&str]| {
            self.separators
                .iter()
                .map(String::as_str)
                .eq(list.iter().copied())
        };
        if is(Self::LANGCHAIN_SEPARATORS) {
            "langchain"
        } else if is(Self::CHROMA_SEPARATORS) {
            "chroma"
        } else {
            "custom"
        }
    }

    /// Byte ranges of the chunks of `text`, in order.
    fn byte_ranges(&self, text: &str) -> Vec<Range<usize>> {
        self.byte_ranges_with(text, true)
    }

    fn byte_ranges_with(&self, text: &str, jump: bool) -> Vec<Range<usize>> {
        let mut run = Run {
            text,
            size: self.chunk_size,
            overlap: self.overlap,
            meter: Meter::for_text(self.length, text),
            out: Vec::with_capacity(text.len() / self.chunk_size.max(1) + 1),
            spare: Vec::new(),
            jump,
        };
        run.split(0..text.len(), &self.separators);
        run.out
    }
}

impl PositionAwareChunker for RecursiveCharacterChunker {
    fn name(&self) -> String {
        PositionAwareChunker::spec(self).to_string()
    }

    /// `recursive:size=…,overlap=…,length=…,separators=…`.
    fn spec(&self) -> Value {
        Spec::new("recursive")
            .with("size", self.chunk_size.to_string())
            .with("overlap", self.overlap.to_string())
            .with("length", self.length.spec_name())
            .with("separators", self.separators_spec_name())
            .into()
    }

    fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk> {
        let text = doc.content();
        let ranges = self.byte_ranges(text);
        let ascii = doc.char_len() == text.len();
        // Chunk starts come in document order, so one cursor walking forward converts them
        // all in a single pass over the text (a binary search per offset misses the cache).
        let mut cursor = CharCursor::default();
        // One shared copy of the text lets every chunk compute its id when first read.
        let shared: Arc<str> = Arc::from(text);
        ranges
            .into_iter()
            .map(|r| {
                let (start, end) = if ascii {
                    (r.start, r.end)
                } else {
                    let start = cursor.seek(text, r.start);
                    (start, start + char_count(&text[r.clone()]))
                };
                PositionAwareChunk::in_shared_text(doc.id().clone(), start, end, &shared, r)
            })
            .collect()
    }
}

impl Chunker for RecursiveCharacterChunker {
    fn name(&self) -> String {
        PositionAwareChunker::name(self)
    }

    fn spec(&self) -> Value {
        PositionAwareChunker::spec(self)
    }

    fn chunk(&self, text: &str) -> Vec<String> {
        self.byte_ranges(text)
            .into_iter()
            .map(|r| text[r].to_owned())
            .collect()
    }
}

/// Python's `str.isspace()`, which is what `str.strip()` strips: Unicode White_Space plus the
/// information separators U+001C–U+001F (bidirectional class B or S).
pub(crate) fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Number of chars in `s`: its bytes that do not continue a multi-byte char. Inlined and
/// vectorised, unlike `chars().count()`, which is slow for the many short pieces.
fn char_count(s: &str) -> usize {
    char_starts(s.as_bytes())
}

/// Number of bytes of `s` that start a UTF-8 char.
#[inline(always)]
fn char_starts(s: &[u8]) -> usize {
    s.iter().filter(|&&b| (b as i8) >= -0x40).count()
}

/// Char distances between byte offsets of a text, all of them char boundaries.
#[derive(Clone, Copy)]
struct CharMath<'a> {
    hay: &'a [u8],
    ascii: bool,
}

impl CharMath<'_> {
    /// Chars in `x..y`.
    #[inline(always)]
    fn between(self, x: usize, y: usize) -> usize {
        if self.ascii {
            y - x
        } else {
            char_starts(&self.hay[x..y])
        }
    }

    /// The boundary `k` chars after `x`, or `z` when fewer are left.
    fn advance(self, x: usize, k: usize, z: usize) -> usize {
        if self.ascii {
            return x.saturating_add(k).min(z);
        }
        // Each round reads as many bytes as chars are still needed, which is never too far.
        let (mut b, mut need) = (x, k);
        while need > 0 && b < z {
            let step = need.min(z - b);
            need -= char_starts(&self.hay[b..b + step]);
            b += step;
        }
        self.to_boundary(b, z)
    }

    /// The first boundary at most `k` chars before `y`, or `a` when fewer are there.
    fn retreat(self, y: usize, k: usize, a: usize) -> usize {
        if self.ascii {
            return y.saturating_sub(k).max(a);
        }
        let (mut b, mut need) = (y, k);
        while need > 0 && b > a {
            let step = need.min(b - a);
            need -= char_starts(&self.hay[b - step..b]);
            b -= step;
        }
        self.to_boundary(b, y)
    }

    /// `b`, or the next char start when `b` is inside a char.
    fn to_boundary(self, mut b: usize, limit: usize) -> usize {
        while b < limit && (self.hay[b] as i8) < -0x40 {
            b += 1;
        }
        b
    }
}

/// Converts byte offsets to char offsets by walking from the previous one.
#[derive(Default)]
struct CharCursor {
    byte: usize,
    char: usize,
}

impl CharCursor {
    fn seek(&mut self, text: &str, byte: usize) -> usize {
        if byte >= self.byte {
            self.char += char_count(&text[self.byte..byte]);
        } else {
            self.char -= char_count(&text[byte..self.byte]);
        }
        self.byte = byte;
        self.char
    }
}

/// Measures pieces in the configured unit.
#[derive(Clone, Copy)]
enum Meter {
    /// Characters of a text known to be ASCII, where a piece's length is its byte length.
    AsciiChars,
    /// Characters, counted while the text is scanned for separators.
    Chars,
    #[cfg(feature = "tiktoken")]
    Tokens(&'static tiktoken_rs::CoreBPE),
}

impl Meter {
    fn for_text(unit: LengthUnit, text: &str) -> Self {
        match unit {
            LengthUnit::Chars if text.is_ascii() => Meter::AsciiChars,
            LengthUnit::Chars => Meter::Chars,
            #[cfg(feature = "tiktoken")]
            LengthUnit::Cl100kTokens => Meter::Tokens(tiktoken_rs::cl100k_base_singleton()),
        }
    }
}

/// A piece of the text: absolute byte range and measured length.
#[derive(Clone, Copy)]
struct Piece {
    start: usize,
    end: usize,
    len: usize,
}

/// The chunk being merged at one recursion level: the window `pieces[first..]`, whose
/// lengths add up to `total`. Pieces before `first` were dropped; the buffer is emptied
/// whenever the window is.
#[derive(Default)]
struct Window {
    pieces: Vec<Piece>,
    first: usize,
    total: usize,
}

/// One chunking of one text; chunks are collected as absolute byte ranges.
struct Run<'a> {
    text: &'a str,
    size: usize,
    overlap: usize,
    meter: Meter,
    out: Vec<Range<usize>>,
    /// Windows of finished recursion levels, reused by the next ones.
    spare: Vec<Window>,
    /// Whether single-byte separators with character length take the jumping path
    /// ([`Run::split_at_byte`]); tests turn it off to compare both paths.
    jump: bool,
}

impl Run<'_> {
    /// Splits `text[range]` with the first separator of `seps` that occurs in it.
    fn split(&mut self, range: Range<usize>, seps: &[String]) {
        let base = range.start;
        let part = &self.text[range.clone()];
        let (sep, rest) = pick_separator(part, seps);
        if let [byte] = *sep.as_bytes() {
            if self.jump && matches!(self.meter, Meter::AsciiChars | Meter::Chars) {
                self.split_at_byte(range.start, range.end, byte, rest);
                return;
            }
        }
        let mut win = self.spare.pop().unwrap_or_default();
        if sep.is_empty() {
            for (i, c) in part.char_indices() {
                self.take(&mut win, base + i, base + i + c.len_utf8(), 1, rest);
            }
        } else {
            let count_chars = matches!(self.meter, Meter::Chars);
            let mut take = |start, end, chars| {
                self.take(&mut win, base + start, base + end, chars, rest);
            };
            if count_chars {
                scan_pieces::<true>(part, sep, &mut take);
            } else {
                scan_pieces::<false>(part, sep, &mut take);
            }
        }
        self.flush(&mut win);
        self.spare.push(win);
    }

    /// Handles the next piece: a small one joins the window, a long one ends the window and
    /// is split further with `rest`, or kept whole when no separator is left.
    #[inline(always)]
    fn take(&mut self, win: &mut Window, start: usize, end: usize, chars: usize, rest: &[String]) {
        let len = match self.meter {
            Meter::AsciiChars | Meter::Chars => chars,
            #[cfg(feature = "tiktoken")]
            Meter::Tokens(bpe) => bpe.encode_ordinary(&self.text[start..end]).len(),
        };
        if len < self.size {
            self.push(win, Piece { start, end, len });
            return;
        }
        self.flush(win);
        self.long_piece(start, end, rest);
    }

    /// A piece of `size` or more: split further with `rest`, or kept whole when no separator
    /// is left.
    fn long_piece(&mut self, start: usize, end: usize, rest: &[String]) {
        if rest.is_empty() {
            self.out.push(start..end);
        } else {
            self.split(start..end, rest);
        }
    }

    /// The same splitting and merging as [`Run::split`] for a one-byte separator `sep` and
    /// lengths in chars, without visiting every piece.
    ///
    /// The pieces are consecutive, so a window's length is the char distance between its
    /// ends, and "merge pieces while they fit" means "end the chunk at the last separator at
    /// most `size` chars after its start": one backward search near that point instead of a
    /// step per word. Dropping pieces for the overlap likewise becomes a forward search from
    /// the first offset where both of LangChain's conditions hold.
    fn split_at_byte(&mut self, a: usize, z: usize, sep: u8, rest: &[String]) {
        let hay = self.text.as_bytes();
        let ch = CharMath {
            hay,
            ascii: matches!(self.meter, Meter::AsciiChars),
        };
        let (size, overlap) = (self.size, self.overlap);
        // Piece boundaries are `a`, every `sep` after it, and `z`.
        let next = |x: usize| find_byte(hay, x + 1, z, sep).unwrap_or(z);
        let mut e = a;
        let mut window: Option<usize> = None;
        while e < z {
            let Some(st) = window else {
                let n = next(e);
                if ch.between(e, n) >= size {
                    self.long_piece(e, n, rest);
                } else {
                    window = Some(e);
                }
                e = n;
                continue;
            };
            let limit = ch.advance(st, size, z);
            if limit >= z {
                // Everything left fits, and no piece after `st` can be long.
                e = z;
                break;
            }
            // Every piece ending at or before `limit` fits; the next one does not.
            e = rfind_byte(hay, e + 1, limit + 1, sep).unwrap_or(e);
            let n = next(e);
            self.emit_stripped(st, e);
            if ch.between(e, n) >= size {
                window = None;
                self.long_piece(e, n, rest);
                e = n;
                continue;
            }
            // Keep the pieces from the first boundary where what is kept is at most
            // `overlap` long and the next piece fits after it (all dropped if none).
            let lo = st
                .max(ch.retreat(e, overlap, a))
                .max(ch.retreat(n, size, a));
            let kept = if lo <= st {
                st
            } else {
                find_byte(hay, lo, e, sep).unwrap_or(e)
            };
            window = Some(kept);
            e = n;
        }
        if let Some(st) = window {
            self.emit_stripped(st, e);
        }
    }

    /// Adds a small piece to the window. When it does not fit, the window is emitted as a
    /// chunk first and pieces are dropped from its front until what is left may be repeated
    /// as overlap and the new piece fits after it.
    #[inline(always)]
    fn push(&mut self, win: &mut Window, p: Piece) {
        if win.total + p.len > self.size {
            if let (Some(first), Some(last)) = (win.pieces.get(win.first), win.pieces.last()) {
                self.emit_stripped(first.start, last.end);
                while win.total > self.overlap || (win.total + p.len > self.size && win.total > 0) {
                    win.total -= win.pieces[win.first].len;
                    win.first += 1;
                }
                if win.first == win.pieces.len() {
                    win.pieces.clear();
                    win.first = 0;
                }
            }
        }
        win.pieces.push(p);
        win.total += p.len;
    }

    /// Emits what is left in the window and empties it.
    fn flush(&mut self, win: &mut Window) {
        if let (Some(first), Some(last)) = (win.pieces.get(win.first), win.pieces.last()) {
            self.emit_stripped(first.start, last.end);
        }
        win.pieces.clear();
        win.first = 0;
        win.total = 0;
    }

    fn emit_stripped(&mut self, start: usize, end: usize) {
        let s = &self.text[start..end];
        let after_lead = s.trim_start_matches(is_python_whitespace);
        let trimmed = after_lead.trim_end_matches(is_python_whitespace);
        if !trimmed.is_empty() {
            let from = start + (s.len() - after_lead.len());
            self.out.push(from..from + trimmed.len());
        }
    }
}

/// The separator to split `text` with, and the separators left for pieces that are too long.
fn pick_separator<'s>(text: &str, seps: &'s [String]) -> (&'s str, &'s [String]) {
    for (i, s) in seps.iter().enumerate() {
        if s.is_empty() {
            return ("", &[]);
        }
        if find(text, s).is_some() {
            return (s, &seps[i + 1..]);
        }
    }
    // No separator occurs: the last one splits nothing, and nothing is left to try.
    (seps.last().map_or("", String::as_str), &[])
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;

    fn run(c: &RecursiveCharacterChunker, text: &str) -> Vec<(String, usize)> {
        let doc = Document::new("d", text);
        let chunks = c.chunk_with_positions(&doc);
        for ch in &chunks {
            assert_eq!(doc.slice(ch.start(), ch.end()), Some(ch.content.as_str()));
        }
        let plain = Chunker::chunk(c, text);
        let from_positions: Vec<&str> = chunks.iter().map(|c| c.content.as_str()).collect();
        assert_eq!(plain, from_positions, "both traits give the same chunks");
        chunks
            .into_iter()
            .map(|c| (c.content, c.span.start))
            .collect()
    }

    fn owned(v: &[(&str, usize)]) -> Vec<(String, usize)> {
        v.iter().map(|(s, i)| ((*s).to_owned(), *i)).collect()
    }

    #[test]
    fn separator_stays_at_the_start_of_the_next_piece() {
        // Pieces "aaa", " bbb", " ccc": the first two fill 7 exactly, the third starts with
        // its space, which stripping then removes.
        let c = RecursiveCharacterChunker::new(7, 0);
        assert_eq!(run(&c, "aaa bbb ccc"), owned(&[("aaa bbb", 0), ("ccc", 8)]));
        // With the separator at the end of a piece, "aaa " + "bbb " would be 8 and not fit.
    }

    #[test]
    fn overlap_keeps_trailing_pieces_up_to_the_overlap() {
        // Pieces "ab", " cd", " ef", " gh" (2, 3, 3, 3). After "ab cd" (5), popping stops at
        // " cd" (3 <= overlap 3, and 3 + 3 fits in 6).
        let c = RecursiveCharacterChunker::new(6, 3);
        assert_eq!(
            run(&c, "ab cd ef gh"),
            owned(&[("ab cd", 0), ("cd ef", 3), ("ef gh", 6)])
        );
    }

    #[test]
    fn popping_continues_while_the_next_piece_would_not_fit() {
        // Pieces "abc", " de", " fghi" (3, 3, 5), size 6, overlap 4. After "abc de" the
        // total 6 > 4 pops "abc"; 3 <= 4 but 3 + 5 > 6 pops " de" too.
        let c = RecursiveCharacterChunker::new(6, 4);
        assert_eq!(run(&c, "abc de fghi"), owned(&[("abc de", 0), ("fghi", 7)]));
        // When the next piece fits after the kept one, it stays as overlap.
        assert_eq!(run(&c, "abc de fg"), owned(&[("abc de", 0), ("de fg", 4)]));
    }

    #[test]
    fn zero_overlap_drops_the_whole_previous_chunk() {
        // " ef" + " gh" is 6, one more than fits: the leading separators count.
        let c = RecursiveCharacterChunker::new(5, 0);
        assert_eq!(
            run(&c, "ab cd ef gh"),
            owned(&[("ab cd", 0), ("ef", 6), ("gh", 9)])
        );
        assert_eq!(run(&c, "ab cd ef g"), owned(&[("ab cd", 0), ("ef g", 6)]));
    }

    #[test]
    fn the_first_separator_present_decides_and_long_pieces_recurse() {
        // "\n\n" occurs, so the text splits into "a b c d" and "\n\ne f": the first is too long
        // for 5 and is split again at " ".
        let c = RecursiveCharacterChunker::new(5, 0);
        assert_eq!(
            run(&c, "a b c d\n\ne f"),
            owned(&[("a b c", 0), ("d", 6), ("e f", 9)])
        );
    }

    #[test]
    fn strips_python_whitespace_including_information_separators() {
        let c = RecursiveCharacterChunker::new(20, 0);
        // Rust's trim would keep \x1c..\x1f; Python's strip removes them.
        assert_eq!(run(&c, "\x1e\t hello\x1f \u{3000}"), owned(&[("hello", 3)]));
        assert_eq!(
            run(&c, "\u{200b}x"),
            owned(&[("\u{200b}x", 0)]),
            "ZWSP is not space"
        );
        assert!(is_python_whitespace('\u{85}') && is_python_whitespace('\u{a0}'));
        assert!(!is_python_whitespace('\u{180e}') && !is_python_whitespace('\u{feff}'));
    }

    #[test]
    fn offsets_are_chars_in_multibyte_text() {
        let c = RecursiveCharacterChunker::new(8, 0);
        assert_eq!(
            run(&c, "héllo wörld ñandú"),
            owned(&[("héllo", 0), ("wörld", 6), ("ñandú", 12)])
        );
        // Per-character splitting of multi-byte text counts characters, not bytes.
        let c = RecursiveCharacterChunker::new(3, 1);
        assert_eq!(run(&c, "€€€€€"), owned(&[("€€€", 0), ("€€€", 2)]));
    }

    #[test]
    fn crlf_is_split_at_the_lf_and_the_cr_stripped() {
        // No "\n\n" in the text, so "\n" splits it: "line one\r", "\nline two\r", "\n\r",
        // "\nline three" (9, 10, 2, 11).
        let c = RecursiveCharacterChunker::new(12, 0);
        let text = "line one\r\nline two\r\n\r\nline three";
        assert_eq!(
            run(&c, text),
            owned(&[("line one", 0), ("line two", 10), ("line three", 22)])
        );
    }

    #[test]
    fn empty_and_blank_documents_give_no_chunks() {
        let c = RecursiveCharacterChunker::new(10, 2);
        assert!(run(&c, "").is_empty());
        assert!(run(&c, " \n\n\t\x1c \n").is_empty());
    }

    #[test]
    fn a_word_longer_than_the_size_is_cut_into_characters() {
        let c = RecursiveCharacterChunker::new(4, 0);
        assert_eq!(
            run(&c, "abcdefghij"),
            owned(&[("abcd", 0), ("efgh", 4), ("ij", 8)])
        );
    }

    #[test]
    fn an_unsplittable_piece_is_kept_whole_and_unstripped() {
        // No separators left after "\n\n": the long piece becomes a chunk as it is, leading
        // separator and trailing spaces included, like LangChain.
        let c = RecursiveCharacterChunker::new(5, 0).with_separators(["\n\n"]);
        assert_eq!(
            run(&c, "ab\n\n  cdefgh  \n\nxy"),
            owned(&[("ab", 0), ("\n\n  cdefgh  ", 2), ("xy", 16)])
        );
        // No separator occurs at all: the whole text is one piece.
        let c = RecursiveCharacterChunker::new(3, 0).with_separators(["|"]);
        assert_eq!(run(&c, "abcdefg"), owned(&[("abcdefg", 0)]));
        // Size 1 with characters: every character is "too long", kept as is, spaces too.
        let c = RecursiveCharacterChunker::new(1, 0);
        assert_eq!(run(&c, "a b"), owned(&[("a", 0), (" ", 1), ("b", 2)]));
    }

    #[test]
    fn an_empty_separator_before_others_splits_by_character() {
        // "" comes first, so " " is never tried: "a", "b", " ", "c", "d" merge by twos and
        // " c" loses its space to stripping.
        let c = RecursiveCharacterChunker::new(2, 0).with_separators(["", " "]);
        assert_eq!(run(&c, "ab cd"), owned(&[("ab", 0), ("c", 3), ("d", 4)]));
    }

    #[test]
    fn consecutive_separators_become_pieces_of_their_own() {
        // "\n\n\n\nb" with "\n\n": pieces "a", "\n\n", "\n\nb".
        let c = RecursiveCharacterChunker::new(3, 0);
        assert_eq!(run(&c, "a\n\n\n\nb"), owned(&[("a", 0), ("b", 5)]));
    }

    #[cfg(feature = "tiktoken")]
    #[test]
    fn token_length_counts_cl100k_tokens_per_piece() {
        // "hello", " world", " foo", " bar" are one cl100k token each.
        let c = RecursiveCharacterChunker::new(3, 0).with_length(LengthUnit::Cl100kTokens);
        assert_eq!(
            run(&c, "hello world foo bar"),
            owned(&[("hello world foo", 0), ("bar", 16)])
        );
        assert_eq!(
            PositionAwareChunker::name(&c),
            "recursive:size=3,overlap=0,length=tokens,separators=langchain"
        );
    }

    #[test]
    fn invalid_configurations_are_errors() {
        let e = RecursiveCharacterChunker::try_new(0, 0).unwrap_err();
        assert!(matches!(&e, crate::Error::Setting(s) if s.setting == "size"));
        assert!(
            e.to_string().contains("size must be at least 1, got 0"),
            "{e}"
        );
        let e = RecursiveCharacterChunker::try_new(10, 11).unwrap_err();
        assert!(
            e.to_string()
                .contains("overlap must be at most the chunk size (10), got 11"),
            "{e}"
        );
        assert!(RecursiveCharacterChunker::try_new(10, 10).is_ok());
    }

    #[test]
    #[should_panic(expected = "overlap must be at most the chunk size (4), got 5")]
    fn new_panics_on_invalid_sizes() {
        let _ = RecursiveCharacterChunker::new(4, 5);
    }

    #[test]
    fn names_are_canonical_specs() {
        let c = RecursiveCharacterChunker::new(400, 0);
        assert_eq!(
            PositionAwareChunker::name(&c),
            "recursive:size=400,overlap=0,length=chars,separators=langchain"
        );
        let c = RecursiveCharacterChunker::new(800, 400)
            .with_separators(RecursiveCharacterChunker::CHROMA_SEPARATORS.iter().copied());
        assert_eq!(
            Chunker::name(&c),
            "recursive:size=800,overlap=400,length=chars,separators=chroma"
        );
        let c = c.with_separators(["\n"]);
        assert!(PositionAwareChunker::name(&c).ends_with("separators=custom"));
        let c = c.with_separators(Vec::<String>::new());
        assert_eq!(
            c.separators(),
            RecursiveCharacterChunker::LANGCHAIN_SEPARATORS
        );
        assert_eq!(
            (c.chunk_size(), c.overlap(), c.length()),
            (800, 400, LengthUnit::Chars)
        );
    }

    #[test]
    fn python_whitespace_matches_str_isspace_for_every_char() {
        // The fixture lists every code point for which Python's str.isspace() is true.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/langchain/isspace.txt"
        );
        let listed: Vec<u32> = std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| u32::from_str_radix(l, 16).unwrap())
            .collect();
        assert!(listed.len() > 20);
        let ours: Vec<u32> = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| is_python_whitespace(c))
            .map(u32::from)
            .collect();
        assert_eq!(ours, listed);
    }

    /// Texts mixing multi-byte chars, runs of separators and information separators.
    pub(in crate::chunker) fn text_strategy() -> impl Strategy<Value = String> {
        let atoms = prop::sample::select(vec![
            "a", "bb", "ccc", "é", "€", "日本", " ", "  ", "\n", "\n\n", "\r\n", "\t", "\x1c", ".",
            "x",
        ]);
        prop::collection::vec(atoms, 0..80).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn jumping_gives_the_same_chunks_as_visiting_every_piece(
            text in text_strategy(),
            size in 1usize..30,
            overlap_frac in 0usize..=100,
            chroma in any::<bool>(),
        ) {
            let overlap = size * overlap_frac / 100;
            let mut c = RecursiveCharacterChunker::new(size, overlap);
            if chroma {
                c = c.with_separators(RecursiveCharacterChunker::CHROMA_SEPARATORS.iter().copied());
            }
            prop_assert_eq!(c.byte_ranges_with(&text, true), c.byte_ranges_with(&text, false));
        }

        #[test]
        fn chunks_sit_at_their_offsets_in_order(
            text in text_strategy(),
            size in 1usize..30,
            overlap_frac in 0usize..=100,
        ) {
            let overlap = size * overlap_frac / 100;
            let c = RecursiveCharacterChunker::new(size, overlap);
            let doc = Document::new("d", text.as_str());
            let chunks = c.chunk_with_positions(&doc);
            let mut prev_start = 0;
            for ch in &chunks {
                prop_assert_eq!(doc.slice(ch.start(), ch.end()), Some(ch.content.as_str()));
                prop_assert!(!ch.content.is_empty());
                prop_assert!(ch.start() >= prev_start, "chunks come in document order");
                prev_start = ch.start();
                if size > 1 {
                    // With "" as the last separator only merged chunks exist, and they fit.
                    prop_assert!(ch.content.chars().count() <= size);
                }
            }
            if overlap == 0 && size > 1 {
                // Without overlap no character is in two chunks, and every non-space
                // character is in one.
                let mut covered = vec![false; doc.char_len()];
                for ch in &chunks {
                    for slot in &mut covered[ch.start()..ch.end()] {
                        prop_assert!(!*slot);
                        *slot = true;
                    }
                }
                for (i, ch) in text.chars().enumerate() {
                    prop_assert!(covered[i] || is_python_whitespace(ch));
                }
            }
        }
    }
}
