//! [`SqliteRunStore`]: run records in one SQLite file, in WAL mode, safe for concurrent
//! writers.

use super::id::RunId;
use super::record::{RunRecord, RunSummary};
use super::store::{GroupRow, RunStore, SCHEMA_VERSION};
use crate::error::{Error, Result};
use camino::{Utf8Path, Utf8PathBuf};
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The `meta` table's `format` value that marks a file as a run store.
pub(super) const FORMAT: &str = "rag-eval-runs";
/// SQLite's `application_id` header field for run stores ("RAGR").
const APPLICATION_ID: i32 = 0x5241_4752;
/// How long an operation waits for another process's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The schema's history: statement `i` takes a store from version `i` to `i + 1`. A store is
/// created by running them all, so a new file and a migrated one end up the same. Version 2
/// adds the columns `runs list` reads instead of parsing every record; their values for runs
/// already stored are filled in by [`fill_v2_columns`].
pub(super) const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    "CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
     CREATE TABLE runs (id TEXT PRIMARY KEY NOT NULL, created TEXT NOT NULL, record TEXT NOT NULL);",
    "ALTER TABLE runs ADD COLUMN dataset_hash TEXT;
     ALTER TABLE runs ADD COLUMN summary TEXT;
     CREATE INDEX runs_dataset_hash ON runs (dataset_hash);",
    GROUP_TABLES,
];

/// Version 3: the run groups that shards of one run write into (the same in PostgreSQL).
pub(super) const GROUP_TABLES: &str =
    "CREATE TABLE group_cases (run_group TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL,
         PRIMARY KEY (run_group, name));
     CREATE TABLE group_queries (run_group TEXT NOT NULL, name TEXT NOT NULL, query TEXT NOT NULL,
         shard TEXT NOT NULL, result TEXT NOT NULL, PRIMARY KEY (run_group, name, query, shard));";

/// A run store in a SQLite file (see [`RunStore`]). One connection behind a mutex; other
/// processes may use the same file at once.
///
/// ```
/// use rag_eval::metrics::{ResultLevel, RunResult};
/// use rag_eval::runs::{RunRecord, RunStore, SqliteRunStore};
///
/// let dir = tempfile::tempdir()?;
/// let store = SqliteRunStore::open(dir.path().join("runs.sqlite").to_str().unwrap())?;
/// let run = RunRecord::new(
///     "score",
///     "d.jsonl",
///     RunResult::from_queries(ResultLevel::Chunk, vec!["mrr".into()], Vec::new()),
/// );
/// assert!(store.put(&run)?);
/// assert_eq!(store.load(&run.id.as_str()[..20])?, run);
/// assert_eq!(store.list()?.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SqliteRunStore {
    path: Utf8PathBuf,
    conn: Mutex<Connection>,
}

impl std::fmt::Debug for SqliteRunStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteRunStore")
            .field("path", &self.path)
            .finish()
    }
}

/// Why setting a file up failed: SQLite's error (perhaps a lock worth waiting for), or a file
/// that is not ours.
enum SetupError {
    Sql(rusqlite::Error),
    Refused(String),
}

impl From<rusqlite::Error> for SetupError {
    fn from(e: rusqlite::Error) -> Self {
        SetupError::Sql(e)
    }
}

