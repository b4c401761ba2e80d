//! The figures of a scored run as columns: query ids once, one vector of values per measure.

use super::Measure;
use std::collections::BTreeMap;

/// Every measure's value for every scored query, stored column by column: the query ids once
/// (borrowed from the [`Run`](super::Run)), and per measure one `Vec<f64>` aligned with them.
///
/// This is what [`evaluate_columns`](super::evaluate_columns) returns; it holds the same
/// figures as [`PerQuery`](super::PerQuery) without a map and a `String` per query and
/// measure, which costs more than the scoring on large runs.
///
/// ```
/// use rag_eval::trec::{evaluate_columns, Measure, Qrels, Run};
///
/// let qrels = Qrels::parse("q1 0 d1 1\nq2 0 d2 1\n", "qrels.txt")?;
/// let run = Run::parse("q2 Q0 d9 1 0.9 r\nq2 Q0 d2 2 0.5 r\nq1 Q0 d1 1 0.9 r\n", "run.txt")?;
/// let scores = evaluate_columns(&qrels, &run, &[Measure::ReciprocalRank]);
/// assert_eq!(scores.query_ids(), ["q1", "q2"]); // in id order
/// assert_eq!(scores.column("mrr"), Some(&[1.0, 0.5][..]));
/// assert_eq!(scores.means(), [("mrr".to_owned(), 0.75)]);
/// # Ok::<(), rag_eval::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Scores<'r> {
    pub(super) ids: Vec<&'r str>,
    /// Sorted by report name, as [`PerQuery`](super::PerQuery)'s inner maps are.
    pub(super) names: Vec<String>,
    pub(super) measures: Vec<Measure>,
    pub(super) columns: Vec<Vec<f64>>,
}

impl<'r> Scores<'r> {
    /// The scored queries' ids, in byte order of the ids.
    pub fn query_ids(&self) -> &[&'r str] {
        &self.ids
    }

    /// The number of scored queries.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no query was scored.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The report names of the measures ([`Measure::report_name`]), each once, sorted.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The measures, in the order of [`Scores::names`].
    pub fn measures(&self) -> &[Measure] {
        &self.measures
    }

    /// A measure's values by report name, aligned with [`Scores::query_ids`].
    pub fn column(&self, name: &str) -> Option<&[f64]> {
        let i = self.names.iter().position(|n| n == name)?;
        Some(&self.columns[i])
    }

    /// The mean of each measure over the queries (trec_eval's `all` line), in the order of
    /// [`Scores::names`]; the same figures as [`mean`](super::mean) of the per-query maps (none
    /// when no query was scored).
    pub fn means(&self) -> Vec<(String, f64)> {
        if self.ids.is_empty() {
            return Vec::new();
        }
        self.names
            .iter()
            .zip(&self.columns)
            .map(|(n, c)| (n.clone(), c.iter().sum::<f64>() / c.len() as f64))
            .collect()
    }

    /// The same figures as nested maps: query id → report name → value.
    pub fn to_per_query(&self) -> super::PerQuery {
        let template: BTreeMap<String, f64> = self.names.iter().map(|n| (n.clone(), 0.0)).collect();
        self.ids
            .iter()
            .enumerate()
            .map(|(q, id)| {
                let mut figures = template.clone();
                for (slot, column) in figures.values_mut().zip(&self.columns) {
                    *slot = column[q];
                }
                ((*id).to_owned(), figures)
            })
            .collect()
    }
}
