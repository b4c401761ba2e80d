//! Chunks, their ids, and the registry that resolves ids back to chunks.
//!
//! - [`ChunkId`] = `chunk_` + the first 12 hex digits of SHA-256 of the content: identical text
//!   gets the same id wherever it occurs, which is what chunk-level ground truth wants.
//! - [`PaChunkId`] = `pa_chunk_` + 12 hex digits of SHA-256 over the document id's UTF-8 bytes,
//!   a NUL byte, start and end as little-endian `u64`, and the content's UTF-8 bytes: the same
//!   text at two places gets two ids.
//!
//! One id per purpose:
//!
//! | purpose | id |
//! |---|---|
//! | chunk-level ground truth (`relevant_chunk_ids`) and chunk-level retrieval files | [`ChunkId`] |
//! | a chunk at one place (`rag-eval chunk`'s `id`, [`PositionAwareChunk::id`], the registry) | [`PaChunkId`] |
//!
//! The two never coincide and neither can be derived from the other without the chunk's text
//! and place. A `pa_chunk_…` id where a content id belongs would match nothing and score 0, so
//! reading a chunk-level dataset or retrieval file refuses it with file:line and names what to
//! use instead (`rag-eval chunk` prints both ids: `id` and `chunk_id`).

use crate::corpus::{DocId, Metadata};
use crate::span::CharSpan;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt;

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
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PaChunkId(String);

impl PaChunkId {
    /// Prefix of every position-aware chunk id.
    pub const PREFIX: &'static str = "pa_chunk_";

    /// The id of `content` found at `start..end` (chars) of document `doc`.
    pub fn new(doc: &DocId, start: usize, end: usize, content: &str) -> Self {
        let mut h = Sha256::new();
        // The document id ends with a NUL and the offsets have a fixed width, so no two
        // (doc, start, end, content) tuples hash the same bytes.
        h.update(doc.as_str().as_bytes());
        h.update([0]);
        h.update((start as u64).to_le_bytes());
        h.update((end as u64).to_le_bytes());
        h.update(content.as_bytes());
        PaChunkId(prefixed_hex12(Self::PREFIX, h))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PaChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for PaChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
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
    pub id: PaChunkId,
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
            id: PaChunkId::new(&doc, start, end, &content),
            content,
            span: CharSpan::new(doc, start, end),
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
    pa_chunks: HashMap<PaChunkId, PositionAwareChunk>,
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
    pub fn get_pa_chunk(&self, id: &PaChunkId) -> Option<&PositionAwareChunk> {
        self.pa_chunks.get(id)
    }

    /// The span of a position-aware chunk.
    pub fn get_span(&self, id: &PaChunkId) -> Option<&CharSpan> {
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

    #[test]
    fn chunk_ids_follow_the_documented_rules() {
        // sha256("hello") = 2cf24dba5fb0a30e…
        assert_eq!(
            ChunkId::from_content("hello").as_str(),
            "chunk_2cf24dba5fb0"
        );
        assert_eq!(Chunk::new("a.md", "same").id, Chunk::new("b.md", "same").id);
        let doc = DocId::new("a.md");
        let a = PaChunkId::new(&doc, 0, 4, "same");
        let b = PaChunkId::new(&doc, 10, 14, "same");
        assert_ne!(a, b, "same text at two places has two ids");
        assert!(a.as_str().starts_with("pa_chunk_") && a.as_str().len() == 9 + 12);
        assert_eq!(a, PaChunkId::new(&doc, 0, 4, "same"));
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
