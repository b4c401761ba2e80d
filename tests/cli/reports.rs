//! `rag-eval report`: the HTML page opened in headless Chromium, Markdown tables checked for
//! shape, JUnit validated against its schema, and user text that tries to be markup shown as
//! text everywhere.

use crate::junit_schema;
use crate::support::cdp;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const REPO: &str = env!("CARGO_MANIFEST_DIR");
const EVIL: &str =
    r#"<script>document.title='pwned'</script><img src=x onerror="alert(1)"> | ` ]] > & "#;

fn rag_eval(args: &[&str]) -> (bool, String, String) {
    rag_eval_with(args, "off")
}

/// `rag-eval` with `RAG_EVAL_RUNS` set to `runs` (`off`: nothing recorded).
fn rag_eval_with(args: &[&str], runs: &str) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args)
        .env("RAG_EVAL_RUNS", runs)
        .current_dir(REPO)
        .output()
        .expect("rag-eval runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Two evaluations of the bundled example (chunks of 400 and of 200 characters), the second
/// with a query text, a document id and a chunk text that try to be markup.
fn runs(dir: &Path) -> (PathBuf, PathBuf) {
    let eval = |size: &str| {
        let chunker = format!("recursive:size={size},overlap=0");
        let (ok, out, err) = rag_eval(&[
            "eval",
            "--corpus",
            "examples/data/corpus",
            "--dataset",
            "examples/data/questions.jsonl",
            "--chunker",
            &chunker,
            "--json",
        ]);
        assert!(ok, "{err}");
        out
    };
    let a = dir.join("chunks-400.json");
    std::fs::write(&a, eval("400")).unwrap();
    let mut b: Value = serde_json::from_str(&eval("200")).unwrap();
    let q = &mut b["per_query"][0];
    q["query"] = Value::from(EVIL);
    q["retrieved"][0]["text"] = Value::from(format!("{EVIL} and more"));
    q["retrieved"][0]["doc_id"] = Value::from(EVIL);
    let b_path = dir.join("chunks-200.json");
    std::fs::write(&b_path, serde_json::to_string(&b).unwrap()).unwrap();
    (a, b_path)
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn report(args: &[&str]) -> String {
    let (ok, out, err) = rag_eval(&[&["report"], args].concat());
    assert!(ok, "{err}");
    out
}

#[test]
fn eval_json_carries_truth_and_retrieved_passages() {
    let dir = temp();
    let (a, _) = runs(dir.path());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(a).unwrap()).unwrap();
    let q = &v["per_query"][0];
    let truth = q["truth"]["spans"]
        .as_array()
        .expect("token-level truth spans");
    assert!(!truth.is_empty());
    assert!(truth[0]["text"].as_str().is_some_and(|t| !t.is_empty()));
    let retrieved = q["retrieved"].as_array().unwrap();
    assert_eq!(retrieved.len(), 5, "k = 5");
    let first = &retrieved[0];
    let (start, end) = (
        first["start"].as_u64().unwrap(),
        first["end"].as_u64().unwrap(),
    );
    assert_eq!(
        first["text"].as_str().unwrap().chars().count() as u64,
        end - start
    );
    assert!(
        first.get("score").is_none(),
        "scores are not part of a result"
    );
}

#[test]
fn html_is_self_contained_and_user_text_stays_text() {
    let dir = temp();
    let (a, b) = runs(dir.path());
    let out = dir.path().join("report.html");
    let (ok, stdout, err) = rag_eval(&[
        "report",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(ok && stdout.is_empty(), "{err}");
    let html = std::fs::read_to_string(&out).unwrap();
    // Nothing is fetched: no external scripts, styles, images or links.
    for fetch in [
        "src=\"http",
        "href=\"http",
        "url(",
        "@import",
        "<link",
        "<img",
    ] {
        assert!(!html.contains(fetch), "{fetch} in the page");
    }
    assert_eq!(
        html.matches("<script>").count(),
        1,
        "only the page's own script"
    );
    assert!(!html.contains("<script>document"));
    assert!(!html.contains("onerror=\""));
    assert!(html.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
    for section in [
        "id=\"runs\"",
        "id=\"metrics\"",
        "id=\"difficulty\"",
        "id=\"scatter\"",
        "id=\"histograms\"",
        "id=\"queries\"",
    ] {
        assert!(html.contains(section), "{section}");
    }
}

/// Chromium's path from `RAG_EVAL_CHROMIUM` (`.ci/chromium.sh` sets it).
fn chromium() -> Option<String> {
    let path = std::env::var("RAG_EVAL_CHROMIUM")
        .ok()
        .filter(|p| !p.is_empty());
    if path.is_none() {
        eprintln!("skipped: RAG_EVAL_CHROMIUM is not set (source .ci/chromium.sh)");
    }
    path
}

/// Runs headless Chromium on `page` with `extra` arguments: (stdout, stderr).
pub(crate) fn headless(browser: &str, page: &Path, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("timeout")
        .arg("120")
        .arg(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium failed: {out:?}");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn html_renders_in_headless_chromium_without_console_errors() {
    let Some(browser) = chromium() else {
        return;
    };
    let dir = temp();
    let (a, b) = runs(dir.path());
    let page = dir.path().join("report.html");
    report(&[
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--min",
        "span_recall=0.5",
        "-o",
        page.to_str().unwrap(),
    ]);
    let (dom, log) = headless(&browser, &page, &["--dump-dom"]);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    // The script ran to its end.
    assert!(
        dom.contains("data-ready=\"yes\""),
        "{}",
        &dom[..dom.len().min(2000)]
    );
    assert!(
        dom.contains("<title>rag-eval report</title>"),
        "the title was not rewritten"
    );
    for heading in [
        "<h1>rag-eval report</h1>",
        "<h2>Runs</h2>",
        "<h2>Metrics</h2>",
        "<h2>Bars</h2>",
        "<h2>By difficulty</h2>",
        "<h2>Per query: baseline against another run</h2>",
        "<h2>Distribution of per-query figures</h2>",
        "<h2>Queries</h2>",
    ] {
        assert!(dom.contains(heading), "{heading}");
    }
    // Two bar charts, a scatter per headline metric, two histograms per metric.
    let charts = dom.matches("<svg class=\"chart\"").count();
    assert!(charts >= 2 + 5 + 2 * 11, "{charts} charts");
    assert!(dom.contains("class=\"whisker\""), "interval whiskers");
    assert!(
        dom.matches("class=\"point\"").count() >= 5,
        "scatter points"
    );
    // Every query a row; the selects left one scatter shown.
    let table = &dom[dom.find("id=\"query-table\"").unwrap()..];
    let body = &table[table.find("<tbody>").unwrap()..table.find("</tbody>").unwrap()];
    assert_eq!(body.matches("<tr>").count(), 40);
    assert!(body.contains("<mark>"), "matched characters highlighted");
    let scatter = &dom[dom.find("id=\"scatter\"").unwrap()..dom.find("id=\"histograms\"").unwrap()];
    assert_eq!(
        scatter.matches("<figure").count() - scatter.matches("hidden=\"\"").count(),
        1,
        "one scatter shown"
    );
    // The markup in the run stayed text: no element came from it.
    assert!(!dom.contains("<img"), "an element from user text");
    assert!(dom.contains("&lt;script&gt;document.title="));

    // A screenshot for a person to look at.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../reports");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("report.png");
    let _ = std::fs::remove_file(&shot);
    let arg = format!("--screenshot={}", shot.display());
    headless(&browser, &page, &["--window-size=1280,2400", &arg]);
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
    eprintln!("screenshot: {}", shot.canonicalize().unwrap().display());
}

/// Cells of a Markdown table row: split at pipes not escaped with a backslash.
fn cells(row: &str) -> usize {
    let inner = row
        .strip_prefix('|')
        .and_then(|r| r.strip_suffix('|'))
        .unwrap_or_else(|| panic!("a row starts and ends with a pipe: {row:?}"));
    let mut n = 1;
    let mut escaped = false;
    for c in inner.chars() {
        match c {
            '\\' if !escaped => escaped = true,
            '|' if !escaped => n += 1,
            _ => escaped = false,
        }
    }
    n
}

#[test]
fn markdown_tables_are_well_formed() {
    let dir = temp();
    let (a, b) = runs(dir.path());
    let md = report(&[
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "markdown",
        "--min",
        "span_recall=0.5",
        "--title",
        "Retrieval | <b>nightly</b>",
    ]);
    assert!(
        md.starts_with("## Retrieval \\| &lt;b>nightly&lt;/b>\n"),
        "{md}"
    );
    let lines: Vec<&str> = md.lines().collect();
    let mut tables = 0;
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with('|') {
            i += 1;
            continue;
        }
        tables += 1;
        let width = cells(lines[i]);
        let sep = lines[i + 1];
        assert_eq!(cells(sep), width, "separator of {:?}", lines[i]);
        assert!(
            sep.trim_matches('|').split('|').all(|c| {
                let c = c.trim();
                c.trim_matches(':').chars().all(|x| x == '-') && c.contains('-')
            }),
            "{sep}"
        );
        assert!(
            i == 0 || lines[i - 1].is_empty(),
            "a blank line before a table"
        );
        i += 2;
        let mut rows = 0;
        while i < lines.len() && lines[i].starts_with('|') {
            assert_eq!(cells(lines[i]), width, "{:?}", lines[i]);
            rows += 1;
            i += 1;
        }
        assert!(rows > 0);
    }
    assert_eq!(tables, 4, "runs, metrics, difficulty, bars: {md}");
    assert!(md.contains("| span_recall@5 | 0.7288 ± 0.4164 |"), "{md}");
    assert!(
        md.contains("| span_recall >= 0.5 | chunks-400 | 0.7288 | ✅ pass | 11 of 40 |"),
        "{md}"
    );
}

#[test]
fn junit_has_a_case_per_query_and_bar_and_fits_the_schema() {
    let dir = temp();
    let (a, b) = runs(dir.path());
    let xml_path = dir.path().join("report.xml");
    report(&[
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "junit",
        "--min",
        "span_recall=0.5",
        "--max",
        "span_iou@5=0.9",
        "-o",
        xml_path.to_str().unwrap(),
    ]);
    let xml = std::fs::read_to_string(&xml_path).unwrap();
    // Per run and bar: the mean and 40 queries.
    assert_eq!(xml.matches("<testcase ").count(), 2 * 2 * 41);
    // Run a: 11 queries below 0.5 recall; run b's figures come from its own file.
    let b_json: Value = serde_json::from_str(&std::fs::read_to_string(&b).unwrap()).unwrap();
    let b_below = b_json["per_query"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["metrics"]["span_recall@5"].as_f64().unwrap() < 0.5)
        .count();
    assert!(
        xml.contains(r#"<testsuite name="chunks-400" tests="82" failures="11""#),
        "{xml}"
    );
    assert!(
        xml.contains(&format!(
            r#"<testsuite name="chunks-200" tests="82" failures="{b_below}""#
        )),
        "{xml}"
    );
    assert!(
        xml.contains("<testcase name=\"q0001: span_recall@5 &gt;= 0.5\" classname=\"chunks-400\"")
    );
    assert!(!xml.contains("<script>"), "user text escaped");
    match junit_schema::validate(&xml_path) {
        Some(Ok(())) | None => {}
        Some(Err(why)) => panic!("the report does not fit the JUnit schema: {why}"),
    }
    // The schema is not a formality: a broken document fails it.
    let broken = dir.path().join("broken.xml");
    std::fs::write(&broken, xml.replace(" classname=", " class=")).unwrap();
    if let Some(result) = junit_schema::validate(&broken) {
        assert!(
            result.is_err(),
            "a testcase without classname passed the schema"
        );
    }
}

#[test]
fn bad_inputs_are_named() {
    let dir = temp();
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "{\"level\":\"token\"}\n").unwrap();
    let (ok, _, err) = rag_eval(&["report", junk.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("junk.json:1") && err.contains("not a run"),
        "{err}"
    );
    let (a, _) = runs(dir.path());
    let (ok, _, err) = rag_eval(&["report", a.to_str().unwrap(), "--min", "recall"]);
    assert!(
        !ok && err.contains("bar `recall`: expected METRIC=VALUE"),
        "{err}"
    );
    let (ok, _, err) = rag_eval(&["report", "no/such/run.json"]);
    assert!(
        !ok && err.contains("`no/such/run.json` is no file"),
        "{err}"
    );
    assert!(err.contains("RAG_EVAL_RUNS=off"), "{err}");
    // A report never writes over a run it was made from.
    let before = std::fs::read(&a).unwrap();
    let (ok, _, err) = rag_eval(&["report", a.to_str().unwrap(), "-o", a.to_str().unwrap()]);
    assert!(
        !ok && err.contains("is the input") && err.contains("chunks-400.json"),
        "{err}"
    );
    assert_eq!(std::fs::read(&a).unwrap(), before, "the run is intact");
    // The same file twice still gets two names.
    let md = report(&[
        a.to_str().unwrap(),
        a.to_str().unwrap(),
        "--format",
        "markdown",
    ]);
    assert!(md.contains("| chunks-400 (2) |"), "{md}");
}

#[test]
fn runs_come_from_the_store_by_id_and_from_exported_records() {
    let dir = temp();
    let store = dir.path().join("runs.sqlite");
    let store = store.to_str().unwrap();
    for size in ["400", "200"] {
        let chunker = format!("recursive:size={size},overlap=0");
        let (ok, _, err) = rag_eval_with(
            &[
                "eval",
                "--corpus",
                "examples/data/corpus",
                "--dataset",
                "examples/data/questions.jsonl",
                "--chunker",
                &chunker,
            ],
            store,
        );
        assert!(ok, "{err}");
    }
    let md = report(&[
        "latest~1", "latest", "--store", store, "--format", "markdown",
    ]);
    let rows: Vec<&str> = md.lines().filter(|l| l.contains("| token | 5 |")).collect();
    assert_eq!(rows.len(), 2, "{md}");
    assert!(
        rows[0].contains("(baseline)") && rows[0].contains("size=400"),
        "{md}"
    );
    assert!(rows[1].contains("size=200"), "{md}");
    // The same runs from an export file: records, labelled by their labels.
    let export = dir.path().join("export.jsonl");
    let (ok, _, err) = rag_eval_with(&["runs", "export", "-o", export.to_str().unwrap()], store);
    assert!(ok, "{err}");
    let from_file = report(&[export.to_str().unwrap(), "--format", "markdown"]);
    let metrics = |m: &str| m[m.find("### Metrics").unwrap()..].to_owned();
    assert_eq!(metrics(&from_file), metrics(&md));
}

/// The report's differences, intervals and corrected p-values are `rag-eval compare`'s, with
/// the defaults and with other options alike.
#[test]
fn intervals_and_p_values_are_those_of_compare() {
    let dir = temp();
    let (a, b) = runs(dir.path());
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    for options in [&[][..], &["--seed", "7", "--correction", "bonferroni"]] {
        let (ok, out, err) = rag_eval(&[&["compare", "--json", a, b], options].concat());
        assert!(ok, "{err}");
        let compared: Value = serde_json::from_str(&out).unwrap();
        let md = report(&[&[a, b, "--format", "markdown"], options].concat());
        let html = report(&[&[a, b], options].concat());
        let metrics = compared["metrics"].as_array().unwrap();
        assert!(metrics.len() >= 4, "{compared}");
        let mut significant = 0;
        for m in metrics {
            let d = &m["vs_baseline"][0];
            let f = |k: &str| d[k].as_f64().unwrap();
            let (lo, hi) = (d["ci"][0].as_f64().unwrap(), d["ci"][1].as_f64().unwrap());
            let p = f("corrected_p_value");
            let star = p <= 0.05;
            significant += usize::from(star);
            let (difference, interval) = (f("difference"), format!("[{lo:+.4}, {hi:+.4}]"));
            let shown = format!("Δ {difference:+.4} {interval}");
            let row = md
                .lines()
                .find(|l| l.starts_with(&format!("| {} |", m["metric"].as_str().unwrap())))
                .unwrap_or_else(|| panic!("no row for {}: {md}", m["metric"]));
            let md_cell = format!("({shown}, p {p:.4}{}) |", if star { " \\*" } else { "" });
            assert!(row.ends_with(&md_cell), "{row} lacks {md_cell}");
            // The page carries the exact figures beside the rounded ones.
            let html_cell = format!(
                "data-ci=\"{lo} {hi}\" data-p=\"{p}\">Δ {difference:+.4} <span class=\"nowrap\">{interval}</span><br>p {p:.4}{}</span>",
                if star { " *" } else { "" }
            );
            assert!(html.contains(&html_cell), "the page lacks {html_cell}");
        }
        assert!(
            significant > 0 && significant < metrics.len(),
            "both kinds of cell are checked: {significant} of {}",
            metrics.len()
        );
    }
    // One run: the mean's bootstrap interval, and no comparison.
    let md = report(&[a, "--format", "markdown"]);
    assert!(!md.contains("Δ"), "{md}");
    let html = report(&[a]);
    assert!(html.contains("Means with 95% bootstrap intervals"));
    assert!(!html.contains("Difference from the baseline"));
}

/// The bundled answers give four contexts as text that no document holds: the JSON, the run
/// record and the report mark them as not found, never as a place `0–0` in a document.
#[test]
fn contexts_not_found_in_the_corpus_are_marked_in_json_records_and_the_report() {
    let dir = temp();
    let store = dir.path().join("runs.sqlite");
    let store = store.to_str().unwrap();
    let (ok, out, err) = rag_eval_with(
        &[
            "score",
            "--dataset",
            "examples/data/questions.jsonl",
            "--answers",
            "examples/data/answers.jsonl",
            "--corpus",
            "examples/data/corpus",
            "--json",
        ],
        store,
    );
    assert!(ok, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["contexts_located"]["unlocated"], 4);
    let contexts = |v: &Value| -> Vec<Value> {
        let per_query = v["per_query"].as_array().unwrap();
        per_query
            .iter()
            .flat_map(|q| q["contexts"].as_array().cloned().unwrap_or_default())
            .collect()
    };
    let check = |all: Vec<Value>, from: &str| {
        let unlocated: Vec<&Value> = all.iter().filter(|c| c["located"] == false).collect();
        assert_eq!(unlocated.len(), 4, "{from}: {unlocated:#?}");
        for c in &unlocated {
            assert_eq!((c["start"].as_u64(), c["end"].as_u64()), (Some(0), Some(0)));
            let why = c["not_found"].as_str().unwrap_or_default();
            assert!(
                why == "in no document of the corpus" || why.starts_with("not in `"),
                "{from}: {c}"
            );
        }
        // A located context carries neither field.
        let located = all.iter().find(|c| c.get("located").is_none()).unwrap();
        assert!(located.get("not_found").is_none(), "{from}: {located}");
    };
    check(contexts(&v), "score --json");
    let (ok, record, err) = rag_eval_with(&["runs", "show", "latest", "--json"], store);
    assert!(ok, "{err}");
    let record: Value = serde_json::from_str(&record).unwrap();
    check(contexts(&record["result"]), "the run record");

    let page = dir.path().join("report.html");
    report(&["latest", "--store", store, "-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("not found in the corpus (").count(),
        4,
        "four contexts"
    );
    assert!(!html.contains(" 0–0</span>"), "no context placed at 0–0");
}

/// What of the page does not fit the window: the page wider than it, a run's Δ and p or a
/// question's text beyond its right edge, a context's line cut, a histogram's title longer
/// than its chart. Empty when all fits.
pub(crate) const OVERFLOW: &str = r#"(() => {
  const w = document.documentElement.clientWidth, out = [];
  if (document.documentElement.scrollWidth > w) out.push('page ' + document.documentElement.scrollWidth);
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const right = (sel) => document.querySelectorAll(sel).forEach(e => {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > w + 0.5) out.push(sel + ' ' + Math.round(r.right));
  });
  right('#metric-table span[data-p]');
  right('#query-table td:nth-child(3)');
  document.querySelectorAll('#query-table .passage, #query-table blockquote').forEach(e => {
    if (e.scrollWidth > e.clientWidth + 1) out.push('cut ' + e.textContent.slice(0, 30));
  });
  document.querySelectorAll('#histograms figure').forEach(f => {
    const svg = f.querySelector('svg');
    if (!svg || svg.getBoundingClientRect().width === 0) return;
    const limit = svg.getBoundingClientRect().right;
    f.querySelectorAll('figcaption').forEach(c => {
      if (c.scrollWidth > c.clientWidth + 1 || c.getBoundingClientRect().right > limit + 0.5)
        out.push('title ' + c.textContent);
    });
    svg.querySelectorAll('text.caption').forEach(t => {
      const b = t.getBBox();
      if (b.x + b.width > svg.viewBox.baseVal.width) out.push('title ' + t.textContent);
    });
  });
  return out.join('\n');
})()"#;

/// At a phone's 390 px the second run's Δ and p, the questions and the answers' contexts fit
/// the window (wide tables scroll inside themselves); at 1280 px every histogram's title fits
/// its chart, however long the run's label.
#[test]
fn the_report_fits_a_phone_and_long_labels_fit_their_charts() {
    let Some(browser) = chromium() else {
        return;
    };
    let dir = temp();
    let (a, b) = runs(dir.path());
    let long = |from: &Path, name: &str| {
        let to = dir.path().join(format!("{name}.json"));
        std::fs::copy(from, &to).unwrap();
        to.to_str().unwrap().to_owned()
    };
    // Labels as `eval` gives them: a chunker's spec, with no place to break a line.
    let a = long(&a, "recursive:size=400,overlap=0,separators=langchain");
    let b = long(&b, "recursive:size=200,overlap=0,separators=langchain");
    let retrieval = dir.path().join("retrieval.html");
    report(&[&a, &b, "-o", retrieval.to_str().unwrap()]);
    // Two runs that answered, for the answers and their contexts.
    let answered = |name: &str| {
        let (ok, out, err) = rag_eval(&[
            "score",
            "--dataset",
            "examples/data/questions.jsonl",
            "--answers",
            "examples/data/answers.jsonl",
            "--corpus",
            "examples/data/corpus",
            "--json",
        ]);
        assert!(ok, "{err}");
        let path = dir.path().join(format!("{name}.json"));
        std::fs::write(&path, out).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let answers = dir.path().join("answers.html");
    let (c, d) = (answered("answers-a"), answered("answers-b"));
    report(&[&c, &d, "-o", answers.to_str().unwrap()]);
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../reports");
    std::fs::create_dir_all(&shots).unwrap();
    for width in [390, 1280] {
        let mut b = cdp::Browser::launch(&browser, width, 2400);
        for page in [&retrieval, &answers] {
            b.open(&format!("file://{}", page.display()));
            let name = page.file_stem().unwrap().to_str().unwrap();
            let overflow = b.eval(OVERFLOW);
            let shot = shots.join(format!("{name}-{width}.png"));
            std::fs::write(&shot, b.screenshot()).unwrap();
            assert_eq!(
                overflow,
                "",
                "{name} at {width} px (see {})",
                shot.display()
            );
            if page == &retrieval {
                // The titles checked are those of the long labels.
                let titles = b.eval(
                    "[...document.querySelectorAll('#histograms figcaption')]\
                     .filter(c => c.textContent.includes('separators=langchain')).length",
                );
                assert!(titles.as_u64() > Some(0), "{titles}");
            }
        }
        // The checks found what they look for.
        let found = b.eval("document.querySelectorAll('#query-table .passage').length");
        assert!(found.as_u64() > Some(40), "{found}");
    }
}
