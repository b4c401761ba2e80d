//! A case's results in the form the harness keeps, shares between processes and snapshots.

use crate::eval::EvaluationResult;
use serde::{Deserialize, Serialize};

/// Figures of one query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct QueryOutcome {
    pub id: String,
    pub query: String,
    pub difficulty: Option<String>,
    pub figures: Vec<(String, f64)>,
}

/// Means over the queries with one difficulty label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct DifficultyOutcome {
    pub label: String,
    pub queries: usize,
    pub means: Vec<(String, f64)>,
}

/// Everything the trials of a case need: written to the cache under nextest, where every
/// trial is its own process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Outcome {
    pub level: String,
    pub k: usize,
    pub mode: String,
    pub retriever: String,
    pub means: Vec<(String, f64)>,
    pub stds: Vec<(String, f64)>,
    pub queries: Vec<QueryOutcome>,
    /// Means per difficulty label, labels sorted.
    pub by_difficulty: Vec<DifficultyOutcome>,
}

impl Outcome {
    pub fn from_result(r: &EvaluationResult) -> Outcome {
        Outcome {
            level: r.scores.level.to_owned(),
            k: r.scores.k,
            mode: r.scores.mode.clone(),
            retriever: r.config.retriever.clone(),
            means: r.scores.metrics.0.clone(),
            stds: r.scores.std.0.clone(),
            queries: r
                .scores
                .per_query
                .iter()
                .map(|q| QueryOutcome {
                    id: q.id.clone(),
                    query: q.query.clone().unwrap_or_default(),
                    difficulty: q.difficulty.clone(),
                    figures: q.metrics.0.clone(),
                })
                .collect(),
            by_difficulty: r
                .by_difficulty
                .iter()
                .map(|(label, d)| DifficultyOutcome {
                    label: label.clone(),
                    queries: d.queries,
                    means: d.metrics.0.clone(),
                })
                .collect(),
        }
    }

    /// The report name of a metric given by base name (`span_recall` → `span_recall@5`).
    pub fn report_name(&self, base: &str) -> Option<&str> {
        self.means
            .iter()
            .map(|(n, _)| n.as_str())
            .find(|n| *n == base || n.split_once('@').is_some_and(|(b, _)| b == base))
    }

    pub fn mean(&self, name: &str) -> Option<f64> {
        self.means.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}
