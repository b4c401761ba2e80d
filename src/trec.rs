//! TREC qrels and run files, scored the way trec_eval scores them.
//!
//! This is the engine of `rag-eval score --qrels … --run …`, for retrieval output from any
//! language. Figures agree with trec_eval 9 (as packaged by pytrec_eval) to 1e-9; the
//! conventions that decide them:
//!
//! - **Qrels** lines are `qid iter docno rel` (the iteration column is ignored). A grade of
//!   1 or more is relevant; 0 is judged non-relevant; a negative grade marks a pooled but
//!   unjudged document, which is neither relevant nor counted among the judged grades.
//!   A docno judged twice for one query is an error, as in trec_eval.
//! - **Run** lines are `qid Q0 docno rank score tag`. The rank column is ignored: each query's
//!   documents are ranked by score, highest first, and equal scores are ordered by docno in
//!   *descending* byte order (trec_eval's tie rule, so `d9` ranks above `d10` on a tie). A docno
//!   listed twice for one query is an error naming both lines (trec_eval refuses such runs).
//! - **Which queries**: those in the run that have at least one qrels line, as pytrec_eval
//!   reports them. Queries judged but absent from the run, and run queries without any
//!   judgement, are left out.
//! - **Measures** ([`Measure`]): `P_k` divides by `k` however many documents were retrieved;
//!   `recall_k` and `map` divide by the number of relevant judged documents (0 when there are
//!   none); `ndcg_cut_k` gains the grade itself at rank r discounted by `log2(r + 1)`, against
//!   the ideal ordering of every judged grade; `recip_rank` is 1 / the rank of the first
//!   relevant document. The formulas are those of [`crate::metrics`] (`precision_at_k`,
//!   `recall_at_k`, `ndcg_at_k`, `reciprocal_rank`, `average_precision`), shared with the
//!   rank metrics.
//!
//! ```
//! use rag_eval::trec::{evaluate, mean, Measure, Qrels, Run};
//!
//! let qrels = Qrels::parse("q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\n", "qrels.txt")?;
//! let run = Run::parse("q1 Q0 d2 1 0.9 bm25\nq1 Q0 d3 2 0.8 bm25\nq1 Q0 d1 3 0.8 bm25\n", "run.txt")?;
//! // d3 and d1 tie at 0.8: d3 ranks first (descending docno)
//! let ranked: Vec<&str> = run.ranking("q1").unwrap().map(|(doc, _)| doc).collect();
//! assert_eq!(ranked, ["d2", "d3", "d1"]);
//!
//! let measures = Measure::parse("P.2", &[])?;
//! let per_query = evaluate(&qrels, &run, &measures);
//! assert_eq!(per_query["q1"]["precision@2"], 0.5);
//! assert_eq!(mean(&per_query)["precision@2"], 0.5);
//! # Ok::<(), rag_eval::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::metrics::{
    average_precision, ideal_grades, is_relevant, ndcg_at_k, precision_at_k, recall_at_k,
    reciprocal_rank, Grade,
};
use camino::{Utf8Path, Utf8PathBuf};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Range;

/// Grade given to a retrieved document that has no qrels line (trec_eval's "not in pool").
const NOT_JUDGED: Grade = -1;

/// Number of lines, to size buffers before reading them.
fn line_count(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count() + 1
}

/// Reads a whole file as UTF-8.
fn read_text(path: &Utf8Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    String::from_utf8(bytes).map_err(|e| Error::NotUtf8 {
        path: path.to_owned(),
        offset: e.utf8_error().valid_up_to(),
    })
}

fn parse_error(path: &Utf8Path, line: usize, message: impl Into<String>) -> Error {
    Error::Parse {
        path: path.to_owned(),
        line,
        message: message.into(),
    }
}

/// Splits a line into exactly `N` whitespace-separated fields.
fn fields<'t, const N: usize>(
    line: &'t str,
    path: &Utf8Path,
    number: usize,
    layout: &str,
) -> Result<[&'t str; N]> {
    let mut out = [""; N];
    let mut it = line.split_ascii_whitespace();
    let mut found = 0;
    for slot in out.iter_mut() {
        match it.next() {
            Some(f) => {
                *slot = f;
                found += 1;
            }
            None => break,
        }
    }
    found += it.count();
    if found != N {
        return Err(parse_error(
            path,
            number,
            format!("expected {N} fields ({layout}), found {found}"),
        ));
    }
    Ok(out)
}

/// Document ids of a whole file kept in one string; entries refer to them by byte range.
#[derive(Debug, Clone, Default)]
struct Names {
    text: String,
}

impl Names {
    fn with_capacity(bytes: usize) -> Self {
        Names {
            text: String::with_capacity(bytes),
        }
    }

    fn push(&mut self, name: &str) -> Range<usize> {
        let start = self.text.len();
        self.text.push_str(name);
        start..self.text.len()
    }

    #[inline]
    fn get(&self, range: &Range<usize>) -> &str {
        &self.text[range.clone()]
    }

    /// The same name as bytes: slicing bytes skips the char-boundary checks, and byte order is
    /// the order trec_eval's `strcmp` gives.
    #[inline]
    fn bytes(&self, range: &Range<usize>) -> &[u8] {
        &self.text.as_bytes()[range.clone()]
    }
}

/// A name's first eight bytes (big-endian, zero-padded) and its length. Two keys order their
/// names as the names' bytes do, except when both names are longer than eight bytes and share
/// those eight: so merging sorted lists mostly compares integers and leaves the names alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NameKey {
    prefix: u64,
    len: u32,
}

impl NameKey {
    fn new(name: &[u8]) -> Self {
        let mut buf = [0u8; 8];
        let n = name.len().min(8);
        buf[..n].copy_from_slice(&name[..n]);
        NameKey {
            prefix: u64::from_be_bytes(buf),
            // longer names only need to be told apart from names of eight bytes or fewer
            len: name.len().min(9) as u32,
        }
    }

