//! The runs of `eval --rag` told apart (`--label`, the service's spec and the dataset's hash in
//! `runs list` and in the report's runs table), `eval --label`, and the dry run of a service
//! whose answers the cache holds (counted as cached, judged as they are, no cache file made).

use crate::support::rag_service::{judge, qa_pairs};
use crate::support::{Reply, TestServer};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A service that answers every question with `name` and one passage of no document, and
/// counts the questions it was asked.
fn service(name: &'static str) -> (TestServer, Arc<AtomicUsize>) {
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&asked);
    let server = TestServer::start(move |r| {
        count.fetch_add(1, Ordering::SeqCst);
        let query = r.json().unwrap()["query"].as_str().unwrap().to_owned();
        Reply::json(
            200,
            &json!({"answer": format!("{name} says: {query}"),
                    "contexts": [format!("{name} read this about {query}")]}),
        )
    });
    (server, asked)
}

/// The first three question/answer pairs of the bundled data, as `qa.jsonl` in `dir`.
fn dataset(dir: &Path) -> String {
    let path = dir.join("qa.jsonl");
    let three: String = qa_pairs()
        .lines()
        .take(3)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, three).unwrap();
    path.to_str().unwrap().to_owned()
}

/// `rag-eval` in the repository with the run store at `store`: it must succeed.
fn ok(store: &Path, args: &[&str]) -> (String, String) {
    let (code, out, err) = crate::cli_support::run_in(&root(), store, args);
    assert_eq!(code, 0, "{args:?}: {err}");
    (out, err)
}

fn rag_eval(store: &Path, spec: &str, dataset: &str, extra: &[&str]) -> (String, String) {
    let mut args = vec![
        "eval",
        "--rag",
        spec,
        "--dataset",
        dataset,
        "--corpus",
        "examples/data/corpus",
    ];
    args.extend_from_slice(extra);
    ok(store, &args)
}

#[test]
fn eval_rag_runs_carry_their_label_service_and_dataset_hash_into_the_list_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let qa = dataset(dir.path());
    let (a, _) = service("alpha");
    let (b, _) = service("beta");
    let spec_a = format!("http:url={}", a.url("/ask"));
    let spec_b = format!("http:url={}", b.url("/ask"));
    rag_eval(&store, &spec_a, &qa, &["--label", "alpha"]);
    rag_eval(&store, &spec_b, &qa, &[]);

    let (listed, _) = ok(&store, &["runs", "list", "--json"]);
    let runs: Vec<Value> = listed
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(runs.len(), 2, "{listed}");
    assert_eq!(runs[0]["label"], "alpha");
    assert!(runs[1].get("label").is_none(), "{}", runs[1]);
    // Each run names the service it asked, by the spec it prints.
    let printed = |run: &Value| run["rag"].as_str().unwrap().to_owned();
    assert!(printed(&runs[0]).starts_with(&spec_a), "{}", runs[0]);
    assert!(printed(&runs[1]).starts_with(&spec_b), "{}", runs[1]);
    let hash = runs[0]["dataset_hash"].as_str().unwrap().to_owned();
    assert_eq!(runs[1]["dataset_hash"], hash.as_str());

    // The table: the label, else the service's spec, never `-`.
    let (table, _) = ok(&store, &["runs", "list"]);
    let rows: Vec<&str> = table.lines().skip(1).collect();
    assert!(
        rows[0].contains("alpha ") && rows[0].contains(&hash),
        "{table}"
    );
    assert!(
        rows[1].contains(&spec_b) && rows[1].contains(&hash),
        "{table}"
    );

    // The report's runs table: each run's service and the dataset's hash.
    let (markdown, _) = ok(
        &store,
        &["report", "latest~1", "latest", "--format", "markdown"],
    );
    let runs_table: Vec<&str> = markdown
        .lines()
        .skip_while(|l| !l.starts_with("| run |"))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(
        runs_table[0].contains("| system | dataset hash |"),
        "{markdown}"
    );
    assert_eq!(runs_table.len(), 4, "{markdown}");
    assert!(
        runs_table[2].starts_with("| alpha ") && runs_table[2].contains(&spec_a),
        "{markdown}"
    );
    assert!(runs_table[3].contains(&spec_b), "{markdown}");
    assert!(
        runs_table[2..]
            .iter()
            .all(|r| r.ends_with(&format!("| {hash} |"))),
        "{markdown}"
    );
    let html = dir.path().join("report.html");
    ok(
        &store,
        &["report", "latest~1", "latest", "-o", html.to_str().unwrap()],
    );
    let html = std::fs::read_to_string(html).unwrap();
    let section = &html[html.find("<section id=\"runs\">").unwrap()..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(section.contains(">system</th>"), "{section}");
    assert!(
        section.contains(&spec_a) && section.contains(&spec_b),
        "{section}"
    );
    assert_eq!(
        section.matches(&format!("<code>{hash}</code>")).count(),
        2,
        "{section}"
    );
}

