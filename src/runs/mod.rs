//! Runs that last: [`RunRecord`], one evaluation with its provenance and every figure, and
//! (feature `runs`) the [`RunStore`] that keeps them, in SQLite or (feature `postgres`)
//! PostgreSQL.
//!
//! `rag-eval eval` and `rag-eval score` record every run in the store the environment names
//! unset, the file is [`DEFAULT_PATH`] under the current directory. `rag-eval runs
//! list|show|delete|export|import` reads and edits the store; `export` writes records as JSON
//! lines ([`RunRecord::to_json`]) that `import` reads back, on any machine.

mod id;
mod provenance;
mod record;

pub use id::{BadRunId, RunId};
pub use provenance::{corpus_fingerprint, dataset_hash, now_rfc3339, rfc3339_from_ms, GitInfo};
pub use record::{
    redact_url, CorpusInfo, DatasetInfo, RunRecord, RunSettings, RunSummary, Usage, FORMAT_VERSION,
};
