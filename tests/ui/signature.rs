// Functions of neither case shape, each reported at the part that does not fit.
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(dataset = "examples/data/questions.jsonl")]
fn generic<R: Retriever<TokenLevel>>() -> R {
    unimplemented!()
}

#[rag_eval(dataset = "examples/data/questions.jsonl")]
fn returns_nothing() {}

#[rag_eval(dataset = "examples/data/questions.jsonl")]
fn not_async(query: &str) -> Vec<RetrievedChunk> {
    let _ = query;
    Vec::new()
}

#[rag_eval(dataset = "examples/data/questions.jsonl")]
async fn owned_query(query: String) -> Vec<RetrievedChunk> {
    let _ = query;
    Vec::new()
}

#[rag_eval(dataset = "examples/data/questions.jsonl")]
async fn not_a_list(query: &str) -> Option<RetrievedChunk> {
    let _ = query;
    None
}

#[rag_eval(dataset = "examples/data/questions.jsonl")]
async fn with_k(query: &str, k: usize) -> Vec<RetrievedChunk> {
    let _ = (query, k);
    Vec::new()
}

fn main() {}
