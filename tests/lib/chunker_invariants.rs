//! Properties every built-in chunker keeps on arbitrary Unicode text.
//!
//! For every chunk `c` of a document `doc`:
//! - `doc.slice(c.start(), c.end()) == Some(c.content)`, and the id is
//!   `PositionAwareChunkId::new(doc, start, end, content)`;
//! - chunks come in document order (starts never decrease) and none is empty;
//! - the chunk keeps its chunker's size limit, except for a piece the chunker cannot split
//!   (defined per chunker below);
//! - with no configured overlap, chunks do not overlap (the token chunker may repeat the one
//!   character that a token boundary cuts);
//! - `Chunker::chunk` returns the same texts as `PositionAwareChunker::chunk_with_positions`.
//!
//! The texts mix ASCII, 2-, 3- and 4-byte characters (emoji with ZWJ, flags, combining marks,
//! CJK extension B), arbitrary scalar values, CRLF, runs of spaces and tabs, blank lines,
//! sentence punctuation, Markdown syntax and very long words; empty documents included.

use crate::shared_data;

use proptest::prelude::*;
use rag_eval::chunk::{PositionAwareChunk, PositionAwareChunkId};
use rag_eval::chunker::{
    Chunker, PositionAdapter, PositionAwareChunker, RecursiveCharacterChunker, SemanticChunker,
};
use rag_eval::corpus::Document;

fn atom() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z]{1,8}",
        3 => prop::sample::select(vec![
            "é", "ß", "ü", "жук", "λόγος", "日本語", "한국어", "हिन्दी", "مرحبا", "😀", "🦩", "🪿",
            "👨\u{200d}👩\u{200d}👧", "🇳🇿", "👋🏽", "e\u{301}", "𝔘𝔫𝔦", "𠀀𪚥", "€", "\u{fffd}",
        ])
        .prop_map(str::to_owned),
        2 => any::<char>().prop_map(String::from),
        4 => prop::sample::select(vec![
            " ", " ", "  ", "\t", "   \t ", "\n", "\n\n", "\r\n", "\r\n\r\n", "\n \n", "\u{a0}",
            "\u{3000}", "\x1f",
        ])
        .prop_map(str::to_owned),
        2 => prop::sample::select(vec![
            ". ", "? ", "! ", ".", ",", "# ", "\n## ", "- ", "* ", "```", "`", "> ", "1. ", "|",
        ])
        .prop_map(str::to_owned),
        1 => "[a-z]{30,120}",
        1 => (1usize..40).prop_map(|n| "🦩".repeat(n)),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(atom(), 0..60).prop_map(|v| v.concat())
}

/// Checks the properties every chunker shares and returns the chunks.
fn common<C>(c: &C, doc: &Document) -> Result<Vec<PositionAwareChunk>, TestCaseError>
where
    C: PositionAwareChunker + Chunker,
{
    let chunks = PositionAwareChunker::chunk_with_positions(c, doc);
    check_positions(doc, &chunks)?;
    let plain = Chunker::chunk(c, doc.content());
    let from_positions: Vec<&str> = chunks.iter().map(|c| c.content.as_str()).collect();
    prop_assert_eq!(plain, from_positions, "both traits give the same chunks");
    Ok(chunks)
}

fn check_positions(doc: &Document, chunks: &[PositionAwareChunk]) -> Result<(), TestCaseError> {
    let mut prev_start = 0;
    for c in chunks {
        prop_assert_eq!(doc.slice(c.start(), c.end()), Some(c.content.as_str()));
        prop_assert!(!c.content.is_empty(), "empty chunk at {}", c.start());
        prop_assert!(c.start() >= prev_start, "chunks out of order");
        prop_assert_eq!(c.doc_id(), doc.id());
        prop_assert_eq!(
            &c.id,
            &PositionAwareChunkId::new(doc.id(), c.start(), c.end(), &c.content)
        );
        prev_start = c.start();
    }
    Ok(())
}

