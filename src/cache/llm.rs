//! An [`LlmClient`] wrapper that answers from a [`Cache`] and calls the model only for what
//! it has not recorded.

use super::Cache;
use crate::error::{Error, Result};
use crate::llm::{ChatRequest, ChatResponse, LlmClient};
use std::sync::Arc;

/// Wraps an [`LlmClient`] with a [`Cache`]: a request answered before (same client name without
/// its server's base URL ([`model_identity`](super::model_identity)), model, parameters and
/// messages; caches recorded before, keyed by the whole name, are still found) is answered from
/// the cache with the usage recorded then; anything
/// else goes to the inner client and is recorded. In [`CacheMode::Replay`](super::CacheMode) a
/// request not found is an error ([`Error::CacheMiss`]) and the inner client is never called, so
/// an offline CI run replays a generation or an LLM-judged evaluation exactly.
///
/// ```
/// use rag_eval::cache::{Cache, CacheMode, CachedLlm};
/// use rag_eval::llm::{ChatMessage, ChatRequest, ChatResponse, LlmClient, TokenUsage};
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// struct Shout(AtomicUsize);
/// #[async_trait::async_trait]
/// impl LlmClient for Shout {
///     fn name(&self) -> String { "shout(model=caps)".into() }
///     async fn complete(&self, r: &ChatRequest) -> rag_eval::Result<ChatResponse> {
///         self.0.fetch_add(1, Ordering::SeqCst);
///         Ok(ChatResponse {
///             content: r.messages[0].content.to_uppercase(),
///             finish_reason: Some("stop".into()),
///             usage: TokenUsage { prompt_tokens: 3, completion_tokens: 3 },
///             model: "caps".into(),
///             logprobs: None,
///         })
///     }
/// }
///
/// let dir = tempfile::tempdir()?;
/// let cache = Arc::new(Cache::open(dir.path().join("c.sqlite").to_str().unwrap(), CacheMode::ReadWrite)?);
/// let llm = CachedLlm::new(Shout(AtomicUsize::new(0)), cache);
/// let request = ChatRequest::new(vec![ChatMessage::user("hello")]);
/// let first = pollster::block_on(llm.complete(&request))?;
/// let again = pollster::block_on(llm.complete(&request))?;
/// assert_eq!((first.content.as_str(), &first), ("HELLO", &again));
/// assert_eq!(llm.inner().0.load(Ordering::SeqCst), 1, "the second answer came from the cache");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct CachedLlm<C> {
    inner: C,
    cache: Arc<Cache>,
    provider: String,
}

impl<C: LlmClient> CachedLlm<C> {
    /// Wraps `inner` with `cache`.
    pub fn new(inner: C, cache: Arc<Cache>) -> Self {
        let name = inner.name();
        let provider = name
            .split_once('(')
            .map_or(name.as_str(), |(p, _)| p)
            .trim()
            .to_owned();
        CachedLlm {
            inner,
            cache,
            provider,
        }
    }

    /// The wrapped client.
    pub fn inner(&self) -> &C {
        &self.inner
    }

    /// The cache.
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }
}

/// Everything of a request but its messages: the cache key's parameters.
///
/// The prompt version, the sample index and the log-probabilities asked for are left out when
/// unset, so that requests without them keep the keys they were recorded under before those
/// fields existed.
#[derive(serde::Serialize)]
struct Params<'a> {
    temperature: Option<f32>,
    max_tokens: Option<u32>,
    json_schema: Option<&'a crate::llm::JsonSchema>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_version: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sample: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_logprobs: Option<u8>,
}

impl<'a> Params<'a> {
    fn of(request: &'a ChatRequest) -> Self {
        Params {
            temperature: request.temperature,
            max_tokens: request.max_tokens,
            json_schema: request.json_schema.as_ref(),
            prompt_version: request.prompt_version.as_deref(),
            sample: request.sample,
            top_logprobs: request.top_logprobs,
        }
    }
}

#[async_trait::async_trait]
impl<C: LlmClient> LlmClient for CachedLlm<C> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn http_retries(&self) -> u64 {
        self.inner.http_retries()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        // The client's name carries its default model; a request may name another. The name's
        // server is no part of the key, but caches recorded before keyed by the whole name.
        let (model, legacy) = match &request.model {
            Some(m) => (m.clone(), None),
            None => {
                let name = self.inner.name();
                let model = super::model_identity(&name);
                let legacy = (name != model).then_some(name);
                (model, legacy)
            }
        };
        let params = Params::of(request);
        if let Some(hit) = self.cache.lookup_response(
            &self.provider,
            &model,
            legacy.as_deref(),
            &params,
            &request.messages,
        )? {
            let mut response: ChatResponse =
                serde_json::from_value(hit.response).map_err(|e| Error::Cache {
                    path: self.cache.path().to_owned(),
                    message: format!("a recorded chat response does not read back: {e}"),
                })?;
            if let Some(usage) = hit.usage {
                response.usage = usage;
            }
            return Ok(response);
        }
        let response = self.inner.complete(request).await?;
        self.cache.put_response(
            &self.provider,
            &model,
            &params,
            &request.messages,
            &response,
            Some(response.usage),
        )?;
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{canonical_json, CacheKey};
    use crate::llm::ChatMessage;

    #[test]
    fn requests_without_prompt_version_or_sample_keep_their_recorded_keys() {
        let request = ChatRequest::new(vec![ChatMessage::user("q")]).with_temperature(0.0);
        let params = canonical_json(&Params::of(&request)).unwrap();
        // The parameters as they were serialized before the prompt version and sample index
        // existed: caches recorded then must still be hit.
        assert_eq!(
            params,
            r#"{"json_schema":null,"max_tokens":null,"temperature":0.0}"#
        );
        let key = CacheKey::for_response("p", "m", &Params::of(&request), &request.messages)
            .unwrap()
            .to_string();
        assert_eq!(
            key,
            CacheKey::for_response(
                "p",
                "m",
                &serde_json::json!({"json_schema": null, "max_tokens": null, "temperature": 0.0}),
                &request.messages
            )
            .unwrap()
            .to_string()
        );
        let keyed = |r: &ChatRequest| {
            CacheKey::for_response("p", "m", &Params::of(r), &r.messages).unwrap()
        };
        let sample0 = request.clone().with_sample(0);
        let sample1 = request.clone().with_sample(1);
        let v2 = request.clone().with_prompt_version("2");
        let logprobs = request.clone().with_top_logprobs(5);
        let all = [
            keyed(&request),
            keyed(&sample0),
            keyed(&sample1),
            keyed(&v2),
            keyed(&logprobs),
        ];
        for i in 0..all.len() {
            for j in i + 1..all.len() {
                assert_ne!(all[i], all[j], "{i} and {j} share a key");
            }
        }
    }
}
