//! A case at run time: its checked inputs, and its outcome computed once per process (or once
//! per nextest run, through a file cache).

#[cfg(feature = "answers")]
use super::answers::AnswerLog;
use super::answers::AnswerReport;
use super::private::{Build, CaseSpec, Retrievers};
use super::progress::{Count, Counted, Counting};
use crate::chunk::RetrievedChunk;
use crate::corpus::Corpus;
use crate::dataset::{self, AnyDataset, Shape};
use crate::eval::{ChunkLevelEvaluation, TokenLevelEvaluation};
use crate::level::{Level, LevelKind};
use crate::metrics::{registry, RunResult as Outcome};
use crate::retrieve::Retriever;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// The evaluation a case runs, at the dataset's level.
enum Prepared {
    Token(TokenLevelEvaluation),
    Chunk(ChunkLevelEvaluation),
}

/// A case's figures and, when it answers, what the judge said.
#[derive(Clone)]
struct Computed {
    outcome: Arc<Outcome>,
    /// Each query's place in `outcome.per_query`, by id: a query's trial finds its figures
    /// without scanning every query's.
    places: Arc<HashMap<String, usize>>,
    answers: Option<Arc<AnswerReport>>,
    /// The chunks retrieved per query (dataset order) and the timings, for an upload.
    retrieved: Arc<Retrieved>,
}

/// What the evaluation retrieved and how long it took.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Retrieved {
    pub chunks: Vec<Vec<RetrievedChunk>>,
    pub timings: Option<crate::eval::Timings>,
    /// The rows of a traces case whose trace did not arrive, each with why: not scored, and
    /// each fails its own trial.
    #[serde(default)]
    pub missing: Vec<(String, String)>,
}

/// Everything a case computes.
type Computation = (Outcome, Option<AnswerReport>, Retrieved);

impl Prepared {
    /// The evaluation over the queries whose ids `keep` accepts.
    fn only(&self, keep: impl Fn(&str) -> bool) -> Prepared {
        match self {
            Prepared::Token(eval) => Prepared::Token(eval.only(keep)),
            Prepared::Chunk(eval) => Prepared::Chunk(eval.only(keep)),
        }
    }
}

/// A case's dataset: read and checked whole in this process, or found row by row through the
/// index an earlier process wrote ([`super::rows`]).
enum Rows {
    Read(Prepared),
    Indexed {
        index: super::rows::Index,
        /// The dataset file's bytes, those the index's key was checked against.
        bytes: Vec<u8>,
        corpus: Arc<Corpus>,
    },
}

/// Inputs checked before any trial runs.
pub(crate) struct Setup {
    rows: Rows,
    /// The dataset file, as messages name it.
    source: camino::Utf8PathBuf,
    /// Query ids in dataset order.
    pub ids: Vec<String>,
    /// Whether the rows say what retrieval should find (not questions with answers only).
    retrieval_truth: bool,
    cache_key: String,
    /// The whole dataset's content hash (a share of its queries records it too).
    dataset_hash: String,
}

/// Which of a case's queries this process computes, and where its summary's figures come
/// from: set from the trials the process runs, before any runs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scope {
    /// The queries whose trials run here; `None`: every query (a summary runs here and
    /// computes the case's whole result).
    pub queries: Option<std::collections::BTreeSet<String>>,
    /// The summary runs here but gates over the run group's merged results (it runs without
    /// the case's other queries, whose results other shards computed).
    #[cfg_attr(not(feature = "runs"), allow(dead_code))]
    pub merged_summary: bool,
    /// With `queries` unset, the queries whose figures this process needs of the whole case's
    /// (a nextest process of a query's test): read from the outcome cache alone.
    pub reads: Option<std::collections::BTreeSet<String>>,
}

/// A case with its setup (or the reason it cannot run) and its lazily computed outcome.
pub(crate) struct Case {
    pub spec: CaseSpec,
    pub setup: Result<Setup, String>,
    scope: OnceLock<Scope>,
    computed: OnceLock<Result<Computed, String>>,
    #[cfg(feature = "runs")]
    merged: OnceLock<Result<Arc<super::shards::Merged>, String>>,
    golden: OnceLock<Option<Arc<super::golden::Golden>>>,
}

impl Case {
    /// Loads and checks the dataset and corpus; every problem here is reported once, by the
    /// case's summary trial, and no query trial is created. The dataset's index is kept in
    /// the harness's folder under the target directory.
    pub fn new(spec: CaseSpec) -> Case {
        Case::indexed_in(spec, harness_dir().as_deref())
    }

    /// [`Case::new`] with the dataset's index kept in `folder` (none: no index).
    pub fn indexed_in(spec: CaseSpec, folder: Option<&Path>) -> Case {
        let setup = prepare(&spec, folder).map_err(|e| format!("case `{}`: {e}", spec.name));
        Case {
            spec,
            setup,
            scope: OnceLock::new(),
            computed: OnceLock::new(),
            #[cfg(feature = "runs")]
            merged: OnceLock::new(),
            golden: OnceLock::new(),
        }
    }

    /// Sets which queries this process computes (once, before any trial runs; unset, all).
    pub fn set_scope(&self, scope: Scope) {
        let _ = self.scope.set(scope);
    }

    fn scope(&self) -> Scope {
        self.scope.get().cloned().unwrap_or_default()
    }

    /// Whether this process needs some of the case's queries only: it computes them, or reads
    /// them from the outcome cache.
    pub fn needs_part(&self) -> bool {
        let scope = self.scope();
        scope.queries.is_some() || scope.reads.is_some()
    }

    /// Whether the summary gates over the run group's merged results.
    #[cfg(feature = "runs")]
    pub fn merged_summary(&self) -> bool {
        self.scope().merged_summary
    }

    /// The run group's results of this case merged, read once by the summary that gates over
    /// them.
    #[cfg(feature = "runs")]
    pub fn merged(&self) -> Result<Arc<super::shards::Merged>, String> {
        self.merged
            .get_or_init(|| {
                if let Some(problem) = super::store_env::problem() {
                    return Err(format!("case `{}`: {problem}", self.spec.name));
                }
                // This process's own queries go in first (a summary alone computes none).
                if self.scope().queries.is_none_or(|q| !q.is_empty()) {
                    self.computed()?;
                }
                let (store, group) = run_group()?.ok_or_else(|| {
                    format!(
                        "case `{}`: no run group to read (set {} and RAG_EVAL_RUNS)",
                        self.spec.name,
                        super::shards::GROUP_ENV
                    )
                })?;
                super::shards::read(store.as_ref(), &group, self.spec.name)
                    .map_err(|e| format!("case `{}`: run group `{group}`: {e}", self.spec.name))?
                    .map(Arc::new)
                    .ok_or_else(|| {
                        format!(
                            "case `{}`: no shard of run group `{group}` recorded it in `{}`",
                            self.spec.name,
                            store.location()
                        )
                    })
            })
            .clone()
    }

    pub fn golden_path(&self) -> PathBuf {
        self.golden_dir().join(format!("{}.snap", self.spec.name))
    }

    pub fn golden_dir(&self) -> PathBuf {
        self.spec.golden_dir()
    }

    /// The golden snapshot (`None` without one), read by the first trial that asks.
    pub fn golden(
        &self,
        read: impl FnOnce() -> Option<super::golden::Golden>,
    ) -> Option<Arc<super::golden::Golden>> {
        self.golden.get_or_init(|| read().map(Arc::new)).clone()
    }

    /// The outcome, computed by the first trial that asks (others wait for it).
    pub fn outcome(&self) -> Result<Arc<Outcome>, String> {
        self.computed().map(|c| c.outcome)
    }

    /// The outcome and the place of query `id` among its per-query results (`None` when this
    /// process did not compute it).
    pub fn query_outcome(&self, id: &str) -> Result<(Arc<Outcome>, Option<usize>), String> {
        self.computed()
            .map(|c| (c.outcome, c.places.get(id).copied()))
    }

    /// The rows of a traces case whose trace did not arrive, each with why (none for any other
    /// case).
    pub fn missing_traces(&self) -> Result<Vec<(String, String)>, String> {
        self.computed().map(|c| c.retrieved.missing.clone())
    }

    /// What the judge said about the answers, for a case that answers.
    pub fn answers(&self) -> Result<Option<Arc<AnswerReport>>, String> {
        self.computed().map(|c| c.answers)
    }

    /// The evaluation with the judges' figures, as an upload takes it.
    #[cfg_attr(not(feature = "langsmith"), allow(dead_code))]
    pub fn evaluation(&self) -> Result<crate::eval::EvaluationResult, String> {
        let c = self.computed()?;
        Ok(crate::eval::EvaluationResult {
            scores: (*c.outcome).clone(),
            timings: c.retrieved.timings.clone().unwrap_or_default(),
            retrieved: c.retrieved.chunks.clone(),
        })
    }

