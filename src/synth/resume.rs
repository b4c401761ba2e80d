//! Output that survives interruption: long generation runs append each document's rows to the
//! dataset file as whole lines, flushed to disk, and then record the document in a sidecar
//! progress file (`D.jsonl.progress`). A rerun with the same output skips the documents
//! recorded there and continues the ids, so a crash or a kill loses at most the documents
//! that were in flight.
//!
//! The progress file is JSON lines: a `start` line with the run's settings, one `document` line
//! per finished document (`doc_id`, `rows`, `dropped`, token `usage`, `calls`, the data file's
//! length after its rows), and a `finished` line once the corpus-wide filters have run and the
//! dataset was rewritten in document order.
//!
//! ```no_run
//! use rag_eval::synth::resume::{ResumableOutput, RunHeader};
//!
//! # fn f() -> rag_eval::Result<()> {
//! let header = RunHeader::new("token").with("model", "qwen2.5-7b").with("queries_per_doc", 3);
//! let out = ResumableOutput::open("questions.jsonl".into(), header)?;
//! println!("{} documents already done", out.records().len());
//! # Ok(()) }
//! ```

use super::{example_id, DocumentBatch, Dropped};
use crate::corpus::{Corpus, DocId, Document};
use crate::dataset::{self, AnyDataset, Example, ToRow};
use crate::error::{DatasetError, Error, Result};
use crate::level::{ChunkLevel, Level, TokenLevel};
use crate::llm::TokenUsage;
use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};

/// Version of the progress file's format, written in its `start` line.
pub const PROGRESS_FORMAT: u32 = 1;

/// The sidecar progress file of a dataset file: the same path with `.progress` appended.
pub fn progress_path(output: &Utf8Path) -> Utf8PathBuf {
    Utf8PathBuf::from(format!("{output}.progress"))
}

/// What a run was started with. A rerun must have the same level and settings, since rows
/// made with other settings would be mixed into one dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// Progress file format ([`PROGRESS_FORMAT`]).
    pub format: u32,
    /// `token` or `chunk`.
    pub level: String,
    /// Settings that shape the rows (model, questions per document, chunker, seed, …).
    pub settings: BTreeMap<String, Value>,
}

impl RunHeader {
    /// A header for a run at `level` with no settings yet.
    pub fn new(level: impl Into<String>) -> Self {
        RunHeader {
            format: PROGRESS_FORMAT,
            level: level.into(),
            settings: BTreeMap::new(),
        }
    }

    /// Adds a setting.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.settings.insert(key.into(), value.into());
        self
    }

    /// Why a run with `self` cannot continue a file started with `started`, if it cannot.
    fn mismatch(&self, started: &RunHeader) -> Option<String> {
        if started.format != self.format {
            return Some(format!(
                "it uses progress format {} and this version writes format {}",
                started.format, self.format
            ));
        }
        if started.level != self.level {
            return Some(format!(
                "it holds {}-level rows and this run makes {}-level rows",
                started.level, self.level
            ));
        }
        let keys: std::collections::BTreeSet<&String> = started
            .settings
            .keys()
            .chain(self.settings.keys())
            .collect();
        keys.into_iter().find_map(|k| {
            let (then, now) = (started.settings.get(k), self.settings.get(k));
            (then != now).then(|| {
                format!(
                    "it was started with {k} = {} and this run has {k} = {}",
                    show(then),
                    show(now)
                )
            })
        })
    }
}

fn show(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "(unset)".to_owned(),
        Some(Value::String(s)) => format!("`{s}`"),
        Some(v) => v.to_string(),
    }
}

/// A finished document, as recorded in the progress file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocRecord {
    /// The document.
    pub doc_id: DocId,
    /// Rows written for it.
    pub rows: usize,
    /// Number of its first row's id (`q0001` is 1); the rows are numbered on from there.
    pub first_id: usize,
    /// Candidates dropped while generating it, by reason.
    pub dropped: Dropped,
    /// Tokens its calls used.
    pub usage: TokenUsage,
    /// Chat calls made for it.
    pub calls: usize,
    /// Rows written without a reference answer (the model gave none with the question).
    #[serde(default)]
    pub without_answer: usize,
    /// Why the document was left out whole, when it was (see [`Dropped::documents`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_reason: Option<String>,
    /// SHA-256 of the document's text (16 hex digits), to notice a document that changed
    /// between a run and its continuation.
    pub sha256: String,
    /// Length in bytes of the data file after its rows.
    pub end: u64,
}

