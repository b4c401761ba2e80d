//! The [`RunStore`] trait, and choosing a store from `RAG_EVAL_RUNS`.

use super::id::RunId;
use super::record::{RunRecord, RunSummary};
use crate::error::{Error, Result};
use camino::Utf8PathBuf;

/// Environment variable naming the run store: a SQLite file's path, a `postgres://` (or
/// `postgresql://`) URL, or `off`.
pub const RUNS_ENV: &str = "RAG_EVAL_RUNS";
/// The SQLite file used when `RAG_EVAL_RUNS` is unset, relative to the current directory.
pub const DEFAULT_PATH: &str = ".rag-eval/runs.sqlite";
/// The version of the tables this code reads and writes. Opening a store of an older version
/// migrates it (in one transaction); a newer one is refused.
pub const SCHEMA_VERSION: u32 = 3;

/// Keeps run records. Every implementation behaves the same (one test suite runs against
/// each): ids are unique, [`RunStore::put`] of an id already stored changes nothing, and
/// concurrent writers (other processes, other machines) lose nothing.
pub trait RunStore: Send + Sync + std::fmt::Debug {
    /// Where the store is: a file's path or a URL (without its password), for messages.
    fn location(&self) -> String;

    /// Stores `run`. Returns `false`, changing nothing, when a run with its id is stored
    /// already (importing the same export twice adds nothing).
    fn put(&self, run: &RunRecord) -> Result<bool>;

    /// The run with id `id`, if stored.
    fn get(&self, id: &RunId) -> Result<Option<RunRecord>>;

    /// Every stored run's summary, oldest first: by the time each was recorded (`created`),
    /// then by id. Not by id alone: an imported record's id may claim any time.
    fn list(&self) -> Result<Vec<RunSummary>>;

    /// Whether a run with id `id` is stored (its record is not read).
    fn contains(&self, id: &RunId) -> Result<bool>;

    /// Removes the run with id `id`; `false` when there was none.
    fn delete(&self, id: &RunId) -> Result<bool>;

    /// Records what shard `shard` computed for case `case` of run group `group`: the case's
    /// description (what every shard writes alike; the last write stays) and its results
    /// (query id, result; each id once), in one transaction, so that a shard stopped midway
    /// leaves neither. A query the same shard reported before is overwritten, never
    /// duplicated; other shards' rows are left as they are.
    fn put_group_shard(
        &self,
        group: &str,
        case: &str,
        shard: &str,
        description: &str,
        results: &[(String, String)],
    ) -> Result<()>;

    /// The description and every shard's rows of case `case` in run group `group`, rows by
    /// query id then shard; `None` when no shard described the case.
    fn group_case(&self, group: &str, case: &str) -> Result<Option<(String, Vec<GroupRow>)>>;

    /// The cases run group `group` holds, by name.
    fn group_cases(&self, group: &str) -> Result<Vec<String>>;

    /// The id meant by `text`: a whole id, a unique prefix of one (any case), `latest` (the
    /// newest run, in [`RunStore::list`]'s order) or `latest~N` (the N-th before it). A whole id is looked up alone, without
    /// reading any summary. Unknown or ambiguous text is an error
    /// naming the store ([`Error::NoSuchRun`] when nothing matches).
    fn resolve(&self, text: &str) -> Result<RunId> {
        // A whole id names its run without reading any summary: a store with an unreadable
        // row can still show, export and delete it.
        if let Ok(id) = text.parse::<RunId>() {
            return if self.contains(&id)? {
                Ok(id)
            } else {
                Err(self.no_such(text))
            };
        }
        let runs = self.list()?;
        if let Some(rest) = text.strip_prefix("latest") {
            let back = match rest.strip_prefix('~') {
                None if rest.is_empty() => 0,
                Some(n) => n.parse::<usize>().map_err(|_| self.no_such(text))?,
                None => return Err(self.no_such(text)),
            };
            return runs
                .iter()
                .rev()
                .nth(back)
                .map(|r| r.id.clone())
                .ok_or_else(|| self.no_such(text));
        }
        let upper = text.to_ascii_uppercase();
        let matching: Vec<&RunSummary> = runs
            .iter()
            .filter(|r| !upper.is_empty() && r.id.as_str().starts_with(&upper))
            .collect();
        match matching.as_slice() {
            [one] => Ok(one.id.clone()),
            [] => Err(self.no_such(text)),
            many => Err(Error::RunStore {
                location: self.location(),
                message: format!(
                    "`{text}` is the start of {} run ids ({}{}); give more characters",
                    many.len(),
                    many.iter()
                        .take(3)
                        .map(|r| r.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                    if many.len() > 3 { ", …" } else { "" }
                ),
            }),
        }
    }

    /// The run `text` names ([`RunStore::resolve`]).
    fn load(&self, text: &str) -> Result<RunRecord> {
        let id = self.resolve(text)?;
        self.get(&id)?.ok_or_else(|| self.no_such(text))
    }

    /// The error for a run this store does not hold.
    fn no_such(&self, text: &str) -> Error {
        Error::NoSuchRun {
            location: self.location(),
            id: text.to_owned(),
        }
    }
}

/// One query's result in a run group, as one shard reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRow {
    /// The query's id.
    pub query: String,
    /// The shard that reported it (`RAG_EVAL_SHARD`, empty when unnamed).
    pub shard: String,
    /// The result, as the harness wrote it (JSON).
    pub result: String,
}

