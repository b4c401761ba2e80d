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

mod score;

pub use score::{
    add_answers, embed_answers, score_answers, AnswerEmbeddings, AnswerScores, ContextItems,
};

use crate::chunk::{PositionAwareChunk, RetrievedChunk};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::level::Level;
use camino::{Utf8Path, Utf8PathBuf};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;

/// What a RAG system gave for one query: the answer and the retrieved chunks it was written
/// from, best first. The same type the [generator](crate::generator) returns and the
/// [judges](crate::judge) read.
pub use crate::generator::RagAnswer;

/// One context as written in an answers file.
#[derive(Deserialize)]
struct Context {
    doc_id: String,
    start: usize,
    end: usize,
    text: String,
    #[serde(default)]
    score: Option<f32>,
}

/// The answers of a file, by query id, with the line each came from.
#[derive(Debug, Clone)]
pub struct Answers {
    by_id: HashMap<String, (usize, RagAnswer)>,
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
        let mut by_id: HashMap<String, (usize, RagAnswer)> = HashMap::new();
        for (i, line) in crate::fs::strip_bom(text).lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let perr = |message| Error::Parse {
                path: path.clone(),
                line: i + 1,
                message,
            };
            let (id, answer) = read_line(line).map_err(perr)?;
            if let Some((first, _)) = by_id.get(&id) {
                return Err(perr(format!(
                    "query `{id}` appears again (first on line {first})"
                )));
            }
            by_id.insert(id, (i + 1, answer));
        }
        Ok(Answers { by_id, path })
    }

    /// The file the answers were read from.
    pub fn path(&self) -> &Utf8Path {
        &self.path
    }

    /// The answer to a query id.
    pub fn get(&self, id: &str) -> Option<&RagAnswer> {
        self.by_id.get(id).map(|(_, a)| a)
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
            .map(|(k, (l, _))| (k.as_str(), *l))
            .collect();
        v.sort_by_key(|&(_, l)| l);
        v
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
        Err(Error::Dataset(format!(
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
        )))
    }
}

/// Reads one line: its id and answer, or what is wrong, naming the field.
fn read_line(line: &str) -> std::result::Result<(String, RagAnswer), String> {
    const SHAPE: &str = "answer lines look like {\"id\":…,\"answer\":…,\"contexts\":[{\"doc_id\":…,\"start\":…,\"end\":…,\"text\":…}]}";
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
    let contexts = match field("contexts")? {
        Value::Array(items) => items,
        other => {
            return Err(format!(
                "`contexts` is {}, expected a list of retrieved chunks",
                kind(&other)
            ))
        }
    };
    let contexts = contexts
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let at = |m: String| format!("`contexts[{i}]`: {m}");
            let c: Context = serde_json::from_value(v).map_err(|e| at(e.to_string()))?;
            if let Some(m) = crate::span::offset_problem(&c.doc_id, c.start, c.end) {
                return Err(at(m));
            }
            let chunk = RetrievedChunk::new(
                PositionAwareChunk::new(c.doc_id, c.start, c.end, c.text),
                c.score.unwrap_or(0.0),
            );
            // An empty text cannot be told from a missing one, and would make every answer
            // metric that reads the contexts see nothing.
            if chunk.chunk.content.is_empty() && c.end > c.start {
                return Err(at(format!(
                    "`text` is empty but the span {}..{} is not",
                    c.start, c.end
                )));
            }
            chunk.check_text(None).map_err(at)?;
            Ok(chunk)
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    Ok((id, RagAnswer { answer, contexts }))
}

fn kind(v: &Value) -> &'static str {
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
