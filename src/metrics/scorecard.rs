//! Scoring many queries at once: per-query figures, means and standard deviations.

use super::result::{QueryResult, RunResult};
use super::{Figures, Metric, MetricInput, SpanMode};
use crate::level::Level;
use crate::span::CharSpan;

/// The figures of one query (the name `rag-eval score` used; the same type as
/// [`QueryResult`]).
pub type QueryScores = QueryResult;

/// Scores of a whole run (the name `rag-eval score` used; the same type as [`RunResult`]).
pub type Scorecard = RunResult;

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

/// Computes every metric for every query at cut-off `k`; `mode` is recorded in the result
/// (the metrics were built in it).
pub fn scorecard<L: Level>(
    queries: &[Scored<'_, L>],
    metrics: &[Box<dyn Metric<L>>],
    k: usize,
    mode: SpanMode,
    chunker_output: Option<&[CharSpan]>,
) -> RunResult {
    let names: Vec<String> = metrics.iter().map(|m| m.report_name(k)).collect();
    let per_query: Vec<QueryResult> = queries
        .iter()
        .map(|q| {
            let mut input = MetricInput::new(q.retrieved, q.truth, k);
            input.chunker_output = chunker_output;
            QueryResult {
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
                ..QueryResult::default()
            }
        })
        .collect();
    let mut card = RunResult::from_queries(L::KIND.into(), names, per_query);
    card.k = Some(k);
    card.mode = Some(mode);
    card
}
