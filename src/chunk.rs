//! Chunks, their ids, and the registry that resolves ids back to chunks.
//!
//! - [`ChunkId`] = `chunk_` + the first 12 hex digits of SHA-256 of the content: identical text
//!   gets the same id wherever it occurs, which is what chunk-level ground truth wants.
//! - [`PositionAwareChunkId`] = `pa_chunk_` + 12 hex digits of SHA-256 over the document id's UTF-8 bytes,
//!   a NUL byte, start and end as little-endian `u64`, and the content's UTF-8 bytes: the same
//!   text at two places gets two ids.
//!
//! One id per purpose:
//!
//! | purpose | id |
//! |---|---|
//! | chunk-level ground truth (`relevant_chunk_ids`) and chunk-level retrieval files | [`ChunkId`] |
//! | a chunk at one place (`rag-eval chunk`'s `id`, [`PositionAwareChunk::id`], the registry) | [`PositionAwareChunkId`] |
//!
//! The two never coincide and neither can be derived from the other without the chunk's text
//! and place. A `pa_chunk_…` id where a content id belongs would match nothing and score 0, so
//! reading a chunk-level dataset or retrieval file refuses it with file:line and names what to
//! use instead (`rag-eval chunk` prints both ids: `id` and `chunk_id`).

use crate::corpus::{DocId, Metadata};
use crate::error::ChunkTextError;
use crate::span::CharSpan;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

/// `prefix` followed by the first 12 hex digits of the digest, in one allocation.
fn prefixed_hex12(prefix: &str, hasher: Sha256) -> String {
    let mut id = String::with_capacity(prefix.len() + 12);
    id.push_str(prefix);
    crate::digest::push_hex(&mut id, &hasher.finalize()[..6]);
    id
}

/// Content-addressed id of a chunk, e.g. `chunk_a3f2b1c8d9e0`.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChunkId(String);

impl ChunkId {
    /// Prefix of every chunk id.
    pub const PREFIX: &'static str = "chunk_";

    /// The id of a chunk with this content.
    ///
    /// ```
    /// # use rag_eval::chunk::ChunkId;
    /// let id = ChunkId::from_content("hello");
    /// assert_eq!(id.as_str(), "chunk_2cf24dba5fb0");
    /// ```
    pub fn from_content(content: &str) -> Self {
        let mut h = Sha256::new();
        h.update(content.as_bytes());
        ChunkId(prefixed_hex12(Self::PREFIX, h))
    }

