//! Answers of a RAG system: what it answered for each query, and the chunks it answered from.
//!
//! An answers file holds one JSON line per query:
//!
//! ```json
//! {"id":"q0001","answer":"Larkspur 3.4.1.",
//!  "contexts":[{"doc_id":"overview.md","start":120,"end":301,"text":"…","score":0.82}]}
//! ```
//!
//! `contexts` are the retrieved chunks the answer was written from, best first, each as a
//! token-level line of a retrieval file has them (`doc_id`, character `start` and `end`,
//! end-exclusive) and with their `text`, which answer metrics read and a chunk-level dataset
//! turns into chunk ids ([`ChunkId::from_content`](crate::chunk::ChunkId::from_content)).
//! `score` is optional: the order in the file is the rank. Other fields of a line are ignored.
//!
//! A context may also be given as text alone, as most vector stores keep it: a string, or an
//! object with `text` and optionally `doc_id` (and `score`) but no offsets. Such contexts are
//! placed in the corpus ([`Answers::place_in`], see [`place`]); without a corpus, or when the
//! text is not found, they are judged but not span-scored. A line whose `contexts` is empty or
//! missing has no retrieval: its retrieval metrics are not measured (absent, never 0).
//!
//! ```
//! use rag_eval::answers::Answers;
//! use rag_eval::corpus::{Corpus, Document};
//! let mut a = Answers::parse(
//!     r#"{"id":"q1","answer":"In May.","contexts":["ships in may"]}"#,
//!     "answers.jsonl".into(),
//! )?;
//! let corpus = Corpus::new([Document::new("a.md", "Larkspur ships in May.")])?;
//! let placed = a.place_in(&corpus);
//! assert_eq!((placed.exact, placed.normalized, placed.unlocated), (0, 1, 0));
//! let span = &a.get("q1").unwrap().contexts[0].chunk.span;
//! assert_eq!((span.doc.as_str(), span.start, span.end), ("a.md", 9, 21));
//! # Ok::<(), rag_eval::Error>(())
//! ```
//!
//! ```
//! use rag_eval::answers::Answers;
//! let a = Answers::parse(
//!     r#"{"id":"q1","answer":"In May.","contexts":[{"doc_id":"a.md","start":0,"end":7,"text":"In May."}]}"#,
//!     "answers.jsonl".into(),
//! )?;
//! let q1 = a.get("q1").unwrap();
//! assert_eq!(q1.answer, "In May.");
//! assert_eq!(q1.contexts[0].chunk.content, "In May.");
//! # Ok::<(), rag_eval::Error>(())
//! ```

pub mod place;
mod score;

pub use place::{Placement, TextContext};
pub use score::{
    add_answers, embed_answers, score_answers, AnswerEmbeddings, AnswerScores, ContextItems,
};

use crate::chunk::{PositionAwareChunk, RetrievedChunk};
use crate::corpus::Corpus;
use crate::dataset::Dataset;
use crate::error::{DatasetError, Error, Result};
use crate::level::Level;
use camino::{Utf8Path, Utf8PathBuf};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

/// What a RAG system gave for one query: the answer and the retrieved chunks it was written
/// from, best first. The same type the [generator](crate::generator) returns and the
/// [judges](crate::judge) read.
pub use crate::generator::RagAnswer;

/// One context as written in an answers file: placed (`doc_id`, `start`, `end`) or text alone.
#[derive(Deserialize)]
struct Context {
    #[serde(default)]
    doc_id: Option<String>,
    #[serde(default)]
    start: Option<usize>,
    #[serde(default)]
    end: Option<usize>,
    text: String,
    #[serde(default)]
    score: Option<f32>,
}

/// One line of an answers file.
#[derive(Debug, Clone)]
struct Entry {
    line: usize,
    answer: RagAnswer,
    /// The contexts given as text, by index in `answer.contexts`.
    text: Vec<(usize, TextContext)>,
    /// The contexts given as text that are not placed, by index, with how the search failed.
    not_found: Vec<(usize, String)>,
}