    /// The order of the names, or `None` when only their bytes can tell.
    #[inline]
    fn cmp(self, other: NameKey) -> Option<Ordering> {
        match self.prefix.cmp(&other.prefix) {
            // Equal prefixes with a name of at most eight bytes: it is a prefix of the other
            // (the padding zeros match), so the shorter name sorts first.
            Ordering::Equal if self.len.min(other.len) <= 8 => Some(self.len.cmp(&other.len)),
            Ordering::Equal => None,
            unequal => Some(unequal),
        }
    }
}

/// FxHash-style hashing for the query-id maps: one multiply per eight bytes instead of
/// SipHash's rounds. Query ids come from the user's own files, so flooding is no concern here.
#[derive(Default, Clone, Copy)]
struct QidHasher(u64);

impl std::hash::Hasher for QidHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
        }
    }

    fn write_u8(&mut self, b: u8) {
        self.write(&[b]);
    }

    fn finish(&self) -> u64 {
        // The multiply leaves the low bits depending on the low input bytes only, and query
        // ids differ in their last bytes: mix everything down (murmur3's finaliser).
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

type QidMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<QidHasher>>;

/// Interns query ids while reading a file.
struct QueryIds<'t> {
    index: QidMap<&'t str, u32>,
    qids: Vec<Box<str>>,
    /// Lines of one query usually come together: the previous line's query skips the map.
    last: Option<(&'t str, u32)>,
}

impl<'t> QueryIds<'t> {
    fn new() -> Self {
        QueryIds {
            index: QidMap::default(),
            qids: Vec::new(),
            last: None,
        }
    }

    fn id(&mut self, qid: &'t str) -> u32 {
        if let Some((last, q)) = self.last {
            if last == qid {
                return q;
            }
        }
        let q = match self.index.get(qid) {
            Some(&q) => q,
            None => {
                let q = self.qids.len() as u32;
                self.index.insert(qid, q);
                self.qids.push(qid.into());
                q
            }
        };
        self.last = Some((qid, q));
        q
    }
}

/// A line of a file while reading it, before its query's lines are put in order.
struct Row<T> {
    key: NameKey,
    docno: Range<usize>,
    value: T,
    /// The query's number in order of first appearance.
    q: u32,
    line: u32,
}

/// What both files have in common once read: the queries' ids, a map to them, and their
/// order by id (which is how [`evaluate`] pairs run queries with judged ones).
#[derive(Debug, Clone, Default)]
struct QueryTable {
    qids: Vec<Box<str>>,
    index: QidMap<Box<str>, u32>,
    /// Query numbers sorted by id bytes.
    sorted: Vec<u32>,
}

impl QueryTable {
    fn new(qids: Vec<Box<str>>) -> Self {
        let index = qids
            .iter()
            .enumerate()
            .map(|(i, q)| (q.clone(), i as u32))
            .collect();
        let mut sorted: Vec<u32> = (0..qids.len() as u32).collect();
        sorted.sort_unstable_by(|&a, &b| qids[a as usize].cmp(&qids[b as usize]));
        QueryTable {
            qids,
            index,
            sorted,
        }
    }

    fn get(&self, qid: &str) -> Option<usize> {
        self.index.get(qid).map(|&q| q as usize)
    }
}

/// Reads the lines of a qrels or run file into rows grouped by query (queries in order of
/// first appearance, lines in file order within a query). `parse_line` gives a line's qid,
/// docno and value.
fn read_rows<'t, T>(
    text: &'t str,
    path: &Utf8Path,
    mut parse_line: impl FnMut(&'t str, usize) -> Result<(&'t str, &'t str, T)>,
) -> Result<Rows<T>> {
    let mut names = Names::with_capacity(text.len() / 4);
    let mut ids = QueryIds::new();
    let mut rows: Vec<Row<T>> = Vec::with_capacity(line_count(text));
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let number = i + 1;
        let (qid, docno, value) = parse_line(line, number)?;
        let line = u32::try_from(number)
            .map_err(|_| parse_error(path, number, "more lines than can be numbered"))?;
        rows.push(Row {
            key: NameKey::new(docno.as_bytes()),
            docno: names.push(docno),
            value,
            q: ids.id(qid),
            line,
        });
    }
    // Queries are numbered in order of first appearance, so rows are grouped by query exactly
    // when those numbers never decrease; a stable sort groups them otherwise.
    if rows.windows(2).any(|w| w[1].q < w[0].q) {
        rows.sort_by_key(|r| r.q);
    }
    Ok(Rows {
        names,
        qids: ids.qids,
        rows,
    })
}

/// What [`read_rows`] gives: the names, the query ids and the rows grouped by query.
struct Rows<T> {
    names: Names,
    qids: Vec<Box<str>>,
    rows: Vec<Row<T>>,
}

/// Orders two rows' names by key, falling back on the bytes.
fn name_order<T>(names: &Names, a: &Row<T>, b: &Row<T>) -> Ordering {
    a.key
        .cmp(b.key)
        .unwrap_or_else(|| names.bytes(&a.docno).cmp(names.bytes(&b.docno)))
}

/// The judgements of one query, as ranges of the flat arrays of [`Qrels`].
#[derive(Debug, Clone)]
struct JudgedQuery {
    /// Its documents in `Qrels::docnos` and `Qrels::keys`, sorted by docno.
    docs: Range<usize>,
    /// Its positive grades in `Qrels::ideal`, highest first (the ideal ranking for nDCG).
    ideal: Range<usize>,
    /// Judged documents with a relevant grade.
    num_relevant: usize,
}

