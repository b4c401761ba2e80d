//! [`PostgresRunStore`]: run records in a PostgreSQL database, shared by CI machines and
//! branches; the same behaviour as the SQLite store.

use super::id::RunId;
use super::record::{RunRecord, RunSummary};
use super::sqlite::{summary_json, FORMAT};
use super::store::{GroupRow, RunStore, SCHEMA_VERSION};
use crate::error::{Error, Result};
use crate::redact::redact_url;
use postgres::{Client, NoTls};
use std::sync::Mutex;

/// The schema's history, as for SQLite: statement `i` takes version `i` to `i + 1`.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    "CREATE TABLE rag_eval_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE rag_eval_runs (id TEXT PRIMARY KEY, created TEXT NOT NULL, record TEXT NOT NULL);",
    "ALTER TABLE rag_eval_runs ADD COLUMN dataset_hash TEXT;
     ALTER TABLE rag_eval_runs ADD COLUMN summary TEXT;
     CREATE INDEX rag_eval_runs_dataset_hash ON rag_eval_runs (dataset_hash);",
    "CREATE TABLE rag_eval_group_cases (run_group TEXT NOT NULL, name TEXT NOT NULL,
         description TEXT NOT NULL, PRIMARY KEY (run_group, name));
     CREATE TABLE rag_eval_group_queries (run_group TEXT NOT NULL, name TEXT NOT NULL,
         query TEXT NOT NULL, shard TEXT NOT NULL, result TEXT NOT NULL,
         PRIMARY KEY (run_group, name, query, shard));",
];

/// The rows a shard writes per statement (two arrays of this many strings).
const ROWS_PER_STATEMENT: usize = 1_000;

/// Serialises schema changes between clients: a transaction-scoped advisory lock on this key
/// ("RAGR").
const MIGRATION_LOCK: i64 = 0x5241_4752;

/// A run store in PostgreSQL (see [`RunStore`]): tables `rag_eval_meta` and `rag_eval_runs`
/// in the connection's schema (its `search_path`), created or migrated on connect. TLS is not
/// used: reach a remote server through a tunnel or a local proxy.
pub struct PostgresRunStore {
    location: String,
    client: Mutex<Client>,
}

impl std::fmt::Debug for PostgresRunStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresRunStore")
            .field("location", &self.location)
            .finish()
    }
}

impl PostgresRunStore {
    /// Connects to `url` (`postgres://user:password@host:port/db`, libpq's URL syntax) and
    /// creates or migrates the tables. A database whose `rag_eval_meta` says another format or
    /// a newer schema is refused with [`Error::RunStore`].
    ///
    /// Must not be called from within an async runtime: the client drives its own.
    pub fn connect(url: &str) -> Result<PostgresRunStore> {
        let location = redact_url(url);
        let fail = |action: &str, e: postgres::Error| Error::RunStore {
            location: location.clone(),
            message: format!("{action}: {}", pg_message(&e)),
        };
        let mut client = Client::connect(url, NoTls).map_err(|e| fail("connect", e))?;
        let mut tx = client
            .transaction()
            .map_err(|e| fail("begin the schema check", e))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .map_err(|e| fail("lock the schema", e))?;
        let has_meta: bool = tx
            .query_one("SELECT to_regclass('rag_eval_meta') IS NOT NULL", &[])
            .map_err(|e| fail("look for the tables", e))?
            .get(0);
        let from = if has_meta {
            let get = |tx: &mut postgres::Transaction<'_>, name: &str| {
                tx.query_opt("SELECT value FROM rag_eval_meta WHERE name = $1", &[&name])
                    .map(|r| r.map(|r| r.get::<_, String>(0)))
            };
            let format = get(&mut tx, "format").map_err(|e| fail("read the format", e))?;
            if format.as_deref() != Some(FORMAT) {
                return Err(Error::RunStore {
                    location,
                    message: format!(
                        "not a rag-eval run store: `rag_eval_meta` has format {}",
                        format.map_or("(none)".into(), |f| format!("`{f}`"))
                    ),
                });
            }
            let v = get(&mut tx, "schema_version")
                .map_err(|e| fail("read the schema version", e))?
                .unwrap_or_default();
            match v.parse::<u32>() {
                Ok(v) if v > SCHEMA_VERSION => {
                    return Err(Error::RunStore {
                        location,
                        message: format!(
                            "schema version {v} is newer than this rag-eval's ({SCHEMA_VERSION}); upgrade rag-eval"
                        ),
                    })
                }
                Ok(v) if v >= 1 => v,
                _ => {
                    return Err(Error::RunStore {
                        location,
                        message: format!("unreadable schema version `{v}`"),
                    })
                }
            }
        } else {
            0
        };
        for (i, step) in MIGRATIONS.iter().enumerate().skip(from as usize) {
            tx.batch_execute(step)
                .map_err(|e| fail(&format!("migrate to schema version {}", i + 1), e))?;
            if i + 1 == 2 {
                let rows = tx
                    .query("SELECT id, record FROM rag_eval_runs", &[])
                    .map_err(|e| fail("read runs to migrate", e))?;
                for row in rows {
                    let (id, text): (String, String) = (row.get(0), row.get(1));
                    let run = RunRecord::from_json(&text).map_err(|e| Error::RunStore {
                        location: location.clone(),
                        message: format!("cannot migrate run `{id}` to schema version 2: {e}"),
                    })?;
                    tx.execute(
                        "UPDATE rag_eval_runs SET dataset_hash = $1, summary = $2 WHERE id = $3",
                        &[&run.dataset.hash, &summary_json(&run), &id],
                    )
                    .map_err(|e| fail("migrate a run", e))?;
                }
            }
        }
        if from < SCHEMA_VERSION {
            tx.execute(
                "INSERT INTO rag_eval_meta (name, value) VALUES ('format', $1), ('schema_version', $2)
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                &[&FORMAT, &SCHEMA_VERSION.to_string()],
            )
            .map_err(|e| fail("record the schema version", e))?;
        }
        tx.commit().map_err(|e| fail("commit the schema", e))?;
        Ok(PostgresRunStore {
            location,
            client: Mutex::new(client),
        })
    }

    fn client(&self) -> std::sync::MutexGuard<'_, Client> {
        self.client.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn fail(&self, action: &str, e: postgres::Error) -> Error {
        self.error(format!("{action}: {}", pg_message(&e)))
    }

    fn error(&self, message: String) -> Error {
        Error::RunStore {
            location: self.location.clone(),
            message,
        }
    }
}

