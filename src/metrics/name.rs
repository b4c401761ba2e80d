//! The name a figure is reported under: a metric and, for metrics cut at a rank, the cut-off
//! (`span_recall@5`, `ndcg@10`; `mrr`, `map` without one). Runs, snapshots and reports store
//! the printed form; this type is the one place that writes it and reads it back.

use std::fmt;

/// A metric's name with the cut-off it was computed at, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReportedName<'a> {
    /// The metric's name, as the registry and the `min_…`/`max_…` bars spell it.
    pub metric: &'a str,
    /// The cut-off `k`, for metrics reported as `name@k`.
    pub k: Option<usize>,
}

impl<'a> ReportedName<'a> {
    /// `metric` at cut-off `k`.
    pub fn at(metric: &'a str, k: usize) -> Self {
        ReportedName { metric, k: Some(k) }
    }

    /// `metric` over the whole ranking, without a cut-off.
    pub fn whole(metric: &'a str) -> Self {
        ReportedName { metric, k: None }
    }

    /// Reads a printed name: `span_recall@5` is `span_recall` at 5. Text after `@` that is no
    /// whole number stays part of the metric's name (a custom metric may be named so).
    pub fn parse(name: &'a str) -> Self {
        match name.rsplit_once('@') {
            Some((metric, k)) => match k.parse() {
                Ok(k) if !metric.is_empty() => ReportedName { metric, k: Some(k) },
                _ => ReportedName::whole(name),
            },
            None => ReportedName::whole(name),
        }
    }

    /// Whether a figure reported as `self` is one of `metric`: the same report name, or the
    /// metric at any cut-off (`span_recall` names `span_recall@5`).
    pub fn is_of(&self, metric: &str) -> bool {
        self.metric == metric || ReportedName::parse(metric) == *self
    }
}

impl fmt::Display for ReportedName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.k {
            Some(k) => write!(f, "{}@{k}", self.metric),
            None => f.write_str(self.metric),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ReportedName;
    use proptest::prelude::*;

    #[test]
    fn printed_and_read_back() {
        assert_eq!(
            ReportedName::at("span_recall", 5).to_string(),
            "span_recall@5"
        );
        assert_eq!(ReportedName::whole("mrr").to_string(), "mrr");
        assert_eq!(ReportedName::parse("ndcg@10"), ReportedName::at("ndcg", 10));
        assert_eq!(ReportedName::parse("map"), ReportedName::whole("map"));
        // Not a cut-off: the text stays the name.
        assert_eq!(
            ReportedName::parse("team@home"),
            ReportedName::whole("team@home")
        );
        assert_eq!(ReportedName::parse("@5"), ReportedName::whole("@5"));
    }

    #[test]
    fn a_metric_names_its_figures_at_any_cut_off() {
        let figure = ReportedName::parse("span_recall@5");
        assert!(figure.is_of("span_recall"));
        assert!(figure.is_of("span_recall@5"));
        assert!(!figure.is_of("span_recall@10"));
        assert!(!figure.is_of("recall"));
        assert!(ReportedName::parse("mrr").is_of("mrr"));
    }

    proptest! {
        #[test]
        fn parse_inverts_display(metric in "[a-z_]{1,20}", k in proptest::option::of(0usize..100_000)) {
            let name = ReportedName { metric: &metric, k };
            let printed = name.to_string();
            prop_assert_eq!(ReportedName::parse(&printed), name);
        }
    }
}
