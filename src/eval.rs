//! Evaluations: run a retriever over every query of a dataset and score it.
//!
//! ```
//! use rag_eval::chunker::RecursiveCharacterChunker;
//! use rag_eval::corpus::{Corpus, Document};
//! use rag_eval::dataset::{Dataset, Example};
//! use rag_eval::eval::TokenLevelEvaluation;
//! use rag_eval::metrics::{token_level_metrics, SpanMode};
//! use rag_eval::retrieve::Bm25Retriever;
//! use rag_eval::span::CharSpan;
//!
//! let corpus = Corpus::new([Document::new("a.md", "Cats purr when content.\n\nDogs bark at strangers.")])?;
//! let dataset = Dataset::new(vec![Example {
//!     id: "q1".into(),
//!     query: "why do dogs bark".into(),
//!     truth: vec![CharSpan::new("a.md", 25, 48)],
//!     span_texts: vec![Some("Dogs bark at strangers.".into())],
//!     metadata: Default::default(),
//!     reference_answers: Vec::new(),
//! }])?;
//! let eval = TokenLevelEvaluation::new(corpus, dataset)?;
//! let retriever = Bm25Retriever::new(RecursiveCharacterChunker::new(30, 0));
//! let result = eval.run_blocking(&retriever, 1, &token_level_metrics(SpanMode::Standard, None))?;
//! assert_eq!(result.scores.metrics.get("span_recall@1"), Some(1.0));
//!
//! // Or every metric the registry reports at this level, built in the evaluation's mode, with
//! // PrecisionΩ from the retriever's own chunks:
//! let eval = eval.with_mode(SpanMode::ChunkingEvaluation);
//! let result = pollster::block_on(eval.run_reported(&retriever, 1))?;
//! assert_eq!(result.scores.mode, Some(SpanMode::ChunkingEvaluation));
//! assert!(result.scores.metrics.get("precision_omega").is_some());
//! # Ok::<(), rag_eval::Error>(())
//! ```

use crate::chunk::RetrievedChunk;
use crate::corpus::Corpus;
use crate::dataset::{ChunkDataset, Dataset, ToRow, TokenDataset};
use crate::error::{DatasetError, Error, EvaluationError, Result, SettingError};
use crate::level::{ChunkLevel, Level, LevelKind, TokenLevel};
use crate::metrics::registry::RegisteredLevel;
use crate::metrics::{
    reported_metrics, scorecard, ChunkIndex, Figures, Metric, MetricContext, Need, Passage, Scored,
    SpanMode, Truth, REGISTRY,
};
use crate::retrieve::{BatchError, Retriever};
use crate::spec::Value;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;

pub use crate::metrics::{DifficultyScores, QueryResult, RunConfig, RunResult};

/// An evaluation at level `L`: a corpus and a dataset checked against it.
#[derive(Debug, Clone)]
pub struct Evaluation<L: Level> {
    corpus: Arc<Corpus>,
    dataset: Dataset<L>,
    concurrency: usize,
    mode: SpanMode,
}

/// Token-level evaluation (character-span ground truth).
pub type TokenLevelEvaluation = Evaluation<TokenLevel>;
/// Chunk-level evaluation (chunk-id ground truth).
pub type ChunkLevelEvaluation = Evaluation<ChunkLevel>;

impl Evaluation<TokenLevel> {
    /// An evaluation of `dataset` over `corpus`. Every span is checked first: a span in an
    /// unknown document, past the end of its document, or whose recorded text no longer matches
    /// the corpus (drift) is an error listing every such span. Examples with nothing to find
    /// are refused ([`Dataset::require_truth`]); leave them out first with
    /// [`Dataset::skip_empty_truth`] to score the rest.
    pub fn new(corpus: impl Into<Arc<Corpus>>, dataset: TokenDataset) -> Result<Self> {
        dataset.require_truth()?;
        let corpus = corpus.into();
        let problems = dataset.check_against(&corpus);
        if !problems.is_empty() {
            let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
            return Err(Error::Dataset(DatasetError::new(dataset.source(), format!(
                "{} span{} of {} disagree with the corpus (re-anchor with `rag-eval dataset reanchor`):\n{}",
                problems.len(),
                if problems.len() == 1 { "" } else { "s" },
                dataset.source(),
                list.join("\n")
            ))));
        }
        Ok(Self::unchecked(corpus, dataset))
    }
}

