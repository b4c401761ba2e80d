//! Scoring a run file while reading it, without holding the file or its lines in memory.
//!
//! Run files are usually grouped by query (every line of a query together), and then each
//! query is scored as soon as its last line is read: memory holds one query's lines and the
//! figures. A file not grouped by query is read twice more: once to count each query's lines
//! and bytes, once to place every line in a compact array laid out by query (its docno's
//! bytes, their end and its score: no line numbers, no per-line allocation), after which the
//! queries are scored one by one in the same way.

use super::eval::{reported_measures, run_result};
use super::parse::{parse_error, run_line, JudgedQuery, NameKey, QidMap, NOT_JUDGED};
use super::{Measure, Qrels};
use crate::error::{Error, Result};
use crate::metrics::{Figures, Grade, QueryResult, RunResult};
use camino::Utf8Path;
use std::cmp::Ordering;
use std::io::Read;

/// What [`score_run_file`] gives: the figures and the run's query ids.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredRun {
    /// The same result as [`score`](super::score) gives for the same qrels and run.
    pub result: RunResult,
    /// Every query id of the run, judged or not, in order of first appearance.
    pub query_ids: Vec<String>,
}

/// Scores the run file at `path` against `qrels` as [`score`](super::score) scores a
/// [`Run`](super::Run) read from it (the same figures, the same errors with their lines),
/// reading the file as a stream: a run grouped by query is scored query by query as it is
/// read, and memory holds one query's lines; any other run is kept in a compact form, laid out
/// by query, while it is scored.
///
/// ```
/// use rag_eval::trec::{score_run_file, Measure, Qrels};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = camino::Utf8Path::from_path(dir.path()).unwrap().join("run.txt");
/// std::fs::write(&path, "q1 Q0 d1 1 0.9 r\nq2 Q0 d9 1 0.9 r\nq2 Q0 d2 2 0.5 r\nq3 Q0 d1 1 1 r\n").unwrap();
/// let qrels = Qrels::parse("q1 0 d1 1\nq2 0 d2 1\n", "qrels.txt")?;
/// let scored = score_run_file(&qrels, &path, &[Measure::ReciprocalRank])?;
/// assert_eq!(scored.result.metrics.get("mrr"), Some(0.75)); // q3 is not judged
/// assert_eq!(scored.query_ids, ["q1", "q2", "q3"]);
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub fn score_run_file(qrels: &Qrels, path: &Utf8Path, measures: &[Measure]) -> Result<ScoredRun> {
    let measures = reported_measures(measures);
    let mut scorer = Scorer::new(qrels, &measures, path);
    let (query_ids, scored) = match grouped(&mut scorer)? {
        Some(ids) => (ids, scorer.scored),
        None => {
            let mut scorer = Scorer::new(qrels, &measures, path);
            let ids = compact(&mut scorer)?;
            (ids, scorer.scored)
        }
    };
    let order: Vec<String> = measures.iter().map(Measure::report_name).collect();
    let Scored { ids, values } = scored;
    let mut by_id: Vec<u32> = (0..ids.len() as u32).collect();
    by_id.sort_unstable_by(|&a, &b| ids[a as usize].cmp(&ids[b as usize]));
    let per: Vec<QueryResult> = by_id
        .iter()
        .map(|&q| {
            let row = &values[q as usize * order.len()..][..order.len()];
            QueryResult {
                id: ids[q as usize].to_string(),
                query: None,
                difficulty: None,
                metrics: Figures(order.iter().cloned().zip(row.iter().copied()).collect()),
                ..QueryResult::default()
            }
        })
        .collect();
    Ok(ScoredRun {
        result: run_result(&measures, order, per),
        query_ids: query_ids.into_iter().map(String::from).collect(),
    })
}

