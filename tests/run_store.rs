//! The run store's behaviour, one test body per behaviour, run against SQLite and (feature
//! `postgres`, with `RAG_EVAL_TEST_POSTGRES` set by `.ci/postgres.sh`) a real PostgreSQL.

use rag_eval::metrics::{Figures, QueryResult, ResultLevel, RunResult};
use rag_eval::runs::{self, RunId, RunRecord, RunStore, StoreChoice, SCHEMA_VERSION};
use std::process::Command;

/// Where a test's stores live: a backend makes empty stores, writes a version-1 store by
/// hand, and names its stores in `RAG_EVAL_RUNS` syntax for other processes.
trait Backend {
    /// A new, empty store's `RAG_EVAL_RUNS` value.
    fn fresh(&self) -> String;
    /// A new store in schema version 1 holding `runs`, written by hand.
    fn v1_with(&self, runs: &[RunRecord]) -> String;
    /// Makes the store at `location` claim schema version `v`.
    fn set_version(&self, location: &str, v: u32);
}

fn open(location: &str) -> rag_eval::Result<Box<dyn RunStore>> {
    Ok(runs::open(&StoreChoice::parse(Some(location)))?.expect("a store, not `off`"))
}

fn run(label: &str, recall: f64) -> RunRecord {
    let q = |id: &str, d: Option<&str>, v: f64| QueryResult {
        id: id.into(),
        query: Some(format!("what about {id}?")),
        difficulty: d.map(str::to_owned),
        metrics: Figures(vec![("span_recall@5".into(), v), ("mrr".into(), v / 2.0)]),
        ..QueryResult::default()
    };
    let mut result = RunResult::from_queries(
        ResultLevel::Token,
        vec!["span_recall@5".into(), "mrr".into()],
        vec![q("q1", Some("hard"), recall), q("q2", None, 1.0)],
    );
    result.k = Some(5);
    result.group_by_difficulty();
    result.dataset_hash = Some("00112233aabbccdd".into());
    let mut r = RunRecord::new("test", "d.jsonl", result);
    r.label = Some(label.into());
    r
}

fn round_trip(b: &dyn Backend) {
    let location = b.fresh();
    let store = open(&location).unwrap();
    assert!(store.list().unwrap().is_empty());
    let runs: Vec<RunRecord> = (0..3)
        .map(|i| run(&format!("r{i}"), i as f64 / 4.0))
        .collect();
    for r in &runs {
        assert!(store.put(r).unwrap());
    }
    // The same id again changes nothing.
    let mut again = runs[0].clone();
    again.label = Some("changed".into());
    assert!(!store.put(&again).unwrap());
    for r in &runs {
        assert_eq!(store.get(&r.id).unwrap().as_ref(), Some(r));
    }
    let listed = store.list().unwrap();
    assert_eq!(
        listed,
        runs.iter().map(RunRecord::summary).collect::<Vec<_>>()
    );
    // Metric order survives the store.
    assert_eq!(
        listed[0].metrics.names().collect::<Vec<_>>(),
        ["span_recall@5", "mrr"]
    );

    assert_eq!(store.resolve("latest").unwrap(), runs[2].id);
    assert_eq!(store.resolve("latest~2").unwrap(), runs[0].id);
    assert_eq!(
        store.resolve(&runs[1].id.as_str().to_lowercase()).unwrap(),
        runs[1].id
    );
    let e = store.resolve("latest~3").unwrap_err();
    assert!(matches!(e, rag_eval::Error::NoSuchRun { .. }), "{e}");
    // Ids made in one process share their leading characters (the time).
    let e = store
        .resolve(&runs[0].id.as_str()[..6])
        .unwrap_err()
        .to_string();
    assert!(e.contains("is the start of 3 run ids"), "{e}");
    let e = store.load("ZZZZ").unwrap_err().to_string();
    assert!(e.contains("has no run `ZZZZ`"), "{e}");
    assert_eq!(store.load(runs[1].id.as_str()).unwrap(), runs[1]);

    assert!(store.delete(&runs[1].id).unwrap());
    assert!(!store.delete(&runs[1].id).unwrap());
    assert_eq!(store.get(&runs[1].id).unwrap(), None);
    assert_eq!(store.list().unwrap().len(), 2);
    // A second connection sees the same.
    let other = open(&location).unwrap();
    assert_eq!(other.list().unwrap().len(), 2);
}