    fn computed(&self) -> Result<Computed, String> {
        self.computed
            .get_or_init(|| {
                // Before any work: a shard that cannot write its share must not compute it.
                if let Some(problem) = super::store_env::problem() {
                    return Err(format!("case `{}`: {problem}", self.spec.name));
                }
                let setup = self.setup.as_ref().map_err(Clone::clone)?;
                let scope = self.scope();
                // A case's own function that panics (an `expect` on documents that do not
                // load) fails the case once, with its message, rather than panicking again in
                // every trial that asks.
                let computed =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        match &scope.queries {
                            None => cached(self, setup, scope.reads.as_ref()),
                            Some(ids) => compute(self, setup, Some(ids)),
                        }
                    }))
                    .unwrap_or_else(|panic| {
                        let message = panic
                            .downcast_ref::<String>()
                            .map(String::as_str)
                            .or_else(|| panic.downcast_ref::<&str>().copied())
                            .unwrap_or("no message");
                        Err(format!("it panicked: {message}"))
                    });
                computed
                    .map(|(outcome, answers, retrieved)| Computed {
                        places: Arc::new(
                            outcome
                                .per_query
                                .iter()
                                .enumerate()
                                .map(|(i, q)| (q.id.clone(), i))
                                .collect(),
                        ),
                        outcome: Arc::new(outcome),
                        answers: answers.map(Arc::new),
                        retrieved: Arc::new(retrieved),
                    })
                    .map_err(|e| format!("case `{}`: {e}", self.spec.name))
            })
            .clone()
    }
}

impl Setup {
    /// Whether the case's retrieval is scored: not over questions with reference answers only.
    pub fn retrieval_measured(&self) -> bool {
        self.retrieval_truth
    }

    /// Whether the rows are read through the dataset's index rather than read whole.
    #[cfg(test)]
    fn indexed(&self) -> bool {
        matches!(self.rows, Rows::Indexed { .. })
    }

    /// The evaluation over the queries whose ids `keep` accepts. Rows read through the index
    /// that are not those it names are not used: the dataset is then read and checked whole.
    fn evaluation(&self, spec: &CaseSpec, keep: impl Fn(&str) -> bool) -> Result<Prepared, String> {
        let (index, bytes, corpus) = match &self.rows {
            Rows::Read(prepared) => return Ok(prepared.only(keep)),
            Rows::Indexed {
                index,
                bytes,
                corpus,
            } => (index, bytes, corpus),
        };
        match index.read(bytes, self.source.as_str(), &keep) {
            // Checked when the index was written, against the same bytes and corpus.
            Ok(dataset) => evaluation(spec, corpus.clone(), dataset, false),
            Err(_) => {
                let dataset = dataset::load(&self.source).map_err(|e| e.to_string())?;
                Ok(evaluation(spec, corpus.clone(), dataset, true)?.only(keep))
            }
        }
    }
}

/// The evaluation of `dataset` over `corpus` as `spec` asks for it; with `check`, its spans
/// are checked against the corpus first.
fn evaluation(
    spec: &CaseSpec,
    corpus: Arc<Corpus>,
    dataset: AnyDataset,
    check: bool,
) -> Result<Prepared, String> {
    Ok(match dataset {
        AnyDataset::Token(d) => {
            let eval = if check && spec.corpus.is_some() && d.has_retrieval_truth() {
                TokenLevelEvaluation::new(corpus, d).map_err(|e| e.to_string())?
            } else {
                // Without a corpus, or without spans, there is nothing to check.
                TokenLevelEvaluation::unchecked(corpus, d)
            };
            let eval = eval.with_mode(spec.mode);
            Prepared::Token(match spec.concurrency {
                Some(n) => eval.with_concurrency(n),
                None => eval,
            })
        }
        AnyDataset::Chunk(d) => {
            let eval = ChunkLevelEvaluation::new(corpus, d).map_err(|e| e.to_string())?;
            Prepared::Chunk(match spec.concurrency {
                Some(n) => eval.with_concurrency(n),
                None => eval,
            })
        }
    })
}

fn prepare(spec: &CaseSpec, folder: Option<&Path>) -> Result<Setup, String> {
    let root = Path::new(spec.manifest_dir);
    let dataset_path = root.join(spec.dataset);
    let dataset_path = camino::Utf8PathBuf::try_from(dataset_path)
        .map_err(|e| format!("dataset path is not UTF-8: {e}"))?;
    let bytes = std::fs::read(&dataset_path)
        .map_err(|e| crate::Error::io("read", dataset_path.clone(), e).to_string())?;
    // The dataset file's bytes identify its rows: the index's key, and the start of the
    // outcome cache's.
    let index_key = super::rows::key(&bytes);
    let index_file = folder.map(|f| super::rows::file(f, spec.name, spec.dataset));
    let answers = spec.build.answers();
    let index = index_file
        .as_ref()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|text| super::rows::Index::parse(&text, &index_key, bytes.len()))
        // A case that does not answer a file of questions with answers only fails below, in
        // the words of the dataset read whole.
        .filter(|index| index.shape != Shape::Qa || answers);
    let mut dataset = match &index {
        Some(_) => None,
        None => Some(dataset::load(&dataset_path).map_err(|e| e.to_string())?),
    };
    let shape = match (&index, &dataset) {
        (Some(index), _) => index.shape,
        (None, Some(d)) => d.shape(),
        (None, None) => unreachable!("the dataset is read when there is no index"),
    };
    let (level, implemented) = match shape {
        Shape::Token | Shape::Qa => (LevelKind::Token, spec.levels.token),
        Shape::Chunk => (LevelKind::Chunk, spec.levels.chunk),
    };
    if !implemented {
        return Err(format!(
            "`{}` is {level}-level, but the case's retriever does not implement `Retriever<{}>`",
            spec.dataset,
            level.type_name()
        ));
    }
    // Thresholds may name any metric the registry reports at the dataset's level.
    let retrieval_truth = shape != Shape::Qa;
    if !retrieval_truth {
        unmeasured_retrieval(spec, answers, dataset.as_ref())?;
    }
    let known: Vec<&str> = registry::at_level(level)
        .filter(|m| answers || !m.is_answer_metric())
        .map(|m| m.name)
        .collect();
    #[cfg(feature = "answers")]
    for c in spec.criteria {
        crate::judge::Criteria::parse(c.text, c.path).map_err(|e| e.to_string())?;
        if !answers {
            return Err(format!(
                "criteria `{}` judges answers, and this case returns retrieved chunks only",
                c.path
            ));
        }
        if spec.judge.is_none() {
            return Err(format!(
                "criteria `{}` needs `judge = …` (a function returning an `LlmClient`)",
                c.path
            ));
        }
    }
    for t in spec.thresholds {
        let metric = &*t.metric;
        if spec.criteria.iter().any(|c| c.name() == metric) {
            continue;
        }
        if registry::lookup(metric).is_some_and(|m| m.is_answer_metric()) {
            if !answers {
                return Err(format!(
                    "`{}` scores answers, and this case returns retrieved chunks only: make it an `async fn(&str) -> RagAnswer` or a function returning a `Rag` (a retriever and a generator)",
                    metric
                ));
            }
            let judged = crate::metrics::registry::is_judged(metric);
            if judged && spec.judge.is_none() {
                return Err(format!(
                    "`{}` is an LLM judge's figure, but the case has no `judge = …`",
                    metric
                ));
            }
            if matches!(metric, "answer_relevancy" | "answer_similarity") && spec.embedder.is_none()
            {
                return Err(format!(
                    "`{}` compares embeddings, but the case has no `embedder = …` (a function returning an `Embedder`)",
                    metric
                ));
            }
        }
        if !known.contains(&metric) {
            return Err(format!(
                "`{metric}` is not reported for a {level}-level dataset (reported: {})",
                known.join(", ")
            ));
        }
    }
    let corpus = match spec.corpus {
        Some(c) => {
            let folder = camino::Utf8PathBuf::try_from(root.join(c))
                .map_err(|e| format!("corpus path is not UTF-8: {e}"))?;
            Corpus::from_folder(&folder, spec.glob).map_err(|e| e.to_string())?
        }
        None => Corpus::default(),
    };
    let corpus = Arc::new(corpus);
    // The rows were checked against this corpus, or they are read and checked again.
    let corpus_key = super::rows::corpus_key(spec.corpus.is_some().then_some(&*corpus));
    let index = index.filter(|index| index.corpus == corpus_key);
    if index.is_none() && dataset.is_none() {
        dataset = Some(dataset::load(&dataset_path).map_err(|e| e.to_string())?);
    }
    let mut key = Sha256::new();
    key.update(index_key.as_bytes());
    key.update(corpus_key.as_bytes());
    key.update(spec.name.as_bytes());
    key.update(
        format!(
            "{}|{}|{:?}|{:?}",
            spec.k, spec.dataset, spec.mode, spec.glob
        )
        .as_bytes(),
    );
    let cache_key = crate::digest::short_hex(key);
    let (rows, ids, dataset_hash) = match (index, dataset) {
        (Some(index), _) => {
            let ids = index.rows.iter().map(|r| r.id.clone()).collect();
            let hash = index.dataset_hash.clone();
            (
                Rows::Indexed {
                    index,
                    bytes,
                    corpus,
                },
                ids,
                hash,
            )
        }
        (None, Some(dataset)) => {
            let written = super::rows::Index::of(&dataset, &bytes, corpus_key);
            let prepared = evaluation(spec, corpus, dataset, true)?;
            // Checked: the next process may read its rows through the index. One that cannot
            // be written only costs the next process the whole read.
            if let (Some(file), Some(index)) = (&index_file, &written) {
                let _ = std::fs::create_dir_all(file.parent().unwrap_or(Path::new(".")));
                if let Ok(file) = camino::Utf8PathBuf::try_from(file.clone()) {
                    let _ = crate::fs::write_atomic(&file, index.render(&index_key).as_bytes());
                }
            }
            let (ids, hash) = match &prepared {
                Prepared::Token(eval) => (ids(eval.dataset().examples()), eval.dataset_hash()),
                Prepared::Chunk(eval) => (ids(eval.dataset().examples()), eval.dataset_hash()),
            };
            (Rows::Read(prepared), ids, hash)
        }
        (None, None) => unreachable!("the dataset is read when there is no index"),
    };
    Ok(Setup {
        rows,
        source: dataset_path,
        ids,
        retrieval_truth,
        cache_key,
        dataset_hash,
    })
}