impl Evaluation<ChunkLevel> {
    /// An evaluation of a chunk-level `dataset` over `corpus`. The rows must agree on the
    /// chunker that made their ids (`metadata.chunker`), and every example needs something to
    /// find, as at token level.
    pub fn new(corpus: impl Into<Arc<Corpus>>, dataset: ChunkDataset) -> Result<Self> {
        dataset.require_truth()?;
        check_one_chunker(&dataset)?;
        Ok(Self::unchecked(corpus.into(), dataset))
    }
}

/// The chunker a dataset records (`metadata.chunker`), read once into the value a retriever's
/// [`Retriever::chunker`] is compared with: a built-in chunker's spec in its canonical form
/// (`recursive:size=400` is `recursive:size=400,overlap=0,length=chars,separators=langchain`
/// with the defaults written out), anything the parser does not know (a custom chunker's spec)
/// as the text written.
fn recorded_chunker(text: &str) -> Value {
    crate::chunker::parse_spec(text).map_or_else(|_| Value::Text(text.to_owned()), |c| c.spec())
}

/// Whether a recorded chunker is `used`: the same value, or, for a chunker the parser does not
/// know, `used`'s spec as the dataset wrote it.
fn same_chunker(recorded: &Value, used: &Value) -> bool {
    recorded == used || matches!(recorded, Value::Text(t) if *t == used.to_string())
}