fn is_busy(err: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

impl SqliteRunStore {
    /// Opens the store at `path`, creating the file (and its folder) when absent and
    /// migrating an older schema. A file that is not SQLite, is corrupt, belongs to another
    /// program, or has a newer schema is refused with [`Error::RunStore`] naming it.
    pub fn open(path: impl Into<Utf8PathBuf>) -> Result<SqliteRunStore> {
        let path = path.into();
        if let Some(dir) = path.parent().filter(|d| !d.as_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io("create folder", dir, e))?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn =
            Connection::open_with_flags(&path, flags).map_err(|e| sql_error(&path, "open", e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| sql_error(&path, "set the busy timeout", e))?;
        // Switching a fresh file to WAL and creating tables take locks SQLite's busy handler
        // does not always wait for when several processes start together: retry the whole
        // setup until the timeout.
        let started = Instant::now();
        loop {
            match setup(&conn) {
                Err(SetupError::Sql(e)) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(SetupError::Sql(e)) => return Err(sql_error(&path, "open the run store", e)),
                Err(SetupError::Refused(message)) => {
                    return Err(Error::RunStore {
                        location: path.to_string(),
                        message,
                    })
                }
                Ok(()) => break,
            }
        }
        Ok(SqliteRunStore {
            path,
            conn: Mutex::new(conn),
        })
    }

    /// Opens the store at `path` for reading only: nothing is created, migrated or written
    /// (no WAL switch), so a store the user may only read (a shared file, a read-only mount)
    /// can be listed, shown, compared and served. A missing file, and one of another schema
    /// version, are refused with [`Error::RunStore`] naming it.
    pub fn open_read_only(path: impl Into<Utf8PathBuf>) -> Result<SqliteRunStore> {
        let path = path.into();
        if !path.is_file() {
            return Err(Error::RunStore {
                location: path.to_string(),
                message: "there is no run store at this path".into(),
            });
        }
        let conn = match open_for_reading(&path, false) {
            Ok(conn) => conn,
            // A WAL file needs its shared-memory file, which a folder the user may not write
            // cannot take: read the file as it is, as nobody may be writing it either.
            Err(SetupError::Sql(e)) if cannot_write(&e) => {
                open_for_reading(&path, true).map_err(|e| match e {
                    SetupError::Sql(e) => sql_error(&path, "open the run store to read", e),
                    SetupError::Refused(message) => Error::RunStore {
                        location: path.to_string(),
                        message,
                    },
                })?
            }
            Err(SetupError::Sql(e)) => {
                return Err(sql_error(&path, "open the run store to read", e))
            }
            Err(SetupError::Refused(message)) => {
                return Err(Error::RunStore {
                    location: path.to_string(),
                    message,
                })
            }
        };
        Ok(SqliteRunStore {
            path,
            conn: Mutex::new(conn),
        })
    }

    /// The file.
    pub fn path(&self) -> &Utf8Path {
        &self.path
    }

    /// The schema version the file holds (after [`SqliteRunStore::open`], the current one).
    pub fn schema_version(&self) -> Result<u32> {
        let conn = self.conn();
        read_version(&conn)
            .map_err(|e| match e {
                SetupError::Sql(e) => sql_error(&self.path, "read the schema version", e),
                SetupError::Refused(m) => self.error(m),
            })?
            .ok_or_else(|| self.error("no schema version".into()))
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves no half-done transaction: SQLite rolls back.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn error(&self, message: String) -> Error {
        Error::RunStore {
            location: self.path.to_string(),
            message,
        }
    }
}

/// SQLite could not create or write a file it needs (a folder or file the user may only read).
fn cannot_write(err: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied)
    )
}

/// A read-only connection to the store at `path` (with SQLite's `immutable` flag, which takes
/// no locks and needs no shared-memory file, when `immutable`), checked to hold the current
/// schema.
fn open_for_reading(path: &Utf8Path, immutable: bool) -> Result<Connection, SetupError> {
    let mut flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = if immutable {
        flags |= OpenFlags::SQLITE_OPEN_URI;
        let mut uri = String::from("file:");
        for c in path.as_str().chars() {
            match c {
                '%' => uri.push_str("%25"),
                '?' => uri.push_str("%3f"),
                '#' => uri.push_str("%23"),
                c => uri.push(c),
            }
        }
        uri.push_str("?immutable=1");
        Connection::open_with_flags(uri, flags)?
    } else {
        Connection::open_with_flags(path, flags)?
    };
    conn.busy_timeout(BUSY_TIMEOUT)?;
    match read_version(&conn)? {
        Some(SCHEMA_VERSION) => Ok(conn),
        None => Err(SetupError::Refused(
            "an empty database, not a run store yet".into(),
        )),
        Some(v) => Err(SetupError::Refused(format!(
            "schema version {v} must be migrated to {SCHEMA_VERSION} before it can be read: \
             run a command that writes to the store (`rag-eval runs import` of an empty file) \
             once with write access"
        ))),
    }
}

/// `err` from SQLite while doing `action` on the file at `path`.
fn sql_error(path: &Utf8Path, action: &str, err: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode;
    let message = match err.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => {
            format!("not a SQLite database ({action}: {err}); choose another path")
        }
        Some(ErrorCode::DatabaseCorrupt) => format!("the database is corrupt ({action}: {err})"),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
            "{action}: {err} (another process held the lock for more than {} s)",
            BUSY_TIMEOUT.as_secs()
        ),
        _ => format!("{action}: {err}"),
    };
    Error::RunStore {
        location: path.to_string(),
        message,
    }
}