/// What a dataset of questions with reference answers only allows: a case that answers them
/// is scored on its answers, its retrieval not measured, so a bar on a retrieval figure could
/// never be met; a case that only retrieves has nothing to be scored on.
fn unmeasured_retrieval(
    spec: &CaseSpec,
    answers: bool,
    dataset: Option<&AnyDataset>,
) -> Result<(), String> {
    if !answers {
        return match dataset {
            Some(AnyDataset::Token(d)) => d.require_truth(),
            Some(AnyDataset::Chunk(d)) => d.require_truth(),
            // Read whole whenever the case does not answer (see `prepare`).
            None => Ok(()),
        }
        .map_err(|e| e.to_string());
    }
    let retrieval: Vec<String> = spec
        .thresholds
        .iter()
        .filter(|t| {
            !spec.criteria.iter().any(|c| c.name() == &*t.metric)
                && !registry::lookup(&t.metric).is_some_and(|m| m.is_answer_metric())
        })
        .map(|t| format!("`{}`", t.key()))
        .collect();
    if retrieval.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} {} retrieval, but `{}` holds questions with reference answers and no retrieval truth (`relevant_spans` or `relevant_chunk_ids`): retrieval is not measured on it; remove the bar, or say in the dataset where each answer is",
        retrieval.join(", "),
        if retrieval.len() == 1 { "gates" } else { "gate" },
        spec.dataset
    ))
}

#[cfg(feature = "answers")]
fn references_of<L: Level>(examples: &[dataset::Example<L>]) -> HashMap<String, Vec<String>> {
    examples
        .iter()
        .filter(|e| !e.reference_answers().is_empty())
        .map(|e| (e.id.clone(), e.reference_answers().to_vec()))
        .collect()
}

/// Each row's id and question, in dataset order.
#[cfg(feature = "traces")]
fn rows_of<L: Level>(examples: &[dataset::Example<L>]) -> Vec<(String, String)> {
    examples
        .iter()
        .map(|e| (e.id.clone(), e.query.clone()))
        .collect()
}

/// Leaves out the retrieval figures of the queries asked `questions` (before any answer
/// figure is added) and takes the means again: a query with nothing retrieved to score has
/// no figure, not 0, and a metric no query has is left out.
fn unmeasure_retrieval(scores: &mut Outcome, questions: &std::collections::HashSet<String>) {
    for q in &mut scores.per_query {
        if q.query
            .as_ref()
            .is_some_and(|text| questions.contains(text))
        {
            q.metrics.0.clear();
        }
    }
    let names: Vec<String> = scores
        .metrics
        .names()
        .filter(|n| scores.per_query.iter().any(|q| q.metrics.get(n).is_some()))
        .map(str::to_owned)
        .collect();
    scores.metrics.0.clear();
    scores.std.0.clear();
    for group in scores.by_difficulty.iter_mut().flatten() {
        group.1.metrics.0.clear();
    }
    scores.add_means(&names);
}

fn ids<L: Level>(examples: &[dataset::Example<L>]) -> Vec<String> {
    examples.iter().map(|e| e.id.clone()).collect()
}

/// Under nextest every trial is its own process: the first to get here computes the outcome
/// and writes it to a file keyed by the run, the binary and the inputs; the others wait on a
/// lock and read it, only the queries in `reads` when it names some (a query's test needs its
/// own figures, not those of the case's other thousands). Outside nextest the outcome lives in
/// memory only.
fn cached(
    case: &Case,
    setup: &Setup,
    reads: Option<&std::collections::BTreeSet<String>>,
) -> Result<Computation, String> {
    let Some(dir) = cache_dir() else {
        return compute(case, setup, None);
    };
    let run = std::env::var("NEXTEST_RUN_ID").unwrap_or_default();
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| {
            let m = std::fs::metadata(&p).ok()?;
            Some(format!(
                "{}|{}|{:?}",
                p.display(),
                m.len(),
                m.modified().ok()
            ))
        })
        .unwrap_or_default();
    let key = crate::digest::short_sha256(format!("{run}|{exe}|{}", setup.cache_key).as_bytes());
    // One file per case, holding the key it was computed for: a new run or a rebuilt binary
    // overwrites it, so nothing accumulates.
    let file = dir.join(format!("{}.jsonl", case.spec.name));
    if std::fs::create_dir_all(&dir).is_err() {
        return compute(case, setup, None);
    }
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(format!("{}.lock", case.spec.name)));
    let _guard = lock.as_ref().ok().and_then(|f| f.lock().ok().map(|_| f));
    if let Some(stored) = std::fs::read_to_string(&file)
        .ok()
        .and_then(|text| read_cache(&text, &key, reads))
    {
        return Ok(stored);
    }
    let (mut outcome, answers, retrieved) = compute(case, setup, None)?;
    let per_query = std::mem::take(&mut outcome.per_query);
    let text = write_cache(&key, &outcome, &per_query, &answers, &retrieved);
    outcome.per_query = per_query;
    if let Ok(utf8) = camino::Utf8PathBuf::try_from(file) {
        // A failed write only costs the next process a recomputation.
        let _ = crate::fs::write_atomic(&utf8, text.as_bytes());
    }
    Ok((outcome, answers, retrieved))
}

/// The first line of the outcome cache: its key, and the case's figures but its queries'.
#[derive(serde::Serialize, serde::Deserialize)]
struct CachedHead {
    key: String,
    /// The outcome without its queries, which follow one a line.
    outcome: Outcome,
    /// How many query lines follow.
    queries: usize,
    #[serde(default)]
    answers: Option<AnswerReport>,
    #[serde(default)]
    timings: Option<crate::eval::Timings>,
    #[serde(default)]
    missing: Vec<(String, String)>,
}

/// A query's line of the outcome cache: its figures and what was retrieved for it.
#[derive(serde::Serialize, serde::Deserialize)]
struct CachedQuery {
    /// First, so that the line of a query is found by its start (see [`read_cache`]).
    result: crate::metrics::QueryResult,
    #[serde(default)]
    retrieved: Vec<RetrievedChunk>,
}

/// The outcome cache's text under `key` for `outcome` (without its queries) and `per_query`:
/// a head line, then a line per query.
fn write_cache(
    key: &str,
    outcome: &Outcome,
    per_query: &[crate::metrics::QueryResult],
    answers: &Option<AnswerReport>,
    retrieved: &Retrieved,
) -> String {
    let head = CachedHead {
        key: key.to_owned(),
        outcome: outcome.clone(),
        queries: per_query.len(),
        answers: answers.clone(),
        timings: retrieved.timings.clone(),
        missing: retrieved.missing.clone(),
    };
    let mut text = serde_json::to_string(&head).unwrap_or_default();
    text.push('\n');
    for (i, q) in per_query.iter().enumerate() {
        let line = CachedQuery {
            result: q.clone(),
            retrieved: retrieved.chunks.get(i).cloned().unwrap_or_default(),
        };
        text.push_str(&serde_json::to_string(&line).unwrap_or_default());
        text.push('\n');
    }
    text
}

/// The computation the outcome cache's `text` holds under `key`: every query, or only those in
/// `reads`, each found by the start of its line. `None` when the text was written under
/// another key, is cut short, or lacks a query asked for.
fn read_cache(
    text: &str,
    key: &str,
    reads: Option<&std::collections::BTreeSet<String>>,
) -> Option<Computation> {
    let (head, rest) = text.split_once('\n')?;
    // The query lines, each after a line break.
    let body = &text[head.len()..];
    let head: CachedHead = serde_json::from_str(head).ok()?;
    if head.key != key {
        return None;
    }
    let lines: Vec<&str> = match reads {
        None => rest.lines().collect(),
        // A row without a trace has no line.
        Some(ids) => ids
            .iter()
            .filter(|id| !head.missing.iter().any(|(m, _)| m == *id))
            .map(|id| {
                let start = format!(
                    "\n{{\"result\":{{\"id\":{},",
                    serde_json::to_string(id).ok()?
                );
                let at = body.find(&start)? + 1;
                body[at..].lines().next()
            })
            .collect::<Option<_>>()?,
    };
    if reads.is_none() && lines.len() != head.queries {
        return None;
    }
    let mut outcome = head.outcome;
    let mut chunks = Vec::with_capacity(lines.len());
    for line in lines {
        let q: CachedQuery = serde_json::from_str(line).ok()?;
        outcome.per_query.push(q.result);
        chunks.push(q.retrieved);
    }
    let retrieved = Retrieved {
        chunks,
        timings: head.timings,
        missing: head.missing,
    };
    Some((outcome, head.answers, retrieved))
}

/// `<target>/<profile>/rag-eval-harness`, when running under nextest.
fn cache_dir() -> Option<PathBuf> {
    std::env::var_os("NEXTEST_RUN_ID")?;
    harness_dir()
}

/// `<target>/<profile>/rag-eval-harness` (`RAG_EVAL_HARNESS_CACHE` when set): the outcome
/// cache of nextest's processes and the datasets' indexes.
fn harness_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("RAG_EVAL_HARNESS_CACHE") {
        return Some(PathBuf::from(dir));
    }
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("rag-eval-harness"))
}

