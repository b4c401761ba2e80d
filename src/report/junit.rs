//! A report as JUnit XML: a suite per run, a case per bar's mean and per query.

use super::Report;
use crate::junit::{Case, Outcome, Suite, Suites};

/// A suite per run: per bar, a case for the mean and one per query; without bars, a passing
/// case per query with its figures as output.
pub(crate) fn of_report(report: &Report) -> String {
    let mut suites = Vec::new();
    for (label, r) in &report.runs {
        let mut cases = Vec::new();
        let case = |name: String, outcome: Outcome, output: Option<String>| Case {
            name,
            classname: label.clone(),
            seconds: 0.0,
            outcome,
            output,
        };
        if report.bars.is_empty() {
            for q in &r.per_query {
                let figures: Vec<String> = q
                    .metrics
                    .0
                    .iter()
                    .map(|(n, v)| format!("{n} = {v:.4}"))
                    .collect();
                cases.push(case(
                    q.id.clone(),
                    Outcome::Passed,
                    Some(figures.join("\n")),
                ));
            }
        }
        for bar in &report.bars {
            let Some(i) = bar.index_in(&r.metrics) else {
                cases.push(case(
                    format!("mean: {bar}"),
                    Outcome::Failed {
                        message: format!("`{}` was not computed in this run", bar.metric),
                        detail: format!(
                            "the run has {}",
                            r.metrics.names().collect::<Vec<_>>().join(", ")
                        ),
                    },
                    None,
                ));
                continue;
            };
            let name = &r.metrics.0[i].0;
            let verdict = |value: f64, what: &str| {
                if bar.passes(value) {
                    Outcome::Passed
                } else {
                    Outcome::Failed {
                        message: format!(
                            "{name} = {value:.4} misses the bar {} {}",
                            bar.operator(),
                            bar.value
                        ),
                        detail: what.to_owned(),
                    }
                }
            };
            let mean = r.metrics.0[i].1;
            // The mean of no queries is a placeholder, not a measurement: it passes no bar.
            let outcome = if r.per_query.is_empty() {
                Outcome::Failed {
                    message: format!("no queries were scored: nothing to hold to {bar}"),
                    detail: "a run of no queries passes no bar".into(),
                }
            } else {
                verdict(mean, &format!("mean over {} queries", r.per_query.len()))
            };
            cases.push(case(
                format!("mean: {name} {} {}", bar.operator(), bar.value),
                outcome,
                None,
            ));
            for q in &r.per_query {
                let Some((_, v)) = q.metrics.0.get(i) else {
                    continue;
                };
                cases.push(case(
                    format!("{}: {name} {} {}", q.id, bar.operator(), bar.value),
                    verdict(*v, q.query.as_deref().unwrap_or(&q.id)),
                    None,
                ));
            }
        }
        suites.push(Suite {
            name: label.clone(),
            cases,
        });
    }
    Suites {
        name: report.title.clone(),
        suites,
    }
    .to_xml()
}

#[cfg(test)]
mod tests {
    use crate::metrics::{ResultLevel, RunResult};
    use crate::report::{Bar, Report};

    #[test]
    fn a_run_of_no_queries_passes_no_bar() {
        let empty = RunResult::from_queries(ResultLevel::Chunk, vec!["mrr".into()], Vec::new());
        let xml = Report::new(vec![("empty".into(), empty)])
            .unwrap()
            .with_bars(vec![Bar::max("mrr", 0.5), Bar::min("mrr", 0.0)])
            .junit();
        assert_eq!(xml.matches("<failure").count(), 2, "{xml}");
        assert!(xml.contains("no queries"), "{xml}");
    }
}
