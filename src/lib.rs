//! # rag-eval
//!
//! Evaluate a RAG system — what it retrieves and what it answers — as ordinary `cargo test`
//! results, and keep every run so the next change is compared with the last.
//!
//! # A `cargo test` gate
//!
//! The main feature is the harness: [`#[rag_eval]`](macro@rag_eval) on a function declares a
//! case over a dataset of questions, and [`main!`] in a test target with `harness = false`
//! runs every case. The function builds a retriever, is your own async search function
//! (`async fn(&str) -> Vec<RetrievedChunk>`), answers a question (`async fn(&str) ->
//! RagAnswer`), or returns a retriever and a generator ([`harness::Rag`]). Each question
//! becomes a named test (`case::q0001`), each case gets a `case::summary` test that checks the
//! `min_…`/`max_…` bars and compares every figure with a golden snapshot in `golden/`, within
//! a tolerance; a figure that drops fails its test, an improvement passes and is reported.
//! [`prelude`] brings the attribute and the types a case needs into scope. With
//! `[[test]] name = "rag"  harness = false` in Cargo.toml:
//!
//! ```rust,ignore
//! // tests/rag.rs
//! use rag_eval::prelude::*;
//!
//! #[rag_eval(dataset = "golden/datasets/handbook.jsonl", corpus = "docs", k = 5,
//!            min_span_recall = 0.6, min_mrr = 0.5)]
//! fn recursive_400() -> Bm25Retriever {
//!     Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
//! }
//!
//! rag_eval::main!(recursive_400);
//! ```
//!
//! [`guide::gate`] walks through it from an empty crate; [`harness`] documents the trials,
//! snapshots and nextest support. The same evaluations run as library calls ([`eval`],
//! [`guide::library`]) and from the `rag-eval` command line ([`reference::commands`]).
//!
//! # Answers, runs and comparisons
//!
//! Answers are scored against the dataset's reference answers ([`metrics`]: BLEU, chrF,
//! ROUGE, exact match, token F1, embedding similarity) and by LLM judges ([`judge`]), from the
//! harness, [`answers`] files or the command line ([`guide::answers`]). Every run can be kept
//! as a [`runs::RunRecord`] in a run store and compared with another by paired tests
//! ([`compare`], [`stats`]), rendered by [`report`] and served over HTTP by `rag-eval serve`
//! ([`guide::runs`]).
//!
//! # The foundation
//!
//! Every figure depends on two things: chunkers that know exactly where each
//! chunk sits in its document ([`chunker`]), and metrics that agree with the reference
//! implementations to the last digit ([`metrics`], [`reference::metrics`]). Offsets are
//! characters (Unicode scalar values), end-exclusive, as Python `str` indices are.
//!
//! Every component — chunker, embedder, store, reranker, retriever, cache — is named by a spec
//! such as `dense:embedder=openai:model=…,store=chroma:url=…,collection=…` ([`spec`]), and
//! prints the spec that rebuilds it, so a run's configuration is one string.
//!
//! # Guides and reference
//!
//! [`guide`] holds the guides and [`reference`](mod@reference) the command reference, the command-line help,
//! the metric table and the features; both are the Markdown files of the repository's `docs/`
//! folder, and their Rust examples are compiled and run as tests.
//!
#![doc = include_str!("../docs/reference/features.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "compare")]
pub mod align;
#[cfg(feature = "answers")]
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
#[cfg(feature = "answers")]
pub mod conversation;
pub mod corpus;
pub mod dataset;
pub mod digest;
mod doc_id;
pub mod embed;
mod error;
mod escape;
pub mod eval;
mod fs;
#[cfg(feature = "answers")]
pub mod generator;
pub mod harness;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "answers")]
pub mod judge;
mod junit;
#[cfg(feature = "langsmith")]
pub mod langsmith;
pub mod level;
#[cfg(feature = "answers")]
pub mod llm;
pub mod locate;
#[cfg(any(feature = "serve", feature = "traces"))]
mod loopback;
pub mod metrics;
mod redact;
#[cfg(feature = "report")]
pub mod report;
pub mod rerank;
pub mod retrieve;
pub mod runs;
mod runtime;
#[cfg(feature = "serve")]
pub mod serve;
#[cfg(feature = "service")]
pub mod service;
pub mod span;
pub mod spec;
#[cfg(feature = "compare")]
pub mod stats;
pub mod store;
#[cfg(feature = "synth")]
pub mod synth;
#[cfg(feature = "traces")]
pub mod traces;
#[cfg(feature = "trec")]
pub mod trec;
mod vector;

pub use error::{
    ChunkTextError, DatasetError, EmbedError, Error, EvaluationError, Fault, LangSmithError,
    ReportError, Result, RunRecordError, SettingError, SpecError,
};

/// The data set that the tests marked `#[ignore = "needs ../shared/data"]` read.
#[cfg(test)]
#[path = "../tests/shared_data/mod.rs"]
mod shared_data;

/// The types most evaluations use, for `use rag_eval::prelude::*;`.
pub mod prelude {
    pub use crate::chunk::{
        Chunk, ChunkId, PositionAwareChunk, PositionAwareChunkId, RetrievedChunk,
    };
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
    #[cfg(feature = "answers")]
    pub use crate::generator::RagAnswer;
    #[cfg(feature = "answers")]
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

/// The guides: the Markdown of `docs/guide/`, whose Rust examples are compiled and run as
/// doctests.
#[cfg(any(doc, doctest))]
pub mod guide {
    #[doc = include_str!("../docs/guide/gate.md")]
    pub mod gate {}
    #[doc = include_str!("../docs/guide/answers.md")]
    pub mod answers {}
    #[doc = include_str!("../docs/guide/service.md")]
    pub mod service {}
    #[doc = include_str!("../docs/guide/conversations.md")]
    pub mod conversations {}
    #[doc = include_str!("../docs/guide/runs.md")]
    pub mod runs {}
    #[doc = include_str!("../docs/guide/library.md")]
    pub mod library {}
    #[doc = include_str!("../docs/guide/datasets.md")]
    pub mod datasets {}
    #[doc = include_str!("../docs/guide/langsmith.md")]
    pub mod langsmith {}
    #[doc = include_str!("../docs/guide/ci.md")]
    pub mod ci {}
}

/// The reference: the Markdown of `docs/reference/`. `cli` is the `--help` of every command,
/// regenerated and compared by `tests/cli/cli.rs`.
#[cfg(any(doc, doctest))]
pub mod reference {
    #[doc = include_str!("../docs/reference/commands.md")]
    pub mod commands {}
    #[doc = include_str!("../docs/reference/cli.md")]
    pub mod cli {}
    #[doc = include_str!("../docs/reference/metrics.md")]
    pub mod metrics {}
    #[doc = include_str!("../docs/reference/features.md")]
    pub mod features {}
    #[doc = include_str!("../docs/reference/conversations.md")]
    pub mod conversations {}
    #[cfg(feature = "traces")]
    #[doc = include_str!("../docs/reference/traces.md")]
    pub mod traces {}
}

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