/// The answers of a file, by query id, with the line each came from.
#[derive(Debug, Clone)]
pub struct Answers {
    by_id: HashMap<String, Entry>,
    path: Utf8PathBuf,
}

impl Answers {
    /// Reads an answers file; malformed lines and repeated ids are errors naming file:line and
    /// the field.
    pub fn load(path: impl AsRef<Utf8Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = crate::corpus::read_utf8(path)?;
        Self::parse(&text, path.to_owned())
    }

    /// Parses answers JSONL; `path` names the input in messages. Blank lines and a leading
    /// byte order mark are skipped.
    pub fn parse(text: &str, path: Utf8PathBuf) -> Result<Self> {
        let mut by_id: HashMap<String, Entry> = HashMap::new();
        for (i, line) in crate::fs::strip_bom(text).lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let perr = |message| Error::Parse {
                path: path.clone(),
                line: i + 1,
                message,
            };
            let (id, answer, text) = read_line(line).map_err(perr)?;
            if let Some(first) = by_id.get(&id) {
                return Err(perr(format!(
                    "query `{id}` appears again (first on line {})",
                    first.line
                )));
            }
            let line = i + 1;
            let not_found = text
                .iter()
                .map(|(i, _)| (*i, place::NOT_SEARCHED.to_owned()))
                .collect();
            let entry = Entry {
                line,
                answer,
                text,
                not_found,
            };
            by_id.insert(id, entry);
        }
        Ok(Answers { by_id, path })
    }

    /// The file the answers were read from.
    pub fn path(&self) -> &Utf8Path {
        &self.path
    }

    /// The answer to a query id.
    pub fn get(&self, id: &str) -> Option<&RagAnswer> {
        self.by_id.get(id).map(|e| &e.answer)
    }

    /// Takes the answer to a query id out of the set.
    pub fn take(&mut self, id: &str) -> Option<RagAnswer> {
        self.by_id.remove(id).map(|e| e.answer)
    }

    /// Whether context `index` of the answer to `id` was given as text, without offsets.
    pub fn given_as_text(&self, id: &str, index: usize) -> bool {
        self.by_id
            .get(id)
            .is_some_and(|e| e.text.iter().any(|(i, _)| *i == index))
    }

    /// How many contexts were given as text, without offsets.
    pub fn text_contexts(&self) -> usize {
        self.by_id.values().map(|e| e.text.len()).sum()
    }

    /// Places every context given as text in `corpus` ([`place`]): found ones get their
    /// document's offsets; the rest keep their text with no character placed. Returns the
    /// counts per match kind.
    pub fn place_in(&mut self, corpus: &Corpus) -> Placement {
        let locator = place::ContextLocator::new(corpus);
        let mut placement = Placement::default();
        for entry in self.by_id.values_mut() {
            entry.not_found.clear();
            for (i, c) in &entry.text {
                let before = placement.unlocated;
                entry.answer.contexts[*i] = locator.place(c, &mut placement);
                if placement.unlocated > before {
                    entry.not_found.push((*i, place::not_found(corpus, c)));
                }
            }
        }
        placement
    }

    /// How the search for context `index` of the answer to `id` failed, when it was given as
    /// text and is not placed in the corpus.
    pub fn not_found(&self, id: &str, index: usize) -> Option<&str> {
        let entry = self.by_id.get(id)?;
        let (_, why) = entry.not_found.iter().find(|(i, _)| *i == index)?;
        Some(why)
    }

    /// Number of answers.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether the file holds no answer.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Ids present in the file, with their line, sorted by line.
    pub fn ids(&self) -> Vec<(&str, usize)> {
        let mut v: Vec<(&str, usize)> = self
            .by_id
            .iter()
            .map(|(k, e)| (k.as_str(), e.line))
            .collect();
        v.sort_by_key(|&(_, l)| l);
        v
    }

    /// The answers as an answers file, one line per query in the order they were read: each
    /// context as it was given, with its offsets, or as text (with its document when named)
    /// when it came without, so that [`Answers::parse`] reads back the same answers.
    pub fn to_jsonl(&self) -> String {
        let mut out = String::new();
        for (id, _) in self.ids() {
            let entry = &self.by_id[id];
            let contexts: Vec<Value> = entry
                .answer
                .contexts
                .iter()
                .enumerate()
                .map(|(i, c)| match entry.text.iter().find(|(at, _)| *at == i) {
                    Some((_, t)) => {
                        let mut v = serde_json::json!({ "text": t.text });
                        if let Some(doc) = &t.doc_id {
                            v["doc_id"] = doc.as_str().into();
                        }
                        if let Some(score) = t.score {
                            v["score"] = score.into();
                        }
                        v
                    }
                    None => serde_json::json!({
                        "doc_id": c.chunk.span.doc.as_str(),
                        "start": c.chunk.span.start,
                        "end": c.chunk.span.end,
                        "text": c.chunk.content,
                        "score": c.score,
                    }),
                })
                .collect();
            let line = serde_json::json!({
                "id": id,
                "answer": entry.answer.answer,
                "contexts": contexts,
            });
            out.push_str(&line.to_string());
            out.push('\n');
        }
        out
    }

    /// An error naming every answer whose id is not a query of `dataset` (up to ten, with
    /// their lines): answers to unknown queries mean the files do not belong together.
    pub fn check_ids<L: Level>(&self, dataset: &Dataset<L>) -> Result<()> {
        let unknown: Vec<(&str, usize)> = self
            .ids()
            .into_iter()
            .filter(|(id, _)| dataset.get(id).is_none())
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let shown: Vec<String> = unknown
            .iter()
            .take(10)
            .map(|(id, l)| format!("{}:{l}: `{id}`", self.path))
            .collect();
        Err(Error::Dataset(DatasetError::new(
            dataset.source(),
            format!(
                "{} answer{} in {} {} not in the dataset {}:\n{}{}",
                unknown.len(),
                if unknown.len() == 1 { "" } else { "s" },
                self.path,
                if unknown.len() == 1 {
                    "is for a query"
                } else {
                    "are for queries"
                },
                dataset.source(),
                shown.join("\n"),
                if unknown.len() > shown.len() {
                    "\n…"
                } else {
                    ""
                }
            ),
        )))
    }
}

