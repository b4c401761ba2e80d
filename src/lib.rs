//! # rag-eval
//!
//! Retrieval quality of a RAG system as ordinary `cargo test` results.
//!
//! # A `cargo test` gate
//!
//! The main feature is the harness: [`#[rag_eval]`](macro@rag_eval) on a function that builds
//! a retriever (or is your own async search function, `async fn(&str) -> Vec<RetrievedChunk>`)
//! declares a case over a dataset of questions, and [`main!`] in a test target with
//! `harness = false` runs every case. Each question becomes a named test (`case::q0001`),
//! each case gets a `case::summary` test that checks the `min_…`/`max_…` bars and compares
//! every figure with a golden snapshot in `golden/`, within a tolerance; a figure that drops
//! fails its test, an improvement passes and is reported. [`prelude`] brings the attribute and
//! the types a case needs into scope.
//!
//! ```rust,ignore
//! // tests/rag.rs, with `[[test]] name = "rag"  harness = false` in Cargo.toml
//! use rag_eval::prelude::*;
//!
//! #[rag_eval(dataset = "golden/datasets/handbook.jsonl", corpus = "docs", k = 5,
//!            min_span_recall = 0.6)]
//! fn recursive_400() -> Bm25Retriever {
//!     Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
//! }
//!
//! rag_eval::main!(recursive_400);
//! ```
//!
//! The README's *Gate retrieval quality in `cargo test`* walks through it from an empty crate;
//! [`harness`] documents the trials, snapshots and nextest support. The same evaluations run
//! as library calls ([`eval`]) and from the `rag-eval` command line.
//!
//! # The foundation
//!
//! Every figure depends on two things: chunkers that know exactly where each
//! chunk sits in its document ([`chunker`]), and metrics that agree with the reference
//! implementations to the last digit ([`metrics`]). Offsets are characters (Unicode scalar
//! values), end-exclusive, as Python `str` indices are.
//!
//! Every component — chunker, embedder, store, reranker, retriever, cache — is named by a spec
//! such as `dense:embedder=openai:model=…,store=chroma:url=…,collection=…` ([`spec`]), and
//! prints the spec that rebuilds it, so a run's configuration is one string.
//!
//! # Features
//!
//! - `tiktoken` (default): cl100k_base token counting for `FixedTokenChunker` and token-length
//!   recursive splitting.
//! - `markdown` (default): `MarkdownChunker`.
//! - `cli`: the `rag-eval` command-line tool (with `openai`, `cohere`, `chroma`, `cache` and
//!   `runs`).
//! - `cache`: `cache::Cache`, a SQLite cache of embeddings and LLM responses with record and
//!   replay modes, `cache::CachedEmbedder` and `cache::CachedLlm`.
//! - `runs`: `runs::RunStore` and `runs::SqliteRunStore`, the SQLite store of run records
//!   (`runs::RunRecord` itself needs no feature).
//! - `postgres`: `runs::PostgresRunStore`, the same store in PostgreSQL (implies `runs`).
//! - `chroma`: `store::ChromaStore`, a client of Chroma's HTTP API v2.
//! - `onnx`: `embed::OnnxEmbedder`, sentence-transformers ONNX exports run through
//!   onnxruntime, loaded at run time from `ORT_DYLIB_PATH`.
//! - `openai`: `embed::OpenAiEmbedder` and `llm::OpenAiChat` for OpenAI, Azure OpenAI and
//!   compatible servers (Ollama, vLLM, llama.cpp's server, text-embeddings-inference).
//! - `cohere`: `rerank::CohereReranker` for Cohere's `/v2/rerank` and compatible servers.
//! - `langsmith`: `langsmith::LangSmith`, a client of LangSmith's REST API: datasets pushed and
//!   pulled losslessly, evaluations uploaded as experiments with per-query feedback.
//! - `http` (implied by the remote providers): `http::HttpClient`, the JSON client they share
//!   (bounded concurrency, timeouts, retries with backoff and jitter, `Retry-After`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod answers;
#[cfg(feature = "cache")]
pub mod cache;
mod calendar;
pub mod chunk;
pub mod chunker;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
#[cfg(feature = "compare")]
pub mod compare;
pub mod components;
pub mod corpus;
pub mod dataset;
pub mod digest;
mod doc_id;
pub mod embed;
pub mod error;
mod escape;
pub mod eval;
pub mod fs;
pub mod generator;
pub mod harness;
#[cfg(feature = "http")]
pub mod http;
pub mod judge;
mod junit;
#[cfg(feature = "langsmith")]
pub mod langsmith;
pub mod level;
pub mod llm;
pub mod locate;
pub mod metrics;
#[cfg(feature = "report")]
pub mod report;
pub mod rerank;
pub mod retrieve;
pub mod runs;
#[cfg(feature = "serve")]
pub mod serve;
pub mod span;
pub mod spec;
#[cfg(feature = "compare")]
pub mod stats;
pub mod store;
#[cfg(feature = "synth")]
pub mod synth;
#[cfg(feature = "trec")]
pub mod trec;
mod vector;

pub use error::{Error, Result};

/// The data set that the tests marked `#[ignore = "needs ../shared/data"]` read.
#[cfg(test)]
#[path = "../tests/shared_data/mod.rs"]
mod shared_data;

/// The types most evaluations use, for `use rag_eval::prelude::*;`.
pub mod prelude {
    pub use crate::chunk::{Chunk, ChunkId, PaChunkId, PositionAwareChunk, RetrievedChunk};
    #[cfg(feature = "tiktoken")]
    pub use crate::chunker::FixedTokenChunker;
    #[cfg(feature = "markdown")]
    pub use crate::chunker::MarkdownChunker;
    pub use crate::chunker::{
        Chunker, PositionAdapter, PositionAwareChunker, RecursiveCharacterChunker, SemanticChunker,
    };
    pub use crate::corpus::{Corpus, DocId, Document};
    pub use crate::dataset::{AnyDataset, ChunkDataset, Dataset, Example, TokenDataset};
    pub use crate::embed::{Embedder, HashingEmbedder};
    pub use crate::eval::{
        ChunkLevelEvaluation, Evaluation, EvaluationResult, TokenLevelEvaluation,
    };
    pub use crate::generator::RagAnswer;
    pub use crate::harness::Rag;
    pub use crate::level::{ChunkLevel, Level, TokenLevel};
    pub use crate::metrics::{
        chunk_level_metrics, token_level_metrics, ChunkIndex, Metric, MetricInput, SpanMode,
    };
    pub use crate::rerank::Reranker;
    pub use crate::retrieve::{Bm25Retriever, Pipeline, Retriever};
    pub use crate::span::{CharSpan, SpanSet};
    pub use crate::store::{InMemoryStore, VectorStore};
    pub use rag_eval_macros::rag_eval;
}

pub use rag_eval_macros::{main, rag_eval};

/// What the `#[rag_eval]` and `main!` expansions call. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::harness::private::*;
    pub use insta;
}

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
