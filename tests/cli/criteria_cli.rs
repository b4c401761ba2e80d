//! `score --answers --criteria FILE` end to end through the binary against a scripted
//! OpenAI-compatible server: a 1–5 scale mapped onto [0, 1], a verdict weighted by its
//! token log-probabilities, an answer that never follows the schema counted `invalid` and left
//! out of the mean, repeats, the run record and `compare`, and a cache replay with no call.

use crate::support;

use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use support::chat::{chat_server, Chat};
use support::TestServer;

const CRITERIA: &str = "---
name: polite
scale: 1-5
inputs: question, answer
---
The answer is courteous: it greets or thanks where fitting and never scolds the reader.

## Steps
1. Read the answer.
2. Note anything curt or rude.
";

fn dataset() -> String {
    ["q1", "q2", "q3"]
        .iter()
        .map(|id| {
            json!({"id": id, "inputs": {"query": format!("question {id}")},
                   "outputs": {"relevant_spans": [{"doc_id": "a.md", "start": 0, "end": 5}]}})
            .to_string()
                + "\n"
        })
        .collect()
}

fn answers() -> String {
    [
        ("q1", "Thanks for asking: in May."),
        ("q2", "May."),
        ("q3", "Whatever."),
    ]
    .iter()
    .map(|(id, answer)| {
        json!({"id": id, "answer": answer,
                   "contexts": [{"doc_id": "a.md", "start": 0, "end": 5, "text": "abcde"}]})
        .to_string()
            + "\n"
    })
    .collect()
}

