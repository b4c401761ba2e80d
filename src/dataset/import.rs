//! Importers from other tools' dataset formats.

use super::{Dataset, Example, TokenDataset};
use crate::corpus::{Corpus, Metadata};
use crate::error::{DatasetError, Error, Result};
use crate::span::CharSpan;
use camino::Utf8Path;
use serde::Deserialize;

#[derive(Deserialize)]
struct ChromaRef {
    content: String,
    start_index: usize,
    end_index: usize,
}

/// Converts chunking_evaluation's `questions_df.csv` (columns `question`, `references`,
/// `corpus_id`; references a JSON list of `{"content","start_index","end_index"}` in character
/// offsets) into a token-level dataset over `corpus`.
///
/// A `corpus_id` names the document whose id, without its extension, equals it (or the
/// document with exactly that id). Every reference is checked against the corpus; all
/// problems are reported together, each with its CSV line. Rows get ids `q0001`, `q0002`, …
/// in file order.
pub fn chroma_csv(path: impl AsRef<Utf8Path>, corpus: &Corpus) -> Result<TokenDataset> {
    let path = path.as_ref();
    let file = std::fs::File::open(path).map_err(|e| Error::io("read", path, e))?;
    let mut reader = csv::Reader::from_reader(file);
    let headers = reader.headers().map_err(|e| csv_error(path, &e))?.clone();
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| Error::Parse {
                path: path.to_owned(),
                line: 1,
                message: format!(
                    "missing column `{name}` (found: {})",
                    headers.iter().collect::<Vec<_>>().join(", ")
                ),
            })
    };
    let (qcol, rcol, ccol) = (
        column("question")?,
        column("references")?,
        column("corpus_id")?,
    );

    let mut examples = Vec::new();
    let mut problems = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(|e| csv_error(path, &e))?;
        let line = record.position().map_or(i + 2, |p| p.line() as usize);
        let field = |c: usize| record.get(c).unwrap_or_default();
        let corpus_id = field(ccol);
        let Some(doc) = corpus.get(corpus_id).or_else(|| {
            corpus
                .documents()
                .iter()
                .find(|d| strip_ext(d.id().as_str()) == corpus_id)
        }) else {
            problems.push(format!(
                "{path}:{line}: corpus `{corpus_id}` is not a document of the corpus"
            ));
            continue;
        };
        let refs: Vec<ChromaRef> = match serde_json::from_str(field(rcol)) {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!(
                    "{path}:{line}: `references` is not a list of references: {e}"
                ));
                continue;
            }
        };
        let mut truth = Vec::with_capacity(refs.len());
        let mut texts = Vec::with_capacity(refs.len());
        for (j, r) in refs.into_iter().enumerate() {
            match doc.slice(r.start_index, r.end_index) {
                _ if r.start_index > r.end_index => problems.push(format!(
                    "{path}:{line}: reference {j} ({}..{} of `{}`) ends before it starts",
                    r.start_index, r.end_index, doc.id()
                )),
                Some(found) if found == r.content => {}
                Some(found) => problems.push(format!(
                    "{path}:{line}: reference {j} ({}..{} of `{}`) does not match the corpus: expected {:?}, found {:?}",
                    r.start_index, r.end_index, doc.id(), short(&r.content), short(found)
                )),
                None => problems.push(format!(
                    "{path}:{line}: reference {j} ({}..{}) is outside `{}` ({} characters)",
                    r.start_index, r.end_index, doc.id(), doc.char_len()
                )),
            }
            truth.push(CharSpan::new(doc.id().clone(), r.start_index, r.end_index));
            texts.push(Some(r.content));
        }
        let mut metadata = Metadata::new();
        metadata.insert("source_docs".into(), serde_json::json!([doc.id().as_str()]));
        examples.push(Example {
            id: format!("q{:04}", examples.len() + 1),
            query: field(qcol).to_owned(),
            truth,
            span_texts: texts,
            metadata,
            reference_answers: Vec::new(),
        });
    }
    if !problems.is_empty() {
        let n = problems.len();
        return Err(Error::Dataset(DatasetError::new(
            path,
            format!(
                "{n} problem{} importing {path}:\n{}",
                if n == 1 { "" } else { "s" },
                problems.join("\n")
            ),
        )));
    }
    Dataset::new(examples).map(|mut d| {
        d.source = path.to_string();
        d
    })
}

fn strip_ext(id: &str) -> &str {
    match id.rfind('.') {
        Some(i) if !id[i..].contains('/') => &id[..i],
        _ => id,
    }
}

fn short(s: &str) -> String {
    super::preview(s)
}

fn csv_error(path: &Utf8Path, e: &csv::Error) -> Error {
    Error::Parse {
        path: path.to_owned(),
        line: e.position().map_or(0, |p| p.line() as usize),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Document;

    fn corpus() -> Corpus {
        Corpus::new([Document::new("notes.md", "alpha béta gamma")]).unwrap()
    }

    fn write(text: &str) -> (tempfile::TempDir, camino::Utf8PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = Utf8Path::from_path(dir.path()).unwrap().join("q.csv");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn imports_rows_with_char_offsets() {
        let (_d, p) = write(
            "question,references,corpus_id\n\"What, béta?\",\"[{\"\"content\"\": \"\"béta\"\", \"\"start_index\"\": 6, \"\"end_index\"\": 10}]\",notes\n",
        );
        let d = chroma_csv(&p, &corpus()).unwrap();
        let e = &d.examples()[0];
        assert_eq!((e.id.as_str(), e.query.as_str()), ("q0001", "What, béta?"));
        assert_eq!(e.truth, [CharSpan::new("notes.md", 6, 10)]);
        assert!(d.check_against(&corpus()).is_empty());
    }

    #[test]
    fn reports_every_bad_reference_with_its_line() {
        let (_d, p) = write(concat!(
            "question,references,corpus_id\n",
            "a,\"[{\"\"content\"\": \"\"XXXX\"\", \"\"start_index\"\": 6, \"\"end_index\"\": 10}]\",notes\n",
            "b,\"[{\"\"content\"\": \"\"x\"\", \"\"start_index\"\": 90, \"\"end_index\"\": 91}]\",notes\n",
            "c,[],missing\n",
            "d,not json,notes\n",
            "e,\"[{\"\"content\"\": \"\"x\"\", \"\"start_index\"\": 10, \"\"end_index\"\": 6}]\",notes\n",
        ));
        let e = chroma_csv(&p, &corpus()).unwrap_err().to_string();
        assert!(e.contains("5 problems"), "{e}");
        assert!(
            e.contains("q.csv:6: reference 0 (10..6 of `notes.md`) ends before it starts"),
            "{e}"
        );
        assert!(e.contains("q.csv:2: reference 0 (6..10 of `notes.md`) does not match the corpus: expected \"XXXX\", found \"béta\""), "{e}");
        assert!(
            e.contains("q.csv:3: reference 0 (90..91) is outside `notes.md` (16 characters)"),
            "{e}"
        );
        assert!(
            e.contains("q.csv:4: corpus `missing` is not a document"),
            "{e}"
        );
        assert!(e.contains("q.csv:5: `references` is not a list"), "{e}");
    }

    #[test]
    fn missing_columns_are_named() {
        let (_d, p) = write("question,refs\nx,y\n");
        let e = chroma_csv(&p, &corpus()).unwrap_err().to_string();
        assert!(e.contains("missing column `references`"), "{e}");
    }
}
