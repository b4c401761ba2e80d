// The attribute goes on functions, and its arguments are `key = value` pairs.
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(dataset = "examples/data/questions.jsonl")]
struct Settings;

#[rag_eval(dataset: "examples/data/questions.jsonl")]
fn colon() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

#[rag_eval(dataset = "examples/data/questions.jsonl", per_query)]
fn bare_key() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

fn main() {
    let _ = Settings;
}