/// Relevance judgements read from a TREC qrels file (`qid iter docno rel` per line).
///
/// ```
/// use rag_eval::trec::Qrels;
/// let qrels = Qrels::parse("q1 0 doc7 2\nq1 0 doc3 0\nq2 0 doc1 1\n", "qrels")?;
/// assert_eq!(qrels.len(), 2);
/// assert_eq!(qrels.grade("q1", "doc7"), Some(2));
/// assert_eq!(qrels.num_relevant("q1"), Some(1));
/// assert_eq!(qrels.grade("q1", "doc1"), None);
/// # Ok::<(), rag_eval::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Qrels {
    names: Names,
    table: QueryTable,
    /// Per query, in the order of `table.qids`.
    queries: Vec<JudgedQuery>,
    /// Per judged document, sorted by docno within each query: its name, the parts of its
    /// [`NameKey`] (kept apart so the merge in [`evaluate`] streams eight bytes a document)
    /// and its grade.
    docnos: Vec<Range<usize>>,
    prefixes: Vec<u64>,
    lens: Vec<u8>,
    grades: Vec<Grade>,
    ideal: Vec<Grade>,
}

impl Qrels {
    /// Reads a qrels file.
    pub fn from_file(path: &Utf8Path) -> Result<Self> {
        Self::parse(&read_text(path)?, path.as_str())
    }

    /// Parses qrels text; `source` names it in errors (usually the file's path). Blank lines
    /// are skipped; every other line must be `qid iter docno rel` with an integer `rel`.
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        let path = Utf8PathBuf::from(source);
        let Rows {
            names,
            qids,
            mut rows,
        } = read_rows(text, &path, |line, number| {
            let [qid, _iter, docno, rel] = fields::<4>(line, &path, number, "qid iter docno rel")?;
            let grade: Grade = rel.parse().map_err(|_| {
                parse_error(
                    &path,
                    number,
                    format!("relevance `{rel}` is not an integer"),
                )
            })?;
            Ok((qid, docno, grade))
        })?;
        let mut queries = Vec::with_capacity(qids.len());
        let mut docnos = Vec::with_capacity(rows.len());
        let mut prefixes = Vec::with_capacity(rows.len());
        let mut lens = Vec::with_capacity(rows.len());
        let mut grades = Vec::with_capacity(rows.len());
        let mut ideal = Vec::new();
        for query in rows.chunk_by_mut(|a, b| a.q == b.q) {
            query.sort_unstable_by(|a, b| name_order(&names, a, b));
            if let Some(w) = query
                .windows(2)
                .find(|w| name_order(&names, &w[0], &w[1]) == Ordering::Equal)
            {
                return Err(parse_error(
                    &path,
                    w[0].line.max(w[1].line) as usize,
                    format!(
                        "document `{}` is judged twice for query `{}` (first on line {})",
                        names.get(&w[0].docno),
                        qids[w[0].q as usize],
                        w[0].line.min(w[1].line)
                    ),
                ));
            }
            let start = docnos.len();
            let ideal_start = ideal.len();
            docnos.extend(query.iter().map(|r| r.docno.clone()));
            prefixes.extend(query.iter().map(|r| r.key.prefix));
            lens.extend(query.iter().map(|r| r.key.len as u8));
            grades.extend(query.iter().map(|r| r.value));
            ideal.extend(ideal_grades(query.iter().map(|r| r.value)));
            queries.push(JudgedQuery {
                docs: start..docnos.len(),
                ideal: ideal_start..ideal.len(),
                num_relevant: query.iter().filter(|r| is_relevant(r.value)).count(),
            });
        }
        Ok(Qrels {
            names,
            table: QueryTable::new(qids),
            queries,
            docnos,
            prefixes,
            lens,
            grades,
            ideal,
        })
    }

    /// Number of judged queries.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// Whether no query is judged.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    /// The judged query ids, in order of first appearance.
    pub fn query_ids(&self) -> impl Iterator<Item = &str> {
        self.table.qids.iter().map(|q| &**q)
    }

    /// The grade of `docno` for `qid`, if judged.
    pub fn grade(&self, qid: &str, docno: &str) -> Option<Grade> {
        let q = &self.queries[self.table.get(qid)?];
        let docnos = &self.docnos[q.docs.clone()];
        docnos
            .binary_search_by(|d| self.names.bytes(d).cmp(docno.as_bytes()))
            .ok()
            .map(|i| self.grades[q.docs.start + i])
    }

    /// Number of relevant judged documents of `qid`, if the query is judged at all.
    pub fn num_relevant(&self, qid: &str) -> Option<usize> {
        self.table.get(qid).map(|q| self.queries[q].num_relevant)
    }
}

/// Ranked retrieval output read from a TREC run file (`qid Q0 docno rank score tag` per
/// line), ranked the way trec_eval ranks it (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct Run {
    names: Names,
    table: QueryTable,
    /// Per query, in the order of `table.qids`: its range of `docnos`, `scores` and
    /// `by_docno`.
    ranges: Vec<Range<usize>>,
    /// Documents in rank order, query after query.
    docnos: Vec<Range<usize>>,
    scores: Vec<f64>,
    /// Per query, its documents sorted by docno, merged with the qrels in [`evaluate`]: the
    /// parts of their [`NameKey`]s and their positions in rank order.
    sorted_prefixes: Vec<u64>,
    sorted_lens: Vec<u8>,
    sorted_ranks: Vec<u32>,
    tag: Option<String>,
}

impl Run {
    /// Reads a run file.
    pub fn from_file(path: &Utf8Path) -> Result<Self> {
        Self::parse(&read_text(path)?, path.as_str())
    }

