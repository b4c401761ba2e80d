//! An index of a case's dataset rows by id: where each row lies in the file (bytes and line),
//! with what a process needs to know of the dataset before it reads any row (its shape and
//! content hash). A process that reads and checks the whole dataset writes it into the
//! harness's folder under the target directory; a process that runs a few queries' tests (each
//! of nextest's) then lists the case's tests from it and reads only its own rows.
//!
//! It is trusted only when its key, a fingerprint of the dataset file's bytes and of this
//! rag-eval's version, and the fingerprint of the corpus the rows were checked against are
//! those the process computes, and its own checksum holds; a row read through it must carry
//! the id the index gives it. Otherwise the dataset is read and checked whole, and the index
//! written anew.
//!
//! The fingerprints are the standard library's SipHash (64 bits) rather than SHA-256: they tell
//! a changed file from the one indexed, nothing more, and every process computes one over the
//! whole dataset, where SHA-256 in a debug build cost more than the rest of the process (0.6 s
//! of a 17 MB file). A toolchain whose hash differs only rebuilds the index.

use crate::corpus::Corpus;
use crate::dataset::{AnyDataset, Shape};
use std::fmt::Write as _;
use std::hash::Hasher as _;
use std::path::{Path, PathBuf};

/// The first line of an index file: a file of another format is never read as one.
const FORMAT: &str = "rag-eval dataset index 1";

/// One row: its id and where it lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub id: String,
    /// The row's first byte in the file (after a byte order mark on the first line).
    start: usize,
    /// Its length in bytes, without the line break.
    len: usize,
    /// Its one-based line number, for messages.
    line: usize,
}

/// A dataset file's rows by id, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Index {
    pub shape: Shape,
    /// The dataset's content hash ([`crate::dataset::Dataset::content_hash`]).
    pub dataset_hash: String,
    /// The [`corpus_key`] of the corpus the rows were checked against.
    pub corpus: String,
    pub rows: Vec<Entry>,
}

/// SipHash over `parts`, each with its length, as 16 hex digits.
fn fingerprint<'a>(parts: impl Iterator<Item = &'a [u8]>) -> String {
    let mut h = std::hash::DefaultHasher::new();
    for part in parts {
        h.write_usize(part.len());
        h.write(part);
    }
    format!("{:016x}", h.finish())
}

/// The key an index of the dataset file `bytes` is kept under.
pub(crate) fn key(bytes: &[u8]) -> String {
    let head = [FORMAT.as_bytes(), env!("CARGO_PKG_VERSION").as_bytes()];
    fingerprint(head.into_iter().chain([bytes]))
}

/// The fingerprint of the corpus a dataset's rows are checked against (none: their spans are
/// not checked).
pub(crate) fn corpus_key(corpus: Option<&Corpus>) -> String {
    match corpus {
        None => "unchecked".to_owned(),
        Some(corpus) => fingerprint(
            corpus
                .documents()
                .iter()
                .flat_map(|doc| [doc.id().as_str().as_bytes(), doc.content().as_bytes()]),
        ),
    }
}

/// Where the index of case `case`'s dataset at `dataset` is kept in `folder`: one file per case
/// and dataset path, rewritten when the dataset changes, so nothing accumulates.
pub(crate) fn file(folder: &Path, case: &str, dataset: &str) -> PathBuf {
    folder.join(format!(
        "{case}-{}.rows",
        crate::digest::short_sha256(dataset.as_bytes())
    ))
}

/// Where each line of `bytes` starts and how long it is (without `\n` or `\r\n`; the first
/// without a byte order mark), by zero-based line number.
fn line_ranges(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut start = 0;
    while start <= bytes.len() {
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| start + i);
        let mut first = start;
        if ranges.is_empty() && bytes[first..end].starts_with("\u{feff}".as_bytes()) {
            first += 3;
        }
        let last = if end > first && bytes[end - 1] == b'\r' {
            end - 1
        } else {
            end
        };
        ranges.push((first, last - first));
        start = end + 1;
    }
    ranges
}

