//! Vector store specs: `memory`, `chroma:url=…,collection=…`.

use super::Context;
use crate::error::{Fault, Result};
use crate::spec::{builder, Kind, Spec};
use crate::store::{InMemoryStore, VectorStore};
use std::sync::Arc;

type Build = fn(&Spec, &Context) -> std::result::Result<Arc<dyn VectorStore>, Fault>;

/// The builder of each component of the table in [`crate::spec`], by name.
static BUILDERS: &[(&str, Build)] = &[("memory", memory), ("chroma", chroma)];

#[cfg(test)]
pub(super) fn names() -> Vec<&'static str> {
    BUILDERS.iter().map(|(n, _)| *n).collect()
}

/// Builds the vector store a spec such as `chroma:url=http://127.0.0.1:8000,collection=docs`
/// names; its requests are limited as `context` says.
pub fn build_store(text: &str, context: &Context) -> Result<Arc<dyn VectorStore>> {
    let spec = Spec::parse(Kind::Store, text)?;
    store_from(&spec, context).map_err(|f| f.in_spec(Kind::Store.as_str(), text).into())
}

/// Builds the store a parsed spec names.
pub(crate) fn store_from(
    spec: &Spec,
    context: &Context,
) -> std::result::Result<Arc<dyn VectorStore>, Fault> {
    (builder(Kind::Store, BUILDERS, spec.name())?)(spec, context).map_err(|f| f.within(spec.name()))
}

fn memory(_: &Spec, _: &Context) -> std::result::Result<Arc<dyn VectorStore>, Fault> {
    Ok(Arc::new(InMemoryStore::new()))
}

fn chroma(spec: &Spec, context: &Context) -> std::result::Result<Arc<dyn VectorStore>, Fault> {
    #[cfg(feature = "chroma")]
    {
        let e = Fault::of;
        let http = context.http(crate::http::HttpConfig::new(spec.required("url")?));
        let mut s =
            crate::store::ChromaStore::with_http(http, spec.required("collection")?).map_err(e)?;
        if let Some(t) = spec.text("tenant") {
            s = s.with_tenant(t).map_err(e)?;
        }
        if let Some(d) = spec.text("database") {
            s = s.with_database(d).map_err(e)?;
        }
        Ok(Arc::new(s))
    }
    #[cfg(not(feature = "chroma"))]
    {
        let _ = (spec, context);
        unreachable!("`lookup` refuses components whose feature is missing")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_print_the_spec_that_builds_them() {
        let c = Context::new();
        assert_eq!(
            build_store("memory", &c).unwrap().spec().to_string(),
            "memory"
        );
        let err = build_store("memory:dim=3", &c).err().unwrap().to_string();
        assert!(
            err.contains("unknown key `dim` for `memory`; keys: none"),
            "{err}"
        );
    }

    #[cfg(feature = "chroma")]
    #[test]
    fn chroma_specs_keep_urls_whole() {
        let c = Context::new();
        let s = build_store(
            "chroma:url=http://127.0.0.1:8000/api/v2,collection=docs,database=docs_db",
            &c,
        )
        .unwrap();
        assert_eq!(
            s.spec().to_string(),
            "chroma:url=http://127.0.0.1:8000,collection=docs,tenant=default_tenant,database=docs_db"
        );
        assert_eq!(
            build_store(&s.spec().to_string(), &c).unwrap().spec(),
            s.spec()
        );
        let err = build_store("chroma:url=http://h:1", &c)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("`chroma`: `collection` is required"), "{err}");
        let err = build_store("chroma:url=http://h:1,collection=a", &c)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("invalid configuration: store spec `chroma:url=http://h:1,collection=a`: `chroma`: chroma store: collection name must have"),
            "{err}"
        );
    }
}