/// Computes the case's result over `only` its queries with these ids (all without), and
/// records it: in the run group when there is one, as a run of its own when it is whole.
fn compute(
    case: &Case,
    setup: &Setup,
    only: Option<&std::collections::BTreeSet<String>>,
) -> Result<Computation, String> {
    let runtime = super::runtime();
    let keep = |id: &str| only.is_none_or(|ids| ids.contains(id));
    #[cfg_attr(not(feature = "traces"), allow(unused_mut))]
    let mut prepared = setup.evaluation(&case.spec, keep)?;
    #[cfg(feature = "answers")]
    let references = match &prepared {
        Prepared::Token(eval) => references_of(eval.dataset().examples()),
        Prepared::Chunk(eval) => references_of(eval.dataset().examples()),
    };
    let total = match &prepared {
        Prepared::Token(eval) => eval.dataset().len(),
        Prepared::Chunk(eval) => eval.dataset().len(),
    };
    let shown = super::progress::show(case.spec.name, "index", total);
    let task = shown.as_ref().map(|s| s.task().clone());
    #[cfg(feature = "answers")]
    let log = AnswerLog::showing(task.clone());
    #[cfg_attr(not(feature = "answers"), allow(unused_mut))]
    let mut generator: Option<String> = None;
    // The questions whose traced answer has no context found in the corpus: their retrieval
    // is not measured (no figure, never 0), as `score --answers` leaves it.
    #[cfg_attr(not(feature = "traces"), allow(unused_mut))]
    let mut unmeasured: std::collections::HashSet<String> = Default::default();
    #[cfg_attr(not(feature = "traces"), allow(unused_mut))]
    let mut missing: Vec<(String, String)> = Vec::new();
    let retrievers = match &case.spec.build {
        #[cfg(feature = "answers")]
        Build::Answer(f) => {
            let r = Arc::new(super::answers::AnswerRetriever::new(*f, log.clone()));
            Retrievers {
                token: Some(r.clone()),
                chunk: Some(r),
            }
        }
        #[cfg(feature = "traces")]
        Build::Traces(system) => {
            let (rows, corpus) = match &prepared {
                Prepared::Token(eval) => (rows_of(eval.dataset().examples()), eval.corpus()),
                Prepared::Chunk(eval) => (rows_of(eval.dataset().examples()), eval.corpus()),
            };
            let traced = super::traces::answers(&case.spec, system, &rows, corpus, only.is_none())?;
            // The rows without a trace are left out of the evaluation: each fails its trial.
            missing = traced.missing;
            if !missing.is_empty() {
                prepared = prepared.only(|id| !missing.iter().any(|(m, _)| m == id));
            }
            let answers = Arc::new(traced.answers);
            unmeasured = answers
                .iter()
                .filter(|(_, a)| a.contexts.iter().all(|c| c.chunk.span.is_empty()))
                .map(|(q, _)| q.clone())
                .collect();
            // Each answer is the one its trace gives, handed out as an answering function
            // returns it: the same scoring as an answers case. Every row left has one.
            let r = Arc::new(
                super::answers::AnswerRetriever::new(
                    move |question: String| {
                        let answer = answers.get(&question).cloned();
                        Box::pin(async move {
                            answer.unwrap_or_else(|| crate::generator::RagAnswer {
                                answer: String::new(),
                                contexts: Vec::new(),
                            })
                        }) as super::private::BoxFuture<_>
                    },
                    log.clone(),
                )
                .named(format!("traces of fn {}", case.spec.name)),
            );
            Retrievers {
                token: Some(r.clone()),
                chunk: Some(r),
            }
        }
        #[cfg(feature = "answers")]
        Build::Rag(make) => {
            let parts = runtime.block_on(make());
            let g = parts.generator;
            generator = Some(g.name());
            use super::answers::RagRetriever;
            Retrievers {
                token: parts.retrievers.token.map(|r| {
                    Arc::new(RagRetriever::new(r, g.clone(), log.clone())) as Arc<dyn Retriever<_>>
                }),
                chunk: parts.retrievers.chunk.map(|r| {
                    Arc::new(RagRetriever::new(r, g.clone(), log.clone())) as Arc<dyn Retriever<_>>
                }),
            }
        }
        Build::Factory(make) => runtime.block_on(make()),
        // `run` gives conversation cases trials of their own: they never get here.
        #[cfg(feature = "answers")]
        Build::Conversation(_) => Retrievers::default(),
        Build::Function(f) => {
            let r = Arc::new(FnRetriever {
                name: case.spec.name,
                f: *f,
            });
            Retrievers {
                token: Some(r.clone()),
                chunk: Some(r),
            }
        }
    };
    let k = case.spec.k;
    let (stage, count) = match &case.spec.build {
        #[cfg(feature = "answers")]
        Build::Answer(_) | Build::Rag(_) => ("generate", Count::Answers),
        #[cfg(feature = "traces")]
        Build::Traces(_) => ("score", Count::Answers),
        #[cfg(feature = "answers")]
        Build::Conversation(_) => ("retrieve", Count::EachQuery),
        Build::Function(_) => ("retrieve", Count::EachQuery),
        Build::Factory(_) => ("retrieve", Count::Batch),
    };
    let counting = task.map(|t| Counting::new(t, stage, total, count));
    // Several processes of one machine (nextest's, one per test) index in turn, so that a
    // cached embedder embeds the corpus once per machine.
    let lock = only
        .and(super::one_test_per_process().then(cache_dir).flatten())
        .map(|dir| dir.join(format!("{}.index.lock", case.spec.name)));
    let (result, corpus) = match &prepared {
        Prepared::Token(eval) => {
            let r = retrievers.token.ok_or(
                "the retriever does not implement `Retriever<TokenLevel>`, but the dataset is token-level",
            )?;
            let r = harnessed(r, lock, counting);
            (
                runtime.block_on(eval.run_reported(&*r, k)),
                eval.corpus().clone(),
            )
        }
        Prepared::Chunk(eval) => {
            let r = retrievers.chunk.ok_or(
                "the retriever does not implement `Retriever<ChunkLevel>`, but the dataset is chunk-level",
            )?;
            let r = harnessed(r, lock, counting);
            (
                runtime.block_on(eval.run_reported(&*r, k)),
                eval.corpus().clone(),
            )
        }
    };
    let corpus = &*corpus;
    let mut result = result.map_err(|e| e.to_string())?;
    if !unmeasured.is_empty() {
        unmeasure_retrieval(&mut result.scores, &unmeasured);
    }
    // A share of the queries still identifies the whole dataset.
    result.scores.dataset_hash = Some(setup.dataset_hash.clone());
    #[cfg(feature = "answers")]
    let report = if case.spec.build.answers() {
        Some(runtime.block_on(super::answers::score(
            &case.spec,
            &log,
            &references,
            &mut result.scores,
        ))?)
    } else {
        None
    };
    #[cfg(not(feature = "answers"))]
    let report: Option<AnswerReport> = None;
    // Off the line before anything else is written to the terminal.
    drop(shown);
    #[cfg(feature = "runs")]
    {
        if let Some((store, group)) = run_group()? {
            record_shard(case, setup, &store, &group, &result, report.as_ref())?;
        }
        if only.is_none() {
            record_run(case, corpus, &result, report.as_ref(), generator);
        }
    }
    #[cfg(not(feature = "runs"))]
    let _ = (corpus, generator);
    let retrieved = Retrieved {
        chunks: std::mem::take(&mut result.retrieved),
        timings: Some(result.timings.clone()),
        missing,
    };
    Ok((result.scores, report, retrieved))
}

/// Records the case's run in the store `RAG_EVAL_RUNS` names, when it names one: the harness
/// records only when asked (a `cargo test` must not grow a file in the crate by default). A
/// store that cannot be written is a warning; the trials' verdicts do not depend on it.
#[cfg(feature = "runs")]
fn record_run(
    case: &Case,
    corpus: &Corpus,
    result: &crate::eval::EvaluationResult,
    answers: Option<&AnswerReport>,
    generator: Option<String>,
) {
    let Some(value) = std::env::var_os(crate::runs::RUNS_ENV) else {
        return;
    };
    let choice = crate::runs::StoreChoice::parse(Some(&value.to_string_lossy()));
    let mut run = case_record(case, corpus, result);
    if let Some(answers) = answers.filter(|a| !a.summaries.is_empty()) {
        run.config.judge_models.clone_from(&answers.judge_models);
        run.add_chat_usage(None, crate::runs::Spend::of_judges(&answers.summaries));
    }
    run.config.generator = generator;
    let stored = crate::runs::open(&choice)
        .and_then(|s| s.map(|s| s.put(&run).map(|_| s.location())).transpose());
    match stored {
        Ok(Some(location)) => eprintln!(
            "case `{}`: recorded run {} in `{location}`",
            case.spec.name, run.id
        ),
        Ok(None) => {}
        Err(e) => eprintln!("warning: case `{}`: run not recorded: {e}", case.spec.name),
    }
}

/// A run store and the name of a run group in it.
#[cfg(feature = "runs")]
pub(crate) type GroupStore = (Arc<dyn crate::runs::RunStore>, String);

/// The run store and the run group the shards of this run write into, when
/// `RAG_EVAL_RUNS` names a store and a group is named ([`super::shards::group_from_env`]);
/// opened once per process.
#[cfg(feature = "runs")]
pub(crate) fn run_group() -> Result<Option<GroupStore>, String> {
    static OPENED: OnceLock<Result<Option<GroupStore>, String>> = OnceLock::new();
    OPENED
        .get_or_init(|| {
            let Some(group) = super::shards::group_from_env() else {
                return Ok(None);
            };
            let Some(value) = std::env::var_os(crate::runs::RUNS_ENV) else {
                return Ok(None);
            };
            let choice = crate::runs::StoreChoice::parse(Some(&value.to_string_lossy()));
            let store = crate::runs::open(&choice).map_err(|e| {
                format!("the run store of run group `{group}` cannot be opened: {e}")
            })?;
            Ok(store.map(|s| (Arc::from(s), group)))
        })
        .clone()
}

