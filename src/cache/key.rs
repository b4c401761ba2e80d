//! Where an entry lives: [`CacheKey`], SHA-256 over the request in canonical form.

use crate::error::{Error, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::fmt;

/// The address of one cache entry: SHA-256 over what kind of entry it is, the provider, the
/// model, the canonical JSON of the parameters and the input, each prefixed by its length so
/// that no two different requests can run together into the same bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey([u8; 32]);

/// The two tables, which also separate the key spaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Table {
    Embeddings,
    Responses,
}

impl Table {
    pub(super) fn tag(self) -> &'static [u8] {
        match self {
            Table::Embeddings => b"embedding",
            Table::Responses => b"response",
        }
    }
}

impl CacheKey {
    /// The key of an embedding of `text` by `model` of `provider` with `params`.
    pub fn for_embedding(
        provider: &str,
        model: &str,
        params: &impl Serialize,
        text: &str,
    ) -> Result<Self> {
        Ok(Self::from_parts(
            Table::Embeddings,
            provider,
            model,
            &canonical_json(params)?,
            text.as_bytes(),
        ))
    }

    /// The key of a response of `model` of `provider` to `input` (e.g. the messages) with
    /// `params` (e.g. temperature, response format).
    pub fn for_response(
        provider: &str,
        model: &str,
        params: &impl Serialize,
        input: &impl Serialize,
    ) -> Result<Self> {
        Ok(Self::from_parts(
            Table::Responses,
            provider,
            model,
            &canonical_json(params)?,
            canonical_json(input)?.as_bytes(),
        ))
    }

    pub(super) fn from_parts(
        table: Table,
        provider: &str,
        model: &str,
        params: &str,
        input: &[u8],
    ) -> Self {
        let mut h = Sha256::new();
        h.update(b"rag-eval-cache\0");
        for part in [
            table.tag(),
            provider.as_bytes(),
            model.as_bytes(),
            params.as_bytes(),
            input,
        ] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        CacheKey(h.finalize().into())
    }

    /// The 32 bytes of the digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for CacheKey {
    /// Lowercase hex.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::digest::hex(&self.0))
    }
}

impl fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CacheKey({self})")
    }
}

/// The model identity entries are keyed by: a client's or embedder's name (`provider(k=v,…)`)
/// without the server it reaches, its `base=` (or `base_url=`) parameter. The same model
/// gives the same answers whichever port or host serves it, so a cache recorded against a
/// server on one address replays against another. Everything else in the name (model,
/// dimensions, an Azure deployment's `path`) defines the output and stays. Names without
/// parameters are identities already.
///
/// ```
/// use rag_eval::cache::model_identity;
/// assert_eq!(
///     model_identity("openai(model=nomic-embed-text,dimensions=256,base=http://127.0.0.1:8080/v1)"),
///     "openai(model=nomic-embed-text,dimensions=256)"
/// );
/// assert_eq!(
///     model_identity("openai-chat(model=m,base=https://x.example/v1,path=/deployments/d?v=1)"),
///     "openai-chat(model=m,path=/deployments/d?v=1)"
/// );
/// assert_eq!(model_identity("hashing(dim=384,ngrams=2)"), "hashing(dim=384,ngrams=2)");
/// assert_eq!(model_identity("echo"), "echo");
/// ```
pub fn model_identity(name: &str) -> String {
    let Some((provider, rest)) = name.split_once('(') else {
        return name.to_owned();
    };
    let Some(params) = rest.strip_suffix(')') else {
        return name.to_owned();
    };
    // Parameters are split where a `key=` starts after a comma: a URL may hold commas itself.
    let mut parts: Vec<&str> = Vec::new();
    let mut start = 0;
    for (i, _) in params.match_indices(',') {
        if starts_with_key(&params[i + 1..]) {
            parts.push(&params[start..i]);
            start = i + 1;
        }
    }
    parts.push(&params[start..]);
    let kept: Vec<&str> = parts
        .into_iter()
        .filter(|p| !matches!(p.split_once('='), Some(("base" | "base_url", _))))
        .collect();
    format!("{provider}({})", kept.join(","))
}

/// Whether `s` starts with `identifier=`.
fn starts_with_key(s: &str) -> bool {
    let key_len = s
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    key_len > 0 && s.as_bytes().get(key_len) == Some(&b'=')
}

/// `value` as JSON with object keys sorted at every level and no whitespace, so that requests
/// equal as JSON get the same [`CacheKey`] whatever order their fields were written in.
///
/// Numbers are kept as serde_json writes them: `1` and `1.0` are different parameters.
///
/// ```
/// use rag_eval::cache::canonical_json;
/// use serde_json::json;
/// let a = canonical_json(&json!({"b": [1, {"y": null, "x": true}], "a": "é"}))?;
/// assert_eq!(a, r#"{"a":"é","b":[1,{"x":true,"y":null}]}"#);
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub fn canonical_json(value: &impl Serialize) -> Result<String> {
    let value = serde_json::to_value(value).map_err(|source| Error::Json {
        what: "a cache key part".into(),
        source,
    })?;
    let mut out = String::new();
    write_canonical(&value, &mut out);
    Ok(out)
}

fn write_canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(v, out);
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
