//! `RecursiveCharacterChunker` against LangChain's `RecursiveCharacterTextSplitter` on the five
//! corpora of chunking-eval-general: same chunk texts, same start offsets.
//!
//! The fixtures in `tests/fixtures/langchain/` (see the README there) hold, per chunk,
//! LangChain's `start_index`, the length in characters and a SHA-256 prefix of the text. A
//! fourth column, where present, is the chunk's true start from an instrumented LangChain run:
//! LangChain's `start_index` is found by searching for the chunk text and sometimes lands on an
//! earlier copy. Those cases are listed below and asserted one by one.

use crate::shared_data;

use rag_eval::chunker::{PositionAwareChunker, RecursiveCharacterChunker};
use rag_eval::corpus::Document;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Chunks whose LangChain `start_index` points at an earlier copy of the same text, with
/// character length: (fixture, chunk index, LangChain's start, true start = ours).
/// All are one-character chunks ("1", "2", ".") that occur many times in pubmed.md.
const KNOWN_CHAR_DIFFERENCES: &[(&str, usize, i64, usize)] = &[
    ("chars/pubmed_200_100.tsv", 846, 90395, 90412),
    ("chars/pubmed_200_100.tsv", 1198, 128828, 128920),
    ("chars/pubmed_200_100.tsv", 3760, 402615, 402689),
    ("chars/pubmed_200_100.tsv", 3848, 411881, 411931),
    ("chars/pubmed_400_200.tsv", 423, 90415, 90577),
    ("chars/pubmed_400_200.tsv", 607, 128828, 128920),
    ("chars/pubmed_400_200.tsv", 1938, 411881, 411931),
    ("chars/pubmed_800_400.tsv", 204, 90415, 90577),
    ("chars/pubmed_800_400.tsv", 921, 411530, 411931),
];

/// With token length and an overlap, LangChain subtracts the overlap (in tokens) from a
/// character offset before searching, so it starts searching past the chunk and finds a later
/// copy or nothing (-1). Number of such chunks per fixture; every one of them is checked
/// against the true start in the fixture.
#[cfg(feature = "tiktoken")]
const KNOWN_TOKEN_DIFFERENCES: &[(&str, usize)] = &[
    ("tokens/chatlogs_800_400.tsv", 6),
    ("tokens/finance_800_400.tsv", 98),
    ("tokens/pubmed_800_400.tsv", 117),
    ("tokens/state_of_the_union_800_400.tsv", 13),
    ("tokens/wikitexts_800_400.tsv", 32),
];

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn sha16(text: &str) -> String {
    rag_eval::digest::short_sha256(text.as_bytes())
}

struct Row {
    langchain_start: i64,
    char_len: usize,
    sha16: String,
    true_start: Option<usize>,
}

struct Case {
    /// `chars/<corpus>_<size>_<overlap>.tsv`
    name: String,
    corpus: String,
    length: String,
    separators: String,
    size: usize,
    overlap: usize,
    rows: Vec<Row>,
}

fn parse_case(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines.next().and_then(|h| h.strip_prefix("# ")).unwrap();
    let field = |key: &str| -> String {
        header
            .split(' ')
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or_else(|| panic!("{}: no `{key}` in the header", path.display()))
            .to_owned()
    };
    let rows: Vec<Row> = lines
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert!(
                cols.len() == 3 || cols.len() == 4,
                "{}: bad row {l:?}",
                path.display()
            );
            Row {
                langchain_start: cols[0].parse().unwrap(),
                char_len: cols[1].parse().unwrap(),
                sha16: cols[2].to_owned(),
                true_start: cols.get(3).map(|s| s.parse().unwrap()),
            }
        })
        .collect();
    assert_eq!(rows.len(), field("chunks").parse::<usize>().unwrap());
    let dir = path
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    Case {
        name: format!("{dir}/{}", path.file_name().unwrap().to_str().unwrap()),
        corpus: field("corpus"),
        length: field("length"),
        separators: field("separators"),
        size: field("size").parse().unwrap(),
        overlap: field("overlap").parse().unwrap(),
        rows,
    }
}

fn cases(sub: &str) -> Vec<Case> {
    let dir = manifest_dir().join("tests/fixtures/langchain").join(sub);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    paths.sort();
    paths.iter().map(|p| parse_case(p)).collect()
}

fn chunker_for(case: &Case) -> RecursiveCharacterChunker {
    let mut c = RecursiveCharacterChunker::new(case.size, case.overlap);
    match case.separators.as_str() {
        "langchain" => {}
        "chroma" => {
            c = c.with_separators(RecursiveCharacterChunker::CHROMA_SEPARATORS.iter().copied())
        }
        other => panic!("{}: unknown separators {other}", case.name),
    }
    match case.length.as_str() {
        "chars" => {}
        #[cfg(feature = "tiktoken")]
        "cl100k" => c = c.with_length(rag_eval::chunker::LengthUnit::Cl100kTokens),
        other => panic!("{}: unknown length {other}", case.name),
    }
    c
}

/// A start offset where LangChain's `start_index` differs from the true one.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Difference {
    case: String,
    index: usize,
    langchain: i64,
    ours: usize,
}

