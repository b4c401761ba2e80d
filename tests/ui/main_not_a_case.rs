// Only functions carrying #[rag_eval] can be listed.
use rag_eval::prelude::*;

fn plain() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

rag_eval::main!(plain, undeclared);
