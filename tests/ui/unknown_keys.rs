// Misspelt keys and metrics, a key of no use and a repeated key: all reported in one build.
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    tolerence = 0.05,
    colour = "blue",
    min_span_recal = 0.8,
    max_speed = 0.5,
    k = 3,
    k = 4
)]
fn bm25() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

fn main() {}
