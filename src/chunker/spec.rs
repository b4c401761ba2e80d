//! Chunker specs: `NAME[:key=value,...]`, the form the CLI takes and datasets record.
//!
//! | name | keys |
//! |---|---|
//! | `recursive` | `size` (required), `overlap` (0), `length` (`chars` \| `tokens`), `separators` (`langchain` \| `chroma`) |
//! | `token` | `size` (required), `overlap` (0) |
//! | `markdown` | `size` (required), `overlap` (0) |
//! | `semantic` | `percentile` (95), `buffer` (1), `max_chars` (none), `embedder` (`hashing` or `hashing(dim=N,ngrams=M)`) |
//!
//! Every built-in chunker's `name()` is a spec this parser reads back to the same chunker.
//!
//! ```
//! let c = rag_eval::chunker::parse_spec("recursive:size=400,overlap=0,separators=chroma").unwrap();
//! assert_eq!(c.name(), "recursive:size=400,overlap=0,length=chars,separators=chroma");
//! let err = rag_eval::chunker::parse_spec("recursiv:size=4").err().unwrap();
//! assert!(err.to_string().contains("did you mean `recursive`"));
//! ```

use super::PositionAwareChunker;
use crate::error::{Error, Result};
use std::collections::BTreeMap;

/// Chunker names the parser knows, in the order they are listed in messages.
pub const CHUNKER_NAMES: &[&str] = &["recursive", "token", "markdown", "semantic"];

/// Builds a chunker from a spec such as `recursive:size=400,overlap=0`.
///
/// Errors name the spec and what is wrong with it: an unknown chunker or key (with the
/// closest valid one), a missing or malformed value, an invalid combination.
pub fn parse_spec(spec: &str) -> Result<Box<dyn PositionAwareChunker>> {
    let err = |msg: String| Error::Config(format!("chunker spec `{spec}`: {msg}"));
    let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let name = name.trim();
    let mut keys: BTreeMap<String, String> = BTreeMap::new();
    for pair in split_top_level(rest).into_iter().filter(|p| !p.is_empty()) {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| err(format!("`{pair}` is not key=value")))?;
        if keys
            .insert(k.trim().to_owned(), v.trim().to_owned())
            .is_some()
        {
            return Err(err(format!("key `{}` given twice", k.trim())));
        }
    }
    let allowed: &[&str] = match name {
        "recursive" => &["size", "overlap", "length", "separators"],
        "token" | "markdown" => &["size", "overlap"],
        "semantic" => &["percentile", "buffer", "max_chars", "embedder"],
        _ => {
            return Err(err(format!(
                "unknown chunker `{name}`{}; known: {}",
                did_you_mean(name, CHUNKER_NAMES),
                CHUNKER_NAMES.join(", ")
            )))
        }
    };
    if let Some(k) = keys.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(err(format!(
            "unknown key `{k}` for `{name}`{}; keys: {}",
            did_you_mean(k, allowed),
            allowed.join(", ")
        )));
    }
    let num = |key: &str| -> Result<Option<usize>> {
        keys.get(key)
            .map(|v| {
                v.parse::<usize>()
                    .map_err(|_| err(format!("`{key}` must be a whole number, got `{v}`")))
            })
            .transpose()
    };
    let size = || num("size")?.ok_or_else(|| err("`size` is required".into()));
    let wrap = |e: Error| match e {
        Error::Config(m) => err(m),
        other => other,
    };
    Ok(match name {
        "recursive" => {
            #[cfg(feature = "tiktoken")]
            use super::LengthUnit;
            use super::RecursiveCharacterChunker;
            let mut c = RecursiveCharacterChunker::try_new(size()?, num("overlap")?.unwrap_or(0))
                .map_err(wrap)?;
            match keys.get("separators").map(String::as_str) {
                None | Some("langchain") => {}
                Some("chroma") => {
                    c = c.with_separators(
                        RecursiveCharacterChunker::CHROMA_SEPARATORS.iter().copied(),
                    )
                }
                Some(other) => {
                    return Err(err(format!(
                        "`separators` must be `langchain` or `chroma`, got `{other}`"
                    )))
                }
            }
            match keys.get("length").map(String::as_str) {
                None | Some("chars") => {}
                #[cfg(feature = "tiktoken")]
                Some("tokens") => c = c.with_length(LengthUnit::Cl100kTokens),
                #[cfg(not(feature = "tiktoken"))]
                Some("tokens") => {
                    return Err(err("`length=tokens` needs the `tiktoken` feature".into()))
                }
                Some(other) => {
                    return Err(err(format!(
                        "`length` must be `chars` or `tokens`, got `{other}`"
                    )))
                }
            }
            Box::new(c)
        }
        #[cfg(feature = "tiktoken")]
        "token" => Box::new(
            super::FixedTokenChunker::try_new(size()?, num("overlap")?.unwrap_or(0))
                .map_err(wrap)?,
        ),
        #[cfg(not(feature = "tiktoken"))]
        "token" => {
            return Err(err(
                "the `token` chunker needs the `tiktoken` feature".into()
            ))
        }
        #[cfg(feature = "markdown")]
        "markdown" => Box::new(
            super::MarkdownChunker::try_new(size()?)
                .and_then(|c| c.try_with_overlap(num("overlap")?.unwrap_or(0)))
                .map_err(wrap)?,
        ),
        #[cfg(not(feature = "markdown"))]
        "markdown" => {
            return Err(err(
                "the `markdown` chunker needs the `markdown` feature".into()
            ))
        }
        "semantic" => {
            let embedder = match keys.get("embedder").map(String::as_str) {
                None | Some("hashing") => crate::embed::HashingEmbedder::default(),
                Some(other) => parse_hashing(other).ok_or_else(|| {
                    err(format!(
                        "`embedder` must be `hashing` or `hashing(dim=N,ngrams=M)` (the offline embedder), got `{other}`"
                    ))
                })?,
            };
            let mut c = super::SemanticChunker::new(std::sync::Arc::new(embedder));
            if let Some(p) = keys.get("percentile") {
                let p: f64 = p
                    .parse()
                    .ok()
                    .filter(|p: &f64| (0.0..=100.0).contains(p))
                    .ok_or_else(|| {
                        err(format!(
                            "`percentile` must be a number in [0, 100], got `{p}`"
                        ))
                    })?;
                c = c.with_percentile(p);
            }
            if let Some(b) = num("buffer")? {
                c = c.with_buffer(b);
            }
            if let Some(m) = num("max_chars")? {
                c = c.try_with_max_chars(Some(m)).map_err(wrap)?;
            }
            Box::new(c)
        }
        _ => unreachable!("names were checked above"),
    })
}

