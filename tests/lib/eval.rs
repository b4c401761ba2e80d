//! Evaluations end to end through the library: validation before any query runs, chunker
//! checks for chunk-level datasets, determinism, and errors that name the query.

use rag_eval::chunk::{ChunkId, RetrievedChunk};
use rag_eval::dataset::{self, AnyDataset, ChunkDataset, Example};
use rag_eval::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");

fn bundled() -> (Arc<Corpus>, TokenDataset) {
    let corpus = Arc::new(Corpus::from_folder(format!("{DATA}/corpus"), None).unwrap());
    let AnyDataset::Token(d) = dataset::load(format!("{DATA}/questions.jsonl")).unwrap() else {
        panic!("token-level")
    };
    (corpus, d)
}

#[test]
fn two_runs_give_identical_results() {
    let (corpus, d) = bundled();
    let eval = TokenLevelEvaluation::new(corpus, d).unwrap();
    let metrics = token_level_metrics(SpanMode::Standard, None);
    let run =
        |retriever: &dyn Retriever<TokenLevel>| eval.run_blocking(retriever, 5, &metrics).unwrap();
    for make in [
        || {
            Box::new(Bm25Retriever::new(RecursiveCharacterChunker::new(300, 0)))
                as Box<dyn Retriever<TokenLevel>>
        },
        || {
            Box::new(Pipeline::new(
                RecursiveCharacterChunker::new(500, 50),
                HashingEmbedder::default(),
            )) as Box<dyn Retriever<TokenLevel>>
        },
    ] {
        let (a, b) = (run(&*make()), run(&*make()));
        assert_eq!(a.scores, b.scores);
        assert_eq!(a.retrieved, b.retrieved);
        assert_eq!(a.scores.dataset_hash, b.scores.dataset_hash);
        assert_eq!(a.scores.dataset_hash.as_ref().map(String::len), Some(16));
    }
}

#[test]
fn drift_is_reported_for_every_row_before_any_query_runs() {
    let (_, d) = bundled();
    let docs: Vec<Document> = Corpus::from_folder(format!("{DATA}/corpus"), None)
        .unwrap()
        .documents()
        .iter()
        .map(|doc| {
            let text = if doc.id().as_str() == "glossary.md" {
                format!("New first line.\n{}", doc.content())
            } else {
                doc.content().to_owned()
            };
            Document::new(doc.id().clone(), text)
        })
        .collect();
    let drifted_rows: Vec<&str> = d
        .examples()
        .iter()
        .filter(|e| e.truth.iter().any(|s| s.doc.as_str() == "glossary.md"))
        .map(|e| e.id.as_str())
        .collect();
    assert!(!drifted_rows.is_empty());
    let err = TokenLevelEvaluation::new(Corpus::new(docs).unwrap(), d.clone())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("disagree with the corpus") && err.contains("rag-eval dataset reanchor"),
        "{err}"
    );
    for id in drifted_rows {
        assert!(
            err.contains(&format!("example `{id}`")),
            "{id} missing from: {err}"
        );
    }
    assert!(
        err.contains("questions.jsonl:"),
        "rows are named by file and line: {err}"
    );
}

fn chunk_dataset(chunker: &str) -> (Arc<Corpus>, ChunkDataset) {
    let corpus =
        Arc::new(Corpus::new([Document::new("a.md", "Alpha beta.\n\nGamma delta.")]).unwrap());
    let mut metadata = rag_eval::corpus::Metadata::new();
    metadata.insert("chunker".into(), chunker.into());
    let d = Dataset::new(vec![Example {
        id: "c1".into(),
        query: "gamma".into(),
        truth: vec![ChunkId::from_content("Gamma delta.")],
        span_texts: vec![],
        metadata,
        reference_answers: Vec::new(),
    }])
    .unwrap();
    (corpus, d)
}

