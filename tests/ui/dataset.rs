// The dataset is required and must be a file under the crate root; so must the corpus folder.
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(k = 3)]
fn no_dataset() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

#[rag_eval(dataset = "golden/missing.jsonl", corpus = "examples/data/nowhere")]
fn missing_files() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

#[rag_eval(dataset = "examples/data", corpus = "examples/data/questions.jsonl")]
fn swapped() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

#[rag_eval(dataset = 42)]
fn not_a_string() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

fn main() {}
