//! Conversation runs where people see them: kept by the run store and shown by `runs`,
//! compared conversation by conversation, drawn as transcripts in the HTML report (fitting a
//! phone's width and a desktop's in headless Chromium, with `RAG_EVAL_CHROMIUM` set) and on
//! `serve`'s labelling page, whose labels are keyed by conversation id and read by `align`.

use crate::reports::OVERFLOW;
use crate::serve::{post_form, request, spawn};
use crate::support::cdp;
use rag_eval::compare::{CompareError, CompareOptions, Comparison};
use rag_eval::metrics::tool_calls::ToolCall;
use rag_eval::metrics::{
    Figures, JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage, Passage, QueryJudgement,
    QueryResult, ResultLevel, Role, RunResult, Statement, Support, Truth, TurnResult,
};
use rag_eval::runs::{RunRecord, RunStore, SqliteRunStore};
use rag_eval::serve::LabelFile;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

fn sample(score: f64, details: JudgeDetails) -> JudgeSample {
    JudgeSample {
        sample: 0,
        status: JudgeStatus::Ok,
        score: Some(score),
        details,
        message: None,
        kind: None,
        usage: JudgeUsage::default(),
    }
}

/// A conversation `id` with an agent that looks a plant up and answers: the user's question,
/// a call of `search` (arguments with markup and a long unbroken value), the tool's result, an
/// answer resting on a located context (one statement supported by its characters 9–23, one
/// not) and a pasted one found in no document; then a follow-up and its answer. `accuracy` is
/// its `tool_call_accuracy`; `goal` its goal accuracy, with a reason.
fn conversation(id: &str, accuracy: f64, goal: bool) -> QueryResult {
    let mut call = ToolCall::new(
        "search",
        serde_json::json!({"query": "<b>larkspur</b> bloom", "filters": {"path": "garden/perennials/delphinium-consolida-ajacis-annual-larkspur-flowering-calendar.md"}}),
    );
    call.id = Some(format!("{id}-call-1"));
    let mut asks = TurnResult::new(Role::Assistant, "");
    asks.tool_calls = vec![call];
    let mut result = TurnResult::new(
        Role::Tool,
        "{\"hits\": [{\"doc\": \"garden.md\", \"score\": 0.93}]}",
    );
    result.tool_call_id = Some(format!("{id}-call-1"));
    let located = Passage {
        doc_id: "garden.md".into(),
        start: 0,
        end: 40,
        text: Some("Larkspur blooms in June <and> July here.".into()),
        located: true,
        not_found: None,
    };
    let mut answer = TurnResult::new(
        Role::Assistant,
        "Larkspur blooms in June and July; it likes full sun.",
    );
    answer.truth = Some(Truth::Spans(vec![Passage {
        text: None,
        ..located.clone()
    }]));
    answer.contexts = Some(vec![
        located,
        Passage {
            doc_id: String::new(),
            start: 0,
            end: 0,
            text: Some("A note pasted from a forum: sow in autumn.".into()),
            located: false,
            not_found: Some("in no document of the corpus".into()),
        },
    ]);
    answer.reference_answer = Some("In June and July.".into());
    answer.metrics = Figures(vec![("faithfulness".into(), 0.5)]);
    let statement = |text: &str, support: Option<Support>| Statement {
        text: text.into(),
        supported: support.is_some(),
        unlocated: false,
        reason: if support.is_some() {
            "the context gives the months".into()
        } else {
            "no context speaks of sun <or> shade".into()
        },
        evidence: String::new(),
        support,
    };
    let supported = Support {
        context: 0,
        chunk_id: serde_json::from_value(serde_json::json!("pa_chunk_0000000000000000")).unwrap(),
        span: rag_eval::span::CharSpan::new("garden.md", 9, 23),
        kind: rag_eval::locate::MatchKind::Exact,
        score: 1.0,
    };
    answer.judges = vec![QueryJudgement {
        metric: "faithfulness".into(),
        query_id: id.into(),
        samples: vec![sample(
            0.5,
            JudgeDetails::Faithfulness {
                statements: vec![
                    statement("Larkspur blooms in June and July.", Some(supported)),
                    statement("It likes full sun.", None),
                ],
            },
        )],
    }];
    let goal_score = if goal { 1.0 } else { 0.0 };
    QueryResult {
        id: id.into(),
        metrics: Figures(vec![
            ("tool_call_accuracy".into(), accuracy),
            ("tool_call_f1".into(), accuracy),
            ("steps".into(), 3.0),
            ("faithfulness".into(), 0.5),
            ("goal_accuracy".into(), goal_score),
        ]),
        judges: vec![QueryJudgement {
            metric: "goal_accuracy".into(),
            query_id: id.into(),
            samples: vec![sample(
                goal_score,
                JudgeDetails::Criteria {
                    verdict: if goal { "pass" } else { "fail" }.into(),
                    reason: format!("{id}: the user learnt when <larkspur> blooms"),
                    probabilities: None,
                    scale: None,
                },
            )],
        }],
        turns: vec![
            TurnResult::new(Role::User, "When does <larkspur> bloom?"),
            asks,
            result,
            answer,
            TurnResult::new(Role::User, "And should I water it daily?"),
            TurnResult::new(Role::Assistant, "Water it when the soil is dry."),
        ],
        ..QueryResult::default()
    }
}

