//! A case's results in the form the harness keeps, shares between processes and snapshots.

use crate::eval::EvaluationResult;
use serde::{Deserialize, Serialize};

/// Figures of one query, in the order of [`Outcome::metrics`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct QueryOutcome {
    pub id: String,
    pub query: String,
    pub difficulty: Option<String>,
    pub values: Vec<f64>,
}

/// Means over the queries with one difficulty label, in the order of [`Outcome::metrics`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct DifficultyOutcome {
    pub label: String,
    pub queries: usize,
    pub means: Vec<f64>,
}

/// Everything the trials of a case need; written to the cache under nextest, where every trial
/// is its own process (metric names once, figures as plain numbers, so it reads back fast).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Outcome {
    pub level: String,
    pub k: usize,
    pub mode: String,
    pub retriever: String,
    /// Report names (`span_recall@5`, `mrr`, …), in report order.
    pub metrics: Vec<String>,
    pub means: Vec<f64>,
    pub stds: Vec<f64>,
    pub queries: Vec<QueryOutcome>,
    /// Labels sorted.
    pub by_difficulty: Vec<DifficultyOutcome>,
}

impl Outcome {
    pub fn from_result(r: &EvaluationResult) -> Outcome {
        let values = |f: &crate::metrics::Figures| f.0.iter().map(|(_, v)| *v).collect();
        Outcome {
            level: r.scores.level.to_owned(),
            k: r.scores.k,
            mode: r.scores.mode.clone(),
            retriever: r.config.retriever.clone(),
            metrics: r.scores.metrics.0.iter().map(|(n, _)| n.clone()).collect(),
            means: values(&r.scores.metrics),
            stds: values(&r.scores.std),
            queries: r
                .scores
                .per_query
                .iter()
                .map(|q| QueryOutcome {
                    id: q.id.clone(),
                    query: q.query.clone().unwrap_or_default(),
                    difficulty: q.difficulty.clone(),
                    values: values(&q.metrics),
                })
                .collect(),
            by_difficulty: r
                .by_difficulty
                .iter()
                .map(|(label, d)| DifficultyOutcome {
                    label: label.clone(),
                    queries: d.queries,
                    means: values(&d.metrics),
                })
                .collect(),
        }
    }

    /// Pairs figures with the metric names.
    pub fn named<'a>(&'a self, values: &'a [f64]) -> impl Iterator<Item = (&'a str, f64)> + 'a {
        self.metrics
            .iter()
            .map(String::as_str)
            .zip(values.iter().copied())
    }

    /// Position of a metric given by base name (`span_recall` for `span_recall@5`).
    pub fn metric_index(&self, base: &str) -> Option<usize> {
        self.metrics
            .iter()
            .position(|n| n == base || n.split_once('@').is_some_and(|(b, _)| b == base))
    }
}
