//! Building chunkers from their specs. Every built-in chunker's `name()` is a spec that builds the same chunker.

use crate::chunker::PositionAwareChunker;
use crate::error::{Fault, Result};
use crate::spec::{builder, Kind, Spec};

type Built = std::result::Result<Box<dyn PositionAwareChunker>, Fault>;
type Build = fn(&Spec) -> Built;

/// The builder of each component of the table in [`crate::spec`], by name.
static BUILDERS: &[(&str, Build)] = &[
    ("recursive", recursive),
    ("token", token),
    ("markdown", markdown),
    ("semantic", semantic),
];

/// Builds a chunker from a spec such as `recursive:size=400,overlap=0`.
///
/// Errors name the spec and what is wrong with it: an unknown chunker or key (with the
/// closest valid one), a missing or malformed value, an invalid combination.
pub fn parse_spec(text: &str) -> Result<Box<dyn PositionAwareChunker>> {
    let spec = Spec::parse(Kind::Chunker, text)?;
    chunker_from(&spec).map_err(|f| f.in_spec(Kind::Chunker.as_str(), text).into())
}

/// [`parse_spec`] for a spec already parsed (errors quote its printed form).
#[cfg(feature = "cli")]
pub(crate) fn build_parsed_chunker(spec: &Spec) -> Result<Box<dyn PositionAwareChunker>> {
    chunker_from(spec).map_err(|f| f.in_spec(Kind::Chunker.as_str(), &spec.to_string()).into())
}

/// Builds the chunker a parsed spec names; the fault says what is wrong.
pub(crate) fn chunker_from(spec: &Spec) -> Built {
    (builder(Kind::Chunker, BUILDERS, spec.name())?)(spec)
}

fn size(spec: &Spec) -> std::result::Result<usize, Fault> {
    spec.whole("size")?
        .ok_or_else(|| Fault::key("size", "`size` is required"))
}

fn recursive(spec: &Spec) -> Built {
    use crate::chunker::RecursiveCharacterChunker;
    let mut c =
        RecursiveCharacterChunker::try_new(size(spec)?, spec.whole("overlap")?.unwrap_or(0))
            .map_err(Fault::of)?;
    match spec.text("separators") {
        None | Some("langchain") => {}
        Some("chroma") => {
            c = c.with_separators(RecursiveCharacterChunker::CHROMA_SEPARATORS.iter().copied())
        }
        Some(other) => {
            return Err(Fault::key(
                "separators",
                format!("`separators` must be `langchain` or `chroma`, got `{other}`"),
            ))
        }
    }
    match spec.text("length") {
        None | Some("chars") => {}
        #[cfg(feature = "tiktoken")]
        Some("tokens") => c = c.with_length(crate::chunker::LengthUnit::Cl100kTokens),
        #[cfg(not(feature = "tiktoken"))]
        Some("tokens") => {
            return Err(Fault::key(
                "length",
                "`length=tokens` needs the `tiktoken` feature",
            ))
        }
        Some(other) => {
            return Err(Fault::key(
                "length",
                format!("`length` must be `chars` or `tokens`, got `{other}`"),
            ))
        }
    }
    Ok(Box::new(c))
}

fn token(spec: &Spec) -> Built {
    #[cfg(feature = "tiktoken")]
    {
        Ok(Box::new(
            crate::chunker::FixedTokenChunker::try_new(
                size(spec)?,
                spec.whole("overlap")?.unwrap_or(0),
            )
            .map_err(Fault::of)?,
        ))
    }
    #[cfg(not(feature = "tiktoken"))]
    {
        let _ = spec;
        unreachable!("`lookup` refuses components whose feature is missing")
    }
}

fn markdown(spec: &Spec) -> Built {
    #[cfg(feature = "markdown")]
    {
        let overlap = spec.whole("overlap")?.unwrap_or(0);
        Ok(Box::new(
            crate::chunker::MarkdownChunker::try_new(size(spec)?)
                .and_then(|c| c.try_with_overlap(overlap))
                .map_err(Fault::of)?,
        ))
    }
    #[cfg(not(feature = "markdown"))]
    {
        let _ = spec;
        unreachable!("`lookup` refuses components whose feature is missing")
    }
}