    /// Parses run text; `source` names it in errors (usually the file's path). Blank lines are
    /// skipped; every other line must have six fields with a numeric score (not NaN).
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        let path = Utf8PathBuf::from(source);
        let mut tag = None;
        let Rows {
            names,
            qids,
            mut rows,
        } = read_rows(text, &path, |line, number| {
            let [qid, _q0, docno, _rank, score, run_tag] =
                fields::<6>(line, &path, number, "qid Q0 docno rank score tag")?;
            let score: f64 = score
                .parse()
                .ok()
                .filter(|s: &f64| !s.is_nan())
                .ok_or_else(|| {
                    parse_error(&path, number, format!("score `{score}` is not a number"))
                })?;
            if tag.is_none() {
                tag = Some(run_tag.to_owned());
            }
            Ok((qid, docno, score))
        })?;
        let mut ranges = Vec::with_capacity(qids.len());
        let mut docnos = Vec::with_capacity(rows.len());
        let mut scores = Vec::with_capacity(rows.len());
        let mut sorted_prefixes = Vec::with_capacity(rows.len());
        let mut sorted_lens = Vec::with_capacity(rows.len());
        let mut sorted_ranks = Vec::with_capacity(rows.len());
        let mut by_docno: Vec<u32> = Vec::new();
        for query in rows.chunk_by_mut(|a, b| a.q == b.q) {
            // trec_eval's ranking: score descending, then docno descending (a total order once
            // repeated docnos are ruled out below, so an unstable sort gives the same ranking)
            query.sort_unstable_by(|a, b| {
                b.value
                    .partial_cmp(&a.value)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| name_order(&names, b, a))
            });
            let start = docnos.len();
            // By name: the order of the merge with the qrels, and repeats become neighbours.
            by_docno.clear();
            by_docno.extend(0..query.len() as u32);
            by_docno.sort_unstable_by(|&a, &b| {
                name_order(&names, &query[a as usize], &query[b as usize])
            });
            if let Some(w) = by_docno.windows(2).find(|w| {
                name_order(&names, &query[w[0] as usize], &query[w[1] as usize]) == Ordering::Equal
            }) {
                let (a, b) = (&query[w[0] as usize], &query[w[1] as usize]);
                return Err(parse_error(
                    &path,
                    a.line.max(b.line) as usize,
                    format!(
                        "document `{}` is retrieved twice for query `{}` (first on line {})",
                        names.get(&a.docno),
                        qids[a.q as usize],
                        a.line.min(b.line)
                    ),
                ));
            }
            sorted_prefixes.extend(by_docno.iter().map(|&p| query[p as usize].key.prefix));
            sorted_lens.extend(by_docno.iter().map(|&p| query[p as usize].key.len as u8));
            sorted_ranks.extend_from_slice(&by_docno);
            docnos.extend(query.iter().map(|r| r.docno.clone()));
            scores.extend(query.iter().map(|r| r.value));
            ranges.push(start..docnos.len());
        }
        Ok(Run {
            names,
            table: QueryTable::new(qids),
            ranges,
            docnos,
            scores,
            sorted_prefixes,
            sorted_lens,
            sorted_ranks,
            tag,
        })
    }

    /// Number of queries in the run.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether the run has no query.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The run's query ids, in order of first appearance.
    pub fn query_ids(&self) -> impl Iterator<Item = &str> {
        self.table.qids.iter().map(|q| &**q)
    }

    /// The tag (last column) of the first line, which names the run.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The ranking of `qid` as `(docno, score)`, best first, ties broken as trec_eval does.
    pub fn ranking(&self, qid: &str) -> Option<impl Iterator<Item = (&str, f64)> + '_> {
        let range = self.ranges[self.table.get(qid)?].clone();
        Some(
            self.docnos[range.clone()]
                .iter()
                .zip(&self.scores[range])
                .map(|(d, &s)| (self.names.get(d), s)),
        )
    }

    /// The grades of run query `q`'s ranking against judged query `judged`, in rank order,
    /// into `grades`: merges the two docno-sorted lists as trec_eval does, on name keys.
    fn grades_into(&self, q: usize, qrels: &Qrels, judged: &JudgedQuery, grades: &mut Vec<Grade>) {
        let range = self.ranges[q].clone();
        grades.clear();
        grades.resize(range.len(), NOT_JUDGED);
        let ours = &self.sorted_prefixes[range.clone()];
        let theirs = &qrels.prefixes[judged.docs.clone()];
        let (mut i, mut j) = (0, 0);
        // Branch-free steps: which list advances is arithmetic on the comparison, and only
        // equal prefixes (mostly a match) take the slower path.
        while i < ours.len() && j < theirs.len() {
            let mut order = theirs[j].cmp(&ours[i]);
            if order == Ordering::Equal {
                let (a, b) = (range.start + i, judged.docs.start + j);
                let key = |prefix, len: u8| NameKey {
                    prefix,
                    len: u32::from(len),
                };
                order = key(theirs[j], qrels.lens[b])
                    .cmp(key(ours[i], self.sorted_lens[a]))
                    .unwrap_or_else(|| {
                        let rank = self.sorted_ranks[a] as usize;
                        let name = self.names.bytes(&self.docnos[range.start + rank]);
                        qrels.names.bytes(&qrels.docnos[b]).cmp(name)
                    });
                if order == Ordering::Equal {
                    grades[self.sorted_ranks[a] as usize] = qrels.grades[b];
                }
            }
            i += usize::from(order != Ordering::Less);
            j += usize::from(order != Ordering::Greater);
        }
    }
}

/// A trec_eval measure, at a cut-off where it has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Measure {
    /// `P_k`: relevant among the first `k`, divided by `k`.
    Precision(usize),
    /// `recall_k`: relevant among the first `k`, divided by the relevant judged.
    Recall(usize),
    /// `ndcg_cut_k`: graded nDCG at `k`.
    Ndcg(usize),
    /// `recip_rank`: 1 / rank of the first relevant document.
    ReciprocalRank,
    /// `map`: average precision.
    AveragePrecision,
}

