//! A whole generation run over a corpus: the documents a [`ResumableOutput`] still lacks,
//! generated a few at a time and appended as each completes; stoppable between documents
//! through a [`StopSignal`]; the corpus-wide filters once every document is done.
//!
//! The run needs no particular async runtime and prints nothing: what it reports goes to a
//! [`Progress`] the caller supplies (the `rag-eval generate` progress bar is one).
//!
//! ```no_run
//! use rag_eval::corpus::Corpus;
//! use rag_eval::synth::resume::{ResumableOutput, RunHeader};
//! use rag_eval::synth::run::{GenerationRun, RunEnd, StopSignal};
//! use rag_eval::synth::{GenerateConfig, TokenLevelDataGenerator};
//! # async fn f(client: impl rag_eval::llm::LlmClient) -> rag_eval::Result<()> {
//! let corpus = Corpus::from_folder("docs", None)?;
//! let generator = TokenLevelDataGenerator::new(client, GenerateConfig::default());
//! let mut out = ResumableOutput::open("questions.jsonl".into(), RunHeader::new("token"))?;
//! let stop = StopSignal::new();
//! // Wire `stop.stop()` to Ctrl-C, a deadline, a button…: the run then ends after the
//! // documents in flight, and the same call later continues it.
//! let ended = GenerationRun::new(&generator, &corpus)
//!     .concurrency(4)
//!     .run(&mut out, &stop, &mut ())
//!     .await?;
//! assert_eq!(ended, RunEnd::Complete);
//! # Ok(()) }
//! ```

use super::resume::{DocRecord, GeneratedLevel, ResumableOutput, Resumed};
use super::{ChunkLevelDataGenerator, DocumentBatch, Dropped, TokenLevelDataGenerator};
use crate::corpus::{Corpus, Document};
use crate::dataset::{Example, ToRow};
use crate::error::{DatasetError, Error, Result};
use crate::level::{ChunkLevel, Level, TokenLevel};
use crate::llm::LlmClient;
use camino::Utf8Path;
use futures_util::StreamExt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A generator a [`GenerationRun`] can drive: one document at a time, then the filters that
/// need every row.
pub trait DocumentGenerator<L: Level> {
    /// Generates `doc`'s rows (`corpus` supplies partner documents), ids numbered from
    /// `first_id`.
    fn generate_document<'a>(
        &'a self,
        corpus: &'a Corpus,
        doc: &'a Document,
        first_id: usize,
    ) -> impl Future<Output = Result<DocumentBatch<L>>> + 'a;

    /// Runs the corpus-wide filters over every row, counting what they remove.
    fn finish(&self, examples: &mut Vec<Example<L>>, dropped: &mut Dropped);
}

impl<C: LlmClient> DocumentGenerator<TokenLevel> for TokenLevelDataGenerator<C> {
    fn generate_document<'a>(
        &'a self,
        corpus: &'a Corpus,
        doc: &'a Document,
        first_id: usize,
    ) -> impl Future<Output = Result<DocumentBatch<TokenLevel>>> + 'a {
        TokenLevelDataGenerator::generate_document(self, corpus, doc, first_id)
    }

    fn finish(&self, examples: &mut Vec<Example<TokenLevel>>, dropped: &mut Dropped) {
        TokenLevelDataGenerator::finish(self, examples, dropped);
    }
}

impl<C: LlmClient> DocumentGenerator<ChunkLevel> for ChunkLevelDataGenerator<C> {
    fn generate_document<'a>(
        &'a self,
        corpus: &'a Corpus,
        doc: &'a Document,
        first_id: usize,
    ) -> impl Future<Output = Result<DocumentBatch<ChunkLevel>>> + 'a {
        ChunkLevelDataGenerator::generate_document(self, corpus, doc, first_id)
    }

    fn finish(&self, examples: &mut Vec<Example<ChunkLevel>>, dropped: &mut Dropped) {
        ChunkLevelDataGenerator::finish(self, examples, dropped);
    }
}

/// Asks a run to stop taking new documents. Clones share one flag, so a signal handler or
/// another task can hold one while the run holds another.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Arc<AtomicBool>);

impl StopSignal {
    /// A signal not yet given.
    pub fn new() -> Self {
        StopSignal::default()
    }

    /// Gives the signal: documents in flight finish and are kept; no new one starts.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the signal was given.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// What a run reports while it works. Every method does nothing by default; `()` reports
/// nothing at all.
pub trait Progress {
    /// Work is about to start on `todo` documents of `output`; `resumed` is what earlier runs
    /// left there.
    fn started(&mut self, todo: usize, resumed: &Resumed, output: &Utf8Path) {
        let _ = (todo, resumed, output);
    }