/// Writes the queries this process computed into the run group: its share of the run.
#[cfg(feature = "runs")]
fn record_shard(
    case: &Case,
    setup: &Setup,
    store: &Arc<dyn crate::runs::RunStore>,
    group: &str,
    result: &crate::eval::EvaluationResult,
    answers: Option<&AnswerReport>,
) -> Result<(), String> {
    use super::shards::{Description, Row};
    let mut frame = result.scores.clone();
    frame.per_query.clear();
    let description = Description {
        queries: setup.ids.clone(),
        frame,
        bars: case.spec.thresholds.to_vec(),
        tolerance: case.spec.tolerance,
        judge_tolerance: case.spec.judge.map_or(case.spec.tolerance, |j| j.tolerance),
        judged_per_query: case.spec.judge.is_some_and(|j| j.per_query_snapshot),
        judge_models: answers.map(|a| a.judge_models.clone()),
        criteria: case
            .spec
            .criteria
            .iter()
            .map(|c| c.name().to_owned())
            .collect(),
        max_invalid_share: case.spec.judge.map(|j| j.max_invalid_share),
    };
    let rows: Vec<(String, Row)> = result
        .scores
        .per_query
        .iter()
        .map(|q| {
            let answer = answers.and_then(|a| a.queries.get(&q.id).cloned());
            let row = Row {
                result: q.clone(),
                answer,
            };
            (q.id.clone(), row)
        })
        .collect();
    let shard = super::shards::shard_from_env();
    super::shards::write(
        store.as_ref(),
        group,
        case.spec.name,
        &shard,
        &description,
        &rows,
    )
    .map_err(|e| {
        format!(
            "its results were not written into run group `{group}` of `{}`: {e}",
            store.location()
        )
    })?;
    eprintln!(
        "case `{}`: {} queries written into run group `{group}` of `{}`",
        case.spec.name,
        rows.len(),
        store.location()
    );
    Ok(())
}

/// `retriever`, indexing under the lock file `lock` when there is one, and shown on the
/// progress line as `counting` says when the run shows one.
fn harnessed<L: Level>(
    retriever: Arc<dyn Retriever<L>>,
    lock: Option<PathBuf>,
    counting: Option<Counting>,
) -> Arc<dyn Retriever<L>> {
    if lock.is_none() && counting.is_none() {
        return retriever;
    }
    Arc::new(Harnessed {
        inner: retriever,
        lock,
        counting,
    })
}

/// A case's retriever as the harness runs it: its indexing holds a lock file shared by the
/// processes of one machine, and its stages and queries show on the progress line.
struct Harnessed<L: Level> {
    inner: Arc<dyn Retriever<L>>,
    lock: Option<PathBuf>,
    counting: Option<Counting>,
}

impl<L: Level> Harnessed<L> {
    fn counted(&self) -> Counted<'_, dyn Retriever<L>> {
        Counted {
            inner: &*self.inner,
            counting: self.counting.as_ref(),
        }
    }
}

#[async_trait::async_trait]
impl<L: Level> Retriever<L> for Harnessed<L> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn spec(&self) -> crate::spec::Value {
        self.inner.spec()
    }
    fn chunker(&self) -> Option<crate::spec::Value> {
        self.inner.chunker()
    }
    fn chunker_object(&self) -> Option<&dyn crate::chunker::PositionAwareChunker> {
        self.inner.chunker_object()
    }
    fn indexed_spans(&self) -> Option<Vec<crate::span::CharSpan>> {
        self.inner.indexed_spans()
    }
    async fn index(&self, corpus: &Arc<Corpus>) -> crate::Result<()> {
        // Without the lock (a folder that cannot be written) each process indexes alone.
        let file = self.lock.as_ref().and_then(|lock| {
            std::fs::create_dir_all(lock.parent()?).ok()?;
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(lock)
                .ok()
        });
        let _guard = file.as_ref().and_then(|f| f.lock().ok().map(|_| f));
        self.counted().index(corpus).await
    }
    async fn retrieve(&self, query: &str, k: usize) -> crate::Result<Vec<RetrievedChunk>> {
        self.counted().retrieve(query, k).await
    }
    async fn retrieve_many(
        &self,
        queries: &[&str],
        k: usize,
        concurrency: usize,
    ) -> std::result::Result<Vec<Vec<RetrievedChunk>>, crate::retrieve::BatchError> {
        self.counted().retrieve_many(queries, k, concurrency).await
    }
}

/// The run record of a case's evaluation: origin `harness`, the case's name as label.
#[cfg(feature = "runs")]
fn case_record(
    case: &Case,
    corpus: &Corpus,
    result: &crate::eval::EvaluationResult,
) -> crate::runs::RunRecord {
    let mut run = crate::runs::RunRecord::new("harness", case.spec.dataset, result.scores.clone())
        .with_timings(&result.timings);
    if case.spec.corpus.is_some() {
        run = run.with_corpus(corpus, case.spec.corpus);
    }
    run.label = Some(case.spec.name.to_owned());
    run
}

/// An `async fn(&str) -> Vec<RetrievedChunk>` case: the function is the retriever.
struct FnRetriever {
    name: &'static str,
    f: fn(String) -> super::private::BoxFuture<Vec<RetrievedChunk>>,
}

#[async_trait::async_trait]
impl<L: Level> Retriever<L> for FnRetriever {
    fn name(&self) -> String {
        format!("fn {}", self.name)
    }

    async fn retrieve(&self, query: &str, k: usize) -> crate::Result<Vec<RetrievedChunk>> {
        let mut hits = (self.f)(query.to_owned()).await;
        hits.truncate(k);
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::super::progress;
    use super::*;
    use crate::chunk::PositionAwareChunk;
    use crate::chunker::PositionAwareChunker;
    use crate::corpus::Document;
    use crate::harness::private::{Levels, Mode};
    use crate::metrics::{ChunkIndex, Metric, MetricInput, PrecisionOmega};
    use crate::retrieve::Bm25Retriever;

    /// A chunker rag-eval has no spec for: windows of 300 characters.
    struct Windows;

    impl PositionAwareChunker for Windows {
        fn name(&self) -> String {
            "windows of 300".into()
        }
        fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk> {
            let chars: Vec<char> = doc.content().chars().collect();
            (0..chars.len())
                .step_by(300)
                .map(|start| {
                    let end = (start + 300).min(chars.len());
                    let text: String = chars[start..end].iter().collect();
                    PositionAwareChunk::new(doc.id().clone(), start, end, text)
                })
                .collect()
        }
    }

    fn spec() -> CaseSpec {
        CaseSpec {
            name: "windows",
            manifest_dir: env!("CARGO_MANIFEST_DIR"),
            source: file!(),
            line: line!(),
            dataset: "examples/data/questions.jsonl",
            corpus: Some("examples/data/corpus"),
            glob: None,
            k: 3,
            tolerance: 0.01,
            mode: Mode::Standard,
            per_query: true,
            ignore: false,
            thresholds: &[],
            levels: Levels::BOTH,
            judge: None,
            criteria: &[],
            embedder: None,
            langsmith_experiment: None,
            concurrency: None,
            agreement: None,
            build: Build::Factory(|| {
                Box::pin(async {
                    let r = Arc::new(Bm25Retriever::new(Windows));
                    Retrievers {
                        token: Some(r.clone()),
                        chunk: Some(r),
                    }
                })
            }),
        }
    }

    #[test]
    fn a_traced_query_with_nothing_retrieved_has_no_retrieval_figure_not_zero() {
        use crate::metrics::{Figures, QueryResult, ResultLevel};
        let q = |id: &str, recall: f64, mrr: f64| QueryResult {
            id: id.into(),
            query: Some(format!("{id}?")),
            difficulty: Some("easy".into()),
            metrics: Figures(vec![("span_recall".into(), recall), ("mrr".into(), mrr)]),
            ..QueryResult::default()
        };
        let mut scores = Outcome::from_queries(
            ResultLevel::Token,
            vec!["span_recall".into(), "mrr".into()],
            vec![q("q1", 1.0, 1.0), q("q2", 0.0, 0.0)],
        );
        scores.group_by_difficulty();
        unmeasure_retrieval(&mut scores, &["q2?".to_owned()].into());
        assert_eq!(scores.metrics.get("span_recall"), Some(1.0));
        assert_eq!(scores.coverage("span_recall"), Some((1, 2)));
        assert!(scores.per_query[1].metrics.0.is_empty());
        let easy = &scores.by_difficulty.as_ref().unwrap()["easy"];
        assert_eq!(easy.metrics.get("mrr"), Some(1.0));
        // No query measured: the metric is left out, and a bar on it cannot pass unseen.
        unmeasure_retrieval(&mut scores, &["q1?".to_owned()].into());
        assert_eq!(scores.metrics.get("span_recall"), None);
    }

    /// A case whose glob matches none of the corpus's files fails with the library's
    /// sentence, which says what the glob left out, never with the error's fields.
    #[test]
    fn a_case_whose_glob_matches_nothing_fails_with_a_sentence() {
        let case = Case::new(CaseSpec {
            glob: Some("**/*.txt"),
            ..spec()
        });
        let err = case.outcome().unwrap_err();
        assert!(
            err.starts_with("case `windows`: no documents matching `**/*.txt` under `")
                && err.contains("other files under it, e.g. `")
                && err.ends_with("give another, e.g. `**/*.md`)"),
            "{err}"
        );
        assert!(!err.contains("EmptyCorpus {"), "{err}");
    }

    /// The gate guide's own search, whose documents do not load: its `expect` panics once,
    /// and the case fails with the sentence; the next trial does not run it again.
    #[test]
    fn a_case_function_that_panics_on_an_empty_corpus_fails_once_with_the_sentence() {
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let case = Case::new(CaseSpec {
            name: "production",
            build: Build::Function(|_query| {
                Box::pin(async {
                    CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/corpus");
                    Corpus::from_folder(folder, Some("**/*.txt")).expect("the documents load");
                    Vec::new()
                })
            }),
            ..spec()
        });
        let mut calls = Vec::new();
        for _ in 0..2 {
            let err = case.outcome().unwrap_err();
            calls.push(CALLS.load(std::sync::atomic::Ordering::SeqCst));
            assert!(
                err.starts_with(
                    "case `production`: it panicked: the documents load: no documents matching \
                     `**/*.txt` under `"
                ),
                "{err}"
            );
            assert!(!err.contains("EmptyCorpus {"), "{err}");
        }
        assert!(calls[0] >= 1 && calls[1] == calls[0], "{calls:?}");
    }

    /// With `RAG_EVAL_RUNS` naming a store, computing a case's outcome records its run; the
    /// parent test sets the variable for this process alone.
    #[cfg(feature = "runs")]
    #[test]
    #[ignore = "worker process of a_case_records_its_run_when_asked"]
    fn case_recording_worker() {
        if std::env::var_os(crate::runs::RUNS_ENV).is_some() {
            Case::new(spec()).outcome().unwrap();
        }
    }

    #[cfg(feature = "runs")]
    #[test]
    fn a_case_records_its_run_when_asked() {
        use crate::runs::RunStore;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.sqlite");
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "harness::case::tests::case_recording_worker",
                "--ignored",
                // Its stderr is what this test reads.
                "--nocapture",
            ])
            .env(crate::runs::RUNS_ENV, &path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        let store = crate::runs::SqliteRunStore::open(path.to_str().unwrap()).unwrap();
        let runs = store.list().unwrap();
        assert_eq!(runs.len(), 1, "{stderr}");
        let run = store.get(&runs[0].id).unwrap().unwrap();
        assert!(
            stderr.contains(&format!(
                "case `windows`: recorded run {} in `{}`",
                run.id,
                path.display()
            )),
            "{stderr}"
        );
        assert_eq!(
            (run.origin.as_str(), run.label.as_deref()),
            ("harness", Some("windows"))
        );
        assert_eq!(run.dataset.path, "examples/data/questions.jsonl");
        assert_eq!(run.corpus.as_ref().unwrap().documents, 12);
        assert_eq!(run.result.k, Some(3));
        assert_eq!(run.timings_ms.len(), 3);
        assert_eq!(run.into_result(), *Case::new(spec()).outcome().unwrap());
    }