#[test]
fn eval_label_names_the_run_and_with_several_chunkers_each_run_by_its_chunker_too() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let eval = |extra: &[&str]| {
        let mut args = vec![
            "eval",
            "--corpus",
            "examples/data/corpus",
            "--dataset",
            "examples/data/questions.jsonl",
            "--label",
            "baseline",
        ];
        args.extend_from_slice(extra);
        ok(&store, &args)
    };
    eval(&["--chunker", "recursive:size=400,overlap=0"]);
    eval(&[
        "--chunker",
        "recursive:size=400,overlap=0",
        "--chunker",
        "recursive:size=200,overlap=0",
    ]);
    let (listed, _) = ok(&store, &["runs", "list", "--json"]);
    let labels: Vec<String> = listed
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["label"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        labels,
        [
            "baseline",
            "baseline recursive:size=400,overlap=0",
            "baseline recursive:size=200,overlap=0"
        ]
    );
}

fn planned<'a>(plan: &'a Value, kind: &str) -> &'a Value {
    plan["total"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {plan}"))
}

#[test]
fn a_dry_run_counts_the_service_s_cached_answers_and_never_creates_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.sqlite");
    let qa = dataset(dir.path());
    let (server, asked) = service("alpha");
    let spec = format!("http:url={}", server.url("/ask"));
    let judge = judge();
    let judge_url = judge.url("/v1");
    let file = dir.path().join("cache.sqlite");
    let rw = format!("rw:path={}", file.display());
    let judged = [
        "--judge-model",
        "judge-m",
        "--judge-url",
        &judge_url,
        "--judges",
        "faithfulness",
    ];
    let dry = |cache: &str| {
        let (out, _) = rag_eval(
            &store,
            &spec,
            &qa,
            &[&judged[..], &["--cache", cache, "--dry-run", "--json"]].concat(),
        );
        serde_json::from_str::<Value>(out.trim()).unwrap()
    };
    let counts = |plan: &Value, kind: &str| {
        let c = planned(plan, kind);
        (c["calls"].as_u64().unwrap(), c["cached"].as_u64().unwrap())
    };

    // Nothing recorded yet: every call is one to send, and no cache file is made.
    let plan = dry(&rw);
    assert_eq!(counts(&plan, "rag"), (3, 0), "{plan}");
    assert_eq!(counts(&plan, "judge"), (3, 0), "{plan}");
    assert!(!file.exists(), "a dry run created {}", file.display());
    assert_eq!(asked.load(Ordering::SeqCst), 0);

    // A run records the service's answers and the judge's verdicts.
    rag_eval(
        &store,
        &spec,
        &qa,
        &[&judged[..], &["--cache", &rw, "--no-record"]].concat(),
    );
    assert_eq!(asked.load(Ordering::SeqCst), 3);
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();
    let listing = || {
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let before = listing();
    drop(judge);

    // The cache answers all three, in `rw` and in `replay` mode; the judges judge the cached
    // answers, which the cache holds verdicts for too.
    for cache in [rw.clone(), format!("replay:path={}", file.display())] {
        let plan = dry(&cache);
        assert_eq!(counts(&plan, "rag"), (0, 3), "{cache}: {plan}");
        assert_eq!(counts(&plan, "judge"), (0, 3), "{cache}: {plan}");
    }
    assert_eq!(asked.load(Ordering::SeqCst), 3, "a dry run asks nothing");
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        modified
    );
    // Nor does it leave a file beside the cache (SQLite's `-wal` and `-shm`).
    assert_eq!(listing(), before);

    // `eval` over a retriever makes no cache file either.
    let other = dir.path().join("other.sqlite");
    let (out, _) = ok(
        &store,
        &[
            "eval",
            "--corpus",
            "examples/data/corpus",
            "--dataset",
            "examples/data/questions.jsonl",
            "--chunker",
            "recursive:size=400,overlap=0",
            "--dry-run",
            "--cache",
            &format!("rw:path={}", other.display()),
        ],
    );
    assert!(out.starts_with("dry run: 40 queries"), "{out}");
    assert!(!other.exists(), "a dry run created {}", other.display());
}
