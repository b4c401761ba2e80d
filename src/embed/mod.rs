//! Embedders: text to vectors.

mod batch;
mod hashing;
#[cfg(feature = "onnx")]
mod onnx;
#[cfg(feature = "onnx")]
mod onnx_profile;
#[cfg(feature = "openai")]
mod openai;

pub use crate::vector::cosine;
pub use batch::{BatchStats, BatchingEmbedder};
pub use hashing::HashingEmbedder;
#[cfg(feature = "onnx")]
pub use onnx::{OnnxConfig, OnnxEmbedder, ORT_DYLIB_PATH};
#[cfg(feature = "onnx")]
pub use onnx_profile::OnnxProfile;
#[cfg(feature = "openai")]
pub use openai::{EmbeddingUsage, OpenAiEmbedder, OpenAiEmbedderBuilder};

use crate::error::Result;
use crate::spec::Value;

/// Turns texts into fixed-size vectors.
///
/// Implementations should be deterministic for a given configuration; [`Embedder::name`]
/// identifies that configuration (it keys caches and appears in reports).
#[async_trait::async_trait]
pub trait Embedder: Send + Sync {
    /// Provider, model and parameters, e.g. `hashing(dim=384,ngrams=2)`. Caches key their
    /// entries by it, so it stays as it is when new settings are added.
    fn name(&self) -> String;
    /// The [spec](crate::spec) that builds this embedder again, e.g.
    /// `openai:model=text-embedding-3-small,base_url=https://api.openai.com/v1,api_key_env=OPENAI_API_KEY`.
    /// Embedders that no spec builds keep the default, their name as text.
    fn spec(&self) -> Value {
        Value::Text(self.name())
    }
    /// Length of every vector this embedder returns.
    fn dimension(&self) -> usize;
    /// How many texts this embedder would rather get per [`Embedder::embed`] call, if it has a
    /// preference; wrappers that batch ([`BatchingEmbedder`]) then send calls of that size.
    /// `None` (the default) leaves the size to the wrapper.
    fn preferred_batch_size(&self) -> Option<usize> {
        None
    }
    /// Embeds documents or chunks, one vector per text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>>;
    /// Embeds a query. Models with separate query encodings override this.
    async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        let mut v = self.embed(&[query.to_owned()]).await?;
        v.pop().ok_or_else(|| {
            crate::Error::Embed(crate::EmbedError::new(
                self.name(),
                format!("{} returned no vector", self.name()),
            ))
        })
    }
    /// Embeds queries, one vector per query, in order: what [`Embedder::embed_query`] returns
    /// for each. The default asks `embed_query` one query at a time; embedders whose query
    /// encoding is their document encoding override it with one batched [`Embedder::embed`].
    async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut vectors = Vec::with_capacity(queries.len());
        for q in queries {
            vectors.push(self.embed_query(q).await?);
        }
        Ok(vectors)
    }
}

// Shared and boxed embedders are embedders, so wrappers such as
// `BatchingEmbedder<Arc<dyn Embedder>>` compose. `embed_query` is forwarded too: a model's own
// query encoding must survive the indirection.
macro_rules! forward_embedder {
    ($($pointer:ident)::+) => {
        #[async_trait::async_trait]
        impl<E: Embedder + ?Sized> Embedder for $($pointer)::+<E> {
            fn name(&self) -> String {
                (**self).name()
            }
            fn spec(&self) -> Value {
                (**self).spec()
            }
            fn dimension(&self) -> usize {
                (**self).dimension()
            }
            fn preferred_batch_size(&self) -> Option<usize> {
                (**self).preferred_batch_size()
            }
            async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
                (**self).embed(texts).await
            }
            async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
                (**self).embed_query(query).await
            }
            async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>> {
                (**self).embed_queries(queries).await
            }
        }
    };
}
forward_embedder!(std::sync::Arc);
forward_embedder!(Box);