/// The corpus-wide filters' result, as recorded in the progress file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinishRecord {
    /// Rows in the final file.
    pub rows: usize,
    /// Rows the corpus-wide filters removed, by reason.
    pub dropped: Dropped,
    /// Rows of the final file without a reference answer.
    #[serde(default)]
    pub without_answer: usize,
    /// Length in bytes of the final file.
    pub end: u64,
    /// SHA-256 of the final file (16 hex digits): tells whether the rewrite reached the disk.
    pub sha256: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum ProgressLine {
    Start(RunHeader),
    Document(DocRecord),
    Finished(FinishRecord),
}

/// Sums over the documents recorded so far (this run and earlier ones).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    /// Documents done.
    pub documents: usize,
    /// Rows the data file holds.
    pub rows: usize,
    /// Candidates dropped, by reason (per document and corpus-wide).
    pub dropped: Dropped,
    /// Tokens used.
    pub usage: TokenUsage,
    /// Chat calls made.
    pub calls: usize,
    /// Rows without a reference answer (the model gave none with the question).
    pub without_answer: usize,
}

/// What opening an existing output found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resumed {
    /// Documents recorded as done by earlier runs.
    pub documents: usize,
    /// Rows kept from earlier runs.
    pub rows: usize,
    /// Bytes cut from the end of the data file: rows of documents that were in flight when an
    /// earlier run stopped, and never recorded.
    pub discarded_bytes: u64,
}

/// A dataset file being generated, with its progress file. See the [module docs](self).
#[derive(Debug)]
pub struct ResumableOutput {
    path: Utf8PathBuf,
    progress_path: Utf8PathBuf,
    data: File,
    progress: File,
    header: RunHeader,
    records: Vec<DocRecord>,
    index: HashMap<DocId, usize>,
    finished: Option<FinishRecord>,
    /// Committed length of the data file.
    end: u64,
    next_id: usize,
    rows: usize,
    resumed: Resumed,
}

