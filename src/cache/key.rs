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
    let value = serde_json::to_value(value)
        .map_err(|e| Error::Config(format!("cache key part is not representable as JSON: {e}")))?;
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
