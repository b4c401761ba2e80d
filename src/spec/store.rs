//! Vector store specs: `memory`, `chroma:url=…,collection=…`.

use super::grammar::Spec;
#[allow(unused_imports)] // the providers behind features use it
use super::registry::message;
use super::registry::{lookup, Component, Key, Kind, Registered};
use crate::error::{Error, Result};
use crate::store::{InMemoryStore, VectorStore};
use std::sync::Arc;

type Build = fn(&Spec) -> std::result::Result<Arc<dyn VectorStore>, String>;

/// The vector stores, one entry each.
pub(crate) static STORES: &[Registered<Build>] = &[
    Registered {
        info: Component {
            kind: Kind::Store,
            name: "memory",
            about: "exact cosine search in memory",
            feature: None,
            enabled: true,
            keys: &[],
        },
        build: memory,
    },
    Registered {
        info: Component {
            kind: Kind::Store,
            name: "chroma",
            about: "a collection on a Chroma server (HTTP API v2)",
            feature: Some("chroma"),
            enabled: cfg!(feature = "chroma"),
            keys: &[
                Key::text("url", "required, e.g. http://127.0.0.1:8000"),
                Key::text("collection", "required"),
                Key::text("tenant", "default_tenant"),
                Key::text("database", "default_database"),
            ],
        },
        build: chroma,
    },
];

/// Builds the vector store a spec such as `chroma:url=http://127.0.0.1:8000,collection=docs`
/// names.
pub fn build_store(text: &str) -> Result<Arc<dyn VectorStore>> {
    let spec = Spec::parse(Kind::Store, text)?;
    store_from(&spec).map_err(|m| Error::Config(format!("store spec `{text}`: {m}")))
}

/// Builds the store a parsed spec names.
pub(crate) fn store_from(spec: &Spec) -> std::result::Result<Arc<dyn VectorStore>, String> {
    (lookup(STORES, spec.name())?.build)(spec).map_err(|m| format!("`{}`: {m}", spec.name()))
}

fn memory(_: &Spec) -> std::result::Result<Arc<dyn VectorStore>, String> {
    Ok(Arc::new(InMemoryStore::new()))
}

fn chroma(spec: &Spec) -> std::result::Result<Arc<dyn VectorStore>, String> {
    #[cfg(feature = "chroma")]
    {
        let e = message;
        let mut s =
            crate::store::ChromaStore::new(spec.required("url")?, spec.required("collection")?)
                .map_err(e)?;
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
        let _ = spec;
        unreachable!("`lookup` refuses components whose feature is missing")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_print_the_spec_that_builds_them() {
        assert_eq!(build_store("memory").unwrap().spec(), "memory");
        let err = build_store("memory:dim=3").err().unwrap().to_string();
        assert!(
            err.contains("unknown key `dim` for `memory`; keys: none"),
            "{err}"
        );
    }

    #[cfg(feature = "chroma")]
    #[test]
    fn chroma_specs_keep_urls_whole() {
        let s =
            build_store("chroma:url=http://127.0.0.1:8000/api/v2,collection=docs,database=docs_db")
                .unwrap();
        assert_eq!(
            s.spec(),
            "chroma:url=http://127.0.0.1:8000,collection=docs,tenant=default_tenant,database=docs_db"
        );
        assert_eq!(build_store(&s.spec()).unwrap().spec(), s.spec());
        let err = build_store("chroma:url=http://h:1")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("`chroma`: `collection` is required"), "{err}");
        let err = build_store("chroma:url=http://h:1,collection=a")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("invalid configuration: store spec `chroma:url=http://h:1,collection=a`: `chroma`: chroma collection name `a` must have"),
            "{err}"
        );
    }
}
