// Values of the wrong type or out of range, each reported at the value.
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    k = 0,
    tolerance = 1.5,
    min_span_recall = 1.5,
    max_mrr = -0.1,
    mode = "fast",
    per_query = "yes",
)]
fn out_of_range() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    k = 2.5,
    tolerance = "low",
    mode = chroma,
    glob = 1,
    min_recall = 0.9,
    max_recall = 0.5,
)]
fn wrong_types() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

fn main() {}
