//! The figures of a scored run file as a table: the measures' names once, the query ids once,
//! one row of values per query; written out as the very JSON of the [`RunResult`] it stands for.

use super::Measure;
use crate::metrics::{mean_std, Figures, QueryResult, ResultLevel, RunResult};
use serde::ser::{SerializeMap, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{mpsc, Mutex};

/// Per-query figures of a run scored by [`score_run_file`](super::score_run_file), held as a
/// table rather than as a [`RunResult`]: a [`QueryResult`] repeats every measure's name as a
/// `String` in every query, which on a run of 100,000 queries and the 29 default measures costs
/// more memory than the scoring itself.
///
/// It serialises to the same JSON as [`RunScores::to_result`] (the `rag-eval score --json`
/// contract), byte for byte, without building it.
///
/// ```
/// use rag_eval::trec::{score_run_file, Measure, Qrels};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = camino::Utf8Path::from_path(dir.path()).unwrap().join("run.txt");
/// std::fs::write(&path, "q2 Q0 d9 1 0.9 r\nq2 Q0 d2 2 0.5 r\nq1 Q0 d1 1 0.9 r\n").unwrap();
/// let qrels = Qrels::parse("q1 0 d1 1\nq2 0 d2 1\n", "qrels.txt")?;
/// let scores = score_run_file(&qrels, &path, &[Measure::ReciprocalRank])?.scores;
/// assert_eq!(scores.query_ids().collect::<Vec<_>>(), ["q1", "q2"]); // in id order
/// assert_eq!(scores.row(1), [0.5]);
/// assert_eq!(scores.metrics().get("mrr"), Some(0.75));
/// assert_eq!(serde_json::to_string(&scores)?, serde_json::to_string(&scores.to_result())?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RunScores {
    /// The report names of the measures, in report order.
    names: Vec<String>,
    /// The distinct cut-offs of the measures, ascending.
    cutoffs: Vec<usize>,
    /// Sorted by id bytes.
    ids: Vec<Box<str>>,
    /// One row of `names.len()` values per query, in the order of `ids`.
    values: Vec<f64>,
    metrics: Figures,
    std: Figures,
}

impl RunScores {
    /// The table of `measures` (each once) for the queries `ids`, scored in that order with
    /// one row of `values` each.
    pub(super) fn new(measures: &[Measure], ids: Vec<Box<str>>, values: Vec<f64>) -> Self {
        let names: Vec<String> = measures.iter().map(Measure::report_name).collect();
        let width = names.len();
        debug_assert_eq!(values.len(), ids.len() * width);
        let mut order: Vec<u32> = (0..ids.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| ids[a as usize].cmp(&ids[b as usize]));
        let mut sorted = Vec::with_capacity(values.len());
        for &q in &order {
            sorted.extend_from_slice(&values[q as usize * width..][..width]);
        }
        drop(values);
        let mut slots: Vec<Option<Box<str>>> = ids.into_iter().map(Some).collect();
        let ids: Vec<Box<str>> = order
            .iter()
            .map(|&q| slots[q as usize].take().expect("each query once"))
            .collect();
        // The same sums in the same order as `RunResult::from_queries`, so the same bits.
        let mut means = Vec::with_capacity(width);
        let mut stds = Vec::with_capacity(width);
        let mut column: Vec<f64> = Vec::with_capacity(ids.len());
        for (m, name) in names.iter().enumerate() {
            column.clear();
            column.extend(sorted.iter().skip(m).step_by(width.max(1)).take(ids.len()));
            let (mean, std) = mean_std(&column);
            means.push((name.clone(), mean));
            stds.push((name.clone(), std));
        }
        let mut cutoffs: Vec<usize> = measures.iter().filter_map(Measure::cutoff).collect();
        cutoffs.sort_unstable();
        cutoffs.dedup();
        RunScores {
            names,
            cutoffs,
            ids,
            values: sorted,
            metrics: Figures(means),
            std: Figures(stds),
        }
    }

    /// The number of scored queries.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no query was scored.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The report names of the measures ([`Measure::report_name`]), in report order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The scored queries' ids, in byte order of the ids.
    pub fn query_ids(&self) -> impl Iterator<Item = &str> {
        self.ids.iter().map(|q| &**q)
    }

    /// The figures of the `q`-th query of [`RunScores::query_ids`], in the order of
    /// [`RunScores::names`].
    pub fn row(&self, q: usize) -> &[f64] {
        &self.values[q * self.names.len()..][..self.names.len()]
    }

    /// The mean of each measure over the queries (0 without queries).
    pub fn metrics(&self) -> &Figures {
        &self.metrics
    }

    /// The population standard deviation of each measure over the queries.
    pub fn std(&self) -> &Figures {
        &self.std
    }

    /// The first line of the text report, as [`RunResult::headline`] gives it.
    pub fn headline(&self) -> String {
        format!("{}, {} queries", ResultLevel::Trec, self.len())
    }

    /// The same figures as a [`RunResult`] (what [`score`](super::score) returns).
    pub fn to_result(&self) -> RunResult {
        let per_query = (0..self.len())
            .map(|q| QueryResult {
                id: self.ids[q].to_string(),
                metrics: Figures(
                    self.names
                        .iter()
                        .cloned()
                        .zip(self.row(q).to_vec())
                        .collect(),
                ),
                ..QueryResult::default()
            })
            .collect();
        let mut result = RunResult::from_queries(ResultLevel::Trec, self.names.clone(), per_query);
        result.cutoffs = Some(self.cutoffs.clone());
        result
    }
}

