// Misspelt keys, a key of no use and a repeated key: all reported in one build. (Misspelt
// metrics are the registry's to report: `bar_metrics.rs`.)
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    tolerence = 0.05,
    colour = "blue",
    mn_recall = 0.8,
    k = 3,
    k = 4
)]
fn bm25() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

fn main() {}
