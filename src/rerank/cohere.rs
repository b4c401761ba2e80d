//! Reranking through Cohere's `/v2/rerank` API and servers that mimic it.

use super::Reranker;
use crate::chunk::{rank, RetrievedChunk};
use crate::error::{Error, Result};
use crate::http::{redact_url, HttpClient, HttpConfig, HttpStats};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Cohere's public API.
pub const COHERE_BASE_URL: &str = "https://api.cohere.com";

/// A [`Reranker`] on Cohere's `/v2/rerank` API, or a server with the same request and answer
/// (Infinity's `/rerank`, for one: base URL `http://host:7997`, path `/rerank`).
///
/// The returned chunks carry the service's `relevance_score`, best first; equal scores break by
/// chunk id. More candidates than [`max_documents`](CohereRerankerBuilder::max_documents) go in
/// several requests whose scores are merged (relevance scores do not depend on the other
/// documents of a request).
///
/// ```no_run
/// use rag_eval::rerank::{CohereReranker, Reranker};
///
/// # async fn f(candidates: Vec<rag_eval::chunk::RetrievedChunk>) -> rag_eval::Result<()> {
/// let cohere = CohereReranker::new("rerank-v3.5")?; // key from COHERE_API_KEY
/// let best = cohere.rerank("what do bees eat?", candidates, 5).await?;
/// # Ok(()) }
/// ```
pub struct CohereReranker {
    client: HttpClient,
    model: String,
    path: String,
    max_documents: usize,
    max_tokens_per_doc: Option<u32>,
    requests: AtomicU64,
    documents: AtomicU64,
}

/// What a [`CohereReranker`] has sent, summed over its answered requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RerankUsage {
    /// Requests answered.
    pub requests: u64,
    /// Documents scored.
    pub documents: u64,
}

/// Settings of a [`CohereReranker`]; from [`CohereReranker::builder`].
#[derive(Debug, Clone)]
pub struct CohereRerankerBuilder {
    model: String,
    http: HttpConfig,
    path: String,
    max_documents: usize,
    max_tokens_per_doc: Option<u32>,
}

impl CohereReranker {
    /// `model` on Cohere's API, key from `COHERE_API_KEY`.
    pub fn new(model: impl Into<String>) -> Result<Self> {
        Self::builder(model).build()
    }

    /// Settings for `model`, starting from Cohere's API: base URL `https://api.cohere.com`,
    /// path `/v2/rerank`, key from `COHERE_API_KEY` (a missing key is allowed: local servers
    /// need none), at most 1,000 documents per request.
    pub fn builder(model: impl Into<String>) -> CohereRerankerBuilder {
        CohereRerankerBuilder {
            model: model.into(),
            http: HttpConfig::new(COHERE_BASE_URL).with_api_key_env("COHERE_API_KEY"),
            path: "/v2/rerank".to_owned(),
            max_documents: 1000,
            max_tokens_per_doc: None,
        }
    }

    /// Requests answered and documents scored so far.
    pub fn usage(&self) -> RerankUsage {
        RerankUsage {
            requests: self.requests.load(Ordering::Relaxed),
            documents: self.documents.load(Ordering::Relaxed),
        }
    }

    /// Attempts, retries and failures of the underlying HTTP client.
    pub fn http_stats(&self) -> HttpStats {
        self.client.stats()
    }

    /// Scores of `documents` by position, for the `top_n` best (all when `top_n` is the
    /// number of documents); positions the answer leaves out get no score.
    async fn scores(
        &self,
        query: &str,
        documents: &[&str],
        top_n: usize,
    ) -> Result<Vec<Option<f32>>> {
        let body = RerankRequest {
            model: &self.model,
            query,
            documents,
            top_n,
            max_tokens_per_doc: self.max_tokens_per_doc,
        };
        let answer: RerankResponse = self.client.post_json(&self.path, &body).await?;
        let fail = |message: String| Error::Http {
            endpoint: self.client.endpoint(&reqwest::Method::POST, &self.path),
            status: Some(200),
            message,
        };
        let mut scores = vec![None; documents.len()];
        for result in answer.results {
            let slot = scores.get_mut(result.index).ok_or_else(|| {
                fail(format!(
                    "result index {} out of range (0..{})",
                    result.index,
                    documents.len()
                ))
            })?;
            if !result.relevance_score.is_finite() {
                return Err(fail(format!(
                    "document {} has relevance score {}",
                    result.index, result.relevance_score
                )));
            }
            if slot.replace(result.relevance_score as f32).is_some() {
                return Err(fail(format!(
                    "document {} is scored twice in the answer",
                    result.index
                )));
            }
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.documents
            .fetch_add(documents.len() as u64, Ordering::Relaxed);
        Ok(scores)
    }
}

crate::http::endpoint_builder!(CohereRerankerBuilder, "/v2/rerank");

impl CohereRerankerBuilder {
    /// At most this many documents per request (at least 1).
    pub fn max_documents(mut self, max_documents: usize) -> Self {
        self.max_documents = max_documents.max(1);
        self
    }

    /// Sends `max_tokens_per_doc` (Cohere truncates longer documents; default 4096).
    pub fn max_tokens_per_doc(mut self, tokens: u32) -> Self {
        self.max_tokens_per_doc = Some(tokens);
        self
    }

