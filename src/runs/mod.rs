//! Runs that last: [`RunRecord`], one evaluation with its provenance and every figure, and
//! (feature `runs`) the `RunStore` that keeps them, in SQLite or (feature `postgres`)
//! PostgreSQL.
//!
//! `rag-eval eval` and `rag-eval score` record every run in the store the environment names
//! (`open_from_env`): `RAG_EVAL_RUNS` is a SQLite file's path, a `postgres://` URL, or `off`;
//! unset, the file is `DEFAULT_PATH` (`.rag-eval/runs.sqlite`) under the current directory.
//! `rag-eval runs list|show|delete|export|import` reads and edits the store; `export` writes
//! records as JSON lines ([`RunRecord::to_json`]) that `import` reads back, on any machine.
//! The harness records each case's run too, when `RAG_EVAL_RUNS` is set and the `runs`
//! feature is on.

mod id;
#[cfg(feature = "postgres")]
mod postgres;
mod provenance;
mod record;
#[cfg(feature = "runs")]
mod sqlite;
#[cfg(feature = "runs")]
mod store;
mod text;

#[cfg(feature = "postgres")]
pub use self::postgres::PostgresRunStore;
pub use id::{BadRunId, RunId};
pub use provenance::{corpus_fingerprint, now_rfc3339, rfc3339_from_ms, GitInfo};
pub use record::{CorpusInfo, DatasetInfo, RunRecord, RunSummary, Spend, Usage, FORMAT_VERSION};
#[cfg(feature = "runs")]
pub use sqlite::SqliteRunStore;
#[cfg(feature = "runs")]
pub use store::{
    open, open_from_env, open_read_only, record_runs, GroupRow, RunStore, StoreChoice,
    DEFAULT_PATH, RUNS_ENV, SCHEMA_VERSION,
};
pub use text::{describe, list_table, read_jsonl};
