//! The text report of a [`Comparison`], as `rag-eval compare` prints it.

use super::{Comparison, MetricComparison, UntestedMetric};
use crate::escape::terminal as t;
use std::fmt::Write;

impl Comparison {
    /// A plain-text report: the settings, one table of every metric and run (mean ± std,
    /// difference from the baseline with its interval, p-value before and after correction,
    /// wins/ties/losses; `*` marks a corrected p-value at most `alpha`), with judge correction
    /// a table of the judge-corrected figures, the queries that got most worse where a run is
    /// significantly worse (as the gate reads it), and a table per difficulty label; above
    /// the table, the metrics left out (not in every run, or defined differently); below a
    /// table, the metrics compared over fewer queries for missing figures and those untested.
    ///
    /// Labels, metric names, query ids and texts come from files anyone may have written: their
    /// control characters are escaped, so none reaches the terminal.
    pub fn to_text(&self, alpha: f64) -> String {
        let mut s = String::new();
        let labels: Vec<String> = self.runs.iter().map(|r| t(&r.label)).collect();
        let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
        let test = match self.test {
            super::PairedTest::Fisher => format!(
                "Fisher randomization test ({} permutations; exact up to {} queries)",
                self.permutations,
                crate::stats::EXACT_MAX_QUERIES
            ),
            super::PairedTest::Student => "paired t-test".to_owned(),
        };
        let _ = writeln!(
            s,
            "baseline: {}, {} queries compared{}\n{test}, {} correction, {:.0}% bootstrap intervals ({} resamples), seed {}",
            t(&self.baseline),
            self.queries,
            if self.datasets_differ {
                " (shared query ids of different datasets)"
            } else {
                ""
            },
            self.correction,
            self.confidence * 100.0,
            self.resamples,
            self.seed,
        );
        if !self.metrics_not_shared.is_empty() {
            let _ = writeln!(
                s,
                "not in every run, left out: {}",
                t(&self.metrics_not_shared.join(", "))
            );
        }
        for r in &self.metrics_redefined {
            let _ = writeln!(
                s,
                "defined differently, not compared: {}",
                t(&r.describe(self.runs.iter().map(|r| r.label.as_str())))
            );
        }
        s.push('\n');
        s.push_str(&table(&self.metrics, self.queries, alpha));
        s.push_str(&partial(
            &self.metrics,
            &self.metrics_untested,
            self.queries,
            &labels,
        ));
        let judged = judge_table(&self.metrics, alpha, self.confidence);
        if !judged.is_empty() {
            s.push('\n');
            s.push_str(&judged);
        }
        s.push_str(&most_worse(&self.metrics, alpha));
        for g in &self.by_difficulty {
            let _ = writeln!(
                s,
                "\ndifficulty {}: {} queries",
                t(&g.difficulty),
                g.queries
            );
            s.push_str(&table(&g.metrics, g.queries, alpha));
            s.push_str(&partial(
                &g.metrics,
                &g.metrics_untested,
                g.queries,
                &labels,
            ));
            s.push_str(&judge_table(&g.metrics, alpha, self.confidence));
        }
        s
    }
}

/// Per run significantly worse on some metric (as the gate reads it), the queries that got
/// most worse, each once with its question and every such metric's change: one regression of a
/// dozen metrics is mostly the same questions, which a block per metric would repeat.
fn most_worse(metrics: &[MetricComparison], alpha: f64) -> String {
    let mut s = String::new();
    let runs = metrics.first().map_or(0, |m| m.vs_baseline.len());
    for r in 0..runs {
        let worse: Vec<(&str, &super::Difference)> = metrics
            .iter()
            .filter_map(|m| Some((m.metric.as_str(), m.vs_baseline.get(r)?)))
            .filter(|(_, d)| {
                let (difference, p, _) = d.gate();
                difference < 0.0 && p <= alpha && !d.most_worse.is_empty()
            })
            .collect();
        let Some((_, first)) = worse.first() else {
            continue;
        };
        let names: Vec<&str> = worse.iter().map(|(m, _)| *m).collect();
        let _ = writeln!(
            s,
            "\n{} got worse on {}; most worse queries:",
            t(&first.label),
            t(&names.join(", "))
        );
        // Each query once, in the order the metrics first name it.
        let mut queries: Vec<(&super::QueryChange, Vec<String>)> = Vec::new();
        for (metric, d) in &worse {
            for q in &d.most_worse {
                let change = format!(
                    "{} {:+.4} ({:.4} → {:.4})",
                    t(metric),
                    q.difference,
                    q.baseline,
                    q.run
                );
                match queries.iter_mut().find(|(seen, _)| seen.id == q.id) {
                    Some((_, changes)) => changes.push(change),
                    None => queries.push((q, vec![change])),
                }
            }
        }
        for (q, changes) in queries {
            let _ = writeln!(
                s,
                "  {}{}",
                t(&q.id),
                q.query
                    .as_deref()
                    .map(|text| format!("  {}", t(text)))
                    .unwrap_or_default(),
            );
            // The changes a few to a line, so that a dozen metrics stay readable.
            for line in changes.chunks(3) {
                let _ = writeln!(s, "    {}", line.join(", "));
            }
        }
    }
    s
}

