// Every case shape in a test file as a user writes one, compiled as a module of
// `tests/macros.rs`: the harness `main!` expands to is built in a module and not run; this
// `main` reads the cases.
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    corpus = "examples/data/corpus",
    k = 3,
    min_span_recall = 0.2,
    max_chunk_precision = 1
)]
fn bm25() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    corpus = "examples/data/corpus"
)]
async fn bm25_async() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(800, 0))
}

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    tolerance = 0,
    mode = "chroma"
)]
fn opaque() -> impl Retriever<TokenLevel> {
    Bm25Retriever::new(RecursiveCharacterChunker::new(200, 0))
}

#[rag_eval(dataset = "examples/data/questions.jsonl", per_query = false)]
async fn nothing_found(query: &str) -> Vec<RetrievedChunk> {
    let _ = query;
    Vec::new()
}

#[allow(dead_code)]
mod harness {
    use super::*;

    rag_eval::main!(bm25, bm25_async, opaque, nothing_found);
}

pub fn main() {
    let names: Vec<&str> = [
        bm25::__rag_eval_case(),
        bm25_async::__rag_eval_case(),
        opaque::__rag_eval_case(),
        nothing_found::__rag_eval_case(),
    ]
    .iter()
    .map(|case| case.name)
    .collect();
    assert_eq!(names, ["bm25", "bm25_async", "opaque", "nothing_found"]);
}