fn tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut st =
        conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
    let names = st.query_map([], |r| r.get::<_, String>(0))?;
    names.collect()
}

/// The schema version of a file that is ours, `None` for an empty database, and a refusal for
/// anything else.
fn read_version(conn: &Connection) -> Result<Option<u32>, SetupError> {
    let tables = tables(conn)?;
    if tables.is_empty() {
        return Ok(None);
    }
    if !tables.iter().any(|t| t == "meta") {
        return Err(SetupError::Refused(format!(
            "not a rag-eval run store: a SQLite database of another program (tables: {})",
            tables.join(", ")
        )));
    }
    let get = |name: &str| -> rusqlite::Result<Option<String>> {
        conn.query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| {
            r.get(0)
        })
        .optional()
    };
    match get("format")?.as_deref() {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(SetupError::Refused(format!(
                "not a rag-eval run store: its format is `{other}`{}",
                if other == "rag-eval-cache" {
                    " (the cache of embeddings and LLM calls); give the run store a path of its own"
                } else {
                    ""
                }
            )))
        }
        None => {
            return Err(SetupError::Refused(
                "not a rag-eval run store: its `meta` table has no `format`".into(),
            ))
        }
    }
    let version = get("schema_version")?.unwrap_or_default();
    match version.parse::<u32>() {
        Ok(v) if v > SCHEMA_VERSION => Err(SetupError::Refused(format!(
            "schema version {v} is newer than this rag-eval's ({SCHEMA_VERSION}); upgrade rag-eval"
        ))),
        Ok(v) if v >= 1 => Ok(Some(v)),
        _ => Err(SetupError::Refused(format!(
            "unreadable schema version `{version}`"
        ))),
    }
}

fn setup(conn: &Connection) -> Result<(), SetupError> {
    let version = read_version(conn)?;
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!("run store: WAL unavailable (journal mode {mode})");
        }
    }
    // Safe with WAL: a crash may lose the last commits, never the file.
    conn.execute_batch("PRAGMA synchronous = NORMAL")?;
    if version == Some(SCHEMA_VERSION) {
        return Ok(());
    }
    // Another process may be creating or migrating the same file: look again under the
    // write lock, and migrate in one transaction.
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let done = (|| -> Result<(), SetupError> {
        let from = read_version(conn)?.unwrap_or(0);
        for (i, step) in MIGRATIONS.iter().enumerate().skip(from as usize) {
            conn.execute_batch(step)?;
            if i + 1 == 2 {
                fill_v2_columns(conn)?;
            }
        }
        if from == 0 {
            conn.pragma_update(None, "application_id", APPLICATION_ID)?;
        }
        conn.execute(
            "INSERT INTO meta (name, value) VALUES ('format', ?1), ('schema_version', ?2)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (FORMAT, SCHEMA_VERSION.to_string()),
        )?;
        conn.execute_batch("COMMIT")?;
        Ok(())
    })();
    if done.is_err() {
        // Nothing to undo when the transaction is already gone.
        let _ = conn.execute_batch("ROLLBACK");
    }
    done
}

