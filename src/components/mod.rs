//! Building any component from its spec: embedders, vector stores, rerankers, retrievers, the
//! cache and RAG systems evaluated whole (`http`, feature `service`). Chunkers are built by [`chunker::parse_spec`](crate::chunker::parse_spec); the
//! grammar, the names and the keys are [`spec`](crate::spec)'s.
//!
//! ```
//! use rag_eval::components::{build_retriever, Context};
//! use rag_eval::level::TokenLevel;
//! use rag_eval::retrieve::Retriever;
//!
//! let r = build_retriever("dense:chunker=recursive:size=400,embedder=hashing:dim=64", &Context::new())?;
//! let printed = Retriever::<TokenLevel>::spec(&*r).to_string();
//! let again = build_retriever(&printed, &Context::new())?;
//! assert_eq!(Retriever::<TokenLevel>::spec(&*again).to_string(), printed);
//! # Ok::<(), rag_eval::Error>(())
//! ```

mod cache;
mod context;
mod embedder;
#[cfg(feature = "service")]
mod rag;
mod reranker;
mod retriever;
mod store;

#[cfg(feature = "cache")]
pub use cache::{cache_spec, open_cache};
pub use context::Context;
pub use embedder::build_embedder;
#[cfg(feature = "cli")]
pub(crate) use embedder::embedder_from;
#[cfg(feature = "service")]
pub use rag::build_rag;
pub use reranker::build_reranker;
#[cfg(feature = "cli")]
pub(crate) use retriever::build_parsed_retriever;
pub use retriever::{build_retriever, AnyLevelRetriever};
pub use store::build_store;

#[cfg(test)]
mod tests {
    use crate::spec::Kind;

    /// Every component of the grammar's tables has its builder here, and nothing else does.
    #[test]
    fn every_component_has_a_builder() {
        for (kind, built) in [
            (Kind::Embedder, super::embedder::names()),
            (Kind::Store, super::store::names()),
            (Kind::Reranker, super::reranker::names()),
            (Kind::Retriever, super::retriever::names()),
        ] {
            let listed: Vec<&str> = kind.components().iter().map(|c| c.name).collect();
            assert_eq!(built, listed, "{kind}");
        }
    }
}