fn migrates_version_1(b: &dyn Backend) {
    let runs = [run("old-a", 0.5), run("old-b", 0.0)];
    let location = b.v1_with(&runs);
    let store = open(&location).unwrap();
    // The columns version 2 added are filled from the records.
    let listed = store.list().unwrap();
    assert_eq!(
        listed,
        runs.iter().map(RunRecord::summary).collect::<Vec<_>>()
    );
    assert_eq!(store.get(&runs[0].id).unwrap().unwrap(), runs[0]);
    let new = run("new", 1.0);
    assert!(store.put(&new).unwrap());
    assert_eq!(store.list().unwrap().len(), 3);
    // Opening again finds the current version and changes nothing.
    drop(store);
    assert_eq!(open(&location).unwrap().list().unwrap().len(), 3);
}

fn refuses_a_newer_schema(b: &dyn Backend) {
    let location = b.fresh();
    drop(open(&location).unwrap());
    b.set_version(&location, SCHEMA_VERSION + 1);
    let e = open(&location).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "schema version {} is newer than this rag-eval's ({SCHEMA_VERSION}); upgrade rag-eval",
            SCHEMA_VERSION + 1
        )),
        "{e}"
    );
}

const WORKERS: usize = 4;
const PER_WORKER: usize = 50;
const WORKER_STORE: &str = "RUN_STORE_TEST_WORKER_STORE";
const WORKER_NAME: &str = "RUN_STORE_TEST_WORKER_NAME";

fn concurrent_writers_lose_nothing(b: &dyn Backend) {
    let location = b.fresh();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WORKERS)
        .map(|w| {
            Command::new(&exe)
                .args(["--exact", "writer_worker", "--ignored"])
                .env(WORKER_STORE, &location)
                .env(WORKER_NAME, format!("w{w}"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a writer process failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = open(&location).unwrap();
    let listed = store.list().unwrap();
    assert_eq!(listed.len(), WORKERS * PER_WORKER);
    for w in 0..WORKERS {
        for i in 0..PER_WORKER {
            let label = format!("w{w}-{i}");
            assert!(
                listed.iter().any(|s| s.label.as_deref() == Some(&label)),
                "{label} was lost"
            );
        }
    }
    let mut ids: Vec<&RunId> = listed.iter().map(|s| &s.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), WORKERS * PER_WORKER, "ids are unique and sorted");

    // The run group the workers wrote into, as shards do: each worker's queries once, in
    // their second (re-run) version; the query every worker reported, once per worker.
    let (description, rows) = store.group_case("g", "case").unwrap().expect("described");
    assert!(description.starts_with("described by w"), "{description}");
    assert_eq!(rows.len(), WORKERS * PER_WORKER + WORKERS, "{rows:?}");
    for w in 0..WORKERS {
        let shard = format!("w{w}");
        let mine: Vec<&runs::GroupRow> = rows.iter().filter(|r| r.shard == shard).collect();
        assert_eq!(mine.len(), PER_WORKER + 1, "{shard}: {mine:?}");
        assert!(mine.iter().all(|r| r.result == "second"), "{mine:?}");
        assert!(mine.iter().any(|r| r.query == "everyone"));
    }
    assert_eq!(store.group_cases("g").unwrap(), ["case"]);
    assert_eq!(store.group_case("other", "case").unwrap(), None);
}

/// One writer of [`concurrent_writers_lose_nothing`]: opens the store the parent names (a new
/// store: the writers race to create its tables too) and writes its runs one by one.
#[test]
#[ignore = "worker process of concurrent_writers_lose_nothing"]
fn writer_worker() {
    let (Ok(location), Ok(name)) = (std::env::var(WORKER_STORE), std::env::var(WORKER_NAME)) else {
        return;
    };
    let store = open(&location).unwrap();
    for i in 0..PER_WORKER {
        assert!(store.put(&run(&format!("{name}-{i}"), 0.5)).unwrap());
    }
    // A shard of run group `g`, run twice: the second run overwrites the first's rows.
    for version in ["first", "second"] {
        let mut rows: Vec<(String, String)> = (0..PER_WORKER)
            .map(|i| (format!("{name}-q{i}"), version.to_owned()))
            .collect();
        rows.push(("everyone".into(), version.into()));
        let description = format!("described by {name}");
        store
            .put_group_shard("g", "case", &name, &description, &rows)
            .unwrap();
    }
}

/// Rows the writer of [`a_writer_killed_mid_write_leaves_the_group_whole`] writes in one
/// call: enough that the write is still under way when it is killed.
const KILLED_ROWS: usize = 200_000;

/// A shard's writer killed (SIGKILL) in the middle of writing its rows leaves the run group as
/// it was: none of the rows of the write it never finished nor its description, the other
/// shards' rows intact, a store that reads; the shard writing again completes the group.
fn a_writer_killed_mid_write_leaves_the_group_whole(b: &dyn Backend) {
    use std::io::BufRead;
    let location = b.fresh();
    let store = open(&location).unwrap();
    let other = [("q-other".to_owned(), "kept".to_owned())];
    store
        .put_group_shard("g", "case", "other", "described", &other)
        .unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "killed_writer_worker",
            "--ignored",
            "--nocapture",
        ])
        .env(WORKER_STORE, &location)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let writing = line == "writing";
        seen.push(line);
        if writing {
            break;
        }
    }
    assert_eq!(seen.last().map(String::as_str), Some("writing"), "{seen:?}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    child.kill().unwrap();
    child.wait().unwrap();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(
        !rest.iter().any(|l| l.starts_with("written")),
        "the write ended before the kill ({rest:?}): raise KILLED_ROWS"
    );

    let store = open(&location).unwrap();
    let (description, rows) = store.group_case("g", "case").unwrap().unwrap();
    assert_eq!(description, "described");
    assert_eq!(
        rows,
        [runs::GroupRow {
            query: "q-other".into(),
            shard: "other".into(),
            result: "kept".into(),
        }]
    );
    // Written again, in several statements' worth of rows, then once more over them.
    for round in ["again", "once more"] {
        let again: Vec<(String, String)> = (0..AGAIN_ROWS)
            .map(|i| (format!("q{i}"), format!("{round} {i}")))
            .collect();
        store
            .put_group_shard("g", "case", "killed", "described again", &again)
            .unwrap();
    }
    let (description, rows) = store.group_case("g", "case").unwrap().unwrap();
    assert_eq!(description, "described again");
    assert_eq!(rows.len(), AGAIN_ROWS + 1);
    let mine: Vec<&runs::GroupRow> = rows.iter().filter(|r| r.shard == "killed").collect();
    assert_eq!(mine.len(), AGAIN_ROWS);
    for r in mine {
        let i = r.query.strip_prefix('q').unwrap();
        assert_eq!(r.result, format!("once more {i}"), "{r:?}");
    }
}

