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
            if s.start > s.end {
                Err(format!("span {}..{} of `{}` ends before it starts", s.start, s.end, s.doc_id))
            } else {
                Ok(CharSpan::new(s.doc_id, s.start, s.end))
            }
        })
        .map_err(|e| format!("{e} (token-level lines look like {{\"id\":…,\"retrieved\":[{{\"doc_id\":…,\"start\":…,\"end\":…}}]}})"))
    }
}

impl ReadItem for ChunkLevel {
    fn read_line(line: &str) -> std::result::Result<(String, Vec<ChunkId>), String> {
        read(line, |s: String| Ok(ChunkId::from_raw(s))).map_err(|e| {
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
        for (i, line) in super::strip_bom(text).lines().enumerate() {
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

/// Reads the spans of a chunk listing (the output of `rag-eval chunk`: one JSON object per line
/// with `doc_id`, `start`, `end`; other fields are ignored).
pub fn load_chunk_spans(path: impl AsRef<Utf8Path>) -> Result<Vec<CharSpan>> {
    let path = path.as_ref();
    let text = crate::corpus::read_utf8(path)?;
    super::strip_bom(&text)
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let s: SpanItem = serde_json::from_str(l).map_err(|e| Error::Parse {
                path: path.to_owned(),
                line: i + 1,
                message: e.to_string(),
            })?;
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
}
