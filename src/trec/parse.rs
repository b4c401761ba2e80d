//! Reading qrels and run files into the flat, docno-sorted tables that scoring merges.

use crate::error::{Error, Result};
use crate::metrics::{ideal_grades, is_relevant, Grade};
use camino::{Utf8Path, Utf8PathBuf};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::ops::Range;

/// Grade given to a retrieved document that has no qrels line (trec_eval's "not in pool").
pub(super) const NOT_JUDGED: Grade = -1;

/// Number of lines, to size buffers before reading them.
fn line_count(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count() + 1
}

/// Qrels text is cut into pieces parsed apart only when each is at least this long.
const MIN_PIECE: usize = 1 << 22;

/// Reads a whole file as UTF-8.
fn read_text(path: &Utf8Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    String::from_utf8(bytes).map_err(|e| Error::NotUtf8 {
        path: path.to_owned(),
        offset: e.utf8_error().valid_up_to(),
    })
}

pub(super) fn parse_error(path: &Utf8Path, line: usize, message: impl Into<String>) -> Error {
    Error::Parse {
        path: path.to_owned(),
        line,
        message: message.into(),
    }
}

/// Splits a line into exactly `N` whitespace-separated fields (ASCII whitespace, as
/// `str::split_ascii_whitespace` splits).
pub(super) fn fields<'t, const N: usize>(
    line: &'t str,
    path: &Utf8Path,
    number: usize,
    layout: &str,
) -> Result<[&'t str; N]> {
    let mut out = [""; N];
    let bytes = line.as_bytes();
    let (mut found, mut i) = (0, 0);
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == bytes.len() {
            break;
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if let Some(slot) = out.get_mut(found) {
            // ASCII bytes on both sides: the slice falls on character boundaries.
            *slot = &line[start..i];
        }
        found += 1;
    }
    if found != N {
        return Err(fields_error(path, number, N, layout, found));
    }
    Ok(out)
}

/// Calls `f(number, fields)` for every line of `text` that is not blank (as `str::trim` has
/// it), with its one-based number (after the `before` lines of the file before `text`) and
/// its `N` fields (ASCII whitespace apart, as
/// `str::split_ascii_whitespace` splits), lines split as `str::lines` splits them (after a
/// byte order mark when `text` starts the file), until `f` returns `false`; a line with
/// another number of fields is the error of [`fields`] for `layout`. Returns the number of
/// the last line (blank ones counted), or `None` when `f` stopped.
///
/// One pass over the bytes, a word of eight at a time: the bytes below `!` are found all at
/// once, and only those (the separators, the line ends and the rare other control
/// characters) are looked at one by one.
pub(super) fn split_lines<'b, const N: usize, E: From<Error>>(
    text: &'b str,
    (before, at_file_start): (usize, bool),
    path: &Utf8Path,
    layout: &str,
    mut f: impl FnMut(usize, [&'b str; N]) -> std::result::Result<bool, E>,
) -> std::result::Result<Option<usize>, E> {
    let bytes = text.as_bytes();
    let mut fields = [""; N];
    let mut found = 0;
    let mut number = before;
    // Where the line being read begins, and where its text does: after a byte order mark at
    // the file's start.
    let mut line_begin = 0;
    let mut line_start = if at_file_start && text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    };
    // The start of the field being read, if its first byte was seen.
    let mut field_start = line_start;
    let mut take_line = |number: usize, line: Range<usize>, found: usize, fields: [&'b str; N]| {
        // Lines of ASCII whitespace have no field; the others are blank if `trim` says so.
        let blank = found == 0
            || (!fields[0].as_bytes()[0].is_ascii_graphic() && text[line].trim().is_empty());
        if blank {
            return Ok(true);
        }
        if found != N {
            return Err(E::from(fields_error(path, number, N, layout, found)));
        }
        f(number, fields)
    };
    let mut words = bytes.chunks_exact(8);
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
            let p = at + (below.trailing_zeros() / 8) as usize;
            below &= below - 1;
            let c = bytes[p];
            if !c.is_ascii_whitespace() {
                // Another control character is part of a field, as in `split_ascii_whitespace`.
                continue;
            }
            if p > field_start {
                if let Some(slot) = fields.get_mut(found) {
                    *slot = &text[field_start..p];
                }
                found += 1;
            }
            field_start = p + 1;
            if c == b'\n' {
                number += 1;
                if !take_line(number, line_start..p, found, fields)? {
                    return Ok(None);
                }
                found = 0;
                line_start = p + 1;
                line_begin = line_start;
            }
        }
        at += 8;
    }
    if line_begin < bytes.len() {
        // The last line, without a line end (a byte order mark alone is a blank line, as the
        // line reader counts it).
        if bytes.len() > field_start {
            if let Some(slot) = fields.get_mut(found) {
                *slot = &text[field_start..];
            }
            found += 1;
        }
        number += 1;
        if !take_line(number, line_start..bytes.len(), found, fields)? {
            return Ok(None);
        }
    }
    Ok(Some(number))
}

