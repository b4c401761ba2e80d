//! Reports that show answers: `eval --answers` runs of the bundled example against a scripted
//! generator and judge, rendered by `rag-eval report` (a retrieval run, an answer run, and a
//! comparison of two answer runs), checked in the page and, with `RAG_EVAL_CHROMIUM` set
//! (`.ci/chromium.sh`), opened in headless Chromium and photographed at 1,400 and 800 pixels
//! wide under `target/reports/` for a person to look at.

use crate::reports::headless;
use crate::support;

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::chat::{chat_server, completion, first_passage_words, Chat};
use support::TestServer;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn rag_eval(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args)
        .env("RAG_EVAL_RUNS", "off")
        .env_remove("OPENAI_API_KEY")
        .current_dir(REPO)
        .output()
        .expect("rag-eval runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The generator answers with the start of its first passage and a claim no passage makes;
/// faithfulness finds the first statement supported by passage 1 (quoting it) and the second
/// not; answer_match says the answer matches when it is about the reference's first word.
fn scripted() -> TestServer {
    chat_server(|c: &Chat| {
        let prompt = &c.prompt;
        let content = match c.schema.as_str() {
            "" => match first_passage_words(prompt) {
                Some(words) => format!("{words}. It also runs on the moon."),
                None => "I do not know.".to_owned(),
            },
            "faithfulness" => {
                let answer = prompt.rsplit("Answer: ").next().unwrap_or("").trim();
                match (answer.split_once(". It also"), first_passage_words(prompt)) {
                    (Some((claim, _)), Some(quote)) => json!({"statements": [
                        {"statement": claim, "verdict": "supported", "context": 1,
                         "evidence": quote, "reason": "passage 1 says it in these words"},
                        {"statement": "It runs on the moon.", "verdict": "not_supported",
                         "context": 0, "evidence": "", "reason": "no passage mentions the moon"}]})
                    .to_string(),
                    _ => json!({"statements": []}).to_string(),
                }
            }
            "answer_match" => {
                let matches = prompt.len().is_multiple_of(2);
                json!({"reason": if matches { "it gives the same fact" } else { "it answers something else" },
                       "matches": matches})
                .to_string()
            }
            other => panic!("unexpected judge {other}"),
        };
        completion(&content, (100, 10))
    })
}

/// The bundled questions, each with its first relevant span's text as the reference answer.
fn dataset_with_references(dir: &Path) -> PathBuf {
    let text =
        std::fs::read_to_string(Path::new(REPO).join("examples/data/questions.jsonl")).unwrap();
    let rows: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let reference = v["outputs"]["relevant_spans"][0]["text"].clone();
            v["outputs"]["reference_answer"] = reference;
            v.to_string()
        })
        .collect();
    let path = dir.join("questions.jsonl");
    std::fs::write(&path, rows.join("\n") + "\n").unwrap();
    path
}

/// `eval --json` of the bundled example with chunks of `size`, answered and judged when
/// `server` is given; written to `name` in `dir`.
fn eval(dir: &Path, name: &str, size: u32, server: Option<&TestServer>) -> PathBuf {
    let dataset = dataset_with_references(dir);
    let chunker = format!("recursive:size={size},overlap=0");
    let url = server.map(|s| s.url("/v1"));
    let mut args = vec![
        "eval",
        "--corpus",
        "examples/data/corpus",
        "--dataset",
        dataset.to_str().unwrap(),
        "--chunker",
        &chunker,
        "--json",
    ];
    if let Some(url) = &url {
        args.extend([
            "--answers",
            "--model",
            "gen-m",
            "--base-url",
            url,
            "--judge-model",
            "judge-m",
            "--judges",
            "faithfulness,answer_match",
        ]);
    }
    let path = dir.join(name);
    std::fs::write(&path, rag_eval(&args)).unwrap();
    path
}

