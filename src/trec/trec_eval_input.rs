//! The input side of `rag-eval trec_eval`: qrels and run files read as trec_eval reads them,
//! and each query's ranking joined with its judgements (trec_eval's form_res_rels.c).
//!
//! Built for speed on large runs: the run is parsed a piece at a time (a block of a file read
//! in blocks, or a share of a run read whole) on every core, straight from its bytes: eight
//! bytes at a time for the separators, a score by one exact division when it is a plain
//! decimal, each line kept as 16 bytes (where its docno is, its score as an order key). Each
//! query is then ranked with
//! one sort (none where the run lists it by score already, only its ties), and its documents
//! are looked up in small hash tables: one of the judged documents, one to find a docno listed
//! twice.

use super::groups::Group;
use super::measures::{self as m, Ranked, NONPOOL, UNJUDGED};
use super::parse::{below_bang, QidMap};
use super::prefs::PrefLine;
use std::ops::Range;

/// C's `isspace` in the "C" locale.
pub(super) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The whitespace-separated fields of a line, at most `N + 1` of them (to tell "more").
pub(super) fn tokens<const N: usize>(line: &[u8]) -> ([&[u8]; N], usize) {
    let mut out: [&[u8]; N] = [&[]; N];
    let (mut n, mut i) = (0, 0);
    while i < line.len() {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i == line.len() {
            break;
        }
        let start = i;
        while i < line.len() && !is_space(line[i]) {
            i += 1;
        }
        if n < N {
            out[n] = &line[start..i];
        }
        n += 1;
        if n > N {
            break;
        }
    }
    (out, n)
}

/// One query's judgements, sorted by docno.
pub(super) struct JudgedQuery<'a> {
    pub(super) qid: &'a [u8],
    pub(super) docs: Vec<(&'a [u8], i64)>,
    /// The preferences or judgement groups of the other formats.
    pub(super) other: Other<'a>,
}

/// Reads qrels: `qid iter docno rel`, exactly four fields; `#` at the start of a line
/// comments it out. Queries sorted by id, judgements by docno (lines of one docno in file
/// order). `Err(n)` names the malformed line, comment lines not counted.
pub(super) fn read_qrels(text: &[u8]) -> std::result::Result<Vec<JudgedQuery<'_>>, usize> {
    let mut index: QidMap<&[u8], usize> = QidMap::default();
    let mut out: Vec<JudgedQuery<'_>> = Vec::new();
    let mut count = 0;
    let mut last: Option<(&[u8], usize)> = None;
    for line in text
        .strip_suffix(b"\n")
        .unwrap_or(text)
        .split(|&b| b == b'\n')
    {
        if line.first() == Some(&b'#') {
            continue;
        }
        let (f, n) = tokens::<4>(line);
        count += 1;
        if n != 4 {
            return Err(count);
        }
        // Lines of one query usually come together: the previous line's query skips the map.
        let q = match last {
            Some((qid, q)) if same(qid, f[0]) => q,
            _ => *index.entry(f[0]).or_insert_with(|| {
                out.push(JudgedQuery {
                    qid: f[0],
                    docs: Vec::new(),
                    other: Other::Qrels,
                });
                out.len() - 1
            }),
        };
        last = Some((f[0], q));
        out[q].docs.push((f[2], m::atol(f[3])));
    }
    // A stable sort of the lines by (qid, docno), query by query.
    out.sort_unstable_by(|a, b| a.qid.cmp(b.qid));
    for q in &mut out {
        if !q.docs.is_sorted_by(|a, b| a.0 <= b.0) {
            q.docs.sort_by(|a, b| a.0.cmp(b.0));
        }
    }
    Ok(out)
}

/// A run line kept for ranking: where its docno is in its piece of the file, and its score as
/// an order key ([`score_key`]).
#[derive(Clone, Copy)]
pub(super) struct Line {
    start: u32,
    len: u32,
    key: u64,
}

