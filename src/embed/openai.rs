//! Embeddings from any server that speaks OpenAI's `/embeddings` API.

use super::Embedder;
use crate::error::{EmbedError, Error, Result};
use crate::http::{redact_url, HttpClient, HttpConfig, HttpStats};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Embeddings through OpenAI's `/embeddings` API, from OpenAI itself, Azure OpenAI, or a
/// compatible server: Ollama (`http://localhost:11434/v1`), vLLM (`http://host:8000/v1`),
/// llama.cpp's server (`http://host:8080/v1`, started with `--embeddings`), and text-embeddings-
/// inference (`http://host:8080/v1`).
///
/// Large inputs are split into requests of at most [`max_inputs`](OpenAiEmbedderBuilder::max_inputs)
/// texts and [`max_chars`](OpenAiEmbedderBuilder::max_chars) characters, sent concurrently (as
/// many at once as the HTTP client allows), and put back in input order by each answer's
/// `index`. Transient failures are retried by [`HttpClient`]. Wrap the embedder in a
/// [`BatchingEmbedder`](super::BatchingEmbedder) so that a run embeds each distinct text once.
///
/// ```no_run
/// use rag_eval::embed::{Embedder, OpenAiEmbedder};
///
/// # async fn f() -> rag_eval::Result<()> {
/// // The key comes from OPENAI_API_KEY.
/// let openai = OpenAiEmbedder::new("text-embedding-3-small")?;
/// assert_eq!(openai.dimension(), 1536);
///
/// // A local Ollama server needs no key; the dimension is learned from the first answer.
/// let ollama = OpenAiEmbedder::builder("nomic-embed-text")
///     .base_url("http://localhost:11434/v1")
///     .build()?;
/// let dim = ollama.detect_dimension().await?;
/// # Ok(()) }
/// ```
pub struct OpenAiEmbedder {
    client: HttpClient,
    model: String,
    path: String,
    dimensions: Option<usize>,
    expected_dimension: Option<usize>,
    /// 0 until known.
    dimension: AtomicUsize,
    max_inputs: usize,
    max_chars: usize,
    usage: Counters,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    texts: AtomicU64,
    prompt_tokens: AtomicU64,
    total_tokens: AtomicU64,
}

/// What an [`OpenAiEmbedder`] has been billed for, summed over its successful requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EmbeddingUsage {
    /// Requests answered.
    pub requests: u64,
    /// Texts embedded.
    pub texts: u64,
    /// Input tokens the server reported (`usage.prompt_tokens`).
    pub prompt_tokens: u64,
    /// Total tokens the server reported (`usage.total_tokens`).
    pub total_tokens: u64,
}

/// Settings of an [`OpenAiEmbedder`]; from [`OpenAiEmbedder::builder`].
#[derive(Debug, Clone)]
pub struct OpenAiEmbedderBuilder {
    model: String,
    http: HttpConfig,
    path: String,
    dimensions: Option<usize>,
    expected_dimension: Option<usize>,
    max_inputs: usize,
    max_chars: usize,
}

impl OpenAiEmbedder {
    /// `model` on OpenAI's API, key from `OPENAI_API_KEY`.
    pub fn new(model: impl Into<String>) -> Result<Self> {
        Self::builder(model).build()
    }

    /// Settings for `model`, starting from OpenAI's API: base URL
    /// `https://api.openai.com/v1`, path `/embeddings`, key from `OPENAI_API_KEY` (a missing
    /// key is allowed: local servers need none), at most 256 texts and 500,000 characters per
    /// request.
    pub fn builder(model: impl Into<String>) -> OpenAiEmbedderBuilder {
        OpenAiEmbedderBuilder {
            model: model.into(),
            http: HttpConfig::openai(),
            path: "/embeddings".to_owned(),
            dimensions: None,
            expected_dimension: None,
            max_inputs: 256,
            max_chars: 500_000,
        }
    }

