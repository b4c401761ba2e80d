//! chrF as sacrebleu 2.x computes it with its defaults: character n-grams of orders 1..6 over
//! the text with whitespace removed, no word n-grams, β = 2, no lowercasing, no epsilon
//! smoothing (orders missing on either side are left out of the averages).

use super::{counts, is_py_space, require_references, AnswerMetricError};
use std::collections::HashMap;

const CHAR_ORDER: usize = 6;
const BETA: f64 = 2.0;

/// Per order: hypothesis n-grams (0 when the reference has none of that order), reference
/// n-grams, clipped matches.
type Stats = [[usize; 3]; CHAR_ORDER];

/// Sentence-level chrF of `hypothesis` against one or more `references`, identical to
/// `sacrebleu.sentence_chrf(hypothesis, references).score / 100`.
///
/// Definition (Popović 2015, as sacrebleu computes it): whitespace is removed from both
/// strings and character (Unicode scalar value) n-grams counted for n = 1..6. For each order
/// where both sides have n-grams, precision = matches / hypothesis n-grams and recall =
/// matches / reference n-grams (matches clipped by the reference counts). P and R are the
/// means over those orders, and chrF = (1 + β²)·P·R / (β²·P + R) with β = 2, or 0 when
/// P + R = 0 (no order on both sides, or no match). With several references the one with the
/// highest chrF counts (the first on a tie).
///
/// ```
/// use rag_eval::metrics::answer::sentence_chrf;
///
/// assert_eq!(sentence_chrf("Paris", &["Paris"])?, 1.0);
/// assert_eq!(sentence_chrf("The city of Paris", &["Thecity  ofParis"])?, 1.0);
/// assert_eq!(sentence_chrf("", &["Paris"])?, 0.0);
/// # Ok::<(), rag_eval::metrics::answer::AnswerMetricError>(())
/// ```
///
/// # Errors
///
/// [`AnswerMetricError::NoReference`] when `references` is empty.
pub fn sentence_chrf<R: AsRef<str>>(
    hypothesis: &str,
    references: &[R],
) -> Result<f64, AnswerMetricError> {
    require_references(references, 0)?;
    Ok(f_score(&best_statistics(hypothesis, references)))
}

/// Corpus-level chrF, identical to `sacrebleu.corpus_chrf(hypotheses, streams).score / 100`:
/// for each hypothesis the statistics of its best reference (as in [`sentence_chrf`]) are
/// summed over the corpus and chrF computed once from the sums.
///
/// # Errors
///
/// [`AnswerMetricError::LengthMismatch`] when the two slices differ in length,
/// [`AnswerMetricError::NoReference`] for a hypothesis with no reference.
pub fn corpus_chrf<H, Rs, R>(hypotheses: &[H], references: &[Rs]) -> Result<f64, AnswerMetricError>
where
    H: AsRef<str>,
    Rs: AsRef<[R]>,
    R: AsRef<str>,
{
    if hypotheses.len() != references.len() {
        return Err(AnswerMetricError::LengthMismatch {
            answers: hypotheses.len(),
            references: references.len(),
        });
    }
    let mut total: Stats = [[0; 3]; CHAR_ORDER];
    for (row, (hypothesis, refs)) in hypotheses.iter().zip(references).enumerate() {
        let refs = refs.as_ref();
        require_references(refs, row)?;
        let stats = best_statistics(hypothesis.as_ref(), refs);
        for (sum, order) in total.iter_mut().zip(stats) {
            for (s, x) in sum.iter_mut().zip(order) {
                *s += x;
            }
        }
    }
    Ok(f_score(&total))
}

fn best_statistics<R: AsRef<str>>(hypothesis: &str, references: &[R]) -> Stats {
    let hyp: Vec<char> = hypothesis.chars().filter(|&c| !is_py_space(c)).collect();
    let hyp_ngrams = orders(&hyp);
    let mut best: Option<(f64, Stats)> = None;
    for reference in references {
        let chars: Vec<char> = reference
            .as_ref()
            .chars()
            .filter(|&c| !is_py_space(c))
            .collect();
        let ref_ngrams = orders(&chars);
        let mut stats: Stats = [[0; 3]; CHAR_ORDER];
        for (n, (h, r)) in hyp_ngrams.iter().zip(&ref_ngrams).enumerate() {
            let matches = h
                .iter()
                .map(|(ngram, &count)| r.get(ngram).map_or(0, |&c| c.min(count)))
                .sum();
            let hyp_count = if r.is_empty() { 0 } else { h.values().sum() };
            stats[n] = [hyp_count, r.values().sum(), matches];
        }
        let f = f_score(&stats);
        if best.as_ref().is_none_or(|(best_f, _)| f > *best_f) {
            best = Some((f, stats));
        }
    }
    best.map(|(_, stats)| stats).unwrap_or([[0; 3]; CHAR_ORDER])
}

fn orders(chars: &[char]) -> Vec<HashMap<&[char], usize>> {
    (1..=CHAR_ORDER).map(|n| counts(chars.windows(n))).collect()
}

fn f_score(stats: &Stats) -> f64 {
    let factor = BETA * BETA;
    let (mut precision, mut recall, mut orders) = (0.0_f64, 0.0_f64, 0_usize);
    for &[hyp, reference, matches] in stats {
        if hyp > 0 && reference > 0 {
            precision += matches as f64 / hyp as f64;
            recall += matches as f64 / reference as f64;
            orders += 1;
        }
    }
    if orders > 0 {
        precision /= orders as f64;
        recall /= orders as f64;
    }
    if precision + recall == 0.0 {
        return 0.0;
    }
    let mut score = (1.0 + factor) * precision * recall;
    score /= factor * precision + recall;
    score
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked_chrf() {
        // "ab" vs "abc": order 1: P = 2/2, R = 2/3; order 2: P = 1/1, R = 1/2; orders 3..6 have
        // no hypothesis n-grams. P = 1, R = 7/12, chrF = 5·P·R / (4·P + R).
        let (p, r) = (1.0_f64, 7.0 / 12.0);
        let want = 5.0 * p * r / (4.0 * p + r);
        let got = sentence_chrf("ab", &["abc"]).unwrap();
        assert!((got - want).abs() < 1e-15, "{got} vs {want}");
    }

    #[test]
    fn whitespace_is_ignored_and_case_is_not() {
        assert_eq!(sentence_chrf("a b\u{1c}c", &["abc"]).unwrap(), 1.0);
        assert!(sentence_chrf("ABC", &["abc"]).unwrap() == 0.0);
    }

    #[test]
    fn the_best_reference_counts() {
        let one = sentence_chrf("Paris", &["London"]).unwrap();
        let best = sentence_chrf("Paris", &["London", "Paris", "Rome"]).unwrap();
        assert!(one < best);
        assert_eq!(best, 1.0);
    }

    #[test]
    fn corpus_sums_the_statistics() {
        let c = corpus_chrf(&["ab", "xyz"], &[["abc"], ["xyz"]]).unwrap();
        // orders 1..2 from both rows, 3 from the second only.
        let p = (1.0 + 1.0 + 1.0) / 3.0;
        let r = (5.0 / 6.0 + 3.0 / 4.0 + 1.0 / 2.0) / 3.0;
        let want = 5.0 * p * r / (4.0 * p + r);
        assert!((c - want).abs() < 1e-15, "{c} vs {want}");
    }
}