/// Reads the run assuming it is grouped by query, scoring each query when the next begins.
/// `None` when a query's lines turn out to be apart (nothing is kept to score them from).
fn grouped(scorer: &mut Scorer<'_>) -> Result<Option<Vec<Box<str>>>> {
    let mut seen: QidMap<Box<str>, ()> = QidMap::default();
    let mut ids: Vec<Box<str>> = Vec::new();
    let mut lines = QueryLines::default();
    let mut current: Option<Box<str>> = None;
    let path = scorer.path;
    let complete = for_each_line(path, |number, line| {
        let (qid, docno, score, _) = run_line(line, path, number)?;
        if current.as_deref() != Some(qid) {
            if let Some(done) = &current {
                scorer.query(done, lines.view())?;
                lines.clear();
            }
            if seen.contains_key(qid) {
                return Ok(false);
            }
            let id: Box<str> = qid.into();
            seen.insert(id.clone(), ());
            ids.push(id.clone());
            current = Some(id);
        }
        lines.push(docno.as_bytes(), score);
        Ok(true)
    })?;
    if !complete {
        return Ok(None);
    }
    if let Some(done) = &current {
        scorer.query(done, lines.view())?;
    }
    Ok(Some(ids))
}

/// Reads a run not grouped by query: a first pass numbers the queries and counts each one's
/// lines and docno bytes, a second places every line in [`QueryLines`]-shaped arrays laid out
/// by query; then each query is scored. Returns the query ids in order of first appearance.
fn compact(scorer: &mut Scorer<'_>) -> Result<Vec<Box<str>>> {
    let path = scorer.path;
    let mut numbers = Numbering::default();
    let mut counts: Vec<usize> = Vec::new();
    let mut bytes: Vec<usize> = Vec::new();
    for_each_line(path, |number, line| {
        let (qid, docno, _, _) = run_line(line, path, number)?;
        let q = numbers.number(qid);
        if q == counts.len() {
            counts.push(0);
            bytes.push(0);
        }
        counts[q] += 1;
        bytes[q] += docno.len();
        Ok(true)
    })?;
    // Where each query's lines and bytes begin; then, while placing, where the next goes.
    let starts = |sizes: &[usize]| -> Vec<usize> {
        let mut at = 0;
        sizes
            .iter()
            .map(|&n| {
                at += n;
                at - n
            })
            .collect()
    };
    let (line_starts, byte_starts) = (starts(&counts), starts(&bytes));
    let (mut next_line, mut next_byte) = (line_starts.clone(), byte_starts.clone());
    let total_lines: usize = counts.iter().sum();
    let mut names = vec![0u8; bytes.iter().sum()];
    let mut ends = vec![0u32; total_lines];
    let mut scores = vec![0f64; total_lines];
    for_each_line(path, |number, line| {
        let (qid, docno, score, _) = run_line(line, path, number)?;
        let changed = || parse_error(path, number, "the file changed while it was read");
        let q = numbers.get(qid).ok_or_else(changed)?;
        let (l, b) = (next_line[q], next_byte[q]);
        if l == line_starts[q] + counts[q] || b + docno.len() > byte_starts[q] + bytes[q] {
            return Err(changed());
        }
        names[b..b + docno.len()].copy_from_slice(docno.as_bytes());
        ends[l] = u32::try_from(b + docno.len() - byte_starts[q])
            .map_err(|_| parse_error(path, number, "a query's docnos exceed 4 GB"))?;
        scores[l] = score;
        next_line[q] = l + 1;
        next_byte[q] = b + docno.len();
        Ok(true)
    })?;
    for (q, id) in numbers.ids.iter().enumerate() {
        let lines = QueryView {
            names: &names[byte_starts[q]..][..bytes[q]],
            ends: &ends[line_starts[q]..][..counts[q]],
            scores: &scores[line_starts[q]..][..counts[q]],
        };
        scorer.query(id, lines)?;
    }
    Ok(numbers.ids)
}

/// Numbers query ids in order of first appearance.
#[derive(Default)]
struct Numbering {
    index: QidMap<Box<str>, u32>,
    ids: Vec<Box<str>>,
    /// The previous line's query: lines of one query often come together.
    last: Option<usize>,
}

impl Numbering {
    /// The number of `qid`, numbering it if it is new.
    fn number(&mut self, qid: &str) -> usize {
        if let Some(q) = self.get(qid) {
            return q;
        }
        let q = self.ids.len();
        self.index.insert(qid.into(), q as u32);
        self.ids.push(qid.into());
        self.last = Some(q);
        q
    }

    /// The number of `qid`, if it has one.
    fn get(&mut self, qid: &str) -> Option<usize> {
        if let Some(q) = self.last {
            if &*self.ids[q] == qid {
                return Some(q);
            }
        }
        let q = *self.index.get(qid)? as usize;
        self.last = Some(q);
        Some(q)
    }
}