    /// The model name sent with each request.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Tokens and requests so far.
    pub fn usage(&self) -> EmbeddingUsage {
        let u = &self.usage;
        EmbeddingUsage {
            requests: u.requests.load(Ordering::Relaxed),
            texts: u.texts.load(Ordering::Relaxed),
            prompt_tokens: u.prompt_tokens.load(Ordering::Relaxed),
            total_tokens: u.total_tokens.load(Ordering::Relaxed),
        }
    }

    /// Attempts, retries and failures of the underlying HTTP client.
    pub fn http_stats(&self) -> HttpStats {
        self.client.stats()
    }

    /// The vector length, embedding a short probe text first if it is not known yet (a model
    /// this crate has no table entry for, and no dimension given).
    pub async fn detect_dimension(&self) -> Result<usize> {
        match self.dimension.load(Ordering::Relaxed) {
            0 => Ok(self.request(&["dimension probe".to_owned()]).await?[0].len()),
            d => Ok(d),
        }
    }

    /// Embeds one request's worth of texts; vectors in input order.
    async fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let body = EmbeddingRequest {
            model: &self.model,
            input: texts,
            dimensions: self.dimensions,
        };
        let answer: EmbeddingResponse = self.client.post_json(&self.path, &body).await?;
        let vectors = self.in_input_order(answer.data, texts.len())?;
        let u = &self.usage;
        u.requests.fetch_add(1, Ordering::Relaxed);
        u.texts.fetch_add(texts.len() as u64, Ordering::Relaxed);
        if let Some(usage) = answer.usage {
            crate::llm::add_tokens_to(&u.prompt_tokens, usage.prompt_tokens);
            crate::llm::add_tokens_to(&u.total_tokens, usage.total_tokens.max(usage.prompt_tokens));
        }
        Ok(vectors)
    }

    /// Checks an answer's items against the request and sorts them by `index`.
    fn in_input_order(&self, data: Vec<EmbeddingData>, expected: usize) -> Result<Vec<Vec<f32>>> {
        let fail = |what: String| {
            Error::Embed(EmbedError::new(
                self.name(),
                format!("{}: {what}", self.name()),
            ))
        };
        if data.len() != expected {
            return Err(fail(format!(
                "{} vectors in the answer for {expected} texts",
                data.len()
            )));
        }
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
        // Servers that leave out `index` answer in input order.
        let all_indexed = data.iter().all(|d| d.index.is_some());
        for (position, item) in data.into_iter().enumerate() {
            let index = if all_indexed {
                item.index.unwrap_or(position)
            } else if item.index.is_none() {
                position
            } else {
                return Err(fail("only some items of the answer carry an index".into()));
            };
            let slot = slots
                .get_mut(index)
                .ok_or_else(|| fail(format!("index {index} out of range (0..{expected})")))?;
            if slot.replace(item.embedding).is_some() {
                return Err(fail(format!("index {index} appears twice in the answer")));
            }
        }
        // Every slot is filled: `expected` distinct in-range indices.
        let vectors: Vec<Vec<f32>> = slots.into_iter().flatten().collect();
        for (i, v) in vectors.iter().enumerate() {
            let known = self.dimension.load(Ordering::Relaxed);
            if v.is_empty() {
                return Err(fail(format!("vector {i} is empty")));
            }
            // NaN is no JSON, but a component beyond `f32` (1e39) reads as an infinity, and
            // either would make every cosine with the vector NaN.
            if let Some(c) = v.iter().position(|x| !x.is_finite()) {
                return Err(fail(format!(
                    "vector {i} of the answer is not finite (component {c} is {})",
                    v[c]
                )));
            }
            if known == 0 {
                // The first answer decides; a concurrent one that decided first wins and is
                // checked against below.
                let _ = self.dimension.compare_exchange(
                    0,
                    v.len(),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            let known = self.dimension.load(Ordering::Relaxed);
            if v.len() != known {
                return Err(fail(format!(
                    "vector {i} has dimension {}, expected {known}",
                    v.len()
                )));
            }
        }
        Ok(vectors)
    }
}

crate::http::endpoint_builder!(OpenAiEmbedderBuilder, "/embeddings");

impl OpenAiEmbedderBuilder {
    /// An Azure OpenAI deployment: `endpoint` is the resource URL
    /// (`https://NAME.openai.azure.com`), the key is sent in an `api-key` header and read
    /// from `AZURE_OPENAI_API_KEY` (change with [`api_key_env`](Self::api_key_env) after this).
    pub fn azure(
        mut self,
        endpoint: impl Into<String>,
        deployment: &str,
        api_version: &str,
    ) -> Self {
        self.path = self
            .http
            .azure(endpoint, deployment, "embeddings", api_version);
        self
    }

    /// Asks the server for vectors of this length (the `dimensions` parameter of OpenAI's
    /// `text-embedding-3-*` models; not every server accepts it).
    pub fn dimensions(mut self, dimensions: usize) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// Declares the vector length without sending anything, for models this crate does not
    /// know. Answers of another length are errors.
    pub fn expected_dimension(mut self, dimension: usize) -> Self {
        self.expected_dimension = Some(dimension);
        self
    }

    /// At most this many texts per request (at least 1; OpenAI accepts 2048).
    pub fn max_inputs(mut self, max_inputs: usize) -> Self {
        self.max_inputs = max_inputs.max(1);
        self
    }

    /// At most this many characters per request, summed over its texts (at least 1; a longer
    /// text goes alone). Keeps requests under a server's token limit per request.
    pub fn max_chars(mut self, max_chars: usize) -> Self {
        self.max_chars = max_chars.max(1);
        self
    }

    /// The embedder; fails on a malformed URL or header.
    pub fn build(self) -> Result<OpenAiEmbedder> {
        let dimension = self
            .dimensions
            .or(self.expected_dimension)
            .or_else(|| known_dimension(&self.model))
            .unwrap_or(0);
        Ok(OpenAiEmbedder {
            client: HttpClient::new(self.http)?,
            model: self.model,
            path: self.path,
            dimensions: self.dimensions,
            expected_dimension: self.expected_dimension,
            dimension: AtomicUsize::new(dimension),
            max_inputs: self.max_inputs,
            max_chars: self.max_chars,
            usage: Counters::default(),
        })
    }
}

/// Output sizes of OpenAI's own models (before any `dimensions` shortening).
fn known_dimension(model: &str) -> Option<usize> {
    match model {
        "text-embedding-3-small" | "text-embedding-ada-002" => Some(1536),
        "text-embedding-3-large" => Some(3072),
        _ => None,
    }
}

/// Consecutive ranges of `texts` with at most `max_inputs` texts and `max_chars` characters
/// each (a single longer text gets a range of its own).
fn request_ranges(texts: &[String], max_inputs: usize, max_chars: usize) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    let mut chars = 0;
    for (i, text) in texts.iter().enumerate() {
        let len = text.chars().count();
        if i > start && (i - start == max_inputs || chars + len > max_chars) {
            ranges.push(start..i);
            start = i;
            chars = 0;
        }
        chars += len;
    }
    if start < texts.len() {
        ranges.push(start..texts.len());
    }
    ranges
}

