//! Scoring many queries at once: per-query figures, means and standard deviations.

use super::{mean_std, Metric, MetricInput};
use crate::level::Level;
use crate::span::CharSpan;
use serde::ser::{Serialize, SerializeMap, Serializer};

/// Named figures in a fixed order (the order the metrics were given in), serialised as a JSON
/// object with keys in that order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures(pub Vec<(String, f64)>);

impl Figures {
    /// A figure by name.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

impl Serialize for Figures {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The figures of one query.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QueryScores {
    /// The query's id.
    pub id: String,
    /// The query text (evaluations fill it in; `rag-eval score` leaves it out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The query's difficulty label, when the dataset has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// Metric values, by report name.
    pub metrics: Figures,
}

/// Scores of a whole run: means, population standard deviations and per-query figures.
/// Its JSON form is the `rag-eval score --json` contract.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Scorecard {
    /// `"chunk"` or `"token"`.
    pub level: &'static str,
    /// The cut-off.
    pub k: usize,
    /// `"standard"` or `"chroma"`.
    pub mode: String,
    /// Number of queries scored.
    pub queries: usize,
    /// Mean of each metric over queries.
    pub metrics: Figures,
    /// Population standard deviation of each metric over queries.
    pub std: Figures,
    /// Every query's figures, in input order.
    pub per_query: Vec<QueryScores>,
}

/// One query to score: id, truth and the ranked retrieval.
#[derive(Debug)]
pub struct Scored<'a, L: Level> {
    /// The query's id.
    pub id: &'a str,
    /// Its ground truth.
    pub truth: &'a L::Truth,
    /// What was retrieved, ranked.
    pub retrieved: &'a [L::Item],
}

/// Computes every metric for every query at cut-off `k`.
pub fn scorecard<L: Level>(
    queries: &[Scored<'_, L>],
    metrics: &[Box<dyn Metric<L>>],
    k: usize,
    mode: &str,
    chunker_output: Option<&[CharSpan]>,
) -> Scorecard {
    let names: Vec<String> = metrics.iter().map(|m| m.report_name(k)).collect();
    let per_query: Vec<QueryScores> = queries
        .iter()
        .map(|q| {
            let mut input = MetricInput::new(q.retrieved, q.truth, k);
            input.chunker_output = chunker_output;
            QueryScores {
                id: q.id.to_owned(),
                query: None,
                difficulty: None,
                metrics: Figures(
                    metrics
                        .iter()
                        .zip(&names)
                        .map(|(m, n)| (n.clone(), m.compute(&input)))
                        .collect(),
                ),
            }
        })
        .collect();
    let mut means = Vec::with_capacity(names.len());
    let mut stds = Vec::with_capacity(names.len());
    for (i, n) in names.iter().enumerate() {
        let values: Vec<f64> = per_query.iter().map(|q| q.metrics.0[i].1).collect();
        let (m, s) = mean_std(&values);
        means.push((n.clone(), m));
        stds.push((n.clone(), s));
    }
    Scorecard {
        level: L::NAME,
        k,
        mode: mode.to_owned(),
        queries: queries.len(),
        metrics: Figures(means),
        std: Figures(stds),
        per_query,
    }
}
