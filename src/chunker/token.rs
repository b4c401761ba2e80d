//! Fixed windows of cl100k_base tokens.

use super::{chunks_from_byte_ranges, Chunker, PositionAwareChunker};
use crate::chunk::PositionAwareChunk;
use crate::corpus::Document;
use crate::error::{Result, SettingError};
use crate::spec::{Spec, Value};
use std::ops::Range;
use tiktoken_rs::CoreBPE;

/// Splits text into windows of `size` cl100k_base tokens that advance by `size - overlap`
/// tokens, as chunking_evaluation's `FixedTokenChunker` and LangChain's `TokenTextSplitter` do.
///
/// The last window is the first one that reaches the end of the text, so no window is a mere
/// tail of the one before it. A window's text is exactly what decoding its tokens gives,
/// except where a token boundary falls inside a multi-byte character (cl100k_base has tokens
/// for parts of a character): there the window is widened to whole characters, its start
/// moved back to the start of that character and its end forward to the end of it. Decoding
/// such a window in Python would give U+FFFD replacement characters instead. Because of the
/// widening, two windows without configured overlap can share the one character that a token
/// boundary cuts.
///
/// Text that spells a special token (`<|endoftext|>`) is encoded as ordinary text, where
/// tiktoken's Python `encode` would refuse it.
///
/// ```
/// use rag_eval::chunker::{FixedTokenChunker, PositionAwareChunker};
/// use rag_eval::corpus::Document;
///
/// let chunker = FixedTokenChunker::new(2, 0);
/// let doc = Document::new("a.txt", "one two three four five");
/// let chunks = chunker.chunk_with_positions(&doc);
/// let texts: Vec<&str> = chunks.iter().map(|c| c.content.as_str()).collect();
/// assert_eq!(texts, ["one two", " three four", " five"]);
/// assert_eq!((chunks[1].start(), chunks[1].end()), (7, 18));
/// assert_eq!(chunker.name(), "token:size=2,overlap=0");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedTokenChunker {
    size: usize,
    overlap: usize,
}