const METRICS: [&str; 5] = [
    "tool_call_accuracy",
    "tool_call_f1",
    "steps",
    "faithfulness",
    "goal_accuracy",
];

/// A conversation run over `ids`, conversation `i` with `tool_call_accuracy` `accuracy(i)`.
fn conversation_run(ids: &[&str], accuracy: impl Fn(usize) -> f64) -> RunResult {
    let per_query = ids
        .iter()
        .enumerate()
        .map(|(i, id)| conversation(id, accuracy(i), i % 2 == 0))
        .collect();
    let mut run = RunResult::from_queries(
        ResultLevel::Conversation,
        METRICS.map(String::from).to_vec(),
        per_query,
    );
    run.dataset_hash = Some("c0ffee00c0ffee00".into());
    run
}

const IDS: [&str; 6] = [
    "trip-1", "trip-2", "trip-3", "garden-1", "garden-2", "garden-3",
];

fn rag_eval(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(args)
        .env("RAG_EVAL_RUNS", "off")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn utf8(path: std::path::PathBuf) -> camino::Utf8PathBuf {
    camino::Utf8PathBuf::from_path_buf(path).unwrap()
}

/// A conversation run is stored and read back whole (every turn, call, context and verdict),
/// and `runs list`, `show` and `export` name its level and count its conversations.
#[test]
fn a_conversation_run_round_trips_through_the_store_and_the_runs_commands() {
    let dir = tempfile::tempdir().unwrap();
    let path = utf8(dir.path().join("runs.sqlite"));
    let store = SqliteRunStore::open(&path).unwrap();
    let run = conversation_run(&IDS, |i| i as f64 / 5.0);
    let mut record = RunRecord::new("score", "conversations.jsonl", run.clone());
    record.label = Some("agent-a".into());
    assert!(store.put(&record).unwrap());
    let back = store.load(record.id.as_str()).unwrap();
    assert_eq!(back.result, run, "the result, transcripts included");
    assert_eq!(back.result.per_query[0].turns.len(), 6);
    let listed = store.list().unwrap();
    assert_eq!(listed[0].level, ResultLevel::Conversation);
    assert_eq!(listed[0].queries, 6);

    let store_arg = path.as_str();
    let table = rag_eval(dir.path(), &["runs", "list", "--store", store_arg]);
    let row = table.lines().nth(1).unwrap();
    assert!(
        row.contains("agent-a") && row.contains("conversation  6"),
        "{table}"
    );
    let shown = rag_eval(
        dir.path(),
        &["runs", "show", "latest", "--store", store_arg],
    );
    assert!(
        shown.contains("conversation-level, 6 conversations\n"),
        "{shown}"
    );
    assert!(shown.contains("tool_call_accuracy"), "{shown}");
    let json = rag_eval(
        dir.path(),
        &["runs", "show", "latest", "--json", "--store", store_arg],
    );
    let shown: RunRecord = RunRecord::from_json(&json).unwrap();
    assert_eq!(shown.result, run);
    // Exported and imported into another store, it is the same run.
    let export = rag_eval(dir.path(), &["runs", "export", "--store", store_arg]);
    let other = dir.path().join("other.sqlite");
    let file = dir.path().join("export.jsonl");
    std::fs::write(&file, export).unwrap();
    rag_eval(
        dir.path(),
        &[
            "runs",
            "import",
            file.to_str().unwrap(),
            "--store",
            other.to_str().unwrap(),
        ],
    );
    let imported = SqliteRunStore::open(utf8(other)).unwrap();
    assert_eq!(imported.load("latest").unwrap().result, run);
}

/// Two conversation runs are paired conversation by conversation, with the statistics of
/// queries; conversations only one run has are counted and one is named.
#[test]
fn compare_pairs_conversations_by_id() {
    let a = conversation_run(&IDS, |_| 0.5);
    // The second run's conversations in another order: pairing is by id, not position.
    let mut reversed = IDS;
    reversed.reverse();
    let b = conversation_run(&reversed, |i| if i < 3 { 1.0 } else { 0.5 });
    let c = Comparison::new(&[("a", &a), ("b", &b)], &CompareOptions::default()).unwrap();
    assert_eq!(c.queries, 6);
    let accuracy = c
        .metrics
        .iter()
        .find(|m| m.metric == "tool_call_accuracy")
        .unwrap();
    assert_eq!(accuracy.runs[0].mean, 0.5);
    // `b` gained 0.5 on the three `garden-*` conversations and nothing on the others.
    let d = &accuracy.vs_baseline[0];
    assert!((d.difference - 0.25).abs() < 1e-12, "{}", d.difference);
    let o = &d.outcome;
    assert_eq!((o.wins, o.ties, o.losses), (3, 3, 0));
    let gained: Vec<&str> = d.most_better.iter().map(|q| q.id.as_str()).collect();
    let mut sorted = gained.clone();
    sorted.sort();
    assert_eq!(sorted, ["garden-1", "garden-2", "garden-3"]);
    let goal = c
        .metrics
        .iter()
        .find(|m| m.metric == "goal_accuracy")
        .unwrap();
    assert_eq!(goal.queries, 6);

    // Mismatched conversations: refused, counted and named, as queries are.
    let short = conversation_run(&IDS[..4], |_| 0.5);
    let extra = conversation_run(
        &["trip-1", "trip-2", "trip-3", "garden-1", "boat-1"],
        |_| 0.5,
    );
    let e =
        Comparison::new(&[("a", &short), ("b", &extra)], &CompareOptions::default()).unwrap_err();
    let CompareError::DifferentQueries {
        only_baseline,
        only_run,
        ref example,
        ..
    } = e
    else {
        panic!("{e}")
    };
    assert_eq!(
        (only_baseline, only_run, example.as_str()),
        (0, 1, "boat-1")
    );
    assert!(e.to_string().contains("`boat-1`"), "{e}");
    // Allowed, the shared conversations are compared.
    let allowed = CompareOptions {
        allow_different_datasets: true,
        ..CompareOptions::default()
    };
    let c = Comparison::new(&[("a", &short), ("b", &extra)], &allowed).unwrap();
    assert_eq!(c.queries, 4);
    assert!(c.datasets_differ);
}

/// `rag-eval report` of two conversation runs: each conversation's figures, goal-accuracy
/// verdict and transcript per run, the query table linking to it; in Chromium nothing
/// overflows a phone's 390 pixels or a desktop's 1,280.
#[test]
fn the_report_shows_each_conversation_as_a_transcript_that_fits_both_widths() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let a = dir.path().join("agent-a.json");
    let b = dir.path().join("agent-b.json");
    let run_a = conversation_run(&IDS, |i| i as f64 / 5.0);
    let run_b = conversation_run(&IDS, |_| 1.0);
    std::fs::write(&a, serde_json::to_string(&run_a).unwrap()).unwrap();
    std::fs::write(&b, serde_json::to_string(&run_b).unwrap()).unwrap();
    let page = dir.path().join("conversations.html");
    rag_eval(
        dir.path(),
        &[
            "report",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "-o",
            page.to_str().unwrap(),
        ],
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let at = html
        .find("<section id=\"conversations\">")
        .expect("the section");
    let section = &html[at..];
    assert_eq!(
        section.matches("<details class=\"conversation\"").count(),
        6
    );
    assert_eq!(section.matches("<li class=\"turn ").count(), 2 * 6 * 6);
    for shown in [
        "<details class=\"conversation\" id=\"conv-0\" open><summary>trip-1",
        "<h3><span class=\"swatch\"",
        // The conversation's figures and its judge's verdict with the reason.
        "tool_call_accuracy <b>0.2000</b>",
        "<b>goal_accuracy</b> <span class=\"score-low\">0.00</span>",
        "fail: trip-2: the user learnt when &lt;larkspur&gt; blooms",
        // The turns: the question, the call with its arguments as escaped, pretty JSON, the
        // tool's result, the answer.
        "<div class=\"said\">When does &lt;larkspur&gt; bloom?</div>",
        "calls <code>search</code> <span class=\"muted\">as <code>trip-1-call-1</code></span><pre class=\"args\">{\n  &quot;filters&quot;: {\n",
        "&quot;query&quot;: &quot;&lt;b&gt;larkspur&lt;/b&gt; bloom&quot;",
        "answers <code>trip-1-call-1</code>",
        // The answer's verdicts, the supported one linked to its characters, marked in the
        // context; the pasted context is not found in the corpus.
        "<a href=\"#conv-0-r0-t3-c0\">context 1, characters 9–23</a>",
        "✗ It likes full sun. <span class=\"reason\">— no context speaks of sun &lt;or&gt; shade</span>",
        "Larkspur <mark>blooms in June</mark> &lt;and&gt; July here.",
        "#1 garden.md 0–40 · relevant",
        "not found in the corpus (in no document of the corpus)",
        "reference answer</span><br>In June and July.",
    ] {
        assert!(section.contains(shown), "{shown}");
    }
    // The query table's row shows the opening question and links to the transcript.
    let table = &html[html.find("id=\"query-table\"").unwrap()..at];
    assert!(table.contains("When does &lt;larkspur&gt; bloom?"));
    assert!(table.contains("<a href=\"#conv-5\">transcript</a>"));
    assert!(table.contains("tool_call_accuracy"), "the headline metric");
    assert!(!html.contains("<larkspur>"));

    let Some(browser) = std::env::var("RAG_EVAL_CHROMIUM")
        .ok()
        .filter(|p| !p.is_empty())
    else {
        eprintln!("skipped the browser: RAG_EVAL_CHROMIUM is not set (source .ci/chromium.sh)");
        return;
    };
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../reports");
    std::fs::create_dir_all(&shots).unwrap();
    // The page beside its screenshots, for a person to look at.
    std::fs::copy(&page, shots.join("conversations.html")).unwrap();
    for width in [390, 1280] {
        let mut b = cdp::Browser::launch(&browser, width, 2400);
        b.open(&format!("file://{}#conv-2", page.display()));
        // The link opened the third conversation.
        assert_eq!(b.eval("document.getElementById('conv-2').open"), true);
        let overflow = b.eval(OVERFLOW);
        let cut = b.eval(
            "[...document.querySelectorAll('#conversations .passage, #conversations pre, #conversations .turn, #conversations .judge')]\
             .filter(e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5)\
             .map(e => e.className + ' ' + e.textContent.slice(0, 30)).join('\\n')",
        );
        let shot = shots.join(format!("conversations-{width}.png"));
        std::fs::write(&shot, b.screenshot()).unwrap();
        assert_eq!(overflow, "", "at {width} px (see {})", shot.display());
        assert_eq!(cut, "", "at {width} px (see {})", shot.display());
        // The checks found what they look for.
        let found = b.eval("document.querySelectorAll('#conversations pre.args').length");
        assert_eq!(found.as_u64(), Some(12));
        assert!(b.console().is_empty(), "{:?}", b.console());
    }
}

/// `serve --labels`: a conversation run's labelling page shows the transcript and labels the
/// conversation's goal accuracy and faithfulness (judged in its turns), saved under the
/// conversation's id, which `align` then reads; the run's report page shows the transcripts.
#[test]
fn serve_labels_conversations_by_id_and_align_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let labels = utf8(dir.path().join("labels.jsonl"));
    let store = SqliteRunStore::open(utf8(dir.path().join("runs.sqlite"))).unwrap();
    let run = conversation_run(&IDS, |i| i as f64 / 5.0);
    let record = RunRecord::new("score", "conversations.jsonl", run.clone());
    store.put(&record).unwrap();
    let id = record.id.as_str().to_owned();
    let (base, _runtime) = spawn(store, Some(Arc::new(LabelFile::open(&labels).unwrap())));

    let (status, _, html) = request("GET", &format!("{base}/runs/{id}/label?q=1"), None);
    assert_eq!(status, 200, "{html}");
    for shown in [
        "Conversation 2 of 6; 0 labelled",
        "<h2>trip-2</h2>",
        "<li class=\"turn user\"><div class=\"who\">1 · user</div><div class=\"said\">When does &lt;larkspur&gt; bloom?</div>",
        "calls <code>search</code>",
        "&quot;query&quot;: &quot;&lt;b&gt;larkspur&lt;/b&gt; bloom&quot;",
        "<a href=\"#t-t3-c0\">context 1, characters 9–23</a>",
        "Larkspur <mark>blooms in June</mark>",
        "tool_call_accuracy <b>0.2000</b>",
        "verdict <b>fail</b>: trip-2: the user learnt when &lt;larkspur&gt; blooms",
        "name=\"label.goal_accuracy\"",
        "name=\"label.faithfulness\"",
        ".turn.tool{",
    ] {
        assert!(html.contains(shown), "{shown}\n---\n{html}");
    }
    // The page beside the report's screenshots, for a person to look at.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../reports");
    std::fs::create_dir_all(&shots).unwrap();
    std::fs::write(shots.join("conversation-label.html"), &html).unwrap();
    // Agent figures no judge made are not labelled in a judged run.
    assert!(!html.contains("name=\"label.tool_call_accuracy\""));

    let url = |q: u32| format!("{base}/runs/{id}/label?q={q}");
    for (q, form) in [
        (
            0,
            "label.goal_accuracy=fail&note.goal_accuracy=never+said+when&go=next",
        ),
        (
            1,
            "label.goal_accuracy=pass&label.faithfulness=score&score.faithfulness=0.25&go=next",
        ),
        (2, "label.goal_accuracy=pass&go=next"),
    ] {
        let (status, location, body) = post_form(&url(q), form);
        assert_eq!(status, 303, "{body}");
        assert_eq!(location, format!("/runs/{id}/label?q={}", q + 1));
    }
    assert_eq!(
        std::fs::read_to_string(&labels).unwrap(),
        "{\"id\":\"trip-1\",\"labels\":{\"goal_accuracy\":0.0},\"notes\":{\"goal_accuracy\":\"never said when\"}}\n\
         {\"id\":\"trip-2\",\"labels\":{\"faithfulness\":0.25,\"goal_accuracy\":1.0}}\n\
         {\"id\":\"trip-3\",\"labels\":{\"goal_accuracy\":1.0}}\n"
    );
    let (_, _, html) = request("GET", &url(3).replace("q=3", "q=0"), None);
    assert!(html.contains("Conversation 1 of 6; 3 labelled"), "{html}");

    // `align --labels` reads them against the conversations' figures.
    let mut labelled = run.clone();
    assert!(rag_eval::align::Labels::load(&labels)
        .unwrap()
        .apply(&mut labelled)
        .is_empty());
    let alignment = rag_eval::align::Alignment::new(&labelled, &Default::default(), None);
    let pairs: Vec<(&str, usize)> = alignment
        .metrics
        .iter()
        .map(|m| (m.metric.as_str(), m.pairs))
        .collect();
    assert_eq!(pairs, [("faithfulness", 1), ("goal_accuracy", 3)]);
    // The judge passed trip-1 and trip-3 and failed trip-2; the person failed trip-1 and
    // passed the other two: one agreement of three.
    let goal = &alignment.metrics[1];
    assert!((goal.accuracy.as_ref().unwrap().value - 1.0 / 3.0).abs() < 1e-12);

    // The run's report page, as `serve` gives it, shows the transcripts.
    let (status, _, report) = request("GET", &format!("{base}/runs/{id}/report"), None);
    assert_eq!(status, 200);
    assert!(report.contains("<section id=\"conversations\">"));
    assert_eq!(report.matches("<li class=\"turn ").count(), 6 * 6);
}