fn check_disjoint(chunks: &[PositionAwareChunk]) -> Result<(), TestCaseError> {
    for w in chunks.windows(2) {
        prop_assert!(
            w[1].start() >= w[0].end(),
            "{:?} overlaps {:?}",
            w[0].span,
            w[1].span
        );
    }
    Ok(())
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

fn is_single_char(s: &str) -> bool {
    s.chars().nth(1).is_none()
}

const CASES: u32 = 48;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// Size limit: at most `size` characters, except a single character, which is what a
    /// chunk of size 1 holds when the character alone reaches the size (it is kept whole and
    /// unstripped). The separator lists end with "", so every longer piece can be split.
    #[test]
    fn recursive_in_chars(
        t in text(),
        size in 1usize..60,
        overlap_frac in 0.0f64..=1.0,
        chroma in any::<bool>(),
    ) {
        let overlap = (size as f64 * overlap_frac) as usize;
        let mut c = RecursiveCharacterChunker::new(size, overlap);
        if chroma {
            c = c.with_separators(RecursiveCharacterChunker::CHROMA_SEPARATORS.iter().copied());
        }
        let doc = Document::new("d.md", t);
        let chunks = common(&c, &doc)?;
        for ch in &chunks {
            prop_assert!(
                char_len(&ch.content) <= size || is_single_char(&ch.content),
                "{} chars > {size}: {:?}", char_len(&ch.content), ch.content
            );
        }
        if overlap == 0 {
            check_disjoint(&chunks)?;
        }
    }

    /// Semantic: chunks are runs of whole sentences (every sentence in exactly one chunk, in
    /// order), trimmed, never overlapping; with `max_chars`, a longer chunk is exactly one
    /// sentence.
    #[test]
    fn semantic(
        t in text(),
        percentile in 0.0f64..=100.0,
        buffer in 0usize..3,
        max_chars in prop::option::of(1usize..80),
    ) {
        let c = SemanticChunker::default()
            .with_percentile(percentile)
            .with_buffer(buffer)
            .with_max_chars(max_chars);
        let doc = Document::new("d.md", t);
        let chunks = common(&c, &doc)?;
        check_disjoint(&chunks)?;
        let sentences = SemanticChunker::sentences(&doc);
        let mut next = 0;
        for ch in &chunks {
            prop_assert_eq!(ch.content.trim(), ch.content.as_str());
            let first = next;
            prop_assert!(first < sentences.len(), "a chunk past the last sentence");
            prop_assert_eq!(sentences[first].start, ch.start(), "chunk starts a sentence");
            while next < sentences.len() && sentences[next].end <= ch.end() {
                next += 1;
            }
            prop_assert!(next > first, "chunk holds a sentence");
            prop_assert_eq!(sentences[next - 1].end, ch.end(), "chunk ends a sentence");
            if let Some(m) = max_chars {
                prop_assert!(
                    char_len(&ch.content) <= m || next - first == 1,
                    "{} chars > {m} over {} sentences", char_len(&ch.content), next - first
                );
            }
        }
        prop_assert_eq!(next, sentences.len(), "every sentence is in a chunk");
    }

    /// The adapter finds every piece of a chunker that does not change the text, in order.
    #[test]
    fn position_adapter(t in text(), size in 1usize..40) {
        let inner = Words { size };
        let pieces = inner.chunk(&t);
        let a = PositionAdapter::new(inner);
        let doc = Document::new("d.md", t);
        let chunks = a.chunk_with_positions(&doc);
        check_positions(&doc, &chunks)?;
        for w in chunks.windows(2) {
            prop_assert!(w[1].start() > w[0].start(), "each search starts after the last find");
        }
        prop_assert_eq!(a.skipped(), 0);
        // Pieces are found in order, though not always at the place they were cut from: a
        // piece that also occurs inside the previous one is found there.
        let found: Vec<&str> = chunks.iter().map(|c| c.content.as_str()).collect();
        prop_assert_eq!(found, pieces);
    }

    /// The adapter keeps its properties when pieces overlap, repeat and sometimes cannot be
    /// found: every piece is either located or counted as skipped.
    #[test]
    fn position_adapter_with_repeats_and_strangers(t in text(), size in 1usize..20) {
        let a = PositionAdapter::new(Echo { size });
        let doc = Document::new("d.md", t);
        let pieces = a.inner().chunk(doc.content());
        let chunks = a.chunk_with_positions(&doc);
        check_positions(&doc, &chunks)?;
        for w in chunks.windows(2) {
            prop_assert!(w[1].start() > w[0].start());
        }
        prop_assert_eq!(chunks.len() + a.skipped(), pieces.len());
    }
}