impl ResumableOutput {
    /// Opens `path` for a run described by `header`: a new file, or the continuation of an
    /// earlier run with the same header. Rows past the last recorded document (an interrupted
    /// document's) are cut off. Fails when the file exists without a progress file, when the
    /// earlier run had other settings, when the file is shorter than its progress file
    /// records, and when another process is writing it.
    pub fn open(path: Utf8PathBuf, header: RunHeader) -> Result<Self> {
        let progress_path = progress_path(&path);
        let progress_existed = progress_path.exists();
        let mut progress = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&progress_path)
            .map_err(|e| Error::io("open", progress_path.as_path(), e))?;
        match progress.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(Error::File {
 path: path.clone(),
 message: format!(
                    "another process is writing `{path}` (its progress file `{progress_path}` is locked)"
                ),
 })
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(Error::io("lock", progress_path.as_path(), e))
            }
        }
        let mut text = String::new();
        progress
            .read_to_string(&mut text)
            .map_err(|e| Error::io("read", progress_path.as_path(), e))?;
        let (lines, good_len) = parse_progress(&text, &progress_path)?;

        let data_len = match std::fs::metadata(&path) {
            Ok(m) => Some(m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io("read", path.as_path(), e)),
        };
        let mut out = ResumableOutput {
            data: OpenOptions::new()
                .append(true)
                .create(true)
                .open(&path)
                .map_err(|e| Error::io("open", path.as_path(), e))?,
            path,
            progress_path,
            progress,
            header: header.clone(),
            records: Vec::new(),
            index: HashMap::new(),
            finished: None,
            end: 0,
            next_id: 1,
            rows: 0,
            resumed: Resumed::default(),
        };

        let Some((first, rest)) = lines.split_first() else {
            // A new run. Anything already in the file came from elsewhere.
            if data_len.unwrap_or(0) > 0 {
                if !progress_existed {
                    let _ = std::fs::remove_file(&out.progress_path);
                }
                return Err(Error::File {
                    path: out.path.clone(),
                    message: format!(
                        "`{}` exists and has no progress file `{}`, so it was not written by a \
                     generation run; choose another output or delete it",
                        out.path, out.progress_path
                    ),
                });
            }
            out.progress
                .set_len(0)
                .map_err(|e| Error::io("write", out.progress_path.as_path(), e))?;
            out.append_progress(&ProgressLine::Start(header))?;
            return Ok(out);
        };
        let ProgressLine::Start(started) = first else {
            return Err(Error::Parse {
                path: out.progress_path.clone(),
                line: 1,
                message: "the first line is not a `start` line".into(),
            });
        };
        if let Some(why) = header.mismatch(started) {
            return Err(Error::File {
                path: out.path.clone(),
                message: format!(
                "cannot continue `{}`: {why}; run with the same settings to continue, or choose \
                 another output",
                out.path
            ),
            });
        }
        out.header = started.clone();
        let data_len = data_len.unwrap_or(0);
        let mut kept = rest.len();
        // A `finished` line counts only if the rewrite it announces reached the disk.
        if let Some(ProgressLine::Finished(f)) = rest.last() {
            if data_len != f.end || file_sha256(&out.path)? != f.sha256 {
                kept -= 1;
            }
        }
        for line in &rest[..kept] {
            match line {
                ProgressLine::Start(_) => {
                    return Err(Error::File {
                        path: out.progress_path.clone(),
                        message: format!(
                            "`{}` has a second `start` line; it is damaged",
                            out.progress_path
                        ),
                    })
                }
                ProgressLine::Document(r) => out.record(r.clone()),
                ProgressLine::Finished(f) => {
                    out.rows = f.rows;
                    out.end = f.end;
                    out.finished = Some(f.clone());
                }
            }
        }
        if kept < rest.len() {
            out.finished = None;
        }
        if data_len < out.end {
            return Err(Error::File {
                path: out.path.clone(),
                message: format!(
                "`{}` is {data_len} bytes long but its progress file records {} bytes of rows; \
                 it was changed by something else, so the run cannot continue",
                out.path, out.end
            ),
            });
        }
        if data_len > out.end {
            out.data
                .set_len(out.end)
                .and_then(|()| out.data.sync_data())
                .map_err(|e| Error::io("truncate", out.path.as_path(), e))?;
        }
        // Rewrite the progress file when its tail was torn or a `finished` line did not hold.
        let good = if kept < rest.len() {
            let mut text = String::new();
            for line in &lines[..kept + 1] {
                text.push_str(&serde_json::to_string(line).expect("progress lines serialise"));
                text.push('\n');
            }
            Some(text)
        } else if good_len < text.len() {
            Some(text[..good_len].to_owned())
        } else {
            None
        };
        if let Some(good) = good {
            out.progress
                .set_len(0)
                .and_then(|()| out.progress.write_all(good.as_bytes()))
                .and_then(|()| out.progress.sync_data())
                .map_err(|e| Error::io("write", out.progress_path.as_path(), e))?;
        }
        out.resumed = Resumed {
            documents: out.records.len(),
            rows: out.rows,
            discarded_bytes: data_len - out.end,
        };
        Ok(out)
    }

    fn record(&mut self, r: DocRecord) {
        self.next_id = self.next_id.max(r.first_id + r.rows);
        self.end = r.end;
        self.rows += r.rows;
        self.index.insert(r.doc_id.clone(), self.records.len());
        self.records.push(r);
    }

    /// The dataset file.
    pub fn path(&self) -> &Utf8Path {
        &self.path
    }

    /// The progress file.
    pub fn progress_path(&self) -> &Utf8Path {
        &self.progress_path
    }

    /// The settings the run was started with.
    pub fn header(&self) -> &RunHeader {
        &self.header
    }

    /// What opening found of earlier runs.
    pub fn resumed(&self) -> &Resumed {
        &self.resumed
    }

    /// Documents done, in the order they were finished.
    pub fn records(&self) -> &[DocRecord] {
        &self.records
    }

    /// The corpus-wide filters' record, once [`finish`](Self::finish) ran and no document was
    /// added since.
    pub fn finished(&self) -> Option<&FinishRecord> {
        self.finished.as_ref()
    }

    /// Number the next row's id gets.
    pub fn next_id(&self) -> usize {
        self.next_id
    }

    /// Whether `doc` is done. Fails when it is recorded with other text than it has now: its
    /// rows would point at text that is no longer there.
    pub fn is_done(&self, doc: &Document) -> Result<bool> {
        let Some(&i) = self.index.get(doc.id()) else {
            return Ok(false);
        };
        let r = &self.records[i];
        if r.sha256 != crate::digest::short_sha256(doc.content().as_bytes()) {
            return Err(Error::Dataset(DatasetError::new(
                &self.path,
                format!(
                    "document `{}` changed since its rows were written to `{}`; start a new output",
                    doc.id(),
                    self.path
                ),
            )));
        }
        Ok(true)
    }

    /// Documents done that `corpus` does not have (the corpus shrank since they were done).
    pub fn missing_from(&self, corpus: &Corpus) -> Vec<DocId> {
        self.records
            .iter()
            .filter(|r| corpus.get(r.doc_id.as_str()).is_none())
            .map(|r| r.doc_id.clone())
            .collect()
    }

    /// Sums over every document recorded, earlier runs included.
    pub fn totals(&self) -> Totals {
        let mut t = Totals {
            documents: self.records.len(),
            rows: self.rows,
            ..Totals::default()
        };
        for r in &self.records {
            t.dropped += r.dropped;
            t.usage.prompt_tokens =
                crate::llm::add_tokens(t.usage.prompt_tokens, r.usage.prompt_tokens);
            t.usage.completion_tokens =
                crate::llm::add_tokens(t.usage.completion_tokens, r.usage.completion_tokens);
            t.calls += r.calls;
            t.without_answer += r.without_answer;
        }
        if let Some(f) = &self.finished {
            t.dropped += f.dropped;
            t.without_answer = f.without_answer;
        }
        t
    }

    /// Appends `batch`'s rows for `doc`, numbered on from [`next_id`](Self::next_id), flushes
    /// them to disk, then records the document in the progress file. The file holds whole
    /// rows at every moment; after a failure it is cut back to its last committed length.
    pub fn append<L: Level>(
        &mut self,
        doc: &Document,
        batch: DocumentBatch<L>,
    ) -> Result<&DocRecord>
    where
        Example<L>: ToRow,
    {
        if self.index.contains_key(doc.id()) {
            return Err(Error::Dataset(DatasetError::new(
                &self.path,
                format!(
                    "document `{}` is already recorded in `{}`",
                    doc.id(),
                    self.progress_path
                ),
            )));
        }
        let first_id = self.next_id;
        let mut text = String::new();
        let rows = batch.examples.len();
        let without_answer = batch
            .examples
            .iter()
            .filter(|e| e.reference_answers.is_empty())
            .count();
        for (i, mut e) in batch.examples.into_iter().enumerate() {
            e.id = example_id(first_id + i);
            text.push_str(&e.to_row());
            text.push('\n');
        }
        let written = self
            .data
            .write_all(text.as_bytes())
            .and_then(|()| self.data.sync_data());
        if let Err(e) = written {
            let _ = self.data.set_len(self.end);
            return Err(Error::io("write", self.path.as_path(), e));
        }
        let record = DocRecord {
            doc_id: doc.id().clone(),
            rows,
            first_id,
            dropped: batch.dropped,
            usage: batch.usage,
            calls: batch.calls,
            without_answer,
            dropped_reason: batch.dropped_reason,
            sha256: crate::digest::short_sha256(doc.content().as_bytes()),
            end: self.end + text.len() as u64,
        };
        if let Err(e) = self.append_progress(&ProgressLine::Document(record.clone())) {
            let _ = self.data.set_len(self.end);
            return Err(e);
        }
        self.finished = None;
        self.record(record);
        Ok(self.records.last().expect("just recorded"))
    }

    /// Runs the corpus-wide `filter` (near-duplicates, difficulty mix) over every row, in the
    /// corpus's document order, and rewrites the file atomically with the rows it keeps. Ids
    /// stay as they were. Records the result in the progress file.
    pub fn finish<L: GeneratedLevel>(
        &mut self,
        corpus: &Corpus,
        filter: impl FnOnce(&mut Vec<Example<L>>, &mut Dropped),
    ) -> Result<FinishRecord>
    where
        Example<L>: ToRow,
    {
        let mut examples = self.read_rows::<L>()?;
        let originals = self.original_lines()?;
        let position: HashMap<&str, usize> = corpus
            .documents()
            .iter()
            .enumerate()
            .map(|(i, d)| (d.id().as_str(), i))
            .collect();
        // Completion order depends on timing; document order makes the filters' choices (which
        // of two near-duplicates stays) the same for every run.
        examples.sort_by_cached_key(|e| {
            source_doc(e)
                .and_then(|d| position.get(d.as_str()).copied())
                .unwrap_or(usize::MAX)
        });
        let mut dropped = Dropped::default();
        filter(&mut examples, &mut dropped);
        let mut text = String::new();
        for e in &examples {
            match originals.get(e.id.as_str()) {
                Some(line) => text.push_str(&e.to_row_over(line)),
                None => text.push_str(&e.to_row()),
            }
            text.push('\n');
        }
        let record = FinishRecord {
            rows: examples.len(),
            dropped,
            without_answer: examples
                .iter()
                .filter(|e| e.reference_answers.is_empty())
                .count(),
            end: text.len() as u64,
            sha256: crate::digest::short_sha256(text.as_bytes()),
        };
        // Announced first: should the rename not happen, the hash tells a later run so.
        self.append_progress(&ProgressLine::Finished(record.clone()))?;
        crate::fs::write_atomic(&self.path, text.as_bytes())?;
        // The old handle points at the replaced file.
        self.data = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| Error::io("open", self.path.as_path(), e))?;
        self.end = record.end;
        self.rows = record.rows;
        self.finished = Some(record.clone());
        Ok(record)
    }

    /// The rows written so far.
    pub fn read_rows<L: GeneratedLevel>(&self) -> Result<Vec<Example<L>>> {
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| Error::io("read", self.path.as_path(), e))?;
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        let any = dataset::parse(&text, self.path.as_str())?;
        let level = any.level();
        L::take(any).ok_or_else(|| {
            Error::Dataset(DatasetError::new(
                &self.path,
                format!(
                    "`{}` holds {level}-level rows, not {}-level ones",
                    self.path,
                    L::NAME
                ),
            ))
        })
    }

    /// The lines of the file by row id, so the rewrite keeps fields it does not read.
    fn original_lines(&self) -> Result<HashMap<String, String>> {
        #[derive(serde::Deserialize)]
        struct Id {
            id: String,
        }
        let text = std::fs::read_to_string(&self.path)
            .map_err(|e| Error::io("read", self.path.as_path(), e))?;
        Ok(crate::fs::strip_bom(&text)
            .lines()
            .filter_map(|l| Some((serde_json::from_str::<Id>(l).ok()?.id, l.to_owned())))
            .collect())
    }

    fn append_progress(&mut self, line: &ProgressLine) -> Result<()> {
        let mut text = serde_json::to_string(line).expect("progress lines serialise");
        text.push('\n');
        self.progress
            .write_all(text.as_bytes())
            .and_then(|()| self.progress.sync_data())
            .map_err(|e| Error::io("write", self.progress_path.as_path(), e))
    }
}

