//! The SQLite file behind [`Cache`]: schema, modes, lookups, writes and accounting.

use super::codec::{decode_vector, encode_vector};
use super::key::{canonical_json, CacheKey, Table};
use super::mode::{CacheMode, MODE_ENV};
use super::stats::{CacheStats, Price, Tally};
use crate::error::{Error, Result};
use crate::llm::TokenUsage;
use camino::{Utf8Path, Utf8PathBuf};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Environment variable holding the cache file's path.
pub const PATH_ENV: &str = "RAG_EVAL_CACHE_PATH";
/// Where [`Cache::from_env`] keeps the file when neither code nor environment says otherwise,
/// relative to the current directory.
pub const DEFAULT_PATH: &str = "target/rag-eval-cache.sqlite";
/// How long an operation waits for another process's lock before failing.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The version of the tables this code reads and writes, kept in the file's `meta` table.
pub const SCHEMA_VERSION: u32 = 1;
/// The `meta` table's `format` value that marks a file as a rag-eval cache.
pub(super) const FORMAT: &str = "rag-eval-cache";
/// SQLite's `application_id` header field for our files ("RAGE"), so tools such as `file` can
/// tell them apart.
pub(super) const APPLICATION_ID: i32 = 0x5241_4745;
/// Longest input preview in a replay-miss error, in characters.
const PREVIEW_CHARS: usize = 120;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (
    name TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS embeddings (
    key BLOB PRIMARY KEY NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    vector BLOB NOT NULL,
    tokens INTEGER,
    created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS responses (
    key BLOB PRIMARY KEY NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    created INTEGER NOT NULL
);
";

/// A recorded LLM response.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedResponse {
    /// The response as it was stored.
    pub response: serde_json::Value,
    /// The usage reported when it was recorded.
    pub usage: Option<TokenUsage>,
}

/// One embedding to store with [`Cache::put_embeddings`].
#[derive(Debug, Clone, Copy)]
pub struct EmbeddingEntry<'a> {
    /// The text embedded.
    pub text: &'a str,
    /// Its vector.
    pub vector: &'a [f32],
    /// The tokens the provider counted for this text, when known.
    pub tokens: Option<u64>,
}

/// How many entries a cache file holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EntryCounts {
    /// Stored vectors.
    pub embeddings: u64,
    /// Stored LLM responses.
    pub responses: u64,
}

/// A cache file opened in some [`CacheMode`]. Share it between embedders and chat clients with
/// an `Arc`; see the [module docs](crate::cache).
pub struct Cache {
    path: Utf8PathBuf,
    mode: CacheMode,
    /// `None` in [`CacheMode::Off`].
    conn: Option<Mutex<Connection>>,
    /// Per (provider, model).
    tallies: Mutex<HashMap<(String, String), Tally>>,
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("stats", &self.stats())
            .finish()
    }
}

/// `err` from SQLite while doing `action` on the file at `path`.
fn sql_error(path: &Utf8Path, action: &str, err: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode;
    let message = match err.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => {
            format!("not a SQLite database ({action}: {err}); delete it or choose another path")
        }
        Some(ErrorCode::DatabaseCorrupt) => {
            format!("the database is corrupt ({action}: {err}); delete it to start afresh")
        }
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
            "{action}: {err} (another process held the lock for more than {} s)",
            BUSY_TIMEOUT.as_secs()
        ),
        _ => format!("{action}: {err}"),
    };
    Error::Cache {
        path: path.to_owned(),
        message,
    }
}

