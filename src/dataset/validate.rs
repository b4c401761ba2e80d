//! Checking a dataset file against its corpus, reporting every problem at once.

use super::{lines_of, AnyDataset, AnyExample, Dataset, Example};
use crate::chunk::ChunkId;
use crate::corpus::Corpus;
use crate::error::{Error, Result};
use crate::level::{ChunkLevel, Level, TokenLevel};
use camino::Utf8Path;
use std::collections::{HashMap, HashSet};

/// What [`validate`] found in a dataset file.
#[derive(Debug, Clone)]
pub struct Validation {
    /// The rows that could be read, as a dataset of the file's level (the level most rows
    /// have), without rows that repeat an earlier id. `None` when no row could be read.
    pub dataset: Option<AnyDataset>,
    /// Every problem, in file order, each naming `file:line` (whole-file ones name the file).
    /// The file is valid when this is empty.
    pub problems: Vec<String>,
    /// Remarks that are not problems (a check that could not be made, and why).
    pub notes: Vec<String>,
    /// How many of the problems are drift (recorded text differs from the corpus), which
    /// [`reanchor`](super::reanchor::reanchor) may repair.
    pub drifted: usize,
}

impl Validation {
    /// Whether no problem was found.
    pub fn is_valid(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Reads the dataset at `path` and checks it against `corpus`, collecting every problem
/// instead of stopping at the first: malformed lines (JSON, missing fields, reversed or
/// impossible offsets, position-aware chunk ids), rows of the other level, repeated ids, rows
/// with nothing to find and empty spans, spans that disagree with the corpus (unknown
/// document, out of bounds, drift), and at chunk level rows that disagree on the chunker and
/// chunk ids the recorded chunker does not produce over the corpus.
///
/// Only a file that cannot be opened or read is an error.
pub fn validate(path: impl AsRef<Utf8Path>, corpus: &Corpus) -> Result<Validation> {
    let path = path.as_ref();
    let mut problems: Vec<(usize, String)> = Vec::new();
    let mut notes = Vec::new();
    let mut drifted = 0;
    let mut chunk = Vec::new();
    let mut token = Vec::new();
    let mut qa = Vec::new();
    for row in lines_of(path)? {
        match row {
            Ok((n, AnyExample::Chunk(e), l)) => chunk.push((n, e, l)),
            Ok((n, AnyExample::Token(e), l)) => token.push((n, e, l)),
            Ok((n, AnyExample::Qa(e), l)) => qa.push((n, e, l)),
            Err(Error::Parse { line, message, .. }) => {
                problems.push((line, format!("{path}:{line}: {message}")))
            }
            Err(e) => return Err(e),
        }
    }
    let dataset = if chunk.is_empty() && token.is_empty() && qa.is_empty() {
        problems.push((0, format!("{path} has no readable examples")));
        None
    } else if qa.len() > token.len().max(chunk.len()) {
        let first = qa[0].0;
        let truth = chunk.iter().map(|(n, e, _)| (*n, &e.id));
        for (n, id) in truth.chain(token.iter().map(|(n, e, _)| (*n, &e.id))) {
            problems.push((
                n,
                format!("{path}:{n}: example `{id}` says what retrieval should find in a file of questions with reference answers only (first such row: line {first}); a file holds one shape"),
            ));
        }
        let mut d = one_level(path, qa, &mut problems);
        d.retrieval_truth = false;
        Some(AnyDataset::Token(d))
    } else if token.len() >= chunk.len() {
        qa_rows(path, &qa, &token, &mut problems);
        other_level::<ChunkLevel, TokenLevel>(path, &chunk, &token, &mut problems);
        let d = one_level(path, token, &mut problems);
        drifted = check_token(&d, corpus, &mut problems);
        Some(AnyDataset::Token(d))
    } else {
        other_level::<TokenLevel, ChunkLevel>(path, &token, &chunk, &mut problems);
        qa_rows(path, &qa, &chunk, &mut problems);
        let d = one_level(path, chunk, &mut problems);
        check_chunk(&d, corpus, &mut problems, &mut notes);
        Some(AnyDataset::Chunk(d))
    };
    problems.sort_by_key(|(line, _)| *line);
    Ok(Validation {
        dataset,
        problems: problems.into_iter().map(|(_, p)| p).collect(),
        notes,
        drifted,
    })
}

type Row<L> = (usize, Example<L>, String);

/// Reports every row of level `O` in a file of level `L`.
fn other_level<O: Level, L: Level>(
    path: &Utf8Path,
    rows: &[Row<O>],
    file: &[Row<L>],
    problems: &mut Vec<(usize, String)>,
) {
    let first = file.first().map_or(0, |r| r.0);
    for (n, e, _) in rows {
        problems.push((
            *n,
            format!(
                "{path}:{n}: example `{}` is {}-level in a {}-level file (first {}-level row: line {first}); a file holds one level",
                e.id,
                O::NAME,
                L::NAME,
                L::NAME
            ),
        ));
    }
}

/// Reports every row with a reference answer only in a file of level `L`.
fn qa_rows<L: Level>(
    path: &Utf8Path,
    rows: &[Row<TokenLevel>],
    file: &[Row<L>],
    problems: &mut Vec<(usize, String)>,
) {
    let first = file.first().map_or(0, |r| r.0);
    for (n, e, _) in rows {
        problems.push((
            *n,
            format!(
                "{path}:{n}: example `{}` has a reference answer and no retrieval truth in a {}-level file (first {}-level row: line {first}); a file holds one shape",
                e.id,
                L::NAME,
                L::NAME
            ),
        ));
    }
}

/// The rows as a dataset, leaving out (and reporting) rows that repeat an earlier id.
fn one_level<L: Level>(
    path: &Utf8Path,
    rows: Vec<Row<L>>,
    problems: &mut Vec<(usize, String)>,
) -> Dataset<L> {
    let mut first: HashMap<String, usize> = HashMap::new();
    let (mut examples, mut lines, mut originals) = (Vec::new(), Vec::new(), Vec::new());
    for (n, e, l) in rows {
        if let Some(at) = first.get(&e.id) {
            problems.push((
                n,
                format!("{path}:{n}: duplicate id `{}` (first at {path}:{at})", e.id),
            ));
            continue;
        }
        first.insert(e.id.clone(), n);
        examples.push(e);
        lines.push(n);
        originals.push(Some(l));
    }
    Dataset::assemble(examples, lines, originals, path.to_string())
        .expect("repeated ids were left out")
}

/// Returns how many spans drifted.
fn check_token(
    d: &Dataset<TokenLevel>,
    corpus: &Corpus,
    problems: &mut Vec<(usize, String)>,
) -> usize {
    let line = |i: usize| d.lines.get(i).copied().unwrap_or(0);
    let mut index_of: HashMap<&str, usize> = HashMap::new();
    for (i, e) in d.examples().iter().enumerate() {
        index_of.insert(&e.id, i);
        if TokenLevel::truth_is_empty(&e.truth) {
            let why = if e.truth.is_empty() {
                "`relevant_spans` is empty"
            } else {
                "every span is empty"
            };
            problems.push((
                line(i),
                format!(
                    "{}: example `{}` has nothing to find ({why}): it would score 0 on every metric",
                    d.location(i),
                    e.id
                ),
            ));
        }
        for (j, s) in e.truth.iter().enumerate().filter(|(_, s)| s.is_empty()) {
            problems.push((
                line(i),
                format!(
                    "{}: example `{}`, span {j}: empty span {}..{} of `{}` covers no character",
                    d.location(i),
                    e.id,
                    s.start,
                    s.end,
                    s.doc
                ),
            ));
        }
    }
    let mut drifted = 0;
    for p in d.check_against(corpus) {
        drifted += usize::from(matches!(p.kind, super::SpanProblemKind::Drift { .. }));
        problems.push((line(index_of[p.example_id.as_str()]), p.to_string()));
    }
    drifted
}

fn check_chunk(
    d: &Dataset<ChunkLevel>,
    corpus: &Corpus,
    problems: &mut Vec<(usize, String)>,
    notes: &mut Vec<String>,
) {
    let line = |i: usize| d.lines.get(i).copied().unwrap_or(0);
    for (i, e) in d.examples().iter().enumerate() {
        if e.truth.is_empty() {
            problems.push((
                line(i),
                format!(
                    "{}: example `{}` has nothing to find (`relevant_chunk_ids` is empty): it would score 0 on every metric",
                    d.location(i),
                    e.id
                ),
            ));
        }
    }
    let mut recorded: Option<(usize, &str)> = None;
    for (i, e) in d.examples().iter().enumerate() {
        let Some(c) = e.metadata.get("chunker").and_then(|v| v.as_str()) else {
            continue;
        };
        match recorded {
            None => recorded = Some((i, c)),
            Some((j, first)) if first != c => problems.push((
                line(i),
                format!(
                    "{} records chunker `{c}` but {} records `{first}`; a chunk-level dataset comes from one chunker",
                    d.location(i),
                    d.location(j)
                ),
            )),
            Some(_) => {}
        }
    }
    let Some((_, spec)) = recorded else {
        notes.push(format!(
            "{}: no row records `metadata.chunker`, so chunk ids were not checked against the corpus",
            d.source()
        ));
        return;
    };
    let chunker = match crate::chunker::parse_spec(spec) {
        Ok(c) => c,
        Err(e) => {
            problems.push((
                0,
                format!("{}: recorded chunker cannot be built: {e}", d.source()),
            ));
            return;
        }
    };
    let known: HashSet<ChunkId> = corpus
        .documents()
        .iter()
        .flat_map(|doc| chunker.chunk_with_positions(doc))
        .map(|c| ChunkId::from_content(&c.content))
        .collect();
    for (i, e) in d.examples().iter().enumerate() {
        for id in e.truth.iter().filter(|id| !known.contains(*id)) {
            problems.push((
                line(i),
                format!(
                    "{}: example `{}`: chunk id `{id}` is not the id of any chunk `{spec}` makes of the corpus",
                    d.location(i),
                    e.id
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Document;

    fn file(text: &str) -> (tempfile::TempDir, camino::Utf8PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = Utf8Path::from_path(dir.path()).unwrap().join("d.jsonl");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    fn corpus() -> Corpus {
        Corpus::new([Document::new("a.md", "Alpha beta.\n\nGamma delta.")]).unwrap()
    }

    #[test]
    fn every_problem_of_a_token_file_is_reported_in_file_order() {
        let (_d, p) = file(concat!(
            "{\"id\":\"q1\",\"inputs\":{\"query\":\"a\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":5,\"text\":\"Alpha\"}]}}\n",
            "{broken\n",
            "{\"id\":\"q2\",\"inputs\":{\"query\":\"b\"},\"outputs\":{\"relevant_spans\":[]}}\n",
            "{\"id\":\"q3\",\"inputs\":{\"query\":\"c\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":4,\"end\":4}]}}\n",
            "{\"id\":\"q4\",\"inputs\":{\"query\":\"d\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":9,\"end\":2}]}}\n",
            "{\"id\":\"q1\",\"inputs\":{\"query\":\"e\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":1}]}}\n",
            "{\"id\":\"c1\",\"inputs\":{\"query\":\"f\"},\"outputs\":{\"relevant_chunk_ids\":[\"chunk_000000000000\"]}}\n",
            "{\"id\":\"q5\",\"inputs\":{\"query\":\"g\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":99},{\"doc_id\":\"b.md\",\"start\":0,\"end\":1}]}}\n",
            "{\"id\":\"q6\",\"inputs\":{\"query\":\"h\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":5,\"text\":\"Beta.\"}]}}\n",
        ));
        let v = validate(&p, &corpus()).unwrap();
        let got: Vec<String> = v
            .problems
            .iter()
            .map(|m| m.replace(p.as_str(), "F"))
            .collect();
        assert_eq!(got.len(), 10, "{got:#?}");
        let want_starts = [
            "F:2: key must be a string",
            "F:3: example `q2` has nothing to find",
            "F:4: example `q3` has nothing to find",
            "F:4: example `q3`, span 0: empty span 4..4",
            "F:5: span 9..2 of `a.md` ends before it starts",
            "F:6: duplicate id `q1` (first at F:1)",
            "F:7: example `c1` is chunk-level in a token-level file (first token-level row: line 1)",
            "F:8: example `q5`, span 0: span 0..99 is outside `a.md`",
            "F:8: example `q5`, span 1: document `b.md` is not in the corpus",
            "F:9: example `q6`, span 0: text at `a.md` 0..5 changed",
        ];
        for (g, w) in got.iter().zip(want_starts) {
            assert!(g.starts_with(w), "{g}\n  wanted {w}");
        }
        let Some(AnyDataset::Token(d)) = v.dataset else {
            panic!()
        };
        assert_eq!(d.len(), 5, "q1 q2 q3 q5 q6");
        assert_eq!(v.drifted, 1);
    }

    #[test]
    fn chunk_ids_are_checked_against_the_recorded_chunker() {
        let good = ChunkId::from_content("Gamma delta.");
        let other = ChunkId::from_content("Alpha beta.\n\nGamma delta.");
        let row = |id: &str, ids: &[&ChunkId], chunker: &str| {
            format!(
                "{{\"id\":\"{id}\",\"inputs\":{{\"query\":\"q\"}},\"outputs\":{{\"relevant_chunk_ids\":{}}},\"metadata\":{{\"chunker\":\"{chunker}\"}}}}\n",
                serde_json::to_string(ids).unwrap()
            )
        };
        let spec = "recursive:size=15,overlap=0";
        let text = [
            row("c1", &[&good], spec),
            row("c2", &[&good, &other], spec),
            "{\"id\":\"c3\",\"inputs\":{\"query\":\"q\"},\"outputs\":{\"relevant_chunk_ids\":[\"pa_chunk_7d9e4f2a1b3c\"]}}\n".into(),
            row("c4", &[], spec),
        ]
        .concat();
        let (_d, p) = file(&text);
        let v = validate(&p, &corpus()).unwrap();
        let got: Vec<String> = v
            .problems
            .iter()
            .map(|m| m.replace(p.as_str(), "F"))
            .collect();
        assert_eq!(
            got,
            [
                format!("F:2: example `c2`: chunk id `{other}` is not the id of any chunk `{spec}` makes of the corpus"),
                "F:3: `pa_chunk_7d9e4f2a1b3c` is position-aware (`pa_chunk_…`, as `rag-eval chunk` prints in `id`); chunk-level files hold content ids `chunk_…` (`chunk_id` in `rag-eval chunk`'s output, `ChunkId::from_content` of the chunk's text)".into(),
                "F:4: example `c4` has nothing to find (`relevant_chunk_ids` is empty): it would score 0 on every metric".into(),
            ]
        );
        assert!(v.notes.is_empty());
    }

    #[test]
    fn an_unreadable_file_is_the_only_error() {
        let e = validate("/nonexistent/d.jsonl", &corpus()).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/d.jsonl"), "{e}");
        let (_d, p) = file("\n\n");
        let v = validate(&p, &corpus()).unwrap();
        assert!(v.dataset.is_none() && !v.is_valid());
    }
}