/// A score as a key whose unsigned order is `f64::total_cmp`'s, -0.0 made 0.0 (C compares
/// them equal).
pub(super) fn score_key(score: f64) -> u64 {
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// The score of a [`score_key`] (-0.0 comes back as 0.0).
pub(super) fn key_score(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key & !(1 << 63)
    } else {
        !key
    })
}

/// C's `atof` of a score: plain decimals of at most 15 digits (`0.8731`, `-12.5`) by one
/// correctly rounded division of two exact numbers, which is what `strtod` gives; anything
/// else by [`atof`].
fn read_score(s: &[u8]) -> f64 {
    const POWERS: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let (negative, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 16 {
        return atof(s);
    }
    let (mut mantissa, mut dot) = (0u64, None);
    for (i, &c) in digits.iter().enumerate() {
        let digit = c.wrapping_sub(b'0');
        if digit < 10 {
            mantissa = mantissa * 10 + u64::from(digit);
        } else if c == b'.' && dot.is_none() {
            dot = Some(i);
        } else {
            return atof(s);
        }
    }
    let count = digits.len() - usize::from(dot.is_some());
    if count == 0 || count > 15 {
        return atof(s);
    }
    let decimals = dot.map_or(0, |i| digits.len() - 1 - i);
    let value = mantissa as f64 / POWERS[decimals];
    if negative {
        -value
    } else {
        value
    }
}

/// A piece of a run file, parsed: its lines, and each stretch of lines of one query.
#[derive(Default)]
pub(super) struct RunPiece<'a> {
    text: &'a [u8],
    lines: Vec<Line>,
    stretches: Vec<(&'a [u8], Range<u32>)>,
    /// Lines read (blank and comment lines left out).
    count: usize,
    /// The first malformed line, numbered within the piece.
    malformed: Option<usize>,
    run_id: Option<&'a [u8]>,
}

impl<'a> RunPiece<'a> {
    /// Lines read (blank and comment lines left out).
    pub(super) fn count(&self) -> usize {
        self.count
    }

    /// The first malformed line, numbered within the piece.
    pub(super) fn malformed(&self) -> Option<usize> {
        self.malformed
    }

    /// The run id of the piece's last line.
    pub(super) fn run_id(&self) -> Option<&'a [u8]> {
        self.run_id
    }

    /// Each stretch of lines of one query: its id and the docno and score key of each line,
    /// in file order.
    pub(super) fn stretches(
        &self,
    ) -> impl Iterator<Item = (&'a [u8], impl Iterator<Item = (&'a [u8], u64)> + Clone + '_)> + '_
    {
        let text = self.text;
        self.stretches.iter().map(move |(qid, range)| {
            let lines = self.lines[range.start as usize..range.end as usize]
                .iter()
                .map(move |l| (&text[l.start as usize..(l.start + l.len) as usize], l.key));
            (*qid, lines)
        })
    }

    /// Takes a line of `found` fields (the first six in `fields`, as ranges of `text`).
    #[inline]
    fn line(&mut self, fields: &[Range<usize>; 6], found: usize) -> bool {
        if found == 0 || self.text[fields[0].start] == b'#' {
            return true;
        }
        self.count += 1;
        if found < 6 {
            self.malformed = Some(self.count);
            return false;
        }
        let text = self.text;
        let qid = &text[fields[0].clone()];
        let at = self.lines.len() as u32;
        match self.stretches.last_mut() {
            Some((last, range)) if same(last, qid) => range.end = at + 1,
            _ => self.stretches.push((qid, at..at + 1)),
        }
        let docno = fields[2].clone();
        self.lines.push(Line {
            start: docno.start as u32,
            len: docno.len() as u32,
            key: score_key(read_score(&text[fields[4].clone()])),
        });
        self.run_id = Some(&text[fields[5].clone()]);
        true
    }
}