/// Per metric and run the mean ± std, with `n of N` queries beside it where the metric is
/// judged or covers fewer than the `queries` compared; per run after the baseline the
/// difference, its interval and tests.
fn table(metrics: &[MetricComparison], queries: usize, alpha: f64) -> String {
    let mut rows: Vec<[String; 8]> = vec![[
        "metric".into(),
        "run".into(),
        "mean ± std".into(),
        "diff".into(),
        "interval".into(),
        "p".into(),
        "corrected p".into(),
        "W/T/L".into(),
    ]];
    for m in metrics {
        for (i, r) in m.runs.iter().enumerate() {
            let mut row = [
                if i == 0 { t(&m.metric) } else { String::new() },
                t(&r.label),
                if m.judged || m.queries < queries {
                    format!("{:.4} ± {:.4} ({} of {queries})", r.mean, r.std, m.queries)
                } else {
                    format!("{:.4} ± {:.4}", r.mean, r.std)
                },
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ];
            if i > 0 {
                let d = &m.vs_baseline[i - 1];
                row[3] = format!("{:+.4}", d.difference);
                row[4] = format!("[{:+.4}, {:+.4}]", d.ci[0], d.ci[1]);
                row[5] = format!("{:.4}", d.p_value);
                row[6] = format!(
                    "{:.4}{}",
                    d.corrected_p_value,
                    if d.corrected_p_value <= alpha {
                        " *"
                    } else {
                        ""
                    }
                );
                row[7] = format!("{}/{}/{}", d.outcome.wins, d.outcome.ties, d.outcome.losses);
            }
            rows.push(row);
        }
    }
    columns(&rows)
}

/// With judge correction, the judge-corrected figures of the metrics that have them: per run
/// its corrected mean with its 95% interval and its labelled queries, and per run after the
/// baseline the difference with its interval and test (`*` as in [`table`]). Empty without.
fn judge_table(metrics: &[MetricComparison], alpha: f64, confidence: f64) -> String {
    let mut rows: Vec<[String; 8]> = vec![[
        "metric".into(),
        "run".into(),
        "corrected mean [95%]".into(),
        "labelled".into(),
        "diff".into(),
        "interval".into(),
        "p".into(),
        "corrected p".into(),
    ]];
    let mean = |c: &crate::stats::CorrectedMean| {
        [
            format!("{:.4} [{:.4}, {:.4}]", c.mean, c.low, c.high),
            format!("{} of {}", c.labelled, c.judged),
        ]
    };
    for m in metrics {
        let Some(first) = m
            .vs_baseline
            .iter()
            .find_map(|d| d.judge_corrected.as_ref())
        else {
            continue;
        };
        let [baseline, labelled] = mean(&first.estimate.baseline);
        rows.push([
            t(&m.metric),
            t(&m.runs[0].label),
            baseline,
            labelled,
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ]);
        for d in &m.vs_baseline {
            let row = match &d.judge_corrected {
                Some(j) => {
                    let e = &j.estimate;
                    let [run, labelled] = mean(&e.run);
                    [
                        String::new(),
                        t(&d.label),
                        run,
                        labelled,
                        format!("{:+.4}", e.difference),
                        format!("[{:+.4}, {:+.4}]", e.ci[0], e.ci[1]),
                        format!("{:.4}", e.p_value),
                        format!(
                            "{:.4}{}",
                            j.corrected_p_value,
                            if j.corrected_p_value <= alpha {
                                " *"
                            } else {
                                ""
                            }
                        ),
                    ]
                }
                None => [
                    String::new(),
                    t(&d.label),
                    "fewer than 2 labels".into(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ],
            };
            rows.push(row);
        }
    }
    if rows.len() == 1 {
        return String::new();
    }
    format!(
        "judge-corrected (prediction-powered, each run's labels of its own outputs; {:.0}% normal intervals of the differences):\n{}",
        confidence * 100.0,
        columns(&rows)
    )
}

/// `rows` as text columns, each as wide as its widest cell.
fn columns<const N: usize>(rows: &[[String; N]]) -> String {
    let widths: Vec<usize> = (0..N)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut s = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        let _ = writeln!(s, "{}", line.join("  ").trim_end());
    }
    s
}

/// The metrics some run lacks figures for: how many queries each is over and how many each run
/// left out; then the metrics left untested, with the reason. Empty when no figure is missing.
fn partial(
    metrics: &[MetricComparison],
    untested: &[UntestedMetric],
    queries: usize,
    labels: &[&str],
) -> String {
    let mut s = String::new();
    let left_out = |labels: &mut dyn Iterator<Item = (&str, usize)>| -> String {
        labels
            .map(|(l, n)| format!("{} {n}", t(l)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for m in metrics
        .iter()
        .filter(|m| m.runs.iter().any(|r| r.missing > 0))
    {
        let _ = writeln!(
            s,
            "{}: over the {} of {queries} queries with a figure in every run (left out for a missing figure: {})",
            t(&m.metric),
            m.queries,
            left_out(&mut m.runs.iter().map(|r| (r.label.as_str(), r.missing)))
        );
    }
    for u in untested {
        let missing = left_out(&mut labels.iter().copied().zip(u.missing.iter().copied()));
        let _ = writeln!(
            s,
            "{}: no test: {} (left out for a missing figure: {missing})",
            t(&u.metric),
            t(&u.reason)
        );
    }
    s
}
