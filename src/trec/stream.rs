//! Scoring a run file while reading it, without holding the file or its lines in memory.
//!
//! Run files are usually grouped by query (every line of a query together), and then each
//! query is scored as soon as its last line is read: the file is cut into blocks of whole
//! queries ([`blocks`](super::blocks)), parsed and scored on every core, and the blocks'
//! figures are taken in file order; memory holds the blocks in flight and the figures. A file
//! not grouped by query is read twice more: once to count each query's lines and bytes, once
//! to place every line in a compact array laid out by query (its docno's bytes, their end and
//! its score: no line numbers, no per-line allocation), after which the queries are scored one
//! by one in the same way.

use super::blocks::{
    each_line, each_line_fields, in_parallel, renumber, Block, BlockReader, BLOCK_BYTES,
};
use super::eval::reported_measures;
use super::parse::{
    parse_error, run_fields, run_line, JudgedQuery, NameKey, QidMap, NOT_JUDGED, RUN_LAYOUT,
};
use super::{Measure, Qrels, RunScores};
use crate::error::{Error, Result};
use crate::metrics::Grade;
use camino::Utf8Path;
use std::cmp::Ordering;
use std::ops::Range;
use std::sync::RwLock;

/// What [`score_run_file`] gives: the figures and the run's query ids.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredRun {
    /// The same figures as [`score`](super::score) gives for the same qrels and run, as a
    /// table ([`RunScores::to_result`] is that [`RunResult`](crate::metrics::RunResult)).
    pub scores: RunScores,
    /// Every query id of the run, judged or not, in order of first appearance.
    pub query_ids: Vec<String>,
}

/// Scores the run file at `path` against `qrels` as [`score`](super::score) scores a
/// [`Run`](super::Run) read from it (the same figures, the same errors with their lines),
/// reading the file as a stream: a run grouped by query is scored query by query as it is
/// read, on every core, and memory holds a few blocks of lines; any other run is kept in a
/// compact form, laid out by query, while it is scored.
///
/// ```
/// use rag_eval::trec::{score_run_file, Measure, Qrels};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = camino::Utf8Path::from_path(dir.path()).unwrap().join("run.txt");
/// std::fs::write(&path, "q1 Q0 d1 1 0.9 r\nq2 Q0 d9 1 0.9 r\nq2 Q0 d2 2 0.5 r\nq3 Q0 d1 1 1 r\n").unwrap();
/// let qrels = Qrels::parse("q1 0 d1 1\nq2 0 d2 1\n", "qrels.txt")?;
/// let scored = score_run_file(&qrels, &path, &[Measure::ReciprocalRank])?;
/// assert_eq!(scored.scores.metrics().get("mrr"), Some(0.75)); // q3 is not judged
/// assert_eq!(scored.query_ids, ["q1", "q2", "q3"]);
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub fn score_run_file(qrels: &Qrels, path: &Utf8Path, measures: &[Measure]) -> Result<ScoredRun> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    score_run_file_with(qrels, path, measures, threads, BLOCK_BYTES)
}

/// [`score_run_file`] with `threads` threads parsing and scoring blocks of about
/// `block_bytes` bytes.
pub(super) fn score_run_file_with(
    qrels: &Qrels,
    path: &Utf8Path,
    measures: &[Measure],
    threads: usize,
    block_bytes: usize,
) -> Result<ScoredRun> {
    let measures = reported_measures(measures);
    let (query_ids, scored) = match grouped(qrels, &measures, path, threads, block_bytes)? {
        Some(done) => done,
        None => compact(qrels, &measures, path, threads, block_bytes)?,
    };
    Ok(ScoredRun {
        scores: RunScores::new(&measures, scored.ids, scored.values),
        query_ids: query_ids.into_iter().map(String::from).collect(),
    })
}

/// What a block of a run grouped by query gives.
#[derive(Default)]
struct BlockScores {
    /// Lines in the block, blank ones included.
    lines: usize,
    /// The query of each stretch of lines of one query, in order.
    queries: Vec<Box<str>>,
    /// The figures of the judged queries among them.
    scored: Scored,
    /// Why the block was left before its end.
    stop: Option<Stop>,
    /// The error scoring the last query raised: it is raised after the next block's first
    /// line is read, as a reader going line by line would.
    last: Option<Error>,
}

