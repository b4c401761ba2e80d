//! Embedder specs: `hashing`, `openai:model=…`, `onnx:dir=…`.

use super::Context;
use crate::embed::{Embedder, HashingEmbedder};
use crate::error::{Fault, Result};
use crate::spec::{builder, Kind, Spec};
use std::sync::Arc;

type Build = fn(&Spec, &Context) -> std::result::Result<Arc<dyn Embedder>, Fault>;

/// The builder of each component of the table in [`crate::spec`], by name.
static BUILDERS: &[(&str, Build)] = &[("hashing", hashing), ("openai", openai), ("onnx", onnx)];

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    BUILDERS.iter().map(|(n, _)| *n).collect()
}

/// Builds the embedder a spec such as `openai:model=text-embedding-3-small` names, wrapped in
/// the context's cache when there is one (see [`Context`]).
pub fn build_embedder(text: &str, context: &Context) -> Result<Arc<dyn Embedder>> {
    let spec = Spec::parse(Kind::Embedder, text)?;
    embedder_from(&spec, context).map_err(|f| f.in_spec(Kind::Embedder.as_str(), text).into())
}

/// Builds the embedder a parsed spec names.
pub(crate) fn embedder_from(
    spec: &Spec,
    context: &Context,
) -> std::result::Result<Arc<dyn Embedder>, Fault> {
    let embedder = (builder(Kind::Embedder, BUILDERS, spec.name())?)(spec, context)
        .map_err(|f| f.within(spec.name()))?;
    // Hashing computes a vector faster than the cache could look one up.
    if spec.name() == "hashing" || !context.caches() {
        return Ok(embedder);
    }
    Ok(context.cached(embedder))
}

fn hashing(spec: &Spec, _: &Context) -> std::result::Result<Arc<dyn Embedder>, Fault> {
    Ok(Arc::new(HashingEmbedder::from_spec(spec)?))
}

fn openai(spec: &Spec, context: &Context) -> std::result::Result<Arc<dyn Embedder>, Fault> {
    #[cfg(feature = "openai")]
    {
        let mut b = crate::embed::OpenAiEmbedder::builder(spec.required("model")?)
            .http(|h| context.http(h));
        if let Some(url) = spec.text("base_url") {
            b = b.base_url(url);
        }
        if let Some(env) = spec.text("api_key_env") {
            b = b.api_key_env(env);
        }
        if let Some(d) = spec.whole("dimensions")? {
            b = b.dimensions(d);
        }
        if let Some(d) = spec.whole("expected_dimension")? {
            b = b.expected_dimension(d);
        }
        if let Some(p) = spec.text("path") {
            b = b.path(p);
        }
        Ok(Arc::new(b.build().map_err(Fault::of)?))
    }
    #[cfg(not(feature = "openai"))]
    {
        let _ = (spec, context);
        unreachable!("`lookup` refuses components whose feature is missing")
    }
}

fn onnx(spec: &Spec, _: &Context) -> std::result::Result<Arc<dyn Embedder>, Fault> {
    #[cfg(feature = "onnx")]
    {
        let mut config = crate::embed::OnnxConfig::new();
        if let Some(n) = spec.whole("max_len")? {
            config = config.max_len(n);
        }
        if let Some(n) = spec.whole("batch_size")? {
            config = config.batch_size(n);
        }
        let e = crate::embed::OnnxEmbedder::with_config(spec.required("dir")?, config)
            .map_err(Fault::of)?;
        Ok(Arc::new(e))
    }
    #[cfg(not(feature = "onnx"))]
    {
        let _ = spec;
        unreachable!("`lookup` refuses components whose feature is missing")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashing_prints_the_spec_that_builds_it() {
        let c = Context::new();
        for text in ["hashing", "hashing:dim=64", "hashing:ngrams=1,dim=16"] {
            let e = build_embedder(text, &c).unwrap();
            let again = build_embedder(&e.spec().to_string(), &c).unwrap();
            assert_eq!(again.spec(), e.spec());
            assert_eq!(again.name(), e.name());
        }
        assert_eq!(
            build_embedder("hashing:ngrams=1,dim=16", &c)
                .unwrap()
                .spec()
                .to_string(),
            "hashing:dim=16,ngrams=1"
        );
        let err = build_embedder("hashing:dim=0", &c)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("`hashing`: `dim` must be at least 1"), "{err}");
    }

    #[cfg(feature = "openai")]
    #[test]
    fn openai_specs_carry_the_key_s_variable_never_the_key() {
        let c = Context::new();
        let e = build_embedder(
            "openai:model=nomic-embed-text,base_url=http://127.0.0.1:11434/v1?api_key=pw,api_key_env=MY_KEY,dimensions=64",
            &c,
        )
        .unwrap();
        assert_eq!(
            e.spec().to_string(),
            "openai:model=nomic-embed-text,base_url=http://127.0.0.1:11434/v1?api_key=%3Credacted%3E,api_key_env=MY_KEY,dimensions=64"
        );
        assert_eq!(
            build_embedder(&e.spec().to_string(), &c).unwrap().spec(),
            e.spec()
        );
        let err = build_embedder("openai:base_url=http://h", &c)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("`openai`: `model` is required"), "{err}");
    }

    #[cfg(all(feature = "openai", feature = "cache"))]
    #[test]
    fn a_cached_embedder_of_unknown_length_builds_and_a_declared_length_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let cache = crate::cache::Cache::open(
            dir.path().join("c.sqlite").to_str().unwrap(),
            crate::cache::CacheMode::ReadWrite,
        )
        .unwrap();
        let c = Context::new().with_cache(Arc::new(cache));
        let unknown = build_embedder("openai:model=m,base_url=http://127.0.0.1:9/v1", &c).unwrap();
        assert_eq!(unknown.dimension(), 0, "not known before the first answer");
        let e = build_embedder(
            "openai:model=m,base_url=http://127.0.0.1:9/v1,expected_dimension=8",
            &c,
        )
        .unwrap();
        assert_eq!(e.dimension(), 8);
        assert_eq!(
            e.spec().to_string(),
            "openai:model=m,base_url=http://127.0.0.1:9/v1,api_key_env=OPENAI_API_KEY,expected_dimension=8"
        );
        // A model whose length the crate knows needs nothing more.
        assert!(build_embedder("openai:model=text-embedding-3-small", &c).is_ok());
    }

    #[cfg(not(feature = "openai"))]
    #[test]
    fn a_component_without_its_feature_says_which_to_enable() {
        let err = build_embedder("openai:model=m", &Context::new())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("the `openai` embedder needs the `openai` feature (build rag-eval with `--features openai`)"),
            "{err}"
        );
    }
}
