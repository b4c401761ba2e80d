//! The answer metrics as the registry builds them: one figure per query from the answer and
//! the row's reference answers.

use super::{exact_match, rouge, sentence_bleu, sentence_chrf, token_f1, AnswerMetricError};

/// What an answer metric sees for one query.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AnswerInput<'a> {
    /// The generated answer.
    pub answer: &'a str,
    /// The row's reference answers (empty when it has none).
    pub references: &'a [String],
    /// The answer's embedding, when the caller has an embedder.
    pub answer_embedding: Option<&'a [f32]>,
    /// The reference answers' embeddings, in the order of `references` (empty without an
    /// embedder).
    pub reference_embeddings: &'a [Vec<f32>],
}

impl<'a> AnswerInput<'a> {
    /// An input without embeddings.
    pub fn new(answer: &'a str, references: &'a [String]) -> Self {
        AnswerInput {
            answer,
            references,
            answer_embedding: None,
            reference_embeddings: &[],
        }
    }

    /// The same input with the answer's and the references' embeddings.
    pub fn with_embeddings(mut self, answer: &'a [f32], references: &'a [Vec<f32>]) -> Self {
        self.answer_embedding = Some(answer);
        self.reference_embeddings = references;
        self
    }
}

/// A per-query answer metric.
pub trait AnswerMetric: Send + Sync {
    /// The report name, e.g. `rouge_l`.
    fn name(&self) -> &str;
    /// The value for one query in `[0, 1]`, or `None` when the query cannot be scored (no
    /// reference answer, no embeddings): the query is then left out of the mean and counted,
    /// never scored 0.
    fn compute(&self, input: &AnswerInput<'_>) -> Option<f64>;
}

type Score = fn(&str, &[String]) -> Result<f64, AnswerMetricError>;

/// A lexical metric: a function of the answer and the reference answers.
#[derive(Clone, Copy)]
pub struct Lexical {
    name: &'static str,
    score: Score,
}

impl std::fmt::Debug for Lexical {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lexical").field("name", &self.name).finish()
    }
}

impl AnswerMetric for Lexical {
    fn name(&self) -> &str {
        self.name
    }

    fn compute(&self, input: &AnswerInput<'_>) -> Option<f64> {
        // The only error of the sentence-level functions is a missing reference.
        (self.score)(input.answer, input.references).ok()
    }
}

impl Lexical {
    /// The lexical metric reported as `name`; `None` for a name that is not one.
    pub fn named(name: &str) -> Option<Lexical> {
        // Each name as written here: the metric's own `&'static str`.
        let (name, score): (&'static str, Score) = match name {
            "bleu" => ("bleu", |a, r| sentence_bleu(a, r).map(|b| b.score)),
            "chrf" => ("chrf", |a, r| sentence_chrf(a, r)),
            "rouge_1" => ("rouge_1", |a, r| rouge(a, r).map(|s| s.rouge_1.f1)),
            "rouge_2" => ("rouge_2", |a, r| rouge(a, r).map(|s| s.rouge_2.f1)),
            "rouge_l" => ("rouge_l", |a, r| rouge(a, r).map(|s| s.rouge_l.f1)),
            "rouge_1_precision" => ("rouge_1_precision", |a, r| {
                rouge(a, r).map(|s| s.rouge_1.precision)
            }),
            "rouge_2_precision" => ("rouge_2_precision", |a, r| {
                rouge(a, r).map(|s| s.rouge_2.precision)
            }),
            "rouge_l_precision" => ("rouge_l_precision", |a, r| {
                rouge(a, r).map(|s| s.rouge_l.precision)
            }),
            "rouge_1_recall" => ("rouge_1_recall", |a, r| {
                rouge(a, r).map(|s| s.rouge_1.recall)
            }),
            "rouge_2_recall" => ("rouge_2_recall", |a, r| {
                rouge(a, r).map(|s| s.rouge_2.recall)
            }),
            "rouge_l_recall" => ("rouge_l_recall", |a, r| {
                rouge(a, r).map(|s| s.rouge_l.recall)
            }),
            "exact_match" => ("exact_match", |a, r| exact_match(a, r)),
            "token_f1" => ("token_f1", |a, r| token_f1(a, r)),
            _ => return None,
        };
        Some(Lexical { name, score })
    }
}

/// `answer_similarity`: the cosine between the answer's embedding and a reference answer's,
/// the best over the references (as the SQuAD script takes the best reference for EM and F1),
/// clamped to `[0, 1]` (an answer pointing away from every reference is as dissimilar as it
/// gets).
#[derive(Debug, Clone, Copy, Default)]
pub struct AnswerSimilarity;

impl AnswerMetric for AnswerSimilarity {
    fn name(&self) -> &str {
        "answer_similarity"
    }

    fn compute(&self, input: &AnswerInput<'_>) -> Option<f64> {
        let answer = input.answer_embedding?;
        input
            .reference_embeddings
            .iter()
            .map(|r| f64::from(crate::vector::cosine(answer, r)).clamp(0.0, 1.0))
            .max_by(f64::total_cmp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_its_figure() {
        let refs = ["The cat sat on the mat.".to_owned()];
        let input = AnswerInput::new("the cat sat", &refs);
        let r = rouge("the cat sat", &refs).unwrap();
        let f = |n: &str| Lexical::named(n).unwrap().compute(&input).unwrap();
        assert_eq!(f("rouge_1"), r.rouge_1.f1);
        assert_eq!(f("rouge_2_precision"), r.rouge_2.precision);
        assert_eq!(f("rouge_l_recall"), r.rouge_l.recall);
        // "the cat sat" against six words: unigram precision 1, recall 3/6 (the stemmer keeps
        // every word).
        assert_eq!((f("rouge_1_precision"), f("rouge_1_recall")), (1.0, 0.5));
        assert_eq!(f("exact_match"), 0.0);
        assert_eq!(f("token_f1"), token_f1("the cat sat", &refs).unwrap());
        assert_eq!(
            f("bleu"),
            sentence_bleu("the cat sat", &refs).unwrap().score
        );
        assert_eq!(f("chrf"), sentence_chrf("the cat sat", &refs).unwrap());
        assert!(Lexical::named("span_recall").is_none());
        assert!(Lexical::named("answer_similarity").is_none());
    }

    #[test]
    fn without_a_reference_there_is_no_figure() {
        for name in ["bleu", "chrf", "rouge_l", "exact_match", "token_f1"] {
            let m = Lexical::named(name).unwrap();
            assert_eq!(
                m.compute(&AnswerInput::new("an answer", &[])),
                None,
                "{name}"
            );
        }
        let none = AnswerInput::new("a", &[]);
        assert_eq!(AnswerSimilarity.compute(&none), None);
    }

    #[test]
    fn similarity_is_the_best_cosine_over_the_references() {
        let refs = ["x".to_owned(), "y".to_owned()];
        let answer = [1.0f32, 0.0];
        let embeddings = vec![vec![0.0f32, 1.0], vec![1.0, 1.0]];
        let input = AnswerInput::new("a", &refs).with_embeddings(&answer, &embeddings);
        let got = AnswerSimilarity.compute(&input).unwrap();
        assert!(
            (got - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-6,
            "{got}"
        );
        let opposite = vec![vec![-1.0f32, 0.0]];
        let input = AnswerInput::new("a", &refs[..1]).with_embeddings(&answer, &opposite);
        assert_eq!(AnswerSimilarity.compute(&input), Some(0.0));
    }
}