/// Rows a shard writes again after it was killed: more than one statement's worth.
const AGAIN_ROWS: usize = 2_500;

/// The writer of [`a_writer_killed_mid_write_leaves_the_group_whole`]: says `writing`, then
/// writes [`KILLED_ROWS`] rows of a shard in one call.
#[test]
#[ignore = "worker process of a_writer_killed_mid_write_leaves_the_group_whole"]
fn killed_writer_worker() {
    let Ok(location) = std::env::var(WORKER_STORE) else {
        return;
    };
    let store = open(&location).unwrap();
    let rows: Vec<(String, String)> = (0..KILLED_ROWS)
        .map(|i| {
            (
                format!("q{i}"),
                format!("{{\"figures\": [{i}, 0.5, 0.25]}}"),
            )
        })
        .collect();
    println!("writing");
    let started = std::time::Instant::now();
    // Its description goes in the same transaction: a kill leaves it out too.
    store
        .put_group_shard(
            "g",
            "case",
            "killed",
            "described by the killed shard",
            &rows,
        )
        .unwrap();
    println!("written in {:?}", started.elapsed());
}

mod sqlite {
    use super::*;
    use rusqlite::Connection;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Sqlite(tempfile::TempDir);

    static N: AtomicUsize = AtomicUsize::new(0);

    impl Sqlite {
        fn new() -> Sqlite {
            Sqlite(tempfile::tempdir().unwrap())
        }
        fn path(&self) -> String {
            let n = N.fetch_add(1, Ordering::Relaxed);
            // A folder that does not exist yet: opening creates it.
            self.0
                .path()
                .join(format!("store{n}/runs.sqlite"))
                .to_str()
                .unwrap()
                .to_owned()
        }
    }

