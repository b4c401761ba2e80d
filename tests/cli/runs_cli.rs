//! `rag-eval runs …` and the recording of `eval` and `score` runs, through the real binary.
//! The JSON shapes are a public contract (`docs/reference/commands.md`, "JSON output").

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// The binary in `cwd` with `RAG_EVAL_RUNS` set to `store` (unset for `None`).
fn run_in(cwd: &Path, store: Option<&str>, args: &[&str]) -> Out {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rag-eval"));
    c.args(args).current_dir(cwd);
    match store {
        Some(s) => c.env("RAG_EVAL_RUNS", s),
        None => c.env_remove("RAG_EVAL_RUNS"),
    };
    let out = c.output().expect("the binary runs");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn ok(cwd: &Path, store: Option<&str>, args: &[&str]) -> Out {
    let out = run_in(cwd, store, args);
    assert_eq!(out.code, 0, "{args:?} failed: {}", out.stderr);
    out
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn eval_args(chunkers: &[&'static str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "eval",
        "--corpus",
        root().join("examples/data/corpus").to_str().unwrap(),
        "--dataset",
        root()
            .join("examples/data/questions.jsonl")
            .to_str()
            .unwrap(),
        "-k",
        "5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for c in chunkers {
        a.push("--chunker".into());
        a.push((*c).into());
    }
    a
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The top-level keys of a JSON object, in the order written.
fn key_order(json: &str) -> Vec<String> {
    struct Keys(Vec<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut m: A,
                ) -> Result<Keys, A::Error> {
                    let mut k = Vec::new();
                    while let Some((key, _)) = m.next_entry::<String, serde::de::IgnoredAny>()? {
                        k.push(key);
                    }
                    Ok(Keys(k))
                }
            }
            d.deserialize_map(V)
        }
    }
    serde_json::from_str::<Keys>(json).unwrap().0
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn eval_records_each_chunker_and_runs_show_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let store = store.to_str().unwrap();
    let mut args = eval_args(&["recursive:size=400", "recursive:size=200"]);
    args.push("--json".into());
    let out = ok(dir.path(), Some(store), &strs(&args));
    let printed = lines(&out.stdout);
    let listed_text = ok(dir.path(), Some(store), &["runs", "list", "--json"]).stdout;
    let listed = lines(&listed_text);
    assert_eq!(listed.len(), 2);
    let ids: Vec<&str> = listed.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(
        out.stderr.lines().last().unwrap(),
        format!("recorded runs {}, {} in `{store}`", ids[0], ids[1])
    );
    // The `runs list --json` contract.
    assert_eq!(
        key_order(listed_text.lines().next().unwrap()),
        [
            "id",
            "created",
            "origin",
            "label",
            "dataset",
            "dataset_hash",
            "retriever",
            "level",
            "k",
            "queries",
            "metrics"
        ]
    );
    assert_eq!(listed[0]["origin"], "eval");
    assert_eq!(listed[1]["label"], "recursive:size=200");
    assert_eq!(listed[0]["metrics"], printed[0]["metrics"]);

    let shown = ok(dir.path(), Some(store), &["runs", "show", ids[1], "--json"]).stdout;
    let record: Value = serde_json::from_str(&shown).unwrap();
    // The record's top-level keys (`git` is there only inside a repository).
    let mut k = key_order(&shown);
    k.retain(|k| k != "git");
    assert_eq!(
        k,
        [
            "format",
            "id",
            "created",
            "origin",
            "label",
            "dataset",
            "corpus",
            "config",
            "result",
            "timings_ms"
        ]
    );
    assert_eq!(record["format"], 3);
    // What eval printed is what was recorded, per query and per difficulty; its `config` is
    // the record's, kept once.
    let mut result = printed[1].clone();
    result.as_object_mut().unwrap().remove("timings");
    let config = result.as_object_mut().unwrap().remove("config").unwrap();
    assert_eq!(record["result"], result);
    assert_eq!(record["config"], config);
    assert_eq!(record["dataset"]["hash"], printed[1]["dataset_hash"]);
    assert_eq!(record["corpus"]["documents"], 12);
    assert_eq!(record["corpus"]["fingerprint"].as_str().unwrap().len(), 16);
    assert_eq!(record["result"]["k"], 5);
    assert_eq!(record["result"]["mode"], "standard");
    assert!(record["config"]["spec"]
        .as_str()
        .unwrap()
        .starts_with("bm25:chunker=recursive(size=200"));
    assert!(record["config"]["chunker"]
        .as_str()
        .unwrap()
        .starts_with("recursive:size=200"));
    assert_eq!(keys(&record["timings_ms"]), ["index", "retrieve", "score"]);

    let text = ok(dir.path(), Some(store), &["runs", "show", "latest"]).stdout;
    assert!(
        text.starts_with(&format!("run        {}\n", ids[1])),
        "{text}"
    );
    let by = text
        .split_once("\nby difficulty\n")
        .expect("a difficulty breakdown")
        .1;
    let header = by.lines().next().unwrap();
    assert!(
        header.starts_with("difficulty   queries  span_recall@5"),
        "{header}"
    );
    assert_eq!(
        by.lines()
            .skip(1)
            .map(|l| l.split_whitespace().next().unwrap())
            .collect::<Vec<_>>(),
        ["analytical", "factual", "inferential", "paraphrased"]
    );
    let table = ok(dir.path(), Some(store), &["runs", "list"]).stdout;
    assert!(table.starts_with("id  "), "{table}");
    assert_eq!(table.lines().count(), 3);
}

