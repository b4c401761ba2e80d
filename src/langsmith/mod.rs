//! LangSmith: datasets in and out, experiments with per-query feedback.
//!
//! rag-eval's dataset rows are LangSmith-shaped (`inputs`, `outputs`, `metadata`), so a
//! dataset [pushed](push) to LangSmith and [pulled](pull) back is the same dataset: ids,
//! spans with their offsets and text, chunk ids, difficulty, reference answers and every other
//! field. An [`Experiment`] uploads an evaluation as a LangSmith experiment linked to that
//! dataset, with every metric (custom ones included) as feedback under its report name
//! (`span_recall@5`, `ndcg@10`).
//!
//! [`LangSmith::from_env`] reads the endpoint from `LANGSMITH_ENDPOINT` (default
//! `https://api.smith.langchain.com`) and the API key from `LANGSMITH_API_KEY`, sent as
//! `x-api-key` and never shown in logs, errors or `Debug` output. Requests go through the
//! crate's [`HttpClient`](crate::http::HttpClient): bounded concurrency, retries with backoff
//! on 429, 5xx and dropped connections, `Retry-After` honoured.
//!
//! ```no_run
//! # async fn f() -> rag_eval::Result<()> {
//! use rag_eval::langsmith::{self, LangSmith};
//! let client = LangSmith::from_env()?;
//! let dataset = rag_eval::dataset::load("golden/handbook.jsonl")?;
//! let report = langsmith::push(&client, "handbook", &dataset, None).await?;
//! println!("{} examples created", report.examples_created);
//! let pulled = langsmith::pull(&client, "handbook").await?;
//! assert_eq!(pulled.rows, dataset.len());
//! # Ok(()) }
//! ```

mod client;
mod dataset;
mod experiment;
pub mod ids;
mod journal;

pub use client::{
    is_conflict, LangSmith, NewExample, NewFeedback, NewRun, RemoteDataset, RemoteExample, Session,
    API_KEY_ENV, DEFAULT_ENDPOINT, DEFAULT_MAX_ROWS, ENDPOINT_ENV,
};
pub use dataset::{pull, push, row_of, rows_of, Pulled, PushReport, RESERVED_KEY};
pub use experiment::{fetch_experiment, Experiment, UploadReport};