/// The bytes of `word` below `!` (the ASCII whitespace and other control characters), as the
/// high bit of each: exact for every byte, since no sum carries into the next byte.
#[inline]
pub(super) fn below_bang(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    // The high bit of `(b & 0x7f) + 0x5f` is set when the low seven bits reach 0x21; or'ed
    // with `b`, when `b` does or is not ASCII.
    !(((word & !HIGHS) + ONES * 0x5f) | word) & HIGHS
}

/// The error for line `number`, which has `found` fields where `layout` has `expected`.
pub(super) fn fields_error(
    path: &Utf8Path,
    number: usize,
    expected: usize,
    layout: &str,
    found: usize,
) -> Error {
    parse_error(
        path,
        number,
        format!("expected {expected} fields ({layout}), found {found}"),
    )
}

/// A score as `str::parse::<f64>` reads it, bit for bit. Plain decimals of at most 15 digits
/// (`0.8731`, `-12.5`, the usual run file) take a short way: the digits as an integer and
/// the power of ten are both exact in an `f64`, so one correctly rounded division gives the
/// correctly rounded value, as the full parser does.
pub(super) fn parse_score(text: &str) -> Option<f64> {
    const POWERS: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let bytes = text.as_bytes();
    let (negative, digits) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    if digits.len() > 16 {
        return text.parse().ok();
    }
    // At most 16 digits and a dot: `mantissa` cannot overflow; the count is checked after.
    let (mut mantissa, mut dot) = (0u64, None);
    for (i, &c) in digits.iter().enumerate() {
        let digit = c.wrapping_sub(b'0');
        if digit < 10 {
            mantissa = mantissa * 10 + u64::from(digit);
        } else if c == b'.' && dot.is_none() {
            dot = Some(i);
        } else {
            return text.parse().ok();
        }
    }
    let count = digits.len() - usize::from(dot.is_some());
    if count == 0 || count > 15 {
        return text.parse().ok();
    }
    let decimals = dot.map_or(0, |i| digits.len() - 1 - i);
    let value = mantissa as f64 / POWERS[decimals];
    Some(if negative { -value } else { value })
}

/// Document ids of a whole file kept in one string; entries refer to them by byte range.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Names {
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
pub(super) struct NameKey {
    prefix: u64,
    len: u32,
}

impl NameKey {
    pub(super) fn new(name: &[u8]) -> Self {
        let mut buf = [0u8; 8];
        let n = name.len().min(8);
        buf[..n].copy_from_slice(&name[..n]);
        NameKey {
            prefix: u64::from_be_bytes(buf),
            // longer names only need to be told apart from names of eight bytes or fewer
            len: name.len().min(9) as u32,
        }
    }

    /// A hash of `name`, whose key this is: of the key alone when it holds the whole name,
    /// else of all the bytes (long names often share their first eight, like
    /// `clueweb09-en0000-…`). Mixed into the upper half, whose low bits are taken.
    #[inline]
    pub(super) fn hash(self, name: &[u8]) -> u64 {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut h = (self.prefix ^ u64::from(self.len)).wrapping_mul(K);
        if self.len > 8 {
            for c in name[8..].chunks(8) {
                let mut word = [0u8; 8];
                word[..c.len()].copy_from_slice(c);
                h = (h.rotate_left(26) ^ u64::from_le_bytes(word)).wrapping_mul(K);
            }
        }
        h >> 32
    }

