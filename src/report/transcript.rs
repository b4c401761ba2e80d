//! A conversation shown as its transcript: user, assistant and tool turns in order, each
//! assistant turn's tool calls with their arguments, its contexts (their place in the corpus,
//! or why they have none), each judge's verdicts on the turn (supported statements linked to
//! the characters that support them, marked in the context) and the turn's figures; above it,
//! the conversation's own figures and judgements. The report's conversations section and the
//! labelling page of `rag-eval serve` draw the same transcript.

use super::passage::{judgements, passage_with, swatch, PASSAGE_STYLE};
use super::Report;
use crate::escape::html as esc;
use crate::metrics::{Figures, QueryResult, Role, TurnResult};
use std::fmt::Write as _;

/// The transcript's own rules, for a page that already has the passage rules. Everything
/// wraps: a long argument, id or line of a tool's result breaks rather than widening the page
/// of a phone.
pub(super) const TRANSCRIPT_STYLE: &str = r#"
ol.transcript{list-style:none;padding:0;margin:8px 0}
.turn{border-left:4px solid #ccc;padding:4px 10px;margin:8px 0;background:#fafafa;overflow-wrap:anywhere;min-width:0}
.turn.user{border-left-color:#4269d0;background:#f6f8ff}.turn.assistant{border-left-color:#3ca951;background:#f7fbf7}
.turn.tool{border-left-color:#b45309;background:#fffaf2}
.who{font:600 12px system-ui,sans-serif;color:#444}.who .muted{font-weight:400}
.said{white-space:pre-wrap;margin:2px 0}
pre.args,pre.result{white-space:pre-wrap;overflow-wrap:anywhere;font:12px/1.4 ui-monospace,monospace;margin:2px 0 6px;background:#fff;border:1px solid #e4e4e4;padding:4px 6px}
.call{margin:4px 0}.call code{font-weight:600}
.figs{display:flex;flex-wrap:wrap;gap:2px 14px;margin:4px 0;font-size:12px}.figs b{font-variant-numeric:tabular-nums}
.turn .passage{overflow-wrap:anywhere}
details.conversation{border:1px solid #ddd;border-radius:6px;padding:4px 12px;margin:10px 0}
details.conversation>summary{font-weight:600;overflow-wrap:anywhere}
"#;

/// Everything a page needs to show a transcript: the passage and verdict rules the report's
/// answer pages use, and the transcript's own.
#[cfg_attr(not(feature = "serve"), allow(dead_code))]
pub(crate) fn style() -> String {
    format!("{PASSAGE_STYLE}{TRANSCRIPT_STYLE}")
}

/// `figures` as a wrapping line of `name value`; nothing when there is none.
pub(crate) fn figures(s: &mut String, figures: &Figures) {
    if figures.is_empty() {
        return;
    }
    s.push_str("<div class=\"figs\">");
    for (name, v) in &figures.0 {
        // Four decimals, as every table of the report writes a figure.
        let _ = write!(s, "<span>{} <b>{v:.4}</b></span>", esc(name));
    }
    s.push_str("</div>");
}

/// The conversation's own figures and judgements (goal accuracy with its reason, …).
pub(crate) fn summary(s: &mut String, q: &QueryResult) {
    figures(s, &q.metrics);
    judgements(s, &q.judges, &[], &mut [], &|_| String::new());
}

/// The turns of `q`, in order. `prefix` makes the anchors of the contexts unique on the page
/// (`{prefix}-t{turn}-c{context}`).
pub(crate) fn turns(s: &mut String, q: &QueryResult, prefix: &str) {
    s.push_str("<ol class=\"transcript\">");
    for (t, turn) in q.turns.iter().enumerate() {
        one_turn(s, t, turn, prefix);
    }
    s.push_str("</ol>");
}

fn one_turn(s: &mut String, t: usize, turn: &TurnResult, prefix: &str) {
    let role = turn.role.as_str();
    let answers = match (&turn.role, &turn.tool_call_id) {
        (Role::Tool, Some(id)) => format!(
            " <span class=\"muted\">answers <code>{}</code></span>",
            esc(id)
        ),
        _ => String::new(),
    };
    let _ = write!(
        s,
        "<li class=\"turn {role}\"><div class=\"who\">{} · {role}{answers}</div>",
        t + 1
    );
    if !turn.content.is_empty() {
        match turn.role {
            // A tool's result is often JSON or a table: kept as written.
            Role::Tool => {
                let _ = write!(s, "<pre class=\"result\">{}</pre>", esc(&turn.content));
            }
            _ => {
                let _ = write!(s, "<div class=\"said\">{}</div>", esc(&turn.content));
            }
        }
    }
    for call in &turn.tool_calls {
        let args = serde_json::to_string_pretty(&serde_json::Value::Object(call.args.clone()))
            .unwrap_or_default();
        let _ = write!(
            s,
            "<div class=\"call\">calls <code>{}</code>{}<pre class=\"args\">{}</pre></div>",
            esc(&call.name),
            call.id
                .as_deref()
                .map(|id| format!(" <span class=\"muted\">as <code>{}</code></span>", esc(id)))
                .unwrap_or_default(),
            esc(&args)
        );
    }
    if let Some(reference) = &turn.reference_answer {
        let _ = write!(
            s,
            "<blockquote class=\"reference\"><span class=\"where\">reference answer</span><br>{}</blockquote>",
            esc(reference)
        );
    }
    figures(s, &turn.metrics);
    let contexts = turn.contexts.as_deref().unwrap_or_default();
    let anchor = |c: usize| format!("{prefix}-t{t}-c{c}");
    let mut marks: Vec<Vec<(usize, usize)>> = vec![Vec::new(); contexts.len()];
    judgements(s, &turn.judges, contexts, &mut marks, &anchor);
    match &turn.contexts {
        None => {}
        Some(c) if c.is_empty() => s.push_str("<p class=\"muted\">retrieved nothing</p>"),
        Some(_) => s.push_str("<h4>Contexts</h4>"),
    }
    for (c, p) in contexts.iter().enumerate() {
        let mut m = marks[c].clone();
        m.sort_unstable();
        let hit = turn.truth.as_ref().is_some_and(|truth| truth.is_hit(p));
        let _ = write!(s, "<div id=\"{}\">", anchor(c));
        passage_with(s, p, Some(c + 1), &m, hit);
        s.push_str("</div>");
    }
    s.push_str("</li>");
}

/// The first user turn of a conversation: what the report's query table shows as its
/// question.
pub(super) fn opening(q: &QueryResult) -> Option<&str> {
    q.turns
        .iter()
        .find(|t| t.role == Role::User)
        .map(|t| t.content.as_str())
}

/// The report's conversations section: per conversation id (in the query table's order, whose
/// rows link here), each run's figures, judgements and transcript, one run after another. The
/// first conversation is open; nothing when no run holds a transcript.
pub(super) fn section(s: &mut String, report: &Report) {
    let rows = report.queries();
    let has_turns =
        |row: &[Option<&QueryResult>]| row.iter().flatten().any(|q| !q.turns.is_empty());
    if !rows.iter().any(|(_, row)| has_turns(row)) {
        return;
    }
    s.push_str("<section id=\"conversations\"><h2>Conversations</h2>");
    let mut first = true;
    for (n, (id, row)) in rows.iter().enumerate() {
        if !has_turns(row) {
            continue;
        }
        let turns_of = row
            .iter()
            .flatten()
            .map(|q| q.turns.len())
            .max()
            .unwrap_or(0);
        let _ = write!(
            s,
            "<details class=\"conversation\" id=\"conv-{n}\"{}><summary>{} <span class=\"muted\">· {turns_of} turns</span></summary>",
            if first { " open" } else { "" },
            esc(id)
        );
        first = false;
        for (i, q) in row.iter().enumerate() {
            let Some(q) = q else { continue };
            if report.runs.len() > 1 {
                let _ = write!(
                    s,
                    "<h3>{}{} {}</h3>",
                    swatch(i),
                    Report::short_label(i),
                    esc(&report.runs[i].0)
                );
            }
            summary(s, q);
            if q.turns.is_empty() {
                s.push_str("<p class=\"muted\">no transcript recorded</p>");
            }
            turns(s, q, &format!("conv-{n}-r{i}"));
        }
        s.push_str("</details>\n");
    }
    s.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::PositionAwareChunkId;
    use crate::locate::MatchKind;
    use crate::metrics::tool_calls::ToolCall;
    use crate::metrics::{
        JudgeDetails, JudgeSample, JudgeStatus, Passage, QueryJudgement, Statement, Support, Truth,
    };
    use crate::span::CharSpan;

    fn judged(metric: &str, score: Option<f64>, details: JudgeDetails) -> QueryJudgement {
        QueryJudgement {
            metric: metric.into(),
            query_id: "c1".into(),
            samples: vec![JudgeSample {
                sample: 0,
                status: if score.is_some() {
                    JudgeStatus::Ok
                } else {
                    JudgeStatus::Invalid
                },
                score,
                details,
                message: None,
                kind: None,
                usage: Default::default(),
            }],
        }
    }

    /// A user turn, an assistant turn calling a tool with markup in its arguments, the tool's
    /// result, and an answer resting on two contexts (one not found in the corpus) with one
    /// supported and one unsupported statement.
    fn conversation() -> QueryResult {
        let mut call = ToolCall::new(
            "search",
            serde_json::json!({"q": "<b>larkspur</b>", "k": 3}),
        );
        call.id = Some("call_1".into());
        let mut asks = TurnResult::new(Role::Assistant, "");
        asks.tool_calls = vec![call];
        let mut result = TurnResult::new(Role::Tool, "{\"hits\": 2}");
        result.tool_call_id = Some("call_1".into());
        let mut answer = TurnResult::new(Role::Assistant, "Larkspur blooms in June & July.");
        let context = Passage {
            doc_id: "garden.md".into(),
            start: 100,
            end: 140,
            text: Some("Larkspur <flowers> bloom in June.".into()),
            located: true,
            not_found: None,
        };
        answer.truth = Some(Truth::Spans(vec![Passage {
            text: None,
            ..context.clone()
        }]));
        answer.contexts = Some(vec![
            context,
            Passage {
                doc_id: String::new(),
                start: 0,
                end: 0,
                text: Some("a pasted note".into()),
                located: false,
                not_found: Some("in no document of the corpus".into()),
            },
        ]);
        answer.reference_answer = Some("In June.".into());
        answer.metrics = Figures(vec![("faithfulness".into(), 0.5)]);
        let statement = |text: &str, support: Option<Support>| Statement {
            text: text.into(),
            supported: support.is_some(),
            unlocated: false,
            reason: "r".into(),
            evidence: String::new(),
            support,
        };
        answer.judges = vec![judged(
            "faithfulness",
            Some(0.5),
            JudgeDetails::Faithfulness {
                statements: vec![
                    statement(
                        "It blooms in June.",
                        Some(Support {
                            context: 0,
                            chunk_id: PositionAwareChunkId::new(&"garden.md".into(), 100, 140, "x"),
                            span: CharSpan::new("garden.md", 119, 132),
                            kind: MatchKind::Exact,
                            score: 1.0,
                        }),
                    ),
                    statement("It blooms in July.", None),
                ],
            },
        )];
        QueryResult {
            id: "c1".into(),
            metrics: Figures(vec![("tool_call_accuracy".into(), 1.0)]),
            judges: vec![judged(
                "goal_accuracy",
                Some(0.0),
                JudgeDetails::Criteria {
                    verdict: "fail".into(),
                    reason: "the user wanted <both> months".into(),
                    probabilities: None,
                    scale: None,
                },
            )],
            turns: vec![
                TurnResult::new(Role::User, "When does <larkspur> bloom?"),
                asks,
                result,
                answer,
            ],
            ..QueryResult::default()
        }
    }

    #[test]
    fn a_transcript_shows_turns_calls_contexts_and_verdicts_escaped() {
        let q = conversation();
        let mut s = String::new();
        summary(&mut s, &q);
        turns(&mut s, &q, "x");
        for shown in [
            // The conversation's figure and its judge's verdict with the reason.
            "tool_call_accuracy <b>1.0000</b>",
            "<b>goal_accuracy</b> <span class=\"score-low\">0.00</span>",
            "fail: the user wanted &lt;both&gt; months",
            // Each turn, its role, escaped.
            "<li class=\"turn user\"><div class=\"who\">1 · user</div><div class=\"said\">When does &lt;larkspur&gt; bloom?</div>",
            // The call with its id and arguments as pretty JSON, escaped.
            "calls <code>search</code> <span class=\"muted\">as <code>call_1</code></span><pre class=\"args\">{\n  &quot;k&quot;: 3,\n  &quot;q&quot;: &quot;&lt;b&gt;larkspur&lt;/b&gt;&quot;\n}</pre>",
            // The tool's result, and the call it answers.
            "3 · tool <span class=\"muted\">answers <code>call_1</code></span></div><pre class=\"result\">{&quot;hits&quot;: 2}</pre>",
            "reference answer</span><br>In June.",
            "faithfulness <b>0.5000</b>",
            // The supported statement links to its characters, which are marked; the other
            // is unsupported.
            "<a href=\"#x-t3-c0\">context 1, characters 119–132</a>",
            "<li class=\"unsupported\">✗ It blooms in July.",
            "<div id=\"x-t3-c0\"><div class=\"passage hit\"><span class=\"where\">#1 garden.md 100–140 · relevant</span>\nLarkspur &lt;flowers&gt; <mark>bloom in June</mark>.</div>",
            // A context not found in the corpus says so instead of 0–0.
            "not found in the corpus (in no document of the corpus)",
        ] {
            assert!(s.contains(shown), "{shown}\n---\n{s}");
        }
        assert!(!s.contains("<larkspur>") && !s.contains("<both>"));
        // A turn that did not retrieve shows no contexts; one that retrieved nothing says so.
        assert_eq!(s.matches("<h4>Contexts</h4>").count(), 1);
        let mut empty = q.clone();
        empty.turns[3].contexts = Some(Vec::new());
        let mut t = String::new();
        turns(&mut t, &empty, "x");
        assert!(t.contains("retrieved nothing"));
    }
}