/// The server's answer to a criteria request: q1 a 4 whose token says 4 or 2 at even odds (a
/// weighted 0.5, not the sampled 0.75), q2 a 2 with no log-probabilities (0.25), q3 a verdict
/// off the scale every time (invalid).
fn reply(prompt: &str) -> Value {
    let message = |content: &str| json!({"role": "assistant", "content": content});
    let choice = if prompt.contains("Answer: Thanks for asking") {
        let half = 0.5f64.ln();
        json!({"index": 0, "finish_reason": "stop",
            "message": message(r#"{"reason": "Thanks the reader.", "verdict": 4}"#),
            "logprobs": {"content": [
                {"token": "{\"reason\": \"Thanks the reader.\", \"verdict\": ", "logprob": -0.1, "top_logprobs": []},
                {"token": "4", "logprob": half, "top_logprobs": [
                    {"token": "4", "logprob": half}, {"token": "2", "logprob": half},
                    {"token": "x", "logprob": -3.0}]},
                {"token": "}", "logprob": -0.01, "top_logprobs": []}]}})
    } else if prompt.contains("Answer: May.") {
        json!({"index": 0, "finish_reason": "stop",
            "message": message(r#"{"reason": "Curt.", "verdict": 2}"#)})
    } else {
        json!({"index": 0, "finish_reason": "stop",
            "message": message(r#"{"reason": "Rude.", "verdict": 9}"#)})
    };
    json!({"model": "judge-m", "choices": [choice],
           "usage": {"prompt_tokens": 30, "completion_tokens": 6}})
}

struct Setup {
    dir: tempfile::TempDir,
    store: String,
    url: String,
    calls: Arc<AtomicUsize>,
    bodies: Arc<Mutex<Vec<Value>>>,
    _server: TestServer,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.jsonl"), dataset()).unwrap();
        std::fs::write(dir.path().join("a.jsonl"), answers()).unwrap();
        std::fs::create_dir(dir.path().join("judges")).unwrap();
        std::fs::write(dir.path().join("judges/polite.md"), CRITERIA).unwrap();
        let store = dir.path().join("runs.sqlite").to_str().unwrap().to_owned();
        let calls = Arc::new(AtomicUsize::new(0));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let (c, b) = (Arc::clone(&calls), Arc::clone(&bodies));
        let server = chat_server(move |chat: &Chat| {
            c.fetch_add(1, Ordering::SeqCst);
            b.lock().unwrap().push(chat.body.clone());
            reply(&chat.prompt)
        });
        Setup {
            url: server.url("/v1"),
            dir,
            store,
            calls,
            bodies,
            _server: server,
        }
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        crate::cli_support::run_in(self.dir.path(), &self.store, args)
    }

    fn score(&self, cache: &str) -> Value {
        self.score_with(cache, &[])
    }

    /// `score` with the criteria judge and `extra` arguments, as JSON.
    fn score_with(&self, cache: &str, extra: &[&str]) -> Value {
        let args = [
            "score",
            "--dataset",
            "d.jsonl",
            "--answers",
            "a.jsonl",
            "--judge-model",
            "judge-m",
            "--judge-url",
            &self.url,
            "--criteria",
            "judges/polite.md",
            "--judge-samples",
            "2",
            "--max-invalid-share",
            "0.5",
            "--cache",
            cache,
            "--json",
        ];
        let (code, stdout, stderr) = self.run(&[&args[..], extra].concat());
        assert_eq!(code, 0, "{stderr}");
        serde_json::from_str(stdout.trim()).unwrap()
    }
}

fn figure(v: &Value, id: &str) -> Option<f64> {
    v["per_query"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["id"] == id)
        .unwrap()["metrics"]
        .get("polite")
        .and_then(Value::as_f64)
}

fn in_dir(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_owned()
}

#[test]
fn a_criteria_file_judges_scores_on_its_scale_records_and_replays() {
    let s = Setup::new();
    let cache = format!("rw:path={}", in_dir(s.dir.path(), "cache.sqlite"));
    let v = s.score(&cache);
    // q1 weighted by its verdict token (0.5·0.75 + 0.5·0.25), q2 the sampled 2 (0.25), q3
    // invalid: out of the mean.
    assert_eq!(figure(&v, "q1"), Some(0.5));
    assert_eq!(figure(&v, "q2"), Some(0.25));
    assert_eq!(figure(&v, "q3"), None);
    assert_eq!(v["metrics"]["polite"].as_f64(), Some(0.375));
    // Only the criteria judge ran, two samples a query; q3's three calls a sample (two repairs).
    let judges = v["judges"].as_array().unwrap();
    assert_eq!(judges.len(), 1, "{judges:?}");
    let j = &judges[0];
    assert_eq!(j["metric"], "polite");
    assert_eq!(
        (
            j["samples"].as_u64(),
            j["ok"].as_u64(),
            j["invalid"].as_u64()
        ),
        (Some(6), Some(4), Some(2))
    );
    assert_eq!(j["usage"]["calls"], 2 + 2 + 2 * 3);
    assert_eq!(j["usage"]["repairs"], 2 * 2);
    let live_calls = s.calls.load(Ordering::SeqCst);
    assert_eq!(live_calls, 10);
    // The request asks for a reason and a verdict on the scale, with log-probabilities.
    let first = s.bodies.lock().unwrap()[0].clone();
    assert_eq!(first["logprobs"], true);
    assert_eq!(first["top_logprobs"], 10);
    let schema = &first["response_format"]["json_schema"];
    assert_eq!(schema["name"], "polite");
    assert_eq!(
        schema["schema"]["properties"]["verdict"],
        json!({"type": "integer", "minimum": 1, "maximum": 5})
    );
    let prompt = first["messages"][0]["content"].as_str().unwrap();
    assert!(
        prompt.contains("1. Read the answer.\n2. Note anything curt or rude."),
        "{prompt}"
    );

    // Each verdict keeps the judge's scale, so a labelling page can offer it.
    let q2 = v["per_query"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["id"] == "q2")
        .unwrap();
    assert_eq!(
        q2["judges"][0]["samples"][0]["details"]["scale"],
        json!([["1", 0.0], ["2", 0.25], ["3", 0.5], ["4", 0.75], ["5", 1.0]]),
        "{q2}"
    );

    // The run record names the criterion's version; compare reads its figures.
    let (_, shown, _) = s.run(&["runs", "show", "latest", "--json"]);
    let run: Value = serde_json::from_str(shown.trim()).unwrap();
    let prompts = run["config"]["judge_prompts"].as_array().unwrap();
    assert_eq!(prompts.len(), 1);
    let version = prompts[0].as_str().unwrap();
    assert!(
        version.starts_with("polite/") && version.ends_with("/1"),
        "{version}"
    );

    // Replayed from the cache: the same figures with no call.
    let replay = format!("replay:path={}", in_dir(s.dir.path(), "cache.sqlite"));
    let again = s.score(&replay);
    assert_eq!(
        s.calls.load(Ordering::SeqCst),
        live_calls,
        "no call on replay"
    );
    assert_eq!(again["metrics"], v["metrics"]);
    let (code, compared, stderr) = s.run(&["compare", "latest~1", "latest", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let compared: Value = serde_json::from_str(compared.trim()).unwrap();
    let polite = compared["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "polite")
        .unwrap_or_else(|| panic!("compare reports polite: {compared}"));
    assert_eq!(polite["queries"], 2, "{polite}");

    // An edited criterion is a new version, so the cache has nothing for it.
    std::fs::write(
        s.dir.path().join("judges/polite.md"),
        CRITERIA.replace("never scolds", "never blames"),
    )
    .unwrap();
    let args = [
        "score",
        "--dataset",
        "d.jsonl",
        "--answers",
        "a.jsonl",
        "--judge-model",
        "judge-m",
        "--judge-url",
        &s.url,
        "--criteria",
        "judges/polite.md",
        "--cache",
        &replay,
    ];
    let (code, _, stderr) = s.run(&args);
    assert_ne!(code, 0);
    assert!(stderr.contains("cache: 0 hits, 3 misses"), "{stderr}");
    assert!(stderr.contains("0 of 3 samples scored"), "{stderr}");
    assert_eq!(s.calls.load(Ordering::SeqCst), live_calls);
}

#[test]
fn a_bad_criteria_file_is_a_usage_error_naming_the_file_and_line() {
    let s = Setup::new();
    std::fs::write(
        s.dir.path().join("judges/bad.md"),
        "---\nname: polite\nscale: often\n---\nBe nice.\n",
    )
    .unwrap();
    let args = [
        "score",
        "--dataset",
        "d.jsonl",
        "--answers",
        "a.jsonl",
        "--judge-model",
        "judge-m",
        "--judge-url",
        &s.url,
        "--criteria",
        "judges/bad.md",
    ];
    let (code, _, stderr) = s.run(&args);
    assert_ne!(code, 0);
    assert!(stderr.contains("judges/bad.md:3"), "{stderr}");
    assert!(stderr.contains("unknown scale `often`"), "{stderr}");
    assert_eq!(s.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn no_logprobs_scores_the_sampled_verdict_and_asks_for_none() {
    let s = Setup::new();
    let v = s.score_with("off", &["--no-logprobs"]);
    // q1's sampled 4 (0.75), not its weighted 0.5.
    assert_eq!(figure(&v, "q1"), Some(0.75));
    assert_eq!(figure(&v, "q2"), Some(0.25));
    let first = s.bodies.lock().unwrap()[0].clone();
    assert!(
        first.get("logprobs").is_none() && first.get("top_logprobs").is_none(),
        "{first}"
    );
}