#[test]
fn chunk_level_datasets_only_run_with_the_chunker_that_made_their_ids() {
    let spec = "recursive:size=20,overlap=0,length=chars,separators=langchain";
    let (corpus, d) = chunk_dataset(spec);
    let eval = ChunkLevelEvaluation::new(corpus.clone(), d.clone()).unwrap();
    let same = Bm25Retriever::new(RecursiveCharacterChunker::new(20, 0));
    let r = eval.run_blocking(&same, 1, &chunk_level_metrics()).unwrap();
    assert_eq!(r.scores.metrics.get("chunk_recall@1"), Some(1.0));

    let other = Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0));
    let err = eval
        .run_blocking(&other, 1, &chunk_level_metrics())
        .unwrap_err();
    // The error says what did not fit as fields, not only in its message.
    let rag_eval::Error::Evaluation(rag_eval::EvaluationError::OtherChunker {
        recorded, used, ..
    }) = &err
    else {
        panic!("not a chunker mismatch: {err:?}")
    };
    assert_eq!(
        (recorded.as_str(), used.as_str()),
        (
            spec,
            "recursive:size=400,overlap=0,length=chars,separators=langchain"
        )
    );
    let err = err.to_string();
    assert!(
        err.contains(&format!("was made with chunker `{spec}`"))
            && err.contains("the retriever chunks with `recursive:size=400,overlap=0,length=chars,separators=langchain`"),
        "{err}"
    );

    let (_, mut two) = chunk_dataset(spec);
    let mut second = two.examples()[0].clone();
    second.id = "c2".into();
    second
        .metadata
        .insert("chunker".into(), "token:size=5,overlap=0".into());
    two = Dataset::new(vec![two.examples()[0].clone(), second]).unwrap();
    let err = ChunkLevelEvaluation::new(corpus, two)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("records chunker `token:size=5,overlap=0`"),
        "{err}"
    );
}

/// A chunker of one's own whose spec holds a text the grammar must quote (a blank line).
struct Paragraphs;

impl rag_eval::chunker::PositionAwareChunker for Paragraphs {
    fn name(&self) -> String {
        "paragraphs".into()
    }
    fn spec(&self) -> rag_eval::spec::Value {
        rag_eval::spec::Spec::new("paragraphs")
            .with("separator", "\n\n")
            .into()
    }
    fn chunk_with_positions(&self, doc: &Document) -> Vec<rag_eval::chunk::PositionAwareChunk> {
        let mut start = 0;
        doc.content()
            .split("\n\n")
            .map(|text| {
                let chunk = rag_eval::chunk::PositionAwareChunk::new(
                    doc.id().clone(),
                    start,
                    start + text.chars().count(),
                    text,
                );
                start += text.chars().count() + 2;
                chunk
            })
            .collect()
    }
}

#[test]
fn a_retrievers_chunker_is_its_spec_value_compared_as_a_value() {
    let retriever = Bm25Retriever::new(Paragraphs);
    let chunker = Retriever::<ChunkLevel>::chunker(&retriever).unwrap();
    // The value the chunker reports, not its printed form.
    assert_eq!(
        chunker,
        rag_eval::chunker::PositionAwareChunker::spec(&Paragraphs)
    );
    let printed = chunker.to_string();
    assert_eq!(printed, "paragraphs:separator=\"\n\n\"");

    // A dataset that records the spec as printed runs with it.
    let (corpus, d) = chunk_dataset(&printed);
    let eval = ChunkLevelEvaluation::new(corpus.clone(), d).unwrap();
    let r = eval
        .run_blocking(&retriever, 1, &chunk_level_metrics())
        .unwrap();
    assert_eq!(r.scores.metrics.get("chunk_recall@1"), Some(1.0));
    assert_eq!(r.scores.config.unwrap().chunker.as_deref(), Some(&*printed));

    // One with another separator does not, and neither does a built-in written differently.
    for recorded in [
        "paragraphs:separator=\"\n\"",
        "paragraphs",
        "recursive:size=20",
    ] {
        let (corpus, d) = chunk_dataset(recorded);
        let err = ChunkLevelEvaluation::new(corpus, d)
            .unwrap()
            .run_blocking(&retriever, 1, &chunk_level_metrics())
            .unwrap_err();
        let rag_eval::Error::Evaluation(rag_eval::EvaluationError::OtherChunker {
            recorded: r,
            used,
            ..
        }) = &err
        else {
            panic!("{recorded}: not a chunker mismatch: {err:?}")
        };
        assert_eq!((r.as_str(), used.as_str()), (recorded, &*printed));
    }

    // Rows of one dataset that spell one built-in chunker differently agree; rows that name
    // different ones do not.
    let rows = |second: &str| {
        let (corpus, d) = chunk_dataset("recursive:size=20");
        let mut other = d.examples()[0].clone();
        other.id = "c2".into();
        other.metadata.insert("chunker".into(), second.into());
        ChunkLevelEvaluation::new(
            corpus,
            Dataset::new(vec![d.examples()[0].clone(), other]).unwrap(),
        )
    };
    assert!(rows("recursive:overlap=0,size=20,length=chars").is_ok());
    assert!(rows("recursive:size=21").is_err());
}