    impl Backend for Sqlite {
        fn fresh(&self) -> String {
            self.path()
        }
        fn v1_with(&self, runs: &[RunRecord]) -> String {
            let path = self.path();
            std::fs::create_dir_all(std::path::Path::new(&path).parent().unwrap()).unwrap();
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
                 CREATE TABLE runs (id TEXT PRIMARY KEY NOT NULL, created TEXT NOT NULL, record TEXT NOT NULL);
                 INSERT INTO meta VALUES ('format', 'rag-eval-runs'), ('schema_version', '1');",
            )
            .unwrap();
            for r in runs {
                c.execute(
                    "INSERT INTO runs VALUES (?1, ?2, ?3)",
                    (r.id.as_str(), &r.created, r.to_json()),
                )
                .unwrap();
            }
            path
        }
        fn set_version(&self, location: &str, v: u32) {
            Connection::open(location)
                .unwrap()
                .execute(
                    "UPDATE meta SET value = ?1 WHERE name = 'schema_version'",
                    [v.to_string()],
                )
                .unwrap();
        }
    }

    #[test]
    fn round_trip() {
        super::round_trip(&Sqlite::new());
    }

    #[test]
    fn migrates_version_1() {
        let b = Sqlite::new();
        super::migrates_version_1(&b);
    }

    #[test]
    fn migrated_file_has_the_current_schema_version() {
        let b = Sqlite::new();
        let path = b.v1_with(&[run("x", 0.1)]);
        let store = rag_eval::runs::SqliteRunStore::open(path.as_str()).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let c = Connection::open(&path).unwrap();
        let journal: String = c
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(journal, "wal");
        let summary: String = c
            .query_row("SELECT summary FROM runs", [], |r| r.get(0))
            .unwrap();
        assert!(summary.contains("\"label\":\"x\""), "{summary}");
    }

    #[test]
    fn refuses_a_newer_schema() {
        super::refuses_a_newer_schema(&Sqlite::new());
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        super::concurrent_writers_lose_nothing(&Sqlite::new());
    }

    #[test]
    fn a_writer_killed_mid_write_leaves_the_group_whole() {
        super::a_writer_killed_mid_write_leaves_the_group_whole(&Sqlite::new());
    }

    #[test]
    fn refuses_files_that_are_not_run_stores() {
        let b = Sqlite::new();
        let dir = b.0.path();
        let check = |path: &std::path::Path, wanted: &str| {
            let e = open(path.to_str().unwrap()).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("run store `{}`: ", path.display())) && e.contains(wanted),
                "{e}"
            );
        };
        let text = dir.join("notes.txt");
        std::fs::write(
            &text,
            "not a database at all, just some text that is long enough\n".repeat(20),
        )
        .unwrap();
        check(&text, "not a SQLite database");
        let before = std::fs::read(&text).unwrap();
        assert_eq!(std::fs::read(&text).unwrap(), before, "left untouched");

        let foreign = dir.join("other.sqlite");
        Connection::open(&foreign)
            .unwrap()
            .execute_batch("CREATE TABLE users (name TEXT); CREATE TABLE orders (id INTEGER);")
            .unwrap();
        check(
            &foreign,
            "not a rag-eval run store: a SQLite database of another program (tables: orders, users)",
        );

        let cache = dir.join("cache.sqlite");
        drop(
            rag_eval::cache::Cache::open(
                cache.to_str().unwrap(),
                rag_eval::cache::CacheMode::ReadWrite,
            )
            .unwrap(),
        );
        check(
            &cache,
            "its format is `rag-eval-cache` (the cache of embeddings and LLM calls)",
        );

        // A run store whose pages were overwritten after its header.
        let broken = dir.join("broken.sqlite");
        let store = open(broken.to_str().unwrap()).unwrap();
        store.put(&run("a", 0.5)).unwrap();
        drop(store);
        let mut bytes = std::fs::read(&broken).unwrap();
        for b in bytes.iter_mut().skip(100) {
            *b = 0xA5;
        }
        std::fs::write(&broken, bytes).unwrap();
        let e = open(broken.to_str().unwrap())
            .and_then(|s| s.list().map(|_| ()))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("run store `{}`: ", broken.display()))
                && (e.contains("corrupt") || e.contains("not a SQLite database")),
            "{e}"
        );
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A schema per store in the test server's database, so stores never meet.
    struct Postgres(String);

    static N: AtomicUsize = AtomicUsize::new(0);

    fn backend() -> Option<Postgres> {
        match std::env::var("RAG_EVAL_TEST_POSTGRES") {
            Ok(url) if !url.is_empty() => Some(Postgres(url)),
            _ => {
                eprintln!("skipped: RAG_EVAL_TEST_POSTGRES is unset (.ci/postgres.sh sets it)");
                None
            }
        }
    }

    impl Postgres {
        fn admin(&self) -> ::postgres::Client {
            ::postgres::Client::connect(&self.0, ::postgres::NoTls).unwrap()
        }
        /// A new schema, and the URL whose connections use it.
        fn schema(&self) -> (String, String) {
            let name = format!(
                "t{}_{}_{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed),
                RunId::new().as_str().to_lowercase()
            );
            let mut admin = self.admin();
            admin
                .batch_execute(&format!("CREATE SCHEMA {name}"))
                .unwrap();
            let sep = if self.0.contains('?') { '&' } else { '?' };
            let url = format!("{}{sep}options=-csearch_path%3D{name}", self.0);
            (name, url)
        }
    }

    impl Backend for Postgres {
        fn fresh(&self) -> String {
            self.schema().1
        }
        fn v1_with(&self, runs: &[RunRecord]) -> String {
            let (name, url) = self.schema();
            let mut c = self.admin();
            c.batch_execute(&format!(
                "CREATE TABLE {name}.rag_eval_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
                 CREATE TABLE {name}.rag_eval_runs (id TEXT PRIMARY KEY, created TEXT NOT NULL, record TEXT NOT NULL);
                 INSERT INTO {name}.rag_eval_meta VALUES ('format', 'rag-eval-runs'), ('schema_version', '1');"
            ))
            .unwrap();
            for r in runs {
                c.execute(
                    &format!("INSERT INTO {name}.rag_eval_runs VALUES ($1, $2, $3)"),
                    &[&r.id.to_string(), &r.created, &r.to_json()],
                )
                .unwrap();
            }
            url
        }
        fn set_version(&self, location: &str, v: u32) {
            let mut c = ::postgres::Client::connect(location, ::postgres::NoTls).unwrap();
            c.execute(
                "UPDATE rag_eval_meta SET value = $1 WHERE name = 'schema_version'",
                &[&v.to_string()],
            )
            .unwrap();
        }
    }

    #[test]
    fn round_trip() {
        if let Some(b) = backend() {
            super::round_trip(&b);
        }
    }

    #[test]
    fn migrates_version_1() {
        if let Some(b) = backend() {
            super::migrates_version_1(&b);
        }
    }

    #[test]
    fn refuses_a_newer_schema() {
        if let Some(b) = backend() {
            super::refuses_a_newer_schema(&b);
        }
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        if let Some(b) = backend() {
            super::concurrent_writers_lose_nothing(&b);
        }
    }

    #[test]
    fn a_writer_killed_mid_write_leaves_the_group_whole() {
        if let Some(b) = backend() {
            super::a_writer_killed_mid_write_leaves_the_group_whole(&b);
        }
    }

    #[test]
    fn refuses_a_foreign_schema_and_a_dead_server() {
        let Some(b) = backend() else { return };
        let (name, url) = b.schema();
        b.admin()
            .batch_execute(&format!(
                "CREATE TABLE {name}.rag_eval_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
                 INSERT INTO {name}.rag_eval_meta VALUES ('format', 'something-else');"
            ))
            .unwrap();
        let e = open(&url).unwrap_err().to_string();
        assert!(
            e.contains("not a rag-eval run store: `rag_eval_meta` has format `something-else`"),
            "{e}"
        );
        // A password never shows; a server that is not there is named.
        let e = open("postgres://u:s3cret@127.0.0.1:1/db")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("run store `postgres://u:***@127.0.0.1:1/db`: connect:")
                && !e.contains("s3cret"),
            "{e}"
        );
    }
}

