//! Component specs: one grammar for every chunker, embedder, store, reranker, retriever and
//! cache, so that a run's configuration is a string that rebuilds its pipeline.
//!
//! This module parses and prints specs and knows every component's name and keys; it builds
//! nothing. Chunkers are built by [`chunker::parse_spec`](crate::chunker::parse_spec), every
//! other component by [`components`](crate::components).
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
//! Every built component gives its spec as a [`Value`] — the `spec()` method of
//! [`PositionAwareChunker`](crate::chunker::PositionAwareChunker),
//! [`Embedder`](crate::embed::Embedder), [`VectorStore`](crate::store::VectorStore),
//! [`Reranker`](crate::rerank::Reranker) and [`Retriever`](crate::retrieve::Retriever) — with
//! every setting explicit, so the printed spec rebuilds the same component. A component that
//! holds others (a dense retriever, a semantic chunker) nests their values as they are:
//! nothing is printed to be parsed back. A component that no spec builds gives its name as
//! [`Value::Text`], printed quoted where it is nested. API keys never
//! appear: a spec names the environment variable that holds one (`api_key_env`).
//!
//! ```
//! use rag_eval::components::{build_retriever, Context};
//! use rag_eval::level::TokenLevel;
//! use rag_eval::retrieve::Retriever;
//!
//! let r = build_retriever(
//!     "dense:chunker=recursive:size=400,embedder=hashing:dim=64,store=memory",
//!     &Context::new(),
//! )?;
//! let printed = Retriever::<TokenLevel>::spec(&*r).to_string();
//! assert_eq!(
//!     printed,
//!     "dense:chunker=recursive(size=400,overlap=0,length=chars,separators=langchain),\
//!      embedder=hashing(dim=64,ngrams=2),store=memory"
//! );
//! let again = build_retriever(&printed, &Context::new())?;
//! assert_eq!(Retriever::<TokenLevel>::spec(&*again).to_string(), printed);
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
//! give it a `spec()` returning its [`Spec`] and a `name()` printing it, and register it
//! twice: its name and keys (for parsing, errors and help) in the `CHUNKERS` table of
//! `src/spec/components.rs`, and the function that builds it from a [`Spec`] in the
//! `BUILDERS` table of `src/chunker/spec.rs`. A test checks that the two tables name the same
//! chunkers in the same order.
//!
//! # Adding a provider (embedder, store, reranker)
//!
//! Write the client in its own file under `src/embed/`, `src/store/` or `src/rerank/` behind a
//! cargo feature named after it, implement `spec()` on its trait, and register it: its name and
//! keys in the table of `src/spec/components.rs` with `feature: Some("name")` and
//! `enabled: cfg!(feature = "name")`, its builder in `src/components/embedder.rs`, `store.rs`
//! or `reranker.rs`. The dense retriever, the CLI and its help pick it up from the tables.

mod components;
mod grammar;
mod registry;

pub use components::{Component, Key, Kind, CHUNKER_NAMES};
pub use grammar::{Spec, Value};
pub(crate) use registry::builder;
pub use registry::{help, help_for};

#[cfg(test)]
mod tests;
