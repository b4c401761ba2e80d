//! Retrievers: from a query to ranked chunks.
//!
//! A [`Retriever<L>`] is what an evaluation at level `L` runs. Built-ins:
//! [`Pipeline`] (chunker → embedder → vector store → optional reranker) and
//! [`Bm25Retriever`] (chunker → BM25). Both implement `Retriever<TokenLevel>` and
//! `Retriever<ChunkLevel>`.

mod bm25;
pub(crate) mod many;
mod pipeline;

// Re-exports of the built-in retrievers go here.
pub use self::bm25::Bm25Retriever;
pub use many::BatchError;
pub use pipeline::Pipeline;

use crate::chunk::RetrievedChunk;
use crate::chunker::PositionAwareChunker;
use crate::corpus::Corpus;
use crate::error::Result;
use crate::level::Level;
use crate::span::CharSpan;
use crate::spec::Value;
use std::sync::Arc;

/// Retrieves ranked chunks for a query, at evaluation level `L`.
///
/// The level is part of the type so that a retriever is only ever scored against ground truth
/// of its own kind; the built-ins implement both levels.
#[async_trait::async_trait]
pub trait Retriever<L: Level>: Send + Sync {
    /// A description of the configuration (chunker, embedder, store, …) for reports.
    fn name(&self) -> String;

    /// The [spec](crate::spec) that builds this retriever again, chunker included, e.g.
    /// `bm25:chunker=recursive(size=400,overlap=0,length=chars,separators=langchain),k1=1.2,b=0.75`.
    /// Retrievers that no spec builds keep the default, their name as text.
    fn spec(&self) -> Value {
        Value::Text(self.name())
    }

    /// The [spec](crate::spec) of the chunker whose chunks this retriever returns, when it
    /// has one (what [`PositionAwareChunker::spec`] returns). A chunk-level evaluation compares
    /// it with the chunker recorded in the dataset.
    fn chunker(&self) -> Option<Value> {
        None
    }

    /// The chunker itself, when the retriever has one: what metrics that need the chunker's
    /// whole output (PrecisionΩ) run over the corpus, whatever chunker it is, when
    /// [`Retriever::indexed_spans`] has nothing.
    fn chunker_object(&self) -> Option<&dyn PositionAwareChunker> {
        None
    }

    /// The positions of every chunk indexed from the current corpus, when the retriever keeps
    /// them (after [`Retriever::index`]); spares chunking the corpus a second time for
    /// PrecisionΩ.
    fn indexed_spans(&self) -> Option<Vec<CharSpan>> {
        None
    }

    /// Prepares for queries over `corpus` (chunking, embedding, indexing). Called once before
    /// the first query of an evaluation; retrievers that need no corpus keep the default.
    async fn index(&self, corpus: &Arc<Corpus>) -> Result<()> {
        let _ = corpus;
        Ok(())
    }

    /// The best `k` chunks for `query`, best first.
    async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<RetrievedChunk>>;

    /// The best `k` chunks for each query, best first: `result[i]` answers `queries[i]`, and
    /// is what [`Retriever::retrieve`] returns for it. Retrievers that gain from seeing every
    /// query at once override it (the built-ins embed the queries in batches or score them on
    /// every core); the default calls [`Retriever::retrieve`] for each query, up to
    /// `concurrency` at a time. A failure names the queries it belongs to by position.
    async fn retrieve_many(
        &self,
        queries: &[&str],
        k: usize,
        concurrency: usize,
    ) -> std::result::Result<Vec<Vec<RetrievedChunk>>, BatchError> {
        many::one_by_one(self, queries, k, concurrency).await
    }
}

// Boxed and shared retrievers are retrievers, with every method forwarded (a retriever's own
// batching and chunker must survive the indirection).
macro_rules! forward_retriever {
    ($pointer:ident) => {
        #[async_trait::async_trait]
        impl<L: Level, R: Retriever<L> + ?Sized> Retriever<L> for $pointer<R> {
            fn name(&self) -> String {
                (**self).name()
            }
            fn spec(&self) -> Value {
                (**self).spec()
            }
            fn chunker(&self) -> Option<Value> {
                (**self).chunker()
            }
            fn chunker_object(&self) -> Option<&dyn PositionAwareChunker> {
                (**self).chunker_object()
            }
            fn indexed_spans(&self) -> Option<Vec<CharSpan>> {
                (**self).indexed_spans()
            }
            async fn index(&self, corpus: &Arc<Corpus>) -> Result<()> {
                (**self).index(corpus).await
            }
            async fn retrieve(&self, query: &str, k: usize) -> Result<Vec<RetrievedChunk>> {
                (**self).retrieve(query, k).await
            }
            async fn retrieve_many(
                &self,
                queries: &[&str],
                k: usize,
                concurrency: usize,
            ) -> std::result::Result<Vec<Vec<RetrievedChunk>>, BatchError> {
                (**self).retrieve_many(queries, k, concurrency).await
            }
        }
    };
}
forward_retriever!(Box);
forward_retriever!(Arc);