/// Parses a piece of a run (shorter than 4 GiB): lines split at `\n`, fields at C's
/// whitespace, the bytes below `!` found eight at a time.
pub(super) fn read_run_piece(text: &[u8]) -> RunPiece<'_> {
    let mut p = RunPiece {
        text,
        lines: Vec::with_capacity(text.len() / 32),
        ..RunPiece::default()
    };
    let mut fields: [Range<usize>; 6] = Default::default();
    let mut found = 0;
    // The start of the field being read, if its first byte was seen.
    let mut field_start = 0;
    let mut words = text.chunks_exact(8);
    let mut at = 0;
    let tail = {
        let rest = words.remainder();
        let mut word = [b'!'; 8];
        word[..rest.len()].copy_from_slice(rest);
        word
    };
    for word in words.by_ref().chain(std::iter::once(&tail[..])) {
        let mut below = below_bang(u64::from_le_bytes(word.try_into().expect("eight bytes")));
        while below != 0 {
            let pos = at + (below.trailing_zeros() / 8) as usize;
            below &= below - 1;
            let c = text[pos];
            if !is_space(c) {
                // Another control character is part of a field.
                continue;
            }
            if pos > field_start {
                if found < 6 {
                    fields[found] = field_start..pos;
                }
                found += 1;
            }
            field_start = pos + 1;
            if c == b'\n' {
                if !p.line(&fields, found) {
                    return p;
                }
                found = 0;
            }
        }
        at += 8;
    }
    if text.len() > field_start {
        if found < 6 {
            fields[found] = field_start..text.len();
        }
        found += 1;
    }
    p.line(&fields, found);
    p
}

/// A run: its pieces, and per query (in order of first appearance) its stretches of lines.
pub(super) struct Results<'a> {
    pieces: Vec<RunPiece<'a>>,
    /// Per query, its stretches: `(piece, range of the piece's lines)`.
    queries: Vec<Vec<(u32, Range<u32>)>>,
    index: QidMap<&'a [u8], usize>,
    pub(super) run_id: &'a [u8],
}

impl<'a> Results<'a> {
    /// The run query of `qid`, if the run has it.
    pub(super) fn query(&self, qid: &[u8]) -> Option<usize> {
        self.index.get(qid).copied()
    }

    /// The docno and score key of each line of query `q`, in file order.
    pub(super) fn docs(&self, q: usize) -> impl Iterator<Item = (&'a [u8], u64)> + Clone + '_ {
        self.queries[q].iter().flat_map(move |(piece, range)| {
            let piece = &self.pieces[*piece as usize];
            let text: &'a [u8] = piece.text;
            piece.lines[range.start as usize..range.end as usize]
                .iter()
                .map(move |l| (&text[l.start as usize..(l.start + l.len) as usize], l.key))
        })
    }

    /// Number of queries.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.queries.len()
    }
}

