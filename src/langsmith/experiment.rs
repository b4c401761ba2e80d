//! An evaluation as a LangSmith experiment: one run per query (its retrieved chunks with ids,
//! offsets and text, and the answer when there is one), one feedback per query and metric
//! (`key` = the metric's report name, custom [`Metric`](crate::metrics::Metric)s included),
//! and one summary feedback per metric holding its mean.
//!
//! Every object gets its id from the experiment's id and what it stands for, and a local
//! [journal](Experiment::journal) records what the server acknowledged. An upload that fails
//! (the network, the service, the process) is continued by running it again with the same
//! name and journal: acknowledged objects are not sent again, and an object whose answer was
//! lost is recognised by the server by its id.

use super::client::{is_conflict, LangSmith, NewFeedback, NewRun};
use super::dataset::row_of;
use super::ids::{derived_uuid, random_uuid, root_dotted_order, Timestamp};
use super::journal::Journal;
use crate::error::{DatasetError, Error, LangSmithError, Result};
use crate::eval::EvaluationResult;
use crate::metrics::{Figures, QueryResult, ResultLevel, RunResult};
use camino::{Utf8Path, Utf8PathBuf};
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

/// An experiment to upload; see the [module docs](crate::langsmith).
///
/// ```no_run
/// # async fn f(result: rag_eval::eval::EvaluationResult) -> rag_eval::Result<()> {
/// use rag_eval::langsmith::{Experiment, LangSmith};
/// let report = Experiment::new("bm25-recursive-400")
///     .dataset("handbook")
///     .upload(&LangSmith::from_env()?, &result)
///     .await?;
/// println!("{} runs, {} feedback", report.runs_sent, report.feedback_sent);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Experiment {
    name: String,
    dataset: Option<String>,
    description: Option<String>,
    metadata: Map<String, Value>,
    journal: Option<Utf8PathBuf>,
    batch_size: usize,
    answers: HashMap<String, String>,
}

/// What an upload sent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UploadReport {
    /// The experiment's id.
    pub session_id: String,
    /// Runs sent by this call.
    pub runs_sent: usize,
    /// Feedback (per query and summary) sent by this call.
    pub feedback_sent: usize,
    /// Objects an earlier call had already delivered, not sent again.
    pub already_acknowledged: usize,
    /// The journal used.
    pub journal: Utf8PathBuf,
}

impl Experiment {
    /// An experiment named `name` (unique in the workspace).
    pub fn new(name: impl Into<String>) -> Self {
        Experiment {
            name: name.into(),
            dataset: None,
            description: None,
            metadata: Map::new(),
            journal: None,
            batch_size: 100,
            answers: HashMap::new(),
        }
    }

    /// Links the experiment to the LangSmith dataset `name` (pushed with
    /// [`push`](super::push)): each run points at the example of its query, so LangSmith
    /// compares experiments over the dataset. Every query must have its example there.
    pub fn dataset(mut self, name: impl Into<String>) -> Self {
        self.dataset = Some(name.into());
        self
    }

