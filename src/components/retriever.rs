//! Retriever specs: `bm25[:k1=…,b=…]`, `dense:embedder=…,store=…,reranker=…`.
//!
//! A retriever's chunker is its `chunker` key, or, when the spec has none, the chunker of the
//! [`Context`]: that is how one `--retriever` spec runs over every `--chunker` of the CLI. A
//! built retriever prints its chunker either way, so its spec rebuilds it alone.

use super::Context;
use crate::chunker::PositionAwareChunker;
use crate::error::{Fault, Result};
use crate::level::{ChunkLevel, TokenLevel};
use crate::retrieve::{Bm25Retriever, Pipeline, Retriever};
use crate::spec::{builder, Kind, Spec};
use std::sync::Arc;

/// A retriever usable at both levels, as the built-ins are.
pub trait AnyLevelRetriever: Retriever<TokenLevel> + Retriever<ChunkLevel> {}
impl<T: Retriever<TokenLevel> + Retriever<ChunkLevel> + ?Sized> AnyLevelRetriever for T {}

type Build = fn(&Spec, &Context) -> std::result::Result<Box<dyn AnyLevelRetriever>, Fault>;

/// The builder of each component of the table in [`crate::spec`], by name.
static BUILDERS: &[(&str, Build)] = &[("bm25", bm25), ("dense", dense)];

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    BUILDERS.iter().map(|(n, _)| *n).collect()
}

/// Builds the retriever a spec such as
/// `dense:embedder=openai:model=text-embedding-3-small,store=memory` names, with the
/// context's chunker when the spec has no `chunker` key.
///
/// ```
/// use rag_eval::components::{build_retriever, Context};
/// use rag_eval::level::TokenLevel;
/// use rag_eval::retrieve::Retriever;
///
/// let r = build_retriever("bm25:chunker=recursive(size=400),b=0.5", &Context::new())?;
/// assert_eq!(
///     Retriever::<TokenLevel>::spec(&*r).to_string(),
///     "bm25:chunker=recursive(size=400,overlap=0,length=chars,separators=langchain),k1=1.2,b=0.5"
/// );
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub fn build_retriever(text: &str, context: &Context) -> Result<Box<dyn AnyLevelRetriever>> {
    build_parsed_retriever(&Spec::parse(Kind::Retriever, text)?, text, context)
}

/// [`build_retriever`] for a spec already parsed from `text` (which errors quote).
pub(crate) fn build_parsed_retriever(
    spec: &Spec,
    text: &str,
    context: &Context,
) -> Result<Box<dyn AnyLevelRetriever>> {
    retriever_from(spec, context).map_err(|f| f.in_spec(Kind::Retriever.as_str(), text).into())
}

/// Builds the retriever a parsed spec names.
pub(crate) fn retriever_from(
    spec: &Spec,
    context: &Context,
) -> std::result::Result<Box<dyn AnyLevelRetriever>, Fault> {
    (builder(Kind::Retriever, BUILDERS, spec.name())?)(spec, context)
}

fn chunker(
    spec: &Spec,
    context: &Context,
) -> std::result::Result<Arc<dyn PositionAwareChunker>, Fault> {
    match (spec.nested("chunker"), context.chunker()) {
        (Some(_), Some(_)) => Err(Fault::key(
            "chunker",
            "the spec names a chunker and one was given besides (e.g. --chunker): give one",
        )),
        (Some(c), None) => Ok(crate::chunker::chunker_from(c)
            .map_err(|f| f.within("chunker"))?
            .into()),
        (None, Some(c)) => Ok(Arc::clone(c)),
        (None, None) => Err(Fault::key(
            "chunker",
            "no chunker: give the `chunker` key (or --chunker)",
        )),
    }
}

fn bm25(spec: &Spec, context: &Context) -> std::result::Result<Box<dyn AnyLevelRetriever>, Fault> {
    let k1 = spec
        .number("k1")?
        .unwrap_or(f64::from(Bm25Retriever::DEFAULT_K1));
    let b = spec
        .number("b")?
        .unwrap_or(f64::from(Bm25Retriever::DEFAULT_B));
    if k1 < 0.0 {
        return Err(Fault::key(
            "k1",
            format!("`k1` must be at least 0, got `{k1}`"),
        ));
    }
    if !(0.0..=1.0).contains(&b) {
        return Err(Fault::key("b", format!("`b` must be in [0, 1], got `{b}`")));
    }
    Ok(Box::new(
        Bm25Retriever::from_arc(chunker(spec, context)?).with_params(k1 as f32, b as f32),
    ))
}