#[test]
fn score_records_its_dataset_hash_and_trec_its_qrels() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let store = store.to_str().unwrap();
    let mut args = eval_args(&["recursive:size=400"]);
    args.extend(["--json".into(), "--no-record".into()]);
    let eval: Value =
        serde_json::from_str(&ok(dir.path(), Some(store), &strs(&args)).stdout).unwrap();
    assert!(!Path::new(store).exists(), "--no-record writes nothing");

    // Retrieval output from the chunk listing of the corpus, scored against the same dataset.
    let d = root().join("examples/data/questions.jsonl");
    let first: Value =
        serde_json::from_str(std::fs::read_to_string(&d).unwrap().lines().next().unwrap()).unwrap();
    let span = &first["outputs"]["relevant_spans"][0];
    let retrieved = dir.path().join("r.jsonl");
    std::fs::write(
        &retrieved,
        format!(
            "{}\n",
            serde_json::json!({"id": first["id"], "retrieved": [{"doc_id": span["doc_id"], "start": span["start"], "end": span["end"]}]})
        ),
    )
    .unwrap();
    let out = ok(
        dir.path(),
        Some(store),
        &[
            "score",
            "--dataset",
            d.to_str().unwrap(),
            "--retrieved",
            retrieved.to_str().unwrap(),
            "--allow-missing",
            "--json",
        ],
    );
    assert!(out.stderr.starts_with("recorded run "), "{}", out.stderr);
    let scored: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        scored.get("dataset_hash").is_none(),
        "score --json is unchanged"
    );
    let record: Value = serde_json::from_str(
        &ok(
            dir.path(),
            Some(store),
            &["runs", "show", "latest", "--json"],
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(record["origin"], "score");
    assert_eq!(
        record["dataset"]["hash"], eval["dataset_hash"],
        "score and eval agree on the dataset"
    );
    assert_eq!(record["result"], scored);
    assert_eq!(
        record["config"]["extra"]["retrieved"],
        retrieved.to_str().unwrap()
    );

    let qrels = root().join("tests/fixtures/trec/qrels.txt");
    let trec_run = root().join("tests/fixtures/trec/run.txt");
    ok(
        dir.path(),
        Some(store),
        &[
            "score",
            "--qrels",
            qrels.to_str().unwrap(),
            "--run",
            trec_run.to_str().unwrap(),
        ],
    );
    let record: Value = serde_json::from_str(
        &ok(
            dir.path(),
            Some(store),
            &["runs", "show", "latest", "--json"],
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(record["result"]["level"], "trec");
    assert_eq!(record["dataset"]["path"], qrels.to_str().unwrap());
    assert_eq!(record["dataset"]["hash"].as_str().unwrap().len(), 16);
}

#[test]
fn opting_out_and_the_default_store() {
    let dir = tempfile::tempdir().unwrap();
    let args = eval_args(&["recursive:size=400"]);
    let out = ok(dir.path(), Some("off"), &strs(&args));
    assert!(!out.stderr.contains("recorded"), "{}", out.stderr);
    assert!(!dir.path().join(".rag-eval").exists());
    let e = run_in(dir.path(), Some("off"), &["runs", "list"]);
    assert_eq!(e.code, 1);
    assert!(e.stderr.contains("the run store is off"), "{}", e.stderr);

    // Unset: `.rag-eval/runs.sqlite` under the current directory.
    let out = ok(dir.path(), None, &strs(&args));
    assert!(
        out.stderr.contains("in `.rag-eval/runs.sqlite`"),
        "{}",
        out.stderr
    );
    assert!(dir.path().join(".rag-eval/runs.sqlite").is_file());
    assert_eq!(
        lines(&ok(dir.path(), None, &["runs", "list", "--json"]).stdout).len(),
        1
    );
}

#[test]
fn a_store_that_fails_is_a_warning_and_the_result_stands() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("notes.txt");
    std::fs::write(&bad, "these are notes, not a database\n".repeat(40)).unwrap();
    let mut args = eval_args(&["recursive:size=400"]);
    args.push("--json".into());
    let out = run_in(dir.path(), Some(bad.to_str().unwrap()), &strs(&args));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(serde_json::from_str::<Value>(&out.stdout).unwrap()["metrics"].is_object());
    assert_eq!(
        out.stderr.lines().last().unwrap(),
        format!(
            "warning: run not recorded: run store `{}`: not a SQLite database (open the run store: file is not a database); choose another path",
            bad.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(&bad).unwrap(),
        "these are notes, not a database\n".repeat(40)
    );
}

#[test]
fn export_import_delete() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.sqlite");
    let b = dir.path().join("b.sqlite");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    ok(
        dir.path(),
        Some(a),
        &strs(&eval_args(&["recursive:size=400", "recursive:size=300"])),
    );
    let exported = ok(dir.path(), Some(a), &["runs", "export"]).stdout;
    assert_eq!(exported.lines().count(), 2);
    let file = dir.path().join("runs.jsonl");
    let out = ok(
        dir.path(),
        Some(a),
        &["runs", "export", "-o", file.to_str().unwrap()],
    );
    assert_eq!(
        out.stderr,
        format!("exported 2 runs to `{}`\n", file.display())
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), exported);

    let imported = ok(
        dir.path(),
        None,
        &[
            "runs",
            "--store",
            b,
            "import",
            file.to_str().unwrap(),
            "--json",
        ],
    )
    .stdout;
    assert_eq!(imported, "{\"imported\":2,\"present\":0}\n");
    let again = ok(
        dir.path(),
        Some(b),
        &["runs", "import", file.to_str().unwrap()],
    )
    .stdout;
    assert_eq!(
        again,
        format!("imported 0 runs into `{b}` (2 already present)\n")
    );
    // Exported from the copy, the records are byte for byte the same.
    assert_eq!(
        ok(dir.path(), Some(b), &["runs", "export"]).stdout,
        exported
    );
    let first: Value = serde_json::from_str(exported.lines().next().unwrap()).unwrap();
    let id = first["id"].as_str().unwrap();
    let one = ok(
        dir.path(),
        Some(b),
        &["runs", "export", &id[..id.len() - 2]],
    )
    .stdout;
    assert_eq!(one, format!("{}\n", exported.lines().next().unwrap()));

    // A name that matches nothing deletes nothing, even with valid names beside it.
    let e = run_in(dir.path(), Some(b), &["runs", "delete", id, "NOPE"]);
    assert_eq!(e.code, 1);
    assert_eq!(
        e.stderr,
        format!("error: run store `{b}` has no run `NOPE`\n")
    );
    assert_eq!(
        lines(&ok(dir.path(), Some(b), &["runs", "list", "--json"]).stdout).len(),
        2
    );
    let out = ok(dir.path(), Some(b), &["runs", "delete", id]).stdout;
    assert_eq!(out, format!("deleted {id}\n"));
    assert_eq!(
        lines(&ok(dir.path(), Some(b), &["runs", "list", "--json"]).stdout).len(),
        1
    );

    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        format!("{}\n{{\"format\":7}}\n", exported.lines().next().unwrap()),
    )
    .unwrap();
    let e = run_in(
        dir.path(),
        Some(b),
        &["runs", "import", bad.to_str().unwrap()],
    );
    assert_eq!(e.code, 1);
    assert_eq!(
        e.stderr,
        format!(
            "error: {}:2: run record format 7 is not the one this rag-eval reads (3); upgrade rag-eval\n",
            bad.display()
        )
    );
    // Nothing of a file with a bad line is imported.
    assert_eq!(
        lines(&ok(dir.path(), Some(b), &["runs", "list", "--json"]).stdout).len(),
        1
    );
}

