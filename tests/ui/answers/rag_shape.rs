// A case returning a retriever and a generator: the generator must be a `Generator`, the
// retriever a retriever, and the function takes no query. (What bars a case may have is
// `bar_metrics.rs`'s.)
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

rag_eval::main!(no_generator, no_retriever, per_query);
