//! Reranker specs: `cohere:model=…`.

use super::Context;
use crate::error::{Fault, Result};
use crate::rerank::Reranker;
use crate::spec::{builder, Kind, Spec};
use std::sync::Arc;

type Build = fn(&Spec, &Context) -> std::result::Result<Arc<dyn Reranker>, Fault>;

/// The builder of each component of the table in [`crate::spec`], by name.
static BUILDERS: &[(&str, Build)] = &[("cohere", cohere)];

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    BUILDERS.iter().map(|(n, _)| *n).collect()
}

/// Builds the reranker a spec such as `cohere:model=rerank-v3.5` names; its requests are
/// limited as `context` says.
pub fn build_reranker(text: &str, context: &Context) -> Result<Arc<dyn Reranker>> {
    let spec = Spec::parse(Kind::Reranker, text)?;
    reranker_from(&spec, context).map_err(|f| f.in_spec(Kind::Reranker.as_str(), text).into())
}

/// Builds the reranker a parsed spec names.
pub(crate) fn reranker_from(
    spec: &Spec,
    context: &Context,
) -> std::result::Result<Arc<dyn Reranker>, Fault> {
    (builder(Kind::Reranker, BUILDERS, spec.name())?)(spec, context)
        .map_err(|f| f.within(spec.name()))
}

fn cohere(spec: &Spec, context: &Context) -> std::result::Result<Arc<dyn Reranker>, Fault> {
    #[cfg(feature = "cohere")]
    {
        let mut b = crate::rerank::CohereReranker::builder(spec.required("model")?)
            .http(|h| context.http(h));
        if let Some(url) = spec.text("base_url") {
            b = b.base_url(url);
        }
        if let Some(env) = spec.text("api_key_env") {
            b = b.api_key_env(env);
        }
        if let Some(p) = spec.text("path") {
            b = b.path(p);
        }
        Ok(Arc::new(b.build().map_err(Fault::of)?))
    }
    #[cfg(not(feature = "cohere"))]
    {
        let _ = (spec, context);
        unreachable!("`lookup` refuses components whose feature is missing")
    }
}

#[cfg(all(test, feature = "cohere"))]
mod tests {
    use super::*;

    #[test]
    fn cohere_prints_the_spec_that_builds_it() {
        let r = build_reranker(
            "cohere:model=BAAI/bge-reranker-base,base_url=http://127.0.0.1:7997,path=/rerank",
            &Context::new(),
        )
        .unwrap();
        assert_eq!(
            r.spec().to_string(),
            "cohere:model=BAAI/bge-reranker-base,base_url=http://127.0.0.1:7997,api_key_env=COHERE_API_KEY,path=/rerank"
        );
        assert_eq!(
            build_reranker(&r.spec().to_string(), &Context::new())
                .unwrap()
                .spec(),
            r.spec()
        );
    }
}