fn is_busy(err: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// At most [`PREVIEW_CHARS`] characters of `text` for an error message, quoted; a long text
/// keeps its start and its end, where requests sharing a prefix (a system prompt) differ.
fn preview(text: &str) -> String {
    let len = text.chars().count();
    if len <= PREVIEW_CHARS {
        return format!("{text:?}");
    }
    let half = PREVIEW_CHARS / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(len - half).collect();
    format!("{head:?}…{tail:?} ({len} chars)")
}

impl Cache {
    /// Opens the cache file at `path` to read, creating and writing nothing beside it either
    /// (a dry run counts what it holds). Without a write-ahead log beside the file (a cache
    /// whose last writer closed it) every row is in the file, which SQLite then reads as
    /// immutable, so it makes no `-wal` or `-shm` file; with one, the file is read as
    /// [`CacheMode::Replay`] reads it, the log's rows included.
    pub fn open_untouched(path: impl Into<Utf8PathBuf>) -> Result<Self> {
        let path = path.into();
        let conn = if Utf8PathBuf::from(format!("{path}-wal")).exists() {
            Self::connect(&path, false)?
        } else {
            Self::connect_immutable(&path)?
        };
        Ok(Cache {
            path,
            mode: CacheMode::Replay,
            conn: Some(Mutex::new(conn)),
            tallies: Mutex::new(HashMap::new()),
        })
    }

    /// A read-only connection to `path` as an immutable file (an SQLite URI).
    fn connect_immutable(path: &Utf8Path) -> Result<Connection> {
        if !path.is_file() {
            return Err(Error::Cache {
                path: path.to_owned(),
                message: "no such file to replay from; record it first with RAG_EVAL_CACHE=rw"
                    .into(),
            });
        }
        // The characters a URI's path cannot hold as they are.
        let escaped = path
            .as_str()
            .replace('%', "%25")
            .replace('?', "%3f")
            .replace('#', "%23");
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(format!("file:{escaped}?immutable=1"), flags)
            .map_err(|e| sql_error(path, "open", e))?;
        match Self::setup(&conn, path, false) {
            Ok(()) => Ok(conn),
            Err(SetupError::Sql(e)) => Err(sql_error(path, "prepare the cache", e)),
            Err(SetupError::Refused(message)) => Err(Error::Cache {
                path: path.to_owned(),
                message,
            }),
        }
    }

    /// Opens (in `rw` mode creating, with its folder) the cache file at `path`.
    ///
    /// In [`CacheMode::Off`] nothing is opened. In [`CacheMode::Replay`] the file must exist
    /// and is opened read-only.
    pub fn open(path: impl Into<Utf8PathBuf>, mode: CacheMode) -> Result<Self> {
        let path = path.into();
        let conn = match mode {
            CacheMode::Off => None,
            CacheMode::ReadWrite => Some(Mutex::new(Self::connect(&path, true)?)),
            CacheMode::Replay => Some(Mutex::new(Self::connect(&path, false)?)),
        };
        Ok(Cache {
            path,
            mode,
            conn,
            tallies: Mutex::new(HashMap::new()),
        })
    }

    /// The cache the environment asks for: mode from `RAG_EVAL_CACHE`, file from
    /// `RAG_EVAL_CACHE_PATH`, else [`DEFAULT_PATH`].
    pub fn from_env() -> Result<Self> {
        Self::from_env_or(DEFAULT_PATH)
    }

    /// Like [`Cache::from_env`], with `path` as the file when `RAG_EVAL_CACHE_PATH` is unset,
    /// e.g. a recording committed under `golden/`.
    pub fn from_env_or(path: impl Into<Utf8PathBuf>) -> Result<Self> {
        let (path, mode) = Self::settings(
            std::env::var_os(MODE_ENV),
            std::env::var_os(PATH_ENV),
            path.into(),
        )?;
        Self::open(path, mode)
    }

    pub(super) fn settings(
        mode: Option<OsString>,
        path: Option<OsString>,
        default: Utf8PathBuf,
    ) -> Result<(Utf8PathBuf, CacheMode)> {
        let mode = CacheMode::from_var(mode)?;
        let path = match path {
            Some(p) if !p.is_empty() => Utf8PathBuf::from_path_buf(p.into())
                .map_err(|p| Error::NonUtf8Path(p.display().to_string()))?,
            _ => default,
        };
        Ok((path, mode))
    }

    /// A cache in [`CacheMode::Off`]: every lookup misses and nothing is stored.
    pub fn disabled() -> Self {
        Cache {
            path: Utf8PathBuf::new(),
            mode: CacheMode::Off,
            conn: None,
            tallies: Mutex::new(HashMap::new()),
        }
    }

    /// The mode it was opened in.
    pub fn mode(&self) -> CacheMode {
        self.mode
    }

    /// The file (empty for [`Cache::disabled`]).
    pub fn path(&self) -> &Utf8Path {
        &self.path
    }

    fn connect(path: &Utf8Path, writable: bool) -> Result<Connection> {
        if writable {
            if let Some(dir) = path.parent().filter(|d| !d.as_str().is_empty()) {
                std::fs::create_dir_all(dir).map_err(|e| Error::io("create folder", dir, e))?;
            }
        } else if !path.is_file() {
            return Err(Error::Cache {
                path: path.to_owned(),
                message: "no such file to replay from; record it first with RAG_EVAL_CACHE=rw"
                    .into(),
            });
        }
        let flags = if writable {
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
        } else {
            OpenFlags::SQLITE_OPEN_READ_ONLY
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn =
            Connection::open_with_flags(path, flags).map_err(|e| sql_error(path, "open", e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| sql_error(path, "set busy timeout", e))?;
        // Reading the main file through a memory map spares a system call and a copy per page,
        // most of what a hit costs once the file is in the OS cache (address space only).
        conn.execute_batch("PRAGMA mmap_size = 268435456")
            .map_err(|e| sql_error(path, "map the file", e))?;
        // Switching a fresh file to WAL and creating the tables take locks that SQLite's busy
        // handler does not always wait for when several processes start together, so the
        // whole setup is retried until the timeout.
        let started = Instant::now();
        loop {
            match Self::setup(&conn, path, writable) {
                Err(SetupError::Sql(e)) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(SetupError::Sql(e)) => return Err(sql_error(path, "prepare the cache", e)),
                Err(SetupError::Refused(message)) => {
                    return Err(Error::Cache {
                        path: path.to_owned(),
                        message,
                    })
                }
                Ok(()) => return Ok(conn),
            }
        }
    }

    fn setup(conn: &Connection, path: &Utf8Path, writable: bool) -> Result<(), SetupError> {
        let tables = Self::tables(conn)?;
        if tables.is_empty() {
            if !writable {
                return Err(SetupError::Refused(
                    "holds no rag-eval cache (empty database)".into(),
                ));
            }
        } else {
            Self::check_meta(conn, &tables)?;
        }
        if writable {
            let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
                if !mode.eq_ignore_ascii_case("wal") {
                    tracing::warn!(
                        "cache `{path}`: WAL unavailable (journal mode {mode}); concurrent \
                         writers will wait for each other"
                    );
                }
            }
            // Safe with WAL: a crash may lose the last commits, never the file.
            conn.execute_batch("PRAGMA synchronous = NORMAL")?;
            if tables.is_empty() {
                // Another process may have created the tables since we looked: look again
                // under the write lock.
                conn.execute_batch("BEGIN IMMEDIATE")?;
                let created = (|| -> Result<(), SetupError> {
                    let now = Self::tables(conn)?;
                    if now.is_empty() {
                        conn.execute_batch(SCHEMA)?;
                        conn.execute(
                            "INSERT OR IGNORE INTO meta (name, value) VALUES ('format', ?1), \
                             ('schema_version', ?2)",
                            (FORMAT, SCHEMA_VERSION.to_string()),
                        )?;
                        conn.pragma_update(None, "application_id", APPLICATION_ID)?;
                    } else {
                        Self::check_meta(conn, &now)?;
                    }
                    conn.execute_batch("COMMIT")?;
                    Ok(())
                })();
                if created.is_err() {
                    // Nothing to undo if the transaction is already gone.
                    let _ = conn.execute_batch("ROLLBACK");
                }
                created?;
            }
        }
        Ok(())
    }

    fn tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
        let mut st = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
        let names = st.query_map([], |r| r.get::<_, String>(0))?;
        names.collect()
    }

    fn check_meta(conn: &Connection, tables: &[String]) -> Result<(), SetupError> {
        let has = |t: &str| tables.iter().any(|n| n == t);
        if !has("meta") {
            let mut listed = tables.to_vec();
            listed.sort();
            return Err(SetupError::Refused(format!(
                "is a SQLite database of something else (tables: {}), not a rag-eval cache",
                listed.join(", ")
            )));
        }
        let get = |name: &str| -> rusqlite::Result<Option<String>> {
            conn.query_row("SELECT value FROM meta WHERE name = ?1", [name], |r| {
                r.get::<_, String>(0)
            })
            .optional()
        };
        match get("format")? {
            Some(f) if f == FORMAT => {}
            other => {
                return Err(SetupError::Refused(format!(
                    "is not a rag-eval cache (its meta table has format {other:?})"
                )))
            }
        }
        let version = get("schema_version")?;
        match version.as_deref().map(str::parse::<u32>) {
            Some(Ok(SCHEMA_VERSION)) => {}
            Some(Ok(v)) if v > SCHEMA_VERSION => {
                return Err(SetupError::Refused(format!(
                    "has cache schema version {v}, newer than this rag-eval's \
                     {SCHEMA_VERSION}; upgrade rag-eval or use another file"
                )))
            }
            Some(Ok(v)) => {
                return Err(SetupError::Refused(format!(
                    "has cache schema version {v}, which this rag-eval (version \
                     {SCHEMA_VERSION}) cannot read; delete the file to start afresh"
                )))
            }
            _ => {
                return Err(SetupError::Refused(format!(
                    "has an unreadable cache schema version {version:?}"
                )))
            }
        }
        for t in ["embeddings", "responses"] {
            if !has(t) {
                return Err(SetupError::Refused(format!(
                    "lacks its `{t}` table; the file is damaged"
                )));
            }
        }
        Ok(())
    }

    fn lock(&self) -> Option<MutexGuard<'_, Connection>> {
        // A panic while holding the lock leaves at worst an open transaction, which rusqlite
        // rolls back when it is dropped.
        self.conn
            .as_ref()
            .map(|c| c.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn tally(&self, provider: &str, model: &str, f: impl FnOnce(&mut Tally)) {
        let mut tallies = self.tallies.lock().unwrap_or_else(|e| e.into_inner());
        match tallies.get_mut(&(provider.to_owned(), model.to_owned())) {
            Some(t) => f(t),
            None => f(tallies
                .entry((provider.to_owned(), model.to_owned()))
                .or_default()),
        }
    }

    /// Sets what the tokens of `model` of `provider` cost, for [`CacheStats::cost`].
    pub fn set_price(&self, provider: &str, model: &str, price: Price) {
        self.tally(provider, model, |t| t.price = Some(price));
    }

    /// Hits, misses and spending of every provider and model together.
    pub fn stats(&self) -> CacheStats {
        self.sum(|_| true)
    }

    /// Hits, misses and spending of the embedders alone (no chat model).
    pub fn embedding_stats(&self) -> CacheStats {
        self.sum(|t| t.embedding)
    }

    fn sum(&self, which: impl Fn(&Tally) -> bool) -> CacheStats {
        let tallies = self.tallies.lock().unwrap_or_else(|e| e.into_inner());
        let mut total = CacheStats::default();
        for t in tallies.values().filter(|t| which(t)) {
            let s = t.stats();
            total.hits += s.hits;
            total.misses += s.misses;
            total.tokens = crate::llm::add_tokens(total.tokens, s.tokens);
            total.saved_tokens = crate::llm::add_tokens(total.saved_tokens, s.saved_tokens);
            total.cost = match (total.cost, s.cost) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
            };
        }
        total
    }

    /// Hits, misses and spending of one model of one provider.
    pub fn stats_for(&self, provider: &str, model: &str) -> CacheStats {
        let tallies = self.tallies.lock().unwrap_or_else(|e| e.into_inner());
        tallies
            .get(&(provider.to_owned(), model.to_owned()))
            .map(Tally::stats)
            .unwrap_or_default()
    }

    pub(super) fn miss_error(
        &self,
        what: &'static str,
        provider: &str,
        model: &str,
        first: &str,
        missing: usize,
    ) -> Error {
        let mut input = preview(first);
        if missing > 1 {
            input.push_str(&format!(" and {} more", missing - 1));
        }
        Error::CacheMiss {
            path: self.path.clone(),
            what,
            provider: provider.to_owned(),
            model: model.to_owned(),
            input,
        }
    }

    /// The vector stored for `text`, if any. In [`CacheMode::Replay`] a miss is an error.
    pub fn get_embedding(
        &self,
        provider: &str,
        model: &str,
        params: &impl Serialize,
        text: &str,
    ) -> Result<Option<Vec<f32>>> {
        let mut found = self.get_embeddings(provider, model, params, &[text])?;
        Ok(found.pop().flatten())
    }

    /// The vectors stored for `texts`, in order, read in one transaction. In
    /// [`CacheMode::Replay`] any miss is an error naming the first missing text.
    pub fn get_embeddings<S: AsRef<str>>(
        &self,
        provider: &str,
        model: &str,
        params: &impl Serialize,
        texts: &[S],
    ) -> Result<Vec<Option<Vec<f32>>>> {
        let params = canonical_json(params)?;
        let keys: Vec<CacheKey> = texts
            .iter()
            .map(|t| {
                CacheKey::from_parts(
                    Table::Embeddings,
                    provider,
                    model,
                    &params,
                    t.as_ref().as_bytes(),
                )
            })
            .collect();
        let found = self.lookup_vectors(provider, model, &keys, None)?;
        if self.mode == CacheMode::Replay {
            let missing: Vec<usize> = (0..found.len()).filter(|&i| found[i].is_none()).collect();
            if let Some(&first) = missing.first() {
                return Err(self.miss_error(
                    "embedding",
                    provider,
                    model,
                    texts[first].as_ref(),
                    missing.len(),
                ));
            }
        }
        Ok(found.into_iter().map(|f| f.map(|(v, _)| v)).collect())
    }

    /// Looks `keys` up in one read transaction, counting hits, misses and saved tokens;
    /// each hit comes with the tokens it had cost. A key not found is looked up again under
    /// `legacy(i)`, the key entry `i` had in caches recorded before, when given.
    pub(super) fn lookup_vectors(
        &self,
        provider: &str,
        model: &str,
        keys: &[CacheKey],
        legacy: Option<&dyn Fn(usize) -> CacheKey>,
    ) -> Result<Vec<Option<Hit>>> {
        self.tally(provider, model, |t| t.embedding = true);
        let Some(mut conn) = self.lock() else {
            self.tally(provider, model, |t| t.misses += keys.len() as u64);
            return Ok(vec![None; keys.len()]);
        };
        let fetch = |conn: &Connection| -> rusqlite::Result<Vec<Option<VectorRow>>> {
            let mut rows = fetch_vectors(conn, keys)?;
            if let Some(legacy) = legacy {
                let missing: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].is_none()).collect();
                if !missing.is_empty() {
                    let old: Vec<CacheKey> = missing.iter().map(|&i| legacy(i)).collect();
                    for (i, row) in missing.into_iter().zip(fetch_vectors(conn, &old)?) {
                        rows[i] = row;
                    }
                }
            }
            Ok(rows)
        };
        let rows = if keys.len() == 1 && legacy.is_none() {
            fetch(&conn)
        } else {
            // One snapshot for a batch: cheaper than an implicit transaction per row.
            (|| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
                let rows = fetch(&tx)?;
                tx.commit()?;
                Ok(rows)
            })()
        }
        .map_err(|e| sql_error(&self.path, "read embeddings", e))?;
        drop(conn);
        let mut out = Vec::with_capacity(rows.len());
        let (mut hits, mut saved) = (0u64, 0u64);
        for (row, key) in rows.into_iter().zip(keys) {
            out.push(match row {
                None => None,
                Some((vector, tokens)) => {
                    let vector = vector.map_err(|bytes| Error::Cache {
                        path: self.path.clone(),
                        message: format!(
                            "entry {key} holds a vector blob of {bytes} bytes, not a whole \
                             number of f32 values; the file is damaged"
                        ),
                    })?;
                    let tokens = tokens.map(|t| t.max(0) as u64);
                    hits += 1;
                    saved += tokens.unwrap_or(0);
                    Some((vector, tokens))
                }
            });
        }
        let misses = keys.len() as u64 - hits;
        self.tally(provider, model, |t| {
            t.hits += hits;
            t.misses += misses;
            t.saved_tokens = crate::llm::add_tokens(t.saved_tokens, saved);
        });
        Ok(out)
    }

    /// Stores the vector of `text`. Nothing happens outside [`CacheMode::ReadWrite`]; an
    /// existing entry is kept.
    pub fn put_embedding(
        &self,
        provider: &str,
        model: &str,
        params: &impl Serialize,
        text: &str,
        vector: &[f32],
    ) -> Result<()> {
        self.put_embedding_with_usage(provider, model, params, text, vector, None)
    }

    /// Like [`Cache::put_embedding`], recording the tokens the provider counted for `text`.
    pub fn put_embedding_with_usage(
        &self,
        provider: &str,
        model: &str,
        params: &impl Serialize,
        text: &str,
        vector: &[f32],
        tokens: Option<u64>,
    ) -> Result<()> {
        self.put_embeddings(
            provider,
            model,
            params,
            &[EmbeddingEntry {
                text,
                vector,
                tokens,
            }],
        )
    }

    /// Stores several vectors in one transaction: all or none. Their tokens count as spent in
    /// [`Cache::stats`] in every mode (the calls were made).
    pub fn put_embeddings(
        &self,
        provider: &str,
        model: &str,
        params: &impl Serialize,
        entries: &[EmbeddingEntry<'_>],
    ) -> Result<()> {
        let params = canonical_json(params)?;
        let rows: Vec<(CacheKey, &[f32], Option<u64>)> = entries
            .iter()
            .map(|e| {
                let key = CacheKey::from_parts(
                    Table::Embeddings,
                    provider,
                    model,
                    &params,
                    e.text.as_bytes(),
                );
                (key, e.vector, e.tokens)
            })
            .collect();
        self.store_vectors(provider, model, &rows)
    }

    pub(super) fn store_vectors(
        &self,
        provider: &str,
        model: &str,
        rows: &[(CacheKey, &[f32], Option<u64>)],
    ) -> Result<()> {
        let spent: u64 = rows.iter().filter_map(|r| r.2).sum();
        self.tally(provider, model, |t| {
            t.embedding = true;
            t.usage.prompt_tokens = crate::llm::add_tokens(t.usage.prompt_tokens, spent)
        });
        if self.mode != CacheMode::ReadWrite || rows.is_empty() {
            return Ok(());
        }
        let Some(mut conn) = self.lock() else {
            return Ok(());
        };
        let created = now_secs();
        let write = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            {
                let mut st = tx.prepare_cached(
                    "INSERT OR IGNORE INTO embeddings (key, provider, model, vector, tokens, \
                     created) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?;
                for (key, vector, tokens) in rows {
                    st.execute((
                        &key.as_bytes()[..],
                        provider,
                        model,
                        encode_vector(vector),
                        tokens.map(|t| t.min(crate::llm::MAX_TOKENS) as i64),
                        created,
                    ))?;
                }
            }
            tx.commit()
        };
        write(&mut conn).map_err(|e| sql_error(&self.path, "store embeddings", e))
    }

    /// The response recorded for `input` to `model` of `provider` with `params`. In
    /// [`CacheMode::Replay`] a miss is an error.
    pub fn get_response(
        &self,
        provider: &str,
        model: &str,
        params: &impl Serialize,
        input: &impl Serialize,
    ) -> Result<Option<CachedResponse>> {
        self.lookup_response(provider, model, None, params, input)
    }

    /// [`Cache::get_response`], looking a request not found under `model` up again under
    /// `legacy_model`, the model part of the keys caches were recorded with before, when given.
    pub(super) fn lookup_response(
        &self,
        provider: &str,
        model: &str,
        legacy_model: Option<&str>,
        params: &impl Serialize,
        input: &impl Serialize,
    ) -> Result<Option<CachedResponse>> {
        let input = canonical_json(input)?;
        let params = canonical_json(params)?;
        let key_of = |model: &str| {
            CacheKey::from_parts(Table::Responses, provider, model, &params, input.as_bytes())
        };
        let mut key = key_of(model);
        let row = match self.lock() {
            None => None,
            Some(conn) => {
                let read = |key: &CacheKey| -> rusqlite::Result<_> {
                    conn.prepare_cached(
                        "SELECT response, prompt_tokens, completion_tokens FROM responses \
                         WHERE key = ?1",
                    )?
                    .query_row([&key.as_bytes()[..]], |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, Option<i64>>(1)?,
                            r.get::<_, Option<i64>>(2)?,
                        ))
                    })
                    .optional()
                };
                let mut row =
                    read(&key).map_err(|e| sql_error(&self.path, "read a response", e))?;
                if let (None, Some(old)) = (&row, legacy_model) {
                    key = key_of(old);
                    row = read(&key).map_err(|e| sql_error(&self.path, "read a response", e))?;
                }
                row
            }
        };
        let Some((text, prompt, completion)) = row else {
            self.tally(provider, model, |t| t.misses += 1);
            if self.mode == CacheMode::Replay {
                return Err(self.miss_error("response", provider, model, &input, 1));
            }
            return Ok(None);
        };
        let response = serde_json::from_str(&text).map_err(|e| Error::Cache {
            path: self.path.clone(),
            message: format!("response {key} is not valid JSON ({e}); the file is damaged"),
        })?;
        let usage = (prompt.is_some() || completion.is_some()).then(|| TokenUsage {
            prompt_tokens: prompt.unwrap_or(0).max(0) as u64,
            completion_tokens: completion.unwrap_or(0).max(0) as u64,
        });
        self.tally(provider, model, |t| {
            t.hits += 1;
            t.saved_tokens = crate::llm::add_tokens(t.saved_tokens, usage.map_or(0, |u| u.total()));
        });
        Ok(Some(CachedResponse { response, usage }))
    }

    /// Records `response` for `input` to `model` of `provider` with `params`, with the usage
    /// the provider reported. Nothing is written outside [`CacheMode::ReadWrite`]; an existing
    /// entry is kept. The usage counts as spent in [`Cache::stats`] in every mode.
    pub fn put_response(
        &self,
        provider: &str,
        model: &str,
        params: &impl Serialize,
        input: &impl Serialize,
        response: &impl Serialize,
        usage: Option<TokenUsage>,
    ) -> Result<()> {
        let key = CacheKey::for_response(provider, model, params, input)?;
        let text = serde_json::to_string(response).map_err(|source| Error::Json {
            what: "the response".into(),
            source,
        })?;
        if let Some(u) = usage {
            self.tally(provider, model, |t| {
                t.usage.prompt_tokens =
                    crate::llm::add_tokens(t.usage.prompt_tokens, u.prompt_tokens);
                t.usage.completion_tokens =
                    crate::llm::add_tokens(t.usage.completion_tokens, u.completion_tokens);
            });
        }
        if self.mode != CacheMode::ReadWrite {
            return Ok(());
        }
        let Some(conn) = self.lock() else {
            return Ok(());
        };
        let tokens = |n: u64| n.min(crate::llm::MAX_TOKENS) as i64;
        let write = || -> rusqlite::Result<()> {
            conn.prepare_cached(
                "INSERT OR IGNORE INTO responses (key, provider, model, response, \
                 prompt_tokens, completion_tokens, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute((
                &key.as_bytes()[..],
                provider,
                model,
                text,
                usage.map(|u| tokens(u.prompt_tokens)),
                usage.map(|u| tokens(u.completion_tokens)),
                now_secs(),
            ))?;
            Ok(())
        };
        write().map_err(|e| sql_error(&self.path, "store a response", e))
    }

    /// How many entries the file holds (zero when the cache is off).
    pub fn entry_counts(&self) -> Result<EntryCounts> {
        let Some(conn) = self.lock() else {
            return Ok(EntryCounts::default());
        };
        let count = |table: &str| -> rusqlite::Result<u64> {
            conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n.max(0) as u64)
        };
        let counts = || -> rusqlite::Result<EntryCounts> {
            Ok(EntryCounts {
                embeddings: count("embeddings")?,
                responses: count("responses")?,
            })
        };
        counts().map_err(|e| sql_error(&self.path, "count entries", e))
    }

    /// Copies everything from the write-ahead log into the main file and empties the log, so
    /// the file alone holds every entry (before committing it, say). SQLite does this by
    /// itself when the last connection closes.
    pub fn checkpoint(&self) -> Result<()> {
        if self.mode != CacheMode::ReadWrite {
            return Ok(());
        }
        let Some(conn) = self.lock() else {
            return Ok(());
        };
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        })
        .map_err(|e| sql_error(&self.path, "checkpoint", e))
        .and_then(|busy| {
            if busy == 0 {
                Ok(())
            } else {
                Err(Error::Cache {
                    path: self.path.clone(),
                    message: "checkpoint: other processes are still reading; retry when \
                                  they are done"
                        .into(),
                })
            }
        })
    }
}

