//! Cases that answer: the answers kept while retrieval is scored on their contexts, then judged.

use super::case::Case;
use super::private::BoxFuture;
use crate::chunk::RetrievedChunk;
use crate::generator::RagAnswer;
use crate::judge::{
    add_to_result, judge_all, AnswerMatch, Faithfulness, Judge, JudgeConfig, JudgeInput,
    JudgeSummary, LlmContextPrecision, LlmContextRecall,
};
use crate::level::Level;
use crate::llm::LlmClient;
use crate::metrics::RunResult as Outcome;
use crate::retrieve::Retriever;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// The judges a case runs; `faithfulness` always, the others when a bar names them.
pub(crate) const JUDGES: &[&str] = &[
    "faithfulness",
    "llm_context_precision",
    "llm_context_recall",
    "answer_match",
];

/// An `async fn(&str) -> RagAnswer` case seen as a retriever: its contexts are the ranking,
/// its answers are kept for the judge.
pub(crate) struct AnswerRetriever {
    f: fn(String) -> BoxFuture<RagAnswer>,
    answers: Mutex<HashMap<String, RagAnswer>>,
}

impl AnswerRetriever {
    pub fn new(f: fn(String) -> BoxFuture<RagAnswer>) -> Self {
        AnswerRetriever {
            f,
            answers: Mutex::default(),
        }
    }

    fn answer(&self, query: &str) -> Option<RagAnswer> {
        let answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        answers.get(query).cloned()
    }
}

#[async_trait::async_trait]
impl<L: Level> Retriever<L> for AnswerRetriever {
    fn name(&self) -> String {
        "answering fn".into()
    }

    async fn retrieve(&self, query: &str, k: usize) -> crate::Result<Vec<RetrievedChunk>> {
        let answer = (self.f)(query.to_owned()).await;
        let mut hits = answer.contexts.clone();
        hits.truncate(k);
        self.answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(query.to_owned(), answer);
        Ok(hits)
    }
}

/// What the judge said about a case's answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AnswerReport {
    /// One per judge run.
    pub summaries: Vec<JudgeSummary>,
    /// By query id.
    pub queries: BTreeMap<String, Explained>,
}

/// One query's answer, for the message of its failing test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Explained {
    pub question: String,
    pub answer: String,
    pub unsupported: Vec<String>,
    pub reference: Option<String>,
    /// Judge figures of this query (queries a judge could not score have none).
    pub figures: Vec<(String, f64)>,
}

/// Judges the answers of `outcome`'s queries and adds the judge figures to it.
pub(crate) async fn judge(
    case: &Case,
    answering: &AnswerRetriever,
    outcome: &mut Outcome,
) -> Result<Option<AnswerReport>, String> {
    let Some(spec) = case.spec.judge else {
        return Ok(None);
    };
    let client = cached_client((spec.client)(), case)?;
    let config = JudgeConfig {
        samples: spec.samples.max(1),
        max_invalid_share: spec.max_invalid_share,
        ..JudgeConfig::default()
    };
    let mut judges: Vec<Box<dyn Judge>> = vec![Box::new(Faithfulness::new(client.clone()))];
    let named = |m: &str| case.spec.thresholds.iter().any(|t| t.metric == m);
    if named("llm_context_precision") {
        judges.push(Box::new(LlmContextPrecision::new(client.clone())));
    }
    if named("llm_context_recall") {
        judges.push(Box::new(LlmContextRecall::new(client.clone())));
    }
    if named("answer_match") {
        judges.push(Box::new(AnswerMatch::new(client.clone())));
    }
    let mut queries = BTreeMap::new();
    let mut owned = Vec::new();
    for q in &outcome.per_query {
        let question = q.query.clone().unwrap_or_default();
        let answer = answering.answer(&question).unwrap_or(RagAnswer {
            answer: String::new(),
            contexts: Vec::new(),
        });
        owned.push((q.id.clone(), question, answer));
    }
    let inputs: Vec<JudgeInput<'_>> = owned
        .iter()
        .map(|(id, question, answer)| JudgeInput {
            query_id: id,
            question,
            answer,
            reference: None,
        })
        .collect();
    for (id, question, answer) in &owned {
        queries.insert(
            id.clone(),
            Explained {
                question: question.clone(),
                answer: answer.answer.clone(),
                unsupported: Vec::new(),
                reference: None,
                figures: Vec::new(),
            },
        );
    }
    let mut summaries = Vec::new();
    for judge in &judges {
        let run = judge_all(judge.as_ref(), &inputs, &config).await;
        for j in &run.judgements {
            let Some(explained) = queries.get_mut(&j.query_id) else {
                continue;
            };
            for s in &j.samples {
                for st in s.details.unsupported() {
                    if !explained.unsupported.contains(&st.text) {
                        explained.unsupported.push(st.text.clone());
                    }
                }
            }
            if let Some(score) = j.score() {
                explained.figures.push((j.metric.clone(), score));
            }
        }
        add_to_result(outcome, &run);
        summaries.push(run.summary);
    }
    Ok(Some(AnswerReport { summaries, queries }))
}

/// The judge's client behind the harness's LLM cache: `golden/llm-cache.sqlite` (or
/// `RAG_EVAL_CACHE_PATH`, mode from `RAG_EVAL_CACHE`), so a recorded run replays with no call.
#[cfg(feature = "cache")]
fn cached_client(client: Arc<dyn LlmClient>, case: &Case) -> Result<Arc<dyn LlmClient>, String> {
    let path = camino::Utf8PathBuf::try_from(case.golden_dir().join("llm-cache.sqlite"))
        .map_err(|e| format!("cache path is not UTF-8: {e}"))?;
    let cache = crate::cache::Cache::from_env_or(path).map_err(|e| e.to_string())?;
    Ok(Arc::new(crate::cache::CachedLlm::new(
        client,
        Arc::new(cache),
    )))
}

/// Without the `cache` feature the judge is called directly.
#[cfg(not(feature = "cache"))]
fn cached_client(client: Arc<dyn LlmClient>, _: &Case) -> Result<Arc<dyn LlmClient>, String> {
    Ok(client)
}
