// A conversation case takes its conversations file, `max_steps`, `tolerance`, `per_query`,
// `ignore` and bars on the conversation figures; its function is
// `async fn(&[Turn]) -> AssistantTurn`.
use rag_eval::conversation::play::AssistantTurn;
use rag_eval::conversation::Turn;
use rag_eval::rag_eval;

#[rag_eval(conversations = "examples/data/questions.jsonl", dataset = "examples/data/questions.jsonl", k = 3)]
async fn both(_: &[Turn]) -> AssistantTurn {
    AssistantTurn::default()
}

#[rag_eval(dataset = "examples/data/questions.jsonl", max_steps = 4)]
async fn steps_without_conversations(_: &str) -> Vec<rag_eval::chunk::RetrievedChunk> {
    Vec::new()
}

#[rag_eval(conversations = "examples/data/questions.jsonl", max_steps = 0)]
async fn no_steps(_: &[Turn]) -> AssistantTurn {
    AssistantTurn::default()
}

#[rag_eval(conversations = "examples/data/questions.jsonl")]
fn not_async(_: &[Turn]) -> AssistantTurn {
    AssistantTurn::default()
}

#[rag_eval(conversations = "examples/data/questions.jsonl")]
async fn owned(_: Vec<Turn>) -> AssistantTurn {
    AssistantTurn::default()
}

#[rag_eval(conversations = "examples/data/questions.jsonl", min_tool_call_acuracy = 1.0, min_span_recall = 0.5)]
async fn unknown_metrics(_: &[Turn]) -> AssistantTurn {
    AssistantTurn::default()
}

#[rag_eval(conversations = "examples/data/missing.jsonl")]
async fn missing(_: &[Turn]) -> AssistantTurn {
    AssistantTurn::default()
}

fn main() {}
