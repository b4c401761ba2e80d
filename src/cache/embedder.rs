//! An [`Embedder`] wrapper that answers from a [`Cache`] and embeds only what it lacks.

use super::key::Table;
use super::{Cache, CacheKey, CacheMode, CacheStats, Price};
use crate::embed::Embedder;
use crate::error::{EmbedError, Error, Result};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

type TokenCounter = dyn Fn(&str) -> u64 + Send + Sync;

/// Wraps an [`Embedder`] with a [`Cache`]: each call looks every text up, sends the texts not
/// found to the inner embedder in one call (each distinct text once; queries of an
/// [`Embedder::embed_queries`] call likewise), stores their vectors and
/// returns all vectors in input order. In [`CacheMode::Replay`] a text not found is an error
/// ([`Error::CacheMiss`]) and the inner embedder is never called.
///
/// Entries are keyed by the inner embedder's [`Embedder::name`] without the server it reaches
/// ([`model_identity`](super::model_identity): its provider, model and parameters, not its
/// base URL; the provider is the part before the first `(`), its dimension when the inner
/// embedder knows it up front, whether the text is a document or a query (models may encode the
/// two differently) and the text. A text not found so is looked up under the whole name, base
/// URL included, as caches were keyed before: those keep replaying against the server they were
/// recorded with.
///
/// A model of unknown size (an [`Embedder::dimension`] of 0 when wrapped, e.g. an
/// [`OpenAiEmbedder`](crate::embed::OpenAiEmbedder) for a local model the crate has no table
/// entry for) is keyed by its name alone: its dimension is learned from the first vector seen,
/// whether it comes from the cache or from the inner embedder, and every later vector, found or
/// embedded, must have that length. Declaring the size up front (e.g.
/// `OpenAiEmbedder::builder(…).expected_dimension(n)`) adds it to the key, so a cache recorded
/// without the declaration is not found with it, and the other way round.
///
/// The [`Embedder`] trait carries no token usage, so the tokens of each embedded text come from
/// an optional counter ([`CachedEmbedder::with_token_counter`], e.g. the model's tokenizer);
/// they are stored with the vector, count as spent in [`CachedEmbedder::stats`] and as saved
/// whenever the entry is hit later. A price ([`CachedEmbedder::with_price_per_1k_tokens`])
/// turns them into a cost.
///
/// Concurrent calls for the same new text may both embed it (the first stored vector wins);
/// wrap this in a [`BatchingEmbedder`](crate::embed::BatchingEmbedder) to share work in flight.
///
/// ```
/// use rag_eval::cache::{Cache, CacheMode, CachedEmbedder};
/// use rag_eval::embed::{Embedder, HashingEmbedder};
/// use std::sync::Arc;
///
/// let dir = tempfile::tempdir()?;
/// let cache = Arc::new(Cache::open(dir.path().join("c.sqlite").to_str().unwrap(), CacheMode::ReadWrite)?);
/// let e = CachedEmbedder::new(HashingEmbedder::default(), Arc::clone(&cache))
///     .with_token_counter(|t| t.split_whitespace().count() as u64)
///     .with_price_per_1k_tokens(0.13);
/// let texts: Vec<String> = ["the cat sat", "on the mat"].map(String::from).into();
/// let first = pollster::block_on(e.embed(&texts))?;
/// let again = pollster::block_on(e.embed(&texts))?;
/// assert_eq!(first, again);
/// assert_eq!(e.stats().to_string(), "cache: 2 hits, 2 misses, 6 tokens, $0.0008");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CachedEmbedder<E> {
    inner: E,
    cache: Arc<Cache>,
    provider: String,
    /// The model identity entries are keyed by.
    model: String,
    /// The whole name, when it differs from `model`: the key's model part before.
    legacy_model: Option<String>,
    document_params: String,
    query_params: String,
    /// The vector length: the inner embedder's when it knew it when wrapped, else learned from
    /// the first vector seen; 0 until then.
    dimension: AtomicUsize,
    token_counter: Option<Box<TokenCounter>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Document,
    Query,
}

