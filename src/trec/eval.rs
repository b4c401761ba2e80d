//! Scoring a run against qrels: every measure per query, and the run-level result.

use super::parse::QueryTable;
use super::{Measure, Qrels, Run, Scores};
use crate::metrics::{Figures, Grade, QueryResult, ResultLevel, RunResult};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// Per-query figures: query id → report name → value.
pub type PerQuery = BTreeMap<String, BTreeMap<String, f64>>;

/// Scores `run` against `qrels`: for every query of the run that has judgements, the value of
/// every measure, keyed by query id then [`Measure::report_name`]. An empty `measures` means
/// [`Measure::defaults`] with trec_eval's cut-offs. Large runs are scored on all available
/// cores. [`evaluate_columns`] gives the same figures without building the maps.
pub fn evaluate(qrels: &Qrels, run: &Run, measures: &[Measure]) -> PerQuery {
    evaluate_columns(qrels, run, measures).to_per_query()
}

/// Scores `run` against `qrels` as [`evaluate`] does, into columns: the query ids once and one
/// vector per measure. Large runs are scored on all available cores.
pub fn evaluate_columns<'r>(qrels: &Qrels, run: &'r Run, measures: &[Measure]) -> Scores<'r> {
    let measures = asked_or_defaults(measures);
    // One measure per report name, in the order of the names.
    let mut unique: Vec<(String, Measure)> =
        measures.iter().map(|m| (m.report_name(), *m)).collect();
    unique.sort_by(|a, b| a.0.cmp(&b.0));
    unique.dedup_by(|a, b| a.0 == b.0);
    let (names, measures): (Vec<String>, Vec<Measure>) = unique.into_iter().unzip();

    // Pair the run's queries with the judged ones by walking both in id order: no hashing,
    // and the figures come out in id order.
    let pairs = paired_queries(&run.table, &qrels.table);
    let ctx = Scoring {
        qrels,
        run,
        measures: &measures,
    };
    // Below a few thousand queries a thread costs more than it saves.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(pairs.len() / 2048)
        .max(1);
    let mut columns: Vec<Vec<f64>> = vec![vec![0.0; pairs.len()]; measures.len()];
    if threads == 1 {
        let mut slices: Vec<&mut [f64]> = columns.iter_mut().map(|c| &mut c[..]).collect();
        ctx.score(&pairs, &mut slices);
    } else {
        let per_thread = pairs.len().div_ceil(threads);
        // Each worker writes its own rows of every column.
        let mut parts: Vec<Vec<&mut [f64]>> = (0..pairs.len().div_ceil(per_thread))
            .map(|_| Vec::with_capacity(measures.len()))
            .collect();
        for column in &mut columns {
            for (part, rows) in parts.iter_mut().zip(column.chunks_mut(per_thread)) {
                part.push(rows);
            }
        }
        std::thread::scope(|scope| {
            for (rows, mut part) in pairs.chunks(per_thread).zip(parts) {
                let ctx = &ctx;
                scope.spawn(move || ctx.score(rows, &mut part));
            }
        });
    }
    let ids = pairs
        .iter()
        .map(|&(r, _)| &*run.table.qids[r as usize])
        .collect();
    Scores {
        ids,
        names,
        measures,
        columns,
    }
}

/// `(run query, judged query)` for every id in both tables, in id order.
fn paired_queries(run: &QueryTable, qrels: &QueryTable) -> Vec<(u32, u32)> {
    let mut pairs = Vec::with_capacity(run.sorted.len().min(qrels.sorted.len()));
    let (mut i, mut j) = (0, 0);
    while i < run.sorted.len() && j < qrels.sorted.len() {
        let (r, q) = (run.sorted[i], qrels.sorted[j]);
        match run.qids[r as usize].cmp(&qrels.qids[q as usize]) {
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                pairs.push((r, q));
                i += 1;
                j += 1;
            }
        }
    }
    pairs
}

/// What every worker of [`evaluate_columns`] shares.
struct Scoring<'a> {
    qrels: &'a Qrels,
    run: &'a Run,
    measures: &'a [Measure],
}

impl Scoring<'_> {
    /// Writes row `i` of every column in `columns` (one per measure) for `pairs[i]`.
    fn score(&self, pairs: &[(u32, u32)], columns: &mut [&mut [f64]]) {
        let mut grades: Vec<Grade> = Vec::new();
        for (i, &(r, q)) in pairs.iter().enumerate() {
            let judged = &self.qrels.queries[q as usize];
            self.run
                .grades_into(r as usize, self.qrels, judged, &mut grades);
            let ideal = &self.qrels.ideal[judged.ideal.clone()];
            for (column, m) in columns.iter_mut().zip(self.measures) {
                column[i] = m.value(&grades, judged.num_relevant, ideal);
            }
        }
    }
}

