//! The figures a report draws beside the means, from the library's statistics so that a report
//! and `rag-eval compare` never disagree: each run's mean with its percentile bootstrap
//! interval ([`bootstrap_ci`]), and for two or more runs their [`Comparison`] (differences from
//! the baseline with paired bootstrap intervals, p-values before and after correction), all
//! seeded by the report's [`CompareOptions`].

use super::Report;
use crate::compare::{CompareOptions, Comparison, Difference};
use crate::stats::bootstrap_ci;
use std::collections::HashMap;

/// A closed interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

/// What a rendering shows besides the runs' own figures, computed once per rendering.
pub(crate) struct Analysis {
    /// The comparison of the runs; `None` for a single run or when it was refused.
    pub comparison: Option<Comparison>,
    /// Why two or more runs could not be compared.
    pub refused: Option<String>,
    /// Per run, per metric: the mean's bootstrap interval (at least two finite figures).
    means: Vec<HashMap<String, Interval>>,
}

impl Analysis {
    pub(crate) fn of(report: &Report) -> Analysis {
        let options = report.options();
        let (comparison, refused) = if report.runs.len() < 2 {
            (None, None)
        } else {
            let runs: Vec<(&str, &crate::metrics::RunResult)> =
                report.runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
            match Comparison::new(&runs, options) {
                Ok(c) => (Some(c), None),
                Err(e) => (None, Some(e.to_string())),
            }
        };
        let names = report.metric_names();
        let means = report
            .runs
            .iter()
            .map(|(_, r)| {
                names
                    .iter()
                    .filter_map(|n| {
                        let values: Vec<f64> = r
                            .per_query
                            .iter()
                            .filter_map(|q| q.metrics.get(n))
                            .filter(|v| v.is_finite())
                            .collect();
                        mean_interval(&values, options).map(|i| (n.clone(), i))
                    })
                    .collect()
            })
            .collect();
        Analysis {
            comparison,
            refused,
            means,
        }
    }

    /// The interval of run `run`'s mean of `metric`.
    pub(crate) fn mean_interval(&self, run: usize, metric: &str) -> Option<Interval> {
        self.means.get(run)?.get(metric).copied()
    }

    /// Run `run` (1 or later) against the baseline on `metric`, as `rag-eval compare` gives it.
    pub(crate) fn difference(&self, run: usize, metric: &str) -> Option<&Difference> {
        let c = self.comparison.as_ref()?;
        c.metrics
            .iter()
            .find(|m| m.metric == metric)?
            .vs_baseline
            .get(run.checked_sub(1)?)
    }
}

/// The percentile bootstrap interval of the mean of `values` with the options' resamples, seed
/// and confidence; none for fewer than two values.
fn mean_interval(values: &[f64], options: &CompareOptions) -> Option<Interval> {
    if values.len() < 2 {
        return None;
    }
    let (lo, hi) = bootstrap_ci(values, options.resamples, options.seed, options.confidence);
    Some(Interval { lo, hi })
}

impl Difference {
    /// The interval as a report draws it.
    pub(crate) fn interval(&self) -> Interval {
        Interval {
            lo: self.ci[0],
            hi: self.ci[1],
        }
    }

