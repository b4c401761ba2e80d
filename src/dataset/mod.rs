//! Datasets: queries with their ground truth, as LangSmith-shaped JSONL.
//!
//! One example per line:
//!
//! ```json
//! {"id":"q0001","inputs":{"query":"…"},
//!  "outputs":{"relevant_spans":[{"doc_id":"guide/setup.md","start":120,"end":301,"text":"…"}]},
//!  "metadata":{"difficulty":"factual","source_docs":["guide/setup.md"]}}
//! ```
//!
//! Token-level rows carry `outputs.relevant_spans` (character offsets, end-exclusive, with the
//! text they covered when the dataset was made); chunk-level rows carry
//! `outputs.relevant_chunk_ids` and record the chunker that produced the ids in
//! `metadata.chunker`. A file holds one level only.
//!
//! Rows of either level may carry `outputs.reference_answer`: what a good answer to the query
//! says, as a string or a list of strings (several acceptable answers; answer metrics that
//! support several references take the best match). Rows without one stay valid; only the
//! answer metrics that compare with a reference skip them.
//!
//! A third shape holds questions with reference answers and no retrieval truth, the pairs a
//! team usually has: `outputs` carries `reference_answer` alone. Such a file loads as a
//! token-level dataset whose [`has_retrieval_truth`](Dataset::has_retrieval_truth) is false:
//! its answers are scored, and retrieval metrics are not measured (absent, never 0).
//!
//! ```
//! use rag_eval::dataset::{self, AnyDataset};
//! let d = dataset::parse(
//!     r#"{"id":"q1","inputs":{"query":"When?"},"outputs":{"reference_answer":"In May."}}"#,
//!     "qa.jsonl",
//! )?;
//! assert_eq!(d.shape(), dataset::Shape::Qa);
//! let AnyDataset::Token(d) = d else { unreachable!() };
//! assert!(!d.has_retrieval_truth());
//! # Ok::<(), rag_eval::Error>(())
//! ```

pub mod destination;
pub mod import;
mod raw;
pub mod reanchor;
pub mod retrieved;
pub mod stats;
mod validate;

pub use validate::{validate, Validation};

use crate::chunk::ChunkId;
use crate::corpus::{Corpus, DocId, Metadata};
use crate::error::{DatasetError, Error, Result};
use crate::level::{ChunkLevel, Level, TokenLevel};
use crate::span::CharSpan;
use camino::Utf8Path;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The query of an example (`inputs` in the file). Other fields are the user's: kept, not read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Inputs {
    query: String,
}

/// A truth span as written in a dataset: position plus the text it covered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanRef {
    /// Document id (path relative to the corpus root).
    pub doc_id: DocId,
    /// First character (inclusive).
    pub start: usize,
    /// One past the last character.
    pub end: usize,
    /// The text `doc[start..end]` had when the dataset was made; compared with the corpus to
    /// detect drift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl SpanRef {
    /// The span without its text.
    pub fn span(&self) -> CharSpan {
        CharSpan::new(self.doc_id.clone(), self.start, self.end)
    }
}

/// The truth of an example. Other fields (a `split`, …) are the user's: kept when a dataset is
/// rewritten, not read.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct RawOutputs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    relevant_spans: Option<Vec<SpanRef>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    relevant_chunk_ids: Option<Vec<ChunkId>>,
    /// A string or a list of strings; read by [`reference_answers`] so a wrong type gets a
    /// message naming the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reference_answer: Option<serde_json::Value>,
}

/// `outputs.reference_answer` as written: one answer is a string, several are a list.
fn reference_value(answers: &[String]) -> Option<serde_json::Value> {
    match answers {
        [] => None,
        [one] => Some(one.clone().into()),
        many => Some(many.to_vec().into()),
    }
}

/// The reference answers of `outputs.reference_answer`: a string or a non-empty list of
/// strings, none of them empty (an empty reference would make every answer metric 0 or
/// undefined); `null` or no field is no reference.
fn reference_answers(value: Option<serde_json::Value>) -> std::result::Result<Vec<String>, String> {
    use serde_json::Value;
    const EMPTY: &str = "leave the field out when a row has no reference answer";
    let answers = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(items)) => {
            if items.is_empty() {
                return Err(format!(
                    "`outputs.reference_answer` is an empty list; {EMPTY}"
                ));
            }
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s),
                    other => Err(format!(
                        "`outputs.reference_answer[{i}]` is {}, expected a string",
                        json_kind(&other)
                    )),
                })
                .collect::<std::result::Result<_, _>>()?
        }
        Some(other) => {
            return Err(format!(
                "`outputs.reference_answer` is {}, expected a string or a list of strings",
                json_kind(&other)
            ))
        }
    };
    if let Some(i) = answers.iter().position(|a| a.trim().is_empty()) {
        let at = if answers.len() == 1 {
            String::new()
        } else {
            format!("[{i}]")
        };
        return Err(format!("`outputs.reference_answer{at}` is empty; {EMPTY}"));
    }
    Ok(answers)
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct RawRow {
    id: String,
    inputs: Inputs,
    outputs: RawOutputs,
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    metadata: Metadata,
}

/// One query with its ground truth at level `L`.
#[derive(Debug, Clone, PartialEq)]
pub struct Example<L: Level> {
    /// Unique id within the dataset, e.g. `q0001`.
    pub id: String,
    /// The query text.
    pub query: String,
    /// The ground truth.
    pub truth: L::Truth,
    /// Token level: the text recorded with each truth span, in the same order as `truth`
    /// (`None` where the file has none). Empty at chunk level.
    pub span_texts: Vec<Option<String>>,
    /// Free-form metadata (`difficulty`, `source_docs`, `generation_model`, `chunker`, …).
    pub metadata: Metadata,
    /// What a good answer to the query says (`outputs.reference_answer`): none, one, or several
    /// acceptable answers. Never holds an empty string.
    pub reference_answers: Vec<String>,
}