    /// The reranker; fails on a malformed URL or header.
    pub fn build(self) -> Result<CohereReranker> {
        Ok(CohereReranker {
            client: HttpClient::new(self.http)?,
            model: self.model,
            path: self.path,
            max_documents: self.max_documents,
            max_tokens_per_doc: self.max_tokens_per_doc,
            requests: AtomicU64::new(0),
            documents: AtomicU64::new(0),
        })
    }
}

#[derive(Serialize)]
struct RerankRequest<'a> {
    model: &'a str,
    query: &'a str,
    documents: &'a [&'a str],
    top_n: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens_per_doc: Option<u32>,
}

#[derive(Deserialize)]
struct RerankResponse {
    results: Vec<RerankResult>,
}

#[derive(Deserialize)]
struct RerankResult {
    index: usize,
    relevance_score: f64,
}

/// Keeps the scored candidates, ranked by [`rank`], at most `top_k`.
fn rank_scored(
    candidates: Vec<RetrievedChunk>,
    scores: &[Option<f32>],
    top_k: usize,
) -> Vec<RetrievedChunk> {
    let scored: Vec<RetrievedChunk> = candidates
        .into_iter()
        .zip(scores)
        .filter_map(|(mut c, s)| {
            c.score = (*s)?;
            Some(c)
        })
        .collect();
    rank(scored, top_k)
}

#[async_trait::async_trait]
impl Reranker for CohereReranker {
    fn name(&self) -> String {
        let mut name = format!(
            "cohere(model={},base={}",
            self.model,
            redact_url(&self.client.config().base_url)
        );
        if self.path != "/v2/rerank" {
            name.push_str(&format!(",path={}", redact_url(&self.path)));
        }
        name.push(')');
        name
    }

    /// `cohere:model=…,base_url=…,api_key_env=…`, with `path` when it is not `/v2/rerank`.
    fn spec(&self) -> crate::spec::Value {
        let config = self.client.config();
        let mut spec = crate::spec::Spec::new("cohere")
            .with("model", self.model.as_str())
            .with("base_url", redact_url(&config.base_url));
        if let Some(env) = &config.api_key_env {
            spec = spec.with("api_key_env", env.as_str());
        }
        if self.path != "/v2/rerank" {
            spec = spec.with("path", redact_url(&self.path));
        }
        spec.into()
    }

    async fn rerank(
        &self,
        query: &str,
        candidates: Vec<RetrievedChunk>,
        top_k: usize,
    ) -> Result<Vec<RetrievedChunk>> {
        if candidates.is_empty() || top_k == 0 {
            return Ok(Vec::new());
        }
        let documents: Vec<&str> = candidates
            .iter()
            .map(|c| c.chunk.content.as_str())
            .collect();
        let scores = if documents.len() <= self.max_documents {
            self.scores(query, &documents, top_k.min(documents.len()))
                .await?
        } else {
            // Every score is needed to merge the parts.
            let parts = futures_util::future::try_join_all(
                documents
                    .chunks(self.max_documents)
                    .map(|part| self.scores(query, part, part.len())),
            )
            .await?;
            parts.into_iter().flatten().collect()
        };
        Ok(rank_scored(candidates, &scores, top_k))
    }
}

impl fmt::Debug for CohereReranker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CohereReranker")
            .field("model", &self.model)
            .field("path", &redact_url(&self.path))
            .field("max_documents", &self.max_documents)
            .field("max_tokens_per_doc", &self.max_tokens_per_doc)
            .field("usage", &self.usage())
            .field("client", &self.client)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::PositionAwareChunk;

    fn candidate(start: usize, text: &str) -> RetrievedChunk {
        RetrievedChunk::new(
            PositionAwareChunk::new("d", start, start + text.len(), text),
            0.0,
        )
    }

    #[test]
    fn ranking_orders_by_score_then_id_and_drops_unscored() {
        let c: Vec<RetrievedChunk> = (0..5).map(|i| candidate(i * 10, "x")).collect();
        let ids: Vec<_> = c.iter().map(|c| c.chunk.id.clone()).collect();
        let ranked = rank_scored(c, &[Some(0.2), Some(0.9), None, Some(0.2), Some(0.5)], 10);
        let got: Vec<(f32, _)> = ranked
            .iter()
            .map(|r| (r.score, r.chunk.id.clone()))
            .collect();
        let (lo, hi) = if ids[0] < ids[3] {
            (ids[0].clone(), ids[3].clone())
        } else {
            (ids[3].clone(), ids[0].clone())
        };
        assert_eq!(
            got,
            [
                (0.9, ids[1].clone()),
                (0.5, ids[4].clone()),
                (0.2, lo),
                (0.2, hi)
            ]
        );
        let c: Vec<RetrievedChunk> = (0..3).map(|i| candidate(i * 10, "x")).collect();
        assert_eq!(
            rank_scored(c, &[Some(0.1), Some(0.3), Some(0.2)], 2).len(),
            2
        );
    }

    #[test]
    fn names_show_model_and_server_only() {
        let r = CohereReranker::builder("rerank-v3.5")
            .api_key(crate::http::ApiKey::new("co-unit-secret"))
            .build()
            .unwrap();
        assert_eq!(
            r.name(),
            "cohere(model=rerank-v3.5,base=https://api.cohere.com)"
        );
        assert!(!format!("{r:?}").contains("co-unit-secret"));
        let infinity = CohereReranker::builder("BAAI/bge-reranker-base")
            .base_url("http://127.0.0.1:7997")
            .path("/rerank")
            .build()
            .unwrap();
        assert_eq!(
            infinity.name(),
            "cohere(model=BAAI/bge-reranker-base,base=http://127.0.0.1:7997,path=/rerank)"
        );
    }
}
