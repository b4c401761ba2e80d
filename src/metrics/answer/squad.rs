//! Exact match and token F1 as the official SQuAD v1.1 evaluation script computes them.

use super::{counts, py_split, require_references, AnswerMetricError};
use regex::Regex;
use std::sync::LazyLock;

/// Python's `string.punctuation`.
const PUNCTUATION: &str = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/// The SQuAD script's `normalize_answer`: lowercase, delete ASCII punctuation
/// (`string.punctuation`), replace the words `a`, `an` and `the` with a space, and collapse
/// whitespace to single spaces with none at the ends.
///
/// A word here is a maximal run of letters, digits and `_` in the Unicode sense (general
/// categories L and N, Python's `\w`), so `the` inside `thé` or `the2` is kept. Non-ASCII
/// punctuation (`«`, `—`, `’`) is kept.
///
/// ```
/// use rag_eval::metrics::answer::normalize_answer;
///
/// assert_eq!(normalize_answer("The  Eiffel-Tower, in an hour!"), "eiffeltower in hour");
/// assert_eq!(normalize_answer("«Théâtre» — the end"), "«théâtre» — end");
/// ```
pub fn normalize_answer(text: &str) -> String {
    static WORD: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[\p{L}\p{N}_]+").expect("a valid built-in pattern"));
    let lowered = text.to_lowercase();
    let unpunctuated: String = lowered
        .chars()
        .filter(|c| !PUNCTUATION.contains(*c))
        .collect();
    let without_articles =
        WORD.replace_all(&unpunctuated, |caps: &regex::Captures<'_>| match &caps[0] {
            "a" | "an" | "the" => " ".to_owned(),
            word => word.to_owned(),
        });
    py_split(&without_articles).collect::<Vec<_>>().join(" ")
}

/// SQuAD exact match: 1 when the normalized answer equals the normalized form of some
/// reference, else 0 (`metric_max_over_ground_truths(exact_match_score, …)`).
///
/// Two answers that normalize to the empty string match.
///
/// ```
/// use rag_eval::metrics::answer::exact_match;
///
/// assert_eq!(exact_match("The Beatles.", &["beatles", "The Fab Four"])?, 1.0);
/// assert_eq!(exact_match("Beatles band", &["beatles"])?, 0.0);
/// # Ok::<(), rag_eval::metrics::answer::AnswerMetricError>(())
/// ```
///
/// # Errors
///
/// [`AnswerMetricError::NoReference`] when `references` is empty.
pub fn exact_match<R: AsRef<str>>(
    answer: &str,
    references: &[R],
) -> Result<f64, AnswerMetricError> {
    require_references(references, 0)?;
    let answer = normalize_answer(answer);
    let hit = references
        .iter()
        .any(|r| normalize_answer(r.as_ref()) == answer);
    Ok(if hit { 1.0 } else { 0.0 })
}

/// SQuAD token F1: the best over the references of the F1 between the bags of whitespace
/// tokens of the normalized answer and reference.
///
/// With `c` the size of the bags' intersection (multiset minimum), precision = c / answer
/// tokens, recall = c / reference tokens, F1 = 2·P·R / (P + R); 0 when `c = 0`, so also 0
/// when both normalize to nothing (the v1.1 script's behaviour).
///
/// ```
/// use rag_eval::metrics::answer::token_f1;
///
/// // answer tokens [eiffel, tower, paris], reference [paris]: P = 1/3, R = 1
/// assert_eq!(token_f1("the Eiffel Tower, Paris", &["Paris"])?, 0.5);
/// assert_eq!(token_f1("", &[""])?, 0.0);
/// # Ok::<(), rag_eval::metrics::answer::AnswerMetricError>(())
/// ```
///
/// # Errors
///
/// [`AnswerMetricError::NoReference`] when `references` is empty.
pub fn token_f1<R: AsRef<str>>(answer: &str, references: &[R]) -> Result<f64, AnswerMetricError> {
    require_references(references, 0)?;
    let answer = normalize_answer(answer);
    let answer_tokens: Vec<&str> = py_split(&answer).collect();
    let answer_counts = counts(answer_tokens.iter().copied());
    let mut best = 0.0_f64;
    for reference in references {
        let reference = normalize_answer(reference.as_ref());
        let reference_tokens: Vec<&str> = py_split(&reference).collect();
        let common: usize = counts(reference_tokens.iter().copied())
            .iter()
            .map(|(token, &n)| answer_counts.get(token).map_or(0, |&a| a.min(n)))
            .sum();
        if common == 0 {
            continue;
        }
        let precision = common as f64 / answer_tokens.len() as f64;
        let recall = common as f64 / reference_tokens.len() as f64;
        best = best.max(2.0 * precision * recall / (precision + recall));
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization_steps() {
        assert_eq!(normalize_answer("  A  cat "), "cat");
        assert_eq!(normalize_answer("an_apple"), "anapple");
        assert_eq!(normalize_answer("The-the"), "thethe");
        assert_eq!(normalize_answer("the the, a an"), "");
        assert_eq!(normalize_answer("thé the2 the\u{301}"), "thé the2 \u{301}");
        assert_eq!(normalize_answer("Ünïcode ÀB"), "ünïcode àb");
        assert_eq!(normalize_answer("3.14 1,000"), "314 1000");
    }

    #[test]
    fn hand_worked_f1() {
        // answer [cat, sat, mat, mat], reference [cat, mat]: c = 2, P = 1/2, R = 1, F1 = 2/3.
        let f = token_f1("the cat sat on a mat mat", &["Cat; mat."]).unwrap();
        assert_eq!(
            normalize_answer("the cat sat on a mat mat"),
            "cat sat on mat mat"
        );
        // "on" is a token too: [cat, sat, on, mat, mat] → P = 2/5, R = 1, F1 = 4/7.
        assert!((f - 4.0 / 7.0).abs() < 1e-15, "{f}");
        assert_eq!(token_f1("x", &["y", "x y"]).unwrap(), 2.0 / 3.0);
    }

    #[test]
    fn empty_answers() {
        assert_eq!(exact_match("", &[""]).unwrap(), 1.0);
        assert_eq!(exact_match("The.", &["a"]).unwrap(), 1.0);
        assert_eq!(token_f1("The.", &["a"]).unwrap(), 0.0);
        assert_eq!(exact_match("", &["x"]).unwrap(), 0.0);
        assert_eq!(
            token_f1("x", &[] as &[String]),
            Err(AnswerMetricError::NoReference { row: 0 })
        );
    }
}
