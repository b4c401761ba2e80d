//! Retrieval output files: what a retriever returned for each query, ranked.
//!
//! One line per query: `{"id":"q0001","retrieved":[{"doc_id":"a.md","start":0,"end":400},…]}`
//! (token level; extra fields such as `text` or `score` are ignored) or
//! `{"id":"q0001","retrieved":["chunk_…",…]}` (chunk level).

use crate::chunk::ChunkId;
use crate::error::{Error, Result};
use crate::level::{ChunkLevel, Level, TokenLevel};
use crate::span::CharSpan;
use camino::Utf8Path;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::collections::HashMap;

#[derive(Deserialize)]
struct Line<T> {
    id: String,
    retrieved: Vec<T>,
}

#[derive(Deserialize)]
struct SpanItem {
    doc_id: String,
    start: usize,
    end: usize,
}

/// How a level's items are read from a retrieval file.
pub trait ReadItem: Level {
    /// Reads one query's ranked items from its JSON line.
    #[doc(hidden)]
    fn read_line(line: &str) -> std::result::Result<(String, Vec<Self::Item>), String>;
}

fn read<T: DeserializeOwned, U>(
    line: &str,
    f: impl Fn(T) -> std::result::Result<U, String>,
) -> std::result::Result<(String, Vec<U>), String> {
    let l: Line<T> = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let items = l
        .retrieved
        .into_iter()
        .map(f)
        .collect::<std::result::Result<_, _>>()?;
    Ok((l.id, items))
}

impl ReadItem for TokenLevel {
    fn read_line(line: &str) -> std::result::Result<(String, Vec<CharSpan>), String> {
        read(line, |s: SpanItem| {
            match crate::span::offset_problem(&s.doc_id, s.start, s.end) {
                Some(m) => Err(m),
                None => Ok(CharSpan::new(s.doc_id, s.start, s.end)),
            }
        })
        .map_err(|e| format!("{e} (token-level lines look like {{\"id\":…,\"retrieved\":[{{\"doc_id\":…,\"start\":…,\"end\":…}}]}})"))
    }
}

impl ReadItem for ChunkLevel {
    fn read_line(line: &str) -> std::result::Result<(String, Vec<ChunkId>), String> {
        read(line, |s: String| {
            let id = ChunkId::from_raw(s);
            match super::position_aware_ids(std::slice::from_ref(&id)) {
                Some(m) => Err(m),
                None => Ok(id),
            }
        })
        .map_err(|e| {
            format!("{e} (chunk-level lines look like {{\"id\":…,\"retrieved\":[\"chunk_…\",…]}})")
        })
    }
}

/// Ranked retrieval per query id, with the line each came from.
#[derive(Debug, Clone)]
pub struct Retrieved<L: Level> {
    by_id: HashMap<String, (usize, Vec<L::Item>)>,
}

impl<L: ReadItem> Retrieved<L> {
    /// Reads a retrieval file; malformed lines and repeated ids are errors naming file:line.
    pub fn load(path: impl AsRef<Utf8Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = crate::corpus::read_utf8(path)?;
        Self::parse(&text, path)
    }

    /// Parses retrieval JSONL; `path` names the input in messages.
    pub fn parse(text: &str, path: &Utf8Path) -> Result<Self> {
        let mut by_id: HashMap<String, (usize, Vec<L::Item>)> = HashMap::new();
        for (i, line) in crate::fs::strip_bom(text).lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let perr = |message| Error::Parse {
                path: path.to_owned(),
                line: i + 1,
                message,
            };
            let (id, items) = L::read_line(line).map_err(perr)?;
            if let Some((first, _)) = by_id.get(&id) {
                return Err(perr(format!(
                    "query `{id}` appears again (first on line {first})"
                )));
            }
            by_id.insert(id, (i + 1, items));
        }
        Ok(Retrieved { by_id })
    }

    /// The ranked items for a query id.
    pub fn get(&self, id: &str) -> Option<&[L::Item]> {
        self.by_id.get(id).map(|(_, v)| v.as_slice())
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
}

impl Retrieved<TokenLevel> {
    /// Every retrieved span that is not a range of `corpus`: a document the corpus does not
    /// have, or a span past the end of its document. Each message names `path:line`, the query
    /// and the rank; sorted by line.
    pub fn check_against(&self, corpus: &crate::corpus::Corpus, path: &Utf8Path) -> Vec<String> {
        let mut lines: Vec<(&String, &(usize, Vec<CharSpan>))> = self.by_id.iter().collect();
        lines.sort_by_key(|(_, (line, _))| *line);
        let mut problems = Vec::new();
        for (id, (line, spans)) in lines {
            for (rank, s) in spans.iter().enumerate() {
                let at = format!("{path}:{line}: query `{id}`, rank {}", rank + 1);
                match corpus.get(s.doc.as_str()) {
                    None => {
                        problems.push(format!("{at}: document `{}` is not in the corpus", s.doc))
                    }
                    Some(doc) if s.end > doc.char_len() => problems.push(format!(
                        "{at}: span {}..{} is outside `{}` ({} characters)",
                        s.start,
                        s.end,
                        s.doc,
                        doc.char_len()
                    )),
                    Some(_) => {}
                }
            }
        }
        problems
    }
}