#[test]
fn a_recorded_chunker_matches_however_its_spec_is_spelled() {
    // As `rag-eval generate chunk --chunker recursive:size=20,overlap=0` is typed by hand.
    let (corpus, d) = chunk_dataset("recursive:size=20,overlap=0");
    let eval = ChunkLevelEvaluation::new(corpus.clone(), d.clone()).unwrap();
    let same = Bm25Retriever::new(RecursiveCharacterChunker::new(20, 0));
    let r = eval.run_blocking(&same, 1, &chunk_level_metrics()).unwrap();
    assert_eq!(r.scores.metrics.get("chunk_recall@1"), Some(1.0));
    let err = eval
        .run_blocking(
            &Bm25Retriever::new(RecursiveCharacterChunker::new(20, 5)),
            1,
            &chunk_level_metrics(),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("was made with chunker `recursive:size=20,overlap=0`"),
        "{err}"
    );

    // Rows spelling one chunker two ways are one chunker.
    let mut second = d.examples()[0].clone();
    second.id = "c2".into();
    second.metadata.insert(
        "chunker".into(),
        "recursive:separators=langchain,size=20".into(),
    );
    let both = Dataset::new(vec![d.examples()[0].clone(), second]).unwrap();
    let eval = ChunkLevelEvaluation::new(corpus, both).unwrap();
    let r = eval.run_blocking(&same, 1, &chunk_level_metrics()).unwrap();
    assert_eq!(r.scores.metrics.get("chunk_recall@1"), Some(1.0));
}

/// Answers with nothing, fails on one query, and counts calls in flight.
struct Flaky {
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

#[async_trait::async_trait]
impl Retriever<TokenLevel> for Flaky {
    fn name(&self) -> String {
        "flaky".into()
    }
    async fn retrieve(&self, query: &str, _k: usize) -> rag_eval::Result<Vec<RetrievedChunk>> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(now, Ordering::SeqCst);
        // Yield once so that other queries can start.
        let mut yielded = false;
        std::future::poll_fn(|cx| {
            if yielded {
                std::task::Poll::Ready(())
            } else {
                yielded = true;
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        })
        .await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        if query.contains("kernel") {
            Err(rag_eval::Error::other("backend unavailable"))
        } else {
            Ok(Vec::new())
        }
    }
}

#[test]
fn retrieval_errors_name_the_query_and_concurrency_is_bounded() {
    let (corpus, d) = bundled();
    let eval = TokenLevelEvaluation::new(corpus, d)
        .unwrap()
        .with_concurrency(3);
    let flaky = Flaky {
        in_flight: AtomicUsize::new(0),
        max_in_flight: AtomicUsize::new(0),
    };
    let err = eval
        .run_blocking(&flaky, 5, &token_level_metrics(SpanMode::Standard, None))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("retrieval failed for query `q0001`: backend unavailable"),
        "{err}"
    );
    let max = flaky.max_in_flight.load(Ordering::SeqCst);
    assert!(
        (2..=3).contains(&max),
        "at most 3 queries in flight, and more than one: {max}"
    );
    let e = eval.run_blocking(&flaky, 0, &[]).unwrap_err().to_string();
    assert!(e.contains("k must be at least 1"), "{e}");
}