/// Why a block was left before its end.
enum Stop {
    /// An error reading a line, numbered within the block.
    Line(Error),
    /// An error scoring a query, once the first line of the next was read.
    Query(Error),
    /// A query's lines come again after another query's: the run is not grouped.
    Again,
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Line(e)
    }
}

/// Parses and scores one block of a run taken to be grouped by query.
fn score_block(scorer: &mut Scorer<'_>, block: &Block) -> BlockScores {
    let path = scorer.path;
    let mut out = BlockScores::default();
    let mut lines = QueryLines::default();
    let mut current: Option<&str> = None;
    let mut seen: QidMap<&str, ()> = QidMap::default();
    let read = each_line_fields(block, path, RUN_LAYOUT, |number, fields| {
        let (qid, docno, score, _) = run_fields(fields, path, number).map_err(Stop::Line)?;
        if current != Some(qid) {
            if let Some(done) = current {
                scorer.query(done, lines.view()).map_err(Stop::Query)?;
                lines.clear();
            }
            if seen.insert(qid, ()).is_some() {
                return Err(Stop::Again);
            }
            out.queries.push(qid.into());
            current = Some(qid);
        }
        lines.push(docno.as_bytes(), score);
        Ok(true)
    });
    match read {
        Ok(Some(n)) => {
            out.lines = n;
            if let Some(done) = current {
                out.last = scorer.query(done, lines.view()).err();
            }
        }
        Ok(None) => unreachable!("the callback never stops without an error"),
        Err(stop) => out.stop = Some(stop),
    }
    out.scored = std::mem::take(&mut scorer.scored);
    out
}

/// What the blocks' results add up to, taken in file order.
#[derive(Default)]
struct InOrder {
    seen: QidMap<Box<str>, ()>,
    ids: Vec<Box<str>>,
    scored: Scored,
    /// Lines before the next block.
    lines: usize,
    /// The last query's scoring error, raised unless the next line is an error itself.
    pending: Option<Error>,
}

impl InOrder {
    /// Takes the next block's result: `Ok(false)` when the run turns out not to be grouped.
    fn take(&mut self, block: BlockScores) -> Result<bool> {
        if let Some(pending) = self.pending.take() {
            return match (block.queries.is_empty(), block.stop) {
                // Blank lines only: the next line is further on.
                (true, None) => {
                    self.pending = Some(pending);
                    self.lines += block.lines;
                    Ok(true)
                }
                (true, Some(Stop::Line(e))) => Err(renumber(e, self.lines)),
                _ => Err(pending),
            };
        }
        for q in block.queries {
            if self.seen.insert(q.clone(), ()).is_some() {
                return Ok(false);
            }
            self.ids.push(q);
        }
        self.scored.ids.extend(block.scored.ids);
        self.scored.values.extend(block.scored.values);
        match block.stop {
            Some(Stop::Line(e)) => Err(renumber(e, self.lines)),
            Some(Stop::Query(e)) => Err(e),
            Some(Stop::Again) => Ok(false),
            None => {
                self.pending = block.last;
                self.lines += block.lines;
                Ok(true)
            }
        }
    }
}

/// Reads the run assuming it is grouped by query, in blocks of whole queries parsed and
/// scored by `threads` threads. Gives the query ids in order of first appearance and the
/// figures, or `None` when a query's lines turn out to be apart.
fn grouped(
    qrels: &Qrels,
    measures: &[Measure],
    path: &Utf8Path,
    threads: usize,
    block_bytes: usize,
) -> Result<Option<(Vec<Box<str>>, Scored)>> {
    let mut in_order = InOrder::default();
    let whole = in_parallel(
        path,
        threads,
        block_bytes,
        || Scorer::new(qrels, measures, path),
        score_block,
        |block| in_order.take(block),
    )?;
    if !whole {
        return Ok(None);
    }
    if let Some(e) = in_order.pending.take() {
        return Err(e);
    }
    Ok(Some((in_order.ids, in_order.scored)))
}

