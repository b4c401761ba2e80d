//! What a generation run left out, and why.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What was left out, and why. Each question the model wrote is either kept or counted here
/// exactly once; `invalid_json` counts answers instead (their questions are unknown).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Dropped {
    /// Questions whose ground truth could not be placed: an excerpt not found in the document
    /// (token level), or no cited chunk id that was shown (chunk level).
    pub unlocated: usize,
    /// Questions with an excerpt shorter than `min_excerpt_chars`.
    pub too_short: usize,
    /// Questions with an excerpt longer than `max_excerpt_chars`.
    pub too_long: usize,
    /// Questions too similar to an earlier one.
    pub duplicate: usize,
    /// Questions the model answered confidently without the document.
    pub unanswerable: usize,
    /// Answers that were not the JSON asked for, even after a reminder.
    pub invalid_json: usize,
    /// Cited chunk ids that were not among the chunks shown (each removed id counts once).
    pub unknown_chunk_ids: usize,
    /// Questions dropped to meet the difficulty mix.
    pub over_mix: usize,
    /// Questions without text or without excerpts / chunk ids, and answers with no question
    /// at all.
    pub empty: usize,
    /// Documents left out whole: too long for the model's context even in the shortest
    /// window (the reason is in the document's record).
    pub documents: usize,
}

impl Dropped {
    /// Questions (and answers, for `invalid_json`) dropped, all reasons together, not counting
    /// `unknown_chunk_ids` (ids, not questions) and `documents`.
    pub fn total(&self) -> usize {
        self.unlocated
            + self.too_short
            + self.too_long
            + self.duplicate
            + self.unanswerable
            + self.invalid_json
            + self.over_mix
            + self.empty
    }

    fn entries(&self) -> [(&'static str, usize); 10] {
        [
            ("unlocated", self.unlocated),
            ("too short", self.too_short),
            ("too long", self.too_long),
            ("duplicate", self.duplicate),
            ("unanswerable", self.unanswerable),
            ("invalid JSON", self.invalid_json),
            ("unknown chunk ids", self.unknown_chunk_ids),
            ("over mix", self.over_mix),
            ("empty", self.empty),
            ("documents left out", self.documents),
        ]
    }
}

impl std::ops::AddAssign for Dropped {
    fn add_assign(&mut self, o: Dropped) {
        self.unlocated += o.unlocated;
        self.too_short += o.too_short;
        self.too_long += o.too_long;
        self.duplicate += o.duplicate;
        self.unanswerable += o.unanswerable;
        self.invalid_json += o.invalid_json;
        self.unknown_chunk_ids += o.unknown_chunk_ids;
        self.over_mix += o.over_mix;
        self.empty += o.empty;
        self.documents += o.documents;
    }
}

impl fmt::Display for Dropped {
    /// The non-zero counts, e.g. `2 unlocated, 1 duplicate`, or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .entries()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{n} {name}"))
            .collect();
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_adds_and_displays_nonzero_counts() {
        let mut d = Dropped {
            unlocated: 2,
            ..Dropped::default()
        };
        d += Dropped {
            unlocated: 1,
            duplicate: 4,
            ..Dropped::default()
        };
        assert_eq!(d.to_string(), "3 unlocated, 4 duplicate");
        assert_eq!(d.total(), 7);
        assert_eq!(Dropped::default().to_string(), "none");
        let back: Dropped = serde_json::from_str(r#"{"empty":1}"#).unwrap();
        assert_eq!(back.empty, 1);
    }
}
