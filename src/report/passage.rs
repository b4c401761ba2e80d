//! How the report shows a passage (a context with its place in the corpus, or why it has none,
//! its characters marked) and what judges said (statements linked to the characters that support
//! them): the answer pages and the transcripts of conversations draw them alike.

use super::svg;
use crate::escape::html as esc;
use crate::metrics::{Passage, QueryJudgement};
use std::fmt::Write as _;

/// How passages and judges' verdicts look: the answer pages' rules, which transcripts share
/// (also on `serve`'s labelling page).
pub(super) const PASSAGE_STYLE: &str = r#"
.muted{color:#777}
.passage{border-left:3px solid #ccc;padding:2px 8px;margin:4px 0;white-space:pre-wrap;font:12px/1.4 ui-monospace,monospace;background:#fafafa}
.passage.hit{border-left-color:#3ca951}mark{background:#ffe58f;padding:0}
.where{color:#666;font:11px system-ui,sans-serif}.unlocated{color:#b45309}
blockquote{margin:4px 0;padding:4px 10px;border-left:3px solid #4269d0;background:#f6f8ff}
blockquote.reference{border-left-color:#3ca951;background:#f4fbf5}
h4{font-size:13px;margin:8px 0 4px}.judge{margin:6px 0}
ul.statements{margin:2px 0 6px;padding-left:18px}ul.statements li{list-style:none;margin:2px 0}
li.supported{color:#1a7f37}li.unsupported{color:#cf222e}.reason{color:#555}
.status-ok{color:#1a7f37}.score-low{color:#cf222e}.status-undetermined{color:#777}.status-invalid,.status-error{color:#cf222e;font-weight:600}
"#;

/// The square of run `i`'s colour, as the charts draw it.
pub(super) fn swatch(i: usize) -> String {
    format!(
        r#"<span class="swatch" style="background:{}"></span>"#,
        svg::colour(i)
    )
}

/// `text` with the `marks` character ranges wrapped in `<mark>`, everything escaped.
fn highlighted(text: &str, marks: &[(usize, usize)]) -> String {
    let mut out = String::with_capacity(text.len() + 16 * marks.len());
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    for &(a, b) in marks {
        let (a, b) = (a.min(chars.len()), b.min(chars.len()));
        if a < at || a >= b {
            continue;
        }
        out.push_str(&esc(&chars[at..a].iter().collect::<String>()));
        out.push_str("<mark>");
        out.push_str(&esc(&chars[a..b].iter().collect::<String>()));
        out.push_str("</mark>");
        at = b;
    }
    out.push_str(&esc(&chars[at..].iter().collect::<String>()));
    out
}

/// A passage: its rank, document and characters (or why it has none), `relevant` when it is a
/// `hit`, its text with the `marks` (relative to its start) marked.
pub(super) fn passage_with(
    s: &mut String,
    p: &Passage,
    rank: Option<usize>,
    marks: &[(usize, usize)],
    hit: bool,
) {
    // A context given as text and not found has no characters: its place would read 0–0.
    let place = match (p.located, p.not_found.as_deref()) {
        (true, _) => format!("{}–{}", p.start, p.end),
        (false, Some(why)) if why == crate::answers::place::NOT_SEARCHED => {
            format!("<span class=\"unlocated\">not located: {}</span>", esc(why))
        }
        (false, Some(why)) => format!(
            "<span class=\"unlocated\">not found in the corpus ({})</span>",
            esc(why)
        ),
        (false, None) => "<span class=\"unlocated\">not found in the corpus</span>".into(),
    };
    let _ = write!(
        s,
        "<div class=\"passage{}\"><span class=\"where\">{}{} {place}{}</span>\n{}</div>",
        if hit { " hit" } else { "" },
        rank.map(|r| format!("#{r} ")).unwrap_or_default(),
        esc(&p.doc_id),
        if hit { " · relevant" } else { "" },
        p.text
            .as_deref()
            .map(|t| highlighted(t, marks))
            .unwrap_or_else(|| "<span class=\"muted\">(text not recorded)</span>".into())
    );
}

/// The class a judged sample's figure is shown in: an `ok` sample's colour follows its score
/// (below one half reads as a failure, as an answer_match of 0 is), any other its status.
pub(super) fn judged_class(sample: &crate::metrics::JudgeSample) -> String {
    match sample.score {
        Some(v) if v < 0.5 => "score-low".to_owned(),
        _ => format!("status-{}", sample.status.as_str()),
    }
}

/// What a judge found, as a list; supported statements link to the characters that support
/// them, which are added to `marks` (per context, relative to its text).
pub(super) fn judge_details(
    s: &mut String,
    details: &crate::metrics::JudgeDetails,
    contexts: &[Passage],
    marks: &mut [Vec<(usize, usize)>],
    anchor: &dyn Fn(usize) -> String,
) {
    use crate::metrics::JudgeDetails as D;
    let item = |s: &mut String, ok: bool, text: &str, reason: &str, link: String| {
        let _ = write!(
            s,
            "<li class=\"{}\">{} {}{}{}</li>",
            if ok { "supported" } else { "unsupported" },
            if ok { "✓" } else { "✗" },
            esc(text),
            if reason.is_empty() {
                String::new()
            } else {
                format!(" <span class=\"reason\">— {}</span>", esc(reason))
            },
            link
        );
    };
    match details {
        D::Faithfulness { statements } => {
            s.push_str("<ul class=\"statements\">");
            for st in statements {
                let link = match &st.support {
                    Some(sup) => {
                        let p = contexts.get(sup.context);
                        let rel = p.map(|p| {
                            (
                                sup.span.start.saturating_sub(p.start),
                                sup.span.end.saturating_sub(p.start),
                            )
                        });
                        if let (Some(r), Some(m)) = (rel, marks.get_mut(sup.context)) {
                            m.push(r);
                        }
                        format!(
                            " <a href=\"#{}\">context {}, characters {}–{}</a>",
                            anchor(sup.context),
                            sup.context + 1,
                            sup.span.start,
                            sup.span.end
                        )
                    }
                    None if st.supported => {
                        " <span class=\"muted\">(quote not found in the contexts)</span>".into()
                    }
                    None => String::new(),
                };
                item(s, st.supported, &st.text, &st.reason, link);
            }
            s.push_str("</ul>");
        }
        D::AnswerRelevancy {
            questions,
            noncommittal,
        } => {
            s.push_str("<ul class=\"statements\">");
            for q in questions {
                let _ = write!(
                    s,
                    "<li>{} <span class=\"muted\">cosine {:.2}</span></li>",
                    esc(&q.question),
                    q.cosine
                );
            }
            if *noncommittal {
                s.push_str("<li class=\"unsupported\">noncommittal</li>");
            }
            s.push_str("</ul>");
        }
        D::ContextPrecision { verdicts } => {
            s.push_str("<ul class=\"statements\">");
            for v in verdicts {
                let text = format!("context {}", v.context + 1);
                item(s, v.useful, &text, &v.reason, String::new());
            }
            s.push_str("</ul>");
        }
        D::ContextRecall { statements } => {
            s.push_str("<ul class=\"statements\">");
            for st in statements {
                item(s, st.attributed, &st.text, &st.reason, String::new());
            }
            s.push_str("</ul>");
        }
        D::AnswerMatch { matches, reason } => {
            s.push_str("<ul class=\"statements\">");
            let text = if *matches {
                "matches"
            } else {
                "does not match"
            };
            item(s, *matches, text, reason, String::new());
            s.push_str("</ul>");
        }
        // A criteria judge (goal accuracy, …), or a judge this page has no list for: its
        // reasons as the judge gave them.
        other => {
            if let Some(reason) = other.reason() {
                let _ = write!(s, " <span class=\"reason\">— {}</span>", esc(&reason));
            }
        }
    }
}

/// Each judge's samples: the metric, the score (or the status when there is none), the
/// message of a sample that failed, and what the judge found. Statements that rest on a
/// context add its characters to `marks`.
pub(super) fn judgements(
    s: &mut String,
    judges: &[QueryJudgement],
    contexts: &[Passage],
    marks: &mut [Vec<(usize, usize)>],
    anchor: &dyn Fn(usize) -> String,
) {
    for j in judges {
        for sample in &j.samples {
            let _ = write!(
                s,
                "<div class=\"judge\"><b>{}</b>{} <span class=\"{}\">{}</span>{}",
                esc(&j.metric),
                if j.samples.len() > 1 {
                    format!(" (sample {})", sample.sample + 1)
                } else {
                    String::new()
                },
                judged_class(sample),
                match sample.score {
                    Some(v) => format!("{v:.2}"),
                    None => sample.status.as_str().to_owned(),
                },
                sample
                    .message
                    .as_deref()
                    .map(|m| format!(" <span class=\"muted\">{}</span>", esc(m)))
                    .unwrap_or_default()
            );
            judge_details(s, &sample.details, contexts, marks, anchor);
            s.push_str("</div>");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlights_by_character_and_escapes_inside_and_out() {
        assert_eq!(
            highlighted("a<b>é&c", &[(1, 4), (5, 6)]),
            "a<mark>&lt;b&gt;</mark>é<mark>&amp;</mark>c"
        );
        // Ranges past the end are clipped; overlapping or empty ones skipped.
        assert_eq!(highlighted("abc", &[(2, 9), (1, 2)]), "ab<mark>c</mark>");
        assert_eq!(highlighted("abc", &[]), "abc");
    }
}
