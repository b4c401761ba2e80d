//! Rerankers: reorder a retriever's candidates for a query.

#[cfg(feature = "cohere")]
mod cohere;

#[cfg(feature = "cohere")]
pub use cohere::{CohereReranker, CohereRerankerBuilder, RerankUsage, COHERE_BASE_URL};

use crate::chunk::RetrievedChunk;
use crate::error::Result;
use crate::spec::Value;

/// Reorders candidate chunks for a query and keeps the best `top_k`.
///
/// Scores in the result are the reranker's; ties break by chunk id.
#[async_trait::async_trait]
pub trait Reranker: Send + Sync {
    /// Model and configuration, for reports.
    fn name(&self) -> String;
    /// The [spec](crate::spec) that builds this reranker again, e.g. `cohere:model=rerank-v3.5`.
    /// Rerankers that no spec builds keep the default, their name as text.
    fn spec(&self) -> Value {
        Value::Text(self.name())
    }
    /// The best `top_k` of `candidates` for `query`, best first.
    async fn rerank(
        &self,
        query: &str,
        candidates: Vec<RetrievedChunk>,
        top_k: usize,
    ) -> Result<Vec<RetrievedChunk>>;
}

// A shared reranker is a reranker, so one built from a spec plugs into a pipeline.
#[async_trait::async_trait]
impl<R: Reranker + ?Sized> Reranker for std::sync::Arc<R> {
    fn name(&self) -> String {
        (**self).name()
    }
    fn spec(&self) -> Value {
        (**self).spec()
    }
    async fn rerank(
        &self,
        query: &str,
        candidates: Vec<RetrievedChunk>,
        top_k: usize,
    ) -> Result<Vec<RetrievedChunk>> {
        (**self).rerank(query, candidates, top_k).await
    }
}
