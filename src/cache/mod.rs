//! A content-addressed cache of embeddings and LLM responses in one SQLite file.
//!
//! Every entry is found by a [`CacheKey`]: SHA-256 over the provider, the model, the request's
//! parameters as canonical JSON ([`canonical_json`]) and the input. [`CachedEmbedder`] and
//! [`CachedLlm`] key by the model's identity ([`model_identity`]: the name without the server's
//! base URL), so a cache recorded against a server on one port replays against another; an
//! entry not found under it is looked up under the key caches were recorded with before, the
//! whole name with its base URL, so those caches keep replaying. Vectors are stored as
//! little-endian `f32` blobs, responses as JSON text, each with the token usage the provider
//! reported when it was made, so a run can tell what it spent and what the cache saved it.
//!
//! # Modes
//!
//! [`CacheMode`] comes from code or from `RAG_EVAL_CACHE`:
//!
//! | value | behaviour |
//! |---|---|
//! | `rw` (default) | answer from the cache, call the provider on a miss and record the result |
//! | `off` | no file is opened; every request goes to the provider |
//! | `replay` | answer from the cache only; a miss is an error ([`Error::CacheMiss`](crate::Error::CacheMiss)) naming the provider, the model and the input, so an offline CI run cannot silently call out |
//!
//! The file is `RAG_EVAL_CACHE_PATH` if set, else the path given in code, else
//! [`DEFAULT_PATH`] (`target/rag-eval-cache.sqlite`, relative to the current directory, which
//! is the crate root under `cargo test`). For offline CI, record once with `rw` into a file
//! under version control (say `golden/rag-eval-cache.sqlite`), run [`Cache::checkpoint`] or
//! let the last process exit so the file holds everything, commit it, and run CI with
//! `RAG_EVAL_CACHE=replay`.
//!
//! # Concurrency and safety
//!
//! Several processes (test binaries under nextest) may use one file at once: it is kept in WAL
//! mode, waits up to [`BUSY_TIMEOUT`] for a lock, writes with `INSERT OR IGNORE` in short
//! transactions (the first writer of a key wins, so every process reads the same value), and
//! each batch of writes is atomic. A file that is not a SQLite database, belongs to another
//! program or has another schema version is refused with an error naming it. Within a process,
//! one connection is shared behind a mutex; lookups take microseconds, so the async
//! [`CachedEmbedder`] does them inline (a write waiting for another process's lock holds its
//! thread meanwhile).
//!
//! ```
//! use rag_eval::cache::{Cache, CacheMode};
//! use rag_eval::llm::TokenUsage;
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir()?;
//! let cache = Cache::open(dir.path().join("cache.sqlite").to_str().unwrap(), CacheMode::ReadWrite)?;
//! let params = json!({"temperature": 0.0});
//! let input = json!([{"role": "user", "content": "Name a prime."}]);
//! assert!(cache.get_response("openai", "gpt-4o-mini", &params, &input)?.is_none());
//! let usage = TokenUsage { prompt_tokens: 12, completion_tokens: 1 };
//! cache.put_response("openai", "gpt-4o-mini", &params, &input, &json!({"content": "7"}), Some(usage))?;
//! let hit = cache.get_response("openai", "gpt-4o-mini", &params, &input)?.unwrap();
//! assert_eq!(hit.response["content"], "7");
//! assert_eq!(hit.usage, Some(usage));
//! assert_eq!(cache.stats().to_string(), "cache: 1 hit, 1 miss, 13 tokens");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod codec;
mod embedder;
mod key;
mod llm;
mod mode;
mod stats;
mod store;

pub use embedder::CachedEmbedder;
pub use key::{canonical_json, model_identity, CacheKey};
pub use llm::CachedLlm;
pub use mode::{CacheMode, MODE_ENV};
pub use stats::{CacheStats, Price};
pub use store::{
    Cache, CachedResponse, EmbeddingEntry, EntryCounts, BUSY_TIMEOUT, DEFAULT_PATH, PATH_ENV,
    SCHEMA_VERSION,
};

#[cfg(test)]
mod tests;