#[derive(Serialize)]
struct EmbeddingRequest<'a> {
    model: &'a str,
    input: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    dimensions: Option<usize>,
}

#[derive(Deserialize)]
struct EmbeddingResponse {
    data: Vec<EmbeddingData>,
    #[serde(default)]
    usage: Option<EmbeddingTokens>,
}

#[derive(Deserialize)]
struct EmbeddingData {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct EmbeddingTokens {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
}

#[async_trait::async_trait]
impl Embedder for OpenAiEmbedder {
    fn name(&self) -> String {
        let config = self.client.config();
        let mut name = format!("openai(model={}", self.model);
        if let Some(d) = self.dimensions {
            name.push_str(&format!(",dimensions={d}"));
        }
        name.push_str(&format!(",base={}", redact_url(&config.base_url)));
        if self.path != "/embeddings" {
            name.push_str(&format!(",path={}", redact_url(&self.path)));
        }
        name.push(')');
        name
    }

    /// `openai:model=…,base_url=…,api_key_env=…` with `dimensions` and `path` when set; a key
    /// given directly (not through a variable) is left out, as are credentials in the URL.
    fn spec(&self) -> crate::spec::Value {
        let config = self.client.config();
        let mut spec = crate::spec::Spec::new("openai")
            .with("model", self.model.as_str())
            .with("base_url", redact_url(&config.base_url));
        if let Some(env) = &config.api_key_env {
            spec = spec.with("api_key_env", env.as_str());
        }
        if let Some(d) = self.dimensions {
            spec = spec.with("dimensions", d.to_string());
        }
        if let Some(d) = self.expected_dimension {
            spec = spec.with("expected_dimension", d.to_string());
        }
        if self.path != "/embeddings" {
            spec = spec.with("path", redact_url(&self.path));
        }
        spec.into()
    }