/// Reads a run: `qid iter docno rank score runid`, at least six fields; blank lines and
/// lines starting with `#` skipped. `Err(n)` names the malformed line as trec_eval numbers it
/// (counting only the lines read). Pieces of the file are parsed on `threads` threads.
pub(super) fn read_results(text: &[u8], threads: usize) -> std::result::Result<Results<'_>, usize> {
    // Pieces of whole lines, each shorter than 4 GiB (their lines keep 32-bit offsets).
    let pieces = threads.max(1).max(text.len().div_ceil(1 << 31));
    let mut bounds = vec![0];
    for t in 1..pieces {
        let at = (text.len() * t / pieces).max(*bounds.last().unwrap_or(&0));
        let end = text[at..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(text.len(), |i| at + i + 1);
        bounds.push(end);
    }
    bounds.push(text.len());
    let pieces: Vec<RunPiece<'_>> = if bounds.len() > 2 {
        std::thread::scope(|s| {
            let handles: Vec<_> = bounds
                .windows(2)
                .map(|w| {
                    let piece = &text[w[0]..w[1]];
                    s.spawn(move || read_run_piece(piece))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    } else {
        vec![read_run_piece(text)]
    };
    let mut r = Results {
        pieces: Vec::new(),
        queries: Vec::new(),
        index: QidMap::default(),
        run_id: b"",
    };
    let mut before = 0;
    for (p, piece) in pieces.iter().enumerate() {
        if let Some(line) = piece.malformed {
            return Err(before + line);
        }
        before += piece.count;
        for (qid, range) in &piece.stretches {
            let stretch = (p as u32, range.clone());
            match r.index.get(qid) {
                Some(&q) => r.queries[q].push(stretch),
                None => {
                    r.index.insert(qid, r.queries.len());
                    r.queries.push(vec![stretch]);
                }
            }
        }
        r.run_id = piece.run_id.unwrap_or(r.run_id);
    }
    r.pieces = pieces;
    Ok(r)
}

/// A retrieved document being ranked.
#[derive(Clone, Copy)]
struct Entry<'a> {
    key: u64,
    /// The docno's first eight bytes, big-endian, zero-padded: mostly enough to order two.
    prefix: u64,
    docno: &'a [u8],
}

impl<'a> Entry<'a> {
    #[inline]
    fn new(docno: &'a [u8], key: u64) -> Self {
        Entry {
            key,
            prefix: u64::from_be_bytes(padded(docno)),
            docno,
        }
    }
}

/// The first eight bytes of `bytes`, zero-padded (without a call to `memcpy` for the usual
/// names of eight bytes or more).
#[inline]
fn padded(bytes: &[u8]) -> [u8; 8] {
    match bytes.first_chunk::<8>() {
        Some(word) => *word,
        None => {
            let mut buf = [0u8; 8];
            for (b, &c) in buf.iter_mut().zip(bytes) {
                *b = c;
            }
            buf
        }
    }
}

/// `a == b` for the short names of qrels and runs, with a few loads instead of a call to
/// `memcmp`.
#[inline]
pub(super) fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("eight"));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("four"));
    match n {
        // Two overlapping loads cover each.
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        _ => a == b,
    }
}

/// trec_eval's ranking: score descending, then docno descending. Where the prefixes differ
/// they order the docnos as their bytes do (a shorter name's padding zeros sort first).
#[inline]
fn ranks_before(a: &Entry<'_>, b: &Entry<'_>) -> std::cmp::Ordering {
    b.key
        .cmp(&a.key)
        .then(b.prefix.cmp(&a.prefix))
        .then_with(|| b.docno.cmp(a.docno))
}

/// A hash of a docno: one multiply per eight bytes.
#[inline]
fn hash(docno: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = docno.len() as u64;
    let mut chunks = docno.chunks_exact(8);
    for c in &mut chunks {
        h = (h.rotate_left(26) ^ u64::from_le_bytes(c.try_into().expect("eight bytes")))
            .wrapping_mul(K);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        // The tail is read with one load of the last eight bytes (overlapping the chunk before)
        // rather than copied into a padded word: a byte copy followed by a wide load stalls.
        let n = docno.len();
        let tail = match n {
            8.. => u64::from_le_bytes(docno[n - 8..].try_into().expect("eight bytes")),
            4..=7 => {
                let half =
                    |at: usize| u32::from_le_bytes(docno[at..at + 4].try_into().expect("four"));
                u64::from(half(0)) | u64::from(half(n - 4)) << 32
            }
            _ => u64::from_le_bytes(padded(rest)),
        };
        h = (h.rotate_left(26) ^ tail).wrapping_mul(K);
    }
    h ^ (h >> 29)
}

/// What ranking a query needs beside its input, kept from one query to the next.
#[derive(Default)]
pub(super) struct Scratch<'a> {
    entries: Vec<Entry<'a>>,
    /// Open addressing, [`tag`]s of the ranked documents; 0 is empty.
    seen: Vec<u64>,
    /// The same, of the judged documents.
    judged: Vec<u64>,
    /// A ranking's grades, given back when its query is done ([`Scratch::reuse`]).
    rels: Vec<i64>,
}