/// A vector found in the cache and the tokens it had cost, when recorded.
type Hit = (Vec<f32>, Option<u64>);

/// A stored vector (or the length of a blob that is not one) and its tokens.
type VectorRow = (std::result::Result<Vec<f32>, usize>, Option<i64>);

/// The rows of `keys`, in order; vectors are decoded straight from SQLite's buffer.
fn fetch_vectors(conn: &Connection, keys: &[CacheKey]) -> rusqlite::Result<Vec<Option<VectorRow>>> {
    let mut st = conn.prepare_cached("SELECT vector, tokens FROM embeddings WHERE key = ?1")?;
    keys.iter()
        .map(|key| {
            st.query_row([&key.as_bytes()[..]], |r| {
                let vector = match r.get_ref(0)? {
                    rusqlite::types::ValueRef::Blob(b) => decode_vector(b).ok_or(b.len()),
                    other => {
                        return Err(rusqlite::Error::InvalidColumnType(
                            0,
                            "vector".into(),
                            other.data_type(),
                        ))
                    }
                };
                Ok((vector, r.get(1)?))
            })
            .optional()
        })
        .collect()
}

enum SetupError {
    Sql(rusqlite::Error),
    Refused(String),
}

impl From<rusqlite::Error> for SetupError {
    fn from(e: rusqlite::Error) -> Self {
        SetupError::Sql(e)
    }
}
