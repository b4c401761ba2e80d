//! The crate's errors per operation: each keeps what failed and where as fields a program can
//! match on, and its message word for word.

use rag_eval::dataset::{self, AnyDataset, Dataset, Example};
use rag_eval::prelude::*;
use rag_eval::runs::{RunRecord, FORMAT_VERSION};
use rag_eval::{DatasetError, EmbedError, Error, RunRecordError};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");

fn example(id: &str) -> Example<TokenLevel> {
    Example {
        id: id.into(),
        query: "why".into(),
        truth: vec![CharSpan::new("a.md", 0, 4)],
        span_texts: vec![None],
        metadata: Default::default(),
        reference_answers: Vec::new(),
    }
}

#[test]
fn a_dataset_error_names_the_dataset() {
    let err = Dataset::new(vec![example("q1"), example("q1")]).unwrap_err();
    let Error::Dataset(DatasetError {
        dataset, message, ..
    }) = &err
    else {
        panic!("not a dataset error: {err:?}")
    };
    assert_eq!(dataset, "<memory>");
    assert!(message.contains("duplicate id `q1`"), "{message}");
    assert_eq!(err.to_string(), format!("invalid dataset: {message}"));

    // A file's: the path it was read from.
    let AnyDataset::Token(d) = dataset::load(format!("{DATA}/questions.jsonl")).unwrap() else {
        panic!("token-level")
    };
    let corpus = Corpus::new([Document::new("glossary.md", "Nothing of what it said.")]).unwrap();
    let Err(Error::Dataset(e)) = TokenLevelEvaluation::new(corpus, d) else {
        panic!("the spans do not fit this corpus")
    };
    assert!(e.dataset.ends_with("questions.jsonl"), "{}", e.dataset);
    assert!(
        e.message.contains("disagree with the corpus"),
        "{}",
        e.message
    );
}

/// Answers every call with no vector at all.
struct Silent;

#[async_trait::async_trait]
impl Embedder for Silent {
    fn name(&self) -> String {
        "silent".into()
    }
    fn dimension(&self) -> usize {
        4
    }
    async fn embed(&self, _: &[String]) -> rag_eval::Result<Vec<Vec<f32>>> {
        Ok(Vec::new())
    }
}

#[test]
fn an_embed_error_names_the_embedder() {
    let err = pollster::block_on(Silent.embed_query("why")).unwrap_err();
    let Error::Embed(EmbedError {
        embedder, message, ..
    }) = &err
    else {
        panic!("not an embedding error: {err:?}")
    };
    assert_eq!(
        (embedder.as_str(), message.as_str()),
        ("silent", "silent returned no vector")
    );
    assert_eq!(
        err.to_string(),
        "embedding failed: silent returned no vector"
    );
}

#[test]
fn a_run_record_error_says_what_is_wrong_with_the_record() {
    let read = |text: &str| match RunRecord::from_json(text).unwrap_err() {
        Error::RunRecord(e) => e,
        other => panic!("not a run record error: {other:?}"),
    };
    assert!(matches!(read("not json"), RunRecordError::NotJson(_)));
    assert_eq!(read("{}"), RunRecordError::NoFormat);
    let later = read(r#"{"format":99}"#);
    assert_eq!(
        later,
        RunRecordError::OtherFormat {
            found: 99,
            reads: FORMAT_VERSION.into()
        }
    );
    assert_eq!(
        later.to_string(),
        format!("run record format 99 is not the one this rag-eval reads ({FORMAT_VERSION}); upgrade rag-eval")
    );
    let RunRecordError::Invalid { earlier, message } =
        read(&format!(r#"{{"format":{FORMAT_VERSION}}}"#))
    else {
        panic!("a record with no fields is invalid")
    };
    assert_eq!(earlier, None);
    assert!(message.contains("missing field"), "{message}");
    let RunRecordError::Invalid { earlier, .. } = read(r#"{"format":1}"#) else {
        panic!("a format 1 record with no fields is invalid")
    };
    assert_eq!(earlier, Some(1));
}

/// The error a retriever of one's own fails with.
#[derive(Debug, PartialEq)]
struct Unavailable {
    backend: &'static str,
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is unavailable", self.backend)
    }
}

impl std::error::Error for Unavailable {}

struct Down;

#[async_trait::async_trait]
impl Retriever<TokenLevel> for Down {
    fn name(&self) -> String {
        "down".into()
    }
    async fn retrieve(&self, _: &str, _: usize) -> rag_eval::Result<Vec<RetrievedChunk>> {
        Err(Error::other(Unavailable { backend: "search" }))
    }
}

#[test]
fn a_components_own_error_comes_back_as_it_was_made() {
    let corpus = Corpus::new([Document::new("a.md", "Cats purr.")]).unwrap();
    let d = Dataset::new(vec![example("q1")]).unwrap();
    let eval = TokenLevelEvaluation::new(corpus, d).unwrap();
    let err = eval
        .run_blocking(&Down, 1, &token_level_metrics(SpanMode::Standard, None))
        .unwrap_err();
    let Error::Retrieval { query, source } = &err else {
        panic!("not a retrieval error: {err:?}")
    };
    let Error::Other(own) = source.as_ref() else {
        panic!("not the retriever's own error: {source:?}")
    };
    assert_eq!(query, "q1");
    assert_eq!(
        own.downcast_ref::<Unavailable>(),
        Some(&Unavailable { backend: "search" })
    );
    assert_eq!(
        err.to_string(),
        "retrieval failed for query `q1`: search is unavailable"
    );
}
