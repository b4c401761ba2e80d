//! RAG system specs: `http:url=…`.

use super::Context;
use crate::error::Result;
use crate::service::HttpRag;

/// Builds the system a spec such as `http:url=http://127.0.0.1:8000/ask` names, recording and
/// replaying its responses in the context's cache when it has one. The context's
/// [limit](Context::with_limit) bounds each question when it is shorter than the spec's
/// `timeout`.
///
/// ```
/// use rag_eval::components::{build_rag, Context};
/// let rag = build_rag("http:url=http://127.0.0.1:8000/ask,contexts=/sources", &Context::new())?;
/// assert!(rag.spec().starts_with("http:url=http://127.0.0.1:8000/ask,answer=/answer,contexts=/sources,"));
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub fn build_rag(text: &str, context: &Context) -> Result<HttpRag> {
    let rag = HttpRag::from_spec_within(text, context.limit())?;
    Ok(match context.cache() {
        Some(cache) => rag.with_cache(cache.clone()),
        None => rag,
    })
}