/// Splits `key=value` pairs on commas outside parentheses, so values such as
/// `hashing(dim=384,ngrams=2)` stay whole.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(s[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(s[from..].trim());
    parts
}

/// `hashing(dim=N,ngrams=M)`, either key optional.
fn parse_hashing(v: &str) -> Option<crate::embed::HashingEmbedder> {
    let inner = v.strip_prefix("hashing(")?.strip_suffix(')')?;
    let (mut dim, mut ngrams) = (384, 2);
    for pair in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, n) = pair.split_once('=')?;
        let n: usize = n.trim().parse().ok().filter(|&n| n > 0)?;
        match k.trim() {
            "dim" => dim = n,
            "ngrams" => ngrams = n,
            _ => return None,
        }
    }
    Some(crate::embed::HashingEmbedder::new(dim, ngrams))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn e(spec: &str) -> String {
        match parse_spec(spec) {
            Ok(c) => panic!("`{spec}` parsed as {}", c.name()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn every_builtin_name_round_trips() {
        for spec in [
            "recursive:size=400,overlap=0",
            "recursive:size=200,overlap=100,separators=chroma,length=tokens",
            "token:size=250,overlap=125",
            "markdown:size=800",
            "semantic:percentile=90,buffer=2,max_chars=1000",
            "semantic",
            "semantic:embedder=hashing(dim=64,ngrams=1)",
        ] {
            let c = parse_spec(spec).unwrap();
            let again = parse_spec(&c.name()).unwrap();
            assert_eq!(again.name(), c.name(), "{spec}");
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(
            e("recursiv:size=4"),
            "invalid configuration: chunker spec `recursiv:size=4`: unknown chunker `recursiv` (did you mean `recursive`?); known: recursive, token, markdown, semantic"
        );
        assert!(e("recursive:sise=4")
            .contains("unknown key `sise` for `recursive` (did you mean `size`?)"));
        assert!(e("recursive:overlap=2").contains("`size` is required"));
        assert!(e("recursive:size=ten").contains("`size` must be a whole number, got `ten`"));
        assert!(e("recursive:size=10,size=20").contains("given twice"));
        assert!(e("recursive:size=10,overlap").contains("`overlap` is not key=value"));
        assert!(e("recursive:size=10,separators=python").contains("`separators` must be"));
        assert!(e("recursive:size=10,overlap=20")
            .starts_with("invalid configuration: chunker spec `recursive:size=10,overlap=20`: "));
        assert!(e("semantic:percentile=120").contains("[0, 100]"));
        assert!(e("markdown:size=10,overlap=10")
            .starts_with("invalid configuration: chunker spec `markdown:size=10,overlap=10`: "));
        assert!(e("semantic:max_chars=0")
            .starts_with("invalid configuration: chunker spec `semantic:max_chars=0`: "));
        assert!(
            e("token:size=0").starts_with("invalid configuration: chunker spec `token:size=0`: ")
        );
        assert!(e("semantic:embedder=openai").contains("`embedder` must be `hashing`"));
        assert!(e("semantic:embedder=hashing(dim=0)").contains("`embedder` must be"));
    }
}
