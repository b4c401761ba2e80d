//! ROUGE-1, ROUGE-2 and ROUGE-L as Google's `rouge-score` 0.1.2 computes them with
//! `use_stemmer=True`.

use super::{counts, porter::porter_stem, require_references, AnswerMetricError};

/// Precision, recall and F1 of one ROUGE variant.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RougeScore {
    /// Overlap over the answer's size (n-grams or tokens).
    pub precision: f64,
    /// Overlap over the reference's size.
    pub recall: f64,
    /// `2·P·R / (P + R)`, or 0 when `P + R = 0`.
    pub f1: f64,
}

impl RougeScore {
    fn new(precision: f64, recall: f64) -> Self {
        let f1 = if precision + recall > 0.0 {
            2.0 * precision * recall / (precision + recall)
        } else {
            0.0
        };
        RougeScore {
            precision,
            recall,
            f1,
        }
    }
}

/// ROUGE-1, ROUGE-2 and ROUGE-L of an answer.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Rouge {
    /// Unigram overlap.
    pub rouge_1: RougeScore,
    /// Bigram overlap.
    pub rouge_2: RougeScore,
    /// Longest common subsequence of tokens.
    pub rouge_l: RougeScore,
}

/// `rouge-score`'s tokens with its Porter stemmer on: the text lowercased, every run of
/// characters other than ASCII `a-z0-9` taken as a separator, and tokens longer than three
/// characters stemmed with [`porter_stem`](super::porter_stem).
///
/// Letters outside ASCII are separators, so non-Latin text has no tokens (a character whose
/// lowercase form is ASCII, such as the Kelvin sign `K`, counts as that letter).
///
/// ```
/// use rag_eval::metrics::answer::rouge_tokens;
///
/// assert_eq!(rouge_tokens("The runners' 2 running-shoes, naïve!"),
///            ["the", "runner", "2", "run", "shoe", "na", "ve"]);
/// ```
pub fn rouge_tokens(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .map(|t| {
            if t.len() > 3 {
                porter_stem(t)
            } else {
                t.to_owned()
            }
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// ROUGE-1, ROUGE-2 and ROUGE-L (precision, recall, F1) of `answer` against one or more
/// `references`, identical to `rouge-score` 0.1.2's
/// `RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True).score_multi(references, answer)`.
///
/// Definitions (Lin 2004, as `rouge-score` computes them), over [`rouge_tokens`]:
/// - ROUGE-N: overlap = Σ over reference n-grams of min(count in reference, count in answer);
///   precision = overlap / max(answer n-grams, 1), recall = overlap / max(reference n-grams, 1).
/// - ROUGE-L: L = length of the longest common token subsequence; precision = L / answer
///   tokens, recall = L / reference tokens; all 0 when either side has no token.
/// - F1 = 2·P·R / (P + R), 0 when P + R = 0.
/// - Several references: for each variant separately, the scores against the reference with
///   the highest F1 (the first on a tie).
///
/// ```
/// use rag_eval::metrics::answer::rouge;
///
/// let r = rouge("the cat was found under the bed", &["the cat was under the bed"])?;
/// assert_eq!(r.rouge_1.recall, 1.0);
/// assert_eq!(r.rouge_1.precision, 6.0 / 7.0);
/// assert_eq!(r.rouge_2.precision, 4.0 / 6.0);
/// assert_eq!(r.rouge_l.f1, 2.0 * (6.0 / 7.0) / (6.0 / 7.0 + 1.0));
/// # Ok::<(), rag_eval::metrics::answer::AnswerMetricError>(())
/// ```
///
/// # Errors
///
/// [`AnswerMetricError::NoReference`] when `references` is empty.
pub fn rouge<R: AsRef<str>>(answer: &str, references: &[R]) -> Result<Rouge, AnswerMetricError> {
    require_references(references, 0)?;
    let answer = rouge_tokens(answer);
    let mut best: Option<Rouge> = None;
    for reference in references {
        let reference = rouge_tokens(reference.as_ref());
        let scores = Rouge {
            rouge_1: rouge_n(&answer, &reference, 1),
            rouge_2: rouge_n(&answer, &reference, 2),
            rouge_l: rouge_l(&answer, &reference),
        };
        best = Some(match best {
            None => scores,
            Some(b) => Rouge {
                rouge_1: better(b.rouge_1, scores.rouge_1),
                rouge_2: better(b.rouge_2, scores.rouge_2),
                rouge_l: better(b.rouge_l, scores.rouge_l),
            },
        });
    }
    Ok(best.unwrap_or_default())
}

/// numpy's argmax: the later one only when strictly higher.
fn better(so_far: RougeScore, next: RougeScore) -> RougeScore {
    if next.f1 > so_far.f1 {
        next
    } else {
        so_far
    }
}

fn rouge_n(answer: &[String], reference: &[String], n: usize) -> RougeScore {
    let answer_ngrams = counts(answer.windows(n));
    let reference_ngrams = counts(reference.windows(n));
    let overlap: usize = reference_ngrams
        .iter()
        .map(|(ngram, &count)| answer_ngrams.get(ngram).map_or(0, |&a| a.min(count)))
        .sum();
    let answer_total = answer.len().saturating_sub(n - 1);
    let reference_total = reference.len().saturating_sub(n - 1);
    RougeScore::new(
        overlap as f64 / answer_total.max(1) as f64,
        overlap as f64 / reference_total.max(1) as f64,
    )
}

fn rouge_l(answer: &[String], reference: &[String]) -> RougeScore {
    if answer.is_empty() || reference.is_empty() {
        return RougeScore::default();
    }
    let lcs = lcs_len(answer, reference) as f64;
    RougeScore::new(lcs / answer.len() as f64, lcs / reference.len() as f64)
}

/// Length of the longest common subsequence, one DP row at a time.
fn lcs_len<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut row = vec![0_usize; b.len() + 1];
    for x in a {
        let mut diagonal = 0;
        for (j, y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if x == y {
                diagonal + 1
            } else {
                above.max(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The textbook recursion, exponential but obviously right on short inputs.
    fn naive_lcs(a: &[u8], b: &[u8]) -> usize {
        match (a.split_first(), b.split_first()) {
            (Some((x, ra)), Some((y, rb))) if x == y => 1 + naive_lcs(ra, rb),
            (Some((_, ra)), Some((_, rb))) => naive_lcs(ra, b).max(naive_lcs(a, rb)),
            _ => 0,
        }
    }

    proptest! {
        #[test]
        fn lcs_matches_the_recursion(
            a in proptest::collection::vec(0u8..4, 0..9),
            b in proptest::collection::vec(0u8..4, 0..9),
        ) {
            prop_assert_eq!(lcs_len(&a, &b), naive_lcs(&a, &b));
        }
    }

    #[test]
    fn tokens_follow_rouge_score() {
        assert_eq!(rouge_tokens("Hello, WORLD!!"), ["hello", "world"]);
        // three characters or fewer are not stemmed: "was" stays, "runs" → "run"
        assert_eq!(rouge_tokens("was runs"), ["was", "run"]);
        assert_eq!(rouge_tokens("日本語 ü"), Vec::<String>::new());
        assert_eq!(rouge_tokens("\u{212a}ing"), ["king"]);
        assert_eq!(rouge_tokens(""), Vec::<String>::new());
    }

    #[test]
    fn empty_sides() {
        let r = rouge("", &["a reference"]).unwrap();
        assert_eq!(r, Rouge::default());
        let r = rouge("an answer", &[""]).unwrap();
        assert_eq!(r, Rouge::default());
        // one token: no bigram on either side, so ROUGE-2 is 0 while ROUGE-1 is 1
        let r = rouge("Paris", &["paris"]).unwrap();
        assert_eq!(r.rouge_1.f1, 1.0);
        assert_eq!(r.rouge_2, RougeScore::default());
    }

    #[test]
    fn each_variant_takes_its_own_best_reference() {
        // Reference 1 wins on unigrams (same words, shuffled), reference 2 on bigrams.
        let r = rouge("a b c d", &["d c b a", "a b x y"]).unwrap();
        assert_eq!(r.rouge_1.f1, 1.0);
        assert_eq!(r.rouge_2.f1, 1.0 / 3.0);
        assert_eq!(r.rouge_l.f1, 0.5);
    }
}