#[test]
fn compare_and_report_take_stored_run_ids() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let store = store.to_str().unwrap();
    let mut args = eval_args(&["recursive:size=400", "recursive:size=200"]);
    args.push("--json".into());
    let printed = ok(dir.path(), Some(store), &strs(&args)).stdout;
    let file = dir.path().join("eval.json");
    std::fs::write(&file, &printed).unwrap();
    let listed = lines(&ok(dir.path(), Some(store), &["runs", "list", "--json"]).stdout);
    let ids: Vec<&str> = listed.iter().map(|l| l["id"].as_str().unwrap()).collect();

    // By id (a full id, then `latest`) and from the printed file: the same figures.
    let compare = |runs: &[&str]| {
        let mut a = vec!["compare", "--json"];
        a.extend_from_slice(runs);
        let v: Value = serde_json::from_str(&ok(dir.path(), Some(store), &a).stdout).unwrap();
        // The figures, not the labels (a stored run is labelled by its label and id).
        let figures: Vec<(String, f64, f64)> = v["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let d = &m["vs_baseline"][0];
                (
                    m["metric"].as_str().unwrap().to_owned(),
                    d["difference"].as_f64().unwrap(),
                    d["p_value"].as_f64().unwrap(),
                )
            })
            .collect();
        figures
    };
    let by_id = compare(&[ids[0], "latest"]);
    assert!(!by_id.is_empty());
    assert!(by_id == compare(&[file.to_str().unwrap()]), "{by_id:?}");

    let report = ok(
        dir.path(),
        Some(store),
        &["report", "--format", "markdown", ids[0], ids[1]],
    );
    assert!(
        report.stdout.contains("recursive:size=200"),
        "{}",
        report.stdout
    );

    // Neither a file nor a stored id: the store is named in the error.
    let out = run_in(
        dir.path(),
        Some(store),
        &["compare", ids[0], "nothing-like-this"],
    );
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("nothing-like-this"), "{}", out.stderr);
    let out = run_in(dir.path(), Some("off"), &["compare", ids[0], ids[1]]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("no run store"), "{}", out.stderr);
    // A lookup in a store that does not exist says so and creates none.
    let absent = dir.path().join("absent.sqlite");
    let out = run_in(
        dir.path(),
        Some(absent.to_str().unwrap()),
        &["report", ids[0]],
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("there is no run store at"),
        "{}",
        out.stderr
    );
    assert!(!absent.exists());
}

