//! "Did you mean" suggestions for misspelt keys, metrics and modes.

/// The candidate closest to `word`, if one is close enough to be what was meant.
///
/// Close enough means an edit distance (with transpositions) of at most a third of the longer
/// word, and at least one: a single slip in a short key such as `k` still finds it, while
/// unrelated words of similar length do not.
pub(crate) fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|&candidate| (strsim::damerau_levenshtein(word, candidate), candidate))
        .filter(|&(distance, candidate)| {
            let longest = word.chars().count().max(candidate.chars().count());
            distance > 0 && distance <= (longest / 3).max(1)
        })
        // Ties go to the earlier candidate, so the lists' order decides between equals.
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

/// `, did you mean `x`?` when a candidate is close, else `; expected one of a, b, c`.
pub(crate) fn hint(word: &str, candidates: &[&str], what: &str) -> String {
    match closest(word, candidates) {
        Some(candidate) => format!(", did you mean `{candidate}`?"),
        None => format!("; {what} are {}", candidates.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: &[&str] = &[
        "dataset",
        "corpus",
        "glob",
        "k",
        "tolerance",
        "mode",
        "per_query",
        "ignore",
    ];

    #[test]
    fn finds_one_slip() {
        assert_eq!(closest("tolerence", KEYS), Some("tolerance"));
        assert_eq!(closest("datset", KEYS), Some("dataset"));
        assert_eq!(closest("corups", KEYS), Some("corpus"));
        assert_eq!(closest("per_qeury", KEYS), Some("per_query"));
        assert_eq!(closest("kk", KEYS), Some("k"));
        assert_eq!(closest("moed", KEYS), Some("mode"));
    }

    #[test]
    fn ignores_unrelated_words_and_exact_matches() {
        assert_eq!(closest("colour", KEYS), None);
        assert_eq!(closest("threshold", KEYS), None);
        assert_eq!(closest("x", &["mrr", "map"]), None);
        // An exact match is not a suggestion: callers only ask about words that failed to match.
        assert_eq!(closest("mode", &["mode"]), None);
    }

    #[test]
    fn prefers_the_nearest_then_the_first() {
        let metrics = ["recall", "span_recall", "chunk_recall"];
        assert_eq!(closest("span_recal", &metrics), Some("span_recall"));
        assert_eq!(closest("recal", &metrics), Some("recall"));
        assert_eq!(closest("mapp", &["map", "mrr"]), Some("map"));
        assert_eq!(closest("ab", &["ax", "ay"]), Some("ax"));
    }

    #[test]
    fn hints_read_as_sentences() {
        assert_eq!(
            hint("tolerence", KEYS, "keys"),
            ", did you mean `tolerance`?"
        );
        assert_eq!(
            hint("fast", &["standard", "chroma"], "modes"),
            "; modes are standard, chroma"
        );
    }
}
