//! What every judge sends, to the byte: the requests (hence the LLM cache keys: model, prompt
//! version, temperature, sample index, messages) of each judge, repair turns included, compared
//! with the recorded `tests/fixtures/judges/requests.jsonl`. A change here makes every recorded
//! judge cache miss; when it is meant, rewrite the file with `RAG_EVAL_BLESS=1` and say so.

use rag_eval::chunk::{PositionAwareChunk, RetrievedChunk};
use rag_eval::embed::HashingEmbedder;
use rag_eval::generator::{PromptTemplate, RagAnswer};
use rag_eval::judge::{
    judge_query, AnswerMatch, AnswerRelevancy, Faithfulness, Judge, JudgeConfig, JudgeInput,
    JudgeStatus, LlmContextPrecision, LlmContextRecall, FAITHFULNESS_PLACEHOLDERS,
};
use rag_eval::llm::{ChatRequest, ChatResponse, LlmClient, TokenUsage};
use std::sync::Mutex;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/judges/requests.jsonl"
);

/// Answers the first attempt of sample 0 with text that is not JSON, so that every judge
/// sends a repair turn; every other request gets a valid answer for its schema.
#[derive(Default)]
struct Recorder {
    sent: Mutex<Vec<String>>,
}

fn valid(schema: &str) -> &'static str {
    match schema {
        "faithfulness" => {
            r#"{"statements":[{"statement":"Flags live in memory.","verdict":"supported","context":1,"evidence":"keeps every flag in memory","reason":"said"}]}"#
        }
        "answer_relevancy" => r#"{"questions":["same","close"],"noncommittal":false}"#,
        "llm_context_precision" => {
            r#"{"verdicts":[{"context":1,"useful":true,"reason":"r"},{"context":2,"useful":false,"reason":"r"}]}"#
        }
        "llm_context_recall" => {
            r#"{"statements":[{"statement":"Flags are in memory.","attributed":true,"context":1,"reason":"r"}]}"#
        }
        "answer_match" => r#"{"reason":"same fact","matches":true}"#,
        other => panic!("unexpected schema {other}"),
    }
}

#[async_trait::async_trait]
impl LlmClient for Recorder {
    fn name(&self) -> String {
        "recorder(model=judge)".into()
    }
    async fn complete(&self, request: &ChatRequest) -> rag_eval::Result<ChatResponse> {
        self.sent
            .lock()
            .unwrap()
            .push(serde_json::to_string(request).unwrap());
        let schema = request.json_schema.as_ref().map_or("", |s| s.name.as_str());
        let content = if request.sample == Some(0) && request.messages.len() == 1 {
            "Sure! Here is my verdict.".to_owned()
        } else {
            valid(schema).to_owned()
        };
        Ok(ChatResponse {
            content,
            finish_reason: Some("stop".into()),
            usage: TokenUsage {
                prompt_tokens: 7,
                completion_tokens: 3,
            },
            model: "judge".into(),
            logprobs: None,
        })
    }
}

/// Two chunks of `doc.md` (document offsets, text), a quote and a placeholder-like `{{…}}` in
/// the answer, and non-ASCII text: what the prompts must carry through unchanged.
fn answer() -> RagAnswer {
    let chunks = [
        (
            40,
            95,
            "The server keeps every flag in memory. Restarts: 2 s.",
            0.9,
        ),
        (
            200,
            249,
            "Größe der Regeln: SDKs download the whole set.",
            0.8,
        ),
    ];
    RagAnswer {
        answer: "Flags live in memory; the \"SDKs\" download {{all}} of them.".into(),
        contexts: chunks
            .iter()
            .map(|&(start, end, text, score)| {
                RetrievedChunk::new(PositionAwareChunk::new("doc.md", start, end, text), score)
            })
            .collect(),
    }
}

fn sent_by_every_judge() -> Vec<String> {
    let llm = Recorder::default();
    let custom = PromptTemplate::parse(
        "version: 7-house\nQ: {{question}}\nA: {{answer}}\nC: {{contexts}}\n",
        "house.md",
        FAITHFULNESS_PLACEHOLDERS,
    )
    .unwrap();
    let judges: Vec<Box<dyn Judge + '_>> = vec![
        Box::new(Faithfulness::new(&llm)),
        Box::new(Faithfulness::new(&llm).with_prompt(custom)),
        Box::new(AnswerRelevancy::new(&llm, HashingEmbedder::new(64, 2)).with_questions(2)),
        Box::new(LlmContextPrecision::new(&llm)),
        Box::new(LlmContextRecall::new(&llm)),
        Box::new(AnswerMatch::new(&llm)),
    ];
    let config = JudgeConfig {
        model: Some("judge-7b".into()),
        temperature: 0.3,
        max_tokens: 512,
        samples: 2,
        ..JudgeConfig::default()
    };
    let answer = answer();
    let input = JudgeInput {
        query_id: "q1",
        question: "How are flags served?",
        answer: &answer,
        reference: Some("The server keeps flags in memory."),
    };
    for judge in &judges {
        let j = pollster::block_on(judge_query(judge.as_ref(), &input, &config));
        for s in &j.samples {
            assert_eq!(
                s.status,
                JudgeStatus::Ok,
                "{}: {:?}",
                judge.name(),
                s.message
            );
        }
        assert_eq!(j.usage().repairs, 1, "{}", judge.name());
    }
    drop(judges);
    llm.sent.into_inner().unwrap()
}

#[test]
fn every_judge_sends_the_recorded_requests() {
    let sent = sent_by_every_judge();
    // 6 judges × (sample 0: ask + repair, sample 1: ask).
    assert_eq!(sent.len(), 18);
    let text = sent.join("\n") + "\n";
    if std::env::var_os("RAG_EVAL_BLESS").is_some() {
        std::fs::create_dir_all(std::path::Path::new(FIXTURE).parent().unwrap()).unwrap();
        std::fs::write(FIXTURE, &text).unwrap();
    }
    let recorded = std::fs::read_to_string(FIXTURE).expect("the recorded requests exist");
    for (i, (now, then)) in text.lines().zip(recorded.lines()).enumerate() {
        assert_eq!(now, then, "request {} differs from the recorded one", i + 1);
    }
    assert_eq!(text.lines().count(), recorded.lines().count());
}