impl FixedTokenChunker {
    /// Windows of `tokens` tokens, consecutive windows sharing `overlap` tokens.
    ///
    /// # Panics
    /// Panics if `tokens` is 0 or `overlap >= tokens`; [`FixedTokenChunker::try_new`] returns
    /// an error instead.
    pub fn new(tokens: usize, overlap: usize) -> Self {
        match Self::try_new(tokens, overlap) {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    /// Like [`FixedTokenChunker::new`], with an [`Error::Setting`](crate::Error::Setting) for a window of 0 tokens or
    /// an overlap that is not smaller than the window.
    pub fn try_new(tokens: usize, overlap: usize) -> Result<Self> {
        if tokens == 0 {
            return Err(
                SettingError::new("token chunker", "size", 0, "must be at least 1 token").into(),
            );
        }
        if overlap >= tokens {
            return Err(SettingError::new(
                "token chunker",
                "overlap",
                overlap,
                format!("must be smaller than size ({tokens})"),
            )
            .into());
        }
        Ok(FixedTokenChunker {
            size: tokens,
            overlap,
        })
    }

    /// Tokens per window.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Tokens shared by consecutive windows.
    pub fn overlap(&self) -> usize {
        self.overlap
    }

    /// The configuration as a spec string, e.g. `token:size=250,overlap=125`.
    pub fn name(&self) -> String {
        PositionAwareChunker::spec(self).to_string()
    }

    /// Byte ranges of the windows of `text`, widened to char boundaries.
    fn byte_ranges(&self, text: &str) -> Vec<Range<usize>> {
        let ends = token_end_offsets(bpe(), text);
        let n = ends.len();
        let offset = |k: usize| if k == 0 { 0 } else { ends[k - 1] };
        let step = self.size - self.overlap;
        let mut ranges = Vec::with_capacity(n.div_ceil(step));
        let mut start = 0;
        while start < n {
            let end = (start + self.size).min(n);
            ranges.push(
                floor_char_boundary(text, offset(start))..ceil_char_boundary(text, offset(end)),
            );
            if end == n {
                break;
            }
            start += step;
        }
        ranges
    }
}

fn bpe() -> &'static CoreBPE {
    tiktoken_rs::cl100k_base_singleton()
}

/// Byte offset just past each token of `text`'s cl100k_base encoding.
fn token_end_offsets(bpe: &CoreBPE, text: &str) -> Vec<usize> {
    let mut end = 0;
    bpe.encode_ordinary(text)
        .into_iter()
        .map(|t| {
            // Every token that `encode_ordinary` returns is in the vocabulary it decodes with.
            let len = bpe
                .decode_bytes(std::slice::from_ref(&t))
                .map_or(0, |b| b.len());
            end += len;
            end
        })
        .collect()
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

impl PositionAwareChunker for FixedTokenChunker {
    fn name(&self) -> String {
        FixedTokenChunker::name(self)
    }

    /// `token:size=…,overlap=…`.
    fn spec(&self) -> Value {
        Spec::new("token")
            .with("size", self.size.to_string())
            .with("overlap", self.overlap.to_string())
            .into()
    }

    fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk> {
        chunks_from_byte_ranges(doc, self.byte_ranges(doc.content()))
    }
}

impl Chunker for FixedTokenChunker {
    fn name(&self) -> String {
        FixedTokenChunker::name(self)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(c: &FixedTokenChunker, text: &str) -> Vec<(usize, usize, String)> {
        let doc = Document::new("d", text);
        c.chunk_with_positions(&doc)
            .into_iter()
            .map(|c| (c.start(), c.end(), c.content))
            .collect()
    }

    #[test]
    fn windows_advance_by_size_minus_overlap_and_stop_at_the_end() {
        // cl100k_base: "one", " two", " three", " four", " five" are one token each.
        assert_eq!(bpe().encode_ordinary("one two three four five").len(), 5);
        let c = FixedTokenChunker::new(3, 1);
        let got = spans(&c, "one two three four five");
        assert_eq!(
            got,
            [
                (0, 13, "one two three".to_owned()),
                (7, 23, " three four five".to_owned()),
            ],
            "the second window reaches the end, so there is no third"
        );
        let c = FixedTokenChunker::new(2, 1);
        let texts: Vec<String> = spans(&c, "one two three four five")
            .into_iter()
            .map(|s| s.2)
            .collect();
        assert_eq!(
            texts,
            ["one two", " two three", " three four", " four five"]
        );
    }

    #[test]
    fn a_character_cut_by_a_token_boundary_goes_to_both_windows() {
        // cl100k_base encodes the 4-byte "🦩" as three tokens of 2, 1 and 1 bytes.
        assert_eq!(token_end_offsets(bpe(), "🦩"), [2, 3, 4]);
        let one = FixedTokenChunker::new(1, 0);
        assert_eq!(spans(&one, "🦩"), vec![(0, 1, "🦩".to_owned()); 3]);
        // "a🦩b" is [a][f0 9f][a6][a9][b]; windows of two tokens cut the flamingo twice.
        let two = FixedTokenChunker::new(2, 0);
        assert_eq!(
            spans(&two, "a🦩b"),
            [
                (0, 2, "a🦩".to_owned()),
                (1, 2, "🦩".to_owned()),
                (2, 3, "b".to_owned()),
            ]
        );
        assert_eq!(two.chunk("a🦩b"), ["a🦩", "🦩", "b"]);
    }

    #[test]
    fn empty_text_has_no_windows() {
        assert!(FixedTokenChunker::new(5, 0).chunk("").is_empty());
        assert!(spans(&FixedTokenChunker::new(5, 2), "").is_empty());
    }

    #[test]
    fn whitespace_only_text_is_kept_verbatim() {
        assert_eq!(FixedTokenChunker::new(10, 0).chunk("  \n\n "), ["  \n\n "]);
    }

    #[test]
    fn invalid_configurations_are_errors() {
        let e = FixedTokenChunker::try_new(0, 0).unwrap_err().to_string();
        assert!(e.contains("size must be at least 1"), "{e}");
        let e = FixedTokenChunker::try_new(4, 4).unwrap_err().to_string();
        assert!(
            e.contains("overlap must be smaller than size (4), got 4"),
            "{e}"
        );
        assert!(FixedTokenChunker::try_new(4, 3).is_ok());
    }

    #[test]
    #[should_panic(expected = "overlap must be smaller than size (3), got 9")]
    fn new_panics_on_invalid_configuration() {
        let _ = FixedTokenChunker::new(3, 9);
    }

    #[test]
    fn name_is_a_spec_string() {
        let c = FixedTokenChunker::new(250, 125);
        assert_eq!(c.name(), "token:size=250,overlap=125");
        assert_eq!(PositionAwareChunker::name(&c), Chunker::name(&c));
        assert_eq!((c.size(), c.overlap()), (250, 125));
    }

    /// Windows made by tiktoken in Python (see tests/fixtures/token/README.md).
    #[test]
    fn windows_agree_with_python_tiktoken() {
        use sha2::{Digest, Sha256};
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let fixture = std::fs::read_to_string(root.join("tests/fixtures/token/expected.json"))
            .expect("fixture tests/fixtures/token/expected.json");
        let fixture: serde_json::Value = serde_json::from_str(&fixture).unwrap();
        let mut checked_invalid = 0;
        for case in fixture["cases"].as_array().unwrap() {
            let source = case["source"].as_str().unwrap();
            let Ok(text) = std::fs::read_to_string(root.join(source)) else {
                println!("skipping the {source} case: file absent");
                continue;
            };
            let size = case["size"].as_u64().unwrap() as usize;
            let overlap = case["overlap"].as_u64().unwrap() as usize;
            let chunker = FixedTokenChunker::new(size, overlap);
            assert_eq!(
                bpe().encode_ordinary(&text).len() as u64,
                case["n_tokens"].as_u64().unwrap(),
                "{source}"
            );
            let ranges = chunker.byte_ranges(&text);
            let texts = chunker.chunk(&text);
            if let Some(hashes) = case["sha256_12"].as_array() {
                assert_eq!(texts.len(), hashes.len(), "{source} {size}/{overlap}");
                for (i, (ours, theirs)) in texts.iter().zip(hashes).enumerate() {
                    if let Some(theirs) = theirs.as_str() {
                        let digest = Sha256::digest(ours.as_bytes());
                        let hex = crate::digest::hex(&digest[..6]);
                        assert_eq!(hex, theirs, "{source} {size}/{overlap} window {i}");
                    }
                }
                continue;
            }
            let windows = case["windows"].as_array().unwrap();
            assert_eq!(texts.len(), windows.len(), "{source} {size}/{overlap}");
            for (i, w) in windows.iter().enumerate() {
                let ctx = format!("{source} {size}/{overlap} window {i}");
                let b0 = w["bytes"][0].as_u64().unwrap() as usize;
                let b1 = w["bytes"][1].as_u64().unwrap() as usize;
                let r = &ranges[i];
                match w["text"].as_str() {
                    Some(theirs) => {
                        assert_eq!(texts[i], theirs, "{ctx}");
                        assert_eq!((r.start, r.end), (b0, b1), "{ctx}");
                    }
                    None => {
                        // Widened to the characters the cut tokens belong to.
                        assert!(
                            r.start <= b0 && b0 - r.start < 4,
                            "{ctx}: {r:?} vs {b0}..{b1}"
                        );
                        assert!(r.end >= b1 && r.end - b1 < 4, "{ctx}: {r:?} vs {b0}..{b1}");
                        assert!((r.start, r.end) != (b0, b1), "{ctx}");
                        checked_invalid += 1;
                    }
                }
            }
        }
        assert!(
            checked_invalid > 100,
            "the fixture exercises cut characters"
        );
    }
}