    /// The vector length; 0 until the first answer for a model of unknown size (see
    /// [`OpenAiEmbedder::detect_dimension`]).
    fn dimension(&self) -> usize {
        self.dimension.load(Ordering::Relaxed)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let ranges = request_ranges(texts, self.max_inputs, self.max_chars);
        let answers =
            futures_util::future::try_join_all(ranges.into_iter().map(|r| self.request(&texts[r])))
                .await?;
        Ok(answers.into_iter().flatten().collect())
    }

    /// A query is embedded as a document is, so many go in one request.
    async fn embed_queries(&self, queries: &[String]) -> Result<Vec<Vec<f32>>> {
        self.embed(queries).await
    }
}

impl fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("model", &self.model)
            .field("path", &redact_url(&self.path))
            .field("dimensions", &self.dimensions)
            .field("dimension", &self.dimension())
            .field("max_inputs", &self.max_inputs)
            .field("max_chars", &self.max_chars)
            .field("usage", &self.usage())
            .field("client", &self.client)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn strings(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn requests_respect_both_limits_and_a_long_text_goes_alone() {
        let texts = strings(&["aaaa", "bb", "cccccccc", "d", "e", "f", "g"]);
        assert_eq!(
            request_ranges(&texts, 3, 6),
            [0..2, 2..3, 3..6, 6..7],
            "8 characters exceed 6 and go alone"
        );
        assert_eq!(request_ranges(&texts, 100, 100), vec![0..7]);
        assert!(request_ranges(&[], 3, 6).is_empty());
        // Characters, not bytes.
        assert_eq!(request_ranges(&strings(&["éé", "éé"]), 10, 4), vec![0..2]);
    }

    proptest! {
        #[test]
        fn request_ranges_cover_the_input_in_order_within_limits(
            lens in proptest::collection::vec(0usize..20, 0..60),
            max_inputs in 1usize..8,
            max_chars in 1usize..40,
        ) {
            let texts: Vec<String> = lens.iter().map(|&n| "x".repeat(n)).collect();
            let ranges = request_ranges(&texts, max_inputs, max_chars);
            let mut next = 0;
            for r in &ranges {
                prop_assert_eq!(r.start, next);
                prop_assert!(r.end > r.start && r.len() <= max_inputs);
                let chars: usize = texts[r.clone()].iter().map(String::len).sum();
                prop_assert!(chars <= max_chars || r.len() == 1);
                next = r.end;
            }
            prop_assert_eq!(next, texts.len());
            // Greedy: no range could have taken the next text too.
            for pair in ranges.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                let chars: usize = texts[a.start..=b.start].iter().map(String::len).sum();
                prop_assert!(a.len() == max_inputs || chars > max_chars);
            }
        }
    }

