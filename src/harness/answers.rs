//! Cases that answer: the answers kept while retrieval is scored on their contexts, then
//! scored against the reference answers and judged.

use super::private::{BoxFuture, CaseSpec};
use super::progress::Task;
use crate::chunk::{PositionAwareChunk, RetrievedChunk};
use crate::chunker::PositionAwareChunker;
use crate::corpus::Corpus;
use crate::embed::Embedder;
use crate::generator::{Generator, RagAnswer};
use crate::judge::{
    add_to_result, judge_all_reporting, AnswerMatch, AnswerRelevancy, Faithfulness, Judge,
    JudgeConfig, JudgeInput, JudgeStatus, JudgeSummary, LlmContextPrecision, LlmContextRecall,
};
use crate::level::Level;
use crate::llm::LlmClient;
use crate::metrics::RunResult as Outcome;
use crate::retrieve::{BatchError, Retriever};
use crate::span::CharSpan;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// The answers of a case's queries, by question, kept while retrieval is scored; each one
/// kept, and each query judged, counts on the case's progress line when it has one.
#[derive(Clone, Default)]
pub(crate) struct AnswerLog(Arc<Mutex<HashMap<String, RagAnswer>>>, Option<Arc<Task>>);

impl AnswerLog {
    /// A log counting on `progress`'s line.
    pub(crate) fn showing(progress: Option<Arc<Task>>) -> Self {
        AnswerLog(Arc::default(), progress)
    }

    fn insert(&self, question: &str, answer: RagAnswer) {
        let mut answers = self.0.lock().unwrap_or_else(|e| e.into_inner());
        answers.insert(question.to_owned(), answer);
        if let Some(progress) = &self.1 {
            progress.add(1);
        }
    }

    fn get(&self, question: &str) -> Option<RagAnswer> {
        let answers = self.0.lock().unwrap_or_else(|e| e.into_inner());
        answers.get(question).cloned()
    }
}

/// An `async fn(&str) -> RagAnswer` case seen as a retriever: its contexts are the ranking,
/// its answers are kept for the judge.
///
/// A context placed in the corpus ignoring case, whitespace or Unicode form (as
/// [`HttpRag::answer`](crate::service::HttpRag::answer) places the text a service sends) keeps
/// the service's text in the answer, which the judges read; the ranking scored for retrieval
/// holds the document's own text at that span instead. A context whose text differs from the
/// document's in any other way is ranked as given, for the check of retrieved text to name.
pub(crate) struct AnswerRetriever {
    f: Box<dyn Fn(String) -> BoxFuture<RagAnswer> + Send + Sync>,
    log: AnswerLog,
    corpus: std::sync::OnceLock<Arc<Corpus>>,
    /// What reports and run records call it.
    name: String,
}

impl AnswerRetriever {
    pub fn new(
        f: impl Fn(String) -> BoxFuture<RagAnswer> + Send + Sync + 'static,
        log: AnswerLog,
    ) -> Self {
        AnswerRetriever {
            f: Box::new(f),
            log,
            corpus: std::sync::OnceLock::new(),
            name: "answering fn".into(),
        }
    }

    /// The same, called `name` in reports and run records.
    #[cfg_attr(not(feature = "traces"), allow(dead_code))]
    pub fn named(mut self, name: String) -> Self {
        self.name = name;
        self
    }
}

#[async_trait::async_trait]
impl<L: Level> Retriever<L> for AnswerRetriever {
    fn name(&self) -> String {
        self.name.clone()
    }

    async fn index(&self, corpus: &Arc<Corpus>) -> crate::Result<()> {
        let _ = self.corpus.set(corpus.clone());
        Ok(())
    }

    async fn retrieve(&self, query: &str, k: usize) -> crate::Result<Vec<RetrievedChunk>> {
        let answer = (self.f)(query.to_owned()).await;
        // A context not found in the corpus is judged, not span-scored: it is no part of the
        // ranking (as `score --answers` leaves it out).
        let mut hits: Vec<RetrievedChunk> = answer
            .contexts
            .iter()
            .filter(|c| !c.chunk.span.is_empty())
            .cloned()
            .collect();
        hits.truncate(k);
        if let Some(corpus) = self.corpus.get() {
            for hit in &mut hits {
                as_in_document(hit, corpus);
            }
        }
        self.log.insert(query, answer);
        Ok(hits)
    }
}

