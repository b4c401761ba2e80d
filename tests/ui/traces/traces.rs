// A traces case's function is the system's entry point: `async fn(question: &str)` or
// `async fn(question: &str, id: &str)`, returning anything; its keys are `traces`,
// `join_attribute`, `retrievals` and `trace_timeout_ms`, and its bars those of a case that
// answers.
use rag_eval::rag_eval;

#[rag_eval(dataset = "examples/data/questions.jsonl", traces = "golden/t.jsonl")]
fn not_async(_: &str) {}

#[rag_eval(dataset = "examples/data/questions.jsonl", traces = "golden/t.jsonl")]
async fn no_question() {}

#[rag_eval(dataset = "examples/data/questions.jsonl", traces = "golden/t.jsonl")]
async fn numeric_id(_: &str, _: u64) {}

#[rag_eval(dataset = "examples/data/questions.jsonl", traces = "golden/t.jsonl")]
async fn three(_: &str, _: &str, _: &str) {}

#[rag_eval(dataset = "examples/data/questions.jsonl", join_attribute = "query.id", retrievals = "first")]
async fn keys_without_traces(_: &str) -> Vec<rag_eval::chunk::RetrievedChunk> {
    Vec::new()
}

#[rag_eval(dataset = "examples/data/questions.jsonl", traces = "examples/data", trace_timeout_ms = 0)]
async fn folder(_: &str) {}

#[rag_eval(dataset = "examples/data/questions.jsonl", traces = "golden/t.jsonl", min_span_recal = 0.5, min_faithfulness = 0.5)]
async fn bars(_: &str) {}

fn main() {}