impl<L: Level> Example<L> {
    /// The difficulty label, if the row has one.
    pub fn difficulty(&self) -> Option<&str> {
        self.metadata.get("difficulty").and_then(|v| v.as_str())
    }

    /// The reference answers of the row (empty when it has none); metrics that take one
    /// reference use the first.
    pub fn reference_answers(&self) -> &[String] {
        &self.reference_answers
    }

    /// The first reference answer, if the row has one.
    pub fn reference_answer(&self) -> Option<&str> {
        self.reference_answers.first().map(String::as_str)
    }
}

/// A dataset at level `L`: examples in file order with unique ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset<L: Level> {
    examples: Vec<Example<L>>,
    /// One-based line of each example in its source (0 when built in memory).
    lines: Vec<usize>,
    /// The line each example was read from, so a rewrite keeps what rag-eval does not read
    /// (`None` when built in memory).
    originals: Vec<Option<String>>,
    /// Example index by id.
    index: HashMap<String, usize>,
    source: String,
    /// False for a file of questions with reference answers only (the `qa` shape).
    retrieval_truth: bool,
}

/// Token-level dataset.
pub type TokenDataset = Dataset<TokenLevel>;
/// Chunk-level dataset.
pub type ChunkDataset = Dataset<ChunkLevel>;

/// What a dataset file holds; written as `chunk`, `token` or `qa` (its JSON form).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Shape {
    /// Chunk ids to find (`relevant_chunk_ids`).
    Chunk,
    /// Character spans to find (`relevant_spans`).
    Token,
    /// Questions with reference answers and no retrieval truth.
    Qa,
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Shape::Chunk => ChunkLevel::NAME,
            Shape::Token => TokenLevel::NAME,
            Shape::Qa => "qa",
        })
    }
}

/// A dataset of either level, as found in a file.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyDataset {
    /// Rows with `relevant_chunk_ids`.
    Chunk(ChunkDataset),
    /// Rows with `relevant_spans`.
    Token(TokenDataset),
}

impl AnyDataset {
    /// What the file holds: chunk ids to find, character spans to find, or questions with
    /// reference answers and no retrieval truth.
    pub fn shape(&self) -> Shape {
        match self {
            AnyDataset::Token(d) if !d.has_retrieval_truth() => Shape::Qa,
            AnyDataset::Token(_) => Shape::Token,
            AnyDataset::Chunk(_) => Shape::Chunk,
        }
    }

    /// `"chunk"` or `"token"` (a `qa` file is token-level: contexts are scored as spans).
    pub fn level(&self) -> &'static str {
        match self {
            AnyDataset::Chunk(_) => ChunkLevel::NAME,
            AnyDataset::Token(_) => TokenLevel::NAME,
        }
    }

    /// Number of examples.
    pub fn len(&self) -> usize {
        match self {
            AnyDataset::Chunk(d) => d.len(),
            AnyDataset::Token(d) => d.len(),
        }
    }

    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<L: Level> Dataset<L> {
    /// A dataset from examples built in memory; duplicate ids are an error.
    pub fn new(examples: Vec<Example<L>>) -> Result<Self> {
        let lines = vec![0; examples.len()];
        let originals = vec![None; examples.len()];
        Dataset::assemble(examples, lines, originals, "<memory>".into())
    }

    fn assemble(
        examples: Vec<Example<L>>,
        lines: Vec<usize>,
        originals: Vec<Option<String>>,
        source: String,
    ) -> Result<Self> {
        let mut d = Dataset {
            examples,
            lines,
            originals,
            index: HashMap::new(),
            source,
            retrieval_truth: true,
        };
        d.index = d.check_unique_ids()?;
        Ok(d)
    }

    /// Whether the rows say what retrieval should find. False for a file of questions with
    /// reference answers only: retrieval metrics are then not measured, and no row counts as
    /// having nothing to find.
    pub fn has_retrieval_truth(&self) -> bool {
        self.retrieval_truth
    }

    /// The line example `index` was read from, if it came from a file.
    pub fn original(&self, index: usize) -> Option<&str> {
        self.originals.get(index).and_then(|o| o.as_deref())
    }

    /// The examples, in file order.
    pub fn examples(&self) -> &[Example<L>] {
        &self.examples
    }

    /// Number of examples.
    pub fn len(&self) -> usize {
        self.examples.len()
    }

    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.examples.is_empty()
    }

    /// Where the dataset came from (a path, or `<memory>`).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The one-based line example `index` was read from (0 when it came from no file).
    pub(crate) fn line(&self, index: usize) -> usize {
        self.lines.get(index).copied().unwrap_or(0)
    }

    /// `source:line` of an example, for messages.
    pub fn location(&self, index: usize) -> String {
        match self.lines.get(index) {
            Some(&l) if l > 0 => format!("{}:{l}", self.source),
            _ => self.source.clone(),
        }
    }

    /// An example by id, in constant time.
    pub fn get(&self, id: &str) -> Option<&Example<L>> {
        self.index.get(id).map(|&i| &self.examples[i])
    }

    /// Examples with nothing to find (an empty `relevant_spans` or `relevant_chunk_ids`, or
    /// only empty spans), by index. They score 0 on every metric whatever is retrieved, so
    /// scoring refuses them ([`require_truth`](Dataset::require_truth)) unless they are left
    /// out on purpose ([`skip_empty_truth`](Dataset::skip_empty_truth)).
    pub fn empty_truth(&self) -> Vec<usize> {
        if !self.retrieval_truth {
            return Vec::new();
        }
        (0..self.examples.len())
            .filter(|&i| L::truth_is_empty(&self.examples[i].truth))
            .collect()
    }

    /// An error naming every example with nothing to find, if there is one; for a dataset
    /// without retrieval truth, an error saying that retrieval cannot be measured on it.
    pub fn require_truth(&self) -> Result<()> {
        if !self.retrieval_truth {
            return Err(Error::Dataset(DatasetError::new(&self.source, format!(
                "{} holds questions with reference answers and no retrieval truth (`relevant_spans` or `relevant_chunk_ids`): retrieval cannot be measured on it; score a system's answers instead (`rag-eval score --answers`, `rag-eval eval --rag`)",
                self.source
            ))));
        }
        let empty = self.empty_truth();
        if empty.is_empty() {
            return Ok(());
        }
        let shown: Vec<String> = empty
            .iter()
            .take(10)
            .map(|&i| format!("{}: `{}`", self.location(i), self.examples[i].id))
            .collect();
        Err(Error::Dataset(DatasetError::new(&self.source, format!(
            "{} example{} of {} {} no ground truth and would score 0 on every metric, pulling the means down; fill them in, or leave them out explicitly (`skip_empty_truth`):
{}{}",
            empty.len(),
            if empty.len() == 1 { "" } else { "s" },
            self.source,
            if empty.len() == 1 { "has" } else { "have" },
            shown.join("\n"),
            if empty.len() > shown.len() { "\n…" } else { "" }
        ))))
    }

    /// The dataset without the examples [`empty_truth`](Dataset::empty_truth) lists, and how
    /// many were left out (report the count: the figures then describe fewer queries).
    pub fn skip_empty_truth(&self) -> (Self, usize) {
        let empty = self.empty_truth();
        if empty.is_empty() {
            return (self.clone(), 0);
        }
        let keep = |i: &usize| empty.binary_search(i).is_err();
        let idx: Vec<usize> = (0..self.examples.len()).filter(keep).collect();
        (self.subset(&idx), empty.len())
    }

    /// The examples whose ids `keep` accepts, in file order, with their lines and source.
    pub(crate) fn only(&self, keep: impl Fn(&str) -> bool) -> Self {
        let idx: Vec<usize> = (0..self.examples.len())
            .filter(|&i| keep(&self.examples[i].id))
            .collect();
        self.subset(&idx)
    }

    /// The examples at the ascending indices `idx`.
    fn subset(&self, idx: &[usize]) -> Self {
        let mut d = Dataset::assemble(
            idx.iter().map(|&i| self.examples[i].clone()).collect(),
            idx.iter().map(|&i| self.lines[i]).collect(),
            idx.iter().map(|&i| self.originals[i].clone()).collect(),
            self.source.clone(),
        )
        .expect("a subset of unique ids is unique");
        d.retrieval_truth = self.retrieval_truth;
        d
    }

    fn check_unique_ids(&self) -> Result<HashMap<String, usize>> {
        let mut seen: HashMap<String, usize> = HashMap::with_capacity(self.examples.len());
        for (i, e) in self.examples.iter().enumerate() {
            if let Some(&first) = seen.get(e.id.as_str()) {
                return Err(Error::Dataset(DatasetError::new(
                    &self.source,
                    format!(
                        "{}: duplicate id `{}` (first at {})",
                        self.location(i),
                        e.id,
                        self.location(first)
                    ),
                )));
            }
            seen.insert(e.id.clone(), i);
        }
        Ok(seen)
    }
}