/// `hit` with its document's text at its span, when its own text is that text normalized.
fn as_in_document(hit: &mut RetrievedChunk, corpus: &Corpus) {
    let span = &hit.chunk.span;
    let Some(there) = corpus
        .get(span.doc.as_str())
        .and_then(|d| d.slice(span.start, span.end))
    else {
        return;
    };
    if there != hit.chunk.content && crate::locate::same_normalized(there, &hit.chunk.content) {
        hit.chunk = PositionAwareChunk::new(span.doc.clone(), span.start, span.end, there);
    }
}

/// A case's `Rag` seen as a retriever: its retriever ranks (and is indexed, described and
/// asked for its chunker as itself), its generator answers from the chunks ranked.
pub(crate) struct RagRetriever<L: Level> {
    inner: Arc<dyn Retriever<L>>,
    generator: Arc<dyn Generator>,
    log: AnswerLog,
}

impl<L: Level> RagRetriever<L> {
    pub fn new(
        inner: Arc<dyn Retriever<L>>,
        generator: Arc<dyn Generator>,
        log: AnswerLog,
    ) -> Self {
        RagRetriever {
            inner,
            generator,
            log,
        }
    }
}

#[async_trait::async_trait]
impl<L: Level> Retriever<L> for RagRetriever<L> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn spec(&self) -> crate::spec::Value {
        self.inner.spec()
    }
    fn chunker(&self) -> Option<crate::spec::Value> {
        self.inner.chunker()
    }
    fn chunker_object(&self) -> Option<&dyn PositionAwareChunker> {
        self.inner.chunker_object()
    }
    fn indexed_spans(&self) -> Option<Vec<CharSpan>> {
        self.inner.indexed_spans()
    }
    async fn index(&self, corpus: &Arc<Corpus>) -> crate::Result<()> {
        self.inner.index(corpus).await
    }

    async fn retrieve(&self, query: &str, k: usize) -> crate::Result<Vec<RetrievedChunk>> {
        let hits = self.inner.retrieve(query, k).await?;
        self.answer(query, hits).await
    }

    /// The inner retriever's batch (embedding the queries together, say), then each query's
    /// answer, up to `concurrency` at a time.
    async fn retrieve_many(
        &self,
        queries: &[&str],
        k: usize,
        concurrency: usize,
    ) -> std::result::Result<Vec<Vec<RetrievedChunk>>, BatchError> {
        let ranked = self.inner.retrieve_many(queries, k, concurrency).await?;
        stream::iter(ranked.into_iter().enumerate())
            .map(|(i, hits)| {
                let query = queries[i];
                async move {
                    self.answer(query, hits)
                        .await
                        .map_err(|e| BatchError::new(i..i + 1, e))
                }
            })
            .buffered(concurrency.max(1))
            .try_collect()
            .await
    }
}

impl<L: Level> RagRetriever<L> {
    /// Generates `query`'s answer from `hits` and keeps it; the hits.
    async fn answer(
        &self,
        query: &str,
        hits: Vec<RetrievedChunk>,
    ) -> crate::Result<Vec<RetrievedChunk>> {
        let answer =
            self.generator
                .generate(query, &hits)
                .await
                .map_err(|e| crate::Error::Generation {
                    query: query.to_owned(),
                    source: Box::new(e),
                })?;
        self.log.insert(query, answer);
        Ok(hits)
    }
}

/// A case's answers: what the lexical metrics and the judge said about each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AnswerReport {
    /// One per judge run.
    pub summaries: Vec<JudgeSummary>,
    /// By query id.
    pub queries: BTreeMap<String, Explained>,
    /// The models that judged (the judge client's name).
    #[serde(default)]
    pub judge_models: Vec<String>,
}