/// Each line of one block with its query and docno length.
#[derive(Default)]
struct BlockCounts {
    /// Lines in the block, blank ones included.
    lines: usize,
    /// Per line (blank ones left out): the number of its query, or [`NEW`] and the position
    /// of its id in `new` when the query had no number when the block was read.
    of_line: Vec<u32>,
    /// Per line, the length of its docno.
    docnos: Vec<u32>,
    /// Query ids without a number, end to end, in order of first appearance in the block,
    /// and where each ends.
    new: String,
    new_ends: Vec<usize>,
    /// The first line that could not be read, numbered within the block.
    error: Option<Error>,
}

/// A query id as a key of the map that numbers them: ids of up to 15 bytes (the usual ones)
/// are kept in the key itself, so that looking one up compares two integers rather than
/// following a pointer to the bytes of every candidate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum QidKey {
    /// The bytes, then zeros, and the length in the last byte.
    Short(u128),
    Long(Box<str>),
}

impl QidKey {
    fn new(qid: &str) -> Self {
        let bytes = qid.as_bytes();
        if bytes.len() < 16 {
            let mut key = [0u8; 16];
            key[..bytes.len()].copy_from_slice(bytes);
            key[15] = bytes.len() as u8;
            QidKey::Short(u128::from_le_bytes(key))
        } else {
            QidKey::Long(qid.into())
        }
    }
}

/// Marks a line's query as new in [`BlockCounts::of_line`].
const NEW: u32 = 1 << 31;

fn count_block(
    block: &Block,
    path: &Utf8Path,
    numbers: &RwLock<QidMap<QidKey, u32>>,
) -> BlockCounts {
    let mut out = BlockCounts::default();
    let mut new: QidMap<&str, u32> = QidMap::default();
    // Numbers are given in file order as blocks are taken: most queries have one by the time
    // a block is read, and the rest are numbered then.
    let numbers = numbers.read().unwrap_or_else(|e| e.into_inner());
    let read = each_line_fields(block, path, RUN_LAYOUT, |number, fields| {
        let (qid, docno, _, _) = run_fields(fields, path, number)?;
        let q = match numbers.get(&QidKey::new(qid)) {
            Some(&q) => q,
            None => {
                NEW | *new.entry(qid).or_insert_with(|| {
                    out.new.push_str(qid);
                    out.new_ends.push(out.new.len());
                    (out.new_ends.len() - 1) as u32
                })
            }
        };
        out.of_line.push(q);
        out.docnos.push(docno.len() as u32);
        Ok::<_, Error>(true)
    });
    match read {
        Ok(n) => out.lines = n.unwrap_or_default(),
        Err(e) => out.error = Some(e),
    }
    out
}

/// One block's lines, parsed: each one's query number, docno and score.
#[derive(Default)]
struct BlockLines {
    queries: Vec<u32>,
    lines: QueryLines,
    /// The first line that could not be placed, numbered within the block.
    error: Option<Error>,
    /// Lines in the block, blank ones included.
    count: usize,
}

/// Parses the lines of `block` whose query (in `of_line`, from its first line on) is one of
/// `keep`; the other lines are only counted.
fn parse_block(block: &Block, path: &Utf8Path, of_line: &[u32], keep: Range<u32>) -> BlockLines {
    let mut out = BlockLines::default();
    let mut k = 0;
    let read = each_line_fields(block, path, RUN_LAYOUT, |number, fields| {
        let q = *of_line
            .get(k)
            .ok_or_else(|| parse_error(path, number, CHANGED))?;
        k += 1;
        if keep.contains(&q) {
            let (_, docno, score, _) = run_fields(fields, path, number)?;
            out.queries.push(q);
            out.lines.push(docno.as_bytes(), score);
        }
        Ok::<_, Error>(true)
    });
    match read {
        Ok(n) if k == of_line.len() => out.count = n.unwrap_or_default(),
        Ok(n) => out.error = Some(parse_error(path, n.unwrap_or_default(), CHANGED)),
        Err(e) => out.error = Some(e),
    }
    out
}

const CHANGED: &str = "the file changed while it was read";