#[test]
fn reading_commands_create_no_store() {
    let dir = tempfile::tempdir().unwrap();
    // The default store under the current directory, then one named by the environment.
    for (store, shown) in [
        (None, ".rag-eval/runs.sqlite".to_owned()),
        (
            Some(dir.path().join("absent/runs.sqlite")),
            dir.path().join("absent/runs.sqlite").display().to_string(),
        ),
    ] {
        let store = store.as_ref().map(|p| p.to_str().unwrap());
        let list = ok(dir.path(), store, &["runs", "list"]);
        assert_eq!(
            list.stdout,
            format!("no runs: there is no run store at `{shown}`\n")
        );
        // JSON lines of no runs: nothing at all, as from a store that holds none.
        assert_eq!(
            ok(dir.path(), store, &["runs", "list", "--json"]).stdout,
            ""
        );
        for args in [
            &["runs", "show", "latest"][..],
            &["runs", "show", "01M85HTFC9GSQJXRSDE8P1MZS7", "--json"],
            &["runs", "delete", "latest"],
            &["runs", "export"],
        ] {
            let out = run_in(dir.path(), store, args);
            assert_eq!(out.code, 1, "{args:?}");
            assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
            assert!(
                out.stderr
                    .contains(&format!("there is no run store at `{shown}`")),
                "{args:?}: {}",
                out.stderr
            );
        }
        assert!(
            run_in(dir.path(), store, &["runs", "show", "latest"])
                .stderr
                .contains("no run `latest`"),
            "the run asked for is named"
        );
        assert!(!dir.path().join(".rag-eval").exists());
        assert!(!dir.path().join("absent").exists());
    }
    // An empty store that exists lists the same JSON: nothing.
    let empty = dir.path().join("empty.sqlite");
    let import = dir.path().join("none.jsonl");
    std::fs::write(&import, "").unwrap();
    ok(
        dir.path(),
        Some(empty.to_str().unwrap()),
        &["runs", "import", import.to_str().unwrap()],
    );
    assert!(empty.is_file(), "import creates the store it writes to");
    assert_eq!(
        ok(
            dir.path(),
            Some(empty.to_str().unwrap()),
            &["runs", "list", "--json"]
        )
        .stdout,
        ""
    );
}

