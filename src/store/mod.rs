//! Vector stores: embeddings in, nearest chunks out.

#[cfg(feature = "chroma")]
mod chroma;
mod memory;

// Re-exports of the built-in stores go here.
#[cfg(feature = "chroma")]
pub use chroma::ChromaStore;
pub use memory::InMemoryStore;

use crate::chunk::{PositionAwareChunk, RetrievedChunk};
use crate::error::Result;

/// Stores chunk embeddings and finds the nearest ones to a query embedding.
///
/// Stores keep each chunk's document, start and end, so search results are
/// position-aware chunks whatever the backend.
#[async_trait::async_trait]
pub trait VectorStore: Send + Sync {
    /// Backend and configuration, for reports.
    fn name(&self) -> String;
    /// Adds chunks with their embeddings (same length and order).
    async fn add(&self, chunks: &[PositionAwareChunk], embeddings: &[Vec<f32>]) -> Result<()>;
    /// The `k` chunks most similar to `embedding`, best first, scores as cosine similarity;
    /// ties break by chunk id.
    async fn search(&self, embedding: &[f32], k: usize) -> Result<Vec<RetrievedChunk>>;
    /// Removes everything.
    async fn clear(&self) -> Result<()>;
    /// Number of chunks stored.
    async fn len(&self) -> Result<usize>;
    /// Whether the store holds no chunk.
    async fn is_empty(&self) -> Result<bool> {
        Ok(self.len().await? == 0)
    }
}