/// The server's message when there is one (the client's `Display` says only "db error").
fn pg_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut s = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(cause) = source {
                s.push_str(": ");
                s.push_str(&cause.to_string());
                source = cause.source();
            }
            s
        }
    }
}

impl RunStore for PostgresRunStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn put_group_shard(
        &self,
        group: &str,
        case: &str,
        shard: &str,
        description: &str,
        results: &[(String, String)],
    ) -> Result<()> {
        let mut client = self.client();
        let fail = |e| self.fail("write a shard's results into a run group", e);
        let mut tx = client.transaction().map_err(fail)?;
        // One statement per batch of rows, not a round trip per row.
        let st = tx
            .prepare(
                "INSERT INTO rag_eval_group_queries (run_group, name, query, shard, result)
                 SELECT $1, $2, query, $3, result FROM unnest($4::text[], $5::text[]) AS r(query, result)
                 ON CONFLICT (run_group, name, query, shard) DO UPDATE SET result = excluded.result",
            )
            .map_err(fail)?;
        for batch in results.chunks(ROWS_PER_STATEMENT) {
            let (queries, rows): (Vec<&str>, Vec<&str>) =
                batch.iter().map(|(q, r)| (q.as_str(), r.as_str())).unzip();
            tx.execute(&st, &[&group, &case, &shard, &queries, &rows])
                .map_err(fail)?;
        }
        // Last: the description's row is shared by every shard, and stays locked until commit.
        tx.execute(
            "INSERT INTO rag_eval_group_cases (run_group, name, description) VALUES ($1, $2, $3)
             ON CONFLICT (run_group, name) DO UPDATE SET description = excluded.description",
            &[&group, &case, &description],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)
    }

    fn group_case(&self, group: &str, case: &str) -> Result<Option<(String, Vec<GroupRow>)>> {
        let mut client = self.client();
        let fail = |e| self.fail("read a run group", e);
        let Some(row) = client
            .query_opt(
                "SELECT description FROM rag_eval_group_cases WHERE run_group = $1 AND name = $2",
                &[&group, &case],
            )
            .map_err(fail)?
        else {
            return Ok(None);
        };
        let rows = client
            .query(
                "SELECT query, shard, result FROM rag_eval_group_queries
                 WHERE run_group = $1 AND name = $2 ORDER BY query, shard",
                &[&group, &case],
            )
            .map_err(fail)?;
        let rows = rows
            .iter()
            .map(|r| GroupRow {
                query: r.get(0),
                shard: r.get(1),
                result: r.get(2),
            })
            .collect();
        Ok(Some((row.get(0), rows)))
    }

    fn group_cases(&self, group: &str) -> Result<Vec<String>> {
        let rows = self
            .client()
            .query(
                "SELECT name FROM rag_eval_group_cases WHERE run_group = $1 ORDER BY name",
                &[&group],
            )
            .map_err(|e| self.fail("read a run group", e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn put(&self, run: &RunRecord) -> Result<bool> {
        run.check_storable()?;
        let n = self
            .client()
            .execute(
                "INSERT INTO rag_eval_runs (id, created, record, dataset_hash, summary)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
                &[
                    &run.id.as_str(),
                    &run.created,
                    &run.to_json(),
                    &run.dataset.hash,
                    &summary_json(run),
                ],
            )
            .map_err(|e| self.fail("write a run", e))?;
        Ok(n == 1)
    }

    fn get(&self, id: &RunId) -> Result<Option<RunRecord>> {
        let row = self
            .client()
            .query_opt(
                "SELECT record FROM rag_eval_runs WHERE id = $1",
                &[&id.as_str()],
            )
            .map_err(|e| self.fail("read a run", e))?;
        row.map(|r| {
            RunRecord::from_json(r.get(0)).map_err(|e| self.error(format!("run `{id}`: {e}")))
        })
        .transpose()
    }

    fn list(&self) -> Result<Vec<RunSummary>> {
        let rows = self
            .client()
            .query(
                "SELECT id, created, summary FROM rag_eval_runs ORDER BY created, id",
                &[],
            )
            .map_err(|e| self.fail("list runs", e))?;
        rows.iter()
            .map(|r| {
                let (id, created, s): (String, String, Option<String>) =
                    (r.get(0), r.get(1), r.get(2));
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
        let row = self
            .client()
            .query_opt("SELECT 1 FROM rag_eval_runs WHERE id = $1", &[&id.as_str()])
            .map_err(|e| self.fail("look a run up", e))?;
        Ok(row.is_some())
    }

    fn delete(&self, id: &RunId) -> Result<bool> {
        let n = self
            .client()
            .execute("DELETE FROM rag_eval_runs WHERE id = $1", &[&id.as_str()])
            .map_err(|e| self.fail("delete a run", e))?;
        Ok(n == 1)
    }
}