/// Whether a chunk-level dataset's rows record one chunker, if any; rows that disagree are an
/// error. A row that writes the first row's spec as it is is not parsed again.
fn check_one_chunker(d: &ChunkDataset) -> Result<()> {
    let mut found: Option<(usize, &str, Value)> = None;
    for (i, e) in d.examples().iter().enumerate() {
        let Some(c) = e.metadata.get("chunker").and_then(|v| v.as_str()) else {
            continue;
        };
        match &found {
            None => found = Some((i, c, recorded_chunker(c))),
            Some((_, first, _)) if *first == c => {}
            Some((j, first, value)) if !same_chunker(value, &recorded_chunker(c)) => {
                return Err(Error::Dataset(DatasetError::new(d.source(), format!(
                    "{} records chunker `{c}` but {} records `{first}`; a chunk-level dataset comes from one chunker",
                    d.location(i),
                    d.location(*j)
                ))))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

impl<L: Level> Evaluation<L>
where
    crate::dataset::Example<L>: ToRow,
{
    /// An evaluation whose spans are not checked against the corpus (the harness uses it for
    /// cases without a corpus, whose retrievers search elsewhere, and for cases that answer
    /// questions with reference answers only, whose retrieval is not measured).
    pub(crate) fn unchecked(corpus: Arc<Corpus>, dataset: Dataset<L>) -> Self {
        Evaluation {
            corpus,
            dataset,
            concurrency: 8,
            mode: SpanMode::Standard,
        }
    }

    /// How many queries may be in flight at once (default 8, at least 1), for retrievers that
    /// answer one query at a time; retrievers that take every query at once
    /// ([`Retriever::retrieve_many`]) apply it to their own requests (the dense pipeline to its
    /// embedding batches).
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// How span metrics count characters (default [`SpanMode::Standard`]).
    /// [`Evaluation::run_reported`] builds its metrics in this mode, [`Evaluation::run`] refuses
    /// metrics in another, and results record it. Chunk-level evaluations have no span metrics
    /// and keep the default.
    pub fn with_mode(mut self, mode: SpanMode) -> Self {
        self.mode = mode;
        self
    }

    /// The same evaluation over the queries whose ids `keep` accepts (the harness's share of
    /// a partitioned run).
    pub(crate) fn only(&self, keep: impl Fn(&str) -> bool) -> Self {
        Evaluation {
            corpus: self.corpus.clone(),
            dataset: self.dataset.only(keep),
            concurrency: self.concurrency,
            mode: self.mode,
        }
    }

    /// The span mode.
    pub fn mode(&self) -> SpanMode {
        self.mode
    }

    /// The corpus.
    pub fn corpus(&self) -> &Arc<Corpus> {
        &self.corpus
    }

    /// The dataset.
    pub fn dataset(&self) -> &Dataset<L> {
        &self.dataset
    }

    /// Indexes the corpus with `retriever`, retrieves the top `k` for every query in one
    /// [`Retriever::retrieve_many`] call (up to the configured concurrency, results kept in
    /// dataset order) and scores them with `metrics`. A failure names the query by id, or the
    /// first and last of a batch of queries that failed together.
    ///
    /// A chunk-level dataset evaluated with a retriever whose chunker differs from the one
    /// recorded in the dataset is an error naming both: its chunk ids would not match. So is a
    /// span metric in another [`SpanMode`] than the evaluation's.
    pub async fn run<R: Retriever<L> + ?Sized>(
        &self,
        retriever: &R,
        k: usize,
        metrics: &[Box<dyn Metric<L>>],
    ) -> Result<EvaluationResult> {
        if let Some(m) = metrics
            .iter()
            .find(|m| m.span_mode().is_some_and(|mode| mode != self.mode))
        {
            return Err(EvaluationError::SpanMode {
                metric: m.name().to_string(),
                metric_mode: m.span_mode().unwrap_or_default().to_string(),
                mode: self.mode.to_string(),
            }
            .into());
        }
        self.run_with(retriever, k, |_| metrics).await
    }

    /// Indexes, retrieves and scores as [`Evaluation::run`] does, with every metric of the
    /// [registry](crate::metrics::registry) reported at this level, built in the evaluation's
    /// mode. Metrics that need the chunker's whole output (PrecisionΩ) get the chunks the
    /// retriever indexed ([`Retriever::indexed_spans`]) or, failing that, its chunker's output
    /// over the corpus ([`Retriever::chunker_object`], or the chunker its
    /// [spec](Retriever::chunker) builds); without any (or without a corpus) they are left out.
    pub async fn run_reported<R: Retriever<L> + ?Sized>(
        &self,
        retriever: &R,
        k: usize,
    ) -> Result<EvaluationResult>
    where
        L: RegisteredLevel,
    {
        let wanted = self.dataset.has_retrieval_truth()
            && REGISTRY
                .iter()
                .any(|m| m.applies_to(L::KIND) && m.needs(Need::ChunkerOutput));
        self.run_with(retriever, k, |r| {
            let mut ctx = MetricContext::new(self.mode);
            if wanted && !self.corpus.is_empty() {
                ctx.chunker_output = chunker_output(r, &self.corpus).map(Arc::new);
            }
            reported_metrics::<L>(&ctx)
        })
        .await
    }

    async fn run_with<R, M>(
        &self,
        retriever: &R,
        k: usize,
        metrics: impl FnOnce(&R) -> M,
    ) -> Result<EvaluationResult>
    where
        R: Retriever<L> + ?Sized,
        M: AsRef<[Box<dyn Metric<L>>]>,
    {
        if k == 0 {
            return Err(SettingError::new("evaluation", "k", 0, "must be at least 1").into());
        }
        if L::KIND == LevelKind::Chunk {
            self.check_chunker(retriever.chunker())?;
        }
        let started = Instant::now();
        retriever.index(&self.corpus).await?;
        // Built after indexing: PrecisionΩ reads the chunks the index was made of.
        let metrics = metrics(retriever);
        // Questions with reference answers only (a case that answers them): retrieval is not
        // measured, its figures absent rather than 0.
        let truth = self.dataset.has_retrieval_truth();
        let metrics = if truth { metrics.as_ref() } else { &[] };
        let indexed = Instant::now();
        let queries: Vec<&str> = self
            .dataset
            .examples()
            .iter()
            .map(|e| e.query.as_str())
            .collect();
        let retrieved = retriever
            .retrieve_many(&queries, k, self.concurrency)
            .await
            .map_err(|failure| self.retrieval_error(failure))?;
        if retrieved.len() != queries.len() {
            return Err(EvaluationError::TooFewAnswers {
                retriever: retriever.name(),
                answered: retrieved.len(),
                asked: queries.len(),
            }
            .into());
        }
        if L::KIND == crate::level::LevelKind::Token {
            self.check_retrieved_text(&retrieved)?;
        }
        let fetched = Instant::now();
        let items: Vec<Vec<L::Item>> = retrieved
            .iter()
            .map(|r| r.iter().map(L::item_of).collect())
            .collect();
        let queries: Vec<Scored<'_, L>> = self
            .dataset
            .examples()
            .iter()
            .zip(&items)
            .map(|(e, r)| Scored {
                id: &e.id,
                truth: &e.truth,
                retrieved: r,
            })
            .collect();
        let mut scores = scorecard(&queries, metrics, k, self.mode, None);
        for ((q, e), r) in scores
            .per_query
            .iter_mut()
            .zip(self.dataset.examples())
            .zip(&retrieved)
        {
            q.query = Some(e.query.clone());
            q.difficulty = e.difficulty().map(str::to_owned);
            q.truth =
                truth.then(|| Truth::of(L::truth_view(&e.truth), &e.span_texts, &self.corpus));
            q.retrieved = Some(r.iter().map(Passage::of_retrieved).collect());
        }
        scores.group_by_difficulty();
        scores.config = Some(RunConfig {
            dataset: Some(self.dataset.source().to_owned()),
            corpus_documents: Some(self.corpus.len()),
            ..RunConfig::of_retriever(
                retriever.name(),
                &retriever.spec(),
                retriever.chunker().as_ref(),
            )
        });
        scores.dataset_hash = Some(self.dataset_hash());
        let scored = Instant::now();
        Ok(EvaluationResult {
            scores,
            timings: Timings {
                index_ms: ms(indexed - started),
                retrieve_ms: ms(fetched - indexed),
                score_ms: ms(scored - fetched),
                generate_ms: None,
                judge_ms: None,
            },
            retrieved,
        })
    }

    /// [`Evaluation::run`] for retrievers that need no async runtime (BM25, in-memory stores,
    /// offline embedders): drives the future on the current thread.
    pub fn run_blocking<R: Retriever<L> + ?Sized>(
        &self,
        retriever: &R,
        k: usize,
        metrics: &[Box<dyn Metric<L>>],
    ) -> Result<EvaluationResult> {
        pollster::block_on(self.run(retriever, k, metrics))
    }

    /// A failure of [`Retriever::retrieve_many`] as an [`Error::Retrieval`] naming the query by
    /// id, or the first and last of a batch that failed as a whole.
    fn retrieval_error(&self, failure: BatchError) -> Error {
        let examples = self.dataset.examples();
        let id = |i: usize| {
            examples
                .get(i)
                .map_or_else(|| format!("#{i}"), |e| e.id.clone())
        };
        let (first, n) = (failure.queries.start, failure.queries.len());
        let query = if n <= 1 {
            id(first)
        } else {
            format!(
                "{} (with the {} after it through {}, retrieved together)",
                id(first),
                n - 1,
                id(failure.queries.end - 1)
            )
        };
        match failure.error {
            // A retriever that answers too (`eval --answers`) failed at generating.
            Error::Generation { source, .. } => Error::Generation { query, source },
            error => Error::Retrieval {
                query,
                source: Box::new(error),
            },
        }
    }

    /// Retrieved chunks whose text contradicts their offsets would be scored at the wrong
    /// place without a sign (byte offsets from Rust's `str` methods are the usual cause).
    fn check_retrieved_text(&self, retrieved: &[Vec<RetrievedChunk>]) -> Result<()> {
        for (e, chunks) in self.dataset.examples().iter().zip(retrieved) {
            for c in chunks {
                let doc = self.corpus.get(c.chunk.span.doc.as_str());
                c.check_text(doc).map_err(|fault| Error::Retrieval {
                    query: e.id.clone(),
                    source: Box::new(EvaluationError::ChunkText(fault).into()),
                })?;
            }
        }
        Ok(())
    }

    fn check_chunker(&self, retriever_chunker: Option<Value>) -> Result<()> {
        let recorded = self
            .dataset
            .examples()
            .iter()
            .find_map(|e| e.metadata.get("chunker").and_then(|v| v.as_str()));
        if let (Some(recorded), Some(used)) = (recorded, retriever_chunker) {
            if !same_chunker(&recorded_chunker(recorded), &used) {
                return Err(EvaluationError::OtherChunker {
                    dataset: self.dataset.source().to_string(),
                    recorded: recorded.to_string(),
                    used: used.to_string(),
                }
                .into());
            }
        }
        Ok(())
    }

    /// The dataset's [`content_hash`](crate::dataset::Dataset::content_hash): identifies
    /// the ground truth a result was computed against.
    pub fn dataset_hash(&self) -> String {
        self.dataset.content_hash()
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The positions of every chunk the retriever's chunker makes of `corpus`: the ones it indexed
/// when it keeps them, else the output of the chunker object it exposes. Never rebuilt from the
/// chunker's name: a custom chunker with a built-in's name would be scored as the built-in.
fn chunker_output<L: Level, R: Retriever<L> + ?Sized>(
    retriever: &R,
    corpus: &Corpus,
) -> Option<ChunkIndex> {
    if let Some(spans) = retriever.indexed_spans() {
        return Some(ChunkIndex::new(&spans));
    }
    let chunker = retriever.chunker_object()?;
    let spans: Vec<_> = chunker
        .chunk_corpus(corpus)
        .into_iter()
        .map(|c| c.span)
        .collect();
    Some(ChunkIndex::new(&spans))
}

/// The outcome of an evaluation: the run's [`RunResult`] (with query texts, difficulty
/// means, configuration and dataset hash), its timings and what was retrieved. Its JSON form is
/// the result's followed by `timings`: the `rag-eval score --json` contract extended with
/// `by_difficulty`, `config`, `dataset_hash` and `timings`.
#[derive(Debug, Clone, Serialize)]
pub struct EvaluationResult {
    /// Means, standard deviations, per-query figures and what was evaluated.
    #[serde(flatten)]
    pub scores: RunResult,
    /// Where the time went.
    pub timings: Timings,
    /// What the retriever returned for each query, in dataset order.
    #[serde(skip)]
    pub retrieved: Vec<Vec<RetrievedChunk>>,
}

/// Wall-clock milliseconds per phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Chunking, embedding and indexing the corpus.
    pub index_ms: f64,
    /// Retrieving every query.
    pub retrieve_ms: f64,
    /// Computing the metrics.
    pub score_ms: f64,
    /// Generating answers (`eval --answers`): the share of the retrieval phase's wall-clock
    /// time that went to the generator, the rest staying under `retrieve_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_ms: Option<f64>,
    /// Judging the answers, for runs with LLM judges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_ms: Option<f64>,
}

/// A comparison table of runs on the same dataset: one row per run (named by the first
/// element, e.g. the chunker spec) with the headline metrics as mean ± std in percent; for a
/// single run, every metric and the means per difficulty follow.
pub fn comparison_table(results: &[(String, EvaluationResult)]) -> String {
    let Some((_, first)) = results.first() else {
        return String::new();
    };
    let first = &first.scores;
    let mut out = format!("{}\n\n", first.headline());
    let headline: Vec<&str> = first
        .metrics
        .0
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| {
            n.starts_with("span_")
                || n.starts_with("chunk_")
                || *n == "precision_omega"
                || n.starts_with("ndcg")
                || *n == "faithfulness"
        })
        .collect();
    let name_w = results
        .iter()
        .map(|(s, _)| s.len())
        .max()
        .unwrap_or(7)
        .max(7);
    let col_w = headline.iter().map(|n| n.len()).max().unwrap_or(12).max(12);
    out.push_str(&format!("{:<name_w$}", "chunker"));
    for h in &headline {
        out.push_str(&format!("  {h:>col_w$}"));
    }
    out.push('\n');
    for (spec, r) in results {
        out.push_str(&format!("{spec:<name_w$}"));
        for h in &headline {
            let m = r.scores.metrics.get(h).unwrap_or(0.0) * 100.0;
            let sd = r.scores.std.get(h).unwrap_or(0.0) * 100.0;
            out.push_str(&format!("  {:>col_w$}", format!("{m:.1} ± {sd:.1}")));
        }
        out.push('\n');
    }
    out.push_str("(mean ± standard deviation over queries, %)\n");
    if let [(_, r)] = results {
        out.push('\n');
        out.push_str(&metric_table(&r.scores.metrics, &r.scores.std));
        out.push_str("\nby difficulty (mean, %)\n");
        let cols: Vec<&str> = headline.clone();
        let label_w = r
            .scores
            .by_difficulty
            .iter()
            .flat_map(|d| d.keys())
            .map(String::len)
            .max()
            .unwrap_or(10)
            .max(10);
        out.push_str(&format!("{:<label_w$}  {:>7}", "difficulty", "queries"));
        for c in &cols {
            out.push_str(&format!("  {c:>col_w$}"));
        }
        out.push('\n');
        for (label, d) in r.scores.by_difficulty.iter().flatten() {
            out.push_str(&format!("{label:<label_w$}  {:>7}", d.queries));
            for c in &cols {
                out.push_str(&format!(
                    "  {:>col_w$.1}",
                    d.metrics.get(c).unwrap_or(0.0) * 100.0
                ));
            }
            out.push('\n');
        }
    }
    out
}

/// Every metric's mean and standard deviation, one per line.
pub fn metric_table(means: &Figures, stds: &Figures) -> String {
    metric_table_counted(means, stds, &[])
}

/// [`metric_table`] with a `queries` column: `n of N` beside each mean `counts` (in the order
/// of `means`) gives a count of, as [`RunResult::coverage`](crate::metrics::RunResult::coverage)
/// does for judged means and means over some of the queries. Without any count there is no
/// such column.
pub fn metric_table_counted(
    means: &Figures,
    stds: &Figures,
    counts: &[Option<(usize, usize)>],
) -> String {
    let width = means
        .0
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let counted = counts.iter().any(Option::is_some);
    let mut s = format!("{:<width$}  {:>8}  {:>8}", "metric", "mean", "std");
    s.push_str(if counted { "  queries\n" } else { "\n" });
    // By name, not by position: a record may hold its keys in another order.
    for (i, (n, m)) in means.0.iter().enumerate() {
        match stds.get(n) {
            Some(sd) => s.push_str(&format!("{n:<width$}  {m:>8.4}  {sd:>8.4}")),
            None => s.push_str(&format!("{n:<width$}  {m:>8.4}  {:>8}", "-")),
        }
        if let Some((n, of)) = counts.get(i).copied().flatten() {
            s.push_str(&format!("  {n} of {of}"));
        }
        s.push('\n');
    }
    s
}