    /// The order of the names, or `None` when only their bytes can tell.
    #[inline]
    pub(super) fn cmp(self, other: NameKey) -> Option<Ordering> {
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
pub(super) struct QidHasher(u64);

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

pub(super) type QidMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<QidHasher>>;

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
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct QueryTable {
    pub(super) qids: Vec<Box<str>>,
    index: QidMap<Box<str>, u32>,
    /// Query numbers sorted by id bytes.
    pub(super) sorted: Vec<u32>,
}

impl QueryTable {
    fn new(qids: Vec<Box<str>>) -> Self {
        Self::distinct(qids).expect("interned ids are distinct")
    }

    /// The table of `qids`, or `qids` back when an id is there twice.
    fn distinct(qids: Vec<Box<str>>) -> Result<Self, Vec<Box<str>>> {
        let mut index = QidMap::with_capacity_and_hasher(qids.len(), Default::default());
        for (i, q) in qids.iter().enumerate() {
            if index.insert(q.clone(), i as u32).is_some() {
                return Err(qids);
            }
        }
        let mut sorted: Vec<u32> = (0..qids.len() as u32).collect();
        sorted.sort_unstable_by(|&a, &b| qids[a as usize].cmp(&qids[b as usize]));
        Ok(QueryTable {
            qids,
            index,
            sorted,
        })
    }

    pub(super) fn get(&self, qid: &str) -> Option<usize> {
        self.index.get(qid).map(|&q| q as usize)
    }
}

/// Reads the lines of a qrels or run file into rows grouped by query (queries in order of
/// first appearance, lines in file order within a query). `parse_line` gives a line's qid,
/// docno and value.
fn read_rows<'t, const N: usize, T>(
    text: &'t str,
    (path, lines): (&Utf8Path, (usize, bool)),
    layout: &str,
    mut parse_line: impl FnMut([&'t str; N], usize) -> Result<(&'t str, &'t str, T)>,
) -> Result<Rows<T>> {
    let mut names = Names::with_capacity(text.len() / 4);
    let mut ids = QueryIds::new();
    let mut rows: Vec<Row<T>> = Vec::with_capacity(line_count(text));
    split_lines(text, lines, path, layout, |number, fields| {
        let (qid, docno, value) = parse_line(fields, number)?;
        let line = u32::try_from(number)
            .map_err(|_| parse_error(path, number, "more lines than can be numbered"))?;
        rows.push(Row {
            key: NameKey::new(docno.as_bytes()),
            docno: names.push(docno),
            value,
            q: ids.id(qid),
            line,
        });
        Ok::<_, Error>(true)
    })?;
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
#[derive(Debug, Clone, PartialEq)]
pub(super) struct JudgedQuery {
    /// Its documents in `Qrels::docnos` and `Qrels::keys`, sorted by docno.
    pub(super) docs: Range<usize>,
    /// Its positive grades in `Qrels::ideal`, highest first (the ideal ranking for nDCG).
    pub(super) ideal: Range<usize>,
    /// Judged documents with a relevant grade.
    pub(super) num_relevant: usize,
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
#[derive(Debug, Clone, PartialEq)]
pub struct Qrels {
    names: Names,
    pub(super) table: QueryTable,
    /// Per query, in the order of `table.qids`.
    pub(super) queries: Vec<JudgedQuery>,
    /// Per judged document, sorted by docno within each query: its name, the parts of its
    /// [`NameKey`] (kept apart so the merge in [`evaluate`] streams eight bytes a document)
    /// and its grade.
    docnos: Vec<Range<usize>>,
    prefixes: Vec<u64>,
    lens: Vec<u8>,
    grades: Vec<Grade>,
    pub(super) ideal: Vec<Grade>,
}

impl Qrels {
    /// Reads a qrels file, a large one on every core.
    pub fn from_file(path: &Utf8Path) -> Result<Self> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::parse_in_pieces(&read_text(path)?, path.as_str(), threads, MIN_PIECE)
    }

    /// Parses qrels text; `source` names it in errors (usually the file's path). Blank lines
    /// are skipped; every other line must be `qid iter docno rel` with an integer `rel`.
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        Self::parse_in_pieces(text, source, 1, MIN_PIECE)
    }

    /// [`Qrels::parse`] on up to `threads` threads: text of `min_piece` bytes a thread or
    /// more is cut into pieces of at least that, each where one query's lines end, parsed
    /// apart and put end to end. The same judgements and the same errors: when a piece has an
    /// error, or a query's lines turn out to be in two pieces, the text is parsed again in one.
    pub(super) fn parse_in_pieces(
        text: &str,
        source: &str,
        threads: usize,
        min_piece: usize,
    ) -> Result<Self> {
        let path = Utf8PathBuf::from(source);
        let mut cuts = vec![0];
        for k in 1..threads.max(1) {
            let target = text.len() * k / threads;
            let last = *cuts.last().expect("the start");
            if target < last + min_piece {
                continue;
            }
            match query_cut(&text.as_bytes()[last..target]) {
                0 => {}
                cut => cuts.push(last + cut),
            }
        }
        if cuts.len() == 1 {
            let all = Self::piece(text, &path, (0, true))?;
            return Ok(all.indexed().expect("interned ids are distinct"));
        }
        cuts.push(text.len());
        // Each piece but the last ends with a line end: its lines are the newlines in it.
        let befores: Vec<usize> = cuts
            .windows(2)
            .scan(0, |before, w| {
                let at = *before;
                *before += line_count(&text[w[0]..w[1]]) - 1;
                Some(at)
            })
            .collect();
        let pieces: Vec<Result<Qrels>> = std::thread::scope(|scope| {
            let handles: Vec<_> = cuts
                .windows(2)
                .zip(&befores)
                .map(|(w, &before)| {
                    let (piece, path) = (&text[w[0]..w[1]], &path);
                    scope.spawn(move || Self::piece(piece, path, (before, w[0] == 0)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("parsing does not panic"))
                .collect()
        });
        // With an error anywhere, the text is parsed again in one piece: it raises its lines'
        // errors before any query's, and its queries' in their order.
        let Ok(pieces) = pieces.into_iter().collect::<Result<Vec<Qrels>>>() else {
            return Self::parse(text, source);
        };
        let mut pieces = pieces.into_iter();
        let mut all = pieces.next().expect("two pieces or more");
        for piece in pieces {
            all.append(piece);
        }
        // A query in two pieces is judged as one by parsing the text again.
        all.indexed().or_else(|_| Self::parse(text, source))
    }

    /// The judgements of `text`, after `lines.0` lines of the file (and at its start if
    /// `lines.1`), with their query ids not yet indexed.
    fn piece(text: &str, path: &Utf8Path, lines: (usize, bool)) -> Result<Self> {
        let Rows {
            names,
            qids,
            mut rows,
        } = read_rows(
            text,
            (path, lines),
            "qid iter docno rel",
            |fields, number| {
                let [qid, _iter, docno, rel] = fields;
                let grade: Grade = rel.parse().map_err(|_| {
                    parse_error(path, number, format!("relevance `{rel}` is not an integer"))
                })?;
                Ok((qid, docno, grade))
            },
        )?;
        let mut queries = Vec::with_capacity(qids.len());
        let mut docnos = Vec::with_capacity(rows.len());
        let mut prefixes = Vec::with_capacity(rows.len());
        let mut lens = Vec::with_capacity(rows.len());
        let mut grades = Vec::with_capacity(rows.len());
        let mut ideal = Vec::new();
        for query in rows.chunk_by_mut(|a, b| a.q == b.q) {
            // A docno judged more than twice is named at its second line.
            query.sort_unstable_by(|a, b| name_order(&names, a, b).then(a.line.cmp(&b.line)));
            if let Some(w) = query
                .windows(2)
                .find(|w| name_order(&names, &w[0], &w[1]) == Ordering::Equal)
            {
                return Err(parse_error(
                    path,
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
            table: QueryTable {
                qids,
                ..QueryTable::default()
            },
            queries,
            docnos,
            prefixes,
            lens,
            grades,
            ideal,
        })
    }

    /// Indexes the query ids of [`Qrels::piece`]s, or gives them back when one is there
    /// twice.
    fn indexed(mut self) -> Result<Self, Vec<Box<str>>> {
        self.table = QueryTable::distinct(std::mem::take(&mut self.table.qids))?;
        Ok(self)
    }

    /// Puts `other`'s judgements after these, its query ids not yet indexed.
    fn append(&mut self, other: Qrels) {
        let shift = |r: Range<usize>, by: usize| r.start + by..r.end + by;
        let (names, docs, ideal) = (self.names.text.len(), self.docnos.len(), self.ideal.len());
        self.names.text.push_str(&other.names.text);
        self.docnos
            .extend(other.docnos.into_iter().map(|r| shift(r, names)));
        self.queries
            .extend(other.queries.into_iter().map(|q| JudgedQuery {
                docs: shift(q.docs, docs),
                ideal: shift(q.ideal, ideal),
                num_relevant: q.num_relevant,
            }));
        self.prefixes.extend(other.prefixes);
        self.lens.extend(other.lens);
        self.grades.extend(other.grades);
        self.ideal.extend(other.ideal);
        self.table.qids.extend(other.table.qids);
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

    /// Merges one query's retrieved documents, sorted by docno and given as the parts of their
    /// [`NameKey`]s (`prefixes`, `lens`) and their names (`name(i)`, read only when the keys
    /// cannot tell), with the documents judged for it, as trec_eval does: `found(i, grade)` for
    /// every retrieved document `i` that is judged.
    #[inline]
    pub(super) fn merge<'n>(
        &self,
        judged: &JudgedQuery,
        prefixes: &[u64],
        lens: &[u8],
        name: impl Fn(usize) -> &'n [u8],
        mut found: impl FnMut(usize, Grade),
    ) {
        let theirs = &self.prefixes[judged.docs.clone()];
        let (mut i, mut j) = (0, 0);
        // Branch-free steps: which list advances is arithmetic on the comparison, and only
        // equal prefixes (mostly a match) take the slower path.
        while i < prefixes.len() && j < theirs.len() {
            let mut order = theirs[j].cmp(&prefixes[i]);
            if order == Ordering::Equal {
                let b = judged.docs.start + j;
                let key = |prefix, len: u8| NameKey {
                    prefix,
                    len: u32::from(len),
                };
                order = key(theirs[j], self.lens[b])
                    .cmp(key(prefixes[i], lens[i]))
                    .unwrap_or_else(|| self.names.bytes(&self.docnos[b]).cmp(name(i)));
                if order == Ordering::Equal {
                    found(i, self.grades[b]);
                }
            }
            i += usize::from(order != Ordering::Less);
            j += usize::from(order != Ordering::Greater);
        }
    }

    /// The documents judged for one query, in docno order: each one's key, name and grade.
    pub(super) fn judgements<'q>(
        &'q self,
        judged: &JudgedQuery,
    ) -> impl Iterator<Item = (NameKey, &'q [u8], Grade)> + 'q {
        judged.docs.clone().map(|b| {
            let name = self.names.bytes(&self.docnos[b]);
            (NameKey::new(name), name, self.grades[b])
        })
    }

    /// Number of relevant judged documents of `qid`, if the query is judged at all.
    pub fn num_relevant(&self, qid: &str) -> Option<usize> {
        self.table.get(qid).map(|q| self.queries[q].num_relevant)
    }
}

/// One line of a run file as `(qid, docno, score, tag)`; `number` names it in errors.
pub(super) fn run_line<'t>(
    line: &'t str,
    path: &Utf8Path,
    number: usize,
) -> Result<(&'t str, &'t str, f64, &'t str)> {
    run_fields(fields(line, path, number, RUN_LAYOUT)?, path, number)
}

/// The fields of a run line.
pub(super) const RUN_LAYOUT: &str = "qid Q0 docno rank score tag";

/// [`run_line`] from the line's fields.
#[inline]
pub(super) fn run_fields<'t>(
    [qid, _q0, docno, _rank, score, tag]: [&'t str; 6],
    path: &Utf8Path,
    number: usize,
) -> Result<(&'t str, &'t str, f64, &'t str)> {
    let score: f64 = parse_score(score)
        .filter(|s: &f64| !s.is_nan())
        .ok_or_else(|| parse_error(path, number, format!("score `{score}` is not a number")))?;
    Ok((qid, docno, score, tag))
}

/// Ranked retrieval output read from a TREC run file (`qid Q0 docno rank score tag` per
/// line), ranked the way trec_eval ranks it (see the [module docs](crate::trec)).
#[derive(Debug, Clone)]
pub struct Run {
    names: Names,
    pub(super) table: QueryTable,
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
        } = read_rows(text, (&path, (0, true)), RUN_LAYOUT, |fields, number| {
            let (qid, docno, score, run_tag) = run_fields(fields, &path, number)?;
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
            // A docno listed more than twice is named at its second line.
            by_docno.sort_unstable_by(|&a, &b| {
                let (a, b) = (&query[a as usize], &query[b as usize]);
                name_order(&names, a, b).then(a.line.cmp(&b.line))
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
    pub(super) fn grades_into(
        &self,
        q: usize,
        qrels: &Qrels,
        judged: &JudgedQuery,
        grades: &mut Vec<Grade>,
    ) {
        let range = self.ranges[q].clone();
        grades.clear();
        grades.resize(range.len(), NOT_JUDGED);
        let ranks = &self.sorted_ranks[range.clone()];
        qrels.merge(
            judged,
            &self.sorted_prefixes[range.clone()],
            &self.sorted_lens[range.clone()],
            |i| {
                self.names
                    .bytes(&self.docnos[range.start + ranks[i] as usize])
            },
            |i, grade| grades[ranks[i] as usize] = grade,
        );
    }
}

/// Where to end a block read as `bytes`: after the last line whose query differs from the
/// last whole line's (blank lines go with the query after them), so that the lines of that
/// query, most likely continued after `bytes`, start the next block. 0 when no such line is
/// there.
pub(super) fn query_cut(bytes: &[u8]) -> usize {
    // `end`: the end of the whole lines considered, just after a newline.
    let Some(last) = memrchr(b'\n', bytes) else {
        return 0;
    };
    let mut end = last + 1;
    let mut qid: Option<&[u8]> = None;
    while end > 0 {
        let start = memrchr(b'\n', &bytes[..end - 1]).map_or(0, |i| i + 1);
        let line = &bytes[start..end - 1];
        if let Some(this) = first_field(line) {
            match qid {
                None => qid = Some(this),
                Some(q) if q != this => return end,
                Some(_) => {}
            }
        }
        end = start;
    }
    0
}

/// The first whitespace-separated field of `line`, if it has one.
fn first_field(line: &[u8]) -> Option<&[u8]> {
    let start = line.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = &line[start..];
    let len = rest
        .iter()
        .position(|b| b.is_ascii_whitespace())
        .unwrap_or(rest.len());
    Some(&rest[..len])
}

fn memrchr(byte: u8, bytes: &[u8]) -> Option<usize> {
    bytes.iter().rposition(|&b| b == byte)
}

#[cfg(test)]
mod cut_tests {
    use super::query_cut;

    #[test]
    fn cuts_fall_between_queries() {
        let text = b"q1 a\nq1 b\nq2 a\n\nq2 b\nq2 c";
        // the last whole line is q2's: the cut is after q1's lines
        assert_eq!(query_cut(text), 10);
        assert_eq!(query_cut(b"q1 a\n\n q2 b\n"), 5);
        assert_eq!(query_cut(b"q1 a\nq1 b\nq1"), 0);
        assert_eq!(query_cut(b"q1 a"), 0);
        assert_eq!(query_cut(b"\n\n"), 0);
    }

    /// A file of a byte order mark alone is one blank line, as the line reader counts it.
    #[test]
    fn a_byte_order_mark_alone_is_a_blank_line() {
        let path = camino::Utf8Path::new("run.txt");
        let count = |text: &str| {
            super::split_lines::<1, crate::Error>(text, (0, true), path, "a", |_, _| Ok(true))
                .unwrap()
        };
        assert_eq!(count("\u{feff}"), Some(1));
        assert_eq!(count(""), Some(0));
        assert_eq!(count("\u{feff}\n"), Some(1));
    }
}