    /// Whether the corrected p-value is at most `alpha`.
    pub(crate) fn significant(&self, alpha: f64) -> bool {
        self.corrected_p_value <= alpha
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mean_interval_is_the_librarys_bootstrap() {
        let values: Vec<f64> = (0..40).map(|i| f64::from(i % 7) / 6.0).collect();
        let options = CompareOptions::default();
        let i = mean_interval(&values, &options).unwrap();
        assert_eq!(
            (i.lo, i.hi),
            bootstrap_ci(&values, options.resamples, options.seed, options.confidence)
        );
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        assert!(i.lo < mean && mean < i.hi, "{i:?} {mean}");
        // Another seed, another (reproducible) interval.
        let other = CompareOptions {
            seed: 7,
            ..CompareOptions::default()
        };
        assert_ne!(mean_interval(&values, &other), Some(i));
        assert_eq!(
            mean_interval(&values, &other),
            mean_interval(&values, &other)
        );
        assert_eq!(mean_interval(&[0.5], &options), None);
        assert_eq!(mean_interval(&[], &options), None);
    }

    fn run(figures: &[(&str, f64)]) -> crate::metrics::RunResult {
        use crate::metrics::{Figures, QueryResult, ResultLevel, RunResult};
        let per_query = figures
            .iter()
            .map(|(id, v)| QueryResult {
                id: (*id).into(),
                metrics: Figures(vec![("recall@5".into(), *v)]),
                ..QueryResult::default()
            })
            .collect();
        RunResult::from_queries(ResultLevel::Chunk, vec!["recall@5".into()], per_query)
    }

    #[test]
    fn runs_compare_refuses_are_compared_on_shared_ids_or_left_uncompared_with_the_reason() {
        let base = run(&[("q1", 1.0), ("q2", 0.5), ("q3", 0.0)]);
        // Another query set: compared on the two shared ids, and said so.
        let other = run(&[("q1", 0.0), ("q2", 0.5), ("q9", 1.0)]);
        let report = Report::new(vec![("a".into(), base.clone()), ("b".into(), other)]).unwrap();
        let analysis = Analysis::of(&report);
        let d = analysis.difference(1, "recall@5").unwrap();
        assert_eq!(d.difference, -0.5);
        assert!(report
            .markdown()
            .contains("compared on the 2 query ids they share"));
        assert!(
            report.markdown().contains("(Δ -0.5000 ["),
            "{}",
            report.markdown()
        );
        // A figure that is not a number: no report (its mean is not one either).
        let nan = run(&[("q1", f64::NAN), ("q2", 0.5), ("q3", 0.0)]);
        let err = Report::new(vec![("a".into(), base.clone()), ("b".into(), nan)]).unwrap_err();
        assert!(
            err.to_string()
                .contains("run `b`: the mean of recall@5 is NaN"),
            "{err}"
        );
        // Runs the comparison refuses: no comparison, and why.
        let twice = run(&[("q1", 1.0), ("q1", 0.5), ("q3", 0.0)]);
        let report = Report::new(vec![("a".into(), base), ("b".into(), twice)]).unwrap();
        assert!(Analysis::of(&report).comparison.is_none());
        let md = report.markdown();
        // Escaped as Markdown: the backticks of the reason are text.
        assert!(
            md.contains("The runs are not compared: run \\`b\\` has query \\`q1\\` twice"),
            "{md}"
        );
        assert!(!md.contains("Δ"), "{md}");
        assert!(!report.html().contains("Difference from the baseline"));
    }

    #[test]
    fn metrics_with_missing_figures_say_on_how_many_queries_they_are_compared_or_why_not() {
        use crate::metrics::{Figures, QueryResult, ResultLevel, RunResult};
        // faithfulness: q2 has no figure in `a`, so it is compared on q1 and q3;
        // answer_match: only q1 has a figure in both runs, too few for a test.
        let make = |rows: &[(&str, &[(&str, f64)])]| {
            let per_query = rows
                .iter()
                .map(|(id, figures)| QueryResult {
                    id: (*id).into(),
                    metrics: Figures(figures.iter().map(|(m, v)| ((*m).into(), *v)).collect()),
                    ..QueryResult::default()
                })
                .collect();
            let names = vec!["faithfulness".into(), "answer_match".into()];
            RunResult::from_queries(ResultLevel::Chunk, names, per_query)
        };
        let a = make(&[
            ("q1", &[("faithfulness", 1.0), ("answer_match", 1.0)]),
            ("q2", &[]),
            ("q3", &[("faithfulness", 0.5)]),
        ]);
        let b = make(&[
            ("q1", &[("faithfulness", 0.0), ("answer_match", 0.0)]),
            ("q2", &[("faithfulness", 1.0), ("answer_match", 1.0)]),
            ("q3", &[("faithfulness", 0.5)]),
        ]);
        let report = Report::new(vec![("a".into(), a), ("b".into(), b)]).unwrap();
        let analysis = Analysis::of(&report);
        assert_eq!(
            analysis.difference(1, "faithfulness").unwrap().difference,
            -0.5
        );
        assert!(analysis.difference(1, "answer_match").is_none());
        let md = report.markdown();
        assert!(
            md.contains("queries with a figure in every run: faithfulness on 2"),
            "{md}"
        );
        assert!(md.contains("answer_match is not tested: "), "{md}");
        assert!(report.html().contains("answer_match is not tested: "));
    }
}