/// One query's lines: its docnos' bytes end to end, where each ends, and the scores.
#[derive(Debug, Default)]
struct QueryLines {
    names: Vec<u8>,
    ends: Vec<u32>,
    scores: Vec<f64>,
}

impl QueryLines {
    fn view(&self) -> QueryView<'_> {
        QueryView {
            names: &self.names,
            ends: &self.ends,
            scores: &self.scores,
        }
    }

    fn push(&mut self, docno: &[u8], score: f64) {
        self.names.extend_from_slice(docno);
        self.ends.push(self.names.len() as u32);
        self.scores.push(score);
    }

    fn clear(&mut self) {
        self.names.clear();
        self.ends.clear();
        self.scores.clear();
    }
}

/// One query's lines as [`QueryLines`] holds them, borrowed.
#[derive(Debug, Clone, Copy)]
struct QueryView<'a> {
    names: &'a [u8],
    ends: &'a [u32],
    scores: &'a [f64],
}

impl<'a> QueryView<'a> {
    fn len(&self) -> usize {
        self.ends.len()
    }

    #[inline]
    fn name(&self, i: usize) -> &'a [u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.names[start..self.ends[i] as usize]
    }
}

/// The figures of the scored queries, in the order they were scored.
#[derive(Default)]
struct Scored {
    ids: Vec<Box<str>>,
    /// One row of `measures.len()` values per query.
    values: Vec<f64>,
}

/// Scores one query at a time, with buffers reused from query to query.
struct Scorer<'a> {
    qrels: &'a Qrels,
    measures: &'a [Measure],
    path: &'a Utf8Path,
    scored: Scored,
    keys: Vec<NameKey>,
    by_docno: Vec<u32>,
    by_rank: Vec<u32>,
    /// Rank of each line (the inverse of `by_rank`).
    rank_of: Vec<u32>,
    prefixes: Vec<u64>,
    lens: Vec<u8>,
    grades: Vec<Grade>,
}

impl<'a> Scorer<'a> {
    fn new(qrels: &'a Qrels, measures: &'a [Measure], path: &'a Utf8Path) -> Self {
        Scorer {
            qrels,
            measures,
            path,
            scored: Scored::default(),
            keys: Vec::new(),
            by_docno: Vec::new(),
            by_rank: Vec::new(),
            rank_of: Vec::new(),
            prefixes: Vec::new(),
            lens: Vec::new(),
            grades: Vec::new(),
        }
    }

    /// Ranks query `qid`'s lines as trec_eval does, refuses a docno listed twice, and scores
    /// the query when it is judged.
    fn query(&mut self, qid: &str, lines: QueryView<'_>) -> Result<()> {
        let n = lines.len();
        self.keys.clear();
        self.keys
            .extend((0..n).map(|i| NameKey::new(lines.name(i))));
        let keys = &self.keys;
        let order = |a: usize, b: usize| {
            keys[a]
                .cmp(keys[b])
                .unwrap_or_else(|| lines.name(a).cmp(lines.name(b)))
        };
        self.by_docno.clear();
        self.by_docno.extend(0..n as u32);
        self.by_docno
            .sort_unstable_by(|&a, &b| order(a as usize, b as usize));
        if let Some(w) = self
            .by_docno
            .windows(2)
            .find(|w| order(w[0] as usize, w[1] as usize) == Ordering::Equal)
        {
            let docno = String::from_utf8_lossy(lines.name(w[0] as usize)).into_owned();
            return Err(duplicate(self.path, qid, &docno));
        }
        let Some(q) = self.qrels.table.get(qid) else {
            return Ok(());
        };
        let judged: &JudgedQuery = &self.qrels.queries[q];
        // trec_eval's ranking: score descending, then docno descending.
        self.by_rank.clear();
        self.by_rank.extend(0..n as u32);
        self.by_rank.sort_unstable_by(|&a, &b| {
            let (a, b) = (a as usize, b as usize);
            lines.scores[b]
                .partial_cmp(&lines.scores[a])
                .unwrap_or(Ordering::Equal)
                .then_with(|| order(b, a))
        });
        self.rank_of.clear();
        self.rank_of.resize(n, 0);
        for (rank, &line) in self.by_rank.iter().enumerate() {
            self.rank_of[line as usize] = rank as u32;
        }
        self.prefixes.clear();
        self.lens.clear();
        for &line in &self.by_docno {
            let (prefix, len) = keys[line as usize].parts();
            self.prefixes.push(prefix);
            self.lens.push(len);
        }
        self.grades.clear();
        self.grades.resize(n, NOT_JUDGED);
        let (by_docno, rank_of, grades) = (&self.by_docno, &self.rank_of, &mut self.grades);
        self.qrels.merge(
            judged,
            &self.prefixes,
            &self.lens,
            |i| lines.name(by_docno[i] as usize),
            |i, grade| grades[rank_of[by_docno[i] as usize] as usize] = grade,
        );
        let ideal = &self.qrels.ideal[judged.ideal.clone()];
        for m in self.measures {
            let v = m.value(&self.grades, judged.num_relevant, ideal);
            self.scored.values.push(v);
        }
        self.scored.ids.push(qid.into());
        Ok(())
    }
}