    /// A document's rows were written and recorded.
    fn document(&mut self, record: &DocRecord) {
        let _ = record;
    }

    /// No document is in flight any more (before the corpus-wide filters run).
    fn ended(&mut self) {}
}

impl Progress for () {}

/// How a run ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunEnd {
    /// Every document is done and the corpus-wide filters have rewritten the output.
    Complete,
    /// The [`StopSignal`] was given before every document was done; running again with the
    /// same output continues.
    Interrupted,
}

/// A generation run: `generator` over the documents of `corpus` an output still lacks.
#[derive(Debug)]
pub struct GenerationRun<'a, G> {
    generator: &'a G,
    corpus: &'a Corpus,
    concurrency: usize,
}

impl<'a, G> GenerationRun<'a, G> {
    /// A run of `generator` over `corpus`, one document at a time.
    pub fn new(generator: &'a G, corpus: &'a Corpus) -> Self {
        GenerationRun {
            generator,
            corpus,
            concurrency: 1,
        }
    }

    /// Documents worked on at once (at least 1).
    pub fn concurrency(mut self, documents: usize) -> Self {
        self.concurrency = documents.max(1);
        self
    }

    /// Generates the documents `out` does not hold yet, `concurrency` at a time, appending
    /// each one's rows as it completes. Once `stop` is given, no new document starts and the
    /// run returns [`RunEnd::Interrupted`] after those in flight. When every document is
    /// done, runs the corpus-wide filters and rewrites the output ([`RunEnd::Complete`]).
    ///
    /// Errors: `out` holds documents `corpus` lacks or whose text changed; writing fails; a
    /// document fails ([`Error::GenerationStopped`], after the documents in flight are
    /// written, since their calls are paid for).
    pub async fn run<L>(
        &self,
        out: &mut ResumableOutput,
        stop: &StopSignal,
        progress: &mut dyn Progress,
    ) -> Result<RunEnd>
    where
        G: DocumentGenerator<L>,
        L: GeneratedLevel,
        Example<L>: ToRow,
    {
        let corpus = self.corpus;
        let missing = out.missing_from(corpus);
        if !missing.is_empty() {
            let shown: Vec<&str> = missing.iter().take(3).map(|d| d.as_str()).collect();
            return Err(Error::Dataset(DatasetError::new(out.path(), format!(
                "{} document{} done by an earlier run into `{}` {} not in the corpus any more ({}{}); use the same corpus, or another output",
                missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                out.path(),
                if missing.len() == 1 { "is" } else { "are" },
                shown.join(", "),
                if missing.len() > 3 { ", …" } else { "" }
            ))));
        }
        let mut todo = Vec::new();
        for doc in corpus.documents() {
            if !out.is_done(doc)? {
                todo.push(doc);
            }
        }
        progress.started(todo.len(), out.resumed(), out.path());

        let mut failure: Option<(Document, Error)> = None;
        // A failure stops this run only: the caller's signal stays theirs.
        let failed = AtomicBool::new(false);
        let pending = todo
            .into_iter()
            .take_while(|_| !stop.is_stopped() && !failed.load(Ordering::SeqCst));
        // The first id does not matter: rows are numbered when they are appended.
        let mut results = futures_util::stream::iter(pending)
            .map(|doc| {
                let fut = self.generator.generate_document(corpus, doc, 1);
                async move { (doc, fut.await) }
            })
            .buffer_unordered(self.concurrency);
        while let Some((doc, result)) = results.next().await {
            match result {
                // Also after a failure: the work of documents that were in flight is paid for.
                Ok(batch) => {
                    let record = out.append(doc, batch)?;
                    progress.document(record);
                }
                Err(e) => {
                    failed.store(true, Ordering::SeqCst);
                    if failure.is_none() {
                        failure = Some((doc.clone(), e));
                    }
                }
            }
        }
        drop(results);
        progress.ended();
        if let Some((doc, e)) = failure {
            let t = out.totals();
            return Err(Error::GenerationStopped {
                doc: doc.id().to_string(),
                done: t.documents,
                total: corpus.len(),
                rows: t.rows,
                path: out.path().to_owned(),
                source: Box::new(e),
            });
        }
        if stop.is_stopped() && out.records().len() < corpus.len() {
            return Ok(RunEnd::Interrupted);
        }
        if out.finished().is_none() {
            out.finish::<L>(corpus, |examples, dropped| {
                self.generator.finish(examples, dropped)
            })?;
        }
        Ok(RunEnd::Complete)
    }
}
