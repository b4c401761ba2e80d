//! One answer case run as one process and as 4 shards writing into one run group of a real
//! PostgreSQL run store, then gated over the merged group: a fixture crate whose case retrieves
//! (a dense pipeline), generates and is judged (faithfulness, answer relevancy) through a
//! scripted OpenAI-compatible server that counts every call by the machine making it.
//!
//! The shards are `cargo nextest run --partition hash:N/4` (nextest's one process per test);
//! without `cargo nextest`, each shard's tests run as name-filtered processes, one per test,
//! and a notice says so. Needs `RAG_EVAL_TEST_POSTGRES` (`.ci/postgres.sh` sets it); skips
//! without it. A shard is also killed (SIGKILL) after writing some of its queries: the gate
//! names the queries it left out, and the shard run again completes the group (Unix: the kill
//! is a kill(2) of every process of the shard).

#![cfg(unix)]

#[path = "support/fixture_crate.rs"]
mod fixture_crate;
mod support;

use fixture_crate::{cargo, copy_dir};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{Reply, Request, TestServer};

const REPO: &str = env!("CARGO_MANIFEST_DIR");
/// The dataset's first rows the case runs.
const QUERIES: usize = 12;
const SHARDS: usize = 4;
/// The machine (and shard) that is killed mid-run, then run again.
const VICTIM: &str = "victim";

/// What one machine asked the scripted server.
#[derive(Debug, Default, Clone, PartialEq)]
struct Calls {
    /// Embedding requests holding corpus chunks, and the chunks they held.
    corpus_requests: usize,
    corpus_texts: usize,
    /// Query texts embedded.
    query_texts: usize,
    generations: usize,
    faithfulness: usize,
    relevancy: usize,
}

type Ledger = Arc<Mutex<BTreeMap<String, Calls>>>;

/// Deterministic word-count vectors: retrieval finds the chunks sharing a query's words.
fn vector(text: &str) -> Vec<f64> {
    let mut v = vec![0.0; 32];
    for word in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        let h = word.to_lowercase().bytes().fold(2166136261u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(16777619)
        });
        v[h as usize % 32] += 1.0;
    }
    v[0] += 0.01; // never the zero vector
    v
}

fn chat(model: &str, content: &str) -> Reply {
    Reply::json(
        200,
        &json!({
            "id": "scripted", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
        }),
    )
}

/// The first sentence of the first passage a prompt numbers.
fn first_passage_sentence(prompt: &str) -> String {
    let passages = prompt.split("Context passages:\n").nth(1).unwrap_or("");
    let text = passages.lines().nth(1).unwrap_or("").trim();
    text.split_inclusive(". ")
        .next()
        .unwrap_or(text)
        .trim()
        .to_owned()
}