fn semantic(spec: &Spec) -> Built {
    // Only the offline embedder: a chunker spec is recorded in datasets, and chunking must
    // give the same chunks wherever the dataset is evaluated.
    let embedder = match spec.nested("embedder") {
        None => crate::embed::HashingEmbedder::default(),
        Some(e) if e.name() == "hashing" => {
            crate::embed::HashingEmbedder::from_spec(e).map_err(|f| f.within("embedder"))?
        }
        Some(other) => {
            return Err(Fault::key(
                "embedder",
                format!("`embedder` must be `hashing` or `hashing(dim=N,ngrams=M)` (the offline embedder), got `{other}`"),
            ))
        }
    };
    let mut c = crate::chunker::SemanticChunker::new(std::sync::Arc::new(embedder));
    if let Some(p) = spec.text("percentile") {
        let p: f64 = p
            .parse()
            .ok()
            .filter(|p: &f64| (0.0..=100.0).contains(p))
            .ok_or_else(|| {
                Fault::key(
                    "percentile",
                    format!("`percentile` must be a number in [0, 100], got `{p}`"),
                )
            })?;
        c = c.with_percentile(p);
    }
    if let Some(b) = spec.whole("buffer")? {
        c = c.with_buffer(b);
    }
    if let Some(m) = spec.whole("max_chars")? {
        c = c.try_with_max_chars(Some(m)).map_err(Fault::of)?;
    }
    Ok(Box::new(c))
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
    fn names_are_the_table() {
        let names: Vec<&str> = Kind::Chunker.components().iter().map(|c| c.name).collect();
        assert_eq!(names, crate::spec::CHUNKER_NAMES);
        let built: Vec<&str> = BUILDERS.iter().map(|(n, _)| *n).collect();
        assert_eq!(built, names, "one builder for each chunker of the table");
    }

    #[test]
    fn every_builtin_name_round_trips() {
        for spec in [
            "recursive:size=400,overlap=0",
            "recursive:size=200,overlap=100,separators=chroma,length=tokens",
            "token:size=250,overlap=125",
            #[cfg(feature = "markdown")]
            "markdown:size=800",
            "semantic:percentile=90,buffer=2,max_chars=1000",
            "semantic",
            "semantic:embedder=hashing(dim=64,ngrams=1)",
            "semantic:embedder=(hashing:dim=64,ngrams=1)",
            "semantic:embedder=hashing:dim=64,ngrams=1,buffer=3",
        ] {
            let c = parse_spec(spec).unwrap();
            let again = parse_spec(&c.name()).unwrap();
            assert_eq!(again.name(), c.name(), "{spec}");
            // A chunker's name is the canonical print of its own spec.
            let canonical = Spec::parse(Kind::Chunker, &c.name()).unwrap().to_string();
            assert_eq!(canonical, c.name(), "{spec}");
        }
        assert_eq!(
            parse_spec("semantic:embedder=hashing:dim=64,ngrams=1,buffer=3")
                .unwrap()
                .name(),
            "semantic:percentile=95,buffer=3,embedder=hashing(dim=64,ngrams=1)"
        );
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(
            e("recursiv:size=4"),
            "invalid configuration: chunker spec `recursiv:size=4`: unknown chunker `recursiv` (did you mean `recursive`?); known: recursive, token, markdown, semantic"
        );
        assert!(e("recursive:sise=4")
            .contains("unknown key `sise` for `recursive` (did you mean `size`?); keys: size, overlap, length, separators"));
        assert!(e("recursive:overlap=2").contains("`size` is required"));
        assert!(e("recursive:size=ten").contains("`size` must be a whole number, got `ten`"));
        assert!(e("recursive:size=10,size=20").contains("given twice"));
        assert!(e("recursive:size=10,overlap").contains("`overlap` is not key=value"));
        assert!(e("recursive:size=10,separators=python").contains("`separators` must be"));
        assert!(e("recursive:size=10,overlap=20")
            .starts_with("invalid configuration: chunker spec `recursive:size=10,overlap=20`: "));
        assert!(e("semantic:percentile=120").contains("[0, 100]"));
        // Without the feature the spec still parses, and says which feature it needs.
        assert!(e("markdown:size=10,overlap=10")
            .starts_with("invalid configuration: chunker spec `markdown:size=10,overlap=10`: "));
        assert!(e("semantic:max_chars=0")
            .starts_with("invalid configuration: chunker spec `semantic:max_chars=0`: "));
        assert!(
            e("token:size=0").starts_with("invalid configuration: chunker spec `token:size=0`: ")
        );
        assert!(e("semantic:embedder=openai:model=m").contains("`embedder` must be `hashing`"));
        assert!(e("semantic:embedder=hashing(dim=0)").contains("`dim` must be at least 1"));
        assert!(e("semantic:embedder=hashing(dimm=3)")
            .contains("unknown key `dimm` for `hashing` (did you mean `dim`?); keys: dim, ngrams"));
    }
}