impl Scratch<'_> {
    /// Keeps the buffer of a ranking done with, for the next one.
    pub(super) fn reuse(&mut self, r: Ranked) {
        self.rels = r.rels;
    }
}

/// A table entry: the high half of `h` and 1 + the position `i`.
#[inline]
fn tag(h: u64, i: usize) -> u64 {
    (h & !0xffff_ffff) | (i as u64 + 1)
}

/// The first slot to try for `h`.
#[inline]
fn home(h: u64, mask: usize) -> usize {
    (h.wrapping_mul(0xff51_afd7_ed55_8ccd) >> 32) as usize & mask
}

/// Sets up `table` for `n` keys (a power of two, at least twice `n`); its mask.
fn clear_table(table: &mut Vec<u64>, n: usize) -> usize {
    let size = (2 * n).next_power_of_two().max(16);
    table.clear();
    table.resize(size, 0);
    size - 1
}

/// Joins a ranking with its judgements (trec_eval's form_res_rels.c): ranked by score, ties
/// by docno descending; at most `max_docs` documents; duplicates refused (the error names the
/// first duplicate docno in byte order, as trec_eval does).
pub(super) fn rank<'a>(
    scratch: &mut Scratch<'a>,
    docs: impl Iterator<Item = (&'a [u8], u64)>,
    judged: &JudgedQuery<'_>,
    level: i64,
    max_docs: i64,
    judged_only: bool,
) -> std::result::Result<Ranked, String> {
    let entries = &mut scratch.entries;
    entries.clear();
    entries.extend(docs.map(|(d, k)| Entry::new(d, k)));
    // Runs usually list a query by score: then only the ties need ordering.
    if entries.is_sorted_by(|a, b| a.key >= b.key) {
        for ties in entries.chunk_by_mut(|a, b| a.key == b.key) {
            if ties.len() > 1 {
                ties.sort_unstable_by(ranks_before);
            }
        }
    } else {
        entries.sort_unstable_by(ranks_before);
    }
    let keep = usize::try_from(max_docs.max(0)).unwrap_or(usize::MAX);
    entries.truncate(keep);

    // The judged documents, by hash.
    let judged_mask = clear_table(&mut scratch.judged, judged.docs.len());
    for (i, d) in judged.docs.iter().enumerate() {
        let h = hash(d.0);
        let mut slot = home(h, judged_mask);
        while scratch.judged[slot] != 0 {
            slot = (slot + 1) & judged_mask;
        }
        scratch.judged[slot] = tag(h, i);
    }
    let max_rel = judged.docs.iter().map(|d| d.1).max().unwrap_or(0);
    let mut rel_levels = vec![0u64; (max_rel.max(0) + 1) as usize];
    for d in &judged.docs {
        if d.1 >= 0 {
            rel_levels[d.1 as usize] += 1;
        }
    }
    let mut rels = std::mem::take(&mut scratch.rels);
    rels.clear();
    rels.reserve(entries.len());
    let mut r = Ranked {
        rels,
        level,
        ..Ranked::default()
    };
    // One pass: each docno hashed once, looked up among those ranked before it (a docno
    // listed twice) and among the judged ones (its grade). A table's entry keeps the high
    // half of the hash beside the position, so that a name is compared only when it matches.
    let mask = clear_table(&mut scratch.seen, entries.len());
    let mut twice = false;
    for (i, e) in entries.iter().enumerate() {
        let h = hash(e.docno);
        let mut slot = home(h, mask);
        loop {
            match scratch.seen[slot] {
                0 => {
                    scratch.seen[slot] = tag(h, i);
                    break;
                }
                t if t >> 32 == h >> 32
                    && same(entries[(t as u32 - 1) as usize].docno, e.docno) =>
                {
                    twice = true;
                    break;
                }
                _ => slot = (slot + 1) & mask,
            }
        }
        if twice {
            break;
        }
        let mut slot = home(h, judged_mask);
        let rel = loop {
            match scratch.judged[slot] {
                0 => break NONPOOL,
                t => {
                    let (docno, rel) = judged.docs[(t as u32 - 1) as usize];
                    if t >> 32 == h >> 32 && same(docno, e.docno) {
                        break if rel < 0 { UNJUDGED } else { rel };
                    }
                    slot = (slot + 1) & judged_mask;
                }
            }
        };
        if judged_only && rel < 0 {
            continue;
        }
        match rel {
            NONPOOL => r.num_nonpool += 1,
            UNJUDGED => r.num_unjudged += 1,
            g if g >= level => r.num_rel_ret += 1,
            _ => {}
        }
        r.rels.push(rel);
    }
    if twice {
        scratch.rels = r.rels;
        // trec_eval names the first duplicate in byte order.
        let mut by_docno: Vec<&[u8]> = entries.iter().map(|d| d.docno).collect();
        by_docno.sort_unstable();
        let first = by_docno
            .windows(2)
            .find(|w| w[0] == w[1])
            .map_or(&b""[..], |w| w[0]);
        return Err(format!(
            "trec_eval.form_res_qrels: duplicate docs {}",
            String::from_utf8_lossy(first)
        ));
    }
    if let Some(w) = judged.docs.windows(2).find(|w| same(w[0].0, w[1].0)) {
        scratch.rels = r.rels;
        return Err(format!(
            "trec_eval.form_res_rels: duplicate docs {}\n",
            String::from_utf8_lossy(w[1].0)
        ));
    }
    r.num_rel = rel_levels
        .iter()
        .enumerate()
        .filter(|&(i, _)| i as i64 >= level)
        .map(|(_, n)| n)
        .sum();
    r.rel_levels = rel_levels;
    Ok(r)
}