/// A ground-truth span that does not agree with the corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanProblem {
    /// `file:line` of the row.
    pub location: String,
    /// The example id.
    pub example_id: String,
    /// Index of the span within the row.
    pub span_index: usize,
    /// What is wrong.
    pub kind: SpanProblemKind,
}

/// How a ground-truth span disagrees with the corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpanProblemKind {
    /// The document is not in the corpus.
    UnknownDocument(DocId),
    /// The span ends past the end of its document.
    OutOfBounds {
        /// The span.
        span: CharSpan,
        /// Document length in characters.
        doc_len: usize,
    },
    /// The corpus text at the span differs from the recorded text: the corpus changed since
    /// the dataset was made.
    Drift {
        /// The span.
        span: CharSpan,
        /// Text recorded in the dataset.
        expected: String,
        /// Text the corpus has there now.
        found: String,
        /// Whether the recorded text is at `start..end` counted in bytes: the offsets were
        /// made by a tool that counts bytes, not a changed corpus.
        bytes: bool,
    },
}

impl std::fmt::Display for SpanProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: example `{}`, span {}: ",
            self.location, self.example_id, self.span_index
        )?;
        match &self.kind {
            SpanProblemKind::UnknownDocument(d) => write!(f, "document `{d}` is not in the corpus"),
            SpanProblemKind::OutOfBounds { span, doc_len } => write!(
                f,
                "span {}..{} is outside `{}` ({doc_len} characters)",
                span.start, span.end, span.doc
            ),
            SpanProblemKind::Drift {
                span,
                expected,
                found,
                bytes,
            } => {
                write!(
                    f,
                    "text at `{}` {}..{} changed: expected {:?}, found {:?}",
                    span.doc,
                    span.start,
                    span.end,
                    preview(expected),
                    preview(found)
                )?;
                if *bytes {
                    write!(f, " (the recorded text is at {}..{} counted in bytes: offsets must be characters, not bytes)", span.start, span.end)?;
                }
                Ok(())
            }
        }
    }
}

fn preview(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() <= MAX {
        s.to_owned()
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head}…")
    }
}

impl TokenDataset {
    /// Every span that does not agree with `corpus`: unknown documents, spans past the end of
    /// their document, and drift (recorded text differs from the corpus text at the span).
    pub fn check_against(&self, corpus: &Corpus) -> Vec<SpanProblem> {
        let mut problems = Vec::new();
        for (i, ex) in self.examples.iter().enumerate() {
            for (j, span) in ex.truth.iter().enumerate() {
                let problem = |kind| SpanProblem {
                    location: self.location(i),
                    example_id: ex.id.clone(),
                    span_index: j,
                    kind,
                };
                let Some(doc) = corpus.get(span.doc.as_str()) else {
                    problems.push(problem(SpanProblemKind::UnknownDocument(span.doc.clone())));
                    continue;
                };
                let Some(found) = doc.slice(span.start, span.end) else {
                    problems.push(problem(SpanProblemKind::OutOfBounds {
                        span: span.clone(),
                        doc_len: doc.char_len(),
                    }));
                    continue;
                };
                if let Some(Some(expected)) = ex.span_texts.get(j) {
                    if expected != found {
                        problems.push(problem(SpanProblemKind::Drift {
                            span: span.clone(),
                            expected: expected.clone(),
                            found: found.to_owned(),
                            bytes: doc.content().get(span.start..span.end)
                                == Some(expected.as_str()),
                        }));
                    }
                }
            }
        }
        problems
    }
}