    /// A description shown with the experiment.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = Some(text.into());
        self
    }

    /// Adds a metadata entry (the run's configuration is recorded without it).
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Where the upload records its progress (default [`Experiment::default_journal`]).
    pub fn journal(mut self, path: impl Into<Utf8PathBuf>) -> Self {
        self.journal = Some(path.into());
        self
    }

    /// Runs per request (default 100, at least 1).
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n.max(1);
        self
    }

    /// Generated answers by query id, uploaded as each run's `answer` output.
    pub fn answers(mut self, answers: HashMap<String, String>) -> Self {
        self.answers = answers;
        self
    }

    /// `target/rag-eval-langsmith/NAME.jsonl`, with characters other than letters, digits,
    /// `-`, `_` and `.` in the name replaced by `_`.
    pub fn default_journal(name: &str) -> Utf8PathBuf {
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Utf8Path::new("target/rag-eval-langsmith").join(format!("{safe}.jsonl"))
    }

    /// Uploads `result` (see the [module docs](crate::langsmith)). On failure, what was acknowledged stays
    /// in the journal and the same call continues from there.
    pub async fn upload(
        &self,
        client: &LangSmith,
        result: &EvaluationResult,
    ) -> Result<UploadReport> {
        let scores = &result.scores;
        if result.retrieved.len() != scores.per_query.len() {
            return Err(LangSmithError::Unpaired {
                queries: scores.per_query.len(),
                lists: result.retrieved.len(),
            }
            .into());
        }
        let journal_path = self
            .journal
            .clone()
            .unwrap_or_else(|| Experiment::default_journal(&self.name));
        let mut journal = Journal::open(
            &journal_path,
            &self.name,
            scores.dataset_hash.as_deref(),
            Some(&result_hash(result, &self.answers)),
            random_uuid,
        )?;
        let session = journal.session_id().to_owned();
        let mut report = UploadReport {
            session_id: session.clone(),
            runs_sent: 0,
            feedback_sent: 0,
            already_acknowledged: 0,
            journal: journal_path,
        };

        // Before anything is sent: every query must have its example.
        let (dataset_id, examples) = match &self.dataset {
            Some(name) => {
                let Some(d) = client.find_dataset(name).await? else {
                    return Err(Error::Dataset(DatasetError::new(name, format!(
                        "no LangSmith dataset named `{name}` at {} (push it with `rag-eval dataset push`)",
                        client.endpoint()
                    ))));
                };
                let by_row: HashMap<String, String> = client
                    .list_examples(&d.id)
                    .await?
                    .iter()
                    .map(|e| {
                        let row = row_of(e);
                        let id = row["id"].as_str().unwrap_or_default().to_owned();
                        (id, e.id.clone())
                    })
                    .collect();
                let missing: Vec<&str> = scores
                    .per_query
                    .iter()
                    .map(|q| q.id.as_str())
                    .filter(|id| !by_row.contains_key(*id))
                    .collect();
                if !missing.is_empty() {
                    return Err(Error::Dataset(DatasetError::new(name, format!(
                        "{} of {} queries have no example in LangSmith dataset `{name}` (first: {}); push the dataset the run was made on",
                        missing.len(),
                        scores.per_query.len(),
                        missing.iter().take(5).copied().collect::<Vec<_>>().join(", ")
                    ))));
                }
                (Some(d.id), by_row)
            }
            None => (None, HashMap::new()),
        };

        let start = Timestamp::now();
        if journal.is_acked(&session) {
            report.already_acknowledged += 1;
        } else {
            let created = client
                .create_session(
                    &session,
                    &self.name,
                    self.description.as_deref(),
                    dataset_id.as_deref(),
                    self.session_metadata(result),
                    &start,
                )
                .await;
            match created {
                Ok(_) => {}
                Err(e) if is_conflict(&e) => {
                    if client.read_session(&session).await?.is_none() {
                        return Err(LangSmithError::ExperimentExists(self.name.clone()).into());
                    }
                }
                Err(e) => return Err(e),
            }
            journal.ack([session.as_str()])?;
        }

        // Runs, in batches.
        let runs: Vec<NewRun> = scores
            .per_query
            .iter()
            .zip(&result.retrieved)
            .enumerate()
            .map(|(position, (q, chunks))| {
                let id = derived_uuid(&[&session, "run", &q.id]);
                let mut outputs = json!({
                    "retrieved": chunks.iter().map(|c| json!({
                        "id": c.chunk.id.as_str(),
                        "doc_id": c.chunk.span.doc.as_str(),
                        "start": c.chunk.span.start,
                        "end": c.chunk.span.end,
                        "text": c.chunk.content,
                        "score": c.score,
                    })).collect::<Vec<_>>(),
                });
                if let Some(a) = self.answers.get(&q.id) {
                    outputs["answer"] = Value::from(a.as_str());
                }
                let mut metadata = json!({"query_id": q.id, "position": position});
                if let Some(k) = scores.k {
                    metadata["k"] = Value::from(k);
                }
                if let Some(d) = &q.difficulty {
                    metadata["difficulty"] = Value::from(d.as_str());
                }
                NewRun {
                    dotted_order: root_dotted_order(&start, &id),
                    trace_id: id.clone(),
                    id,
                    name: scores
                        .config
                        .as_ref()
                        .and_then(|c| c.retriever.clone())
                        .unwrap_or_else(|| "rag-eval".to_owned()),
                    run_type: "chain".into(),
                    start_time: start.rfc3339(),
                    end_time: Some(start.rfc3339()),
                    inputs: json!({"query": q.query.clone().unwrap_or_default()}),
                    outputs: Some(outputs),
                    session_id: session.clone(),
                    reference_example_id: examples.get(&q.id).cloned(),
                    extra: json!({"metadata": metadata}),
                }
            })
            .collect();
        let (done, pending): (Vec<NewRun>, Vec<NewRun>) =
            runs.into_iter().partition(|r| journal.is_acked(&r.id));
        report.already_acknowledged += done.len();
        for batch in pending.chunks(self.batch_size) {
            match client.batch_runs(batch, &[]).await {
                Ok(()) => {}
                Err(e) if is_conflict(&e) => {}
                Err(e) => return Err(e),
            }
            journal.ack(batch.iter().map(|r| r.id.as_str()))?;
            report.runs_sent += batch.len();
            tracing::info!(
                experiment = self.name,
                runs = report.runs_sent,
                "langsmith: runs acknowledged"
            );
        }

        // Feedback: one per query and metric, then one per metric for the mean.
        let source = json!({"type": "model", "metadata": {"source": "rag-eval"}});
        let mut feedback: Vec<NewFeedback> = Vec::new();
        for q in &scores.per_query {
            let run = derived_uuid(&[&session, "run", &q.id]);
            for (key, value) in &q.metrics.0 {
                feedback.push(NewFeedback {
                    id: derived_uuid(&[&session, "feedback", &q.id, key]),
                    run_id: Some(run.clone()),
                    trace_id: Some(run.clone()),
                    session_id: None,
                    key: key.clone(),
                    score: value.is_finite().then_some(*value),
                    comment: None,
                    feedback_source: source.clone(),
                    extra: None,
                });
            }
        }
        for (key, mean) in &scores.metrics.0 {
            feedback.push(NewFeedback {
                id: derived_uuid(&[&session, "summary", key]),
                run_id: None,
                trace_id: None,
                session_id: Some(session.clone()),
                key: key.clone(),
                score: mean.is_finite().then_some(*mean),
                comment: Some(format!("mean over {} queries", scores.queries)),
                feedback_source: source.clone(),
                extra: Some(json!({
                    "std": scores.std.get(key).filter(|s| s.is_finite()),
                    "queries": scores.queries,
                })),
            });
        }
        let (done, pending): (Vec<NewFeedback>, Vec<NewFeedback>) =
            feedback.into_iter().partition(|f| journal.is_acked(&f.id));
        report.already_acknowledged += done.len();
        let in_flight = client.http().config().concurrency;
        let mut answers = stream::iter(pending)
            .map(|f| async move {
                let outcome = match client.create_feedback(&f).await {
                    Err(e) if is_conflict(&e) => Ok(()),
                    other => other,
                };
                (f.id, outcome)
            })
            .buffer_unordered(in_flight);
        let mut first_error = None;
        // Every answer is waited for and recorded, also after a failure, so a continued upload
        // resends only what truly did not arrive.
        while let Some((id, outcome)) = answers.next().await {
            match outcome {
                Ok(()) => {
                    journal.ack([id.as_str()])?;
                    report.feedback_sent += 1;
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }

        let end = format!("end:{session}");
        if journal.is_acked(&end) {
            report.already_acknowledged += 1;
        } else {
            client.end_session(&session, &Timestamp::now()).await?;
            journal.ack([end.as_str()])?;
        }
        Ok(report)
    }

    fn session_metadata(&self, result: &EvaluationResult) -> Map<String, Value> {
        let s = &result.scores;
        let mut m = Map::new();
        m.insert("level".into(), Value::from(s.level.as_str()));
        if let Some(k) = s.k {
            m.insert("k".into(), Value::from(k));
        }
        if let Some(mode) = s.mode {
            m.insert("mode".into(), Value::from(mode.to_string()));
        }
        m.insert("queries".into(), Value::from(s.queries));
        // The report order of the metrics, which feedback keys do not keep.
        let names: Vec<&str> = s.metrics.names().collect();
        m.insert("metrics".into(), json!(names));
        if let Some(h) = &s.dataset_hash {
            m.insert("dataset_hash".into(), Value::from(h.as_str()));
        }
        if let Some(c) = &s.config {
            for (key, value) in [
                ("retriever", &c.retriever),
                ("spec", &c.spec),
                ("chunker", &c.chunker),
                ("dataset", &c.dataset),
            ] {
                if let Some(v) = value {
                    m.insert(key.into(), Value::from(v.as_str()));
                }
            }
        }
        m.extend(self.metadata.clone());
        m
    }
}

/// Brings the experiment `name` back as a [`RunResult`]: per-query figures from its runs'
/// feedback (query id, text and difficulty from the runs), means and standard deviations
/// recomputed, level, k and mode from its metadata. Experiments uploaded by rag-eval come back
/// with their queries and metrics in their original order; for others, queries follow the
/// server's order and metrics are sorted by name.
pub async fn fetch_experiment(client: &LangSmith, name: &str) -> Result<RunResult> {
    let Some(session) = client.find_session(name).await? else {
        return Err(Error::Dataset(DatasetError::new(
            name,
            format!(
                "no LangSmith experiment named `{name}` at {}",
                client.endpoint()
            ),
        )));
    };
    let meta = session
        .extra
        .as_ref()
        .and_then(|e| e.get("metadata"))
        .cloned()
        .unwrap_or(Value::Null);
    let mut runs = client.list_runs(&session.id).await?;
    runs.sort_by_key(|r| {
        r["extra"]["metadata"]["position"]
            .as_u64()
            .unwrap_or(u64::MAX)
    });
    let ids: Vec<String> = runs
        .iter()
        .filter_map(|r| r["id"].as_str().map(str::to_owned))
        .collect();
    let mut scores: HashMap<String, Vec<(String, f64)>> = HashMap::new();
    for f in client.list_feedback(&ids).await? {
        let (Some(run), Some(key), Some(score)) =
            (f["run_id"].as_str(), f["key"].as_str(), f["score"].as_f64())
        else {
            continue;
        };
        scores
            .entry(run.to_owned())
            .or_default()
            .push((key.to_owned(), score));
    }
    let mut names: Vec<String> = match meta["metrics"].as_array() {
        Some(a) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        None => Vec::new(),
    };
    if names.is_empty() {
        let mut all: Vec<String> = scores.values().flatten().map(|(k, _)| k.clone()).collect();
        all.sort();
        all.dedup();
        names = all;
    }
    let mut per_query = Vec::with_capacity(runs.len());
    for r in &runs {
        let run_id = r["id"].as_str().unwrap_or_default();
        let got = scores.get(run_id).cloned().unwrap_or_default();
        let mut figures = Vec::with_capacity(names.len());
        for n in &names {
            let Some((_, v)) = got.iter().find(|(k, _)| k == n) else {
                return Err(Error::Dataset(DatasetError::new(
                    name,
                    format!("LangSmith experiment `{name}`: run {run_id} has no `{n}` feedback"),
                )));
            };
            figures.push((n.clone(), *v));
        }
        let md = &r["extra"]["metadata"];
        per_query.push(QueryResult {
            id: md["query_id"].as_str().unwrap_or(run_id).to_owned(),
            query: r["inputs"]["query"].as_str().map(str::to_owned),
            difficulty: md["difficulty"].as_str().map(str::to_owned),
            metrics: Figures(figures),
            ..QueryResult::default()
        });
    }
    let level = match meta["level"].as_str() {
        Some("chunk") => ResultLevel::Chunk,
        _ => ResultLevel::Token,
    };
    let mut result = RunResult::from_queries(level, names, per_query);
    result.k = meta["k"].as_u64().map(|k| k as usize);
    result.mode = meta["mode"].as_str().and_then(|m| m.parse().ok());
    result.dataset_hash = meta["dataset_hash"].as_str().map(str::to_owned);
    result.group_by_difficulty();
    if let Some(what) = result.non_finite() {
        return Err(Error::Dataset(DatasetError::new(
            name,
            format!(
                "LangSmith experiment `{name}` at {}: {what}: its feedback scores are too large \
             to average",
                client.endpoint()
            ),
        )));
    }
    Ok(result)
}

/// 16 hex digits of SHA-256 over what the upload sends per query: ids, figures (bit for bit),
/// retrieved chunk ids and answers.
fn result_hash(result: &EvaluationResult, answers: &HashMap<String, String>) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for (q, chunks) in result.scores.per_query.iter().zip(&result.retrieved) {
        h.update(q.id.as_bytes());
        h.update([0]);
        for (k, v) in &q.metrics.0 {
            h.update(k.as_bytes());
            h.update(v.to_bits().to_le_bytes());
        }
        for c in chunks {
            h.update(c.chunk.id.as_str().as_bytes());
            h.update([0]);
        }
        if let Some(a) = answers.get(&q.id) {
            h.update(a.as_bytes());
        }
        h.update([1]);
    }
    crate::digest::short_hex(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_journals_are_safe_file_names() {
        assert_eq!(
            Experiment::default_journal("bm25 / v2:k=5"),
            Utf8PathBuf::from("target/rag-eval-langsmith/bm25___v2_k_5.jsonl")
        );
    }
}