/// One query's answer, for the message of its failing test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Explained {
    pub question: String,
    pub answer: String,
    pub unsupported: Vec<String>,
    pub reference: Option<String>,
    /// Answer and judge figures of this query (queries without a reference answer, and
    /// queries a judge could not score, have none for the metrics concerned).
    pub figures: Vec<(String, f64)>,
    /// The judges that could not score this query, each with why (the first failed or invalid
    /// sample's message).
    #[serde(default)]
    pub failed: Vec<(String, String)>,
}

/// Scores the answers of `outcome`'s queries and adds the figures to it: the lexical metrics
/// (and `answer_similarity` with the case's embedder) against each row's reference answers,
/// then the judges' figures when the case has a judge. `references` holds each query's
/// reference answers (none: the metrics that need one give it no figure).
pub(crate) async fn score(
    case: &CaseSpec,
    log: &AnswerLog,
    references: &HashMap<String, Vec<String>>,
    outcome: &mut Outcome,
) -> Result<AnswerReport, String> {
    let mut owned = Vec::new();
    for q in &outcome.per_query {
        let question = q.query.clone().unwrap_or_default();
        let answer = log.get(&question).unwrap_or(RagAnswer {
            answer: String::new(),
            contexts: Vec::new(),
        });
        let refs = references.get(&q.id).cloned().unwrap_or_default();
        owned.push((q.id.clone(), question, answer, refs));
    }
    let mut queries: BTreeMap<String, Explained> = owned
        .iter()
        .map(|(id, question, answer, refs)| {
            let explained = Explained {
                question: question.clone(),
                answer: answer.answer.clone(),
                unsupported: Vec::new(),
                reference: crate::judge::reference_text(refs),
                figures: Vec::new(),
                failed: Vec::new(),
            };
            (id.clone(), explained)
        })
        .collect();
    // Opened only when something calls a model: a case without judge or embedder writes no
    // cache file.
    let cache = if case.judge.is_some() || case.embedder.is_some() {
        Some(cache_of(case)?)
    } else {
        None
    };
    let embedder = match (case.embedder, &cache) {
        (Some(build), Some(cache)) => Some(cached_embedder(build(), cache)),
        _ => None,
    };
    lexical(&owned, embedder.clone(), &mut queries, outcome).await?;
    let (summaries, judge_models) = match (case.judge, &cache) {
        (Some(spec), Some(cache)) => {
            let client = cached_client((spec.client)(), cache);
            let models = vec![client.name()];
            let summaries = judge(
                case,
                spec,
                client,
                embedder,
                &owned,
                &mut queries,
                outcome,
                log.1.as_deref(),
            )
            .await?;
            (summaries, models)
        }
        _ => (Vec::new(), Vec::new()),
    };
    Ok(AnswerReport {
        summaries,
        queries,
        judge_models,
    })
}

/// One query's id, question, answer and reference answers.
type Answered = (String, String, RagAnswer, Vec<String>);

/// The registry's answer metrics for every answer, per query into `queries` and `outcome`,
/// with their means over the queries that have a figure.
async fn lexical(
    owned: &[Answered],
    embedder: Option<Arc<dyn Embedder>>,
    queries: &mut BTreeMap<String, Explained>,
    outcome: &mut Outcome,
) -> Result<(), String> {
    let metrics = crate::metrics::answer_metrics(embedder.is_some());
    let embeddings = match embedder {
        Some(embedder) => {
            let pairs: Vec<(&str, &[String])> = owned
                .iter()
                .map(|(_, _, a, refs)| (a.answer.as_str(), refs.as_slice()))
                .collect();
            let vectors = crate::answers::embed_answers(embedder, &pairs)
                .await
                .map_err(|e| format!("`answer_similarity`: embedding the answers failed: {e}"))?;
            Some(vectors)
        }
        None => None,
    };
    // `owned` is in the order of `outcome.per_query`.
    let given: Vec<(&RagAnswer, &[String])> = owned
        .iter()
        .map(|(_, _, a, refs)| (a, refs.as_slice()))
        .collect();
    crate::answers::add_answers(
        &mut outcome.per_query,
        &given,
        &metrics,
        embeddings.as_deref(),
    );
    for q in &outcome.per_query {
        if let Some(e) = queries.get_mut(&q.id) {
            for m in &metrics {
                if let Some(value) = q.metrics.get(m.name()) {
                    e.figures.push((m.name().to_owned(), value));
                }
            }
        }
    }
    // A metric no query could be scored on has no mean rather than a mean of 0.
    let names: Vec<String> = metrics
        .iter()
        .map(|m| m.name().to_owned())
        .filter(|n| outcome.per_query.iter().any(|q| q.metrics.get(n).is_some()))
        .collect();
    outcome.add_means(&names);
    Ok(())
}