    /// The scope of the `windows` case in a process run with `args`.
    fn scope_with(args: &[&str]) -> (Case, Scope) {
        let case = Arc::new(Case::new(spec()));
        let hook = Arc::new(crate::harness::private::InstaHook { assert: |_| {} });
        let trials = crate::harness::trials_of(&case, &hook);
        let args = crate::harness::libtest::Arguments::parse(args.iter().map(|a| a.to_string()))
            .unwrap()
            .unwrap();
        let scope = crate::harness::scope_of(&case, &args, &trials);
        drop(trials);
        let case = Arc::into_inner(case).expect("the trials are gone");
        (case, scope)
    }

    #[test]
    fn a_filtered_run_computes_only_the_queries_it_runs() {
        let (case, scope) = scope_with(&["windows::q000"]);
        let want: Vec<String> = (1..=9).map(|i| format!("q000{i}")).collect();
        assert_eq!(
            scope
                .queries
                .as_ref()
                .map(|q| q.iter().cloned().collect::<Vec<_>>()),
            Some(want.clone())
        );
        assert!(!scope.merged_summary);
        case.set_scope(scope);
        let outcome = case.outcome().unwrap();
        let ids: Vec<&str> = outcome.per_query.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids, want);
        // Each query's test finds its own figures; one computed elsewhere has none here.
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(case.query_outcome(id).unwrap().1, Some(i), "{id}");
        }
        assert_eq!(case.query_outcome("q0040").unwrap().1, None);
        // The figures of a query do not depend on the others computed with it.
        let whole = Case::new(spec()).outcome().unwrap();
        for q in &outcome.per_query {
            assert_eq!(Some(q), whole.per_query.iter().find(|w| w.id == q.id));
        }
        assert_eq!(outcome.dataset_hash, whole.dataset_hash);
    }

    /// A copy of the example dataset and corpus in a folder of its own, kept for the process.
    fn own_copy() -> &'static str {
        let dir = tempfile::tempdir().unwrap().keep();
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data");
        std::fs::copy(data.join("questions.jsonl"), dir.join("questions.jsonl")).unwrap();
        for sub in ["", "guides", "reference"] {
            std::fs::create_dir_all(dir.join("corpus").join(sub)).unwrap();
            for entry in std::fs::read_dir(data.join("corpus").join(sub)).unwrap() {
                let path = entry.unwrap().path();
                if path.is_file() {
                    let to = dir.join("corpus").join(sub).join(path.file_name().unwrap());
                    std::fs::copy(&path, to).unwrap();
                }
            }
        }
        Box::leak(dir.to_str().unwrap().to_owned().into_boxed_str())
    }

    #[test]
    fn a_dataset_is_read_through_its_index_once_checked_and_never_when_stale_or_damaged() {
        let root = own_copy();
        let spec = || CaseSpec {
            manifest_dir: root,
            dataset: "questions.jsonl",
            corpus: Some("corpus"),
            ..spec()
        };
        let folder = tempfile::tempdir().unwrap();
        let open = || Case::indexed_in(spec(), Some(folder.path()));
        let indexed = |case: &Case| case.setup.as_ref().unwrap().indexed();
        let index = super::super::rows::file(folder.path(), "windows", "questions.jsonl");

        // The first process reads and checks the dataset and writes the index...
        let whole = open();
        assert!(!indexed(&whole));
        let written = std::fs::read_to_string(&index).unwrap();
        // ...the next lists the case's tests from it and reads only the rows it runs.
        let again = open();
        assert!(indexed(&again));
        let ids = &whole.setup.as_ref().unwrap().ids;
        assert_eq!(ids.len(), 40);
        assert_eq!(&again.setup.as_ref().unwrap().ids, ids);
        assert_eq!(
            again.setup.as_ref().unwrap().dataset_hash,
            whole.setup.as_ref().unwrap().dataset_hash
        );
        assert_eq!(*again.outcome().unwrap(), *whole.outcome().unwrap());
        let one = open();
        assert!(indexed(&one));
        one.set_scope(Scope {
            queries: Some(std::collections::BTreeSet::from(["q0040".to_owned()])),
            ..Scope::default()
        });
        let alone = one.outcome().unwrap();
        assert_eq!(alone.per_query.len(), 1);
        let all = whole.outcome().unwrap();
        assert_eq!(
            Some(&alone.per_query[0]),
            all.per_query.iter().find(|q| q.id == "q0040")
        );
        assert_eq!(alone.dataset_hash, all.dataset_hash);

        // A damaged index (any byte changed, or cut short) is read again from the dataset,
        // which writes it anew.
        for damaged in [
            written.replacen(" q0040\n", " q0041\n", 1),
            written.replacen("rows 40", "rows 39", 1),
            written[..written.len() / 2].to_owned(),
        ] {
            assert_ne!(damaged, written);
            std::fs::write(&index, &damaged).unwrap();
            assert!(!indexed(&open()));
            assert_eq!(std::fs::read_to_string(&index).unwrap(), written);
        }

        // A dataset that changed: its rows are read and checked again (the index's key is
        // the file's bytes), and the new rows are what the next process reads.
        let questions = Path::new(root).join("questions.jsonl");
        let text = std::fs::read_to_string(&questions).unwrap();
        let edited = text.replacen("Which Linux kernel version", "What Linux kernel", 1);
        std::fs::write(&questions, &edited).unwrap();
        assert!(!indexed(&open()));
        let after = open();
        assert!(indexed(&after));
        let first = after.outcome().unwrap();
        assert_eq!(
            first.per_query[0].query.as_deref(),
            Some("What Linux kernel does a Larkspur host need at minimum?")
        );
        assert_ne!(
            after.setup.as_ref().unwrap().dataset_hash,
            whole.setup.as_ref().unwrap().dataset_hash
        );

        // A corpus that changed: the spans are checked again, and now they disagree.
        let doc = Path::new(root).join("corpus/guides/installation.md");
        let content = std::fs::read_to_string(&doc).unwrap();
        std::fs::write(&doc, format!("A new first line.\n{content}")).unwrap();
        let e = open().setup.err().expect("the spans no longer match");
        assert!(e.contains("disagree with the corpus"), "{e}");
    }

    #[test]
    fn the_outcome_cache_gives_a_query_its_own_line_and_nothing_it_cannot_vouch_for() {
        let case = Case::new(spec());
        let outcome = case.outcome().unwrap();
        let (mut head, per_query) = ((*outcome).clone(), outcome.per_query.clone());
        head.per_query.clear();
        let retrieved = Retrieved {
            chunks: (0..per_query.len())
                .map(|i| {
                    vec![RetrievedChunk::new(
                        PositionAwareChunk::new("a.md", i, i + 1, "x"),
                        1.0,
                    )]
                })
                .collect(),
            timings: None,
            missing: Vec::new(),
        };
        let text = write_cache("k", &head, &per_query, &None, &retrieved);
        assert_eq!(text.lines().count(), 1 + 40);
        let (whole, _, chunks) = read_cache(&text, "k", None).unwrap();
        assert_eq!(whole, *outcome);
        assert_eq!(chunks.chunks, retrieved.chunks);
        // A query's test: its own line, and the case's means.
        let two = std::collections::BTreeSet::from(["q0007".to_owned(), "q0031".to_owned()]);
        let (some, _, chunks) = read_cache(&text, "k", Some(&two)).unwrap();
        let ids: Vec<&str> = some.per_query.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids, ["q0007", "q0031"]);
        assert_eq!(some.per_query[1], outcome.per_query[30]);
        assert_eq!(some.metrics, outcome.metrics);
        assert_eq!(chunks.chunks[1], retrieved.chunks[30]);
        // Another key, a query it does not hold, a file cut short: not used.
        assert!(read_cache(&text, "other", None).is_none());
        let unknown = std::collections::BTreeSet::from(["q0099".to_owned()]);
        assert!(read_cache(&text, "k", Some(&unknown)).is_none());
        let cut = &text[..text.len() - text.lines().last().unwrap().len() - 1];
        assert!(read_cache(cut, "k", None).is_none());
        // An id whose JSON needs escaping is found by its own line too.
        let mut odd = per_query.clone();
        odd[3].id = "q \"3\"\\".into();
        let text = write_cache("k", &head, &odd, &None, &retrieved);
        let wanted = std::collections::BTreeSet::from([odd[3].id.clone()]);
        let (found, ..) = read_cache(&text, "k", Some(&wanted)).unwrap();
        assert_eq!(found.per_query, [odd[3].clone()]);
    }

    #[test]
    fn a_run_with_the_summary_or_every_query_computes_the_whole_case() {
        for args in [
            &[][..],
            &["windows::summary"],
            &["--skip", "windows::summary"],
            &["--exact", "windows::summary"],
        ] {
            let (_, scope) = scope_with(args);
            assert!(scope.queries.is_none() && !scope.merged_summary, "{args:?}");
        }
        let (_, scope) = scope_with(&["--exact", "windows::q0040"]);
        assert_eq!(
            scope.queries,
            Some(std::collections::BTreeSet::from(["q0040".to_owned()]))
        );
    }

    #[test]
    fn a_custom_chunker_gets_precision_omega_from_its_own_chunks() {
        let case = Case::new(spec());
        let outcome = case.outcome().unwrap();
        let i = outcome
            .metric_index("precision_omega")
            .expect("precision_omega is reported for a chunker without a spec");
        // The same figure from the chunker's output computed here, query by query.
        let Ok(Prepared::Token(eval)) = case.setup.as_ref().unwrap().evaluation(&spec(), |_| true)
        else {
            panic!("the dataset is token-level")
        };
        let spans: Vec<_> = Windows
            .chunk_corpus(eval.corpus())
            .into_iter()
            .map(|c| c.span)
            .collect();
        let omega = PrecisionOmega::with_index(ChunkIndex::new(&spans));
        for (q, e) in outcome.per_query.iter().zip(eval.dataset().examples()) {
            let want = omega.compute(&MetricInput::new(&[], &e.truth, 3));
            assert_eq!(
                q.metrics.0[i],
                ("precision_omega".to_owned(), want),
                "{}",
                q.id
            );
        }
        assert!(outcome.metrics.0[i].1 > 0.0);
    }

    /// Queries in the function retriever at once, and the most seen.
    static IN_FLIGHT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    static MOST_IN_FLIGHT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    /// A retriever that stays in flight for a turn of the executor, so every query the
    /// evaluation lets in at once is in flight together.
    fn counted(_query: String) -> super::super::private::BoxFuture<Vec<RetrievedChunk>> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async {
            let now = IN_FLIGHT.fetch_add(1, SeqCst) + 1;
            MOST_IN_FLIGHT.fetch_max(now, SeqCst);
            let mut yielded = false;
            std::future::poll_fn(|cx| {
                if yielded {
                    return std::task::Poll::Ready(());
                }
                yielded = true;
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            })
            .await;
            IN_FLIGHT.fetch_sub(1, SeqCst);
            Vec::new()
        })
    }

    /// A retriever that finds nothing and keeps the line of `task` as it was while indexing.
    struct Empty(Arc<progress::Task>, std::sync::Mutex<String>);

    #[async_trait::async_trait]
    impl Retriever<crate::level::TokenLevel> for Empty {
        fn name(&self) -> String {
            "empty".into()
        }
        async fn index(&self, _: &Arc<Corpus>) -> crate::Result<()> {
            *self.1.lock().unwrap() = self.0.line(std::time::Duration::ZERO);
            Ok(())
        }
        async fn retrieve(&self, _: &str, _: usize) -> crate::Result<Vec<RetrievedChunk>> {
            Ok(Vec::new())
        }
    }

    #[test]
    fn a_case_shows_its_indexing_then_counts_its_queries_on_the_progress_line() {
        let corpus = Arc::new(Corpus::new([Document::new("d", "text")]).unwrap());
        let line = |t: &progress::Task| t.line(std::time::Duration::ZERO);
        // A case that answers counts as it keeps each answer; its batch ends with all done.
        for count in [Count::EachQuery, Count::Batch, Count::Answers] {
            let task = progress::Task::new("c", "index", 3);
            let empty = Arc::new(Empty(task.clone(), Default::default()));
            let counting = Counting::new(task.clone(), "retrieve", 3, count);
            let r = harnessed(empty.clone() as Arc<dyn Retriever<_>>, None, Some(counting));
            pollster::block_on(r.index(&corpus)).unwrap();
            assert_eq!(*empty.1.lock().unwrap(), "c: index, 0s");
            assert_eq!(line(&task), "c: retrieve 0/3 queries, 0s");
            pollster::block_on(r.retrieve_many(&["a", "b", "c"], 1, 2)).unwrap();
            assert_eq!(line(&task), "c: retrieve 3/3 queries, 0s", "{count:?}");
        }
        // One by one, each query counts as it is done.
        let task = progress::Task::new("c", "retrieve", 3);
        let counting = Counting::new(task.clone(), "retrieve", 3, Count::EachQuery);
        let empty = Arc::new(Empty(task.clone(), Default::default()));
        let r = harnessed(empty as Arc<dyn Retriever<_>>, None, Some(counting));
        pollster::block_on(r.retrieve("a", 1)).unwrap();
        assert_eq!(line(&task), "c: retrieve 1/3 queries, 0s");
        // Neither a lock nor a line: the retriever itself.
        let plain: Arc<dyn Retriever<crate::level::TokenLevel>> =
            Arc::new(Empty(task, Default::default()));
        assert!(Arc::ptr_eq(&harnessed(plain.clone(), None, None), &plain));
    }

    #[test]
    fn the_concurrency_option_caps_the_queries_in_flight() {
        use std::sync::atomic::Ordering::SeqCst;
        for (concurrency, most) in [(Some(2), 2), (None, 8)] {
            MOST_IN_FLIGHT.store(0, SeqCst);
            let case = Case::new(CaseSpec {
                build: Build::Function(counted),
                levels: Levels {
                    token: true,
                    chunk: false,
                },
                concurrency,
                ..spec()
            });
            let setup = case.setup.as_ref().unwrap();
            compute(&case, setup, None).unwrap();
            assert_eq!(MOST_IN_FLIGHT.load(SeqCst), most, "{concurrency:?}");
        }
    }

    #[cfg(feature = "answers")]
    /// The bundled questions' first relevant span, by query text.
    fn first_spans() -> &'static HashMap<String, String> {
        static SPANS: OnceLock<HashMap<String, String>> = OnceLock::new();
        SPANS.get_or_init(|| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/questions.jsonl");
            std::fs::read_to_string(path)
                .unwrap()
                .lines()
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    let text = v["outputs"]["relevant_spans"][0]["text"].as_str().unwrap();
                    (
                        v["inputs"]["query"].as_str().unwrap().to_owned(),
                        text.to_owned(),
                    )
                })
                .collect()
        })
    }

    #[cfg(feature = "answers")]
    fn bundled_corpus() -> &'static Corpus {
        static CORPUS: OnceLock<Corpus> = OnceLock::new();
        CORPUS.get_or_init(|| {
            let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/corpus");
            Corpus::from_folder(folder, None).unwrap()
        })
    }

    #[cfg(feature = "answers")]
    /// What a service that keeps its chunks' text in capitals, whitespace collapsed, answers:
    /// the question's relevant passage so, as text placed in the corpus as `HttpRag` places it
    /// (found ignoring case and whitespace).
    fn shouting(query: String) -> super::super::private::BoxFuture<crate::generator::RagAnswer> {
        Box::pin(async move {
            let passage = first_spans()[&query]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .to_uppercase();
            let line = serde_json::json!({"id": "q", "answer": passage,
                                          "contexts": [passage, "IN NO DOCUMENT AT ALL"]});
            let mut answers =
                crate::answers::Answers::parse(&line.to_string(), "service".into()).unwrap();
            answers.place_in(bundled_corpus());
            answers.take("q").unwrap()
        })
    }

    #[cfg(feature = "answers")]
    fn answering(dataset: &'static str, manifest_dir: &'static str) -> CaseSpec {
        CaseSpec {
            name: "service",
            manifest_dir,
            dataset,
            corpus: Some(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/corpus")),
            build: Build::Answer(shouting),
            ..spec()
        }
    }

    #[cfg(feature = "answers")]
    #[test]
    fn contexts_found_ignoring_case_and_whitespace_are_scored_at_their_span_and_judged_as_sent() {
        let case = Case::new(answering(
            "examples/data/questions.jsonl",
            env!("CARGO_MANIFEST_DIR"),
        ));
        let outcome = case.outcome().unwrap();
        let answers = case.answers().unwrap().unwrap();
        assert_eq!(outcome.per_query.len(), 40);
        for q in &outcome.per_query {
            // Scored on the document's text at the span the service's text was found at...
            let retrieved = &q.retrieved.as_ref().unwrap()[0];
            let doc = bundled_corpus().get(&retrieved.doc_id).unwrap();
            assert_eq!(
                retrieved.text.as_deref(),
                doc.slice(retrieved.start, retrieved.end),
                "{}",
                q.id
            );
            // ...and kept as the service sent it: what the judges read. The context in no
            // document is judged, not ranked.
            assert_eq!(q.retrieved.as_ref().unwrap().len(), 1, "{}", q.id);
            assert_eq!(q.contexts.as_ref().unwrap().len(), 2, "{}", q.id);
            let sent = &q.contexts.as_ref().unwrap()[0];
            assert_eq!(
                sent.text.as_deref(),
                Some(answers.queries[&q.id].answer.as_str())
            );
            assert_ne!(sent.text, retrieved.text, "{}", q.id);
            assert_eq!((sent.start, sent.end), (retrieved.start, retrieved.end));
        }
        // q0001's passage is its relevant span, whole.
        assert_eq!(outcome.per_query[0].metrics.get("span_recall@3"), Some(1.0));
    }

    #[cfg(feature = "answers")]
    /// Calls answered so far, each counted as one HTTP retry.
    static FLAKY_CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    #[cfg(feature = "answers")]
    /// A judge whose every call took one HTTP retry, finding no statement to check.
    struct Flaky;

    #[cfg(feature = "answers")]
    #[async_trait::async_trait]
    impl crate::llm::LlmClient for Flaky {
        fn name(&self) -> String {
            "flaky".into()
        }
        async fn complete(
            &self,
            _: &crate::llm::ChatRequest,
        ) -> crate::Result<crate::llm::ChatResponse> {
            FLAKY_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(crate::llm::ChatResponse {
                content: r#"{"statements": []}"#.into(),
                finish_reason: Some("stop".into()),
                usage: Default::default(),
                model: "flaky".into(),
                logprobs: None,
            })
        }
        fn http_retries(&self) -> u64 {
            FLAKY_CALLS.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    #[cfg(feature = "answers")]
    /// The first five bundled questions with their reference answers and no retrieval truth, in
    /// a folder of their own (the case's golden folder and judge cache go there too).
    fn qa_folder() -> &'static str {
        let dir = tempfile::tempdir().unwrap().keep();
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/questions.jsonl");
        let mut qa = String::new();
        for line in std::fs::read_to_string(path).unwrap().lines().take(5) {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            let reference = v["outputs"]["reference_answer"].clone();
            v["outputs"] = serde_json::json!({ "reference_answer": reference });
            qa.push_str(&format!("{v}\n"));
        }
        std::fs::write(dir.join("qa.jsonl"), qa).unwrap();
        Box::leak(dir.to_str().unwrap().to_owned().into_boxed_str())
    }

    #[cfg(feature = "answers")]
    #[test]
    fn an_answering_case_over_questions_with_reference_answers_scores_answers_not_retrieval() {
        use crate::harness::private::JudgeSpec;
        use crate::metrics::{Bar, Bound};
        let dir = qa_folder();
        let judge = JudgeSpec {
            client: || Arc::new(Flaky),
            samples: 1,
            max_invalid_share: 1.0,
            per_query_snapshot: false,
            tolerance: 0.05,
        };
        let case = Case::new(CaseSpec {
            judge: Some(judge),
            ..answering("qa.jsonl", dir)
        });
        let outcome = case.outcome().unwrap();
        // Retrieval is not measured: no figure at all, not 0, and no truth recorded.
        let names: Vec<&str> = outcome.metrics.names().collect();
        assert!(names.contains(&"token_f1"), "{names:?}");
        for q in &outcome.per_query {
            assert!(q.truth.is_none(), "{}", q.id);
            for (name, _) in &q.metrics.0 {
                let metric = crate::metrics::ReportedName::parse(name).metric;
                assert!(
                    registry::lookup(metric).is_some_and(|m| m.is_answer_metric()),
                    "{}: {name}",
                    q.id
                );
            }
        }
        assert!(names.iter().all(|n| !n.starts_with("span_")), "{names:?}");
        let table = crate::harness::report(&case, &outcome, "");
        assert!(
            table.contains("retrieval not measured: qa.jsonl holds questions with reference answers and no retrieval truth"),
            "{table}"
        );
        // The judge's summary counts the HTTP retries its client made, one per call here.
        let answers = case.answers().unwrap().unwrap();
        let faithfulness = &answers.summaries[0];
        assert_eq!((faithfulness.queries, faithfulness.retries), (5, 5));
        assert!(
            faithfulness
                .usage_lines()
                .starts_with("faithfulness: 5 calls (0 repairs) and 5 HTTP retries"),
            "{}",
            faithfulness.usage_lines()
        );

        // A bar on retrieval could never be met: the case says so, naming the dataset.
        static BARS: &[Bar] = &[
            Bar::fixed("token_f1", Bound::Min, 0.1),
            Bar::fixed("span_recall", Bound::Min, 0.5),
        ];
        let case = Case::new(CaseSpec {
            thresholds: BARS,
            ..answering("qa.jsonl", dir)
        });
        let e = case.setup.err().expect("refused");
        assert_eq!(
            e,
            "case `service`: `min_span_recall` gates retrieval, but `qa.jsonl` holds questions with reference answers and no retrieval truth (`relevant_spans` or `relevant_chunk_ids`): retrieval is not measured on it; remove the bar, or say in the dataset where each answer is"
        );
        // A case that only retrieves has nothing to score on such a file.
        let case = Case::new(CaseSpec {
            manifest_dir: dir,
            dataset: "qa.jsonl",
            ..spec()
        });
        let e = case.setup.err().expect("refused");
        assert!(
            e.starts_with("case `windows`: ")
                && e.contains(
                    "qa.jsonl holds questions with reference answers and no retrieval truth"
                ),
            "{e}"
        );
    }

    #[cfg(feature = "answers")]
    /// A judge finding one claim in every text, neutral against every other text.
    struct Unsure;

    #[cfg(feature = "answers")]
    #[async_trait::async_trait]
    impl crate::llm::LlmClient for Unsure {
        fn name(&self) -> String {
            "unsure".into()
        }
        async fn complete(
            &self,
            r: &crate::llm::ChatRequest,
        ) -> crate::Result<crate::llm::ChatResponse> {
            let prompt = &r.messages[0].content;
            let content = if prompt.contains("\nText: ") {
                r#"{"claims": ["The answer says something."]}"#
            } else {
                r#"{"verdicts": [{"verdict": "Neutral", "evidence": ""}]}"#
            };
            Ok(crate::llm::ChatResponse {
                content: content.into(),
                finish_reason: Some("stop".into()),
                usage: Default::default(),
                model: "unsure".into(),
                logprobs: None,
            })
        }
    }

    #[cfg(feature = "answers")]
    #[test]
    fn a_bar_on_a_claim_figure_runs_the_claims_judge_and_gates_each_query_on_it() {
        use crate::harness::private::JudgeSpec;
        use crate::metrics::{Bar, Bound};
        static BARS: &[Bar] = &[Bar::fixed("hallucination", Bound::Max, 0.5)];
        let judge = JudgeSpec {
            client: || Arc::new(Unsure),
            samples: 1,
            max_invalid_share: 0.05,
            per_query_snapshot: false,
            tolerance: 0.05,
        };
        let case = Case::new(CaseSpec {
            judge: Some(judge),
            thresholds: BARS,
            ..answering("qa.jsonl", qa_folder())
        });
        let outcome = case.outcome().unwrap();
        // The answer's one claim is neither the reference's nor any context's: hallucinated.
        assert_eq!(outcome.metrics.get("hallucination"), Some(1.0));
        assert_eq!(outcome.metrics.get("claim_faithfulness"), Some(0.0));
        assert_eq!(outcome.metrics.get("claims"), None);
        let answers = case.answers().unwrap().unwrap();
        let claims = answers.summaries.iter().find(|s| s.metric == "claims");
        // 2 extractions, then 1 claim per side against the other answer and 2 contexts.
        assert_eq!(claims.map(|s| (s.ok, s.usage.calls)), Some((5, 5 * 8)));
        let (id, explained) = answers.queries.iter().next().unwrap();
        let failed = super::super::answer_bars(&case, id, explained).unwrap_err();
        let message = failed.message().to_owned();
        assert!(
            message.contains("hallucination = 1.0000 is above the bar 0.5000 (max_hallucination)"),
            "{message}"
        );
    }

    #[test]
    fn an_answer_metric_bar_on_a_retrieval_case_says_there_are_no_answers() {
        use crate::metrics::{Bar, Bound};
        static BARS: &[Bar] = &[Bar::fixed("rouge_l", Bound::Min, 0.5)];
        let e = prepare(
            &CaseSpec {
                thresholds: BARS,
                ..spec()
            },
            None,
        )
        .err()
        .expect("refused");
        assert!(
            e.starts_with("`rouge_l` scores answers, and this case returns retrieved chunks only"),
            "{e}"
        );
    }
}