/// Compares our chunks with one fixture; returns the mismatches (as messages) and the
/// documented start differences met.
fn compare(case: &Case, doc: &Document) -> (Vec<String>, Vec<Difference>) {
    let chunks = chunker_for(case).chunk_with_positions(doc);
    let mut errors = Vec::new();
    let mut differences = Vec::new();
    if chunks.len() != case.rows.len() {
        errors.push(format!(
            "{}: {} chunks, LangChain has {}",
            case.name,
            chunks.len(),
            case.rows.len()
        ));
    }
    for (i, (ours, row)) in chunks.iter().zip(&case.rows).enumerate() {
        let len = ours.end() - ours.start();
        if len != row.char_len || sha16(&ours.content) != row.sha16 {
            errors.push(format!(
                "{} chunk {i}: text differs (ours {len} chars at {}, LangChain {} chars at {}): {:?}",
                case.name,
                ours.start(),
                row.char_len,
                row.langchain_start,
                ours.content.chars().take(60).collect::<String>()
            ));
            continue;
        }
        match row.true_start {
            None if ours.start() as i64 == row.langchain_start => {}
            None => errors.push(format!(
                "{} chunk {i}: starts at {}, LangChain says {}",
                case.name,
                ours.start(),
                row.langchain_start
            )),
            Some(true_start) => {
                if ours.start() != true_start {
                    errors.push(format!(
                        "{} chunk {i}: starts at {}, the instrumented LangChain run says {true_start}",
                        case.name,
                        ours.start()
                    ));
                }
                // Where LangChain found something, it is a copy of the same text.
                if let Ok(at) = usize::try_from(row.langchain_start) {
                    let copy = doc.slice(at, at + row.char_len).unwrap_or_default();
                    assert_eq!(
                        sha16(copy),
                        row.sha16,
                        "{} chunk {i}: LangChain's offset {at} holds other text",
                        case.name
                    );
                }
                differences.push(Difference {
                    case: case.name.clone(),
                    index: i,
                    langchain: row.langchain_start,
                    ours: ours.start(),
                });
            }
        }
    }
    (errors, differences)
}

fn load(corpora: &Path, name: &str) -> Document {
    let text = std::fs::read_to_string(corpora.join(name)).unwrap();
    Document::new(name, text)
}

fn check_all(sub: &str) -> Vec<Difference> {
    let corpora = shared_data::chunking_eval_general().join("corpora");
    let cases = cases(sub);
    let mut errors = Vec::new();
    let mut differences = Vec::new();
    let mut corpus_names = BTreeSet::new();
    for case in &cases {
        let doc = load(&corpora, &case.corpus);
        corpus_names.insert(case.corpus.clone());
        let (e, d) = compare(case, &doc);
        errors.extend(e);
        differences.extend(d);
    }
    // Every corpus of the data set has fixtures.
    let on_disk: BTreeSet<String> = std::fs::read_dir(&corpora)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".md"))
        .collect();
    assert_eq!(
        corpus_names, on_disk,
        "{sub}: fixtures do not cover every corpus"
    );
    let chunks: usize = cases.iter().map(|c| c.rows.len()).sum();
    println!("{sub}: {} cases, {chunks} chunks compared", cases.len());
    assert!(
        errors.is_empty(),
        "{} mismatches with LangChain, first ones:\n{}",
        errors.len(),
        errors[..errors.len().min(20)].join("\n")
    );
    differences
}

#[test]
fn the_character_fixtures_cover_three_sizes_with_and_without_overlap() {
    let configs: BTreeSet<(usize, usize)> =
        cases("chars").iter().map(|c| (c.size, c.overlap)).collect();
    let expected: BTreeSet<(usize, usize)> = [200, 400, 800]
        .into_iter()
        .flat_map(|s| [(s, 0), (s, s / 2)])
        .collect();
    assert_eq!(configs, expected);
}

#[test]
#[ignore = "needs ../shared/data"]
fn chunks_and_offsets_match_langchain_by_characters() {
    let differences = check_all("chars");
    let expected: Vec<Difference> = KNOWN_CHAR_DIFFERENCES
        .iter()
        .map(|&(case, index, langchain, ours)| Difference {
            case: case.to_owned(),
            index,
            langchain,
            ours,
        })
        .collect();
    assert_eq!(
        differences, expected,
        "the start offsets where LangChain found an earlier copy are exactly the documented ones"
    );
}

#[cfg(feature = "tiktoken")]
#[test]
#[ignore = "needs ../shared/data"]
fn chunks_match_langchain_with_cl100k_length_and_chroma_separators() {
    let differences = check_all("tokens");
    let mut per_case: Vec<(String, usize)> = Vec::new();
    for d in &differences {
        match per_case.last_mut() {
            Some((case, n)) if *case == d.case => *n += 1,
            _ => per_case.push((d.case.clone(), 1)),
        }
    }
    let expected: Vec<(String, usize)> = KNOWN_TOKEN_DIFFERENCES
        .iter()
        .map(|&(c, n)| (c.to_owned(), n))
        .collect();
    assert_eq!(per_case, expected);
    assert!(
        differences.iter().all(|d| d.case.ends_with("_400.tsv")),
        "only cases with an overlap have start differences"
    );
}
