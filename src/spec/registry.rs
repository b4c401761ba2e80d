//! What components exist, the keys each takes, and the help text made from them.

use std::fmt;

/// The kinds of component a spec can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// Splits documents into chunks.
    Chunker,
    /// Turns text into vectors.
    Embedder,
    /// Holds vectors and finds the nearest.
    Store,
    /// Reorders candidates for a query.
    Reranker,
    /// From a query to ranked chunks.
    Retriever,
    /// The record/replay cache of embeddings and LLM calls.
    Cache,
}

impl Kind {
    /// Every kind, in the order help lists them.
    pub const ALL: [Kind; 6] = [
        Kind::Retriever,
        Kind::Chunker,
        Kind::Embedder,
        Kind::Store,
        Kind::Reranker,
        Kind::Cache,
    ];

    /// The lowercase name used in messages, e.g. `embedder`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Chunker => "chunker",
            Kind::Embedder => "embedder",
            Kind::Store => "store",
            Kind::Reranker => "reranker",
            Kind::Retriever => "retriever",
            Kind::Cache => "cache",
        }
    }

    /// The registered components of this kind, whether or not their feature is compiled in.
    pub fn components(self) -> Vec<&'static Component> {
        match self {
            Kind::Chunker => super::chunker::CHUNKERS.iter().map(|r| &r.info).collect(),
            Kind::Embedder => super::embedder::EMBEDDERS.iter().map(|r| &r.info).collect(),
            Kind::Store => super::store::STORES.iter().map(|r| &r.info).collect(),
            Kind::Reranker => super::reranker::RERANKERS.iter().map(|r| &r.info).collect(),
            Kind::Retriever => super::retriever::RETRIEVERS
                .iter()
                .map(|r| &r.info)
                .collect(),
            Kind::Cache => super::cache::MODES.iter().collect(),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A registered component: its name, keys and the cargo feature it needs.
#[derive(Debug)]
pub struct Component {
    /// What kind of component it is.
    pub kind: Kind,
    /// The name a spec starts with, e.g. `openai`.
    pub name: &'static str,
    /// One line for help.
    pub about: &'static str,
    /// The cargo feature it needs, if any.
    pub feature: Option<&'static str>,
    /// Whether that feature is compiled in.
    pub enabled: bool,
    /// Its keys, in the order specs print them.
    pub keys: &'static [Key],
}

/// One key of a component.
#[derive(Debug)]
pub struct Key {
    /// The key, e.g. `base_url`.
    pub name: &'static str,
    /// The kind of component its value is, when it is one.
    pub nested: Option<Kind>,
    /// Its default or what it means, for help, e.g. `384` or `required`.
    pub about: &'static str,
}

impl Key {
    /// A key with a text value.
    pub const fn text(name: &'static str, about: &'static str) -> Key {
        Key {
            name,
            nested: None,
            about,
        }
    }

    /// A key whose value is a component of `kind`.
    pub const fn component(name: &'static str, kind: Kind, about: &'static str) -> Key {
        Key {
            name,
            nested: Some(kind),
            about,
        }
    }
}

impl Component {
    /// The key named `name`, if the component has it.
    pub fn key(&self, name: &str) -> Option<&'static Key> {
        self.keys.iter().find(|k| k.name == name)
    }

    /// The message for a spec naming this component when its feature is not compiled in.
    pub(crate) fn missing_feature(&self) -> String {
        let feature = self.feature.unwrap_or_default();
        format!(
            "the `{}` {} needs the `{feature}` feature (build rag-eval with `--features {feature}`)",
            self.name, self.kind
        )
    }
}

/// A registered component with the function that builds it from its spec.
pub(crate) struct Registered<B: 'static> {
    pub(crate) info: Component,
    pub(crate) build: B,
}

/// Finds `spec`'s component in `table` (the parser has already checked that it exists) and
/// fails when its feature is not compiled in.
pub(crate) fn lookup<'t, B>(
    table: &'t [Registered<B>],
    name: &str,
) -> std::result::Result<&'t Registered<B>, String> {
    let entry = table
        .iter()
        .find(|r| r.info.name == name)
        .ok_or_else(|| format!("unknown component `{name}`"))?;
    if !entry.info.enabled {
        return Err(entry.info.missing_feature());
    }
    Ok(entry)
}

/// The message of a builder's error, without the "invalid configuration: " every
/// configuration error starts with (the spec's own error says it once).
pub(crate) fn message(e: crate::Error) -> String {
    match e {
        crate::Error::Config(m) => m,
        other => other.to_string(),
    }
}

/// ` (did you mean `x`?)` when a candidate is close, else nothing.
pub(crate) fn did_you_mean(given: &str, candidates: &[&str]) -> String {
    candidates
        .iter()
        .map(|c| (strsim::levenshtein(given, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min()
        .map(|(_, c)| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}

/// Every component of every kind with its keys, for `--help`: generated from the tables, so
/// it lists exactly what the parser accepts.
pub fn help() -> String {
    let mut out = String::from(
        "Component specs: NAME[:KEY=VALUE,...]. A value that is itself a component nests as \
         NAME(KEY=VALUE,...), as (NAME:KEY=VALUE,...), or unbracketed: then a key the outer \
         component does not have belongs to the nested one. Quote values holding `,` or `)` \
         with \"...\". API keys are read from the environment variable `api_key_env` names.\n",
    );
    for kind in Kind::ALL {
        out.push_str(&help_for(kind));
    }
    out
}

/// The components of one kind with their keys, one line each.
pub fn help_for(kind: Kind) -> String {
    let components = kind.components();
    let width = components.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = format!("\n{kind}:\n");
    for c in components {
        let keys: Vec<String> = c
            .keys
            .iter()
            .map(|k| format!("{} ({})", k.name, k.about))
            .collect();
        let keys = if keys.is_empty() {
            "no keys".to_owned()
        } else {
            keys.join(", ")
        };
        let feature = match c.feature {
            Some(f) if !c.enabled => format!(" [feature `{f}`, not built in]"),
            Some(f) => format!(" [feature `{f}`]"),
            None => String::new(),
        };
        out.push_str(&format!(
            "  {:width$}  {}{feature}\n  {:width$}    keys: {keys}\n",
            c.name, c.about, ""
        ));
    }
    out
}