fn dense(spec: &Spec, context: &Context) -> std::result::Result<Box<dyn AnyLevelRetriever>, Fault> {
    let embedder = match spec.nested("embedder") {
        Some(e) => super::embedder::embedder_from(e, context).map_err(|f| f.within("embedder"))?,
        None => Arc::new(crate::embed::HashingEmbedder::default()),
    };
    let mut p = Pipeline::from_arc(chunker(spec, context)?, embedder);
    if let Some(s) = spec.nested("store") {
        p = p.with_store(super::store::store_from(s, context).map_err(|f| f.within("store"))?);
    }
    if let Some(r) = spec.nested("reranker") {
        p = p.with_reranker(
            super::reranker::reranker_from(r, context).map_err(|f| f.within("reranker"))?,
        );
    }
    match spec.whole("candidates")? {
        Some(0) => return Err(Fault::key("candidates", "`candidates` must be at least 1")),
        Some(n) => p = p.with_candidates(n),
        None => {}
    }
    Ok(Box::new(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunker::RecursiveCharacterChunker;

    fn spec(r: &dyn AnyLevelRetriever) -> String {
        Retriever::<TokenLevel>::spec(r).to_string()
    }

    #[test]
    fn retrievers_print_the_spec_that_rebuilds_them() {
        let c = Context::new().with_chunker(Arc::new(RecursiveCharacterChunker::new(300, 0)));
        let chunker = "recursive(size=300,overlap=0,length=chars,separators=langchain)";
        for (text, printed) in [
            ("bm25", format!("bm25:chunker={chunker},k1=1.2,b=0.75")),
            (
                "bm25:b=0.5,k1=2",
                format!("bm25:chunker={chunker},k1=2,b=0.5"),
            ),
            (
                "dense",
                format!("dense:chunker={chunker},embedder=hashing(dim=384,ngrams=2),store=memory"),
            ),
            (
                "dense:embedder=hashing:dim=64,store=memory",
                format!("dense:chunker={chunker},embedder=hashing(dim=64,ngrams=2),store=memory"),
            ),
        ] {
            let r = build_retriever(text, &c).unwrap();
            assert_eq!(spec(&*r), printed, "{text}");
            let again = build_retriever(&printed, &Context::new()).unwrap();
            assert_eq!(spec(&*again), printed);
            assert_eq!(
                Spec::parse(Kind::Retriever, &printed).unwrap().to_string(),
                printed
            );
        }
    }

    proptest::proptest! {
        /// Built from any valid settings, a retriever's printed spec builds a retriever that
        /// prints the same spec, and the canonical print of that spec is the spec itself.
        #[test]
        fn printed_specs_rebuild_the_same_retriever(
            size in 1usize..2000,
            overlap_part in 0usize..100,
            k1 in 0.0f32..3.0,
            b in 0.0f32..=1.0,
            dim in 1usize..1024,
            ngrams in 1usize..4,
            dense in proptest::bool::ANY,
            separators in proptest::sample::select(vec!["langchain", "chroma"]),
        ) {
            let overlap = size * overlap_part / 100;
            let chunker = format!("recursive:size={size},overlap={overlap},separators={separators}");
            let text = if dense {
                format!("dense:chunker=({chunker}),embedder=hashing:dim={dim},ngrams={ngrams}")
            } else {
                format!("bm25:chunker=({chunker}),k1={k1},b={b}")
            };
            let built = build_retriever(&text, &Context::new()).unwrap();
            let printed = spec(&*built);
            let rebuilt = build_retriever(&printed, &Context::new()).unwrap();
            proptest::prop_assert_eq!(spec(&*rebuilt), printed.clone());
            proptest::prop_assert_eq!(
                Spec::parse(Kind::Retriever, &printed).unwrap().to_string(),
                printed.clone()
            );
            if !dense {
                proptest::prop_assert!(printed.ends_with(&format!(",k1={k1},b={b}")), "{}", printed);
            }
        }
    }

    #[test]
    fn errors_name_the_component_and_the_key() {
        let c = Context::new().with_chunker(Arc::new(RecursiveCharacterChunker::new(300, 0)));
        let e = |text: &str| build_retriever(text, &c).err().unwrap().to_string();
        assert_eq!(
            e("sparse"),
            "invalid configuration: retriever spec `sparse`: unknown retriever `sparse`; known: bm25, dense"
        );
        assert!(e("bm25:k=1")
            .contains("unknown key `k` for `bm25` (did you mean `b`?); keys: chunker, k1, b"));
        assert!(e("bm25:k1=x").contains("`k1` must be a number, got `x`"));
        assert!(e("bm25:b=2").contains("`b` must be in [0, 1]"));
        assert!(e("dense:embedder=hashing,stor=memory")
            .contains("unknown key `stor` for `dense` (did you mean `store`?)"));
        // Unbracketed, a misspelt key of the outer component reaches the nested one first.
        assert!(e("dense:embedder=hashing:dim=8,stor=memory").contains(
            "`embedder`: unknown key `stor` for `hashing` (did you mean `store` of `dense`?); keys: dim, ngrams"
        ));
        assert!(e("dense:embedder=hashin").contains("`embedder`: unknown embedder `hashin` (did you mean `hashing`?); known: hashing, openai, onnx"));
        assert!(e("dense:chunker=recursive(size=10)").contains("give one"));
        let none = build_retriever("bm25", &Context::new())
            .err()
            .unwrap()
            .to_string();
        assert!(none.contains("no chunker"), "{none}");
    }
}
