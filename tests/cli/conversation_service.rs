//! A RAG service in its conversation mode (`http:url=…` with the history or a session id in
//! the body): played through the library (`HttpRag::next_turn`) and `rag-eval eval --rag …
//! --conversations`, against an agent served on 127.0.0.1 that runs its search tool itself
//! and asks for its calculator's results.

use crate::support::{Reply, TestServer};
use rag_eval::conversation::play::play;
use rag_eval::conversation::score::agent_figures;
use rag_eval::conversation::{Reader, Role};
use rag_eval::service::HttpRag;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};

const CONVERSATIONS: &str = "tests/fixtures/conversation/conversations.jsonl";

/// The agent: a question with "times" in it calls the calculator (OpenAI's shape, no answer
/// yet); a tool's result is answered with; any other question is searched by the service
/// itself, which reports the call with its result and answers at once. It reads the last
/// turn of `messages` or of `new`, whichever the body carries, and keeps every body.
fn agent() -> (TestServer, Arc<Mutex<Vec<Value>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    let server = TestServer::start(move |req| {
        let body = req.json().unwrap();
        kept.lock().unwrap().push(body.clone());
        let turns = body.get("messages").or(body.get("new")).unwrap();
        let last = turns.as_array().unwrap().last().unwrap();
        let content = last["content"].as_str().unwrap();
        let reply = match last["role"].as_str().unwrap() {
            "tool" => json!({"answer": format!("{content}."), "contexts": []}),
            _ if content.contains(" times ") => json!({"tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "calculator", "arguments": "{\"expr\":\"3*5\"}"}}]}),
            _ => {
                let found = format!("found for {content}");
                json!({"answer": found, "contexts": [{"text": found}], "tool_calls": [
                    {"name": "search", "args": {"query": content}, "result": found}]})
            }
        };
        Reply::json(200, &reply)
    });
    (server, bodies)
}