/// Reads a dataset file of either level, validating its shape: malformed JSON and missing
/// fields (file:line), a mix of levels, duplicate ids, reversed spans. A byte order mark at
/// the start of the file is skipped.
pub fn load(path: impl AsRef<Utf8Path>) -> Result<AnyDataset> {
    let path = path.as_ref();
    assemble(lines_of(path)?, path.as_str())
}

/// Parses dataset JSONL; `source` names the input in messages. Blank lines and a leading byte
/// order mark are skipped.
pub fn parse(text: &str, source: &str) -> Result<AnyDataset> {
    let text = crate::fs::strip_bom(text);
    let rows = text.lines().enumerate().filter_map(|(i, line)| {
        parse_row(line, i + 1, source)
            .transpose()
            .map(|r| r.map(|ex| (i + 1, ex, line.to_owned())))
    });
    assemble(rows, source)
}

/// Some rows of the dataset file `source`, each with its one-based line number, read as [`load`]
/// reads the whole file: what an index of the file's rows finds without reading the rest.
pub(crate) fn from_lines<'a>(
    lines: impl IntoIterator<Item = (usize, &'a str)>,
    source: &str,
) -> Result<AnyDataset> {
    let rows = lines.into_iter().filter_map(|(n, line)| {
        parse_row(line, n, source)
            .transpose()
            .map(|r| r.map(|ex| (n, ex, line.to_owned())))
    });
    assemble(rows, source)
}

/// One example of either level, as read from a file.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyExample {
    /// A chunk-level row.
    Chunk(Example<ChunkLevel>),
    /// A token-level row.
    Token(Example<TokenLevel>),
    /// A question with reference answers and no retrieval truth (its `truth` is empty).
    Qa(Example<TokenLevel>),
}

impl AnyExample {
    fn to_row(&self) -> String {
        match self {
            AnyExample::Chunk(e) => e.to_row(),
            AnyExample::Token(e) | AnyExample::Qa(e) => e.to_row(),
        }
    }
}

/// Reads a dataset file one row at a time, for files too large to hold at once. Each item is
/// the one-based line number and the example; malformed lines are errors naming file:line.
/// Level mixing and duplicate ids are whole-file properties, checked by [`load`] only.
pub fn stream(
    path: impl AsRef<Utf8Path>,
) -> Result<impl Iterator<Item = Result<(usize, AnyExample)>>> {
    Ok(lines_of(path.as_ref())?.map(|r| r.map(|(n, e, _)| (n, e))))
}

/// The rows of a dataset file with their line numbers and the lines themselves.
fn lines_of(path: &Utf8Path) -> Result<impl Iterator<Item = Result<(usize, AnyExample, String)>>> {
    use std::io::BufRead;
    let path = path.to_owned();
    let file = std::fs::File::open(&path).map_err(|e| Error::io("read", path.as_path(), e))?;
    let lines = std::io::BufReader::new(file).lines();
    Ok(lines.enumerate().filter_map(move |(i, line)| {
        let mut line = match line {
            Ok(l) => l,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Some(Err(Error::Parse {
                    path: path.clone(),
                    line: i + 1,
                    message: "not valid UTF-8".into(),
                }))
            }
            Err(e) => return Some(Err(Error::io("read", path.as_path(), e))),
        };
        if i == 0 && line.starts_with('\u{feff}') {
            line.drain(..'\u{feff}'.len_utf8());
        }
        parse_row(&line, i + 1, path.as_str())
            .transpose()
            .map(|r| r.map(|ex| (i + 1, ex, line)))
    }))
}

/// Parses one line; `None` for a blank line.
fn parse_row(line: &str, n: usize, source: &str) -> Result<Option<AnyExample>> {
    let perr = |message: String| Error::Parse {
        path: source.into(),
        line: n,
        message,
    };
    if line.trim().is_empty() {
        return Ok(None);
    }
    let row: RawRow = serde_json::from_str(line).map_err(|e| perr(e.to_string()))?;
    let reference_answers = reference_answers(row.outputs.reference_answer).map_err(perr)?;
    let example = match (row.outputs.relevant_spans, row.outputs.relevant_chunk_ids) {
        (Some(spans), None) => {
            if let Some(m) = spans
                .iter()
                .find_map(|s| crate::span::offset_problem(s.doc_id.as_str(), s.start, s.end))
            {
                return Err(perr(m));
            }
            AnyExample::Token(Example {
                id: row.id,
                query: row.inputs.query,
                truth: spans.iter().map(SpanRef::span).collect(),
                span_texts: spans.into_iter().map(|s| s.text).collect(),
                metadata: row.metadata,
                reference_answers,
            })
        }
        (None, Some(ids)) => {
            if let Some(m) = position_aware_ids(&ids) {
                return Err(perr(m));
            }
            AnyExample::Chunk(Example {
                id: row.id,
                query: row.inputs.query,
                truth: ids,
                span_texts: Vec::new(),
                metadata: row.metadata,
                reference_answers,
            })
        }
        (Some(_), Some(_)) => {
            return Err(perr(
                "`outputs` has both `relevant_spans` and `relevant_chunk_ids`; a row is one level"
                    .into(),
            ))
        }
        (None, None) if !reference_answers.is_empty() => AnyExample::Qa(Example {
            id: row.id,
            query: row.inputs.query,
            truth: Vec::new(),
            span_texts: Vec::new(),
            metadata: row.metadata,
            reference_answers,
        }),
        (None, None) => {
            // Other fields of `outputs` are allowed, so a misspelt truth field is named here.
            let near: Vec<String> = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| {
                    v.get("outputs")?.as_object().map(|o| {
                        o.keys()
                            .filter(|k| k.starts_with("relevant"))
                            .map(|k| format!("; unknown field `{k}`"))
                            .collect()
                    })
                })
                .unwrap_or_default();
            return Err(perr(format!(
                "`outputs` needs `relevant_spans` (token level), `relevant_chunk_ids` (chunk level) or, for questions with reference answers only, `reference_answer`{}",
                near.concat()
            )));
        }
    };
    Ok(Some(example))
}