/// Runs the case's judges over the answers and adds their figures.
#[allow(clippy::too_many_arguments)]
async fn judge(
    case: &CaseSpec,
    spec: super::private::JudgeSpec,
    client: Arc<dyn LlmClient>,
    embedder: Option<Arc<dyn Embedder>>,
    owned: &[Answered],
    queries: &mut BTreeMap<String, Explained>,
    outcome: &mut Outcome,
    progress: Option<&Task>,
) -> Result<Vec<JudgeSummary>, String> {
    let config = JudgeConfig {
        samples: spec.samples.max(1),
        max_invalid_share: spec.max_invalid_share,
        concurrency: case
            .concurrency
            .unwrap_or(JudgeConfig::default().concurrency),
        ..JudgeConfig::default()
    };
    let mut judges: Vec<Box<dyn Judge>> = vec![Box::new(Faithfulness::new(client.clone()))];
    let named = |m: &str| case.thresholds.iter().any(|t| t.metric == m);
    match embedder {
        Some(embedder) => {
            judges.push(Box::new(AnswerRelevancy::new(client.clone(), embedder)));
        }
        None if named("answer_relevancy") => {
            return Err(
                "`answer_relevancy` needs an embedder: add `embedder = my_embedder` (a function returning an `Embedder`) to the case".into(),
            );
        }
        None => {}
    }
    if named("llm_context_precision") {
        judges.push(Box::new(LlmContextPrecision::new(client.clone())));
    }
    if named("llm_context_recall") {
        judges.push(Box::new(LlmContextRecall::new(client.clone())));
    }
    if named("answer_match") {
        judges.push(Box::new(AnswerMatch::new(client.clone())));
    }
    // The claims judge reports several figures: it runs when a bar names any of them.
    let claims = crate::metrics::claims::JUDGE;
    if case.thresholds.iter().any(|t| {
        crate::metrics::registry::lookup(&t.metric).and_then(|m| m.judged_by) == Some(claims)
    }) {
        judges.push(Box::new(crate::judge::Claims::new(client.clone())));
    }
    for c in case.criteria {
        let criteria = crate::judge::Criteria::parse(c.text, c.path).map_err(|e| e.to_string())?;
        judges.push(Box::new(crate::judge::CriteriaJudge::new(
            client.clone(),
            criteria,
        )));
    }
    let texts: Vec<Option<String>> = owned
        .iter()
        .map(|(.., refs)| crate::judge::reference_text(refs))
        .collect();
    let inputs: Vec<JudgeInput<'_>> = owned
        .iter()
        .zip(&texts)
        .map(|((id, question, answer, _), reference)| JudgeInput {
            query_id: id,
            question,
            answer,
            reference: reference.as_deref(),
        })
        .collect();
    let mut summaries = Vec::new();
    for judge in &judges {
        // The judges run one after the other: the client's retries meanwhile are this one's.
        let before = client.http_retries();
        if let Some(progress) = progress {
            progress.stage(&format!("judge {}", judge.name()), inputs.len());
        }
        let done = || progress.iter().for_each(|p| p.add(1));
        let mut run = judge_all_reporting(judge.as_ref(), &inputs, &config, &done).await;
        run.summary.retries = client.http_retries().saturating_sub(before);
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
            if j.score().is_some() {
                explained.figures.extend(crate::judge::query_figures(j));
            } else if let Some(why) = j
                .samples
                .iter()
                .filter(|s| matches!(s.status, JudgeStatus::Error | JudgeStatus::Invalid))
                .find_map(|s| s.message.clone())
            {
                explained.failed.push((j.metric.clone(), why));
            }
        }
        add_to_result(outcome, &run);
        summaries.push(run.summary);
    }
    Ok(summaries)
}

