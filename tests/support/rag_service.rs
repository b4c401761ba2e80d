//! The stub RAG service (`tests/support/rag_service.py`, Python's `http.server` over the
//! bundled corpus) started for a test, and a scripted judge of its answers.

use super::chat::{chat_server, completion, first_passage_words, Chat};
use super::TestServer;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// The stub service, stopped when dropped.
pub struct Service {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Service {
    /// The service answering well (`good`) or worse (`poor`).
    pub fn start(quality: &str) -> Service {
        let mut child = Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/rag_service.py"))
            .args(["--corpus", "examples/data/corpus", "--port", "0"])
            .args(["--quality", quality, "--delay", "5"])
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")))
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the stub service");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the stub says where it listens: {line:?}"))
            .to_owned();
        Service { child, base }
    }

    /// The spec of the service at `path`, reading the stub's own field names.
    pub fn spec(&self, path: &str, extra: &str) -> String {
        format!(
            "http:url={}{path},contexts=/sources,text=content,doc_id=path{extra}",
            self.base
        )
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A judge of the service's answers: faithfulness finds one statement, supported by the first
/// words of passage 1 (quoted as evidence), and answer_relevancy asks two questions back.
pub fn judge() -> TestServer {
    chat_server(|c: &Chat| {
        let content = match (c.schema.as_str(), first_passage_words(&c.prompt)) {
            ("faithfulness", Some(quote)) => serde_json::json!({"statements": [
                {"statement": "The answer is in the documentation.", "verdict": "supported",
                 "context": 1, "evidence": quote, "reason": "passage 1 says it"}]}),
            ("faithfulness", None) => serde_json::json!({"statements": []}),
            ("answer_relevancy", _) => serde_json::json!({
                "questions": ["What does it need?", "Which version?"], "noncommittal": false}),
            (other, _) => panic!("unexpected request {other:?}"),
        };
        completion(&content.to_string(), (50, 10))
    })
}

/// The bundled questions without their spans: pairs of question and reference answer, as a
/// dataset file's text.
pub fn qa_pairs() -> String {
    let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/questions.jsonl");
    let mut qa = String::new();
    for line in std::fs::read_to_string(bundled).unwrap().lines() {
        let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
        let reference = v["outputs"]["reference_answer"].clone();
        v["outputs"] = serde_json::json!({ "reference_answer": reference });
        qa.push_str(&format!("{v}\n"));
    }
    qa
}
