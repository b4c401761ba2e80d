// Without rag-eval's `answers` feature, a case that answers (a `RagAnswer`, a `Rag`, a judge,
// an embedder or criteria) and a bar on an answer metric fail to compile, naming the feature.
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(dataset = "examples/data/questions.jsonl")]
async fn answers(query: &str) -> RagAnswer {
    RagAnswer { answer: query.to_owned(), contexts: Vec::new() }
}

#[rag_eval(dataset = "examples/data/questions.jsonl", judge = judge)]
fn judged() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

#[rag_eval(dataset = "examples/data/questions.jsonl", min_bleu = 0.2)]
fn answer_metric() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

fn judge() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

rag_eval::main!(answers, judged, answer_metric);