/// A query's judgements besides qrels grades: none (`-R qrels`, the grades are in `docs`),
/// preferences (`-R prefs`, `qrels_prefs`) or judgement groups (`-R qrels_jg`).
pub(super) enum Other<'a> {
    Qrels,
    Prefs(Vec<PrefLine<'a>>),
    Groups(Vec<Group<'a>>),
}

/// C's `atof`: the longest prefix that reads as a number, 0 when none does.
pub(super) fn atof(s: &[u8]) -> f64 {
    if let Some(v) = std::str::from_utf8(s)
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
    {
        return v;
    }
    let mut i = 0;
    while i < s.len() && is_space(s[i]) {
        i += 1;
    }
    let start = i;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let from = *i;
        while *i < s.len() && s[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - from
    };
    let mut n = digits(&mut i);
    if i < s.len() && s[i] == b'.' {
        i += 1;
        n += digits(&mut i);
    }
    if n == 0 {
        // `inf`, `nan` and the like, or nothing
        // Bytes, not text: a score need not be UTF-8, and slicing text could split a character.
        let rest = &s[start..];
        let sign = if rest.first() == Some(&b'-') {
            -1.0
        } else {
            1.0
        };
        let body = match rest.first() {
            Some(b'-' | b'+') => &rest[1..],
            _ => rest,
        };
        for word in ["infinity", "inf", "nan"] {
            if body.len() >= word.len() && body[..word.len()].eq_ignore_ascii_case(word.as_bytes())
            {
                return sign
                    * if word == "nan" {
                        f64::NAN
                    } else {
                        f64::INFINITY
                    };
            }
        }
        return 0.0;
    }
    let mantissa_end = i;
    if i < s.len() && (s[i] == b'e' || s[i] == b'E') {
        let mut j = i + 1;
        if j < s.len() && (s[j] == b'+' || s[j] == b'-') {
            j += 1;
        }
        if digits(&mut j) > 0 {
            i = j;
        }
    }
    let text = std::str::from_utf8(&s[start..i]).unwrap_or_default();
    text.parse::<f64>().unwrap_or_else(|_| {
        std::str::from_utf8(&s[start..mantissa_end])
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(0.0)
    })
}