#[test]
fn a_missing_figure_or_an_unreadable_row_does_not_lock_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let s = store.to_str().unwrap();
    ok(
        dir.path(),
        Some(s),
        &strs(&eval_args(&["recursive:size=400", "recursive:size=300"])),
    );
    let ids: Vec<String> = lines(&ok(dir.path(), Some(s), &["runs", "list", "--json"]).stdout)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    // What earlier versions stored for a NaN mean: `null`, in the record and its summary.
    let c = rusqlite::Connection::open(&store).unwrap();
    c.execute(
        "UPDATE runs SET record = json_set(record, '$.result.metrics.span_recall', json('null')),
                        summary = json_set(summary, '$.metrics.span_recall', json('null'))
         WHERE id = ?1",
        [&ids[0]],
    )
    .unwrap();
    drop(c);
    let list = ok(dir.path(), Some(s), &["runs", "list", "--json"]).stdout;
    assert_eq!(lines(&list).len(), 2);
    assert!(
        lines(&list)[0]["metrics"].get("span_recall").is_none(),
        "{list}"
    );
    ok(dir.path(), Some(s), &["runs", "list"]);
    ok(dir.path(), Some(s), &["runs", "show", &ids[0]]);
    let exported = ok(dir.path(), Some(s), &["runs", "export"]).stdout;
    assert_eq!(exported.lines().count(), 2);
    ok(dir.path(), Some(s), &["compare", &ids[0], &ids[1]]);
    // What `score --json` writes for a NaN mean is read as a missing figure.
    let file = dir.path().join("nan.json");
    let first: Value = serde_json::from_str(exported.lines().next().unwrap()).unwrap();
    let mut result = first["result"].clone();
    result["metrics"]["span_recall"] = Value::Null;
    std::fs::write(&file, result.to_string()).unwrap();
    ok(
        dir.path(),
        Some(s),
        &["compare", file.to_str().unwrap(), &ids[1]],
    );

    // A row whose summary cannot be read at all is flagged, not fatal.
    let c = rusqlite::Connection::open(&store).unwrap();
    c.execute(
        "UPDATE runs SET summary = 'garbage' WHERE id = ?1",
        [&ids[1]],
    )
    .unwrap();
    drop(c);
    let table = ok(dir.path(), Some(s), &["runs", "list"]).stdout;
    assert!(
        table.contains(&ids[0]) && table.contains(&ids[1]) && table.contains("unreadable"),
        "{table}"
    );
    let json = lines(&ok(dir.path(), Some(s), &["runs", "list", "--json"]).stdout);
    assert_eq!(json.len(), 2);
    assert!(json[1]["unreadable"].as_str().is_some(), "{json:?}");
    // Deleting by full id needs no summary.
    for id in &ids {
        let out = ok(dir.path(), Some(s), &["runs", "delete", id]).stdout;
        assert_eq!(out, format!("deleted {id}\n"));
    }
    assert_eq!(
        ok(dir.path(), Some(s), &["runs", "list", "--json"]).stdout,
        ""
    );
}