impl RunScores {
    /// Writes the JSON that serialising the table with `serde_json::to_writer` writes, byte
    /// for byte, with the per-query rows formatted on `threads` threads, a few thousand at a
    /// time, and written in order as they are ready.
    ///
    /// ```
    /// # use rag_eval::trec::{score_run_file, Measure, Qrels};
    /// # let dir = tempfile::tempdir().unwrap();
    /// # let path = camino::Utf8Path::from_path(dir.path()).unwrap().join("run.txt");
    /// # std::fs::write(&path, "q1 Q0 d1 1 0.9 r\nq2 Q0 d2 1 0.5 r\n").unwrap();
    /// # let qrels = Qrels::parse("q1 0 d1 1\nq2 0 d2 1\n", "qrels.txt")?;
    /// let scores = score_run_file(&qrels, &path, &[Measure::ReciprocalRank])?.scores;
    /// let mut json = Vec::new();
    /// scores.write_json(&mut json, 2)?;
    /// assert_eq!(json, serde_json::to_vec(&scores)?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_json(&self, w: &mut impl std::io::Write, threads: usize) -> std::io::Result<()> {
        let head = serde_json::to_vec(&Head(self))?;
        w.write_all(&head[..head.len() - 1])?; // all but its closing brace
        w.write_all(b",\"per_query\":[")?;
        // Each measure's name as a key, escaped once.
        let keys: Vec<Vec<u8>> = self
            .names
            .iter()
            .map(|name| {
                let mut key = serde_json::to_vec(name).expect("a string serialises");
                key.push(b':');
                key
            })
            .collect();
        let format = |rows: Range<usize>, out: &mut Vec<u8>| {
            for q in rows {
                if q > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"id\":");
                serde_json::to_writer(&mut *out, &*self.ids[q]).expect("writing to memory");
                out.extend_from_slice(b",\"metrics\":{");
                for (m, (key, value)) in keys.iter().zip(self.row(q)).enumerate() {
                    if m > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(key);
                    serde_json::to_writer(&mut *out, value).expect("writing to memory");
                }
                out.extend_from_slice(b"}}");
            }
        };
        in_order(self.len(), ROWS_AT_A_TIME, threads, format, |bytes| {
            w.write_all(bytes)
        })?;
        w.write_all(b"]}")
    }
}

/// Rows of [`RunScores::write_json`] formatted together.
const ROWS_AT_A_TIME: usize = 2048;

/// Calls `work(range, buffer)` for the ranges of `step` items that make up `0..len`, on
/// `threads` threads, and `take(buffer)` for each range in order, on this one. Buffers are
/// reused: a few per thread are in memory at a time.
fn in_order<E>(
    len: usize,
    step: usize,
    threads: usize,
    work: impl Fn(Range<usize>, &mut Vec<u8>) + Sync,
    mut take: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let parts = len.div_ceil(step);
    let next = AtomicUsize::new(0);
    let (done, results) = mpsc::sync_channel::<(usize, Vec<u8>)>(2 * threads.max(1));
    let (spare, spares) = mpsc::channel::<Vec<u8>>();
    let spares = Mutex::new(spares);
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            let (next, work, spares, done) = (&next, &work, &spares, done.clone());
            scope.spawn(move || loop {
                let part = next.fetch_add(1, Relaxed);
                if part >= parts {
                    break;
                }
                let mut buf = spares
                    .lock()
                    .ok()
                    .and_then(|s| s.try_recv().ok())
                    .unwrap_or_default();
                buf.clear();
                work(part * step..((part + 1) * step).min(len), &mut buf);
                if done.send((part, buf)).is_err() {
                    break; // `take` failed
                }
            });
        }
        drop(done);
        let mut waiting: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        let mut expected = 0;
        // Owned by the loop: leaving it early drops the receiver, and so stops the workers.
        for (part, buf) in results {
            waiting.insert(part, buf);
            while let Some(buf) = waiting.remove(&expected) {
                take(&buf)?;
                expected += 1;
                let _ = spare.send(buf);
            }
        }
        Ok(())
    })
}

/// The fields of [`RunResult`] for a TREC run before its `per_query`, in its order.
fn head_fields<S: SerializeStruct>(table: &RunScores, r: &mut S) -> Result<(), S::Error> {
    r.serialize_field("level", &ResultLevel::Trec)?;
    r.serialize_field("cutoffs", &table.cutoffs)?;
    r.serialize_field("queries", &table.len())?;
    r.serialize_field("metrics", &table.metrics)?;
    r.serialize_field("std", &table.std)
}

/// [`RunScores`] without its rows.
struct Head<'a>(&'a RunScores);

impl Serialize for Head<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut r = s.serialize_struct("RunResult", 5)?;
        head_fields(self.0, &mut r)?;
        r.end()
    }
}

impl Serialize for RunScores {
    /// The fields [`RunResult`] writes for a TREC run, in its order.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut r = s.serialize_struct("RunResult", 6)?;
        head_fields(self, &mut r)?;
        r.serialize_field("per_query", &Rows(self))?;
        r.end()
    }
}

/// [`RunResult::per_query`] written from the table.
struct Rows<'a>(&'a RunScores);

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let table = self.0;
        let mut seq = s.serialize_seq(Some(table.len()))?;
        for (q, id) in table.ids.iter().enumerate() {
            seq.serialize_element(&Row {
                id,
                names: &table.names,
                values: table.row(q),
            })?;
        }
        seq.end()
    }
}

/// One [`QueryResult`] written from the table.
struct Row<'a> {
    id: &'a str,
    names: &'a [String],
    values: &'a [f64],
}

impl Serialize for Row<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut r = s.serialize_struct("QueryResult", 2)?;
        r.serialize_field("id", self.id)?;
        r.serialize_field("metrics", &Named(self.names, self.values))?;
        r.end()
    }
}

/// Names and values written as [`Figures`] writes them.
struct Named<'a>(&'a [String], &'a [f64]);

impl Serialize for Named<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0.iter().zip(self.1) {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}