/// What one line gives: its id, its answer, and the contexts given as text by index.
type Line = (String, RagAnswer, Vec<(usize, TextContext)>);

/// Reads one line: its id and answer, or what is wrong, naming the field.
fn read_line(line: &str) -> std::result::Result<Line, String> {
    const SHAPE: &str = "answer lines look like {\"id\":…,\"answer\":…,\"contexts\":[{\"doc_id\":…,\"start\":…,\"end\":…,\"text\":…}]}, a context also as text alone or {\"text\":…,\"doc_id\":…}";
    let value: Value = serde_json::from_str(line).map_err(|e| format!("{e} ({SHAPE})"))?;
    let Value::Object(mut obj) = value else {
        return Err(format!("expected a JSON object ({SHAPE})"));
    };
    let mut field = |name: &str| {
        obj.remove(name)
            .ok_or_else(|| format!("missing field `{name}` ({SHAPE})"))
    };
    let id = match field("id")? {
        Value::String(s) => s,
        other => return Err(format!("`id` is {}, expected a string", kind(&other))),
    };
    let answer = match field("answer")? {
        Value::String(s) => s,
        other => return Err(format!("`answer` is {}, expected a string", kind(&other))),
    };
    let contexts = match obj.remove("contexts") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(format!(
                "`contexts` is {}, expected a list of retrieved chunks",
                kind(&other)
            ))
        }
    };
    let (contexts, text) = read_contexts(contexts)?;
    Ok((id, RagAnswer { answer, contexts }, text))
}

/// A line's contexts, and those given as text alone by index among them.
pub(crate) type Contexts = (Vec<RetrievedChunk>, Vec<(usize, TextContext)>);