/// Which store the configuration names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreChoice {
    /// Record nothing.
    Off,
    /// A SQLite file.
    Sqlite(Utf8PathBuf),
    /// A PostgreSQL database, by connection URL.
    Postgres(String),
}

impl StoreChoice {
    /// The store `value` names (the syntax of `RAG_EVAL_RUNS`); `None` is [`DEFAULT_PATH`].
    pub fn parse(value: Option<&str>) -> StoreChoice {
        match value.map(str::trim) {
            None | Some("") => StoreChoice::Sqlite(DEFAULT_PATH.into()),
            Some(v) if v.eq_ignore_ascii_case("off") => StoreChoice::Off,
            Some(v) if v.starts_with("postgres://") || v.starts_with("postgresql://") => {
                StoreChoice::Postgres(v.to_owned())
            }
            Some(v) => StoreChoice::Sqlite(v.into()),
        }
    }

    /// The store `RAG_EVAL_RUNS` names.
    pub fn from_env() -> Result<StoreChoice> {
        match std::env::var(RUNS_ENV) {
            Ok(v) => Ok(StoreChoice::parse(Some(&v))),
            Err(std::env::VarError::NotPresent) => Ok(StoreChoice::parse(None)),
            Err(std::env::VarError::NotUnicode(v)) => Err(Error::NonUtf8Path(format!(
                "{RUNS_ENV}={}",
                v.to_string_lossy()
            ))),
        }
    }
}

/// Opens the store `choice` names (creating a SQLite file and its folder, or PostgreSQL's
/// tables, when absent); `None` for [`StoreChoice::Off`].
pub fn open(choice: &StoreChoice) -> Result<Option<Box<dyn RunStore>>> {
    Ok(match choice {
        StoreChoice::Off => None,
        StoreChoice::Sqlite(path) => Some(Box::new(super::SqliteRunStore::open(path)?)),
        #[cfg(feature = "postgres")]
        StoreChoice::Postgres(url) => Some(Box::new(super::PostgresRunStore::connect(url)?)),
        #[cfg(not(feature = "postgres"))]
        StoreChoice::Postgres(url) => {
            return Err(Error::RunStore {
                location: crate::redact::redact_url(url),
                message: "this rag-eval was built without the `postgres` feature".into(),
            })
        }
    })
}

/// Opens the store `choice` names for reading only: a SQLite file is opened read-only
/// ([`SqliteRunStore::open_read_only`](super::SqliteRunStore::open_read_only): nothing
/// created, migrated or written; a missing file is an error); `None` for [`StoreChoice::Off`].
pub fn open_read_only(choice: &StoreChoice) -> Result<Option<Box<dyn RunStore>>> {
    match choice {
        StoreChoice::Sqlite(path) => Ok(Some(Box::new(super::SqliteRunStore::open_read_only(
            path.clone(),
        )?))),
        other => open(other),
    }
}

/// Opens the store `RAG_EVAL_RUNS` names ([`StoreChoice::from_env`], [`open`]).
pub fn open_from_env() -> Result<Option<Box<dyn RunStore>>> {
    open(&StoreChoice::from_env()?)
}

/// Records `runs` in the store `RAG_EVAL_RUNS` names, each once. Returns the store's location,
/// or `None` when recording is off.
pub fn record_runs(runs: &[RunRecord]) -> Result<Option<String>> {
    let Some(store) = open_from_env()? else {
        return Ok(None);
    };
    for run in runs {
        store.put(run)?;
    }
    Ok(Some(store.location()))
}