impl<E: Embedder> CachedEmbedder<E> {
    /// Wraps `inner` with `cache`.
    pub fn new(inner: E, cache: Arc<Cache>) -> Self {
        let name = inner.name();
        let model = super::model_identity(&name);
        let legacy_model = (name != model).then_some(name);
        let provider = model
            .split_once('(')
            .map_or(model.as_str(), |(p, _)| p)
            .trim()
            .to_owned();
        let dimension = inner.dimension();
        // Plain strings, fixed here: no JSON value to canonicalise on every call. A dimension
        // still to be learned cannot be part of the key: the key is needed to find it.
        let params = |input: &str| match dimension {
            0 => format!(r#"{{"input":"{input}"}}"#),
            d => format!(r#"{{"dimension":{d},"input":"{input}"}}"#),
        };
        CachedEmbedder {
            dimension: AtomicUsize::new(dimension),
            document_params: params("document"),
            query_params: params("query"),
            inner,
            cache,
            provider,
            model,
            legacy_model,
            token_counter: None,
        }
    }

    /// Counts the tokens of each text embedded on a miss with `counter`, typically the model's
    /// tokenizer, which is what embedding APIs bill.
    pub fn with_token_counter(
        mut self,
        counter: impl Fn(&str) -> u64 + Send + Sync + 'static,
    ) -> Self {
        self.token_counter = Some(Box::new(counter));
        self
    }

    /// Sets the price of the inner model's tokens for [`CacheStats::cost`] (shared by every
    /// user of the cache with the same embedder name).
    pub fn with_price_per_1k_tokens(self, usd: f64) -> Self {
        self.cache
            .set_price(&self.provider, &self.model, Price::per_1k(usd));
        self
    }

    /// The wrapped embedder.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// The cache.
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// The provider name entries are stored under (the inner name up to its first `(`).
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// Hits, misses and spending for this embedder's model (documents and queries together),
    /// counted per text asked for.
    pub fn stats(&self) -> CacheStats {
        self.cache.stats_for(&self.provider, &self.model)
    }

    async fn resolve(&self, kind: Kind, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let params = match kind {
            Kind::Document => &self.document_params,
            Kind::Query => &self.query_params,
        };
        let keys: Vec<CacheKey> = texts
            .iter()
            .map(|t| {
                CacheKey::from_parts(
                    Table::Embeddings,
                    &self.provider,
                    &self.model,
                    params,
                    t.as_bytes(),
                )
            })
            .collect();
        let legacy = |i: usize| {
            let model = self.legacy_model.as_deref().unwrap_or(&self.model);
            CacheKey::from_parts(
                Table::Embeddings,
                &self.provider,
                model,
                params,
                texts[i].as_bytes(),
            )
        };
        let found = self.cache.lookup_vectors(
            &self.provider,
            &self.model,
            &keys,
            self.legacy_model
                .as_ref()
                .map(|_| &legacy as &dyn Fn(usize) -> CacheKey),
        )?;
        let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(texts.len());
        for (hit, key) in found.into_iter().zip(&keys) {
            if let Some((v, _)) = &hit {
                let dimension = self.expect_dimension(v.len());
                if v.len() != dimension || v.is_empty() {
                    return Err(Error::Cache {
                        path: self.cache.path().to_owned(),
                        message: format!(
                            "entry {key} of `{}` has {} dimensions, expected {dimension}; the \
                             file is damaged",
                            self.model,
                            v.len()
                        ),
                    });
                }
            }
            out.push(hit.map(|(v, _)| v));
        }
        let missing: Vec<usize> = (0..out.len()).filter(|&i| out[i].is_none()).collect();
        if missing.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }
        if self.cache.mode() == CacheMode::Replay {
            let what = match kind {
                Kind::Document => "embedding",
                Kind::Query => "query embedding",
            };
            return Err(self.cache.miss_error(
                what,
                &self.provider,
                &self.model,
                texts[missing[0]],
                missing.len(),
            ));
        }
        // Each distinct missing text once, in order of first appearance.
        let mut slot_of: HashMap<&str, usize> = HashMap::new();
        let mut unique: Vec<usize> = Vec::new();
        for &i in &missing {
            slot_of.entry(texts[i]).or_insert_with(|| {
                unique.push(i);
                unique.len() - 1
            });
        }
        let vectors = match kind {
            Kind::Document => {
                let batch: Vec<String> = unique.iter().map(|&i| texts[i].to_owned()).collect();
                self.inner.embed(&batch).await?
            }
            // A single query goes through `embed_query`, as it did before queries came in
            // batches; several go in one `embed_queries` call.
            Kind::Query if unique.len() == 1 => {
                vec![self.inner.embed_query(texts[unique[0]]).await?]
            }
            Kind::Query => {
                let batch: Vec<String> = unique.iter().map(|&i| texts[i].to_owned()).collect();
                self.inner.embed_queries(&batch).await?
            }
        };
        let what = || {
            format!(
                "{}: {} texts missing from the cache",
                self.model,
                unique.len()
            )
        };
        if vectors.len() != unique.len() {
            return Err(Error::Embed(EmbedError::new(
                &self.model,
                format!("{} returned {} vectors", what(), vectors.len()),
            )));
        }
        if let Some(first) = vectors.first() {
            let dimension = self.expect_dimension(first.len());
            if let Some((i, v)) = vectors
                .iter()
                .enumerate()
                .find(|(_, v)| v.len() != dimension || v.is_empty())
            {
                let problem = match v.len() {
                    0 => "is empty".to_owned(),
                    n => format!("has dimension {n}, expected {dimension}"),
                };
                return Err(Error::Embed(EmbedError::new(
                    &self.model,
                    format!("{}: vector {i} {problem}", what()),
                )));
            }
        }
        let rows: Vec<(CacheKey, &[f32], Option<u64>)> = unique
            .iter()
            .zip(&vectors)
            .map(|(&i, v)| {
                let tokens = self.token_counter.as_ref().map(|count| count(texts[i]));
                (keys[i], v.as_slice(), tokens)
            })
            .collect();
        self.cache
            .store_vectors(&self.provider, &self.model, &rows)?;
        for i in missing {
            out[i] = Some(vectors[slot_of[texts[i]]].clone());
        }
        Ok(out.into_iter().flatten().collect())
    }
}

impl<E> CachedEmbedder<E> {
    /// The length every vector must have: the one known, or else `seen` (the length of the
    /// vector at hand), which becomes the known one. Of two calls racing to teach it, the
    /// first wins and the second is checked against it.
    fn expect_dimension(&self, seen: usize) -> usize {
        match self
            .dimension
            .compare_exchange(0, seen, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => seen,
            Err(known) => known,
        }
    }
}

impl<E: Embedder> fmt::Debug for CachedEmbedder<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedEmbedder")
            .field("inner", &self.model)
            .field("cache", &self.cache.path())
            .field("mode", &self.cache.mode())
            .field("stats", &self.stats())
            .finish()
    }
}