/// Reads the spans of a chunk listing (the output of `rag-eval chunk`: one JSON object per line
/// with `doc_id`, `start`, `end`; other fields are ignored).
pub fn load_chunk_spans(path: impl AsRef<Utf8Path>) -> Result<Vec<CharSpan>> {
    let path = path.as_ref();
    let text = crate::corpus::read_utf8(path)?;
    crate::fs::strip_bom(&text)
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let perr = |message| Error::Parse {
                path: path.to_owned(),
                line: i + 1,
                message,
            };
            let s: SpanItem = serde_json::from_str(l).map_err(|e| perr(e.to_string()))?;
            if let Some(m) = crate::span::offset_problem(&s.doc_id, s.start, s.end) {
                return Err(perr(m));
            }
            Ok(CharSpan::new(s.doc_id, s.start, s.end))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_levels_and_rejects_bad_lines() {
        let p = Utf8Path::new("r.jsonl");
        let t = Retrieved::<TokenLevel>::parse(
            "{\"id\":\"q1\",\"retrieved\":[{\"doc_id\":\"a\",\"start\":1,\"end\":4,\"score\":0.3}]}\n\n{\"id\":\"q2\",\"retrieved\":[]}",
            p,
        )
        .unwrap();
        assert_eq!(t.get("q1").unwrap(), [CharSpan::new("a", 1, 4)]);
        assert_eq!(t.ids(), [("q1", 1), ("q2", 3)]);
        let c = Retrieved::<ChunkLevel>::parse("{\"id\":\"q1\",\"retrieved\":[\"chunk_x\"]}", p)
            .unwrap();
        assert_eq!(c.get("q1").unwrap(), [ChunkId::from_raw("chunk_x")]);

        let e = Retrieved::<TokenLevel>::parse("{\"id\":\"q1\",\"retrieved\":[\"chunk_x\"]}", p)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("r.jsonl:1: invalid type") && e.contains("token-level lines look like"),
            "{e}"
        );
        let e = Retrieved::<ChunkLevel>::parse(
            "{\"id\":\"q1\",\"retrieved\":[]}\n{\"id\":\"q1\",\"retrieved\":[]}",
            p,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(e, "r.jsonl:2: query `q1` appears again (first on line 1)");
        let e = Retrieved::<TokenLevel>::parse(
            "{\"id\":\"q\",\"retrieved\":[{\"doc_id\":\"a\",\"start\":4,\"end\":1}]}",
            p,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("span 4..1 of `a` ends before it starts"), "{e}");
    }

    #[test]
    fn a_byte_order_mark_is_skipped() {
        let p = Utf8Path::new("r.jsonl");
        let c = Retrieved::<ChunkLevel>::parse(
            "\u{feff}{\"id\":\"q1\",\"retrieved\":[\"chunk_x\"]}",
            p,
        )
        .unwrap();
        assert_eq!(c.ids(), [("q1", 1)]);
        let dir = tempfile::tempdir().unwrap();
        let path = Utf8Path::from_path(dir.path())
            .unwrap()
            .join("chunks.jsonl");
        std::fs::write(&path, "\u{feff}{\"doc_id\":\"a\",\"start\":0,\"end\":3}\n").unwrap();
        assert_eq!(load_chunk_spans(&path).unwrap(), [CharSpan::new("a", 0, 3)]);
    }

    #[test]
    fn offsets_no_document_can_have_are_refused_when_read() {
        let p = Utf8Path::new("r.jsonl");
        let line = |end: &str| {
            format!(
                "{{\"id\":\"q\",\"retrieved\":[{{\"doc_id\":\"a\",\"start\":0,\"end\":{end}}}]}}"
            )
        };
        let e = Retrieved::<TokenLevel>::parse(&line("18446744073709551615"), p)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("r.jsonl:1: span 0..18446744073709551615 of `a` ends past"),
            "{e}"
        );
        assert!(Retrieved::<TokenLevel>::parse(&line("9223372036854775807"), p).is_ok());
        let e = Retrieved::<TokenLevel>::parse(&line("9223372036854775808"), p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("further than any document can reach"), "{e}");

        let dir = tempfile::tempdir().unwrap();
        let path = Utf8Path::from_path(dir.path())
            .unwrap()
            .join("chunks.jsonl");
        std::fs::write(
            &path,
            "{\"doc_id\":\"a\",\"start\":0,\"end\":3}\n{\"doc_id\":\"a\",\"start\":9,\"end\":3}\n",
        )
        .unwrap();
        let e = load_chunk_spans(&path).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{path}:2: span 9..3 of `a` ends before it starts")
        );
    }

    #[test]
    fn check_against_names_spans_outside_the_corpus() {
        use crate::corpus::{Corpus, Document};
        let corpus = Corpus::new([Document::new("a", "hello")]).unwrap();
        let p = Utf8Path::new("r.jsonl");
        let r = Retrieved::<TokenLevel>::parse(
            concat!(
                "{\"id\":\"q2\",\"retrieved\":[{\"doc_id\":\"a\",\"start\":0,\"end\":5},",
                "{\"doc_id\":\"a\",\"start\":3,\"end\":6}]}\n",
                "{\"id\":\"q1\",\"retrieved\":[{\"doc_id\":\"b\",\"start\":0,\"end\":1}]}\n",
            ),
            p,
        )
        .unwrap();
        assert_eq!(
            r.check_against(&corpus, p),
            [
                "r.jsonl:1: query `q2`, rank 2: span 3..6 is outside `a` (5 characters)",
                "r.jsonl:2: query `q1`, rank 1: document `b` is not in the corpus",
            ]
        );
    }
}
