//! # rag-eval
//!
//! Retrieval quality of a RAG system as ordinary `cargo test` results.
//!
//! The foundation is two things every figure depends on: chunkers that know exactly where each
//! chunk sits in its document ([`chunker`]), and metrics that agree with the reference
//! implementations to the last digit ([`metrics`]). Offsets are characters (Unicode scalar
//! values), end-exclusive, as Python `str` indices are.
//!
//! # Features
//!
//! - `tiktoken` (default): cl100k_base token counting for `FixedTokenChunker` and token-length
//!   recursive splitting.
//! - `markdown` (default): `MarkdownChunker`.
//! - `cli`: the `rag-eval` command-line tool.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod chunk;
pub mod chunker;
pub mod corpus;
pub mod dataset;
pub mod embed;
pub mod error;
pub mod eval;
pub mod level;
pub mod metrics;
pub mod rerank;
pub mod retrieve;
pub mod span;
pub mod store;
pub mod trec;

pub use error::{Error, Result};

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
