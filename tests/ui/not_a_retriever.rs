// Shapes that fit but types that do not: a factory must return a retriever, a query function
// ranked chunks.
use rag_eval::rag_eval;

#[rag_eval(dataset = "examples/data/questions.jsonl")]
fn words() -> Vec<String> {
    Vec::new()
}

#[rag_eval(dataset = "examples/data/questions.jsonl")]
async fn opaque() -> impl Send + Sync + 'static {
    42
}

#[rag_eval(dataset = "examples/data/questions.jsonl")]
async fn titles(query: &str) -> Vec<String> {
    vec![query.to_owned()]
}

rag_eval::main!(words, opaque, titles);
