//! rag-eval's own retrieval cases on the bundled example data, run by rag-eval's harness:
//! every question is a test (`bm25_recursive_400::q0001`, …) and every case has a summary test
//! that checks its bars and the golden snapshot in `golden/`.

use rag_eval::prelude::*;
use std::sync::{Arc, OnceLock};

/// BM25 over 400-character recursive chunks, with a bar on span recall.
#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    corpus = "examples/data/corpus",
    k = 5,
    min_span_recall = 0.6,
    min_mrr = 0.5
)]
fn bm25_recursive_400() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

/// Markdown-aware chunks scored the way chunking_evaluation scores them.
#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    corpus = "examples/data/corpus",
    k = 5,
    mode = "chroma",
    min_precision_omega = 0.3
)]
fn bm25_markdown_chroma() -> Bm25Retriever {
    Bm25Retriever::new(MarkdownChunker::new(400))
}

/// The offline dense pipeline, built by an async function.
#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    corpus = "examples/data/corpus",
    k = 5,
    per_query = false
)]
async fn dense_pipeline() -> Pipeline {
    Pipeline::new(
        RecursiveCharacterChunker::new(300, 0),
        HashingEmbedder::default(),
    )
}

/// An application's own async search function is the retriever: no corpus is given to the
/// case, the application indexes its documents itself.
#[rag_eval(dataset = "examples/data/questions.jsonl", k = 5, min_hit = 0.6)]
async fn app_search(query: &str) -> Vec<RetrievedChunk> {
    static APP: OnceLock<Bm25Retriever> = OnceLock::new();
    let app = APP.get_or_init(|| {
        let corpus = Corpus::from_folder(
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data/corpus"),
            None,
        )
        .expect("the bundled corpus loads");
        let bm25 = Bm25Retriever::new(MarkdownChunker::new(600));
        bm25.build_index(&Arc::new(corpus))
            .expect("the index builds");
        bm25
    });
    app.search(query, 5).unwrap_or_default()
}

/// A bar no chunker reaches: ignored by default, run with `--ignored` to see how a failing
/// gate reads (tests/harness_fixture.rs checks it does fail).
#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    corpus = "examples/data/corpus",
    min_span_recall = 0.99,
    per_query = false,
    ignore = true
)]
fn too_strict() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(200, 0))
}

rag_eval::main!(
    bm25_recursive_400,
    bm25_markdown_chroma,
    dense_pipeline,
    app_search,
    too_strict,
);