/// Whitespace-separated words packed greedily into pieces of at most `size` chars (a longer
/// word alone), each piece copied out of the text.
struct Words {
    size: usize,
}

impl Chunker for Words {
    fn name(&self) -> String {
        format!("words:size={}", self.size)
    }
    fn chunk(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur: Option<(usize, usize)> = None;
        for (i, w) in text.split_whitespace().map(|w| {
            let at = w.as_ptr() as usize - text.as_ptr() as usize;
            (at, w)
        }) {
            let end = i + w.len();
            cur = match cur {
                Some((s, _)) if char_len(&text[s..end]) <= self.size => Some((s, end)),
                Some((s, e)) => {
                    out.push(text[s..e].to_owned());
                    Some((i, end))
                }
                None => Some((i, end)),
            };
        }
        if let Some((s, e)) = cur {
            out.push(text[s..e].to_owned());
        }
        out
    }
}

/// Overlapping windows of `size` chars advancing by half, plus a piece that is not in the text
/// after every third window, and every window repeated once.
struct Echo {
    size: usize,
}

impl Chunker for Echo {
    fn name(&self) -> String {
        format!("echo:size={}", self.size)
    }
    fn chunk(&self, text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let step = (self.size / 2).max(1);
        let mut out = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let w: String = chars[i..(i + self.size).min(chars.len())].iter().collect();
            out.push(w.clone());
            out.push(w);
            if out.len() % 3 == 0 {
                out.push("\u{0}not in the text\u{0}".into());
            }
            i += step;
        }
        out
    }
}

#[cfg(feature = "tiktoken")]
mod tiktoken_chunkers {
    use super::*;
    use rag_eval::chunker::{FixedTokenChunker, LengthUnit};

    /// Byte offset after each token of `text`'s cl100k_base encoding.
    fn token_ends(text: &str) -> Vec<usize> {
        let bpe = tiktoken_rs::cl100k_base_singleton();
        let mut end = 0;
        bpe.encode_ordinary(text)
            .into_iter()
            .map(|t| {
                end += bpe.decode_bytes(&[t]).unwrap().len();
                end
            })
            .collect()
    }

    fn floor(text: &str, mut i: usize) -> usize {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    }

    fn ceil(text: &str, mut i: usize) -> usize {
        while !text.is_char_boundary(i) {
            i += 1;
        }
        i
    }

    /// Python's `str.isspace()`, what LangChain's stripping removes.
    fn is_py_space(c: char) -> bool {
        c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
    }

    /// Byte offsets reached by moving from `at` over Python whitespace, one char at a time,
    /// backwards or forwards, `at` itself first.
    fn over_space(text: &str, at: usize, backwards: bool) -> Vec<usize> {
        let mut out = vec![at];
        if backwards {
            for c in text[..at].chars().rev().take_while(|&c| is_py_space(c)) {
                out.push(out[out.len() - 1] - c.len_utf8());
            }
        } else {
            for c in text[at..].chars().take_while(|&c| is_py_space(c)) {
                out.push(out[out.len() - 1] + c.len_utf8());
            }
        }
        out
    }

    /// Whether `text`, cut before each occurrence of `sep` (every char for ""), gives pieces
    /// whose token counts sum to at most `size`.
    fn pieces_fit(text: &str, sep: &str, size: usize) -> bool {
        let bpe = tiktoken_rs::cl100k_base_singleton();
        let mut cuts: Vec<usize> = if sep.is_empty() {
            text.char_indices().map(|(i, _)| i).collect()
        } else {
            text.match_indices(sep).map(|(i, _)| i).collect()
        };
        cuts.push(text.len());
        let mut total = 0;
        let mut from = 0;
        for at in cuts {
            if at > from {
                total += bpe.encode_ordinary(&text[from..at]).len();
                if total > size {
                    return false;
                }
            }
            from = at;
        }
        true
    }

