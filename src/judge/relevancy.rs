//! Answer relevancy: questions generated back from the answer, compared with the real one.

use super::driver::{LlmJudge, Rubric, Sample, Sealed};
use crate::embed::{cosine, Embedder};
use crate::llm::LlmClient;
use crate::metrics::{GeneratedQuestion, JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage};
use serde::Deserialize;
use serde_json::json;

/// Placeholders the answer relevancy prompt may use.
pub const ANSWER_RELEVANCY_PLACEHOLDERS: &[&str] = &["answer", "n"];

/// `answer_relevancy` (ragas' definition): the judge writes N questions the answer would
/// answer (default 3) and says whether the answer is noncommittal; the score is the mean cosine
/// between the real question's embedding (`embed_query`) and the generated questions'
/// (`embed`), or 0 when the answer is noncommittal. The N questions come from one request.
/// An empty answer scores 0 without a call. Cosines are not clipped, as in ragas: unrelated
/// questions can give a mean slightly below 0 with some embedders.
pub type AnswerRelevancy<C, E> = LlmJudge<C, AnswerRelevancyRubric<E>>;

impl<C: LlmClient, E: Embedder> AnswerRelevancy<C, E> {
    /// The judge with the built-in prompt and 3 questions.
    pub fn new(llm: C, embedder: E) -> Self {
        LlmJudge::asking(
            llm,
            AnswerRelevancyRubric {
                embedder,
                questions: 3,
            },
        )
    }

    /// Generates `n` questions per answer (at least 1).
    pub fn with_questions(mut self, n: usize) -> Self {
        self.rubric.questions = n.max(1);
        self
    }
}

/// What [`AnswerRelevancy`] asks, and the embedder that compares the questions.
pub struct AnswerRelevancyRubric<E> {
    embedder: E,
    questions: usize,
}

impl<E> AnswerRelevancyRubric<E> {
    fn schema(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
                "questions": {
                    "type": "array",
                    "items": {"type": "string"},
                    "minItems": self.questions,
                    "maxItems": self.questions
                },
                "noncommittal": {"type": "boolean"}
            },
            "required": ["questions", "noncommittal"],
            "additionalProperties": false
        })
    }
}

#[derive(Deserialize)]
struct Reply {
    questions: Vec<String>,
    noncommittal: bool,
}

impl<E> Sealed for AnswerRelevancyRubric<E> {}

#[async_trait::async_trait]
impl<E: Embedder> Rubric for AnswerRelevancyRubric<E> {
    const NAME: &'static str = "answer_relevancy";
    const PLACEHOLDERS: &'static [&'static str] = ANSWER_RELEVANCY_PLACEHOLDERS;
    const PROMPT: &'static str = include_str!("prompts/answer_relevancy.md");

    async fn sample(&self, s: Sample<'_>) -> JudgeSample {
        let answer = s.input.answer.answer.trim();
        if answer.is_empty() {
            let mut empty = s.scored(
                0.0,
                JudgeDetails::AnswerRelevancy {
                    questions: Vec::new(),
                    noncommittal: true,
                },
                JudgeUsage::default(),
            );
            empty.message = Some("the answer is empty".into());
            return empty;
        }
        let n = self.questions.to_string();
        let want = self.questions;
        let values = [("answer", answer), ("n", n.as_str())];
        let reply = s.ask(&values, self.schema(), |r: Reply| {
            let mut questions: Vec<String> = r
                .questions
                .into_iter()
                .map(|q| q.trim().to_owned())
                .filter(|q| !q.is_empty())
                .collect();
            if questions.is_empty() {
                return Err("`questions` holds no question".to_owned());
            }
            questions.truncate(want);
            Ok((questions, r.noncommittal))
        });
        let ((questions, noncommittal), usage) = match reply.await {
            Ok(v) => v,
            Err(failed) => return failed,
        };
        let embedded = async {
            let q = self.embedder.embed_query(s.input.question).await?;
            let g = self.embedder.embed(&questions).await?;
            Ok::<_, crate::Error>((q, g))
        };
        let (q, generated) = match embedded.await {
            Ok((q, g)) if g.len() == questions.len() => (q, g),
            Ok((_, g)) => {
                let why = format!(
                    "the embedder returned {} vectors for {} questions",
                    g.len(),
                    questions.len()
                );
                return s.unscored(JudgeStatus::Error, why, usage);
            }
            Err(e) => return s.failed(&e, usage),
        };
        let questions: Vec<GeneratedQuestion> = questions
            .into_iter()
            .zip(&generated)
            .map(|(question, v)| GeneratedQuestion {
                question,
                cosine: f64::from(cosine(&q, v)),
            })
            .collect();
        let mean = questions.iter().map(|g| g.cosine).sum::<f64>() / questions.len() as f64;
        let details = JudgeDetails::AnswerRelevancy {
            questions,
            noncommittal,
        };
        s.scored(if noncommittal { 0.0 } else { mean }, details, usage)
    }
}
