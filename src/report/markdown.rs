//! Markdown for a pull-request comment or `$GITHUB_STEP_SUMMARY`: GitHub-flavoured tables only,
//! every cell escaped.

use super::stats::Analysis;
use super::Report;
use crate::escape::markdown_cell as cell;
use std::fmt::Write as _;

pub(crate) fn render(report: &Report) -> String {
    let mut s = format!("## {}\n\n", cell(&report.title));
    let analysis = Analysis::of(report);
    let alpha = report.alpha();
    s.push_str("| run | level | k | mode | queries | system | dataset hash |\n|---|---|---:|---|---:|---|---|\n");
    for (i, (label, r)) in report.runs.iter().enumerate() {
        let system = r.config.as_ref().and_then(|c| c.system());
        let _ = writeln!(
            s,
            "| {}{} | {} | {} | {} | {} | {} | {} |",
            cell(label),
            if i == 0 && report.runs.len() > 1 {
                " (baseline)"
            } else {
                ""
            },
            r.level,
            r.k.map_or("—".into(), |k| k.to_string()),
            r.mode.map_or("—".into(), |m| m.to_string()),
            r.queries,
            cell(system.as_deref().unwrap_or("—")),
            cell(r.dataset_hash.as_deref().unwrap_or("—"))
        );
    }
    let _ = write!(
        s,
        "\n### Metrics\n\n{}\n\n",
        cell(&super::html::method(report, &analysis, false))
    );
    s.push_str("| metric |");
    for (label, _) in &report.runs {
        let _ = write!(s, " {} |", cell(label));
    }
    s.push_str("\n|---|");
    s.push_str(&"---:|".repeat(report.runs.len()));
    s.push('\n');
    for n in report.metric_names() {
        let _ = write!(s, "| {} |", cell(&n));
        for (i, (_, r)) in report.runs.iter().enumerate() {
            let (Some(m), Some(sd)) = (r.metrics.get(&n), r.std.get(&n)) else {
                s.push_str(" — |");
                continue;
            };
            let _ = write!(s, " {m:.4} ± {sd:.4}");
            if let Some((covered, of)) = r.coverage(&n) {
                let _ = write!(s, " over {covered} of {of} queries");
            }
            if let Some(d) = analysis.difference(i, &n) {
                let _ = write!(
                    s,
                    " (Δ {:+.4} [{:+.4}, {:+.4}], p {:.4}{})",
                    d.difference,
                    d.ci[0],
                    d.ci[1],
                    d.corrected_p_value,
                    if d.significant(alpha) { " \\*" } else { "" }
                );
            }
            s.push_str(" |");
        }
        s.push('\n');
    }
    if report.runs.iter().any(|(_, r)| r.by_difficulty.is_some()) {
        let head = report.headline_metrics();
        s.push_str("\n### By difficulty\n\nMeans over the queries with each label.\n\n| difficulty | run | queries |");
        for n in &head {
            let _ = write!(s, " {} |", cell(n));
        }
        s.push_str("\n|---|---|---:|");
        s.push_str(&"---:|".repeat(head.len()));
        s.push('\n');
        for label in report.difficulty_labels() {
            for (run, r) in &report.runs {
                let Some(d) = r.by_difficulty.as_ref().and_then(|d| d.get(label)) else {
                    continue;
                };
                let _ = write!(s, "| {} | {} | {} |", cell(label), cell(run), d.queries);
                for n in &head {
                    match d.metrics.get(n) {
                        Some(v) => {
                            let _ = write!(s, " {v:.4} |");
                        }
                        None => s.push_str(" — |"),
                    }
                }
                s.push('\n');
            }
        }
    }
    if !report.bars.is_empty() {
        s.push_str("\n### Bars\n\n| bar | run | mean | verdict | queries missing it |\n|---|---|---:|---|---:|\n");
        for bar in &report.bars {
            for (label, r) in &report.runs {
                let _ = write!(s, "| {} | {} |", cell(&bar.to_string()), cell(label));
                match bar.mean_and_missed(r) {
                    None => s.push_str(" — | ❌ not computed or no queries | — |\n"),
                    Some((m, missed)) => {
                        let _ = writeln!(
                            s,
                            " {m:.4} | {} | {missed} of {} |",
                            if bar.passes(m) {
                                "✅ pass"
                            } else {
                                "❌ fail"
                            },
                            r.per_query.len()
                        );
                    }
                }
            }
        }
    }
    s
}
