//! Lexical answer metrics: an answer compared with one or more reference answers, word by word
//! or character by character.
//!
//! Each is a pure function over strings and reproduces a reference implementation exactly
//! (to 1e-9 on the fixture in `tests/fixtures/answer/`), including its treatment of Unicode,
//! punctuation, numbers and empty strings:
//!
//! | function | reference | reported as |
//! | --- | --- | --- |
//! | [`sentence_bleu`], [`corpus_bleu`] | sacrebleu 2.x `sentence_bleu` / `corpus_bleu` (13a tokenizer, `exp` smoothing), divided by 100 | `bleu` |
//! | [`sentence_chrf`], [`corpus_chrf`] | sacrebleu 2.x `sentence_chrf` / `corpus_chrf` (character order 6, word order 0, β = 2), divided by 100 | `chrf` |
//! | [`rouge`] | Google's `rouge-score` 0.1.2, `RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)`, `score_multi` | `rouge_1`, `rouge_2`, `rouge_l` (+ `_precision`, `_recall`) |
//! | [`exact_match`], [`token_f1`] | the SQuAD v1.1 evaluation script (`normalize_answer`, `exact_match_score`, `f1_score`, `metric_max_over_ground_truths`) | `exact_match`, `token_f1` |
//!
//! `answer_similarity` is the cosine between the answer's and the references' embeddings
//! through any [`Embedder`](crate::embed::Embedder) ([`AnswerSimilarity`]), the best over the
//! references.
//!
//! The registry ([`REGISTRY`](super::REGISTRY)) lists them with [`Need::Answer`](super::Need)
//! and builds them as [`AnswerMetric`]s, which `rag-eval score --answers` reports; retrieval
//! runs, which have no answers, never do.
//!
//! Every score is in `[0, 1]` and never NaN. Where the reference raises on an empty list of
//! reference answers, these functions return [`AnswerMetricError::NoReference`].
//!
//! "Whitespace" below always means what Python's `str.split()` splits on: Rust's
//! [`char::is_whitespace`] plus the four information separators U+001C..U+001F.
//!
//! ```
//! use rag_eval::metrics::answer::{exact_match, rouge, sentence_bleu, sentence_chrf, token_f1};
//!
//! let answer = "The Eiffel Tower is in Paris.";
//! let references = ["The Eiffel Tower is located in Paris."];
//! assert!(sentence_bleu(answer, &references)?.score > 0.5);
//! assert!(sentence_chrf(answer, &references)? > 0.6);
//! assert_eq!(rouge(answer, &references)?.rouge_1.recall, 6.0 / 7.0);
//! assert_eq!(exact_match("the Paris!", &["Paris"])?, 1.0);
//! assert_eq!(token_f1("in Paris", &["Paris, France"])?, 0.5);
//! # Ok::<(), rag_eval::metrics::answer::AnswerMetricError>(())
//! ```

mod bleu;
mod chrf;
mod metric;
mod porter;
mod rouge;
mod squad;

pub use bleu::{corpus_bleu, sentence_bleu, tokenize_13a, Bleu};
pub use chrf::{corpus_chrf, sentence_chrf};
pub use metric::{AnswerInput, AnswerMetric, AnswerSimilarity, Lexical};
pub use porter::porter_stem;
pub use rouge::{rouge, rouge_tokens, Rouge, RougeScore};
pub use squad::{exact_match, normalize_answer, token_f1};

/// Why a lexical metric could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerMetricError {
    /// An answer came with an empty list of reference answers.
    #[error("no reference answer for answer {row} (at least one is needed)")]
    NoReference {
        /// The answer's position (0 for the sentence-level functions).
        row: usize,
    },
    /// A corpus-level metric got a different number of answers and reference lists.
    #[error("{answers} answers but {references} lists of reference answers")]
    LengthMismatch {
        /// Number of answers.
        answers: usize,
        /// Number of reference lists.
        references: usize,
    },
}

/// Python's `str.isspace()`: Unicode White_Space plus U+001C..U+001F.
fn is_py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Python's `str.split()` with no separator.
fn py_split(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_py_space).filter(|t| !t.is_empty())
}

fn require_references<R>(references: &[R], row: usize) -> Result<(), AnswerMetricError> {
    if references.is_empty() {
        Err(AnswerMetricError::NoReference { row })
    } else {
        Ok(())
    }
}

/// Counts of the distinct items of `items`.
fn counts<T: std::hash::Hash + Eq>(
    items: impl IntoIterator<Item = T>,
) -> std::collections::HashMap<T, usize> {
    let mut map = std::collections::HashMap::new();
    for item in items {
        *map.entry(item).or_insert(0) += 1;
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_whitespace_includes_the_information_separators() {
        let got: Vec<&str> = py_split(" a\u{1c}b\u{a0}c\u{3000}\u{1f}d\t\n").collect();
        assert_eq!(got, ["a", "b", "c", "d"]);
        // U+200B (zero width space) is not whitespace for Python either.
        assert_eq!(py_split("a\u{200b}b").count(), 1);
    }
}