#[async_trait::async_trait]
impl<E: Embedder> Embedder for CachedEmbedder<E> {
    /// The inner embedder's name: the vectors are the same.
    fn name(&self) -> String {
        self.inner.name()
    }

    /// The inner embedder's spec: the cache is no part of the configuration.
    fn spec(&self) -> crate::spec::Value {
        self.inner.spec()
    }

    /// The inner embedder's dimension, or the one learned from the first vector seen (0 before
    /// it for a model of unknown size).
    fn dimension(&self) -> usize {
        match self.dimension.load(Ordering::Acquire) {
            0 => self.inner.dimension(),
            d => d,
        }
    }

    /// The inner embedder's: only the texts the cache lacks reach it, in one call.
    fn preferred_batch_size(&self) -> Option<usize> {
        self.inner.preferred_batch_size()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        self.resolve(Kind::Document, &texts).await
    }

    async fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        let mut v = self.resolve(Kind::Query, &[query]).await?;
        v.pop().ok_or_else(|| {
            Error::Embed(EmbedError::new(
                &self.model,
                format!("{} returned no vector", self.model),
            ))
        })
    }

    /// One cache lookup for all the queries; the distinct ones not found go to the inner
    /// embedder in one [`Embedder::embed_queries`] call and are stored. The vectors are those
    /// [`CachedEmbedder::embed_query`] returns for each query.
    async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>> {
        let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
        self.resolve(Kind::Query, &queries).await
    }
}