    /// An id taken as given (from a dataset or a retriever's output).
    pub fn from_raw(id: impl Into<String>) -> Self {
        ChunkId(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// Position-aware chunk id, e.g. `pa_chunk_7d9e4f2a1b3c`.
///
/// The id is the documented SHA-256 (see the [module docs](self)) whenever it is read. Chunks
/// that built-in chunkers make carry what the id is computed from and hash it the first time it
/// is read (`as_str`, comparison, hashing, serialisation): chunking alone, as span metrics use
/// it, never pays for SHA-256 over the whole corpus. A clone made after the first read keeps the
/// computed id. Until then such an id shares its document's text (one copy per chunked document),
/// so holding any of its chunks keeps that copy alive.
///
/// The cache is the only interior mutability, and it never changes what equality, order and
/// hashing see, so an id is a sound map key (Clippy's `mutable_key_type` cannot tell; this
/// crate's `clippy.toml` names the type in `ignore-interior-mutability`).
#[derive(Clone)]
pub struct PositionAwareChunkId(Repr);

#[derive(Clone)]
enum Repr {
    Ready(String),
    /// Computed from `source` when first read.
    Deferred {
        id: OnceLock<String>,
        source: IdSource,
    },
}

/// A chunk's place and its document's text, enough to compute its id later.
#[derive(Clone)]
struct IdSource {
    doc: DocId,
    start: usize,
    end: usize,
    text: Arc<str>,
    bytes: Range<usize>,
}

impl PositionAwareChunkId {
    /// Prefix of every position-aware chunk id.
    pub const PREFIX: &'static str = "pa_chunk_";

    /// The id of `content` found at `start..end` (chars) of document `doc`.
    pub fn new(doc: &DocId, start: usize, end: usize, content: &str) -> Self {
        PositionAwareChunkId(Repr::Ready(Self::compute(doc, start, end, content)))
    }

    /// The id of the chunk at `start..end` (chars) of document `doc`, whose text is
    /// `text[bytes]`, computed when first read.
    pub(crate) fn deferred(
        doc: DocId,
        start: usize,
        end: usize,
        text: Arc<str>,
        bytes: Range<usize>,
    ) -> Self {
        PositionAwareChunkId(Repr::Deferred {
            id: OnceLock::new(),
            source: IdSource {
                doc,
                start,
                end,
                text,
                bytes,
            },
        })
    }

    fn compute(doc: &DocId, start: usize, end: usize, content: &str) -> String {
        let mut h = Sha256::new();
        // The document id ends with a NUL and the offsets have a fixed width, so no two
        // (doc, start, end, content) tuples hash the same bytes.
        h.update(doc.as_str().as_bytes());
        h.update([0]);
        h.update((start as u64).to_le_bytes());
        h.update((end as u64).to_le_bytes());
        h.update(content.as_bytes());
        prefixed_hex12(Self::PREFIX, h)
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Ready(id) => id,
            Repr::Deferred { id, source: s } => {
                id.get_or_init(|| Self::compute(&s.doc, s.start, s.end, &s.text[s.bytes.clone()]))
            }
        }
    }
}

impl PartialEq for PositionAwareChunkId {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for PositionAwareChunkId {}

impl PartialOrd for PositionAwareChunkId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PositionAwareChunkId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for PositionAwareChunkId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl Serialize for PositionAwareChunkId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for PositionAwareChunkId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(PositionAwareChunkId(Repr::Ready(String::deserialize(
            deserializer,
        )?)))
    }
}

impl fmt::Display for PositionAwareChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for PositionAwareChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// A chunk without position: content, the document it came from, metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// Content-addressed id.
    pub id: ChunkId,
    /// The text.
    pub content: String,
    /// The document it came from.
    pub doc_id: DocId,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

impl Chunk {
    /// A chunk of `doc_id` with the given text; the id is derived from the text.
    pub fn new(doc_id: impl Into<DocId>, content: impl Into<String>) -> Self {
        let content = content.into();
        Chunk {
            id: ChunkId::from_content(&content),
            content,
            doc_id: doc_id.into(),
            metadata: Metadata::new(),
        }
    }
}

/// A chunk that knows where it sits: `document[start..end] == content` (char offsets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionAwareChunk {
    /// Position-aware id.
    pub id: PositionAwareChunkId,
    /// The text.
    pub content: String,
    /// Document and character range.
    #[serde(flatten)]
    pub span: CharSpan,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

impl PositionAwareChunk {
    /// A chunk of `doc` at `start..end` with that text; the id is derived from all four.
    pub fn new(
        doc: impl Into<DocId>,
        start: usize,
        end: usize,
        content: impl Into<String>,
    ) -> Self {
        let doc = doc.into();
        let content = content.into();
        PositionAwareChunk {
            id: PositionAwareChunkId::new(&doc, start, end, &content),
            content,
            span: CharSpan::new(doc, start, end),
            metadata: Metadata::new(),
        }
    }

    /// The chunk at `start..end` (chars) of document `doc`, whose text is `text[bytes]`; its
    /// id is computed when first read.
    pub(crate) fn in_shared_text(
        doc: DocId,
        start: usize,
        end: usize,
        text: &Arc<str>,
        bytes: Range<usize>,
    ) -> Self {
        PositionAwareChunk {
            content: text[bytes.clone()].to_owned(),
            span: CharSpan::new(doc.clone(), start, end),
            id: PositionAwareChunkId::deferred(doc, start, end, Arc::clone(text), bytes),
            metadata: Metadata::new(),
        }
    }