/// The scripted model: answers with its first passage's first sentence; its faithfulness
/// judge finds the answer supported when a passage holds it word for word; its relevancy judge
/// asks the answer back.
fn answer(request: &Request, questions: &HashSet<String>, ledger: &Ledger) -> Reply {
    let machine = request
        .header("authorization")
        .and_then(|h| h.strip_prefix("Bearer "))
        .unwrap_or("?")
        .to_owned();
    let body = request.json().unwrap_or_default();
    let mut ledger = ledger.lock().unwrap();
    let calls = ledger.entry(machine).or_default();
    if request.path().ends_with("/embeddings") {
        let inputs: Vec<String> = body["input"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| t.as_str().unwrap_or("").to_owned())
                    .collect()
            })
            .unwrap_or_default();
        if inputs.iter().all(|t| questions.contains(t)) {
            calls.query_texts += inputs.len();
        } else {
            calls.corpus_requests += 1;
            calls.corpus_texts += inputs.len();
        }
        let data: Vec<Value> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": vector(t)}))
            .collect();
        return Reply::json(
            200,
            &json!({"object": "list", "data": data, "model": "m",
                    "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
        );
    }
    let model = body["model"].as_str().unwrap_or("").to_owned();
    let prompt = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .to_owned();
    if prompt.starts_with("Answer the question using only") {
        calls.generations += 1;
        return chat(&model, &first_passage_sentence(&prompt));
    }
    let answer = prompt
        .rsplit("\nAnswer: ")
        .next()
        .unwrap_or("")
        .trim()
        .to_owned();
    if prompt.starts_with("Read the answer below") {
        calls.relevancy += 1;
        let n: usize = prompt
            .split("write ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(3);
        let reply = json!({"questions": vec![answer; n], "noncommittal": false});
        return chat(&model, &reply.to_string());
    }
    calls.faithfulness += 1;
    let passages = prompt.split("Context passages:").nth(1).unwrap_or("");
    let passages = passages.split("\nQuestion: ").next().unwrap_or("");
    let supported = !answer.is_empty() && passages.contains(&answer);
    let statement = json!({
        "statement": answer,
        "verdict": if supported { "supported" } else { "not_supported" },
        "context": if supported { 1 } else { 0 },
        "evidence": if supported { answer.as_str() } else { "" },
        "reason": "scripted",
    });
    chat(&model, &json!({ "statements": [statement] }).to_string())
}

fn fixture(root: &Path) {
    for dir in ["src", "tests", "golden"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        format!(
            r#"[package]
name = "fx-shards"
version = "0.1.0"
edition = "2021"
autotests = false

[workspace]

[dev-dependencies]
rag-eval = {{ path = {REPO:?}, features = ["cache", "runs", "postgres", "openai"] }}

[[test]]
name = "rag"
harness = false
"#
        ),
    )
    .unwrap();
    std::fs::copy(Path::new(REPO).join("Cargo.lock"), root.join("Cargo.lock")).unwrap();
    std::fs::copy(
        Path::new(REPO).join("tests/fixtures/shards/rag.rs"),
        root.join("tests/rag.rs"),
    )
    .unwrap();
    copy_dir(
        &Path::new(REPO).join("examples/data"),
        &root.join("examples/data"),
    );
    let questions =
        std::fs::read_to_string(Path::new(REPO).join("examples/data/questions.jsonl")).unwrap();
    let rows: Vec<&str> = questions.lines().take(QUERIES).collect();
    std::fs::write(
        root.join("examples/data/sharded.jsonl"),
        rows.join("\n") + "\n",
    )
    .unwrap();
}

fn nextest_available() -> bool {
    std::process::Command::new(env!("CARGO"))
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The environment of one machine writing into run group `group`: its own embedding cache
/// and harness folder, its name as API key and as shard, no judge cache.
fn machine(
    tmp: &Path,
    server: &str,
    store: &str,
    group: &str,
    name: &str,
) -> Vec<(String, String)> {
    let dir = tmp.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let path = |f: &str| dir.join(f).to_str().unwrap().to_owned();
    vec![
        ("FX_SERVER".into(), server.into()),
        ("FX_MACHINE".into(), name.into()),
        ("FX_EMBED_CACHE".into(), path("embeddings.sqlite")),
        // Every judgement is a call (a cache would answer repeated prompts).
        ("RAG_EVAL_CACHE".into(), "off".into()),
        ("RAG_EVAL_HARNESS_CACHE".into(), path("harness")),
        ("RAG_EVAL_RUNS".into(), store.into()),
        ("RAG_EVAL_RUN_GROUP".into(), group.into()),
        ("RAG_EVAL_SHARD".into(), name.into()),
    ]
}

fn run(
    root: &Path,
    args: &[impl AsRef<str>],
    env: &[(String, String)],
    extra: &[(&str, &str)],
) -> (i32, String) {
    let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    all.extend_from_slice(extra);
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    cargo(root, &args, &all)
}

/// The arguments of `cargo nextest <command>` over partition `i` of the fixture's tests,
/// then `rest`.
fn nextest_args(command: &str, i: usize, rest: &[&str]) -> Vec<String> {
    let partition = format!("hash:{i}/{SHARDS}");
    [
        "nextest",
        command,
        "--test",
        "rag",
        "--partition",
        &partition,
    ]
    .iter()
    .chain(rest)
    .map(|a| (*a).to_owned())
    .collect()
}

/// The arguments of `cargo test` running the fixture's test `name` alone.
fn one_test(name: &str) -> [&str; 6] {
    ["test", "--test", "rag", "--", "--exact", name]
}

/// A shard's nextest filter: its query tests, without the summary (the gate job's).
const NOT_SUMMARY: [&str; 2] = ["-E", "not test(/::summary$/)"];

/// The tests of partition `i` of `SHARDS` (nextest's `hash:` partitioning, or every
/// `SHARDS`-th query without nextest), summary excluded.
fn partition(root: &Path, env: &[(String, String)], i: usize, nextest: bool) -> Vec<String> {
    if nextest {
        let args = nextest_args("list", i, &["--message-format", "oneline"]);
        let (code, out) = run(root, &args, env, &[]);
        assert_eq!(code, 0, "{out}");
        return out
            .lines()
            .filter_map(|l| l.split_whitespace().last())
            .filter(|t| t.starts_with("sharded::q"))
            .map(str::to_owned)
            .collect();
    }
    (1..=QUERIES)
        .filter(|n| n % SHARDS == i - 1)
        .map(|n| format!("sharded::q{n:04}"))
        .collect()
}

/// Runs shard `i`: nextest's partition, or one name-filtered process per test.
fn shard(root: &Path, env: &[(String, String)], i: usize, nextest: bool) -> (i32, String) {
    if nextest {
        let rest = [&["--no-fail-fast", "--no-tests=pass"][..], &NOT_SUMMARY].concat();
        return run(root, &nextest_args("run", i, &rest), env, &[]);
    }
    let mut all = (0, String::new());
    for test in partition(root, env, i, false) {
        let (code, out) = run(root, &one_test(&test), env, &[]);
        all.0 = all.0.max(code);
        all.1.push_str(&out);
    }
    all
}

/// Starts shard `i` (its tests `tests`) and kills it with SIGKILL, every process of it,
/// once `caught` says it has written some of its queries and is computing another: a shard
/// machine dying mid-run. Under nextest the partition runs one test at a time; without it, the
/// first test runs to its end and the process of the second is killed.
fn kill_midway(
    root: &Path,
    env: &[(String, String)],
    i: usize,
    tests: &[String],
    nextest: bool,
    caught: impl Fn() -> bool,
) {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let mut cmd = if nextest {
        let args = nextest_args(
            "run",
            i,
            &[&["--test-threads", "1"][..], &NOT_SUMMARY].concat(),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        fixture_crate::command(root, &args, &env)
    } else {
        let (code, out) = cargo(root, &one_test(&tests[0]), &env);
        assert_eq!(code, 0, "{out}");
        fixture_crate::command(root, &one_test(&tests[1]), &env)
    };
    let mut child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    while !caught() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "shard {i} ended before it could be killed mid-run"
        );
        assert!(
            Instant::now() < deadline,
            "shard {i} was never caught mid-run"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // nextest puts each test in a process group of its own: every process below the shard's
    // is killed, parents first (so none starts another).
    for pid in tree(child.id()) {
        let pid = i32::try_from(pid).unwrap();
        // SAFETY: a plain kill(2) of a process this test started; one already gone is no error.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    child.wait().unwrap();
}

/// `pid` and every process below it, parents first (`pgrep -P`, level by level).
fn tree(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    while i < all.len() {
        let out = std::process::Command::new("pgrep")
            .args(["-P", &all[i].to_string()])
            .output()
            .expect("pgrep runs");
        let children = String::from_utf8_lossy(&out.stdout);
        all.extend(
            children
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
        i += 1;
    }
    all
}

/// The judges' lines of the case's summary: their calls, tokens and verdicts.
fn judge_lines(out: &str) -> Vec<&str> {
    out.lines().filter(|l| l.contains(" calls (")).collect()
}

/// The means the case's summary printed, metric by metric: from the table of means and
/// deviations of a run without a baseline, or the `after` column of the table against the
/// baseline (whose `before` must then equal it: a gate over the merged run changes nothing).
fn means(out: &str) -> Vec<(String, String)> {
    let start = out
        .find("\nsharded — ")
        .unwrap_or_else(|| panic!("a summary table:\n{out}"));
    let mut lines = out[start + 1..].lines().skip(1);
    let header = lines.next().unwrap_or_default();
    let cells = |l: &str| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    if header.starts_with("  mean ") {
        lines
            .take_while(|l| l.starts_with("  "))
            .map(|l| {
                let c = cells(l);
                assert_eq!(c[1], c[2], "the baseline's and the run's means differ: {l}");
                (c[0].clone(), c[2].clone())
            })
            .collect()
    } else {
        assert!(header.starts_with("metric "), "a table of means:\n{out}");
        lines
            .take_while(|l| !l.is_empty() && !l.starts_with("difficulty"))
            .map(|l| {
                let c = cells(l);
                (c[0].clone(), c[1].clone())
            })
            .collect()
    }
}

/// `rag-eval gate` over `group` of `store` with the fixture's snapshots: exit code, output.
fn gate_command(root: &Path, store: &str, group: &str, json: bool) -> (i32, String) {
    let golden = root.join("golden");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rag-eval"));
    cmd.args(["gate", "--group", group, "--store", store, "--golden"])
        .arg(&golden);
    if json {
        cmd.arg("--json");
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Every query's row in `group`, by query id (one row per query: a conflict fails here).
fn rows(store: &dyn rag_eval::runs::RunStore, group: &str) -> BTreeMap<String, Value> {
    let (_, rows) = store
        .group_case(group, "sharded")
        .unwrap()
        .expect("the case is described");
    let mut by = BTreeMap::new();
    for r in rows {
        let value: Value = serde_json::from_str(&r.result).unwrap();
        assert!(
            by.insert(r.query.clone(), value).is_none(),
            "{} twice",
            r.query
        );
    }
    by
}

#[test]
fn four_shards_do_the_work_of_one_run_and_the_gate_sees_the_merged_run() {
    let Some(store) = std::env::var("RAG_EVAL_TEST_POSTGRES")
        .ok()
        .filter(|s| !s.is_empty())
    else {
        eprintln!("skipped: RAG_EVAL_TEST_POSTGRES is unset (.ci/postgres.sh sets it)");
        return;
    };
    let nextest = nextest_available();
    if !nextest {
        eprintln!(
            "notice: `cargo nextest` is not installed: each shard runs its tests as name-filtered processes, one per test"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("fx");
    fixture(&root);
    let questions: HashSet<String> =
        std::fs::read_to_string(root.join("examples/data/sharded.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let row: Value = serde_json::from_str(l).unwrap();
                row["inputs"]["query"].as_str().unwrap().to_owned()
            })
            .collect();
    let ledger: Ledger = Arc::default();
    let l = ledger.clone();
    // Each model call's latency in the timing below (none for the checks).
    let latency = Arc::new(AtomicU64::new(0));
    // The same for the machine killed mid-run, so that it is caught computing a query.
    let victim_latency = Arc::new(AtomicU64::new(0));
    let (delay, victim_delay) = (latency.clone(), victim_latency.clone());
    let server = TestServer::start(move |r| {
        let machine = r
            .header("authorization")
            .and_then(|h| h.strip_prefix("Bearer "));
        let victim = machine == Some(VICTIM);
        let reply = answer(&r, &questions, &l);
        let ms = if victim {
            victim_delay.load(Ordering::Relaxed)
        } else {
            delay.load(Ordering::Relaxed)
        };
        match ms {
            0 => reply,
            ms if r.path().ends_with("/chat/completions") => {
                reply.delayed(Duration::from_millis(ms))
            }
            _ => reply,
        }
    });
    let url = server.url("/v1");
    let calls = |name: &str| {
        ledger
            .lock()
            .unwrap()
            .get(name)
            .cloned()
            .unwrap_or_default()
    };
    let unique = format!("{}-{}", std::process::id(), rag_eval::runs::RunId::new());
    let (single_group, shard_group, dead_group) = (
        format!("single-{unique}"),
        format!("shards-{unique}"),
        format!("dead-{unique}"),
    );
    let machines: PathBuf = tmp.path().join("machines");

    // One process, one batched pass: the baseline is written.
    let single = machine(&machines, &url, &store, &single_group, "single");
    let (code, out) = run(
        &root,
        &["test", "--test", "rag"],
        &single,
        &[("INSTA_UPDATE", "always")],
    );
    assert_eq!(code, 0, "{out}");
    let single_means = means(&out);
    let single_judges: Vec<String> = judge_lines(&out).into_iter().map(str::to_owned).collect();
    assert_eq!(single_judges.len(), 2, "{out}");
    let one = calls("single");
    assert_eq!(
        (
            one.generations,
            one.faithfulness,
            one.relevancy,
            one.query_texts
        ),
        (QUERIES, QUERIES, QUERIES, QUERIES),
        "{one:?}"
    );
    assert!(one.corpus_requests >= 1, "{one:?}");

    // Four shards, each its own machine, into one group; the summary is left to the gate.
    let mut total = Calls::default();
    for i in 1..=SHARDS {
        let name = format!("shard{i}");
        let env = machine(&machines, &url, &store, &shard_group, &name);
        let (code, out) = shard(&root, &env, i, nextest);
        assert_eq!(code, 0, "shard {i}:\n{out}");
        let c = calls(&name);
        // The corpus is embedded at most once per machine.
        assert!(
            c.corpus_requests <= one.corpus_requests && c.corpus_texts <= one.corpus_texts,
            "shard {i} embedded the corpus more than once: {c:?} against {one:?}"
        );
        total.generations += c.generations;
        total.faithfulness += c.faithfulness;
        total.relevancy += c.relevancy;
        total.query_texts += c.query_texts;
    }
    assert_eq!(
        (
            total.generations,
            total.faithfulness,
            total.relevancy,
            total.query_texts
        ),
        (
            one.generations,
            one.faithfulness,
            one.relevancy,
            one.query_texts
        ),
        "the shards together made the single run's calls"
    );

    // The merged run is the single run, figure for figure.
    let pg = rag_eval::runs::open(&rag_eval::runs::StoreChoice::parse(Some(&store)))
        .unwrap()
        .unwrap();
    let (single_rows, shard_rows) = (
        rows(pg.as_ref(), &single_group),
        rows(pg.as_ref(), &shard_group),
    );
    assert_eq!(single_rows.len(), QUERIES);
    assert_eq!(shard_rows, single_rows);

    // The gate: the case's summary over the merged group passes as the single run's did,
    // with the same table, under CI, without a call.
    let gate = machine(&machines, &url, &store, &shard_group, "gate");
    let gate_args = one_test("sharded::summary");
    let (code, out) = run(&root, &gate_args, &gate, &[("CI", "true")]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(means(&out), single_means);
    assert_eq!(judge_lines(&out), single_judges);
    assert_eq!(
        calls("gate"),
        Calls::default(),
        "the gate recomputes nothing"
    );
    let (code, out) = gate_command(&root, &store, &shard_group, false);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        format!("ok sharded: {QUERIES} of {QUERIES} queries reported\n")
    );
    let (code, out) = gate_command(&root, &store, &single_group, false);
    assert_eq!(code, 0, "the single run passes the same gate: {out}");

    // A baseline the run falls short of fails both alike.
    let snap_path = root.join("golden/sharded.snap");
    let snap = std::fs::read_to_string(&snap_path).unwrap();
    let line = snap
        .split("\nsummary:\n")
        .nth(1)
        .unwrap()
        .lines()
        .find(|l| l.trim().starts_with("mrr"))
        .expect("mrr in the summary")
        .to_owned();
    let (name, value) = line.trim().split_once(": ").unwrap();
    let raised = format!("  {name}: {}", value.parse::<f64>().unwrap() + 0.1);
    std::fs::write(&snap_path, snap.replacen(&line, &raised, 1)).unwrap();
    // The single run again, whole and outside any group.
    let alone: Vec<(String, String)> = single
        .iter()
        .filter(|(k, _)| k != "RAG_EVAL_RUN_GROUP")
        .cloned()
        .collect();
    let (code, single_out) = run(&root, &["test", "--test", "rag"], &alone, &[("CI", "true")]);
    assert_eq!(code, 101, "{single_out}");
    assert!(
        single_out.contains("1 failed"),
        "only the summary fails: {single_out}"
    );
    let (code, out) = run(&root, &gate_args, &gate, &[("CI", "true")]);
    assert_eq!(code, 101, "{out}");
    let (code, command_out) = gate_command(&root, &store, &shard_group, false);
    assert_eq!(code, 1, "{command_out}");
    assert!(command_out.starts_with("FAILED sharded: "), "{command_out}");
    for o in [&single_out, &out, &command_out] {
        assert!(o.contains("figures dropped beyond the tolerance"), "{o}");
        // The summary's table marks the mean `dropped`; `rag-eval gate` names it `metric: old → new`.
        assert!(
            o.lines()
                .any(|l| l.contains(name)
                    && (l.ends_with("dropped") || l.contains(&format!("{name}:")))),
            "{o}"
        );
    }
    std::fs::write(&snap_path, snap).unwrap();

    // A shard killed mid-run: the other shards complete; the largest partition's shard is
    // killed after writing some of its queries, while it computes another.
    let parts: Vec<Vec<String>> = (1..=SHARDS)
        .map(|i| partition(&root, &gate, i, nextest))
        .collect();
    let victim = (1..=SHARDS).max_by_key(|i| parts[i - 1].len()).unwrap();
    let tests = &parts[victim - 1];
    assert!(tests.len() >= 2, "{parts:?}");
    for i in (1..=SHARDS).filter(|&i| i != victim) {
        let env = machine(&machines, &url, &store, &dead_group, &format!("shard{i}"));
        let (code, out) = shard(&root, &env, i, nextest);
        assert_eq!(code, 0, "{out}");
    }
    let victim_env = machine(&machines, &url, &store, &dead_group, VICTIM);
    let written = || -> BTreeSet<String> {
        let Some((_, rows)) = pg.group_case(&dead_group, "sharded").unwrap() else {
            return BTreeSet::new();
        };
        rows.into_iter()
            .filter(|r| r.shard == VICTIM)
            .map(|r| r.query)
            .collect()
    };
    victim_latency.store(1000, Ordering::Relaxed);
    kill_midway(&root, &victim_env, victim, tests, nextest, || {
        let (written, started) = (written().len(), calls(VICTIM).generations);
        written >= 1 && started > written
    });
    victim_latency.store(0, Ordering::Relaxed);
    let kept = written();
    let lost: BTreeSet<String> = tests
        .iter()
        .map(|t| t.trim_start_matches("sharded::").to_owned())
        .filter(|id| !kept.contains(id))
        .collect();
    assert!(!kept.is_empty() && !lost.is_empty(), "{kept:?} {lost:?}");
    let dead = machine(&machines, &url, &store, &dead_group, "gate");
    let (code, out) = run(&root, &gate_args, &dead, &[("CI", "true")]);
    assert_eq!(code, 101, "{out}");
    let message = out
        .lines()
        .find(|l| l.contains("were reported by no shard"))
        .unwrap_or_else(|| panic!("the gate names the missing queries:\n{out}"));
    assert!(
        message.starts_with(&format!("{} of {QUERIES} queries", lost.len())),
        "{message}"
    );
    for id in &lost {
        assert!(message.contains(id.as_str()), "{id} in {message}");
    }
    for id in &kept {
        assert!(
            !message.contains(id.as_str()),
            "{id} was written: {message}"
        );
    }
    let (code, out) = gate_command(&root, &store, &dead_group, true);
    assert_eq!(code, 1, "{out}");
    let verdict: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        (&verdict["case"], &verdict["queries"], &verdict["reported"]),
        (
            &json!("sharded"),
            &json!(QUERIES),
            &json!(QUERIES - lost.len())
        )
    );
    assert_eq!(verdict["problems"][0].as_str().unwrap(), message.trim());
    // The killed shard run again completes the group: each of its queries once, the group
    // equal to the single run, and the gate passes.
    let (code, out) = shard(&root, &victim_env, victim, nextest);
    assert_eq!(code, 0, "{out}");
    let (code, out) = gate_command(&root, &store, &dead_group, false);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        format!("ok sharded: {QUERIES} of {QUERIES} queries reported\n")
    );
    assert_eq!(rows(pg.as_ref(), &dead_group), single_rows);
    // A group no shard wrote into is an error, not a pass.
    let (code, out) = gate_command(&root, &store, "no-such-group", false);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("run group `no-such-group` holds no case"),
        "{out}"
    );

    // With RAG_EVAL_SHARDS_TIMING=MS, each model call takes MS milliseconds, and the wall time
    // of one process is set against 4 shards at once (benches/README.md).
    let Some(ms) = std::env::var("RAG_EVAL_SHARDS_TIMING")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    latency.store(ms, Ordering::Relaxed);
    let timed = |group: &str, name: &str| machine(&machines, &url, &store, group, name);
    let started = Instant::now();
    let env = timed(&format!("timing-1-{unique}"), "timing-single");
    let (code, out) = run(
        &root,
        &["test", "--test", "rag", "--", "--skip", "summary"],
        &env,
        &[],
    );
    assert_eq!(code, 0, "{out}");
    let one = started.elapsed();
    let started = Instant::now();
    std::thread::scope(|scope| {
        let group = format!("timing-4-{unique}");
        let handles: Vec<_> = (1..=SHARDS)
            .map(|i| {
                let env = timed(&group, &format!("timing-shard{i}"));
                let root = &root;
                scope.spawn(move || shard(root, &env, i, nextest))
            })
            .collect();
        for h in handles {
            let (code, out) = h.join().unwrap();
            assert_eq!(code, 0, "{out}");
        }
    });
    let four = started.elapsed();
    println!(
        "TIMING {QUERIES} queries, {ms} ms per model call: 1 process {:.1} s, {SHARDS} shards at once {:.1} s",
        one.as_secs_f64(),
        four.as_secs_f64()
    );
}