    fn data(items: &[(Option<usize>, &[f32])]) -> Vec<EmbeddingData> {
        items
            .iter()
            .map(|(index, v)| EmbeddingData {
                index: *index,
                embedding: v.to_vec(),
            })
            .collect()
    }

    fn local(model: &str) -> OpenAiEmbedder {
        OpenAiEmbedder::builder(model)
            .base_url("http://127.0.0.1:1/v1")
            .build()
            .unwrap()
    }

    #[test]
    fn answers_are_put_in_input_order_by_index_and_checked() {
        let e = local("m");
        assert_eq!(e.dimension(), 0);
        let got = e
            .in_input_order(
                data(&[
                    (Some(2), &[3.0, 3.0]),
                    (Some(0), &[1.0, 1.0]),
                    (Some(1), &[2.0, 2.0]),
                ]),
                3,
            )
            .unwrap();
        assert_eq!(got, [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]);
        assert_eq!(e.dimension(), 2, "learned from the first answer");
        let unindexed = e
            .in_input_order(data(&[(None, &[5.0, 5.0]), (None, &[6.0, 6.0])]), 2)
            .unwrap();
        assert_eq!(unindexed, [[5.0, 5.0], [6.0, 6.0]]);
        let err = |items: &[(Option<usize>, &[f32])], n| {
            e.in_input_order(data(items), n).unwrap_err().to_string()
        };
        assert!(err(&[(Some(0), &[1.0, 1.0])], 2).contains("1 vectors in the answer for 2 texts"));
        assert!(err(&[(Some(0), &[1.0, 1.0]), (Some(0), &[1.0, 1.0])], 2)
            .contains("index 0 appears twice"));
        assert!(err(&[(Some(5), &[1.0, 1.0])], 1).contains("index 5 out of range (0..1)"));
        assert!(err(&[(Some(0), &[1.0, 1.0]), (None, &[1.0, 1.0])], 2).contains("only some"));
        assert!(
            err(&[(Some(0), &[1.0, 1.0, 1.0])], 1).contains("vector 0 has dimension 3, expected 2")
        );
        assert!(err(&[(Some(0), &[])], 1).contains("vector 0 is empty"));
        let nan = err(&[(Some(0), &[1.0, 1.0]), (Some(1), &[1.0, f32::NAN])], 2);
        assert!(
            nan.contains("vector 1 of the answer is not finite (component 1 is NaN)")
                && nan.contains("base=http://127.0.0.1:1/v1"),
            "{nan}"
        );
    }

    #[test]
    fn names_identify_model_dimensions_and_server_without_secrets() {
        let e = OpenAiEmbedder::builder("text-embedding-3-large")
            .dimensions(256)
            .api_key(crate::http::ApiKey::new("sk-name-test-secret"))
            .build()
            .unwrap();
        assert_eq!(
            e.name(),
            "openai(model=text-embedding-3-large,dimensions=256,base=https://api.openai.com/v1)"
        );
        assert_eq!(e.dimension(), 256);
        assert_eq!(local("text-embedding-3-large").dimension(), 3072);
        let azure = OpenAiEmbedder::builder("text-embedding-3-small")
            .azure("https://res.openai.azure.com", "emb", "2024-02-01")
            .api_key(crate::http::ApiKey::new("sk-name-test-secret"))
            .build()
            .unwrap();
        assert_eq!(
            azure.name(),
            "openai(model=text-embedding-3-small,base=https://res.openai.azure.com,\
             path=/openai/deployments/emb/embeddings?api-version=2024-02-01)"
        );
        let debug = format!("{e:?} {azure:?}");
        assert!(!debug.contains("sk-name-test-secret"), "{debug}");
        assert!(debug.contains("key_in_use: true"), "{debug}");
        let declared = OpenAiEmbedder::builder("nomic-embed-text")
            .expected_dimension(768)
            .build()
            .unwrap();
        assert_eq!(declared.dimension(), 768);
    }
}
