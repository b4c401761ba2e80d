// A case listed twice, two cases of the same name, and entries that are not paths.
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(dataset = "examples/data/questions.jsonl")]
fn bm25() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

mod large {
    use super::*;

    #[rag_eval(dataset = "examples/data/questions.jsonl")]
    pub fn bm25() -> Bm25Retriever {
        Bm25Retriever::new(RecursiveCharacterChunker::new(2000, 0))
    }
}

rag_eval::main!(bm25, large::bm25, bm25, "bm25", bm25(),);
