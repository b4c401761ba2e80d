// A case returning a retriever and a generator: the generator must be a `Generator`, the
// retriever a retriever, and the function takes no query. Answer bars need a case that
// answers, the judges' bars a judge, the embeddings' bars an embedder.
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(dataset = "examples/data/questions.jsonl")]
fn no_generator() -> Rag<Bm25Retriever, String> {
    Rag {
        retriever: Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0)),
        generator: String::new(),
    }
}

#[rag_eval(dataset = "examples/data/questions.jsonl")]
fn no_retriever() -> Rag<Vec<String>, String> {
    Rag {
        retriever: Vec::new(),
        generator: String::new(),
    }
}

#[rag_eval(dataset = "examples/data/questions.jsonl")]
async fn per_query(query: &str) -> Rag<Bm25Retriever, String> {
    let _ = query;
    unimplemented!()
}

#[rag_eval(dataset = "examples/data/questions.jsonl", embedder = embedder, min_answer_relevancy = 0.7)]
async fn relevancy_without_judge(query: &str) -> RagAnswer {
    let _ = query;
    unimplemented!()
}

#[rag_eval(dataset = "examples/data/questions.jsonl", judge = judge, min_answer_relevancy = 0.7)]
async fn relevancy_without_embedder(query: &str) -> RagAnswer {
    let _ = query;
    unimplemented!()
}

#[rag_eval(dataset = "examples/data/questions.jsonl", min_exact_match = 0.5, min_mrr = 0.5)]
async fn lexical_without_answers(query: &str) -> Vec<RetrievedChunk> {
    let _ = query;
    unimplemented!()
}

#[rag_eval(dataset = "examples/data/questions.jsonl", min_bleu = 0.3, min_answer_similarity = 0.5)]
async fn similarity_without_embedder(query: &str) -> RagAnswer {
    let _ = query;
    unimplemented!()
}

fn embedder() -> HashingEmbedder {
    HashingEmbedder::new(64, 1)
}

rag_eval::main!(
    no_generator,
    no_retriever,
    per_query,
    relevancy_without_judge,
    relevancy_without_embedder,
    lexical_without_answers,
    similarity_without_embedder
);
