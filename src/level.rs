//! Evaluation levels as types.
//!
//! An evaluation is either chunk-level (ground truth is a set of chunk ids, tied to the
//! chunker that produced them) or token-level (ground truth is character spans, independent of
//! any chunker). [`Level`] is sealed: the two built-in levels are the only ones, and every
//! generic piece (`Metric<L>`, evaluations, retrievers) is tied to one, so a span metric applied
//! to a chunk-level evaluation is a compile error:
//!
//! ```compile_fail
//! use rag_eval::level::{ChunkLevel, TokenLevel};
//! use rag_eval::metrics::{Metric, SpanRecall};
//! fn wants_chunk_metric(_: &dyn Metric<ChunkLevel>) {}
//! wants_chunk_metric(&SpanRecall::default()); // SpanRecall is a Metric<TokenLevel> only
//! ```
//!
//! ```compile_fail
//! // Users cannot add levels of their own.
//! struct MyLevel;
//! impl rag_eval::level::Level for MyLevel {
//!     type Truth = ();
//!     type Item = ();
//!     const NAME: &'static str = "mine";
//!     const KIND: rag_eval::level::LevelKind = rag_eval::level::LevelKind::Token;
//!     fn item_of(_: &rag_eval::chunk::RetrievedChunk) {}
//! }
//! ```

use crate::chunk::{ChunkId, RetrievedChunk};
use crate::span::CharSpan;
use std::fmt::Debug;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::ChunkLevel {}
    impl Sealed for super::TokenLevel {}
}

/// An evaluation level: what ground truth is and what a retriever's ranked items are.
pub trait Level:
    sealed::Sealed + Copy + Default + Debug + PartialEq + Send + Sync + 'static
{
    /// Ground truth for one query.
    type Truth: Clone + Debug + PartialEq + Send + Sync;
    /// One ranked retrieved item as the metrics see it.
    type Item: Clone + Debug + PartialEq + Send + Sync;
    /// `"chunk"` or `"token"`, as written in datasets and reports.
    const NAME: &'static str;
    /// Which level this is, for code that must branch on it (a value, so a `match` is checked
    /// for exhaustiveness where comparing names would not be).
    const KIND: LevelKind;
    /// What the metrics see of a retrieved chunk at this level.
    fn item_of(chunk: &RetrievedChunk) -> Self::Item;
    /// The truth as a value of one type for both levels, for code that records it.
    fn truth_view(truth: &Self::Truth) -> TruthView<'_>;
    /// Whether `truth` holds nothing to find (no chunk id; no character), so every figure of
    /// the query would be 0 whatever was retrieved.
    fn truth_is_empty(truth: &Self::Truth) -> bool;
}

/// A query's ground truth, borrowed, whatever the level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TruthView<'a> {
    /// Chunk level: the chunk ids to find.
    ChunkIds(&'a [ChunkId]),
    /// Token level: the character spans to find.
    Spans(&'a [CharSpan]),
}

/// The levels as a value: what [`Level::KIND`] says, and what results record.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum LevelKind {
    /// [`ChunkLevel`].
    Chunk,
    /// [`TokenLevel`].
    Token,
}

impl LevelKind {
    /// `"chunk"` or `"token"`, the level's [`Level::NAME`].
    pub fn name(self) -> &'static str {
        match self {
            LevelKind::Chunk => ChunkLevel::NAME,
            LevelKind::Token => TokenLevel::NAME,
        }
    }

    /// The Rust type's name, for messages about which `Retriever<…>` is missing.
    pub fn type_name(self) -> &'static str {
        match self {
            LevelKind::Chunk => "ChunkLevel",
            LevelKind::Token => "TokenLevel",
        }
    }
}

impl std::fmt::Display for LevelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Chunk-level evaluation: truth is a set of [`ChunkId`]s, retrieval a ranked list of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ChunkLevel;

/// Token-level evaluation: truth is character spans, retrieval a ranked list of spans
/// (the positions of the retrieved chunks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TokenLevel;

impl Level for ChunkLevel {
    type Truth = Vec<ChunkId>;
    type Item = ChunkId;
    const NAME: &'static str = "chunk";
    const KIND: LevelKind = LevelKind::Chunk;
    fn truth_view(truth: &Vec<ChunkId>) -> TruthView<'_> {
        TruthView::ChunkIds(truth)
    }
    fn truth_is_empty(truth: &Vec<ChunkId>) -> bool {
        truth.is_empty()
    }
    /// The content-addressed id, which is what chunk-level datasets record.
    fn item_of(chunk: &RetrievedChunk) -> ChunkId {
        ChunkId::from_content(&chunk.chunk.content)
    }
}

impl Level for TokenLevel {
    type Truth = Vec<CharSpan>;
    type Item = CharSpan;
    const NAME: &'static str = "token";
    const KIND: LevelKind = LevelKind::Token;
    fn truth_view(truth: &Vec<CharSpan>) -> TruthView<'_> {
        TruthView::Spans(truth)
    }
    fn truth_is_empty(truth: &Vec<CharSpan>) -> bool {
        truth.iter().all(CharSpan::is_empty)
    }
    /// The chunk's position.
    fn item_of(chunk: &RetrievedChunk) -> CharSpan {
        chunk.chunk.span.clone()
    }
}