    fn fits_as_pieces(doc: &Document, ch: &PositionAwareChunk, seps: &[&str], size: usize) -> bool {
        let text = doc.content();
        let (b0, b1) = (
            doc.char_to_byte(ch.start()).unwrap(),
            doc.char_to_byte(ch.end()).unwrap(),
        );
        over_space(text, b0, true).into_iter().any(|s| {
            over_space(text, b1, false)
                .into_iter()
                .any(|e| seps.iter().any(|sep| pieces_fit(&text[s..e], sep, size)))
        })
    }

    /// The piece check is not vacuous: chunks made for 12 tokens fit 12 and not all fit 4.
    #[test]
    fn the_piece_check_rejects_chunks_over_the_limit() {
        let seps = RecursiveCharacterChunker::CHROMA_SEPARATORS;
        let c = RecursiveCharacterChunker::new(12, 0)
            .with_separators(seps.iter().copied())
            .with_length(LengthUnit::Cl100kTokens);
        let doc = Document::new(
            "d.md",
            "Tokenisers count words.  Longer sentences need more tokens, naturally!\r\n\r\n\
             Ünïcödé 🦩 costs more.",
        );
        let chunks = c.chunk_with_positions(&doc);
        assert!(chunks.len() > 2);
        assert!(chunks.iter().all(|ch| fits_as_pieces(&doc, ch, seps, 12)));
        assert!(!chunks.iter().all(|ch| fits_as_pieces(&doc, ch, seps, 4)));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(CASES))]

        /// Size limit: chunk k is window k of at most `size` tokens of the document's
        /// cl100k_base encoding (tokens `k·(size−overlap)` onward), widened to whole
        /// characters at both ends; the windows stop at the first that reaches the end.
        /// Without overlap, neighbours share at most the one character a token boundary cuts.
        #[test]
        fn fixed_token(t in text(), size in 1usize..40, overlap_frac in 0.0f64..1.0) {
            let overlap = ((size as f64 * overlap_frac) as usize).min(size - 1);
            let c = FixedTokenChunker::new(size, overlap);
            let doc = Document::new("d.md", t);
            let chunks = common(&c, &doc)?;
            let text = doc.content();
            let ends = token_ends(text);
            let n = ends.len();
            let off = |k: usize| if k == 0 { 0 } else { ends[k - 1] };
            let step = size - overlap;
            let expected = if n == 0 { 0 } else { (n.saturating_sub(size)).div_ceil(step) + 1 };
            prop_assert_eq!(chunks.len(), expected);
            for (k, ch) in chunks.iter().enumerate() {
                let (s, e) = (k * step, (k * step + size).min(n));
                prop_assert!(e - s <= size);
                let bytes = doc.char_to_byte(ch.start()).unwrap()..doc.char_to_byte(ch.end()).unwrap();
                prop_assert_eq!(bytes, floor(text, off(s))..ceil(text, off(e)), "window {}", k);
            }
            if overlap == 0 {
                for w in chunks.windows(2) {
                    let shared = w[0].end().saturating_sub(w[1].start());
                    prop_assert!(shared == 0 || (shared == 1 && w[0].content.chars().last()
                        .is_some_and(|ch| ch.len_utf8() > 1)),
                        "{:?} and {:?} share {shared} chars", w[0].span, w[1].span);
                }
            }
        }

        /// Size limit in tokens, as LangChain measures it: a merged chunk is a run of
        /// consecutive pieces, cut before each occurrence of one separator, whose token counts
        /// (one piece at a time) sum to at most `size`; then whitespace is stripped from its
        /// ends. Encoding the chunk as a whole can take more tokens than its pieces did, so
        /// the check rebuilds the pieces: some separator of the list and some amount of the
        /// whitespace around the chunk must give pieces that fit. The unsplittable piece is a
        /// single character whose own encoding reaches `size`.
        #[test]
        fn recursive_in_tokens(
            t in text(),
            size in 1usize..40,
            overlap_frac in 0.0f64..=1.0,
        ) {
            let overlap = (size as f64 * overlap_frac) as usize;
            let seps = RecursiveCharacterChunker::CHROMA_SEPARATORS;
            let c = RecursiveCharacterChunker::new(size, overlap)
                .with_separators(seps.iter().copied())
                .with_length(LengthUnit::Cl100kTokens);
            let doc = Document::new("d.md", t);
            let chunks = common(&c, &doc)?;
            for ch in &chunks {
                prop_assert!(
                    is_single_char(&ch.content) || fits_as_pieces(&doc, ch, seps, size),
                    "no cut of {:?} into pieces fits {size} tokens", ch.content
                );
            }
            if overlap == 0 {
                check_disjoint(&chunks)?;
            }
        }

        /// The adapter over a real chunker: every token window is located, in order.
        #[test]
        fn position_adapter_over_token_windows(t in text(), size in 1usize..30) {
            let a = PositionAdapter::new(FixedTokenChunker::new(size, 0));
            let doc = Document::new("d.md", t);
            let pieces = Chunker::chunk(a.inner(), doc.content());
            let chunks = a.chunk_with_positions(&doc);
            check_positions(&doc, &chunks)?;
            prop_assert_eq!(chunks.len() + a.skipped(), pieces.len());
        }
    }
}

