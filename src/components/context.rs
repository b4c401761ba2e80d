//! What building from specs may share: a cache, the chunker of retrievers whose spec names
//! none, and the limit of each remote request.

use crate::chunker::PositionAwareChunker;
use crate::embed::Embedder;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Settings that apply to every component built, not to one spec.
///
/// - A cache ([`Context::with_cache`], feature `cache`) wraps every embedder built except
///   `hashing` in a [`CachedEmbedder`](crate::cache::CachedEmbedder): the figures are the same,
///   so the cache is not part of any component's spec.
/// - A chunker ([`Context::with_chunker`]) is used by retrievers whose spec has no `chunker`
///   key; this is how the CLI's `--chunker` grid meets one `--retriever` spec.
/// - A limit ([`Context::with_limit`]) bounds each request of every remote component built
///   (embedders, rerankers, stores), retries included; this is the CLI's `--timeout`.
#[derive(Clone, Default)]
pub struct Context {
    chunker: Option<Arc<dyn PositionAwareChunker>>,
    limit: Option<Duration>,
    #[cfg(feature = "cache")]
    cache: Option<Arc<crate::cache::Cache>>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Context");
        d.field("chunker", &self.chunker.as_ref().map(|c| c.name()));
        d.field("limit", &self.limit);
        #[cfg(feature = "cache")]
        d.field("cache", &self.cache.as_ref().map(|c| super::cache_spec(c)));
        d.finish()
    }
}

impl Context {
    /// No cache, no chunker.
    pub fn new() -> Self {
        Context::default()
    }

    /// Retrievers whose spec names no chunker use `chunker`.
    pub fn with_chunker(mut self, chunker: Arc<dyn PositionAwareChunker>) -> Self {
        self.chunker = Some(chunker);
        self
    }

    /// The chunker for retrievers whose spec names none.
    pub fn chunker(&self) -> Option<&Arc<dyn PositionAwareChunker>> {
        self.chunker.as_ref()
    }

    /// Each request of a remote component built takes at most `limit` in all, retries and
    /// the waits between them included (see [`HttpConfig::with_limit`](crate::http::HttpConfig::with_limit));
    /// without it a component keeps its own settings.
    pub fn with_limit(mut self, limit: Duration) -> Self {
        self.limit = Some(limit);
        self
    }

    /// The limit of each request of the remote components built, if any.
    pub fn limit(&self) -> Option<Duration> {
        self.limit
    }

    /// `config` limited as the context says.
    #[cfg(any(feature = "openai", feature = "cohere", feature = "chroma"))]
    pub(crate) fn http(&self, config: crate::http::HttpConfig) -> crate::http::HttpConfig {
        match self.limit {
            Some(limit) => config.with_limit(limit),
            None => config,
        }
    }

    /// Embedders built are wrapped in `cache` (all but `hashing`).
    #[cfg(feature = "cache")]
    pub fn with_cache(mut self, cache: Arc<crate::cache::Cache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The cache embedders are wrapped in, if any.
    #[cfg(feature = "cache")]
    pub fn cache(&self) -> Option<&Arc<crate::cache::Cache>> {
        self.cache.as_ref()
    }

    /// Whether embedders built are wrapped in a cache.
    pub(crate) fn caches(&self) -> bool {
        #[cfg(feature = "cache")]
        if self.cache.is_some() {
            return true;
        }
        false
    }

    /// `embedder` behind the cache, when there is one.
    pub(crate) fn cached(&self, embedder: Arc<dyn Embedder>) -> Arc<dyn Embedder> {
        #[cfg(feature = "cache")]
        if let Some(cache) = &self.cache {
            return Arc::new(crate::cache::CachedEmbedder::new(
                embedder,
                Arc::clone(cache),
            ));
        }
        embedder
    }
}
