// A criteria file must exist relative to the crate root (a compile error, not a failed run),
// must be a file, and needs a `judge` to judge it.
use rag_eval::prelude::*;
use rag_eval::rag_eval;

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    judge = judge,
    criteria = "examples/judges/missing.md",
)]
async fn missing_file(query: &str) -> RagAnswer {
    RagAnswer { answer: query.to_owned(), contexts: Vec::new() }
}

#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    judge = judge,
    criteria = ["examples/data", "examples/data/questions.jsonl"],
)]
async fn a_folder(query: &str) -> RagAnswer {
    RagAnswer { answer: query.to_owned(), contexts: Vec::new() }
}

#[rag_eval(dataset = "examples/data/questions.jsonl", criteria = "examples/data/questions.jsonl")]
async fn without_a_judge(query: &str) -> RagAnswer {
    RagAnswer { answer: query.to_owned(), contexts: Vec::new() }
}

fn judge() -> std::sync::Arc<dyn rag_eval::llm::LlmClient> {
    unimplemented!()
}

fn main() {}