/// A record written by rag-eval before format 2 (`tests/fixtures/runs/README.md`) reads as
/// this version: same run and figures, its chat tokens under the judges, its cache's under
/// the embedder.
#[test]
fn a_format_1_record_reads_with_its_usage_split() {
    let text = include_str!("fixtures/runs/format1.jsonl");
    let run = RunRecord::from_json(text.trim_end()).unwrap();
    assert_eq!(run.format, runs::FORMAT_VERSION);
    assert_eq!(run.id.to_string(), "01M8C9RC671EBQNMAHMBK1PQSS");
    assert_eq!(run.label.as_deref(), Some("recursive:size=400"));
    assert_eq!(run.result.queries, 3);
    assert_eq!(run.result.metrics.get("span_recall@5"), Some(1.0));
    let usage = run.usage.clone().unwrap();
    assert_eq!(usage.generator, None);
    assert_eq!(usage.judge, Some(runs::Spend::tokens(120, 30)));
    let embedding = usage.embedding.unwrap();
    assert_eq!(
        (embedding.prompt_tokens, embedding.cost_usd),
        (500, Some(0.01))
    );
    // Its settings and its result's configuration are one `config`.
    let spec = "bm25:chunker=recursive(size=400,overlap=0,length=chars,separators=langchain),k1=1.2,b=0.75";
    assert_eq!(run.config.spec.as_deref(), Some(spec));
    assert_eq!(
        run.config.retriever.as_deref(),
        Some("bm25(k1=1.2,b=0.75) over recursive:size=400,overlap=0,length=chars,separators=langchain")
    );
    assert_eq!(run.config.corpus_documents, Some(12));
    assert_eq!(
        run.config.extra["cache"],
        "rw:path=/tmp/tmp.V1tSO1JXri/c.sqlite"
    );
    assert_eq!(run.result.config, None);
    assert_eq!(
        (run.result.k, run.result.mode.map(|m| m.to_string())),
        (Some(5), Some("standard".into()))
    );
    reads_back_as_itself(&run);
}