/// Version 2's columns for the runs a version-1 store holds, from their records.
fn fill_v2_columns(conn: &Connection) -> Result<(), SetupError> {
    let rows: Vec<(String, String)> = {
        let mut st = conn.prepare("SELECT id, record FROM runs")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (id, text) in rows {
        let run = RunRecord::from_json(&text).map_err(|e| {
            SetupError::Refused(format!(
                "cannot migrate run `{id}` to schema version 2: {e}"
            ))
        })?;
        conn.execute(
            "UPDATE runs SET dataset_hash = ?1, summary = ?2 WHERE id = ?3",
            (&run.dataset.hash, summary_json(&run), &id),
        )?;
    }
    Ok(())
}

pub(super) fn summary_json(run: &RunRecord) -> String {
    serde_json::to_string(&run.summary()).unwrap_or_default()
}

impl RunStore for SqliteRunStore {
    fn location(&self) -> String {
        self.path.to_string()
    }

    fn put_group_shard(
        &self,
        group: &str,
        case: &str,
        shard: &str,
        description: &str,
        results: &[(String, String)],
    ) -> Result<()> {
        let mut conn = self.conn();
        let fail = |e| sql_error(&self.path, "write a shard's results into a run group", e);
        let tx = conn.transaction().map_err(fail)?;
        {
            let mut st = tx
                .prepare(
                    "INSERT INTO group_queries (run_group, name, query, shard, result)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (run_group, name, query, shard) DO UPDATE SET result = excluded.result",
                )
                .map_err(fail)?;
            for (query, result) in results {
                st.execute((group, case, query, shard, result))
                    .map_err(fail)?;
            }
        }
        tx.execute(
            "INSERT INTO group_cases (run_group, name, description) VALUES (?1, ?2, ?3)
             ON CONFLICT (run_group, name) DO UPDATE SET description = excluded.description",
            (group, case, description),
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)
    }

    fn group_case(&self, group: &str, case: &str) -> Result<Option<(String, Vec<GroupRow>)>> {
        let conn = self.conn();
        let fail = |e| sql_error(&self.path, "read a run group", e);
        let description: Option<String> = conn
            .query_row(
                "SELECT description FROM group_cases WHERE run_group = ?1 AND name = ?2",
                (group, case),
                |r| r.get(0),
            )
            .optional()
            .map_err(fail)?;
        let Some(description) = description else {
            return Ok(None);
        };
        let mut st = conn
            .prepare(
                "SELECT query, shard, result FROM group_queries
                 WHERE run_group = ?1 AND name = ?2 ORDER BY query, shard",
            )
            .map_err(fail)?;
        let rows = st
            .query_map((group, case), |r| {
                Ok(GroupRow {
                    query: r.get(0)?,
                    shard: r.get(1)?,
                    result: r.get(2)?,
                })
            })
            .map_err(fail)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(fail)?;
        Ok(Some((description, rows)))
    }

    fn group_cases(&self, group: &str) -> Result<Vec<String>> {
        let conn = self.conn();
        let fail = |e| sql_error(&self.path, "read a run group", e);
        let mut st = conn
            .prepare("SELECT name FROM group_cases WHERE run_group = ?1 ORDER BY name")
            .map_err(fail)?;
        let names = st
            .query_map([group], |r| r.get(0))
            .map_err(fail)?
            .collect::<rusqlite::Result<Vec<String>>>()
            .map_err(fail)?;
        Ok(names)
    }

    fn put(&self, run: &RunRecord) -> Result<bool> {
        run.check_storable()?;
        let conn = self.conn();
        let n = conn
            .execute(
                "INSERT INTO runs (id, created, record, dataset_hash, summary)
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (id) DO NOTHING",
                (
                    run.id.as_str(),
                    &run.created,
                    run.to_json(),
                    &run.dataset.hash,
                    summary_json(run),
                ),
            )
            .map_err(|e| sql_error(&self.path, "write a run", e))?;
        Ok(n == 1)
    }

    fn get(&self, id: &RunId) -> Result<Option<RunRecord>> {
        let text: Option<String> = self
            .conn()
            .query_row(
                "SELECT record FROM runs WHERE id = ?1",
                [id.as_str()],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| sql_error(&self.path, "read a run", e))?;
        text.map(|t| RunRecord::from_json(&t).map_err(|e| self.error(format!("run `{id}`: {e}"))))
            .transpose()
    }

    fn list(&self) -> Result<Vec<RunSummary>> {
        let conn = self.conn();
        let rows: Vec<(String, String, Option<String>)> = (|| {
            let mut st =
                conn.prepare("SELECT id, created, summary FROM runs ORDER BY created, id")?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            rows.collect::<rusqlite::Result<_>>()
        })()
        .map_err(|e| sql_error(&self.path, "list runs", e))?;
        rows.into_iter()
            .map(|(id, created, s)| {
                let id: RunId = id
                    .parse()
                    .map_err(|e| self.error(format!("a stored run id: {e}")))?;
                Ok(RunSummary::from_stored(
                    id,
                    &created,
                    s.as_deref().unwrap_or(""),
                ))
            })
            .collect()
    }

    fn contains(&self, id: &RunId) -> Result<bool> {
        self.conn()
            .query_row(
                "SELECT 1 FROM runs WHERE id = ?1",
                [id.as_str()],
                |_| Ok(()),
            )
            .optional()
            .map(|found| found.is_some())
            .map_err(|e| sql_error(&self.path, "look a run up", e))
    }

    fn delete(&self, id: &RunId) -> Result<bool> {
        let n = self
            .conn()
            .execute("DELETE FROM runs WHERE id = ?1", [id.as_str()])
            .map_err(|e| sql_error(&self.path, "delete a run", e))?;
        Ok(n == 1)
    }
}