/// The mean of each measure over the queries (trec_eval's `all` line): report name → mean.
/// A measure missing for some queries is averaged over the queries that have it.
pub fn mean(per_query: &PerQuery) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
    for figures in per_query.values() {
        for (name, &v) in figures {
            let e = sums.entry(name.as_str()).or_insert((0.0, 0));
            e.0 += v;
            e.1 += 1;
        }
    }
    sums.into_iter()
        .map(|(name, (sum, n))| (name.to_owned(), sum / n as f64))
        .collect()
}
/// Scores `run` against `qrels` as [`evaluate`] does and aggregates the figures into the
/// run-level result: per query (in query-id order) every measure in the order of `measures`,
/// the means and population standard deviations over the queries, and the distinct cut-offs
/// used (`level` is `trec`; there is no single `k` or span mode). An empty `measures` means
/// [`Measure::defaults`] with trec_eval's cut-offs; a measure given twice is reported once.
///
/// ```
/// use rag_eval::trec::{score, Measure, Qrels, Run};
///
/// let qrels = Qrels::parse("q1 0 d1 1\nq2 0 d2 1\n", "qrels.txt")?;
/// let run = Run::parse("q1 Q0 d1 1 0.9 r\nq2 Q0 d9 1 0.9 r\nq2 Q0 d2 2 0.5 r\n", "run.txt")?;
/// let result = score(&qrels, &run, &[Measure::ReciprocalRank, Measure::Precision(1)]);
/// assert_eq!(result.metrics.get("mrr"), Some(0.75)); // (1 + 1/2) / 2
/// assert_eq!(result.std.get("mrr"), Some(0.25));
/// assert_eq!(result.metrics.get("precision@1"), Some(0.5));
/// assert_eq!(result.cutoffs, Some(vec![1]));
/// assert_eq!(result.per_query[1].id, "q2");
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub fn score(qrels: &Qrels, run: &Run, measures: &[Measure]) -> RunResult {
    let unique = reported_measures(measures);
    let measures = &unique[..];
    let scores = evaluate_columns(qrels, run, measures);
    let order: Vec<String> = measures.iter().map(Measure::report_name).collect();
    // Column of each name of `order` in `scores` (sorted by name).
    let at: Vec<usize> = order
        .iter()
        .map(|n| scores.names.binary_search(n).unwrap_or(usize::MAX))
        .collect();
    let per: Vec<QueryResult> = scores
        .ids
        .iter()
        .enumerate()
        .map(|(q, id)| QueryResult {
            id: (*id).to_owned(),
            query: None,
            difficulty: None,
            metrics: Figures(
                order
                    .iter()
                    .zip(&at)
                    .map(|(n, &c)| (n.clone(), scores.columns.get(c).map_or(0.0, |v| v[q])))
                    .collect(),
            ),
            ..QueryResult::default()
        })
        .collect();
    run_result(measures, order, per)
}

/// The measures asked for, or [`Measure::defaults`] with trec_eval's cut-offs when none were.
fn asked_or_defaults(measures: &[Measure]) -> std::borrow::Cow<'_, [Measure]> {
    if measures.is_empty() {
        Measure::defaults(&[]).into()
    } else {
        measures.into()
    }
}

/// The measures [`score`] reports for `measures`: [`Measure::defaults`] with trec_eval's
/// cut-offs when empty, and each once, where it first appears.
pub(super) fn reported_measures(measures: &[Measure]) -> Vec<Measure> {
    let measures = asked_or_defaults(measures);
    // A measure asked for twice is reported once, where it first appears: the figures are a
    // map by name, and a repeated key would make the JSON ambiguous.
    let mut unique: Vec<Measure> = Vec::with_capacity(measures.len());
    for m in measures.iter() {
        if !unique.contains(m) {
            unique.push(*m);
        }
    }
    unique
}

/// The run-level result of per-query figures named `order` (the report names of `measures`).
pub(super) fn run_result(
    measures: &[Measure],
    order: Vec<String>,
    per: Vec<QueryResult>,
) -> RunResult {
    let mut cutoffs: Vec<usize> = measures.iter().filter_map(Measure::cutoff).collect();
    cutoffs.sort_unstable();
    cutoffs.dedup();
    let mut result = RunResult::from_queries(ResultLevel::Trec, order, per);
    result.cutoffs = Some(cutoffs);
    result
}
