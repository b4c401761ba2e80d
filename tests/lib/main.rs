//! The library's integration tests, one module per subject, in one test binary (cargo's
//! `tests/testsuite` pattern: one link instead of one per file). A module that needs a feature
//! is compiled in when the feature is on, so `cargo test` runs what default features can and
//! `cargo test --all-features` runs all. Run one module with a filter:
//! `cargo test --test lib judges::`.

#[path = "../shared_data/mod.rs"]
mod shared_data;
#[cfg(any(feature = "chroma", feature = "openai"))]
#[path = "../support/mod.rs"]
mod support;

#[cfg(feature = "answers")]
mod answer_metrics;
mod architecture;
mod bundled_data;
mod cache;
mod chroma_mode;
mod chunker_invariants;
mod ci_guide;
#[cfg(feature = "answers")]
mod claims_judge;
#[cfg(feature = "answers")]
mod conversations;
mod docs_pages;
mod errors;
mod eval;
#[cfg(feature = "answers")]
mod judge_requests;
#[cfg(feature = "answers")]
mod judges;
mod langchain_parity;
mod published_figures;
mod retrieve_many;
mod vocabulary;

#[cfg(feature = "compare")]
mod agreement;
#[cfg(feature = "chroma")]
mod chroma;
#[cfg(feature = "compare")]
mod compare;
#[cfg(feature = "synth")]
mod generate;
#[cfg(feature = "synth")]
mod generate_run;
#[cfg(feature = "onnx")]
mod onnx;
#[cfg(all(feature = "openai", feature = "cohere"))]
mod providers;
#[cfg(feature = "compare")]
mod stats;
#[cfg(feature = "trec")]
mod trec_parity;