impl Measure {
    /// trec_eval's default cut-offs for `P`, `recall` and `ndcg_cut`.
    pub const DEFAULT_CUTOFFS: [usize; 9] = [5, 10, 15, 20, 30, 100, 200, 500, 1000];

    /// The default measure set: `P`, `recall` and `ndcg_cut` at `cutoffs` (trec_eval's
    /// [`DEFAULT_CUTOFFS`](Self::DEFAULT_CUTOFFS) when empty), `recip_rank` and `map`.
    ///
    /// ```
    /// use rag_eval::trec::Measure;
    /// let names: Vec<String> = Measure::defaults(&[10]).iter().map(|m| m.trec_name()).collect();
    /// assert_eq!(names, ["P_10", "recall_10", "ndcg_cut_10", "recip_rank", "map"]);
    /// assert_eq!(Measure::defaults(&[]).len(), 3 * 9 + 2);
    /// ```
    pub fn defaults(cutoffs: &[usize]) -> Vec<Measure> {
        let cutoffs = if cutoffs.is_empty() {
            &Self::DEFAULT_CUTOFFS[..]
        } else {
            cutoffs
        };
        let mut all: Vec<Measure> = Vec::with_capacity(3 * cutoffs.len() + 2);
        all.extend(cutoffs.iter().map(|&k| Measure::Precision(k)));
        all.extend(cutoffs.iter().map(|&k| Measure::Recall(k)));
        all.extend(cutoffs.iter().map(|&k| Measure::Ndcg(k)));
        all.push(Measure::ReciprocalRank);
        all.push(Measure::AveragePrecision);
        all
    }

    /// Measures from a name: trec_eval's `P`, `recall`, `ndcg_cut`, `recip_rank`, `map`, with
    /// cut-offs written `P.5,10` or `P_5`; rag-eval's report names (`precision@10`, `recall`,
    /// `ndcg`, `mrr`, `map`) are accepted too. A name without cut-offs of its own takes
    /// `cutoffs`, or trec_eval's defaults when that is empty; `recip_rank` and `map` ignore
    /// cut-offs. Cut-offs must be at least 1; repeats are dropped.
    ///
    /// ```
    /// use rag_eval::trec::Measure;
    /// assert_eq!(Measure::parse("P.5,10", &[])?, [Measure::Precision(5), Measure::Precision(10)]);
    /// assert_eq!(Measure::parse("ndcg_cut_3", &[])?, [Measure::Ndcg(3)]);
    /// assert_eq!(Measure::parse("recall", &[20])?, [Measure::Recall(20)]);
    /// assert_eq!(Measure::parse("mrr", &[5])?, [Measure::ReciprocalRank]);
    /// assert!(Measure::parse("bpref", &[]).is_err());
    /// # Ok::<(), rag_eval::Error>(())
    /// ```
    pub fn parse(name: &str, cutoffs: &[usize]) -> Result<Vec<Measure>> {
        let name = name.trim();
        let (base, own) = split_cutoffs(name)?;
        let at_k: Option<fn(usize) -> Measure> = match base {
            "P" | "precision" => Some(Measure::Precision),
            "recall" => Some(Measure::Recall),
            "ndcg_cut" | "ndcg" => Some(Measure::Ndcg),
            "recip_rank" | "mrr" => return Ok(vec![Measure::ReciprocalRank]),
            "map" => return Ok(vec![Measure::AveragePrecision]),
            _ => None,
        };
        let Some(make) = at_k else {
            return Err(Error::Config(format!(
                "unknown measure `{name}` (known: P, recall, ndcg_cut, recip_rank, map, \
                 with cut-offs as in `P.5,10` or `P_5`)"
            )));
        };
        let chosen: Vec<usize> = match (own.is_empty(), cutoffs.is_empty()) {
            (false, _) => own,
            (true, false) => cutoffs.to_vec(),
            (true, true) => Self::DEFAULT_CUTOFFS.to_vec(),
        };
        if chosen.contains(&0) {
            return Err(Error::Config(format!(
                "measure `{name}`: cut-offs must be at least 1"
            )));
        }
        let mut out: Vec<Measure> = Vec::with_capacity(chosen.len());
        for k in chosen {
            let m = make(k);
            if !out.contains(&m) {
                out.push(m);
            }
        }
        Ok(out)
    }

    /// The cut-off, for the measures that have one.
    pub fn cutoff(&self) -> Option<usize> {
        match *self {
            Measure::Precision(k) | Measure::Recall(k) | Measure::Ndcg(k) => Some(k),
            Measure::ReciprocalRank | Measure::AveragePrecision => None,
        }
    }

    /// The name rag-eval reports: `precision@10`, `recall@10`, `ndcg@10`, `mrr`, `map`.
    pub fn report_name(&self) -> String {
        match *self {
            Measure::Precision(k) => format!("precision@{k}"),
            Measure::Recall(k) => format!("recall@{k}"),
            Measure::Ndcg(k) => format!("ndcg@{k}"),
            Measure::ReciprocalRank => "mrr".to_owned(),
            Measure::AveragePrecision => "map".to_owned(),
        }
    }

    /// The name trec_eval prints: `P_10`, `recall_10`, `ndcg_cut_10`, `recip_rank`, `map`.
    pub fn trec_name(&self) -> String {
        match *self {
            Measure::Precision(k) => format!("P_{k}"),
            Measure::Recall(k) => format!("recall_{k}"),
            Measure::Ndcg(k) => format!("ndcg_cut_{k}"),
            Measure::ReciprocalRank => "recip_rank".to_owned(),
            Measure::AveragePrecision => "map".to_owned(),
        }
    }