/// Levels whose rows a [`ResumableOutput`] can read back.
pub trait GeneratedLevel: Level {
    /// The examples of `d` if it is at this level.
    fn take(d: AnyDataset) -> Option<Vec<Example<Self>>>;
}

impl GeneratedLevel for TokenLevel {
    fn take(d: AnyDataset) -> Option<Vec<Example<Self>>> {
        match d {
            AnyDataset::Token(d) => Some(d.examples().to_vec()),
            AnyDataset::Chunk(_) => None,
        }
    }
}

impl GeneratedLevel for ChunkLevel {
    fn take(d: AnyDataset) -> Option<Vec<Example<Self>>> {
        match d {
            AnyDataset::Chunk(d) => Some(d.examples().to_vec()),
            AnyDataset::Token(_) => None,
        }
    }
}

fn source_doc<L: Level>(e: &Example<L>) -> Option<DocId> {
    e.metadata
        .get("source_docs")
        .and_then(|v| v.as_array())
        .and_then(|a| a.first())
        .and_then(|v| v.as_str())
        .map(DocId::new)
}

fn file_sha256(path: &Utf8Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    Ok(crate::digest::short_sha256(&bytes))
}

/// Parses the progress file. A last line that is cut short or unreadable is what a crash
/// during its write leaves, and is ignored; an unreadable line before the last is damage.
/// Returns the lines and the byte length of the good part.
fn parse_progress(text: &str, path: &Utf8Path) -> Result<(Vec<ProgressLine>, usize)> {
    let mut lines = Vec::new();
    let mut good = 0;
    let mut pos = 0;
    for (n, raw) in text.split_inclusive('\n').enumerate() {
        let last = pos + raw.len() == text.len();
        match serde_json::from_str::<ProgressLine>(raw.trim_end_matches('\n')) {
            Ok(line) if raw.ends_with('\n') => {
                lines.push(line);
                good = pos + raw.len();
            }
            // Cut short before its newline, or torn: the write a crash interrupted.
            Ok(_) => break,
            Err(_) if last => break,
            Err(e) => {
                return Err(Error::Parse {
                    path: path.to_owned(),
                    line: n + 1,
                    message: format!("not a progress line ({e}); the progress file is damaged"),
                })
            }
        }
        pos += raw.len();
    }
    Ok((lines, good))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Metadata;
    use crate::span::CharSpan;

    fn corpus() -> Corpus {
        Corpus::new([
            Document::new("a.md", "Alpha text. Second sentence of alpha."),
            Document::new("b.md", "Bravo text here, with more words."),
            Document::new("c.md", "Charlie: the third document."),
            Document::new("d.md", "Delta closes the corpus."),
        ])
        .unwrap()
    }

    /// `n` rows for `doc`, each pointing at its first five characters.
    fn batch(doc: &Document, n: usize) -> DocumentBatch<TokenLevel> {
        let examples = (0..n)
            .map(|i| {
                let mut metadata = Metadata::new();
                metadata.insert("source_docs".into(), vec![doc.id().as_str()].into());
                Example {
                    id: "unnumbered".into(),
                    query: format!("question {i} about {}?", doc.id()),
                    truth: vec![CharSpan::new(doc.id().clone(), 0, 5)],
                    span_texts: vec![doc.slice(0, 5).map(str::to_owned)],
                    metadata,
                    reference_answers: Vec::new(),
                }
            })
            .collect();
        DocumentBatch {
            doc_id: doc.id().clone(),
            examples,
            dropped: Dropped {
                unlocated: 1,
                ..Dropped::default()
            },
            usage: TokenUsage {
                prompt_tokens: 100,
                completion_tokens: 10,
            },
            calls: 1,
            dropped_reason: None,
        }
    }

    fn header() -> RunHeader {
        RunHeader::new("token")
            .with("--model", "m1")
            .with("--queries-per-doc", 2)
    }

    fn path_in(dir: &tempfile::TempDir) -> Utf8PathBuf {
        Utf8Path::from_path(dir.path()).unwrap().join("out.jsonl")
    }

    fn rows(path: &Utf8Path) -> Vec<(String, String)> {
        let text = std::fs::read_to_string(path).unwrap();
        if text.is_empty() {
            return Vec::new();
        }
        let AnyDataset::Token(d) = dataset::parse(&text, "out").unwrap() else {
            panic!("token level expected")
        };
        d.examples()
            .iter()
            .map(|e| (e.id.clone(), e.query.clone()))
            .collect()
    }

    #[test]
    fn rows_are_numbered_on_across_runs_and_totals_add_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(&dir);
        let c = corpus();
        let docs = c.documents();
        {
            let mut out = ResumableOutput::open(path.clone(), header()).unwrap();
            assert_eq!(out.resumed(), &Resumed::default());
            let r = out.append(&docs[1], batch(&docs[1], 2)).unwrap();
            assert_eq!((r.first_id, r.rows), (1, 2));
            out.append(&docs[0], batch(&docs[0], 0)).unwrap();
            assert_eq!(out.next_id(), 3);
        }
        let mut out = ResumableOutput::open(path.clone(), header()).unwrap();
        assert_eq!(
            out.resumed(),
            &Resumed {
                documents: 2,
                rows: 2,
                discarded_bytes: 0
            }
        );
        assert!(out.is_done(&docs[0]).unwrap());
        assert!(out.is_done(&docs[1]).unwrap());
        assert!(!out.is_done(&docs[2]).unwrap());
        out.append(&docs[2], batch(&docs[2], 3)).unwrap();
        let ids: Vec<String> = rows(&path).into_iter().map(|(id, _)| id).collect();
        assert_eq!(ids, ["q0001", "q0002", "q0003", "q0004", "q0005"]);
        let t = out.totals();
        assert_eq!((t.documents, t.rows, t.calls), (3, 5, 3));
        assert_eq!(t.dropped.unlocated, 3);
        assert_eq!(t.usage.total(), 330);
        let err = out.append(&docs[2], batch(&docs[2], 1)).unwrap_err();
        assert!(err.to_string().contains("already recorded"), "{err}");
    }

    #[test]
    fn other_settings_an_unknown_file_or_a_shortened_file_refuse_to_continue() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(&dir);
        let c = corpus();
        {
            let mut out = ResumableOutput::open(path.clone(), header()).unwrap();
            out.append(&c.documents()[0], batch(&c.documents()[0], 2))
                .unwrap();
        }
        let e = ResumableOutput::open(path.clone(), header().with("--model", "m2"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("it was started with --model = `m1` and this run has --model = `m2`"),
            "{e}"
        );
        let e = ResumableOutput::open(path.clone(), header().with("--seed", 4))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--seed = (unset)"), "{e}");
        let mut chunk = header();
        chunk.level = "chunk".into();
        let e = ResumableOutput::open(path.clone(), chunk)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("token-level rows and this run makes chunk-level"),
            "{e}"
        );

        let len = std::fs::metadata(&path).unwrap().len();
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 3).unwrap();
        let e = ResumableOutput::open(path.clone(), header())
            .unwrap_err()
            .to_string();
        assert!(e.contains("changed by something else"), "{e}");

        let foreign = Utf8Path::from_path(dir.path()).unwrap().join("mine.jsonl");
        std::fs::write(&foreign, "{\"id\":\"x\"}\n").unwrap();
        let e = ResumableOutput::open(foreign.clone(), header())
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no progress file"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&foreign).unwrap(),
            "{\"id\":\"x\"}\n"
        );
        assert!(!progress_path(&foreign).exists(), "nothing left behind");
        std::fs::write(&foreign, "").unwrap();
        assert!(ResumableOutput::open(foreign, header()).is_ok());
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_is_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(&dir);
        let first = ResumableOutput::open(path.clone(), header()).unwrap();
        let e = ResumableOutput::open(path.clone(), header())
            .unwrap_err()
            .to_string();
        assert!(e.contains("another process is writing"), "{e}");
        drop(first);
        assert!(ResumableOutput::open(path, header()).is_ok());
    }

    #[test]
    fn a_document_that_changed_or_left_the_corpus_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(&dir);
        let c = corpus();
        let mut out = ResumableOutput::open(path, header()).unwrap();
        out.append(&c.documents()[0], batch(&c.documents()[0], 1))
            .unwrap();
        let changed = Document::new("a.md", "Alpha text, edited.");
        let e = out.is_done(&changed).unwrap_err().to_string();
        assert!(e.contains("document `a.md` changed"), "{e}");
        let smaller = Corpus::new([Document::new("b.md", "x")]).unwrap();
        assert_eq!(out.missing_from(&smaller), [DocId::new("a.md")]);
        assert!(out.missing_from(&c).is_empty());
    }

    #[test]
    fn damage_before_the_last_progress_line_is_an_error_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(&dir);
        let c = corpus();
        {
            let mut out = ResumableOutput::open(path.clone(), header()).unwrap();
            for d in &c.documents()[..2] {
                out.append(d, batch(d, 1)).unwrap();
            }
        }
        let p = progress_path(&path);
        let text = std::fs::read_to_string(&p).unwrap();
        let damaged = text.replacen("\"kind\":\"document\"", "\"kind\":\"documnt\"", 1);
        std::fs::write(&p, damaged).unwrap();
        let e = ResumableOutput::open(path, header())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(&format!("{p}:2: not a progress line")), "{e}");
    }

    /// The bytes a run writes, in order: which file, and what.
    fn write_log(path: &Utf8Path) -> Vec<(bool, Vec<u8>)> {
        let data = std::fs::read(path).unwrap();
        let progress = std::fs::read_to_string(progress_path(path)).unwrap();
        let mut log = Vec::new();
        let mut data_pos = 0usize;
        for (i, line) in progress.split_inclusive('\n').enumerate() {
            if i > 0 {
                let end = serde_json::from_str::<ProgressLine>(line.trim_end())
                    .map(|l| match l {
                        ProgressLine::Document(r) => r.end as usize,
                        _ => panic!("documents only"),
                    })
                    .unwrap();
                log.push((true, data[data_pos..end].to_vec()));
                data_pos = end;
            }
            log.push((false, line.as_bytes().to_vec()));
        }
        log
    }

    /// A crash anywhere in a run (at, next to and inside each write), then a rerun of the
    /// documents not recorded, gives the rows of an uninterrupted run: none lost, none twice,
    /// ids unique.
    #[test]
    fn a_crash_anywhere_loses_and_duplicates_nothing() {
        let c = corpus();
        let docs = c.documents();
        let sizes = [2, 0, 3, 1];
        let full_dir = tempfile::tempdir().unwrap();
        let full = path_in(&full_dir);
        {
            let mut out = ResumableOutput::open(full.clone(), header()).unwrap();
            for (d, n) in docs.iter().zip(sizes) {
                out.append(d, batch(d, n)).unwrap();
            }
        }
        let mut expected: Vec<String> = rows(&full).into_iter().map(|(_, q)| q).collect();
        expected.sort();
        let log = write_log(&full);
        let total: usize = log.iter().map(|(_, b)| b.len()).sum();
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(&dir);
        // Within one write every torn length behaves alike; the points that differ are the
        // write boundaries and their neighbours (each point costs a few fsyncs).
        let mut points = std::collections::BTreeSet::new();
        let mut at = 0;
        for (_, bytes) in &log {
            for p in [at, at + 1, at + bytes.len() / 2, at + bytes.len() - 1] {
                points.insert(p.min(total));
            }
            at += bytes.len();
        }
        points.insert(total);
        for crash in points {
            let (mut data, mut progress) = (Vec::new(), Vec::new());
            let mut left = crash;
            for (is_data, bytes) in &log {
                let n = left.min(bytes.len());
                if *is_data { &mut data } else { &mut progress }.extend_from_slice(&bytes[..n]);
                left -= n;
            }
            std::fs::write(&path, &data).unwrap();
            std::fs::write(progress_path(&path), &progress).unwrap();
            let mut out = ResumableOutput::open(path.clone(), header())
                .unwrap_or_else(|e| panic!("crash after byte {crash}: {e}"));
            let done = out.records().len();
            // Every document whose progress line is complete survives.
            let complete_lines = progress.iter().filter(|b| **b == b'\n').count();
            assert_eq!(done, complete_lines.saturating_sub(1), "crash at {crash}");
            for (d, n) in docs.iter().zip(sizes) {
                if !out.is_done(d).unwrap() {
                    out.append(d, batch(d, n)).unwrap();
                }
            }
            let got = rows(&path);
            let mut ids: Vec<&String> = got.iter().map(|(id, _)| id).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), got.len(), "unique ids, crash at {crash}");
            let mut questions: Vec<String> = got.into_iter().map(|(_, q)| q).collect();
            questions.sort();
            assert_eq!(questions, expected, "crash at {crash}");
        }
    }

    #[test]
    fn finish_filters_in_document_order_and_survives_a_lost_rewrite() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(&dir);
        let c = corpus();
        let docs = c.documents();
        let mut out = ResumableOutput::open(path.clone(), header()).unwrap();
        // Finished out of order, as concurrent documents are.
        for d in [&docs[2], &docs[0], &docs[1]] {
            out.append(d, batch(d, 2)).unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let progress_before = std::fs::read(progress_path(&path)).unwrap();
        let mut seen = Vec::new();
        let f = out
            .finish::<TokenLevel>(&c, |examples, dropped| {
                seen = examples
                    .iter()
                    .map(|e| e.truth[0].doc.to_string())
                    .collect();
                // Keep every other row.
                let mut i = 0;
                examples.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                dropped.duplicate = 3;
            })
            .unwrap();
        assert_eq!(seen, ["a.md", "a.md", "b.md", "b.md", "c.md", "c.md"]);
        assert_eq!(f.rows, 3);
        assert_eq!(out.totals().rows, 3);
        assert_eq!(out.totals().dropped.duplicate, 3);
        let kept = rows(&path);
        assert_eq!(
            kept.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
            ["q0003", "q0005", "q0001"],
            "ids stay; rows follow the corpus order"
        );
        drop(out);
        let out = ResumableOutput::open(path.clone(), header()).unwrap();
        assert_eq!(out.finished(), Some(&f));
        assert_eq!(out.totals().rows, 3);
        drop(out);

        // The `finished` line reached the disk but the rewrite did not.
        std::fs::write(&path, &before).unwrap();
        let out = ResumableOutput::open(path.clone(), header()).unwrap();
        assert_eq!(out.finished(), None);
        assert_eq!(out.totals().rows, 6);
        assert_eq!(
            std::fs::read(progress_path(&path)).unwrap(),
            progress_before,
            "the unfulfilled `finished` line is removed"
        );
    }
}