#[cfg(feature = "markdown")]
mod markdown_chunker {
    use super::*;
    use rag_eval::chunker::MarkdownChunker;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(CASES))]

        /// Size limit: at most `max_chars` characters, always: text-splitter falls back to
        /// single characters, and one character always fits. Chunks end without whitespace
        /// and start without a line break; only a chunk of several lines may start with
        /// whitespace (its indentation).
        #[test]
        fn markdown(t in text(), size in 1usize..80, overlap_frac in 0.0f64..1.0) {
            let overlap = ((size as f64 * overlap_frac) as usize).min(size - 1);
            let c = MarkdownChunker::new(size).with_overlap(overlap);
            let doc = Document::new("d.md", t);
            let chunks = common(&c, &doc)?;
            for ch in &chunks {
                prop_assert!(char_len(&ch.content) <= size, "{} > {size}", char_len(&ch.content));
                prop_assert_eq!(ch.content.trim_end(), ch.content.as_str());
                prop_assert!(!ch.content.starts_with(['\n', '\r']));
                if !ch.content.contains(['\n', '\r']) {
                    prop_assert_eq!(ch.content.trim_start(), ch.content.as_str());
                }
            }
            if overlap == 0 {
                check_disjoint(&chunks)?;
            }
        }
    }
}

/// The same properties on the chunking-eval-general corpora, when they are present.
#[test]
#[ignore = "needs ../shared/data"]
fn real_corpora_keep_the_invariants() {
    let root = shared_data::chunking_eval_general().join("corpora");
    let corpus =
        rag_eval::corpus::Corpus::from_folder(root.to_str().unwrap(), Some("*.md")).unwrap();
    #[cfg_attr(
        not(any(feature = "tiktoken", feature = "markdown")),
        allow(unused_mut)
    )]
    let mut chunkers: Vec<(Box<dyn PositionAwareChunker>, bool)> = vec![
        (Box::new(RecursiveCharacterChunker::new(400, 0)), true),
        (
            Box::new(SemanticChunker::default().with_max_chars(Some(1000))),
            true,
        ),
    ];
    #[cfg(feature = "tiktoken")]
    chunkers.push((
        Box::new(rag_eval::chunker::FixedTokenChunker::new(250, 125)),
        false,
    ));
    #[cfg(feature = "markdown")]
    chunkers.push((Box::new(rag_eval::chunker::MarkdownChunker::new(800)), true));
    for (c, disjoint) in &chunkers {
        for doc in corpus.documents() {
            let chunks = c.chunk_with_positions(doc);
            assert!(!chunks.is_empty(), "{} on {}", c.name(), doc.id());
            check_positions(doc, &chunks).unwrap();
            if *disjoint {
                check_disjoint(&chunks).unwrap();
            }
        }
    }
}