impl Index {
    /// The index of `dataset`, read from the file `bytes` and checked against the corpus of
    /// [`corpus_key`] `corpus`; `None` when an id cannot be written on one line of the index
    /// (it holds a line break), or a row is not where its line says.
    pub(crate) fn of(dataset: &AnyDataset, bytes: &[u8], corpus: String) -> Option<Index> {
        let ranges = line_ranges(bytes);
        let mut rows = Vec::new();
        let (shape, dataset_hash) = match dataset {
            AnyDataset::Token(d) => {
                for (i, e) in d.examples().iter().enumerate() {
                    rows.push((e.id.clone(), d.line(i)));
                }
                (dataset.shape(), d.content_hash())
            }
            AnyDataset::Chunk(d) => {
                for (i, e) in d.examples().iter().enumerate() {
                    rows.push((e.id.clone(), d.line(i)));
                }
                (dataset.shape(), d.content_hash())
            }
        };
        let rows = rows
            .into_iter()
            .map(|(id, line)| {
                if id.contains(['\n', '\r']) {
                    return None;
                }
                let &(start, len) = ranges.get(line.checked_sub(1)?)?;
                Some(Entry {
                    id,
                    start,
                    len,
                    line,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Index {
            shape,
            dataset_hash,
            corpus,
            rows,
        })
    }

    /// The index file's text under `key`, its checksum last.
    pub(crate) fn render(&self, key: &str) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            "{FORMAT}\nkey {key}\nshape {}\nhash {}\ncorpus {}\nrows {}\n",
            self.shape,
            self.dataset_hash,
            self.corpus,
            self.rows.len()
        );
        for r in &self.rows {
            let _ = writeln!(s, "{} {} {} {}", r.start, r.len, r.line, r.id);
        }
        let sum = fingerprint([s.as_bytes()].into_iter());
        let _ = writeln!(s, "sum {sum}");
        s
    }

    /// The index an index file's `text` holds, when it is whole (its checksum holds), was made
    /// under `key` and fits a file of `file_len` bytes; `None` otherwise.
    pub(crate) fn parse(text: &str, key: &str, file_len: usize) -> Option<Index> {
        let body = text.strip_suffix('\n')?;
        let (body, sum) = body.rsplit_once('\n')?;
        let body = &text[..body.len() + 1];
        if sum.strip_prefix("sum ")? != fingerprint([body.as_bytes()].into_iter()) {
            return None;
        }
        let mut lines = body.lines();
        if lines.next()? != FORMAT || lines.next()?.strip_prefix("key ")? != key {
            return None;
        }
        let shape = match lines.next()?.strip_prefix("shape ")? {
            "token" => Shape::Token,
            "chunk" => Shape::Chunk,
            "qa" => Shape::Qa,
            _ => return None,
        };
        let dataset_hash = lines.next()?.strip_prefix("hash ")?.to_owned();
        let corpus = lines.next()?.strip_prefix("corpus ")?.to_owned();
        let count: usize = lines.next()?.strip_prefix("rows ")?.parse().ok()?;
        let mut rows = Vec::with_capacity(count.min(1 << 24));
        for line in lines {
            let mut parts = line.splitn(4, ' ');
            let mut number = || parts.next()?.parse::<usize>().ok();
            let (start, len, line) = (number()?, number()?, number()?);
            let id = parts.next()?.to_owned();
            if start.checked_add(len)? > file_len {
                return None;
            }
            rows.push(Entry {
                id,
                start,
                len,
                line,
            });
        }
        (rows.len() == count).then_some(Index {
            shape,
            dataset_hash,
            corpus,
            rows,
        })
    }

    /// The rows whose ids `keep` accepts, read from the dataset file `bytes` (named `source`)
    /// as [`crate::dataset::load`] reads them; an error when a row is not the one the index
    /// says is there.
    pub(crate) fn read(
        &self,
        bytes: &[u8],
        source: &str,
        keep: impl Fn(&str) -> bool,
    ) -> Result<AnyDataset, String> {
        let mut lines = Vec::new();
        for r in self.rows.iter().filter(|r| keep(&r.id)) {
            let text = bytes
                .get(r.start..r.start + r.len)
                .and_then(|b| std::str::from_utf8(b).ok())
                .ok_or_else(|| format!("{source}:{}: not where the index says", r.line))?;
            lines.push((r.line, text));
        }
        // No row at all is no dataset to the parser: the first row read, then left out.
        let none = lines.is_empty();
        if let (true, Some(r)) = (none, self.rows.first()) {
            let text = bytes
                .get(r.start..r.start + r.len)
                .and_then(|b| std::str::from_utf8(b).ok())
                .ok_or_else(|| format!("{source}:{}: not where the index says", r.line))?;
            lines.push((r.line, text));
        }
        let dataset =
            crate::dataset::from_lines(lines.iter().copied(), source).map_err(|e| e.to_string())?;
        let dataset = match dataset {
            _ if !none => dataset,
            AnyDataset::Token(d) => AnyDataset::Token(d.only(|_| false)),
            AnyDataset::Chunk(d) => AnyDataset::Chunk(d.only(|_| false)),
        };
        let ids: Vec<&str> = match &dataset {
            AnyDataset::Token(d) => d.examples().iter().map(|e| e.id.as_str()).collect(),
            AnyDataset::Chunk(d) => d.examples().iter().map(|e| e.id.as_str()).collect(),
        };
        let wanted = self.rows.iter().filter(|r| keep(&r.id)).map(|r| &r.id);
        if dataset.shape() != self.shape || !ids.iter().copied().eq(wanted.map(String::as_str)) {
            return Err(format!("{source}: the rows are not those the index lists"));
        }
        Ok(dataset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\u{feff}{\"id\":\"q1\",\"inputs\":{\"query\":\"When?\"},\"outputs\":{\"reference_answer\":\"In May.\"}}\r\n\n{\"id\":\"q 2\",\"inputs\":{\"query\":\"Who?\"},\"outputs\":{\"reference_answer\":\"Ann.\"}}\n";

    fn index() -> Index {
        let d = crate::dataset::parse(TEXT, "qa.jsonl").unwrap();
        Index::of(&d, TEXT.as_bytes(), corpus_key(None)).unwrap()
    }

    #[test]
    fn an_index_finds_each_row_and_reads_as_the_file_reads() {
        let index = index();
        assert_eq!(index.shape, Shape::Qa);
        let lines: Vec<(&str, usize)> =
            index.rows.iter().map(|r| (r.id.as_str(), r.line)).collect();
        assert_eq!(lines, [("q1", 1), ("q 2", 3)]);
        let whole = crate::dataset::parse(TEXT, "qa.jsonl").unwrap();
        assert_eq!(
            index.read(TEXT.as_bytes(), "qa.jsonl", |_| true).unwrap(),
            whole
        );
        let AnyDataset::Token(one) = index
            .read(TEXT.as_bytes(), "qa.jsonl", |id| id == "q 2")
            .unwrap()
        else {
            panic!("a question file is token-level")
        };
        assert_eq!(one.len(), 1);
        assert_eq!(one.examples()[0].query, "Who?");
        assert_eq!(one.location(0), "qa.jsonl:3");
    }

    #[test]
    fn an_index_is_read_back_only_under_its_key_and_whole() {
        let index = index();
        let text = index.render("k1");
        let len = TEXT.len();
        assert_eq!(Index::parse(&text, "k1", len), Some(index.clone()));
        // Another dataset or corpus: another key.
        assert_eq!(Index::parse(&text, "k2", len), None);
        // A file shorter than the rows say.
        assert_eq!(Index::parse(&text, "k1", 10), None);
        // Cut short, or any byte changed: the checksum no longer holds.
        assert_eq!(Index::parse(&text[..text.len() - 3], "k1", len), None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            Index::parse(&lines[..lines.len() - 1].join("\n"), "k1", len),
            None
        );
        let renamed = text.replace(" q 2\n", " q 3\n");
        assert_ne!(renamed, text);
        assert_eq!(Index::parse(&renamed, "k1", len), None);
        assert_eq!(Index::parse("", "k1", len), None);
        assert_eq!(
            Index::parse(&text.replace(FORMAT, "another format"), "k1", len),
            None
        );
    }

    #[test]
    fn a_row_that_is_not_the_one_the_index_names_is_an_error() {
        let mut index = index();
        let first = std::mem::take(&mut index.rows[0].id);
        index.rows[0].id = std::mem::replace(&mut index.rows[1].id, first);
        let e = index
            .read(TEXT.as_bytes(), "qa.jsonl", |_| true)
            .unwrap_err();
        assert!(e.contains("not those the index lists"), "{e}");
        let mut index = self::index();
        index.rows[1].start += 1;
        assert!(index
            .read(TEXT.as_bytes(), "qa.jsonl", |id| id == "q 2")
            .is_err());
    }

    #[test]
    fn keys_tell_files_and_corpora_apart() {
        assert_ne!(key(b"rows"), key(b"rows!"));
        assert_eq!(key(b"rows"), key(b"rows"));
        let corpus = Corpus::new([crate::corpus::Document::new("a.md", "text")]).unwrap();
        let other = Corpus::new([crate::corpus::Document::new("a.md", "text!")]).unwrap();
        let keys = [
            corpus_key(None),
            corpus_key(Some(&corpus)),
            corpus_key(Some(&other)),
            corpus_key(Some(&Corpus::default())),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
