//! Component specs: one grammar for every chunker, embedder, store, reranker, retriever and
//! cache, so that a run's configuration is a string that rebuilds its pipeline.
//!
//! # Grammar
//!
//! A spec is `name[:key=value,...]`. A value is text (numbers, names, URLs and paths with `:`
//! and `/` need no quoting; text holding `,`, `(`, `)` or `"` is written `"..."` with `\"` and
//! `\\` escapes) or, for the keys that take one, another component. A nested component is
//! written in one of three ways, all meaning the same:
//!
//! - `dense:embedder=openai(model=m,base_url=http://h:1/v1),store=memory` (the printed form);
//! - `dense:embedder=(openai:model=m,base_url=http://h:1/v1),store=memory`;
//! - `dense:embedder=openai:model=m,base_url=http://h:1/v1,store=memory`: without brackets, a
//!   key the outer component has (`store`) goes back to it, and any other key (`base_url`)
//!   belongs to the nested component before it.
//!
//! Printing ([`Spec`]'s `Display`) gives the canonical form: keys in the component's order,
//! nested components as `name(key=value,...)`, so print → parse → print is a fixed point.
//! Every built component prints its spec — a chunker's `name()`, and the `spec()` method of
//! [`Embedder`](crate::embed::Embedder), [`VectorStore`](crate::store::VectorStore),
//! [`Reranker`](crate::rerank::Reranker) and [`Retriever`](crate::retrieve::Retriever) — with
//! every setting explicit, so the printed spec rebuilds the same component. API keys never
//! appear: a spec names the environment variable that holds one (`api_key_env`).
//!
//! ```
//! use rag_eval::spec::{build_retriever, Context};
//! use rag_eval::level::TokenLevel;
//! use rag_eval::retrieve::Retriever;
//!
//! let r = build_retriever(
//!     "dense:chunker=recursive:size=400,embedder=hashing:dim=64,store=memory",
//!     &Context::new(),
//! )?;
//! let printed = Retriever::<TokenLevel>::spec(&*r);
//! assert_eq!(
//!     printed,
//!     "dense:chunker=recursive(size=400,overlap=0,length=chars,separators=langchain),\
//!      embedder=hashing(dim=64,ngrams=2),store=memory"
//! );
//! let again = build_retriever(&printed, &Context::new())?;
//! assert_eq!(Retriever::<TokenLevel>::spec(&*again), printed);
//!
//! let err = build_retriever("dense:embeder=hashing", &Context::new()).err().unwrap();
//! assert!(err.to_string().contains(
//!     "unknown key `embeder` for `dense` (did you mean `embedder`?); keys: chunker, embedder, store, reranker, candidates"
//! ));
//! # Ok::<(), rag_eval::Error>(())
//! ```
//!
//! A component whose cargo feature is not compiled in still parses; building it fails with a
//! message naming the feature to enable. [`help`] lists every component and its keys from the
//! same tables the parser reads (the CLI's `eval --help` prints it).
//!
//! # Adding a chunker
//!
//! Write the chunker in its own file under `src/chunker/` (re-exported from `chunker/mod.rs`),
//! make its `name()` print its spec, and register it with one entry in the `CHUNKERS` table of
//! `src/spec/chunker.rs`: its name, its keys (for parsing, errors and help) and the function
//! that builds it from a [`Spec`]. Nothing else lists chunkers.
//!
//! # Adding a provider (embedder, store, reranker)
//!
//! Write the client in its own file under `src/embed/`, `src/store/` or `src/rerank/` behind a
//! cargo feature named after it, implement `spec()` on its trait, and register it with one
//! entry in the table of `src/spec/embedder.rs`, `store.rs` or `reranker.rs`, with
//! `feature: Some("name")` and `enabled: cfg!(feature = "name")`. The dense retriever, the
//! CLI and its help pick it up from the table.

mod cache;
mod chunker;
mod context;
mod embedder;
mod grammar;
mod registry;
mod reranker;
mod retriever;
mod store;

#[cfg(feature = "cache")]
pub use cache::{cache_spec, open_cache};
pub use chunker::{build_chunker, CHUNKER_NAMES};
pub use context::Context;
pub use embedder::build_embedder;
pub use grammar::{Spec, Value};
pub use registry::{help, help_for, Component, Key, Kind};
pub use reranker::build_reranker;
pub use retriever::{build_retriever, AnyLevelRetriever};
pub use store::build_store;

#[cfg(test)]
mod tests;