fn report(runs: &[&Path], out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["report"];
    args.extend(runs.iter().map(|p| p.to_str().unwrap()));
    args.extend(["-o", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    rag_eval(&args);
    std::fs::read_to_string(out).unwrap()
}

/// The part of `html` from the element with `id` to the end of its section.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let at = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}"));
    let end = html[at..].find("</section>").map_or(html.len(), |e| at + e);
    &html[at..end]
}

#[test]
fn an_answer_run_shows_answers_statements_support_and_answer_metrics() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let server = scripted();
    let retrieval = eval(dir.path(), "retrieval.json", 400, None);
    let answers = eval(dir.path(), "answers-400.json", 400, Some(&server));
    let answers_200 = eval(dir.path(), "answers-200.json", 200, Some(&server));
    let pages = [
        (
            "retrieval",
            report(&[&retrieval], &dir.path().join("retrieval.html"), &[]),
        ),
        (
            "answers",
            report(&[&answers], &dir.path().join("answers.html"), &[]),
        ),
        (
            "comparison",
            report(
                &[&answers, &answers_200],
                &dir.path().join("comparison.html"),
                &[],
            ),
        ),
    ];
    let answer_page = &pages[1].1;

    // Answer metrics in the charts and the by-difficulty table, retrieval ones too.
    let difficulty = section(answer_page, "difficulty");
    for metric in ["span_recall@5", "faithfulness", "answer_match", "token_f1"] {
        assert!(
            difficulty.contains(&format!("<th>{metric}</th>")),
            "{metric}"
        );
    }
    let metrics = section(answer_page, "metrics");
    assert!(metrics.contains("class=\"caption\">Means with 95% bootstrap intervals<"));
    assert!(
        metrics.contains(">faithfulness</text>"),
        "faithfulness in the chart"
    );
    // Round ticks only: 0.0, 0.2, … never 0.89.
    for tick in metrics.split("class=\"tick\" text-anchor=\"end\">").skip(1) {
        let v = &tick[..tick.find('<').unwrap()];
        assert!(v.len() <= 4, "tick {v}");
    }
    // The retrieval run shows no answer metric and no answer.
    let retrieval_page = &pages[0].1;
    assert!(!section(retrieval_page, "difficulty").contains("faithfulness"));
    assert!(!retrieval_page.contains("class=\"answer\""));

    // Per query: the answer, each statement marked and linked to the characters that support
    // it, the judge's reasons, the reference.
    let queries = section(answer_page, "queries");
    assert!(queries.contains("<blockquote class=\"answer\">"));
    assert!(queries.contains("<blockquote class=\"reference\">A 64-bit Linux host"));
    let supported = queries
        .find("<li class=\"supported\">✓")
        .expect("a supported statement");
    let link = &queries[supported..supported + 600];
    assert!(link.contains("passage 1 says it in these words"), "{link}");
    let href = link.find("<a href=\"#q0-r0-c0\">context 1, characters ");
    assert!(href.is_some(), "{link}");
    assert!(queries.contains("<li class=\"unsupported\">✗ It runs on the moon. <span class=\"reason\">— no passage mentions the moon</span>"));
    let context = &queries[queries
        .find("<div id=\"q0-r0-c0\">")
        .expect("the context anchor")..];
    let context = &context[..context.find("</div></div>").unwrap()];
    assert!(
        context.contains("<mark>"),
        "supporting characters marked: {context}"
    );
    assert!(
        queries.contains("it gives the same fact") || queries.contains("it answers something else")
    );
    // The query table: short run names with the whole label on hover.
    let comparison = section(&pages[2].1, "queries");
    let head = &comparison[..comparison.find("</thead>").unwrap()];
    assert!(head.contains("R1<br>faithfulness"), "{head}");
    assert!(head.contains("R2<br>span_recall@5"), "{head}");
    assert!(
        head.contains("title=\"answers-200: faithfulness\""),
        "{head}"
    );
    assert_eq!(head.matches("</th>").count(), 3 + 2 * 4, "{head}");

    // --metric chooses what is shown; an unknown one is an error naming those there are.
    let chosen = report(
        &[&answers],
        &dir.path().join("chosen.html"),
        &["--metric", "faithfulness"],
    );
    let d = section(&chosen, "difficulty");
    assert!(d.contains("<th>faithfulness</th>") && !d.contains("<th>span_recall@5</th>"));
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["report", answers.to_str().unwrap(), "--metric", "nope"])
        .env("RAG_EVAL_RUNS", "off")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--metric `nope`: no run has it"),
        "{err}"
    );

    // In a browser: no console errors, and screenshots at two widths.
    let Some(browser) = std::env::var("RAG_EVAL_CHROMIUM")
        .ok()
        .filter(|p| !p.is_empty())
    else {
        eprintln!("skipped the browser: RAG_EVAL_CHROMIUM is not set (source .ci/chromium.sh)");
        return;
    };
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../reports");
    std::fs::create_dir_all(&shots).unwrap();
    for (name, html) in &pages {
        // The first query opened, so that its answer shows.
        let opened = html.replacen("<details>", "<details open>", 1);
        let page = dir.path().join(format!("{name}-open.html"));
        std::fs::write(&page, &opened).unwrap();
        let (dom, log) = headless(&browser, &page, &["--hide-scrollbars", "--dump-dom"]);
        let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
        assert!(console.is_empty(), "{name}: console messages: {console:#?}");
        assert!(dom.contains("data-ready=\"yes\""), "{name}: the script ran");
        // The query table alone: every section before it hidden.
        let queries = dir.path().join(format!("{name}-queries.html"));
        let hide = "<style>section:not(#queries){display:none}</style></head>";
        std::fs::write(&queries, opened.replacen("</head>", hide, 1)).unwrap();
        for width in [1400, 800] {
            for (part, page) in [("top", &page), ("queries", &queries)] {
                let shot = shots.join(format!("{name}-{width}-{part}.png"));
                let _ = std::fs::remove_file(&shot);
                let size = format!("--window-size={width},2000");
                let arg = format!("--screenshot={}", shot.display());
                headless(&browser, page, &["--hide-scrollbars", &size, &arg]);
                let png = std::fs::read(&shot).expect("a screenshot");
                assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{name}");
                eprintln!("screenshot: {}", shot.canonicalize().unwrap().display());
            }
        }
    }
}
