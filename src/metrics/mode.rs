//! [`SpanMode`]: how the span metrics count characters.

use std::fmt;
use std::str::FromStr;

/// How the span metrics ([`SpanRecall`](super::SpanRecall), [`SpanPrecision`](super::SpanPrecision),
/// [`SpanIou`](super::SpanIou)) count characters.
///
/// - [`SpanMode::Standard`] (the default) treats retrieval and truth as sets of characters. With
///   R the union of the top-k retrieved spans and G the union of the truth spans (both as a
///   [`SpanSet`](crate::span::SpanSet)): recall `|R∩G| / |G|`, precision `|R∩G| / |R|`,
///   IoU `|R∩G| / |R∪G|`. Overlapping retrieved chunks count their shared characters once.
///   Edge cases: recall is 0 when the truth is empty, precision is 0 when nothing was
///   retrieved, IoU is 1 when both are empty (nothing to find and nothing found agree
///   perfectly) and 0 when only one is.
/// - [`SpanMode::ChunkingEvaluation`] reproduces the per-query figures of chunking_evaluation
///   (the code behind Chroma's report on chunking strategies), whose denominators are plain
///   sums rather than unions; every rule is listed at [`chunking_evaluation_scores`](super::chunking_evaluation_scores).
///   It has nothing to do with the Chroma vector store.
///
/// Written `standard` and `chunking_evaluation` (the older spelling `chroma` is accepted too).
/// Reports and JSON results keep writing `chroma` for the second mode ([`SpanMode::as_str`]),
/// so figures recorded before the rename still compare equal.
///
/// ```
/// use rag_eval::metrics::SpanMode;
/// assert_eq!("chunking_evaluation".parse::<SpanMode>()?, SpanMode::ChunkingEvaluation);
/// assert_eq!("chroma".parse::<SpanMode>()?, SpanMode::ChunkingEvaluation);
/// assert_eq!(SpanMode::ChunkingEvaluation.as_str(), "chroma");
/// assert!("fast".parse::<SpanMode>().unwrap_err().to_string().contains("standard, chunking_evaluation"));
/// # Ok::<(), rag_eval::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SpanMode {
    /// Set arithmetic over merged spans.
    #[default]
    Standard,
    /// chunking_evaluation's figures, exactly (plain sums in the denominators); the rules are
    /// listed at [`chunking_evaluation_scores`](super::chunking_evaluation_scores).
    ChunkingEvaluation,
}

#[allow(non_upper_case_globals)]
impl SpanMode {
    /// The name [`SpanMode::ChunkingEvaluation`] had before it was renamed; kept so code
    /// written against it still compiles.
    pub const Chroma: SpanMode = SpanMode::ChunkingEvaluation;

    /// Every spelling accepted by [`FromStr`], the preferred one of each mode first.
    pub const SPELLINGS: &'static [(&'static str, SpanMode)] = &[
        ("standard", SpanMode::Standard),
        ("chunking_evaluation", SpanMode::ChunkingEvaluation),
        ("chroma", SpanMode::ChunkingEvaluation),
    ];

    /// The value reports and JSON results record: `standard` or `chroma`. The second stays
    /// `chroma` so results and golden snapshots written before the rename read the same.
    pub fn as_str(self) -> &'static str {
        match self {
            SpanMode::Standard => "standard",
            SpanMode::ChunkingEvaluation => "chroma",
        }
    }
}

impl fmt::Display for SpanMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SpanMode {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SpanMode::SPELLINGS
            .iter()
            .find(|(name, _)| *name == s)
            .map(|(_, mode)| *mode)
            .ok_or_else(|| {
                crate::Error::Unknown {
                    what: "span mode",
                    given: s.to_owned(),
                    known: "modes: standard, chunking_evaluation; `chroma` is the older name of chunking_evaluation".into(),
                }
            })
    }
}

impl serde::Serialize for SpanMode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for SpanMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_parses_and_the_recorded_value_reads_back() {
        for (name, mode) in SpanMode::SPELLINGS {
            assert_eq!(name.parse::<SpanMode>().unwrap(), *mode);
        }
        for mode in [SpanMode::Standard, SpanMode::ChunkingEvaluation] {
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(serde_json::from_str::<SpanMode>(&json).unwrap(), mode);
        }
        assert_eq!(
            serde_json::to_string(&SpanMode::ChunkingEvaluation).unwrap(),
            "\"chroma\""
        );
        assert_eq!(
            serde_json::from_str::<SpanMode>("\"chunking_evaluation\"").unwrap(),
            SpanMode::ChunkingEvaluation
        );
        assert!(serde_json::from_str::<SpanMode>("\"chrome\"").is_err());
    }
}