/// Reads the retrieved contexts of a line, best first: placed chunks (`doc_id`, `start`,
/// `end`, `text`) or text alone, which is returned by index too, to be placed in a corpus.
/// Errors name the context (`` `contexts[2]`: missing field `text` ``).
pub(crate) fn read_contexts(items: Vec<Value>) -> std::result::Result<Contexts, String> {
    let mut text = Vec::new();
    let contexts = items
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let at = |m: String| format!("`contexts[{i}]`: {m}");
            let c: Context = match v {
                Value::String(text) => Context {
                    doc_id: None,
                    start: None,
                    end: None,
                    text,
                    score: None,
                },
                Value::Object(_) => serde_json::from_value(v).map_err(|e| at(e.to_string()))?,
                other => {
                    return Err(at(format!(
                        "is {}, expected the retrieved text or an object with `text`",
                        kind(&other)
                    )))
                }
            };
            let (doc_id, start, end) = match (c.doc_id, c.start, c.end) {
                (Some(doc), Some(start), Some(end)) => (doc, start, end),
                (doc_id, None, None) => {
                    if c.text.trim().is_empty() {
                        return Err(at("`text` is empty and there are no offsets: nothing says what was retrieved".into()));
                    }
                    let t = TextContext {
                        text: c.text,
                        doc_id,
                        score: c.score,
                    };
                    let chunk = RetrievedChunk::new(place::unplaced(&t), c.score.unwrap_or(0.0));
                    text.push((i, t));
                    return Ok(chunk);
                }
                (None, _, _) => return Err(at("offsets without `doc_id`: give the document they are in, or the text alone".into())),
                (Some(_), start, _) => {
                    let missing = if start.is_none() { "start" } else { "end" };
                    return Err(at(format!("missing field `{missing}` (give both offsets, or neither and the text alone)")));
                }
            };
            if let Some(m) = crate::span::offset_problem(&doc_id, start, end) {
                return Err(at(m));
            }
            let chunk = RetrievedChunk::new(
                PositionAwareChunk::new(doc_id, start, end, c.text),
                c.score.unwrap_or(0.0),
            );
            // An empty text cannot be told from a missing one, and would make every answer
            // metric that reads the contexts see nothing.
            if chunk.chunk.content.is_empty() && end > start {
                return Err(at(format!(
                    "`text` is empty but the span {start}..{end} is not"
                )));
            }
            chunk.check_text(None).map_err(|e| at(e.to_string()))?;
            Ok(chunk)
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    Ok((contexts, text))
}