/// Chunk-level files name chunks by content (`chunk_…`, [`ChunkId`]); `rag-eval chunk` lists
/// chunks with their position-aware ids (`pa_chunk_…`, [`PositionAwareChunkId`](crate::chunk::PositionAwareChunkId)),
/// which name a chunk at one place and never equal a content id. Scored as given, they would
/// match nothing and every figure would be 0, so they are refused with what to use instead.
pub(crate) fn position_aware_ids(ids: &[ChunkId]) -> Option<String> {
    use crate::chunk::PositionAwareChunkId;
    let pa: Vec<&str> = ids
        .iter()
        .map(ChunkId::as_str)
        .filter(|id| id.starts_with(PositionAwareChunkId::PREFIX))
        .collect();
    let first = pa.first()?;
    Some(format!(
        "`{first}`{} {} position-aware (`{}…`, as `rag-eval chunk` prints in `id`); chunk-level files hold content ids `{}…` (`chunk_id` in `rag-eval chunk`'s output, `ChunkId::from_content` of the chunk's text)",
        if pa.len() > 1 { format!(" and {} more", pa.len() - 1) } else { String::new() },
        if pa.len() > 1 { "are" } else { "is" },
        PositionAwareChunkId::PREFIX,
        ChunkId::PREFIX,
    ))
}

/// Gathers rows into a dataset of one level with unique ids.
fn assemble(
    rows: impl Iterator<Item = Result<(usize, AnyExample, String)>>,
    source: &str,
) -> Result<AnyDataset> {
    let mut chunk: Vec<(usize, Example<ChunkLevel>, String)> = Vec::new();
    let mut token: Vec<(usize, Example<TokenLevel>, String)> = Vec::new();
    let mut qa: Vec<(usize, Example<TokenLevel>, String)> = Vec::new();
    for row in rows {
        match row? {
            (n, AnyExample::Chunk(e), l) => chunk.push((n, e, l)),
            (n, AnyExample::Token(e), l) => token.push((n, e, l)),
            (n, AnyExample::Qa(e), l) => qa.push((n, e, l)),
        }
    }
    if let Some((n, ..)) = qa.first() {
        let other = chunk.first().map(|r| r.0).or(token.first().map(|r| r.0));
        if let Some(m) = other {
            return Err(Error::Dataset(DatasetError::new(source, format!(
                "{source} mixes shapes: line {m} says what retrieval should find, line {n} has a reference answer only; a file holds one shape (split it, or give every row its truth)"
            ))));
        }
        let mut d = collect(qa, source)?;
        d.retrieval_truth = false;
        return Ok(AnyDataset::Token(d));
    }
    match (chunk.is_empty(), token.is_empty()) {
        (false, false) => Err(Error::Dataset(DatasetError::new(
            source,
            format!(
                "{source} mixes levels: line {} is chunk-level, line {} is token-level",
                chunk[0].0, token[0].0
            ),
        ))),
        (false, true) => Ok(AnyDataset::Chunk(collect(chunk, source)?)),
        (true, false) => Ok(AnyDataset::Token(collect(token, source)?)),
        (true, true) => Err(Error::Dataset(DatasetError::new(
            source,
            format!("{source} has no examples"),
        ))),
    }
}

fn collect<L: Level>(rows: Vec<(usize, Example<L>, String)>, source: &str) -> Result<Dataset<L>> {
    let mut lines = Vec::with_capacity(rows.len());
    let mut examples = Vec::with_capacity(rows.len());
    let mut originals = Vec::with_capacity(rows.len());
    for (n, e, l) in rows {
        lines.push(n);
        examples.push(e);
        originals.push(Some(l));
    }
    Dataset::assemble(examples, lines, originals, source.to_owned())
}

/// Serialises datasets in the file format.
pub trait ToRow {
    /// The example as one JSON line (no trailing newline).
    fn to_row(&self) -> String;

    /// The example as one JSON line written over `original`, the line it was read from:
    /// `original` itself when the example is what that line says, and otherwise the line with
    /// only the changed fields replaced, so fields rag-eval does not read (a
    /// `reference_answer`, a `split`, extra fields of a span) survive the rewrite.
    fn to_row_over(&self, original: &str) -> String {
        let new = self.to_row();
        let unchanged = matches!(
            parse_row(original, 0, ""),
            Ok(Some(old)) if old.to_row() == new
        );
        if unchanged {
            return original.to_owned();
        }
        match serde_json::from_str::<serde_json::Value>(&new) {
            Ok(v) if serde_json::from_str::<serde_json::Value>(original).is_ok() => {
                raw::overlay(original, &v)
            }
            _ => new,
        }
    }
}

impl ToRow for Example<TokenLevel> {
    fn to_row(&self) -> String {
        let spans = self
            .truth
            .iter()
            .enumerate()
            .map(|(i, s)| SpanRef {
                doc_id: s.doc.clone(),
                start: s.start,
                end: s.end,
                text: self.span_texts.get(i).cloned().flatten(),
            })
            .collect();
        row_json(
            self,
            RawOutputs {
                relevant_spans: Some(spans),
                relevant_chunk_ids: None,
                reference_answer: reference_value(&self.reference_answers),
            },
        )
    }
}

impl ToRow for Example<ChunkLevel> {
    fn to_row(&self) -> String {
        row_json(
            self,
            RawOutputs {
                relevant_spans: None,
                relevant_chunk_ids: Some(self.truth.clone()),
                reference_answer: reference_value(&self.reference_answers),
            },
        )
    }
}