/// Reads a run not grouped by query: a first pass numbers the queries and counts each one's
/// lines and docno bytes, a second places every line in [`QueryLines`]-shaped arrays laid out
/// by query (both passes parse on `threads` threads); then the queries are scored, on as many.
/// Returns the query ids in order of first appearance and the figures.
fn compact(
    qrels: &Qrels,
    measures: &[Measure],
    path: &Utf8Path,
    threads: usize,
    block_bytes: usize,
) -> Result<(Vec<Box<str>>, Scored)> {
    let numbers: RwLock<QidMap<QidKey, u32>> = RwLock::default();
    let mut ids: Vec<Box<str>> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    let mut bytes: Vec<usize> = Vec::new();
    // Each line's query (blank lines left out), and where each block's lines begin in it:
    // the later passes read the same blocks, and parse only the lines they place.
    let mut of_line: Vec<u32> = Vec::new();
    let mut block_starts: Vec<usize> = vec![0];
    let mut local: Vec<u32> = Vec::new();
    let mut before = 0;
    in_parallel(
        path,
        threads,
        block_bytes,
        || (),
        |(), block| count_block(block, path, &numbers),
        |block| {
            local.clear();
            if !block.new_ends.is_empty() {
                let mut numbers = numbers.write().unwrap_or_else(|e| e.into_inner());
                let mut start = 0;
                for &end in &block.new_ends {
                    let qid = &block.new[start..end];
                    start = end;
                    let key = QidKey::new(qid);
                    let q = match numbers.get(&key) {
                        Some(&q) => q,
                        None => {
                            let q = u32::try_from(ids.len())
                                .ok()
                                .filter(|&q| q < NEW)
                                .ok_or_else(|| {
                                    parse_error(
                                        path,
                                        before + 1,
                                        "more queries than can be numbered",
                                    )
                                })?;
                            numbers.insert(key, q);
                            ids.push(qid.into());
                            counts.push(0);
                            bytes.push(0);
                            q
                        }
                    };
                    local.push(q);
                }
            }
            for (&q, &docno) in block.of_line.iter().zip(&block.docnos) {
                let q = if q & NEW == 0 {
                    q
                } else {
                    local[(q & !NEW) as usize]
                };
                counts[q as usize] += 1;
                bytes[q as usize] += docno as usize;
                of_line.push(q);
            }
            block_starts.push(of_line.len());
            if let Some(e) = block.error {
                return Err(renumber(e, before));
            }
            before += block.lines;
            Ok(true)
        },
    )?;
    drop((numbers, local));
    let total_bytes: usize = (0..ids.len()).map(|q| bytes[q] + counts[q] * 12).sum();
    // The lines are placed and scored a range of queries at a time, each range's arrays at
    // most `budget` bytes, so that memory stays well below the file's size; each round reads
    // the file again (in parallel), which costs less than the memory it saves.
    let need = |q: usize| bytes[q] + counts[q] * (4 + 8);
    let budget = (total_bytes / ROUND_SHARE).max(MIN_ROUND_BYTES);
    let mut scored = Scored::default();
    let mut lo = 0;
    while lo < ids.len() {
        let mut hi = lo + 1;
        let mut size = need(lo);
        while hi < ids.len() && size + need(hi) <= budget {
            size += need(hi);
            hi += 1;
        }
        let part = place_and_score(
            qrels,
            measures,
            path,
            (threads, block_bytes),
            (&of_line, &block_starts, &ids[lo..hi], lo),
            (&counts[lo..hi], &bytes[lo..hi]),
        )?;
        scored.ids.extend(part.ids);
        scored.values.extend(part.values);
        lo = hi;
    }
    Ok((ids, scored))
}

/// A run file is read again for each range of queries whose arrays take this share of it.
const ROUND_SHARE: usize = 4;
/// ... but not for less than this many bytes of arrays.
const MIN_ROUND_BYTES: usize = 16 << 20;