/// What kind of JSON value `v` is, for messages: `a number`, `null`, …
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Answers::parse(text, "a.jsonl".into())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn reads_answers_with_their_contexts_in_file_order() {
        let a = Answers::parse(
            concat!(
                "\u{feff}{\"id\":\"q1\",\"answer\":\"Größe 42.\",\"latency_ms\":12,\"contexts\":[",
                "{\"doc_id\":\"b.md\",\"start\":3,\"end\":8,\"text\":\"Größe\",\"score\":0.1},",
                "{\"doc_id\":\"a.md\",\"start\":0,\"end\":2,\"text\":\"42\",\"score\":0.9}]}\n\n",
                "{\"id\":\"q2\",\"answer\":\"\",\"contexts\":[]}\n"
            ),
            "a.jsonl".into(),
        )
        .unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a.ids(), [("q1", 1), ("q2", 3)]);
        let q1 = a.get("q1").unwrap();
        assert_eq!(q1.answer, "Größe 42.");
        let docs: Vec<(&str, usize, usize, f32)> = q1
            .contexts
            .iter()
            .map(|c| {
                (
                    c.chunk.span.doc.as_str(),
                    c.chunk.span.start,
                    c.chunk.span.end,
                    c.score,
                )
            })
            .collect();
        assert_eq!(docs, [("b.md", 3, 8, 0.1), ("a.md", 0, 2, 0.9)]);
        assert_eq!(
            a.get("q2").unwrap(),
            &RagAnswer {
                answer: String::new(),
                contexts: vec![]
            }
        );
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let ok = "{\"id\":\"q1\",\"answer\":\"a\",\"contexts\":[]}\n";
        let e = err(&format!("{ok}{{\"id\":\"q2\",\"contexts\":[]}}"));
        assert!(e.starts_with("a.jsonl:2: missing field `answer`"), "{e}");
        let e = err(&format!("{ok}\n{{\"id\":\"q2\",\"answer\":"));
        assert!(e.starts_with("a.jsonl:3: EOF while parsing"), "{e}");
        let e = err("{\"id\":7,\"answer\":\"a\",\"contexts\":[]}");
        assert_eq!(e, "a.jsonl:1: `id` is a number, expected a string");
        let e = err("{\"id\":\"q\",\"answer\":null,\"contexts\":[]}");
        assert_eq!(e, "a.jsonl:1: `answer` is null, expected a string");
        let e = err("{\"id\":\"q\",\"answer\":\"a\",\"contexts\":{}}");
        assert!(e.contains("`contexts` is an object"), "{e}");
        let e = err(
            "{\"id\":\"q\",\"answer\":\"a\",\"contexts\":[{\"doc_id\":\"a\",\"start\":0,\"end\":1,\"text\":\"x\"},{\"doc_id\":\"a\",\"start\":0,\"end\":1}]}",
        );
        assert_eq!(e, "a.jsonl:1: `contexts[1]`: missing field `text`");
        let e = err(
            "{\"id\":\"q\",\"answer\":\"a\",\"contexts\":[{\"doc_id\":\"a\",\"start\":4,\"end\":1,\"text\":\"x\"}]}",
        );
        assert_eq!(
            e,
            "a.jsonl:1: `contexts[0]`: span 4..1 of `a` ends before it starts"
        );
        // "Größe" is 5 characters and 7 bytes: offsets counted in bytes are named as such.
        let e = err(
            "{\"id\":\"q\",\"answer\":\"a\",\"contexts\":[{\"doc_id\":\"a\",\"start\":0,\"end\":7,\"text\":\"Größe\"}]}",
        );
        assert!(
            e.starts_with("a.jsonl:1: `contexts[0]`: retrieved chunk `a` 0..7 holds 5 characters, not 7: the offsets look like bytes"),
            "{e}"
        );
        let e = err(&format!("{ok}{ok}"));
        assert_eq!(e, "a.jsonl:2: query `q1` appears again (first on line 1)");
        let e = err("[1]");
        assert!(e.starts_with("a.jsonl:1: expected a JSON object"), "{e}");
    }

    #[test]
    fn contexts_as_text_are_read_and_placed_in_the_corpus() {
        use crate::corpus::{Corpus, Document};
        let mut a = Answers::parse(
            concat!(
                "{\"id\":\"q1\",\"answer\":\"a\",\"contexts\":[\"Larkspur ships in May.\",",
                "{\"text\":\"needs rust 1.80\",\"doc_id\":\"b.md\",\"score\":0.5},",
                "{\"doc_id\":\"a.md\",\"start\":0,\"end\":8,\"text\":\"Larkspur\"},",
                "{\"text\":\"something else\"}]}\n",
                "{\"id\":\"q2\",\"answer\":\"b\"}\n",
            ),
            "a.jsonl".into(),
        )
        .unwrap();
        assert_eq!(a.text_contexts(), 3);
        assert!(a.given_as_text("q1", 0) && !a.given_as_text("q1", 2));
        // Before placing: text kept, nothing placed.
        assert!(a.get("q1").unwrap().contexts[0].chunk.span.is_empty());
        // Missing `contexts`: no context at all.
        assert!(a.get("q2").unwrap().contexts.is_empty());
        let corpus = Corpus::new([
            Document::new("a.md", "Larkspur ships in May."),
            Document::new("b.md", "It needs Rust 1.80."),
        ])
        .unwrap();
        let placed = a.place_in(&corpus);
        assert_eq!(
            (placed.exact, placed.normalized, placed.unlocated),
            (1, 1, 1)
        );
        let spans: Vec<(&str, usize, usize, f32)> = a
            .get("q1")
            .unwrap()
            .contexts
            .iter()
            .map(|c| {
                (
                    c.chunk.span.doc.as_str(),
                    c.chunk.span.start,
                    c.chunk.span.end,
                    c.score,
                )
            })
            .collect();
        assert_eq!(
            spans,
            [
                ("a.md", 0, 22, 0.0),
                ("b.md", 3, 18, 0.5),
                ("a.md", 0, 8, 0.0),
                ("", 0, 0, 0.0)
            ]
        );
    }

    #[test]
    fn written_answers_read_back_the_same_contexts_as_text_staying_text() {
        use crate::corpus::{Corpus, Document};
        let text = concat!(
            "{\"id\":\"q2\",\"answer\":\"b\"}\n",
            "{\"id\":\"q1\",\"answer\":\"a \\\"quoted\\\"\",\"contexts\":[\"Larkspur  ships in May.\",",
            "{\"text\":\"needs rust 1.80\",\"doc_id\":\"b.md\",\"score\":0.5},",
            "{\"doc_id\":\"a.md\",\"start\":0,\"end\":8,\"text\":\"Larkspur\",\"score\":0.25},",
            "{\"text\":\"something else\"}]}\n",
        );
        let corpus = Corpus::new([
            Document::new("a.md", "Larkspur ships in May."),
            Document::new("b.md", "It needs Rust 1.80."),
        ])
        .unwrap();
        let mut a = Answers::parse(text, "a.jsonl".into()).unwrap();
        let placed = a.place_in(&corpus);
        let written = a.to_jsonl();
        // In file order; the contexts given as text are written as text, not at the offsets
        // found (a normalized match's text is not the document's there).
        assert!(
            written.starts_with("{\"answer\":\"b\",\"contexts\":[],\"id\":\"q2\"}\n"),
            "{written}"
        );
        assert!(
            written.contains("{\"text\":\"Larkspur  ships in May.\"}"),
            "{written}"
        );
        let mut back = Answers::parse(&written, "b.jsonl".into()).unwrap();
        assert_eq!(back.text_contexts(), 3);
        assert_eq!(back.place_in(&corpus), placed);
        for id in ["q1", "q2"] {
            assert_eq!(back.get(id), a.get(id), "{id}");
        }
        assert_eq!(back.ids(), [("q2", 1), ("q1", 2)]);
    }

    #[test]
    fn a_context_as_text_must_say_something_and_offsets_come_with_their_document() {
        let line = |c: &str| format!("{{\"id\":\"q\",\"answer\":\"a\",\"contexts\":[{c}]}}");
        assert_eq!(
            err(&line("{\"start\":0,\"end\":1,\"text\":\"x\"}")),
            "a.jsonl:1: `contexts[0]`: offsets without `doc_id`: give the document they are in, or the text alone"
        );
        assert_eq!(
            err(&line("{\"doc_id\":\"a\",\"start\":0,\"text\":\"x\"}")),
            "a.jsonl:1: `contexts[0]`: missing field `end` (give both offsets, or neither and the text alone)"
        );
        assert!(err(&line("\" \"")).contains("`text` is empty and there are no offsets"));
        assert_eq!(
            err(&line("7")),
            "a.jsonl:1: `contexts[0]`: is a number, expected the retrieved text or an object with `text`"
        );
    }

    #[test]
    fn unknown_ids_are_named_with_their_lines() {
        use crate::dataset::{Example, TokenDataset};
        let d = TokenDataset::new(vec![Example {
            id: "q1".into(),
            query: "?".into(),
            truth: vec![],
            span_texts: vec![],
            metadata: Default::default(),
            reference_answers: vec![],
        }])
        .unwrap();
        let a = Answers::parse(
            "{\"id\":\"q1\",\"answer\":\"a\",\"contexts\":[]}\n{\"id\":\"q9\",\"answer\":\"a\",\"contexts\":[]}",
            "a.jsonl".into(),
        )
        .unwrap();
        assert_eq!(
            a.check_ids(&d).unwrap_err().to_string(),
            "invalid dataset: 1 answer in a.jsonl is for a query not in the dataset <memory>:\na.jsonl:2: `q9`"
        );
        let only = Answers::parse(
            "{\"id\":\"q1\",\"answer\":\"a\",\"contexts\":[]}",
            "a.jsonl".into(),
        )
        .unwrap();
        only.check_ids(&d).unwrap();
    }
}