fn row_json<L: Level>(e: &Example<L>, outputs: RawOutputs) -> String {
    let row = RawRow {
        id: e.id.clone(),
        inputs: Inputs {
            query: e.query.clone(),
        },
        outputs,
        metadata: e.metadata.clone(),
    };
    serde_json::to_string(&row).expect("dataset rows always serialise")
}

impl<L: Level> Dataset<L>
where
    Example<L>: ToRow,
{
    /// First 16 hex digits of SHA-256 over the rows as written, each followed by a newline:
    /// identifies the ground truth a result was computed against (a run record's
    /// `dataset_hash`).
    pub fn content_hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for e in &self.examples {
            h.update(e.to_row().as_bytes());
            h.update(b"\n");
        }
        crate::digest::short_hex(h)
    }

    /// The file form of the dataset: one JSON line per example. Rows read from a file keep
    /// every field rag-eval does not read, and rows that did not change are the bytes they were
    /// read from (see [`ToRow::to_row_over`]).
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for (i, e) in self.examples.iter().enumerate() {
            match self.original(i) {
                Some(original) => out.push_str(&e.to_row_over(original)),
                None => out.push_str(&e.to_row()),
            }
            out.push('\n');
        }
        out
    }

    /// Writes the dataset as JSONL ([`to_jsonl`](Dataset::to_jsonl)), atomically (a temporary
    /// file in the same folder, renamed over the target), so a reader never sees half a file.
    pub fn write(&self, path: impl AsRef<Utf8Path>) -> Result<()> {
        crate::fs::write_atomic(path.as_ref(), self.to_jsonl().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Document;

    const TOKEN: &str = r#"{"id":"q1","inputs":{"query":"what?"},"outputs":{"relevant_spans":[{"doc_id":"a.md","start":0,"end":5,"text":"hello"}]},"metadata":{"difficulty":"factual"}}
{"id":"q2","inputs":{"query":"where?"},"outputs":{"relevant_spans":[{"doc_id":"a.md","start":6,"end":11,"text":"wörld"},{"doc_id":"b.md","start":0,"end":2}]}}
"#;

    fn err(text: &str) -> String {
        parse(text, "d.jsonl").unwrap_err().to_string()
    }

    #[test]
    fn reads_token_rows_and_round_trips() {
        let AnyDataset::Token(d) = parse(TOKEN, "d.jsonl").unwrap() else {
            panic!("expected token level")
        };
        assert_eq!(d.len(), 2);
        assert_eq!(d.examples()[0].difficulty(), Some("factual"));
        assert_eq!(d.examples()[1].truth[1], CharSpan::new("b.md", 0, 2));
        assert_eq!(d.examples()[1].span_texts, [Some("wörld".into()), None]);
        assert_eq!(d.location(1), "d.jsonl:2");
        let written: String = d.examples().iter().map(|e| e.to_row() + "\n").collect();
        assert_eq!(written, TOKEN, "writing keeps the documented key order");
    }

    #[test]
    fn chunk_rows_parse() {
        let AnyDataset::Chunk(d) = parse(
            r#"{"id":"c1","inputs":{"query":"q"},"outputs":{"relevant_chunk_ids":["chunk_2cf24dba5fb0"]},"metadata":{"chunker":"recursive:size=400,overlap=0"}}"#,
            "c.jsonl",
        )
        .unwrap() else {
            panic!("expected chunk level")
        };
        assert_eq!(d.examples()[0].truth, [ChunkId::from_content("hello")]);
    }

    #[test]
    fn shape_errors_name_file_and_line() {
        let e = err("\n{\"id\":\"q\",\"inputs\":{\"query\":\"x\"}}");
        assert!(e.starts_with("d.jsonl:2: missing field `outputs`"), "{e}");
        let e = err("{not json");
        assert!(e.starts_with("d.jsonl:1: "), "{e}");
        let e = err(r#"{"id":"q","inputs":{"query":"x"},"outputs":{}}"#);
        assert!(
            e.contains("d.jsonl:1: `outputs` needs `relevant_spans`"),
            "{e}"
        );
        let e = err(
            r#"{"id":"q","inputs":{"query":"x"},"outputs":{"relevant_spans":[],"relevant_chunk_ids":[]}}"#,
        );
        assert!(e.contains("both"), "{e}");
        let e = err(
            r#"{"id":"q","inputs":{"query":"x"},"outputs":{"relevant_spans":[{"doc_id":"a","start":5,"end":2}]}}"#,
        );
        assert!(
            e.contains("d.jsonl:1: span 5..2 of `a` ends before it starts"),
            "{e}"
        );
        let e = err(
            r#"{"id":"q","inputs":{"query":"x"},"outputs":{"relevant_spans":[{"doc_id":"a","start":9223372036854775808,"end":18446744073709551615}]}}"#,
        );
        assert!(
            e.contains(
                "d.jsonl:1: span 9223372036854775808..18446744073709551615 of `a` ends past"
            ),
            "{e}"
        );
        let e = err(r#"{"id":"q","inputs":{"query":"x"},"outputs":{"relevant_span":[]}}"#);
        assert!(e.contains("unknown field `relevant_span`"), "{e}");
    }

    #[test]
    fn mixed_levels_and_duplicate_ids_are_errors() {
        let mixed = format!(
            "{}\n{}",
            TOKEN.lines().next().unwrap(),
            r#"{"id":"c1","inputs":{"query":"q"},"outputs":{"relevant_chunk_ids":[]}}"#
        );
        assert_eq!(
            err(&mixed),
            "invalid dataset: d.jsonl mixes levels: line 2 is chunk-level, line 1 is token-level"
        );
        let dup = format!(
            "{}\n{}",
            TOKEN.lines().next().unwrap(),
            TOKEN.lines().next().unwrap()
        );
        assert_eq!(
            err(&dup),
            "invalid dataset: d.jsonl:2: duplicate id `q1` (first at d.jsonl:1)"
        );
        assert_eq!(err("\n\n"), "invalid dataset: d.jsonl has no examples");
    }

    #[test]
    fn drift_at_byte_offsets_says_bytes_not_characters() {
        // "naïve" puts every later byte offset one past its character offset: 7..12 in bytes
        // is "world", 7..12 in characters is "orld!".
        let row = r#"{"id":"q1","inputs":{"query":"q"},"outputs":{"relevant_spans":[{"doc_id":"a.md","start":7,"end":12,"text":"world"}]}}"#;
        let AnyDataset::Token(d) = parse(row, "d.jsonl").unwrap() else {
            panic!()
        };
        let corpus = Corpus::new([Document::new("a.md", "naïve world!")]).unwrap();
        let p: Vec<String> = d
            .check_against(&corpus)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            p,
            ["d.jsonl:1: example `q1`, span 0: text at `a.md` 7..12 changed: expected \"world\", found \"orld!\" (the recorded text is at 7..12 counted in bytes: offsets must be characters, not bytes)"]
        );
    }

    #[test]
    fn check_against_reports_unknown_docs_bounds_and_drift() {
        let AnyDataset::Token(d) = parse(TOKEN, "d.jsonl").unwrap() else {
            panic!()
        };
        let corpus = Corpus::new([Document::new("a.md", "hello world")]).unwrap();
        let p: Vec<String> = d
            .check_against(&corpus)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            p,
            [
                "d.jsonl:2: example `q2`, span 0: text at `a.md` 6..11 changed: expected \"wörld\", found \"world\"",
                "d.jsonl:2: example `q2`, span 1: document `b.md` is not in the corpus",
            ]
        );
        let short =
            Corpus::new([Document::new("a.md", "hel"), Document::new("b.md", "xy")]).unwrap();
        let p = d.check_against(&short);
        assert!(matches!(
            p[0].kind,
            SpanProblemKind::OutOfBounds { doc_len: 3, .. }
        ));
    }

    #[test]
    fn streaming_reads_row_by_row_with_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = Utf8Path::from_path(dir.path()).unwrap().join("d.jsonl");
        std::fs::write(&path, format!("{TOKEN}\n{{broken\n")).unwrap();
        let rows: Vec<_> = stream(&path).unwrap().collect();
        assert_eq!(rows.len(), 3);
        assert!(matches!(&rows[0], Ok((1, AnyExample::Token(e))) if e.id == "q1"));
        assert!(matches!(&rows[1], Ok((2, AnyExample::Token(e))) if e.id == "q2"));
        let e = rows[2].as_ref().unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{path}:4: ")),
            "blank line 3 skipped: {e}"
        );
        let e = load(&path).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{path}:4: ")), "{e}");
        std::fs::write(&path, b"{\"id\":\"\xff\"}\n").unwrap();
        let e = load(&path).unwrap_err().to_string();
        assert_eq!(e, format!("{path}:1: not valid UTF-8"));
    }

    #[test]
    fn write_is_atomic_and_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = Utf8Path::from_path(dir.path()).unwrap().join("out.jsonl");
        let AnyDataset::Token(d) = parse(TOKEN, "d.jsonl").unwrap() else {
            panic!()
        };
        d.write(&path).unwrap();
        let AnyDataset::Token(back) = load(&path).unwrap() else {
            panic!()
        };
        assert_eq!(back.examples(), d.examples());
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "no temporary file left behind");
    }

    #[test]
    fn lookup_by_id_does_not_scan() {
        // Scoring looks every retrieval line up by id; a scan per lookup made 100k queries take
        // minutes (this test: 164 s when scanning).
        let n = 100_000;
        let examples: Vec<Example<ChunkLevel>> = (0..n)
            .map(|i| Example {
                id: format!("q{i:06}"),
                query: String::new(),
                truth: Vec::new(),
                span_texts: Vec::new(),
                metadata: Metadata::new(),
                reference_answers: Vec::new(),
            })
            .collect();
        let d = ChunkDataset::new(examples).unwrap();
        let t = std::time::Instant::now();
        let found = (0..n)
            .filter(|i| d.get(&format!("q{i:06}")).is_some())
            .count();
        assert_eq!(found, n);
        assert!(d.get("q").is_none());
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
    }

    #[test]
    fn reference_answers_are_one_string_or_a_list_and_survive_a_rewrite() {
        let text = concat!(
            "{\"id\":\"q1\",\"inputs\":{\"query\":\"a\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":2}],\"reference_answer\":\"In May.\"}}\n",
            "{\"id\":\"q2\",\"inputs\":{\"query\":\"b\"},\"outputs\":{\"reference_answer\":[\"Two\",\"2\"],\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":2}]}}\n",
            "{\"id\":\"q3\",\"inputs\":{\"query\":\"c\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":2}],\"reference_answer\":null}}\n",
        );
        let AnyDataset::Token(mut d) = parse(text, "d.jsonl").unwrap() else {
            panic!()
        };
        let refs: Vec<&[String]> = d.examples().iter().map(|e| e.reference_answers()).collect();
        assert_eq!(
            refs,
            [
                &["In May.".to_owned()][..],
                &["Two".into(), "2".into()],
                &[]
            ]
        );
        assert_eq!(d.examples()[1].reference_answer(), Some("Two"));
        assert_eq!(d.examples()[2].reference_answer(), None);
        assert_eq!(
            d.to_jsonl(),
            text,
            "unchanged rows are their original bytes"
        );
        // A changed row keeps its reference answers, in the shape it had.
        d.examples[1].truth[0].end = 1;
        d.examples[0].truth[0].end = 1;
        let back = d.to_jsonl();
        assert!(
            back.contains("\"reference_answer\":[\"Two\",\"2\"]"),
            "{back}"
        );
        assert!(back.contains("\"reference_answer\":\"In May.\""), "{back}");
        let AnyDataset::Token(again) = parse(&back, "d.jsonl").unwrap() else {
            panic!()
        };
        assert_eq!(again.examples()[1].reference_answers, ["Two", "2"]);
        // Written from memory: one answer as a string, several as a list, none left out.
        let rows: Vec<String> = d.examples().iter().map(|e| e.to_row()).collect();
        assert!(
            rows[0].ends_with(",\"reference_answer\":\"In May.\"}}"),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].contains("\"reference_answer\":[\"Two\",\"2\"]"),
            "{}",
            rows[1]
        );
        assert!(!rows[2].contains("reference_answer"), "{}", rows[2]);
    }

    #[test]
    fn bad_reference_answers_are_errors_naming_the_field() {
        let row = |r: &str| {
            err(&format!(
                "{{\"id\":\"q\",\"inputs\":{{\"query\":\"x\"}},\"outputs\":{{\"relevant_chunk_ids\":[],\"reference_answer\":{r}}}}}"
            ))
        };
        assert_eq!(
            row("3"),
            "d.jsonl:1: `outputs.reference_answer` is a number, expected a string or a list of strings"
        );
        assert_eq!(
            row("[\"a\",{}]"),
            "d.jsonl:1: `outputs.reference_answer[1]` is an object, expected a string"
        );
        assert!(row("\" \"")
            .starts_with("d.jsonl:1: `outputs.reference_answer` is empty; leave the field out"));
        assert!(
            row("[\"a\",\"\"]").starts_with("d.jsonl:1: `outputs.reference_answer[1]` is empty")
        );
        assert!(row("[]").starts_with("d.jsonl:1: `outputs.reference_answer` is an empty list"));
    }

    #[test]
    fn questions_with_reference_answers_only_are_a_shape_of_their_own() {
        let qa = concat!(
            r#"{"id":"q1","inputs":{"query":"when?"},"outputs":{"reference_answer":"In May."},"metadata":{"difficulty":"factual"}}"#,
            "\n",
            r#"{"id":"q2","inputs":{"query":"who?"},"outputs":{"reference_answer":["Ada","Ada Lovelace"]}}"#,
            "\n"
        );
        let d = parse(qa, "qa.jsonl").unwrap();
        assert_eq!((d.shape(), d.level()), (Shape::Qa, "token"));
        let AnyDataset::Token(t) = &d else { panic!() };
        assert!(!t.has_retrieval_truth());
        assert_eq!(t.examples()[1].reference_answers, ["Ada", "Ada Lovelace"]);
        // No row "has nothing to find", and leaving such rows out keeps the shape.
        assert!(t.empty_truth().is_empty());
        assert!(!t.skip_empty_truth().0.has_retrieval_truth());
        // Retrieval cannot be measured on it: said, not scored as 0.
        let e = t.require_truth().unwrap_err().to_string();
        assert!(
            e.contains("qa.jsonl holds questions with reference answers and no retrieval truth"),
            "{e}"
        );
        // Unchanged rows are written back as read.
        assert_eq!(t.to_jsonl(), qa);
        assert_eq!(parse(TOKEN, "t").unwrap().shape(), Shape::Token);

        let mixed = format!("{}{qa}", TOKEN);
        assert_eq!(
            parse(&mixed, "m.jsonl").unwrap_err().to_string(),
            "invalid dataset: m.jsonl mixes shapes: line 1 says what retrieval should find, line 3 has a reference answer only; a file holds one shape (split it, or give every row its truth)"
        );
        // Neither truth nor a reference answer: the message names all three.
        assert_eq!(
            err(r#"{"id":"q1","inputs":{"query":"?"},"outputs":{}}"#),
            "d.jsonl:1: `outputs` needs `relevant_spans` (token level), `relevant_chunk_ids` (chunk level) or, for questions with reference answers only, `reference_answer`"
        );
    }

    #[test]
    fn a_byte_order_mark_is_skipped() {
        let text = format!("\u{feff}{TOKEN}");
        let AnyDataset::Token(d) = parse(&text, "d.jsonl").unwrap() else {
            panic!()
        };
        assert_eq!(d.examples()[0].id, "q1");
        let dir = tempfile::tempdir().unwrap();
        let path = Utf8Path::from_path(dir.path()).unwrap().join("d.jsonl");
        std::fs::write(&path, &text).unwrap();
        let AnyDataset::Token(d) = load(&path).unwrap() else {
            panic!()
        };
        assert_eq!(d.len(), 2);
        assert_eq!(d.to_jsonl(), TOKEN, "written back without the mark");
    }

    #[test]
    fn rows_with_nothing_to_find_are_refused_or_left_out_with_a_count() {
        let text = concat!(
            "{\"id\":\"q1\",\"inputs\":{\"query\":\"a\"},\"outputs\":{\"relevant_spans\":[]}}\n",
            "{\"id\":\"q2\",\"inputs\":{\"query\":\"b\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a\",\"start\":3,\"end\":3}]}}\n",
            "{\"id\":\"q3\",\"inputs\":{\"query\":\"c\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a\",\"start\":3,\"end\":3},{\"doc_id\":\"a\",\"start\":0,\"end\":2}]}}\n",
        );
        let AnyDataset::Token(d) = parse(text, "d.jsonl").unwrap() else {
            panic!()
        };
        assert_eq!(d.empty_truth(), [0, 1]);
        let e = d.require_truth().unwrap_err().to_string();
        assert!(
            e.starts_with("invalid dataset: 2 examples of d.jsonl have no ground truth")
                && e.contains("d.jsonl:1: `q1`\nd.jsonl:2: `q2`"),
            "{e}"
        );
        let (kept, skipped) = d.skip_empty_truth();
        assert_eq!(skipped, 2);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept.location(0), "d.jsonl:3");
        assert!(kept.get("q3").is_some() && kept.get("q1").is_none());
        kept.require_truth().unwrap();

        let AnyDataset::Chunk(c) = parse(
            r#"{"id":"c1","inputs":{"query":"q"},"outputs":{"relevant_chunk_ids":[]}}"#,
            "c.jsonl",
        )
        .unwrap() else {
            panic!()
        };
        assert!(c.require_truth().is_err());
    }
}