    /// The document id.
    pub fn doc_id(&self) -> &DocId {
        &self.span.doc
    }

    /// First character (inclusive).
    pub fn start(&self) -> usize {
        self.span.start
    }

    /// One past the last character.
    pub fn end(&self) -> usize {
        self.span.end
    }

    /// The same chunk without its position (content-addressed id).
    pub fn to_chunk(&self) -> Chunk {
        Chunk {
            id: ChunkId::from_content(&self.content),
            content: self.content.clone(),
            doc_id: self.span.doc.clone(),
            metadata: self.metadata.clone(),
        }
    }
}

/// A chunk a retriever returned, with its score (higher is better).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetrievedChunk {
    /// The chunk, with its position.
    #[serde(flatten)]
    pub chunk: PositionAwareChunk,
    /// The retriever's score; only the order matters to metrics.
    pub score: f32,
}

impl RetrievedChunk {
    /// A retrieved chunk.
    pub fn new(chunk: PositionAwareChunk, score: f32) -> Self {
        RetrievedChunk { chunk, score }
    }

    /// The chunk at the byte range `bytes` of `text`, the text of document `doc`, with its
    /// score: the range Rust's `str` methods give (`find`, `char_indices`, a search engine's
    /// byte offsets), converted to the character offsets rag-eval scores. `None` when the range
    /// is reversed, past the end or not on character boundaries.
    ///
    /// ```
    /// use rag_eval::chunk::RetrievedChunk;
    /// let text = "Größe: 42 cm";
    /// let at = text.find("42").unwrap();
    /// let hit = RetrievedChunk::from_byte_range("sizes.md", text, at..at + 2, 0.9).unwrap();
    /// assert_eq!((hit.chunk.start(), hit.chunk.end(), hit.chunk.content.as_str()), (7, 9, "42"));
    /// ```
    pub fn from_byte_range(
        doc: impl Into<DocId>,
        text: &str,
        bytes: std::ops::Range<usize>,
        score: f32,
    ) -> Option<Self> {
        let content = text.get(bytes.clone())?;
        let span = CharSpan::from_byte_range(doc, text, bytes)?;
        Some(RetrievedChunk::new(
            PositionAwareChunk::new(span.doc, span.start, span.end, content),
            score,
        ))
    }

    /// Checks that the chunk's text, when it carries one, is what its character range says:
    /// as long as the range, and the document's text there when `document` is given. The
    /// message names the likely cause when the offsets are bytes rather than characters.
    pub fn check_text(
        &self,
        document: Option<&crate::corpus::Document>,
    ) -> Result<(), ChunkTextError> {
        let c = &self.chunk;
        if c.content.is_empty() {
            return Ok(());
        }
        let (start, end) = (c.span.start, c.span.end);
        let chars = c.content.chars().count();
        let len = end.saturating_sub(start);
        if len != chars {
            return Err(ChunkTextError::Length {
                doc: c.span.doc.to_string(),
                start,
                end,
                chars,
                bytes: len == c.content.len(),
            });
        }
        let Some(doc) = document else {
            return Ok(());
        };
        match doc.slice(start, end) {
            Some(found) if found == c.content => Ok(()),
            found => Err(ChunkTextError::Mismatch {
                doc: c.span.doc.to_string(),
                start,
                end,
                chunk: preview(&c.content),
                found: found.map(preview),
                bytes: doc.content().get(start..end) == Some(c.content.as_str()),
            }),
        }
    }
}

fn preview(s: &str) -> String {
    if s.chars().count() <= 40 {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(40).collect::<String>())
    }
}