fn conversations() -> Vec<rag_eval::conversation::Conversation> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(CONVERSATIONS);
    let text = std::fs::read_to_string(path).unwrap();
    Reader::new(text.as_bytes(), CONVERSATIONS.into())
        .collect::<Result<_, _>>()
        .unwrap()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn a_service_is_sent_the_history_or_only_the_new_turns_of_a_session() {
    let (server, bodies) = agent();
    let larkspur = &conversations()[0];
    let played = |body: &str| {
        bodies.lock().unwrap().clear();
        let spec = format!("http:url={},body={body}", server.url("/chat"));
        let rag = HttpRag::from_spec(&spec).unwrap();
        let played = block_on(play(larkspur, None, |so_far| {
            let rag = &rag;
            async move { rag.next_turn("larkspur", &so_far, None).await.unwrap() }
        }))
        .unwrap();
        (played, bodies.lock().unwrap().clone())
    };

    let (history, sent) = played(r#""{\"sid\":\"{session_id}\",\"messages\":\"{messages}\"}""#);
    let shape: Vec<(Role, &str, usize)> = history
        .turns
        .iter()
        .map(|t| (t.role, t.content.as_str(), t.tool_calls.len()))
        .collect();
    let found = "found for What colour are larkspur flowers?";
    use Role::*;
    assert_eq!(
        shape,
        [
            (User, "What colour are larkspur flowers?", 0),
            // The service ran its search and answered in one response.
            (Assistant, "", 1),
            (Tool, found, 0),
            (Assistant, found, 0),
            (User, "What is 3 times 5?", 0),
            (Assistant, "", 1),
            // The recorded result of the calculator, fed back.
            (Tool, "15", 0),
            (Assistant, "15.", 0),
        ]
    );
    assert_eq!(history.turns[3].contexts.len(), 1);
    let figures = agent_figures(&history);
    assert_eq!(figures[0], Some(1.0), "tool_call_accuracy: {figures:?}");
    // Three requests: one per user turn, and one with the calculator's result.
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert_eq!(sent[2]["sid"], "larkspur");
    let last = sent[2]["messages"].as_array().unwrap();
    assert_eq!(last.len(), 7, "the whole history: {last:?}");
    assert_eq!(
        last[5],
        json!({"role": "assistant", "content": "",
               "tool_calls": [{"id": "c1", "name": "calculator", "args": {"expr": "3*5"}}]})
    );
    assert_eq!(
        last[6],
        json!({"role": "tool", "content": "15", "tool_call_id": "c1"})
    );

    // With a session id, only what the service has not seen.
    let (session, sent) = played(r#""{\"session\":\"{session_id}\",\"new\":\"{new_messages}\"}""#);
    assert_eq!(session.turns, history.turns);
    let new: Vec<&Value> = sent.iter().map(|b| &b["new"]).collect();
    assert_eq!(
        new,
        [
            &json!([{"role": "user", "content": "What colour are larkspur flowers?"}]),
            &json!([{"role": "user", "content": "What is 3 times 5?"}]),
            &json!([{"role": "tool", "content": "15", "tool_call_id": "c1"}]),
        ]
    );
    assert!(sent.iter().all(|b| b["session"] == "larkspur"), "{sent:?}");
}

#[test]
fn malformed_tool_calls_are_named_with_the_conversation_and_the_pointer() {
    let server =
        TestServer::start(|_| Reply::json(200, &json!({"tool_calls": [{"args": {"q": 1}}]})));
    let rag = HttpRag::from_spec(&format!("http:url={}", server.url("/chat"))).unwrap();
    let turns = vec![rag_eval::conversation::Turn::new(Role::User, "hi")];
    let e = block_on(rag.next_turn("c9", &turns, None))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("conversation `c9`, after turn 1: `/tool_calls/0` has no `name`"),
        "{e}"
    );
}

#[test]
fn eval_plays_a_conversations_file_through_the_service() {
    let (server, _) = agent();
    let dir = tempfile::tempdir().unwrap();
    let spec = format!("http:url={}", server.url("/chat"));
    let args = |file: &str| {
        vec![
            "eval".to_owned(),
            "--rag".to_owned(),
            spec.clone(),
            "--conversations".to_owned(),
            file.to_owned(),
            "--corpus".to_owned(),
            "examples/data/corpus".to_owned(),
            "--json".to_owned(),
            "--no-record".to_owned(),
        ]
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::cli_support::run_in(
            Path::new(env!("CARGO_MANIFEST_DIR")),
            dir.path().join("runs.sqlite"),
            &args,
        )
    };
    let (code, out, err) = run(args(CONVERSATIONS));
    assert_eq!(code, 0, "{err}");
    let card: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(card["level"], "conversation");
    let ids: Vec<&str> = card["per_query"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["larkspur", "tides"]);
    assert_eq!(card["metrics"]["tool_call_accuracy"], 1.0);
    assert_eq!(card["per_query"][0]["turns"].as_array().unwrap().len(), 8);
    // `tides` sets no max_steps: its steps_within_max is missing, and counted; it has no
    // reference answer either, so no answer figure.
    assert_eq!(card["missing"]["steps_within_max"], 1);
    assert_eq!(card["missing"]["token_f1"], 1);

    // A conversation whose calls have no recorded result ends the command, named.
    let strange = dir.path().join("strange.jsonl");
    std::fs::write(
        &strange,
        r#"{"id":"s1","turns":[{"role":"user","content":"What is 2 times 2?"}]}"#,
    )
    .unwrap();
    let (code, _, err) = run(args(strange.to_str().unwrap()));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("conversation `s1`, user turn 1, step 1: the system called `calculator`"),
        "{err}"
    );
    // An embedder serves a judge: without one it would be unused, and says so.
    let mut embedded = args(CONVERSATIONS);
    embedded.extend(["--embedder".to_owned(), "hashing".to_owned()]);
    let (code, _, err) = run(embedded);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--embedder with --conversations"), "{err}");
    // Conversations are played through a service.
    let (code, _, err) = run(vec![
        "eval".into(),
        "--conversations".into(),
        CONVERSATIONS.into(),
        "--corpus".into(),
        "examples/data/corpus".into(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--rag"), "{err}");
}

/// A played turn gets the figures a recorded one gets from `score --conversations`: the turn
/// that retrieved and answered is compared with its reference answer, and a conversation
/// without one has no answer figure, counted as missing.
#[test]
fn eval_gives_each_played_turn_its_answer_figures() {
    let (server, _) = agent();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"id":"same","turns":[{"role":"user","content":"Larkspur?"},"#,
            r#"{"role":"assistant","content":"recorded","reference_answer":"found for Larkspur?"}]}"#,
            "\n",
            r#"{"id":"half","turns":[{"role":"user","content":"Tides?"},"#,
            r#"{"role":"assistant","content":"recorded","reference_answer":"found tides"}]}"#,
            "\n",
            r#"{"id":"none","turns":[{"role":"user","content":"Bays?"}]}"#,
            "\n",
        ),
    )
    .unwrap();
    let spec = format!("http:url={}", server.url("/chat"));
    let (code, out, err) = crate::cli_support::run_in(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        dir.path().join("runs.sqlite"),
        &[
            "eval",
            "--rag",
            &spec,
            "--conversations",
            file.to_str().unwrap(),
            "--corpus",
            "examples/data/corpus",
            "--json",
            "--no-record",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let card: Value = serde_json::from_str(out.trim()).unwrap();
    // The service searched and answered: the answering turn (after its call and the tool's
    // result) holds the contexts and the figures.
    let turn = &card["per_query"][0]["turns"][3];
    assert_eq!(turn["content"], "found for Larkspur?", "{turn}");
    assert_eq!(turn["contexts"].as_array().unwrap().len(), 1, "{turn}");
    assert_eq!(turn["metrics"]["exact_match"], 1.0, "{turn}");
    assert_eq!(turn["metrics"]["token_f1"], 1.0, "{turn}");
    // "found tides" against "found for tides": precision 2/3, recall 1, F1 0.8.
    let half = &card["per_query"][1];
    assert_eq!(half["turns"][3]["metrics"]["exact_match"], 0.0, "{half}");
    let f1 = half["metrics"]["token_f1"].as_f64().unwrap();
    assert!((f1 - 0.8).abs() < 1e-9, "{half}");
    // The run's mean is over the conversations that have the figure.
    let mean = card["metrics"]["token_f1"].as_f64().unwrap();
    assert!((mean - 0.9).abs() < 1e-9, "{card}");
    assert_eq!(card["missing"]["token_f1"], 1, "{card}");
    assert!(card["per_query"][2]["metrics"].get("token_f1").is_none());
}