/// The error for `docno` listed twice for `qid`, naming both lines as [`Run`](super::Run)
/// does; the lines are found by reading the file again, since they are not kept.
fn duplicate(path: &Utf8Path, qid: &str, docno: &str) -> Error {
    let mut found: Vec<usize> = Vec::with_capacity(2);
    let scan = for_each_line(path, |number, line| {
        if let Ok((q, d, _, _)) = run_line(line, path, number) {
            if q == qid && d == docno {
                found.push(number);
            }
        }
        Ok(found.len() < 2)
    });
    match (scan, &found[..]) {
        (Ok(_), &[first, second]) => parse_error(
            path,
            second,
            format!(
                "document `{docno}` is retrieved twice for query `{qid}` (first on line {first})"
            ),
        ),
        (Err(e), _) => e,
        _ => parse_error(path, 0, "the file changed while it was read"),
    }
}

/// Calls `f(number, line)` for every line of the file at `path` that is not blank, with its
/// one-based number, as `str::lines` splits it (after a byte order mark at the start), until
/// `f` returns `false`. Returns whether every line was seen.
fn for_each_line(path: &Utf8Path, mut f: impl FnMut(usize, &str) -> Result<bool>) -> Result<bool> {
    const BLOCK: usize = 1 << 20;
    let mut file = std::fs::File::open(path).map_err(|e| Error::io("read", path, e))?;
    let mut buf: Vec<u8> = vec![0; BLOCK];
    // Bytes of `buf` holding data, and the file offset of `buf[0]`.
    let (mut filled, mut offset) = (0usize, 0usize);
    let mut number = 0usize;
    let mut first = true;
    loop {
        if filled == buf.len() {
            // A line longer than the buffer.
            buf.resize(buf.len() * 2, 0);
        }
        let n = loop {
            match file.read(&mut buf[filled..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("read", path, e)),
            }
        };
        let end = filled + n;
        let at_end = n == 0;
        let mut pos = 0;
        loop {
            let line_end = match find_newline(&buf[pos..end]) {
                Some(i) => pos + i,
                None if at_end && pos < end => end,
                None => break,
            };
            number += 1;
            let bytes = &buf[pos..line_end];
            let text = std::str::from_utf8(bytes).map_err(|e| Error::NotUtf8 {
                path: path.to_owned(),
                offset: offset + pos + e.valid_up_to(),
            })?;
            let mut text = text.strip_suffix('\r').unwrap_or(text);
            if first {
                text = crate::dataset::strip_bom(text);
                first = false;
            }
            pos = (line_end + 1).min(end);
            if !text.trim().is_empty() && !f(number, text)? {
                return Ok(false);
            }
            if line_end == end {
                break;
            }
        }
        if at_end {
            return Ok(true);
        }
        buf.copy_within(pos..end, 0);
        filled = end - pos;
        offset += pos;
    }
}

/// Position of the first `\n` in `bytes`, eight bytes at a time.
#[inline]
pub(super) fn find_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const NEWLINES: u64 = ONES * b'\n' as u64;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for c in &mut chunks {
        let word = u64::from_le_bytes(c.try_into().expect("eight bytes")) ^ NEWLINES;
        // A zero byte of `word` is a newline; this sets the high bit of the first one.
        let zeros = word.wrapping_sub(ONES) & !word & HIGHS;
        if zeros != 0 {
            return Some(at + (zeros.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| at + i)
}