/// Makes paths immutable (`chattr +i`: not even root may write them) until dropped.
struct Immutable(Vec<PathBuf>);

impl Immutable {
    /// `None` where the file system or the user cannot set the flag.
    fn set(paths: &[&Path]) -> Option<Immutable> {
        let mut done = Immutable(Vec::new());
        for p in paths {
            let ok = Command::new("chattr")
                .arg("+i")
                .arg(p)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return None;
            }
            done.0.push(p.to_path_buf());
        }
        Some(done)
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = Command::new("chattr").arg("-i").arg(p).status();
        }
    }
}

#[test]
fn a_store_that_may_only_be_read_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("shared");
    std::fs::create_dir(&folder).unwrap();
    let store = folder.join("runs.sqlite");
    let s = store.to_str().unwrap();
    ok(
        dir.path(),
        Some(s),
        &strs(&eval_args(&["recursive:size=400", "recursive:size=300"])),
    );
    let before = std::fs::read(&store).unwrap();
    let Some(_guard) = Immutable::set(&[&store, &folder]) else {
        eprintln!("skipped: `chattr +i` is not available here");
        return;
    };
    let list = ok(dir.path(), Some(s), &["runs", "list", "--json"]).stdout;
    let ids: Vec<String> = lines(&list)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 2);
    ok(dir.path(), Some(s), &["runs", "list"]);
    ok(dir.path(), Some(s), &["runs", "show", "latest"]);
    ok(dir.path(), Some(s), &["runs", "export"]);
    ok(dir.path(), Some(s), &["compare", &ids[0], &ids[1]]);
    let html = dir.path().join("report.html");
    ok(
        dir.path(),
        Some(s),
        &["report", &ids[0], &ids[1], "-o", html.to_str().unwrap()],
    );
    drop(_guard);
    assert_eq!(
        std::fs::read(&store).unwrap(),
        before,
        "nothing was written"
    );
}

#[test]
fn the_embedder_is_recorded_as_its_spec_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let d = dir.path().join("d.jsonl");
    // No reference answers: the embedder is built but never called.
    std::fs::write(
        &d,
        r#"{"id":"q1","inputs":{"query":"x"},"outputs":{"relevant_spans":[{"doc_id":"a.md","start":0,"end":5}]}}"#,
    )
    .unwrap();
    let a = dir.path().join("a.jsonl");
    std::fs::write(&a, r#"{"id":"q1","answer":"yes","contexts":[]}"#).unwrap();
    ok(
        dir.path(),
        Some(store.to_str().unwrap()),
        &[
            "score",
            "--dataset",
            d.to_str().unwrap(),
            "--answers",
            a.to_str().unwrap(),
            "--embedder",
            "openai:model=m,base_url=http://127.0.0.1:1/v1?api_key=s3cret-in-url",
        ],
    );
    let record = ok(
        dir.path(),
        Some(store.to_str().unwrap()),
        &["runs", "export"],
    )
    .stdout;
    assert!(!record.contains("s3cret-in-url"), "{record}");
    let v: Value = serde_json::from_str(record.trim()).unwrap();
    let embedder = v["config"]["embedder"].as_str().unwrap();
    assert!(
        embedder.starts_with("openai:") && embedder.contains("%3Credacted%3E"),
        "{embedder}"
    );
}

