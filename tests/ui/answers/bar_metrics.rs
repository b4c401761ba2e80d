// Bars the metric registry refuses, each reported at its key: an unknown metric (with the
// closest name, or the list), an answer metric on a case that only retrieves, a judge's figure
// without `judge`, a figure comparing embeddings without `embedder`.
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    min_span_recal = 0.8,
    max_speed = 0.5,
    min_exact_match = 0.5
)]
fn retrieves() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    embedder = embedder,
    min_faithfulness = 0.9,
    min_answer_similarity = 0.5
)]
async fn judged_without_a_judge(query: &str) -> RagAnswer {
    RagAnswer { answer: query.to_owned(), contexts: Vec::new() }
}

#[rag_eval(dataset = "examples/data/questions.jsonl", min_answer_similarity = 0.5)]
async fn compared_without_an_embedder(query: &str) -> RagAnswer {
    RagAnswer { answer: query.to_owned(), contexts: Vec::new() }
}

#[rag_eval(dataset = "examples/data/questions.jsonl", embedder = embedder, min_answer_relevancy = 0.7)]
async fn relevancy_without_a_judge(query: &str) -> RagAnswer {
    RagAnswer { answer: query.to_owned(), contexts: Vec::new() }
}

#[rag_eval(dataset = "examples/data/questions.jsonl", judge = judge, min_answer_relevancy = 0.7)]
async fn relevancy_without_an_embedder(query: &str) -> RagAnswer {
    RagAnswer { answer: query.to_owned(), contexts: Vec::new() }
}

fn judge() -> std::sync::Arc<dyn rag_eval::llm::LlmClient> {
    unimplemented!()
}

fn embedder() -> HashingEmbedder {
    HashingEmbedder::new(64, 1)
}

rag_eval::main!(
    retrieves,
    judged_without_a_judge,
    compared_without_an_embedder,
    relevancy_without_a_judge,
    relevancy_without_an_embedder
);
