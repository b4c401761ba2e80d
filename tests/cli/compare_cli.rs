//! `rag-eval compare` from the command line: JSON output, the regression gate's exit code,
//! the refusals, metrics defined differently (another k, level or span mode), and the runs
//! guide's walkthrough (`docs/guide/runs.md`), run as written.

use crate::cli_support;

use std::path::Path;
use std::process::{Command, Output};

fn rag_eval(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args)
        .output()
        .unwrap()
}

/// A `score --json`-shaped run of 30 queries: recall 0.5 each, lowered by `drop` on the first
/// 24.
fn write_run(dir: &Path, name: &str, hash: &str, drop: f64) -> String {
    let per_query: Vec<serde_json::Value> = (0..30)
        .map(|i| {
            let v = if i < 24 { 0.5 - drop } else { 0.5 };
            serde_json::json!({"id": format!("q{i}"), "query": format!("question {i}?"),
                               "metrics": {"recall@5": v}})
        })
        .collect();
    let json = serde_json::json!({"level": "token", "k": 5, "mode": "standard", "queries": 30,
        "metrics": {"recall@5": 0.5}, "std": {"recall@5": 0.0}, "per_query": per_query,
        "dataset_hash": hash});
    let path = dir.join(name);
    std::fs::write(&path, json.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn json_output_and_the_regression_gate() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_run(dir.path(), "a.json", "h1", 0.0);
    let b = write_run(dir.path(), "b.json", "h1", 0.25);
    let out = rag_eval(&["compare", &a, &b, "--json", "--permutations", "2000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["baseline"], "a", "labelled by the file's name");
    assert_eq!(v["permutations"], 2000);
    let d = &v["metrics"][0]["vs_baseline"][0];
    assert_eq!(d["losses"], 24);
    assert_eq!(d["most_worse"][0]["query"], "question 0?");

    let gate = rag_eval(&["compare", &a, &b, "--fail-on-regression"]);
    assert_eq!(gate.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&gate.stderr);
    assert!(
        stderr.contains("regression:") && stderr.contains("recall@5"),
        "{stderr}"
    );
    let text = String::from_utf8_lossy(&gate.stdout);
    assert!(
        text.contains("most worse queries") && text.contains("question 0?"),
        "{text}"
    );

    // The same runs the other way round: an improvement passes the gate.
    let ok = rag_eval(&["compare", &b, &a, "--fail-on-regression"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

#[test]
fn refusals_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_run(dir.path(), "a.json", "h1", 0.0);
    let other = write_run(dir.path(), "c.json", "h2", 0.0);

    let one = rag_eval(&["compare", &a]);
    assert_eq!(one.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&one.stderr).contains("2 to 10 runs"));

    let eleven: Vec<&str> = std::iter::once("compare")
        .chain(std::iter::repeat_n(a.as_str(), 11))
        .collect();
    let out = rag_eval(&eleven);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("got 11"));

    let out = rag_eval(&["compare", &a, &other]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("h1") && stderr.contains("h2"),
        "{stderr}"
    );
    let out = rag_eval(&[
        "compare",
        &a,
        &other,
        "--allow-different-datasets",
        "--json",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["datasets_differ"], true);

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"level\": 3}").unwrap();
    let out = rag_eval(&["compare", &a, bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.json:1: not a run"), "{stderr}");
}

/// A run of 30 queries at `level`, `k` and `mode` whose figures are `metrics`, each the first
/// value on the first 24 queries and the second on the others.
fn write_defined_run(
    dir: &Path,
    name: &str,
    (level, k, mode): (&str, usize, &str),
    metrics: &[(&str, [f64; 2])],
) -> String {
    let figures = |i: usize| -> serde_json::Map<String, serde_json::Value> {
        metrics
            .iter()
            .map(|(m, v)| ((*m).to_owned(), v[usize::from(i >= 24)].into()))
            .collect()
    };
    let per_query: Vec<serde_json::Value> = (0..30)
        .map(|i| serde_json::json!({"id": format!("q{i}"), "metrics": figures(i)}))
        .collect();
    let column = |f: fn(&[f64; 2]) -> f64| -> serde_json::Map<String, serde_json::Value> {
        metrics
            .iter()
            .map(|(m, v)| ((*m).to_owned(), f(v).into()))
            .collect()
    };
    let mean = column(|v| (24.0 * v[0] + 6.0 * v[1]) / 30.0);
    let std = column(|v| (v[0] - v[1]).abs() * (0.8f64 * 0.2).sqrt());
    let json = serde_json::json!({"level": level, "k": k, "mode": mode, "queries": 30,
        "metrics": mean, "std": std, "per_query": per_query, "dataset_hash": "h1"});
    let path = dir.join(name);
    std::fs::write(&path, json.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn metrics_defined_differently_are_named_and_never_a_regression() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // k=10 against k=5: `mrr` over a shallower ranking is lower by definition; the answer
    // metric does not depend on k and is compared.
    let deep = write_defined_run(
        d,
        "deep.json",
        ("token", 10, "standard"),
        &[
            ("span_recall@10", [0.9, 0.9]),
            ("mrr", [1.0, 1.0]),
            ("token_f1", [0.5, 0.5]),
        ],
    );
    let shallow = write_defined_run(
        d,
        "shallow.json",
        ("token", 5, "standard"),
        &[
            ("span_recall@5", [0.5, 0.5]),
            ("mrr", [0.2, 1.0]),
            ("token_f1", [0.5, 0.5]),
        ],
    );
    let out = rag_eval(&["compare", &deep, &shallow, "--fail-on-regression"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "defined differently, not compared: mrr (deep: token level, k=10; shallow: token level, k=5)"
        ),
        "{stdout}"
    );
    let json = rag_eval(&["compare", &deep, &shallow, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        v["metrics_redefined"],
        serde_json::json!([{"metric": "mrr", "definitions": ["token level, k=10", "token level, k=5"]}])
    );
    let compared: Vec<&str> = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert_eq!(compared, ["token_f1"]);
    // The report says so too, and gives `mrr` no difference.
    let md = rag_eval(&["report", &deep, &shallow, "--format", "markdown"]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(
        md.contains("mrr is not compared: the runs define it differently (token level, k=10 / token level, k=5)"),
        "{md}"
    );
    let mrr_row = md.lines().find(|l| l.starts_with("| mrr |")).unwrap();
    assert!(!mrr_row.contains('Δ'), "{mrr_row}");

    // Another span mode: the span metric is not compared, the rank metric is.
    let standard = write_defined_run(
        d,
        "standard.json",
        ("token", 5, "standard"),
        &[("span_precision@5", [0.8, 0.8]), ("hit@5", [1.0, 1.0])],
    );
    let chroma = write_defined_run(
        d,
        "chroma.json",
        ("token", 5, "chroma"),
        &[("span_precision@5", [0.3, 0.8]), ("hit@5", [1.0, 1.0])],
    );
    let out = rag_eval(&["compare", &standard, &chroma, "--fail-on-regression"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("span_precision@5 (standard: token level, mode standard; chroma: token level, mode chroma)"),
        "{stdout}"
    );

    // Token against chunk level: nothing left to compare is an error naming why.
    let token = write_defined_run(
        d,
        "token.json",
        ("token", 5, "standard"),
        &[("precision@5", [0.8, 0.8])],
    );
    let chunk = write_defined_run(
        d,
        "chunk.json",
        ("chunk", 5, "standard"),
        &[("precision@5", [0.2, 0.8])],
    );
    let out = rag_eval(&["compare", &token, &chunk, "--fail-on-regression"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the runs share no metric defined alike")
            && stderr.contains("precision@5 (token: token level; chunk: chunk level)")
            && !stderr.contains("regression:"),
        "{stderr}"
    );
}

/// The walkthrough of the runs guide: `docs/guide/runs.md` from its title to its first `## `
/// heading.
fn guide_walkthrough() -> String {
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide/runs.md"))
            .unwrap();
    assert!(
        guide.starts_with("# Track and compare runs\n"),
        "docs/guide/runs.md opens with its walkthrough"
    );
    let end = guide.find("\n## ").unwrap_or(guide.len());
    guide[..end].to_owned()
}

/// One command of the walkthrough and, for a `$ `-prompted `text` block, the lines it shows
/// (`…` stands for lines left out).
struct Step {
    command: String,
    shown: Vec<String>,
}

/// The `rag-eval` commands of the section's code blocks in order: every line of a `sh` block
/// that starts with `rag-eval `, and the `$ rag-eval …` line that opens a `text` block.
fn walkthrough(section: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        let Some(lang) = line.strip_prefix("```") else {
            continue;
        };
        let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        match lang {
            "sh" => steps.extend(
                block
                    .iter()
                    .filter(|l| l.starts_with("rag-eval "))
                    .map(|l| Step {
                        command: (*l).to_owned(),
                        shown: Vec::new(),
                    }),
            ),
            "text" => {
                if let Some(cmd) = block.first().and_then(|l| l.strip_prefix("$ ")) {
                    steps.push(Step {
                        command: cmd.to_owned(),
                        shown: block[1..].iter().map(|l| (*l).to_owned()).collect(),
                    });
                }
            }
            _ => {}
        }
    }
    steps
}

/// `text` with run ids (26 characters of Crockford's base 32) and `YYYY-MM-DD HH:MM:SS` times
/// replaced by placeholders, the two things that differ from one run of the walkthrough to the
/// next.
fn masked(text: &str) -> String {
    let is_id_char = |c: char| c.is_ascii_digit() || c.is_ascii_uppercase();
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let id_len = chars[i..].iter().take_while(|c| is_id_char(**c)).count();
        let at_start = i == 0 || !is_id_char(chars[i - 1]);
        if at_start && id_len == 26 {
            out.push_str("<id>");
            i += 26;
            continue;
        }
        let time: String = chars[i..].iter().take(19).collect();
        let shape = time
            .chars()
            .zip("dddd-dd-dd dd:dd:dd".chars())
            .all(|(c, s)| if s == 'd' { c.is_ascii_digit() } else { c == s });
        if time.chars().count() == 19 && shape {
            out.push_str("<time>");
            i += 19;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

#[test]
fn guide_walkthrough_runs_as_written() {
    let steps = walkthrough(&guide_walkthrough());
    let commands: Vec<&str> = steps.iter().map(|s| s.command.as_str()).collect();
    let data = "--corpus examples/data/corpus --dataset examples/data/questions.jsonl";
    assert_eq!(
        commands,
        [
            format!("rag-eval eval {data} --chunker markdown:size=400").as_str(),
            &format!("rag-eval eval {data} --chunker recursive:size=200,overlap=0"),
            "rag-eval runs list",
            "rag-eval compare latest~1 latest",
            "rag-eval report latest~1 latest -o report.html",
            "rag-eval report latest~1 latest --format markdown >> \"$GITHUB_STEP_SUMMARY\"",
            "rag-eval compare latest~1 latest --fail-on-regression",
        ],
        "the walkthrough's commands"
    );

    // The bundled data at the paths the guide uses, in a directory of its own, with the
    // default store.
    let dir = tempfile::tempdir().unwrap();
    cli_support::bundled_copy(&dir.path().join("examples/data"));
    let summary = dir.path().join("summary.md");

    let mut outputs = Vec::new();
    for step in &steps {
        let (line, to_summary) = match step.command.strip_suffix(" >> \"$GITHUB_STEP_SUMMARY\"") {
            Some(line) => (line, true),
            None => (step.command.as_str(), false),
        };
        let args: Vec<&str> = line.split_whitespace().skip(1).collect();
        let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
            .args(&args)
            .current_dir(dir.path())
            .env_remove("RAG_EVAL_RUNS")
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        let expected = if line.contains("--fail-on-regression") {
            1
        } else {
            0
        };
        assert_eq!(
            out.status.code(),
            Some(expected),
            "{line}\n{stdout}\n{stderr}"
        );
        if to_summary {
            std::fs::write(&summary, &stdout).unwrap();
        }
        // What the guide shows of the output, in order, each line whole (ids and times
        // aside).
        let got: Vec<String> = masked(&format!("{stdout}{stderr}"))
            .lines()
            .map(|l| l.trim_end().to_owned())
            .collect();
        let mut from = 0;
        for want in step.shown.iter().filter(|l| l.as_str() != "…") {
            let want = masked(want);
            match got[from..].iter().position(|l| *l == want) {
                Some(i) => from += i + 1,
                None => panic!(
                    "`{line}` printed no line\n{want}\nin order; it printed\n{}",
                    got.join("\n")
                ),
            }
        }
        outputs.push((stdout, stderr));
    }

    // The claims of the prose around the blocks.
    for (_, stderr) in &outputs[..2] {
        assert!(
            stderr.contains("recorded run ") && stderr.contains(" in `.rag-eval/runs.sqlite`"),
            "{stderr}"
        );
    }
    assert!(dir.path().join(".rag-eval/runs.sqlite").is_file());
    let listed: Vec<&str> = outputs[2].0.lines().skip(1).collect();
    assert_eq!(listed.len(), 2, "two runs listed: {listed:?}");
    assert!(listed[0].contains("markdown:size=400") && listed[1].contains("recursive:size=200"));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    for heading in [
        "<h2>Runs</h2>",
        "<h2>Metrics</h2>",
        "<h2>By difficulty</h2>",
        "<h2>Queries</h2>",
    ] {
        assert!(html.contains(heading), "report.html lacks {heading}");
    }
    assert!(html.contains("What is the default value of the server request_timeout option?"));
    let markdown = std::fs::read_to_string(&summary).unwrap();
    assert!(
        markdown.contains(
            "| span_recall@5 | 0.7806 ± 0.3834 | 0.5732 ± 0.4487 (Δ -0.2074 [-0.3253, -0.0972], p 0.0030 \\*) |"
        ),
        "{markdown}"
    );
    let gate = &outputs[6].1;
    assert_eq!(
        gate.lines()
            .filter(|l| l.starts_with("regression: "))
            .count(),
        1,
        "only span_recall@5 is a significant loss: {gate}"
    );
}

#[test]
fn resamples_and_permutations_beyond_their_maximum_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_run(dir.path(), "a.json", "h1", 0.0);
    let b = write_run(dir.path(), "b.json", "h1", 0.25);
    for (command, flag, value, max) in [
        ("compare", "--resamples", "10000000000", "100000"),
        ("compare", "--permutations", "1000000000000", "1000000"),
        ("report", "--resamples", "10000000000", "100000"),
        ("report", "--permutations", "1000000000000", "1000000"),
    ] {
        let out = rag_eval(&[command, &a, &b, flag, value]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command} {flag}: {stderr}");
        assert!(stderr.contains(flag) && stderr.contains(max), "{stderr}");
    }
    // The maximum itself is accepted.
    let out = rag_eval(&["compare", &a, &b, "--json", "--resamples", "100000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A run of 30 queries with `recall@5` lowered by `drop` and `mrr` raised by `rise` on the
/// first 24: a trade-off.
fn write_trade_off(dir: &Path, name: &str, drop: f64, rise: f64) -> String {
    let per_query: Vec<serde_json::Value> = (0..30)
        .map(|i| {
            let (r, m) = if i < 24 {
                (0.5 - drop, 0.5 + rise)
            } else {
                (0.5, 0.5)
            };
            serde_json::json!({"id": format!("q{i}"), "metrics": {"recall@5": r, "mrr": m}})
        })
        .collect();
    let json = serde_json::json!({"level": "token", "k": 5, "mode": "standard", "queries": 30,
        "metrics": {"recall@5": 0.5, "mrr": 0.5}, "std": {"recall@5": 0.0, "mrr": 0.0},
        "per_query": per_query, "dataset_hash": "h"});
    let path = dir.join(name);
    std::fs::write(&path, json.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn metric_limits_what_is_compared_and_gated() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_trade_off(dir.path(), "a.json", 0.0, 0.0);
    let b = write_trade_off(dir.path(), "b.json", 0.25, 0.25);
    // Every metric: recall@5 fell, the gate fails.
    let all = rag_eval(&["compare", &a, &b, "--fail-on-regression"]);
    assert_eq!(all.status.code(), Some(1));
    // Gated on mrr alone (by its name) the trade-off passes, and only mrr is compared.
    let mrr = rag_eval(&[
        "compare",
        &a,
        &b,
        "--fail-on-regression",
        "--metric",
        "mrr",
        "--json",
    ]);
    assert!(
        mrr.status.success(),
        "{}",
        String::from_utf8_lossy(&mrr.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&mrr.stdout).unwrap();
    let names: Vec<&str> = v["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["mrr"]);
    // By base name: `recall` names recall@5, which fell.
    let recall = rag_eval(&[
        "compare",
        &a,
        &b,
        "--fail-on-regression",
        "--metric",
        "recall",
    ]);
    assert_eq!(recall.status.code(), Some(1));
    let bad = rag_eval(&["compare", &a, &b, "--metric", "nope"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success()
            && err.contains("--metric `nope`: no such figure (the run has mrr, recall@5)"),
        "{err}"
    );
}

/// A run of 8 answers that the judge passes (faithfulness 1 each); `changed` answers differ
/// from the baseline's.
fn write_judged_run(dir: &Path, name: &str, changed: usize) -> String {
    let per_query: Vec<serde_json::Value> = (0..8)
        .map(|i| {
            let answer = if i < changed {
                format!("changed answer {i}")
            } else {
                format!("answer {i}")
            };
            serde_json::json!({"id": format!("q{i}"), "answer": answer,
                               "metrics": {"faithfulness": 1.0}})
        })
        .collect();
    let json = serde_json::json!({"level": "token", "queries": 8,
        "metrics": {"faithfulness": 1.0}, "std": {"faithfulness": 0.0}, "per_query": per_query});
    let path = dir.join(name);
    std::fs::write(&path, json.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

fn write_labels(dir: &Path, name: &str, labels: &[u8]) -> String {
    let lines: Vec<String> = labels
        .iter()
        .enumerate()
        .map(|(i, y)| format!("{{\"id\":\"q{i}\",\"labels\":{{\"faithfulness\":{y}}}}}\n"))
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, lines.concat()).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The judge passes every answer of both runs, so the raw comparison sees nothing; people
/// fail three of the four changed answers they labelled, so the judge-corrected one sees the
/// regression (θ̂ 1 → 0.25, p = erfc(3/√2) as worked in `tests/lib/compare.rs`).
#[test]
fn judge_corrected_comparison_and_its_gate() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_judged_run(dir.path(), "a.json", 0);
    let b = write_judged_run(dir.path(), "b.json", 3);
    let la = write_labels(dir.path(), "a-labels.jsonl", &[1, 1, 1, 1]);
    let lb = write_labels(dir.path(), "b-labels.jsonl", &[0, 0, 0, 1]);
    let corrected = ["--corrected", "--labels", &la, "--labels", &lb];

    let raw = rag_eval(&["compare", &a, &b, "--fail-on-regression"]);
    assert!(
        raw.status.success(),
        "{}",
        String::from_utf8_lossy(&raw.stderr)
    );

    let json = rag_eval(&[&["compare", &a, &b, "--json"][..], &corrected].concat());
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let d = &v["metrics"][0]["vs_baseline"][0];
    assert_eq!(d["difference"], 0.0, "the paired test's fields stay raw");
    let j = &d["judge_corrected"];
    assert_eq!(j["baseline"]["mean"], 1.0);
    assert_eq!(j["run"]["mean"], 0.25);
    assert_eq!(
        (&j["run"]["judged"], &j["run"]["labelled"]),
        (&8.into(), &4.into())
    );
    assert_eq!(j["difference"], -0.75);
    assert_eq!(j["paired_labels"], true);
    let p = j["p_value"].as_f64().unwrap();
    assert!((p - 0.002_699_796_063_260_191_3).abs() < 1e-12, "{p}");
    assert_eq!(j["corrected_p_value"], j["p_value"]);

    let gate = rag_eval(&[&["compare", &a, &b, "--fail-on-regression"][..], &corrected].concat());
    assert_eq!(gate.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&gate.stderr);
    assert!(
        stderr.contains("regression: b on faithfulness: -0.7500 judge-corrected"),
        "{stderr}"
    );
    let text = String::from_utf8_lossy(&gate.stdout);
    assert!(
        text.contains("1.0000 ± 0.0000") && text.contains("judge-corrected (prediction-powered"),
        "raw and corrected: {text}"
    );
    assert!(
        text.contains("0.2500 [") && text.contains("4 of 8"),
        "{text}"
    );

    // One labels file for both runs: refused, since the labelled answers differ.
    let shared = rag_eval(&["compare", &a, &b, "--corrected", "--labels", &la]);
    assert_eq!(shared.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&shared.stderr);
    assert!(
        stderr.contains(
            "cannot label every run: query `q0` has another answer in run `b` than in `a`"
        ),
        "{stderr}"
    );
    // …and accepted for runs whose answers are the same.
    let same = write_judged_run(dir.path(), "same.json", 0);
    let ok = rag_eval(&[
        "compare",
        &a,
        &same,
        "--corrected",
        "--labels",
        &la,
        "--json",
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    let three = rag_eval(&[&["compare", &a, &b][..], &corrected, &["--labels", &la]].concat());
    let stderr = String::from_utf8_lossy(&three.stderr);
    assert!(
        stderr.contains("--labels is given 3 times for 2 runs"),
        "{stderr}"
    );
    let unlabelled = rag_eval(&["compare", &a, &b, "--corrected"]);
    let stderr = String::from_utf8_lossy(&unlabelled.stderr);
    assert!(
        stderr.contains("no compared query of any run carries a person's label"),
        "{stderr}"
    );
    let without = rag_eval(&["compare", &a, &b, "--labels", &la]);
    assert_eq!(without.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&without.stderr).contains("--corrected"));
}

/// A run of 30 queries over twelve metrics, every figure 0.5, lowered by `drop` on the first
/// 24 queries (lowered more the earlier the query, so the most worse are the same queries).
fn write_wide_run(dir: &Path, name: &str, drop: f64) -> String {
    let metrics: Vec<String> = ["recall", "precision", "ndcg", "mrr"]
        .iter()
        .flat_map(|m| [3, 5, 10].map(|k| format!("{m}@{k}")))
        .collect();
    let per_query: Vec<serde_json::Value> = (0..30)
        .map(|i| {
            let v = if i < 24 {
                0.5 - drop * (1.0 - i as f64 / 48.0)
            } else {
                0.5
            };
            let figures: serde_json::Map<String, serde_json::Value> =
                metrics.iter().map(|m| (m.clone(), v.into())).collect();
            serde_json::json!({"id": format!("q{i}"), "query": format!("question {i}?"),
                               "metrics": figures})
        })
        .collect();
    let means: serde_json::Map<String, serde_json::Value> =
        metrics.iter().map(|m| (m.clone(), 0.5.into())).collect();
    let std: serde_json::Map<String, serde_json::Value> =
        metrics.iter().map(|m| (m.clone(), 0.0.into())).collect();
    let json = serde_json::json!({"level": "token", "k": 10, "mode": "standard", "queries": 30,
        "metrics": means, "std": std, "per_query": per_query, "dataset_hash": "h1"});
    let path = dir.join(name);
    std::fs::write(&path, json.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_regression_on_many_metrics_lists_each_worse_query_once() {
    let dir = tempfile::tempdir().unwrap();
    let a = write_wide_run(dir.path(), "a.json", 0.0);
    let b = write_wide_run(dir.path(), "b.json", 0.25);
    let out = rag_eval(&["compare", &a, &b, "--permutations", "2000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let worse = &text[text.find("most worse queries").expect(&text)..];
    let worse = &worse[..worse.find("\n\n").unwrap_or(worse.len())];
    // One block for the run: the five most worse queries once each, with every metric's change.
    assert_eq!(text.matches("got worse on").count(), 1, "{text}");
    for q in 0..5 {
        assert_eq!(
            worse.matches(&format!("question {q}?")).count(),
            1,
            "{text}"
        );
    }
    assert_eq!(worse.matches("(0.5000 → ").count(), 12 * 5, "{text}");
    // The table has two rows per metric (24) and a header; the queries 1 + 5 × 5 lines. One
    // block per metric printed 12 × 7 = 84 lines for them.
    let lines = text.lines().count();
    assert!(lines <= 60, "{lines} lines:\n{text}");
}