#[test]
fn control_characters_of_a_record_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.sqlite");
    let a = a.to_str().unwrap();
    ok(
        dir.path(),
        Some(a),
        &strs(&eval_args(&["recursive:size=400", "recursive:size=300"])),
    );
    let evil = "\u{1b}]0;pwned\u{7}\u{1b}[31mred\r\nforged row";
    let mut text = String::new();
    for line in ok(dir.path(), Some(a), &["runs", "export"]).stdout.lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        v["label"] = Value::from(format!("{}{evil}", v["label"].as_str().unwrap()));
        v["created"] = Value::from(format!("{}{evil}", v["created"].as_str().unwrap()));
        v["result"]["per_query"][0]["query"] = Value::from(evil);
        v["result"]["per_query"][0]["difficulty"] = Value::from(evil);
        text.push_str(&v.to_string());
        text.push('\n');
    }
    let file = dir.path().join("evil.jsonl");
    std::fs::write(&file, text).unwrap();
    let b = dir.path().join("b.sqlite");
    let b = b.to_str().unwrap();
    ok(
        dir.path(),
        Some(b),
        &["runs", "import", file.to_str().unwrap()],
    );
    let ids: Vec<String> = lines(&ok(dir.path(), Some(b), &["runs", "list", "--json"]).stdout)
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    let clean = |args: &[&str]| {
        let out = ok(dir.path(), Some(b), args);
        for text in [&out.stdout, &out.stderr] {
            assert!(
                !text.contains(['\u{1b}', '\u{7}', '\r']),
                "{args:?}: {text:?}"
            );
            assert!(!text.contains("\nforged row"), "{args:?}: {text}");
        }
        out.stdout
    };
    let list = clean(&["runs", "list"]);
    assert_eq!(list.lines().count(), 3, "{list}");
    assert!(list.contains("\\u{1b}]0;pwned"), "{list}");
    clean(&["runs", "show", &ids[0]]);
    clean(&["compare", &ids[0], &ids[1]]);
}

#[test]
fn latest_is_the_newest_recorded_run_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let s = store.to_str().unwrap();
    ok(
        dir.path(),
        Some(s),
        &strs(&eval_args(&["recursive:size=400", "recursive:size=300"])),
    );
    let exported = ok(dir.path(), Some(s), &["runs", "export"]).stdout;
    let newest: Value = serde_json::from_str(exported.lines().last().unwrap()).unwrap();
    let newest = newest["id"].as_str().unwrap().to_owned();
    // A record of 2020 whose id claims a time far in the future.
    let mut old: Value = serde_json::from_str(exported.lines().next().unwrap()).unwrap();
    let future = format!("06{}", &old["id"].as_str().unwrap()[2..]);
    old["id"] = Value::from(future.as_str());
    old["created"] = Value::from("2020-01-01T00:00:00.000Z");
    let file = dir.path().join("future.jsonl");
    std::fs::write(&file, format!("{old}\n")).unwrap();
    ok(
        dir.path(),
        Some(s),
        &["runs", "import", file.to_str().unwrap()],
    );

    let out = ok(dir.path(), Some(s), &["runs", "show", "latest", "--json"]);
    let shown: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(shown["id"], newest.as_str());
    assert!(
        out.stderr.contains(&format!("`latest` is run {newest}")),
        "{}",
        out.stderr
    );
    let list = lines(&ok(dir.path(), Some(s), &["runs", "list", "--json"]).stdout);
    assert_eq!(
        list[0]["id"],
        future.as_str(),
        "oldest first, by recorded time"
    );
}