/// `run`, written, is a record of this format that reads back as itself.
fn reads_back_as_itself(run: &RunRecord) {
    let again = run.to_json();
    let head = format!("{{\"format\":{},", runs::FORMAT_VERSION);
    assert!(again.starts_with(&head), "{again}");
    assert_eq!(&RunRecord::from_json(&again).unwrap(), run);
}

/// Records written by rag-eval in format 2 (`tests/fixtures/runs/README.md`: an `eval` over a
/// dense retriever and a `score --answers`) read as this version: same runs and figures, the
/// record's settings and the result's configuration joined into one `config`, each value as
/// one of them had it.
#[test]
fn format_2_records_read_with_one_configuration() {
    let text = include_str!("fixtures/runs/format2.jsonl");
    let runs: Vec<RunRecord> = text
        .lines()
        .map(|l| RunRecord::from_json(l).unwrap())
        .collect();
    let [eval, score] = &runs[..] else {
        panic!("two records")
    };
    assert_eq!(eval.format, runs::FORMAT_VERSION);
    assert_eq!(eval.id.to_string(), "01M8CKAT0X1T1MPCTR43DCN5NK");
    assert_eq!(eval.result.queries, 3);
    assert_eq!(
        eval.result.metrics.get("span_recall@5"),
        Some(0.3333333333333333)
    );
    let c = &eval.config;
    let spec = "dense:chunker=recursive(size=400,overlap=0,length=chars,separators=langchain),embedder=hashing(dim=64,ngrams=2),store=memory";
    assert_eq!(c.spec.as_deref(), Some(spec));
    assert_eq!(
        c.retriever.as_deref(),
        Some("dense(recursive:size=400,overlap=0,length=chars,separators=langchain -> hashing(dim=64,ngrams=2) -> in-memory(exact cosine))")
    );
    assert_eq!(
        c.chunker.as_deref(),
        Some("recursive:size=400,overlap=0,length=chars,separators=langchain")
    );
    assert_eq!(c.embedder.as_deref(), Some("hashing:dim=64,ngrams=2"));
    assert_eq!(c.store.as_deref(), Some("memory"));
    assert_eq!(c.dataset.as_deref(), Some("questions.jsonl"));
    assert_eq!(c.corpus_documents, Some(12));
    assert_eq!(eval.result.config, None);
    assert_eq!(eval.summary().retriever.as_deref(), Some(spec));
    // A `score` run's result had no configuration: the record's settings are all of it.
    assert_eq!(score.origin, "score");
    let c = &score.config;
    assert_eq!((c.retriever.as_deref(), c.spec.as_deref()), (None, None));
    assert_eq!(c.embedder.as_deref(), Some("hashing:dim=384,ngrams=2"));
    assert_eq!(c.extra["answers"], "answers.jsonl");
    assert_eq!(
        score.result.per_query[0]
            .answer
            .as_deref()
            .map(str::is_empty),
        Some(false)
    );
    assert_eq!(
        (score.result.k, score.result.mode.map(|m| m.to_string())),
        (Some(5), Some("standard".into()))
    );
    for run in &runs {
        reads_back_as_itself(run);
    }
}