/// The harness's LLM cache: `golden/llm-cache.sqlite` (or `RAG_EVAL_CACHE_PATH`, mode from
/// `RAG_EVAL_CACHE`), so a recorded run replays with no call.
#[cfg(feature = "cache")]
fn cache_of(case: &CaseSpec) -> Result<Arc<crate::cache::Cache>, String> {
    let path = camino::Utf8PathBuf::try_from(case.golden_dir().join("llm-cache.sqlite"))
        .map_err(|e| format!("cache path is not UTF-8: {e}"))?;
    let cache = crate::cache::Cache::from_env_or(path).map_err(|e| e.to_string())?;
    Ok(Arc::new(cache))
}

/// The judge's client behind the cache.
#[cfg(feature = "cache")]
fn cached_client(
    client: Arc<dyn LlmClient>,
    cache: &Arc<crate::cache::Cache>,
) -> Arc<dyn LlmClient> {
    Arc::new(crate::cache::CachedLlm::new(client, cache.clone()))
}

/// The relevancy judge's embedder behind the cache.
#[cfg(feature = "cache")]
fn cached_embedder(
    embedder: Arc<dyn Embedder>,
    cache: &Arc<crate::cache::Cache>,
) -> Arc<dyn Embedder> {
    Arc::new(crate::cache::CachedEmbedder::new(embedder, cache.clone()))
}

/// Without the `cache` feature the judge is called directly.
#[cfg(not(feature = "cache"))]
fn cache_of(_: &CaseSpec) -> Result<(), String> {
    Ok(())
}

#[cfg(not(feature = "cache"))]
fn cached_client(client: Arc<dyn LlmClient>, _: &()) -> Arc<dyn LlmClient> {
    client
}

#[cfg(not(feature = "cache"))]
fn cached_embedder(embedder: Arc<dyn Embedder>, _: &()) -> Arc<dyn Embedder> {
    embedder
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::level::TokenLevel;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts its single and its batch calls; every query gets no chunks.
    #[derive(Default)]
    struct Counting {
        single: AtomicUsize,
        batches: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl Retriever<TokenLevel> for Counting {
        fn name(&self) -> String {
            "counting".into()
        }
        async fn retrieve(&self, _: &str, _: usize) -> crate::Result<Vec<RetrievedChunk>> {
            self.single.fetch_add(1, Ordering::SeqCst);
            Ok(Vec::new())
        }
        async fn retrieve_many(
            &self,
            queries: &[&str],
            _: usize,
            _: usize,
        ) -> std::result::Result<Vec<Vec<RetrievedChunk>>, BatchError> {
            self.batches.fetch_add(1, Ordering::SeqCst);
            Ok(vec![Vec::new(); queries.len()])
        }
    }

    /// Answers with the question; fails on `fail`.
    struct Echo;

    #[async_trait::async_trait]
    impl Generator for Echo {
        fn name(&self) -> String {
            "echo".into()
        }
        async fn generate(&self, question: &str, _: &[RetrievedChunk]) -> crate::Result<RagAnswer> {
            if question == "fail" {
                return Err(crate::Error::other("no answer"));
            }
            Ok(RagAnswer {
                answer: question.to_uppercase(),
                contexts: Vec::new(),
            })
        }
    }

    #[test]
    fn a_batch_goes_to_the_inner_retrievers_batch_and_every_query_is_answered() {
        let inner = Arc::new(Counting::default());
        let log = AnswerLog::default();
        let rag = RagRetriever::<TokenLevel>::new(inner.clone(), Arc::new(Echo), log.clone());
        let ranked = pollster::block_on(rag.retrieve_many(&["a", "b", "c"], 3, 2)).unwrap();
        assert_eq!(ranked.len(), 3);
        assert_eq!(inner.batches.load(Ordering::SeqCst), 1);
        assert_eq!(inner.single.load(Ordering::SeqCst), 0);
        assert_eq!(log.get("b").map(|a| a.answer), Some("B".into()));
        // A failed answer names its query's position in the batch.
        let err = pollster::block_on(rag.retrieve_many(&["a", "fail"], 3, 2)).unwrap_err();
        assert_eq!(err.queries, 1..2);
    }
}
