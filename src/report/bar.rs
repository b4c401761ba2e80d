//! Bars a run is held to: `span_recall=0.8` (a minimum) or a maximum, as the harness's
//! `min_<metric>` and `max_<metric>` keys are.

use crate::error::{Error, Result};
use crate::metrics::{Figures, RunResult};
use std::fmt;
use std::str::FromStr;

/// Which side of the bar passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The figure must be at least the bar.
    Min,
    /// The figure must be at most the bar.
    Max,
}

/// A bar: a metric (base name such as `span_recall`, or a report name such as
/// `span_recall@5`), a bound and a value.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The metric, as given.
    pub metric: String,
    /// Minimum or maximum.
    pub bound: Bound,
    /// The bar.
    pub value: f64,
}

impl Bar {
    /// A minimum bar.
    pub fn min(metric: impl Into<String>, value: f64) -> Bar {
        Bar {
            metric: metric.into(),
            bound: Bound::Min,
            value,
        }
    }

    /// A maximum bar.
    pub fn max(metric: impl Into<String>, value: f64) -> Bar {
        Bar {
            metric: metric.into(),
            bound: Bound::Max,
            value,
        }
    }

    /// Parses `METRIC=VALUE` as a bar with `bound`.
    pub fn parse_with(text: &str, bound: Bound) -> Result<Bar> {
        let bad = |why: &str| Error::Report(format!("bar `{text}`: {why}"));
        let (metric, value) = text
            .split_once('=')
            .ok_or_else(|| bad("expected METRIC=VALUE, e.g. span_recall=0.8"))?;
        let metric = metric.trim();
        if metric.is_empty() {
            return Err(bad("no metric name before `=`"));
        }
        let value: f64 = value
            .trim()
            .parse()
            .map_err(|_| bad("the value after `=` is not a number"))?;
        if !value.is_finite() {
            return Err(bad("the value must be a finite number"));
        }
        Ok(Bar {
            metric: metric.to_owned(),
            bound,
            value,
        })
    }

    /// Position of the bar's metric among `figures`: by report name, or by base name
    /// (`span_recall` finds `span_recall@5`).
    pub fn index_in(&self, figures: &Figures) -> Option<usize> {
        figures.names().position(|n| n == self.metric).or_else(|| {
            figures
                .names()
                .position(|n| crate::metrics::ReportedName::parse(n).is_of(&self.metric))
        })
    }

    /// Whether `value` passes.
    pub fn passes(&self, value: f64) -> bool {
        match self.bound {
            Bound::Min => value >= self.value,
            Bound::Max => value <= self.value,
        }
    }

    /// `run`'s mean of the bar's metric and how many of its queries miss the bar; `None`
    /// when the run did not compute the metric, or scored no queries (whose mean measures
    /// nothing, and so passes no bar).
    pub(crate) fn mean_and_missed(&self, run: &RunResult) -> Option<(f64, usize)> {
        if run.per_query.is_empty() {
            return None;
        }
        let i = self.index_in(&run.metrics)?;
        let missed = run
            .per_query
            .iter()
            .filter(|q| q.metrics.0.get(i).is_some_and(|f| !self.passes(f.1)))
            .count();
        Some((run.metrics.0[i].1, missed))
    }

    /// `>=` or `<=`.
    pub fn operator(&self) -> &'static str {
        match self.bound {
            Bound::Min => ">=",
            Bound::Max => "<=",
        }
    }
}

/// `METRIC=VALUE`, a minimum.
impl FromStr for Bar {
    type Err = Error;
    fn from_str(s: &str) -> Result<Bar> {
        Bar::parse_with(s, Bound::Min)
    }
}

impl fmt::Display for Bar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.metric, self.operator(), self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_finds_metrics_by_base_or_report_name() {
        let bar: Bar = "span_recall = 0.8".parse().unwrap();
        assert_eq!(bar, Bar::min("span_recall", 0.8));
        let figures = Figures(vec![
            ("span_iou@5".into(), 0.1),
            ("span_recall@5".into(), 0.9),
        ]);
        assert_eq!(bar.index_in(&figures), Some(1));
        assert_eq!(Bar::min("span_recall@5", 0.8).index_in(&figures), Some(1));
        assert_eq!(Bar::min("span_recall@10", 0.8).index_in(&figures), None);
        assert!(bar.passes(0.8) && !bar.passes(0.79));
        let max = Bar::parse_with("span_iou=0.2", Bound::Max).unwrap();
        assert!(max.passes(0.2) && !max.passes(0.21));
        assert_eq!(max.to_string(), "span_iou <= 0.2");
        for bad in ["span_recall", "=0.5", "span_recall=high", "span_recall=NaN"] {
            let e = bad.parse::<Bar>().unwrap_err().to_string();
            assert!(e.contains(&format!("bar `{bad}`")), "{e}");
        }
    }

    #[test]
    fn mean_and_queries_missing_the_bar() {
        use crate::metrics::{QueryResult, ResultLevel};
        let query = |id: &str, v: f64| QueryResult {
            id: id.into(),
            metrics: Figures(vec![("span_recall@5".into(), v)]),
            ..QueryResult::default()
        };
        let run = RunResult::from_queries(
            ResultLevel::Token,
            vec!["span_recall@5".into()],
            vec![query("a", 0.2), query("b", 0.6), query("c", 1.0)],
        );
        let (mean, missed) = Bar::min("span_recall", 0.5).mean_and_missed(&run).unwrap();
        assert!((mean - 0.6).abs() < 1e-12 && missed == 1, "{mean} {missed}");
        let max = Bar::parse_with("span_recall=0.6", Bound::Max).unwrap();
        assert_eq!(max.mean_and_missed(&run).map(|m| m.1), Some(1));
        assert_eq!(Bar::min("ndcg", 0.5).mean_and_missed(&run), None);
    }
}