#[test]
fn examples_with_nothing_to_find_are_refused_unless_left_out() {
    let (corpus, d) = bundled();
    let mut rows: Vec<Example<TokenLevel>> = d.examples().to_vec();
    rows[1].truth.clear();
    rows[1].span_texts.clear();
    let first = rows[0].truth[0].clone();
    rows[2].truth = vec![CharSpan::new(first.doc, first.start, first.start)];
    rows[2].span_texts = vec![Some(String::new())];
    let d = Dataset::new(rows).unwrap();
    let Err(e) = TokenLevelEvaluation::new(corpus.clone(), d.clone()) else {
        panic!("refused")
    };
    let e = e.to_string();
    assert!(
        e.contains("2 examples of <memory> have no ground truth"),
        "{e}"
    );
    let (kept, skipped) = d.skip_empty_truth();
    assert_eq!(skipped, 2);
    let eval = TokenLevelEvaluation::new(corpus, kept).unwrap();
    assert_eq!(eval.dataset().len(), d.len() - 2);

    let (corpus, c) = chunk_dataset("recursive:size=20,overlap=0");
    let mut rows = c.examples().to_vec();
    rows[0].truth.clear();
    let Err(e) = ChunkLevelEvaluation::new(corpus, Dataset::new(rows).unwrap()) else {
        panic!("refused")
    };
    let e = e.to_string();
    assert!(
        e.contains("1 example of <memory> has no ground truth"),
        "{e}"
    );
}

/// An application search that returns the truth's own text at its Rust `str` byte range, as a
/// hand-written search over `String`s does.
struct ByteOffsets {
    corpus: Arc<Corpus>,
    truth: std::collections::HashMap<String, CharSpan>,
    fixed: bool,
}

#[async_trait::async_trait]
impl Retriever<TokenLevel> for ByteOffsets {
    fn name(&self) -> String {
        "byte-offsets".into()
    }
    async fn retrieve(&self, query: &str, _: usize) -> rag_eval::Result<Vec<RetrievedChunk>> {
        let span = &self.truth[query];
        let doc = self.corpus.get(span.doc.as_str()).unwrap();
        let text = doc.slice(span.start, span.end).unwrap();
        let at = doc.content().find(text).unwrap();
        Ok(vec![if self.fixed {
            RetrievedChunk::from_byte_range(
                span.doc.clone(),
                doc.content(),
                at..at + text.len(),
                1.0,
            )
            .unwrap()
        } else {
            RetrievedChunk::new(
                PositionAwareChunk::new(span.doc.clone(), at, at + text.len(), text),
                1.0,
            )
        }])
    }
}

#[test]
fn byte_offsets_from_a_search_are_an_error_that_says_so() {
    let corpus = Arc::new(
        Corpus::new([Document::new(
            "faq.md",
            "Größen: S, M, L.\n\nThe default lifetime of a token is 30 days.",
        )])
        .unwrap(),
    );
    let row = r#"{"id":"q1","inputs":{"query":"token lifetime?"},"outputs":{"relevant_spans":[{"doc_id":"faq.md","start":18,"end":61}]}}"#;
    let AnyDataset::Token(d) = dataset::parse(row, "d.jsonl").unwrap() else {
        panic!("token-level")
    };
    let truth = d.examples()[0].truth[0].clone();
    assert_eq!(
        corpus.get("faq.md").unwrap().slice(truth.start, truth.end),
        Some("The default lifetime of a token is 30 days.")
    );
    let eval = TokenLevelEvaluation::new(corpus.clone(), d).unwrap();
    let metrics = token_level_metrics(SpanMode::Standard, None);
    let search = |fixed| ByteOffsets {
        corpus: corpus.clone(),
        truth: [("token lifetime?".to_owned(), truth.clone())].into(),
        fixed,
    };
    // Scored at the byte range, the answer would look 95% found, not wrong.
    let e = eval
        .run_blocking(&search(false), 5, &metrics)
        .unwrap_err()
        .to_string();
    assert!(e.contains("query `q1`"), "{e}");
    assert!(e.contains("does not match the document"), "{e}");
    assert!(e.contains("bytes, not characters"), "{e}");
    assert!(e.contains("RetrievedChunk::from_byte_range"), "{e}");
    let fixed = eval.run_blocking(&search(true), 5, &metrics).unwrap();
    assert_eq!(fixed.scores.metrics.get("span_recall@5"), Some(1.0));
}