    /// The value for one query from its grades in rank order, its number of relevant judged
    /// documents and its ideal grades.
    fn value(&self, grades: &[Grade], num_relevant: usize, ideal: &[Grade]) -> f64 {
        match *self {
            Measure::Precision(k) => precision_at_k(grades, k),
            Measure::Recall(k) => recall_at_k(grades, k, num_relevant),
            Measure::Ndcg(k) => ndcg_at_k(grades, ideal, k),
            Measure::ReciprocalRank => reciprocal_rank(grades),
            Measure::AveragePrecision => average_precision(grades, num_relevant),
        }
    }
}

impl fmt::Display for Measure {
    /// The trec_eval name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.trec_name())
    }
}

/// Splits `P.5,10`, `P_5` and `precision@5` into the base name and its cut-offs.
fn split_cutoffs(name: &str) -> Result<(&str, Vec<usize>)> {
    let bad = |list: &str| {
        Error::Config(format!(
            "measure `{name}`: cut-offs `{list}` are not positive integers"
        ))
    };
    let parse_list = |list: &str| -> Result<Vec<usize>> {
        list.split(',')
            .map(|k| k.trim().parse::<usize>().map_err(|_| bad(list)))
            .collect()
    };
    if let Some((base, list)) = name.split_once('.').or_else(|| name.split_once('@')) {
        return Ok((base, parse_list(list)?));
    }
    // `P_5`, `recall_10`, `ndcg_cut_20`: a trailing `_digits` is a cut-off
    if let Some((base, k)) = name.rsplit_once('_') {
        if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) {
            return Ok((base, parse_list(k)?));
        }
    }
    Ok((name, Vec::new()))
}

/// Per-query figures: query id → report name → value.
pub type PerQuery = BTreeMap<String, BTreeMap<String, f64>>;

/// Scores `run` against `qrels`: for every query of the run that has judgements, the value of
/// every measure, keyed by query id then [`Measure::report_name`]. An empty `measures` means
/// [`Measure::defaults`] with trec_eval's cut-offs. Large runs are scored on all available
/// cores.
pub fn evaluate(qrels: &Qrels, run: &Run, measures: &[Measure]) -> PerQuery {
    let defaults;
    let measures = if measures.is_empty() {
        defaults = Measure::defaults(&[]);
        &defaults[..]
    } else {
        measures
    };
    // One measure per report name, in the order of the names, so each query's map is a clone
    // of this template with its values written in place.
    let mut unique: Vec<(String, Measure)> =
        measures.iter().map(|m| (m.report_name(), *m)).collect();
    unique.sort_by(|a, b| a.0.cmp(&b.0));
    unique.dedup_by(|a, b| a.0 == b.0);
    let measures: Vec<Measure> = unique.iter().map(|(_, m)| *m).collect();
    let template: BTreeMap<String, f64> = unique.into_iter().map(|(n, _)| (n, 0.0)).collect();

    // Pair the run's queries with the judged ones by walking both in id order: no hashing,
    // and the figures come out in the order the result map keeps them.
    let pairs = paired_queries(&run.table, &qrels.table);
    let ctx = Scoring {
        qrels,
        run,
        measures: &measures,
        template: &template,
    };
    // Below a few thousand queries a thread costs more than it saves.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(pairs.len() / 2048)
        .max(1);
    if threads == 1 {
        return ctx.score(&pairs).into_iter().collect();
    }
    let per_thread = pairs.len().div_ceil(threads);
    let parts: Vec<Vec<(String, BTreeMap<String, f64>)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = pairs
            .chunks(per_thread)
            .map(|part| scope.spawn(|| ctx.score(part)))
            .collect();
        handles
            .into_iter()
            // a panic in a worker is a bug here, not bad input: pass it on
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    parts.into_iter().flatten().collect()
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

/// What every worker of [`evaluate`] shares.
struct Scoring<'a> {
    qrels: &'a Qrels,
    run: &'a Run,
    /// In the order of `template`'s keys.
    measures: &'a [Measure],
    template: &'a BTreeMap<String, f64>,
}