/// Reads the run again to place the lines of queries `first..first + ids.len()` (of
/// `counts` lines and `bytes` docno bytes each) in [`QueryLines`]-shaped arrays laid out by
/// query, then scores those queries on `threads` threads.
fn place_and_score(
    qrels: &Qrels,
    measures: &[Measure],
    path: &Utf8Path,
    (threads, block_bytes): (usize, usize),
    (of_line, block_starts, ids, first): (&[u32], &[usize], &[Box<str>], usize),
    (counts, bytes): (&[usize], &[usize]),
) -> Result<Scored> {
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
    let (line_starts, byte_starts) = (starts(counts), starts(bytes));
    let (mut next_line, mut next_byte) = (line_starts.clone(), byte_starts.clone());
    let mut names = vec![0u8; bytes.iter().sum()];
    let total_lines: usize = counts.iter().sum();
    let mut ends = vec![0u32; total_lines];
    let mut scores = vec![0f64; total_lines];
    let range = first as u32..(first + ids.len()) as u32;
    let mut before = 0;
    in_parallel(
        path,
        threads,
        block_bytes,
        || (),
        |(), block| {
            let lines = block_starts
                .get(block.index..block.index + 2)
                .map_or(&[][..], |b| &of_line[b[0]..b[1]]);
            parse_block(block, path, lines, range.clone())
        },
        |block| {
            let changed = || parse_error(path, before + 1, CHANGED);
            let lines = block.lines.view();
            for (i, &q) in block.queries.iter().enumerate() {
                let q = (q - range.start) as usize;
                let docno = lines.name(i);
                let (l, b) = (next_line[q], next_byte[q]);
                if l == line_starts[q] + counts[q] || b + docno.len() > byte_starts[q] + bytes[q] {
                    return Err(changed());
                }
                names[b..b + docno.len()].copy_from_slice(docno);
                ends[l] = u32::try_from(b + docno.len() - byte_starts[q])
                    .map_err(|_| parse_error(path, before + 1, "a query's docnos exceed 4 GB"))?;
                scores[l] = lines.scores[i];
                next_line[q] = l + 1;
                next_byte[q] = b + docno.len();
            }
            if let Some(e) = block.error {
                return Err(renumber(e, before));
            }
            before += block.count;
            Ok(true)
        },
    )?;
    let placed = next_line.iter().zip(&line_starts).map(|(n, s)| n - s);
    if !placed.eq(counts.iter().copied()) {
        return Err(parse_error(path, before, CHANGED));
    }
    drop((next_line, next_byte));
    let view = |q: usize| QueryView {
        names: &names[byte_starts[q]..][..bytes[q]],
        ends: &ends[line_starts[q]..][..counts[q]],
        scores: &scores[line_starts[q]..][..counts[q]],
    };
    // Contiguous ranges of queries, one per thread: the first error of the first range that
    // has one is the error scoring them in order would raise.
    let per_thread = ids.len().div_ceil(threads.max(1)).max(1);
    let parts: Vec<Result<Scored>> = std::thread::scope(|scope| {
        let handles: Vec<_> = ids
            .chunks(per_thread)
            .enumerate()
            .map(|(part, chunk)| {
                let view = &view;
                scope.spawn(move || {
                    let mut scorer = Scorer::new(qrels, measures, path);
                    for (i, id) in chunk.iter().enumerate() {
                        scorer.query(id, view(part * per_thread + i))?;
                    }
                    Ok(scorer.scored)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("scoring does not panic"))
            .collect()
    });
    let mut scored = Scored::default();
    for part in parts {
        let part = part?;
        scored.ids.extend(part.ids);
        scored.values.extend(part.values);
    }
    Ok(scored)
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
    /// The query's lines by docno: an open-addressing hash table of line numbers.
    slots: Vec<u32>,
    by_rank: Vec<u32>,
    /// Per line, its grade if judged.
    judged: Vec<Grade>,
    /// Per rank, the grade of the line at that rank.
    grades: Vec<Grade>,
}

/// An empty slot of [`Scorer::slots`].
const EMPTY: u32 = u32::MAX;

impl<'a> Scorer<'a> {
    fn new(qrels: &'a Qrels, measures: &'a [Measure], path: &'a Utf8Path) -> Self {
        Scorer {
            qrels,
            measures,
            path,
            scored: Scored::default(),
            keys: Vec::new(),
            slots: Vec::new(),
            by_rank: Vec::new(),
            judged: Vec::new(),
            grades: Vec::new(),
        }
    }

    /// Ranks query `qid`'s lines as trec_eval does, refuses a docno listed twice, and scores
    /// the query when it is judged.
    ///
    /// The lines are put in a hash table by docno, which finds a docno listed twice and, for
    /// each judged document, its line; only the ranking sorts, and for a run listed by score
    /// only its ties.
    fn query(&mut self, qid: &str, lines: QueryView<'_>) -> Result<()> {
        let n = lines.len();
        self.keys.clear();
        self.keys
            .extend((0..n).map(|i| NameKey::new(lines.name(i))));
        let keys = &self.keys;
        let same = |a: usize, name: &[u8], key: NameKey| match keys[a].cmp(key) {
            Some(order) => order == Ordering::Equal,
            None => lines.name(a) == name,
        };
        // At most half full, so that probes stay short.
        let mask = (2 * n).next_power_of_two().max(8) - 1;
        self.slots.clear();
        self.slots.resize(mask + 1, EMPTY);
        for (i, &key) in keys.iter().enumerate() {
            let mut slot = key.hash(lines.name(i)) as usize & mask;
            while self.slots[slot] != EMPTY {
                if same(self.slots[slot] as usize, lines.name(i), key) {
                    return Err(self.repeated(qid, lines));
                }
                slot = (slot + 1) & mask;
            }
            self.slots[slot] = i as u32;
        }
        let Some(q) = self.qrels.table.get(qid) else {
            return Ok(());
        };
        let judged: &JudgedQuery = &self.qrels.queries[q];
        self.judged.clear();
        self.judged.resize(n, NOT_JUDGED);
        for (key, name, grade) in self.qrels.judgements(judged) {
            let mut slot = key.hash(name) as usize & mask;
            while self.slots[slot] != EMPTY {
                let line = self.slots[slot] as usize;
                if same(line, name, key) {
                    self.judged[line] = grade;
                    break;
                }
                slot = (slot + 1) & mask;
            }
        }
        // trec_eval's ranking: score descending, then docno descending.
        let scores = lines.scores;
        let by_docno_descending = |a: &u32, b: &u32| {
            let (a, b) = (*a as usize, *b as usize);
            keys[b]
                .cmp(keys[a])
                .unwrap_or_else(|| lines.name(b).cmp(lines.name(a)))
        };
        self.by_rank.clear();
        self.by_rank.extend(0..n as u32);
        if scores.windows(2).all(|w| w[0] >= w[1]) {
            // Lines listed by score, as most runs list them: only ties need ordering.
            for tie in self
                .by_rank
                .chunk_by_mut(|&a, &b| scores[a as usize] == scores[b as usize])
            {
                tie.sort_unstable_by(by_docno_descending);
            }
        } else {
            self.by_rank.sort_unstable_by(|a, b| {
                scores[*b as usize]
                    .partial_cmp(&scores[*a as usize])
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| by_docno_descending(a, b))
            });
        }
        self.grades.clear();
        self.grades
            .extend(self.by_rank.iter().map(|&line| self.judged[line as usize]));
        let ideal = &self.qrels.ideal[judged.ideal.clone()];
        for m in self.measures {
            let v = m.value(&self.grades, judged.num_relevant, ideal);
            self.scored.values.push(v);
        }
        self.scored.ids.push(qid.into());
        Ok(())
    }

    /// The error for query `qid`, some docno of which is listed twice: the first such docno
    /// in docno order, as reading the whole run names it.
    #[cold]
    fn repeated(&self, qid: &str, lines: QueryView<'_>) -> Error {
        let mut names: Vec<&[u8]> = (0..lines.len()).map(|i| lines.name(i)).collect();
        names.sort_unstable();
        let docno = names
            .windows(2)
            .find(|w| w[0] == w[1])
            .map_or(&b""[..], |w| w[0]);
        duplicate(self.path, qid, &String::from_utf8_lossy(docno))
    }
}

/// The error for `docno` listed twice for `qid`, naming both lines as [`Run`](super::Run)
/// does; the lines are found by reading the file again, since they are not kept.
fn duplicate(path: &Utf8Path, qid: &str, docno: &str) -> Error {
    let mut found: Vec<usize> = Vec::with_capacity(2);
    let scan = (|| -> Result<()> {
        let mut reader = BlockReader::open(path, BLOCK_BYTES)?;
        let mut before = 0;
        while found.len() < 2 {
            let Some(block) = reader.next(Vec::new())? else {
                break;
            };
            let lines = each_line(&block, path, |number, line| {
                if let Ok((q, d, _, _)) = run_line(line, path, number) {
                    if q == qid && d == docno {
                        found.push(before + number);
                    }
                }
                Ok::<_, Error>(found.len() < 2)
            })?;
            before += lines.unwrap_or_default();
        }
        Ok(())
    })();
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
