//! Answer relevancy: questions generated back from the answer, compared with the real one.

use super::call::ask;
use super::outcome::{GeneratedQuestion, JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage};
use super::{failed, unscored, Judge, JudgeConfig, JudgeInput};
use crate::embed::{cosine, Embedder};
use crate::generator::PromptTemplate;
use crate::llm::LlmClient;
use serde::Deserialize;
use serde_json::json;

const PROMPT: &str = include_str!("prompts/answer_relevancy.md");

/// Placeholders the answer relevancy prompt may use.
pub const ANSWER_RELEVANCY_PLACEHOLDERS: &[&str] = &["answer", "n"];

/// `answer_relevancy` (ragas' definition): the judge writes N questions the answer would
/// answer (default 3) and says whether the answer is noncommittal; the score is the mean cosine
/// between the real question's embedding (`embed_query`) and the generated questions'
/// (`embed`), or 0 when the answer is noncommittal. The N questions come from one request.
/// An empty answer scores 0 without a call. Cosines are not clipped, as in ragas: unrelated
/// questions can give a mean slightly below 0 with some embedders.
pub struct AnswerRelevancy<C, E> {
    llm: C,
    embedder: E,
    questions: usize,
    prompt: PromptTemplate,
}

impl<C: LlmClient, E: Embedder> AnswerRelevancy<C, E> {
    /// The judge with the built-in prompt and 3 questions.
    pub fn new(llm: C, embedder: E) -> Self {
        AnswerRelevancy {
            llm,
            embedder,
            questions: 3,
            prompt: Self::builtin_prompt(),
        }
    }

    /// The prompt shipped with the library (`src/judge/prompts/answer_relevancy.md`).
    pub fn builtin_prompt() -> PromptTemplate {
        PromptTemplate::builtin(PROMPT, "answer_relevancy.md", ANSWER_RELEVANCY_PLACEHOLDERS)
    }

    /// Generates `n` questions per answer (at least 1).
    pub fn with_questions(mut self, n: usize) -> Self {
        self.questions = n.max(1);
        self
    }

    /// Uses `prompt` instead (placeholders [`ANSWER_RELEVANCY_PLACEHOLDERS`]).
    pub fn with_prompt(mut self, prompt: PromptTemplate) -> Self {
        self.prompt = prompt;
        self
    }

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

#[async_trait::async_trait]
impl<C: LlmClient, E: Embedder> Judge for AnswerRelevancy<C, E> {
    fn name(&self) -> &'static str {
        "answer_relevancy"
    }

    fn prompt_version(&self) -> String {
        format!("answer_relevancy/{}", self.prompt.version)
    }

    async fn judge(
        &self,
        input: &JudgeInput<'_>,
        sample: u32,
        config: &JudgeConfig,
    ) -> JudgeSample {
        let mut usage = JudgeUsage::default();
        let answer = input.answer.answer.trim();
        if answer.is_empty() {
            return JudgeSample {
                sample,
                status: JudgeStatus::Ok,
                score: Some(0.0),
                details: JudgeDetails::AnswerRelevancy {
                    questions: Vec::new(),
                    noncommittal: true,
                },
                message: Some("the answer is empty".into()),
                usage,
            };
        }
        let n = self.questions.to_string();
        let text = self.prompt.render(&[("answer", answer), ("n", &n)]);
        let request = config.request(
            text,
            self.prompt_version(),
            sample,
            "answer_relevancy",
            self.schema(),
        );
        let want = self.questions;
        let reply = ask(
            &self.llm,
            request,
            config.repairs,
            &mut usage,
            |r: Reply| {
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
            },
        )
        .await;
        let (questions, noncommittal) = match failed(reply, sample, usage) {
            Ok(v) => v,
            Err(s) => return s,
        };
        let embedded = async {
            let q = self.embedder.embed_query(input.question).await?;
            let g = self.embedder.embed(&questions).await?;
            Ok::<_, crate::Error>((q, g))
        };
        let (q, generated) = match embedded.await {
            Ok((q, g)) if g.len() == questions.len() => (q, g),
            Ok((_, g)) => {
                return unscored(
                    sample,
                    JudgeStatus::Error,
                    format!(
                        "the embedder returned {} vectors for {} questions",
                        g.len(),
                        questions.len()
                    ),
                    usage,
                )
            }
            Err(e) => return unscored(sample, JudgeStatus::Error, e.to_string(), usage),
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
        JudgeSample {
            sample,
            status: JudgeStatus::Ok,
            score: Some(if noncommittal { 0.0 } else { mean }),
            details: JudgeDetails::AnswerRelevancy {
                questions,
                noncommittal,
            },
            message: None,
            usage,
        }
    }
}