/// Sorts by score, best first, breaking ties by position-aware chunk id so that runs are
/// deterministic, then keeps the first `k`. Every retriever, store and reranker ranks by this
/// rule.
pub fn rank(mut hits: Vec<RetrievedChunk>, k: usize) -> Vec<RetrievedChunk> {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.chunk.id.cmp(&b.chunk.id))
    });
    hits.truncate(k);
    hits
}

/// Resolves chunk ids to chunks and position-aware ids to chunks and spans.
#[derive(Debug, Clone, Default)]
pub struct ChunkRegistry {
    chunks: HashMap<ChunkId, Chunk>,
    pa_chunks: HashMap<PositionAwareChunkId, PositionAwareChunk>,
}

impl ChunkRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a chunk (a chunk with the same id is replaced: same id, same content).
    pub fn register_chunk(&mut self, chunk: Chunk) {
        self.chunks.insert(chunk.id.clone(), chunk);
    }

    /// Registers a position-aware chunk.
    pub fn register_pa_chunk(&mut self, chunk: PositionAwareChunk) {
        self.pa_chunks.insert(chunk.id.clone(), chunk);
    }

    /// A chunk by id.
    pub fn get_chunk(&self, id: &ChunkId) -> Option<&Chunk> {
        self.chunks.get(id)
    }

    /// A position-aware chunk by id.
    pub fn get_pa_chunk(&self, id: &PositionAwareChunkId) -> Option<&PositionAwareChunk> {
        self.pa_chunks.get(id)
    }

    /// The span of a position-aware chunk.
    pub fn get_span(&self, id: &PositionAwareChunkId) -> Option<&CharSpan> {
        self.pa_chunks.get(id).map(|c| &c.span)
    }

    /// Number of chunks and position-aware chunks registered.
    pub fn len(&self) -> usize {
        self.chunks.len() + self.pa_chunks.len()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty() && self.pa_chunks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Document;

    #[test]
    fn byte_ranges_become_character_spans_and_bad_offsets_are_named() {
        let text = "Größe: 42 cm";
        let at = text.find("42").unwrap(); // 8 in bytes, 7 in characters
        let good = RetrievedChunk::from_byte_range("s.md", text, at..at + 5, 1.0).unwrap();
        assert_eq!((good.chunk.start(), good.chunk.end()), (7, 12));
        assert_eq!(good.chunk.content, "42 cm");
        let doc = Document::new("s.md", text);
        assert_eq!(good.check_text(Some(&doc)), Ok(()));
        assert!(
            RetrievedChunk::from_byte_range("s.md", text, 3..4, 1.0).is_none(),
            "inside ß"
        );
        assert!(RetrievedChunk::from_byte_range("s.md", text, 5..99, 1.0).is_none());

        // The same chunk with its byte range as if it were characters: the lengths agree, the
        // document disagrees, and the message says why.
        let bytes = RetrievedChunk::new(PositionAwareChunk::new("s.md", at, at + 5, "42 cm"), 1.0);
        let e = bytes.check_text(Some(&doc)).unwrap_err();
        assert!(
            matches!(
                e,
                ChunkTextError::Mismatch {
                    start: 9,
                    end: 14,
                    found: None,
                    bytes: true,
                    ..
                }
            ),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(e.contains("does not match the document"), "{e}");
        assert!(e.contains("bytes, not characters"), "{e}");
        assert!(bytes.check_text(None).is_ok(), "nothing to compare with");

        // A non-ASCII chunk whose byte length was taken for its span.
        let long = RetrievedChunk::new(PositionAwareChunk::new("s.md", 0, 7, "Größe"), 1.0);
        let e = long.check_text(None).unwrap_err();
        assert_eq!(
            e,
            ChunkTextError::Length {
                doc: "s.md".into(),
                start: 0,
                end: 7,
                chars: 5,
                bytes: true
            }
        );
        let e = e.to_string();
        assert!(e.contains("holds 5 characters, not 7"), "{e}");
        assert!(e.contains("bytes, not characters"), "{e}");
        // A chunk without text is not checked.
        let bare = RetrievedChunk::new(PositionAwareChunk::new("s.md", 0, 6, ""), 1.0);
        assert!(bare.check_text(Some(&doc)).is_ok());
    }

    #[test]
    fn chunk_ids_follow_the_documented_rules() {
        // sha256("hello") = 2cf24dba5fb0a30e…
        assert_eq!(
            ChunkId::from_content("hello").as_str(),
            "chunk_2cf24dba5fb0"
        );
        assert_eq!(Chunk::new("a.md", "same").id, Chunk::new("b.md", "same").id);
        let doc = DocId::new("a.md");
        let a = PositionAwareChunkId::new(&doc, 0, 4, "same");
        let b = PositionAwareChunkId::new(&doc, 10, 14, "same");
        assert_ne!(a, b, "same text at two places has two ids");
        assert!(a.as_str().starts_with("pa_chunk_") && a.as_str().len() == 9 + 12);
        assert_eq!(a, PositionAwareChunkId::new(&doc, 0, 4, "same"));
    }

    proptest::proptest! {
        #[test]
        fn ids_computed_on_first_read_are_the_documented_ids(
            text in "(\\PC|\n){0,300}",
            size in 1usize..60,
        ) {
            use crate::chunker::{PositionAdapter, PositionAwareChunker, RecursiveCharacterChunker};
            let doc = Document::new("dir/ö.md", text);
            let recursive = RecursiveCharacterChunker::new(size, 0);
            let adapted = PositionAdapter::new(RecursiveCharacterChunker::new(size, 0));
            for chunks in [
                recursive.chunk_with_positions(&doc),
                adapted.chunk_with_positions(&doc),
            ] {
                for c in &chunks {
                    let documented = PositionAwareChunkId::new(c.doc_id(), c.start(), c.end(), &c.content);
                    // A clone made before the first read computes the same id on its own.
                    let early = c.clone();
                    proptest::prop_assert_eq!(c.id.as_str(), documented.as_str());
                    proptest::prop_assert_eq!(&early.id, &documented);
                    proptest::prop_assert_eq!(&c.clone(), &early);
                    let json = serde_json::to_string(&early).unwrap();
                    let back: PositionAwareChunk = serde_json::from_str(&json).unwrap();
                    proptest::prop_assert_eq!(back.id.as_str(), documented.as_str());
                    proptest::prop_assert_eq!(&back, c);
                }
            }
        }
    }

    #[test]
    fn a_deferred_id_hashes_and_orders_as_the_documented_one() {
        use std::collections::HashSet;
        let text: Arc<str> = Arc::from("ab Größe cd");
        let doc = DocId::new("x.md");
        let deferred = PositionAwareChunkId::deferred(doc.clone(), 3, 8, Arc::clone(&text), 3..10);
        let documented = PositionAwareChunkId::new(&doc, 3, 8, "Größe");
        assert_eq!(format!("{deferred}"), documented.as_str());
        assert_eq!(format!("{deferred:?}"), format!("{documented:?}"));
        let set: HashSet<PositionAwareChunkId> = [documented.clone()].into();
        assert!(set.contains(&deferred));
        let other = PositionAwareChunkId::new(&doc, 0, 2, "ab");
        assert_eq!(deferred.cmp(&other), documented.cmp(&other));
    }

    #[test]
    fn registry_resolves_ids() {
        let mut r = ChunkRegistry::new();
        let pa = PositionAwareChunk::new("d", 3, 8, "hello");
        let c = pa.to_chunk();
        r.register_pa_chunk(pa.clone());
        r.register_chunk(c.clone());
        assert_eq!(r.get_span(&pa.id), Some(&CharSpan::new("d", 3, 8)));
        assert_eq!(r.get_chunk(&c.id).unwrap().content, "hello");
        assert_eq!(r.len(), 2);
    }
}