impl Scoring<'_> {
    fn score(&self, pairs: &[(u32, u32)]) -> Vec<(String, BTreeMap<String, f64>)> {
        let mut out = Vec::with_capacity(pairs.len());
        let mut grades: Vec<Grade> = Vec::new();
        for &(r, q) in pairs {
            let judged = &self.qrels.queries[q as usize];
            self.run
                .grades_into(r as usize, self.qrels, judged, &mut grades);
            let ideal = &self.qrels.ideal[judged.ideal.clone()];
            let mut figures = self.template.clone();
            for (slot, m) in figures.values_mut().zip(self.measures) {
                *slot = m.value(&grades, judged.num_relevant, ideal);
            }
            out.push((self.run.table.qids[r as usize].to_string(), figures));
        }
        out
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(run: &Run, qid: &str) -> Vec<String> {
        run.ranking(qid)
            .map(|r| r.map(|(d, _)| d.to_owned()).collect())
            .unwrap_or_default()
    }

    fn parse_err(result: Result<impl fmt::Debug>) -> (usize, String) {
        match result {
            Err(Error::Parse {
                line,
                message,
                path,
            }) => {
                assert_eq!(path.as_str(), "f.txt");
                (line, message)
            }
            other => panic!("expected a parse error, got {other:?}"),
        }
    }

    #[test]
    fn run_ranks_by_score_then_descending_docno_ignoring_the_rank_column() {
        let run = Run::parse(
            "q1 Q0 d10 1 0.5 t\n\
             q1 Q0 d9 2 0.5 t\n\
             q1 Q0 a 3 0.7 t\n\
             q1 Q0 d2 4 0.5 t\n\
             q1 Q0 z 5 -1e-3 t\n",
            "f.txt",
        )
        .unwrap();
        assert_eq!(ranked(&run, "q1"), ["a", "d9", "d2", "d10", "z"]);
        assert_eq!(run.tag(), Some("t"));
    }

    #[test]
    fn interleaved_queries_and_blank_lines() {
        let run = Run::parse(
            "q2 Q0 a 1 3 t\n\n   \nq1 Q0 b 1 2 t\nq2 Q0 c 2 4 t\r\n",
            "f.txt",
        )
        .unwrap();
        assert_eq!(run.len(), 2);
        assert_eq!(run.query_ids().collect::<Vec<_>>(), ["q2", "q1"]);
        assert_eq!(ranked(&run, "q2"), ["c", "a"]);
        assert_eq!(ranked(&run, "q1"), ["b"]);
        assert!(run.ranking("q3").is_none());
    }

    #[test]
    fn run_errors_name_the_line() {
        let (line, msg) = parse_err(Run::parse("q1 Q0 a 1 1 t\nq1 Q0 b 2 1\n", "f.txt"));
        assert_eq!(line, 2);
        assert!(
            msg.contains("expected 6 fields") && msg.contains("found 5"),
            "{msg}"
        );
        let (line, msg) = parse_err(Run::parse("q1 Q0 a 1 high t\n", "f.txt"));
        assert_eq!(line, 1);
        assert!(msg.contains("`high`"), "{msg}");
        let (_, msg) = parse_err(Run::parse("q1 Q0 a 1 NaN t\n", "f.txt"));
        assert!(msg.contains("not a number"), "{msg}");
        let (line, msg) = parse_err(Run::parse(
            "q1 Q0 a 1 1 t\nq2 Q0 a 1 1 t\n\nq1 Q0 b 2 1 t\nq1 Q0 a 3 0.5 t\n",
            "f.txt",
        ));
        assert_eq!(line, 5);
        assert!(
            msg.contains("`a` is retrieved twice for query `q1` (first on line 1)"),
            "{msg}"
        );
    }

    #[test]
    fn qrels_parse_and_errors() {
        let q = Qrels::parse("q1 0 a 2\nq1 0 b 0\nq1 0 c -1\nq2 0 a 1\n", "f.txt").unwrap();
        assert_eq!(q.len(), 2);
        assert_eq!(q.query_ids().collect::<Vec<_>>(), ["q1", "q2"]);
        assert_eq!(q.grade("q1", "c"), Some(-1));
        assert_eq!(q.num_relevant("q1"), Some(1));
        assert_eq!(q.num_relevant("q9"), None);
        let (line, msg) = parse_err(Qrels::parse("q1 0 a 1\nq1 0 b\n", "f.txt"));
        assert_eq!(line, 2);
        assert!(msg.contains("expected 4 fields"), "{msg}");
        let (_, msg) = parse_err(Qrels::parse("q1 0 a 1.5\n", "f.txt"));
        assert!(msg.contains("`1.5` is not an integer"), "{msg}");
        let (line, msg) = parse_err(Qrels::parse("q1 0 a 1\nq1 0 b 1\nq1 0 a 0\n", "f.txt"));
        assert_eq!(line, 3);
        assert!(
            msg.contains("judged twice") && msg.contains("line 1"),
            "{msg}"
        );
        assert!(Qrels::parse("", "f.txt").unwrap().is_empty());
    }

    #[test]
    fn files_missing_or_not_utf8_are_errors_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = Utf8Path::from_path(dir.path()).unwrap();
        let missing = root.join("none.qrels");
        let err = Qrels::from_file(&missing).unwrap_err().to_string();
        assert!(err.contains("none.qrels"), "{err}");
        let bad = root.join("bad.run");
        std::fs::write(&bad, b"q1 Q0 \xff 1 1 t\n").unwrap();
        assert!(matches!(
            Run::from_file(&bad),
            Err(Error::NotUtf8 { offset: 6, .. })
        ));
        let good = root.join("good.run");
        std::fs::write(&good, "q1 Q0 a 1 1 t\n").unwrap();
        assert_eq!(Run::from_file(&good).unwrap().len(), 1);
    }

    proptest::proptest! {
        #[test]
        fn name_keys_order_names_as_their_bytes(
            a in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', b'b', 0xff]), 0..12),
            b in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', b'b', 0xff]), 0..12),
        ) {
            let (ka, kb) = (NameKey::new(&a), NameKey::new(&b));
            match ka.cmp(kb) {
                Some(order) => proptest::prop_assert_eq!(order, a.cmp(&b)),
                None => proptest::prop_assert!(a.len() > 8 && b.len() > 8 && a[..8] == b[..8]),
            }
        }
    }

    #[test]
    fn ties_among_long_names_sharing_eight_bytes_are_ordered_by_all_bytes() {
        let run = Run::parse(
            "q Q0 document-10 1 1 t\nq Q0 document-9 1 1 t\nq Q0 document-1 1 1 t\nq Q0 document 1 1 t\n",
            "f.txt",
        )
        .unwrap();
        assert_eq!(
            ranked(&run, "q"),
            ["document-9", "document-10", "document-1", "document"]
        );
        let qrels =
            Qrels::parse("q 0 document-1 1\nq 0 document-10 2\nq 0 document 3\n", "q").unwrap();
        let ms = [Measure::Ndcg(4)];
        let r = &evaluate(&qrels, &run, &ms)["q"]["ndcg@4"];
        // grades by rank: unjudged, 2, 1, 3; ideal 3, 2, 1
        let l2 = |x: f64| x.log2();
        let dcg = 2.0 / l2(3.0) + 1.0 / l2(4.0) + 3.0 / l2(5.0);
        let idcg = 3.0 + 2.0 / l2(3.0) + 1.0 / l2(4.0);
        assert!((r - dcg / idcg).abs() < 1e-12);
    }

    #[test]
    fn measure_names() {
        use Measure::*;
        assert_eq!(Measure::parse("P", &[]).unwrap().len(), 9);
        assert_eq!(
            Measure::parse("P", &[3, 1, 3]).unwrap(),
            [Precision(3), Precision(1)]
        );
        assert_eq!(
            Measure::parse("P.5,10", &[7]).unwrap(),
            [Precision(5), Precision(10)]
        );
        assert_eq!(Measure::parse("P_5", &[]).unwrap(), [Precision(5)]);
        assert_eq!(Measure::parse("recall_10", &[]).unwrap(), [Recall(10)]);
        assert_eq!(Measure::parse("ndcg_cut", &[2]).unwrap(), [Ndcg(2)]);
        assert_eq!(Measure::parse("ndcg_cut.20", &[]).unwrap(), [Ndcg(20)]);
        assert_eq!(
            Measure::parse("precision@10", &[]).unwrap(),
            [Precision(10)]
        );
        assert_eq!(Measure::parse("ndcg@4", &[]).unwrap(), [Ndcg(4)]);
        assert_eq!(Measure::parse("recip_rank", &[]).unwrap(), [ReciprocalRank]);
        assert_eq!(Measure::parse(" map ", &[10]).unwrap(), [AveragePrecision]);
        for bad in ["bpref", "P.", "P.x", "ndcg_cut.0", "", "P_", "ndcg_cut_"] {
            assert!(Measure::parse(bad, &[]).is_err(), "{bad}");
        }
        assert!(Measure::parse("P", &[0]).is_err());
        let m = [
            Precision(10),
            Recall(10),
            Ndcg(10),
            ReciprocalRank,
            AveragePrecision,
        ];
        let report: Vec<String> = m.iter().map(Measure::report_name).collect();
        let trec: Vec<String> = m.iter().map(Measure::trec_name).collect();
        assert_eq!(
            report,
            ["precision@10", "recall@10", "ndcg@10", "mrr", "map"]
        );
        assert_eq!(
            trec,
            ["P_10", "recall_10", "ndcg_cut_10", "recip_rank", "map"]
        );
        assert_eq!(Ndcg(3).to_string(), "ndcg_cut_3");
        assert_eq!(
            (Ndcg(3).cutoff(), AveragePrecision.cutoff()),
            (Some(3), None)
        );
        // names round-trip
        for x in m {
            assert_eq!(Measure::parse(&x.trec_name(), &[]).unwrap(), [x]);
            assert_eq!(Measure::parse(&x.report_name(), &[10]).unwrap(), [x]);
        }
    }

    #[test]
    fn evaluate_by_hand() {
        // q1: judged a=2, b=0, c=1, e=3 (e never retrieved), u=-1 (unjudged)
        // ranking by score: x(nonpool) c b a u
        let qrels = Qrels::parse(
            "q1 0 a 2\nq1 0 b 0\nq1 0 c 1\nq1 0 e 3\nq1 0 u -1\n",
            "qrels",
        )
        .unwrap();
        let run = Run::parse(
            "q1 Q0 a 9 0.2 t\nq1 Q0 b 9 0.3 t\nq1 Q0 c 9 0.4 t\nq1 Q0 x 9 0.9 t\nq1 Q0 u 9 0.1 t\n",
            "run",
        )
        .unwrap();
        let mut ms = Measure::parse("P.1,2,4,6", &[]).unwrap();
        ms.extend(Measure::parse("recall.2,4", &[]).unwrap());
        ms.extend(Measure::parse("ndcg_cut.2,5", &[]).unwrap());
        ms.push(Measure::ReciprocalRank);
        ms.push(Measure::AveragePrecision);
        let r = &evaluate(&qrels, &run, &ms)["q1"];
        let close =
            |name: &str, v: f64| assert!((r[name] - v).abs() < 1e-12, "{name}: {}", r[name]);
        close("precision@1", 0.0);
        close("precision@2", 0.5);
        close("precision@4", 0.5);
        close("precision@6", 2.0 / 6.0);
        close("recall@2", 1.0 / 3.0);
        close("recall@4", 2.0 / 3.0);
        close("mrr", 0.5);
        close("map", (1.0 / 2.0 + 2.0 / 4.0) / 3.0);
        let l2 = |x: f64| x.log2();
        // gains: rank 2 → 1, rank 4 → 2; ideal 3, 2, 1
        close("ndcg@2", (1.0 / l2(3.0)) / (3.0 + 2.0 / l2(3.0)));
        let idcg5 = 3.0 + 2.0 / l2(3.0) + 1.0 / l2(4.0);
        close("ndcg@5", (1.0 / l2(3.0) + 2.0 / l2(5.0)) / idcg5);
    }

    #[test]
    fn evaluate_scores_run_queries_that_are_judged() {
        let qrels = Qrels::parse("q1 0 a 1\nq2 0 a 0\nq4 0 a 1\n", "qrels").unwrap();
        let run = Run::parse("q1 Q0 a 1 1 t\nq2 Q0 a 1 1 t\nq3 Q0 a 1 1 t\n", "run").unwrap();
        let r = evaluate(&qrels, &run, &[Measure::AveragePrecision]);
        assert_eq!(r.keys().collect::<Vec<_>>(), ["q1", "q2"]);
        assert_eq!(r["q1"]["map"], 1.0);
        assert_eq!(r["q2"]["map"], 0.0, "no relevant document judged");
        assert_eq!(mean(&r)["map"], 0.5);
        // no measures: trec_eval's defaults
        let all = evaluate(&qrels, &run, &[]);
        assert_eq!(all["q1"].len(), 29);
        assert_eq!(all["q1"]["precision@1000"], 0.001);
        assert!(mean(&PerQuery::new()).is_empty());
    }
}