/// `score --qrels` takes any trec_eval measure name (`bpref`, `infAP`, `success_5`, `P_5`):
/// its per-query figures are the ones `rag-eval trec_eval -q` prints, they are recorded, and
/// two recorded runs compare and report on them.
#[test]
fn score_takes_trec_eval_measure_names_and_records_and_compares_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let store = store.to_str().unwrap();
    let qrels = dir.path().join("qrels");
    let mut q = String::new();
    let mut runs = [String::new(), String::new()];
    for i in 0..12 {
        q += &format!("q{i:02} 0 a 1\nq{i:02} 0 b 0\nq{i:02} 0 c 2\nq{i:02} 0 d -1\n");
        // run 0 ranks the relevant documents lower on the even queries; run 1 puts them first
        runs[0] += &format!("q{i:02} Q0 b 1 0.9 r0\nq{i:02} Q0 x 2 0.8 r0\nq{i:02} Q0 a 3 0.{} r0\nq{i:02} Q0 d 4 0.1 r0\n", 7 - i % 2 * 5);
        runs[1] +=
            &format!("q{i:02} Q0 a 1 0.9 r1\nq{i:02} Q0 c 2 0.8 r1\nq{i:02} Q0 b 3 0.3 r1\n");
    }
    std::fs::write(&qrels, q).unwrap();
    let qrels = qrels.to_str().unwrap();
    let paths: Vec<String> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let p = dir.path().join(format!("run{i}"));
            std::fs::write(&p, r).unwrap();
            p.to_str().unwrap().to_owned()
        })
        .collect();
    for (i, run) in paths.iter().enumerate() {
        let label = format!("run{i}");
        let out = ok(
            dir.path(),
            Some(store),
            &[
                "score",
                "--qrels",
                qrels,
                "--run",
                run,
                "-m",
                "bpref",
                "-m",
                "infAP",
                "-m",
                "success_5",
                "-m",
                "P_2",
                "--json",
                "--label",
                &label,
            ],
        );
        let scored: Value = serde_json::from_str(&out.stdout).unwrap();
        let trec = ok(
            dir.path(),
            None,
            &[
                "trec_eval",
                "-q",
                "-m",
                "bpref",
                "-m",
                "infAP",
                "-m",
                "success.5",
                "-m",
                "P.2",
                qrels,
                run,
            ],
        )
        .stdout;
        let mut checked = 0;
        for line in trec.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            let (name, qid, value) = (f[0].trim(), f[1], f[2].parse::<f64>().unwrap());
            let name = if name == "P_2" { "precision@2" } else { name };
            let ours = if qid == "all" {
                scored["metrics"][name].as_f64()
            } else {
                scored["per_query"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|p| p["id"] == qid)
                    .and_then(|p| p["metrics"][name].as_f64())
            };
            let ours = ours.unwrap_or_else(|| panic!("{name} of {qid} missing: {scored}"));
            assert!(
                (ours - value).abs() < 5e-5,
                "{name} {qid}: {ours} vs {value}"
            );
            checked += 1;
        }
        assert_eq!(checked, 13 * 4, "{trec}");
        let record: Value = serde_json::from_str(
            &ok(
                dir.path(),
                Some(store),
                &["runs", "show", "latest", "--json"],
            )
            .stdout,
        )
        .unwrap();
        assert_eq!(record["result"], scored);
    }
    let listed = lines(&ok(dir.path(), Some(store), &["runs", "list", "--json"]).stdout);
    let ids: Vec<&str> = listed.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 2);
    let compared: Value = serde_json::from_str(
        &ok(
            dir.path(),
            Some(store),
            &["compare", "--json", "--permutations", "500", ids[0], ids[1]],
        )
        .stdout,
    )
    .unwrap();
    let names: Vec<&str> = compared["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    for name in ["bpref", "infAP", "success_5", "precision@2"] {
        assert!(names.contains(&name), "{name} not compared: {compared}");
    }
    let report = ok(
        dir.path(),
        Some(store),
        &["report", "--format", "markdown", ids[0], ids[1]],
    )
    .stdout;
    assert!(
        report.contains("infAP") && report.contains("bpref"),
        "{report}"
    );
    // A summary over queries has no per-query figure: refused by name.
    let out = run_in(
        dir.path(),
        None,
        &[
            "score",
            "--qrels",
            qrels,
            "--run",
            &paths[0],
            "-m",
            "gm_map",
            "--no-record",
        ],
    );
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("gm_map"), "{}", out.stderr);
}
