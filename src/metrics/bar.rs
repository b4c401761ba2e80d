//! Bars a run is held to: `span_recall=0.8` (a minimum) or a maximum, as the harness's
//! `min_<metric>` and `max_<metric>` keys, `rag-eval gate` and the reports' `--min`/`--max`
//! are. One type and one check for all of them.

use super::{Figures, RunResult};
use crate::error::{Error, ReportError, Result};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Which side of the bar passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// The figure must be at least the bar.
    Min,
    /// The figure must be at most the bar.
    Max,
}

impl Bound {
    /// `min` or `max`: the prefix of the harness's keys (`min_span_recall`).
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Min => "min",
            Bound::Max => "max",
        }
    }

    /// Where a figure that misses the bar is: `below` a minimum, `above` a maximum.
    pub fn side_missed(self) -> &'static str {
        match self {
            Bound::Min => "below",
            Bound::Max => "above",
        }
    }

    /// Orders two figures worst first: the lowest first for a minimum, the highest for a
    /// maximum.
    pub fn worst_first(self, a: f64, b: f64) -> Ordering {
        match self {
            Bound::Min => a.total_cmp(&b),
            Bound::Max => b.total_cmp(&a),
        }
    }
}

/// A bar: a metric (base name such as `span_recall`, or a report name such as
/// `span_recall@5`), a bound and a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    /// The metric, as given.
    pub metric: Cow<'static, str>,
    /// Minimum or maximum.
    pub bound: Bound,
    /// The bar.
    pub value: f64,
}

impl Bar {
    /// A minimum bar.
    pub fn min(metric: impl Into<Cow<'static, str>>, value: f64) -> Bar {
        Bar {
            metric: metric.into(),
            bound: Bound::Min,
            value,
        }
    }

    /// A maximum bar.
    pub fn max(metric: impl Into<Cow<'static, str>>, value: f64) -> Bar {
        Bar {
            metric: metric.into(),
            bound: Bound::Max,
            value,
        }
    }

    /// A bar fixed at compile time, for a `static` list (what `#[rag_eval]`'s `min_…` and
    /// `max_…` keys expand to).
    pub const fn fixed(metric: &'static str, bound: Bound, value: f64) -> Bar {
        Bar {
            metric: Cow::Borrowed(metric),
            bound,
            value,
        }
    }

    /// Parses `METRIC=VALUE` as a bar with `bound`.
    pub fn parse_with(text: &str, bound: Bound) -> Result<Bar> {
        let bad = |message| {
            Error::from(ReportError::Bar {
                bar: text.to_owned(),
                message,
            })
        };
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
            metric: metric.to_owned().into(),
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
                .position(|n| super::ReportedName::parse(n).is_of(&self.metric))
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
    pub fn mean_and_missed(&self, run: &RunResult) -> Option<(f64, usize)> {
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

    /// The harness's key for the bar: `min_span_recall`.
    pub fn key(&self) -> String {
        format!("{}_{}", self.bound.as_str(), self.metric)
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
        assert_eq!(
            (max.key(), max.bound.side_missed()),
            ("max_span_iou".into(), "above")
        );
        assert_eq!(Bar::fixed("span_iou", Bound::Max, 0.2), max);
        // The JSON form `rag-eval gate` reads from a shard's description.
        let json = serde_json::to_string(&max).unwrap();
        assert_eq!(json, r#"{"metric":"span_iou","bound":"max","value":0.2}"#);
        assert_eq!(serde_json::from_str::<Bar>(&json).unwrap(), max);
        let mut figures = vec![0.5, 0.1, 0.9];
        figures.sort_by(|a, b| Bound::Max.worst_first(*a, *b));
        assert_eq!(figures, [0.9, 0.5, 0.1]);
        figures.sort_by(|a, b| Bound::Min.worst_first(*a, *b));
        assert_eq!(figures, [0.1, 0.5, 0.9]);
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
