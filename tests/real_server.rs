//! The whole path against a real model: llama.cpp's `llama-server` serving SmolLM2-135M
//! (`.ci/llama.sh` builds and starts it). `RAG_EVAL_EMBED_URL` is a server started with
//! `--embeddings --pooling mean`, `RAG_EVAL_LLM_URL` one for chat, both like
//! `http://127.0.0.1:8080/v1`; `RAG_EVAL_LLM_MODEL` names the model (default `smollm2`). A test
//! whose variable is unset prints `skipped: …` and passes; `.ci/run` sets them and fails if a
//! test skipped anyway.
//!
//! The model knows nothing the crate has a table for: its dimension (576) is learned from the
//! server's first answer, the way any local model's is.

use rag_eval::cache::{Cache, CacheMode, CachedEmbedder};
use rag_eval::embed::{Embedder, OpenAiEmbedder};
use rag_eval::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

fn server(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            eprintln!("skipped: set {var} to a llama-server's /v1 URL (.ci/llama.sh starts one)");
            None
        }
    }
}

fn model() -> String {
    std::env::var("RAG_EVAL_LLM_MODEL").unwrap_or_else(|_| "smollm2".into())
}

fn embedder(url: &str) -> Arc<OpenAiEmbedder> {
    Arc::new(
        OpenAiEmbedder::builder(model())
            .base_url(url)
            .api_key_env("RAG_EVAL_NO_KEY")
            .build()
            .unwrap(),
    )
}

fn cache(path: &Path, mode: CacheMode) -> Arc<Cache> {
    Arc::new(Cache::open(path.to_str().unwrap(), mode).unwrap())
}

#[test]
fn llama_server_embeddings_record_then_replay() {
    let Some(url) = server("RAG_EVAL_EMBED_URL") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    let texts: Vec<String> = (0..11)
        .map(|i| format!("Passage {i}: the harbor lantern burns until dawn."))
        .collect();

    // Recording: the dimension comes from the first answer.
    let live = embedder(&url);
    let first = CachedEmbedder::new(Arc::clone(&live), cache(&path, CacheMode::ReadWrite));
    assert_eq!(first.dimension(), 0, "a model the crate has no size for");
    let vectors = pollster::block_on(first.embed(&texts)).unwrap();
    let dimension = vectors[0].len();
    assert!(dimension > 0);
    assert!(vectors.iter().all(|v| v.len() == dimension));
    assert_eq!(first.dimension(), dimension);
    assert_ne!(vectors[0], vectors[1], "different texts, different vectors");
    let query = pollster::block_on(first.embed_query("when does the lantern burn?")).unwrap();
    assert_eq!(query.len(), dimension);
    let recorded = live.http_stats().requests;
    assert!(recorded > 0);
    first.cache().checkpoint().unwrap();
    drop(first);
    eprintln!(
        "recorded {} vectors of {dimension} in {recorded} requests",
        texts.len() + 1
    );

    // A second run against the live server makes no request.
    let live = embedder(&url);
    let second = CachedEmbedder::new(Arc::clone(&live), cache(&path, CacheMode::ReadWrite));
    assert_eq!(pollster::block_on(second.embed(&texts)).unwrap(), vectors);
    assert_eq!(
        pollster::block_on(second.embed_query("when does the lantern burn?")).unwrap(),
        query
    );
    assert_eq!(
        live.http_stats().requests,
        0,
        "the second run makes no request"
    );
    assert_eq!(second.dimension(), dimension, "learned from the cache");
    drop(second);

    // Replay through an embedder at another address where no server listens: the entries are
    // keyed by the model, not the server's address, and the inner embedder is never asked.
    let gone = embedder("http://127.0.0.1:9/v1");
    let replay = CachedEmbedder::new(Arc::clone(&gone), cache(&path, CacheMode::Replay));
    assert_eq!(pollster::block_on(replay.embed(&texts)).unwrap(), vectors);
    let err = pollster::block_on(replay.embed(&["never recorded".to_owned()]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("replay") && err.contains("never recorded"),
        "an unrecorded text is an error naming it: {err}"
    );
    assert_eq!(gone.http_stats().requests, 0);
}

fn bundled(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The providers example of `docs/guide/library.md` (chunker, embedder on a local server,
/// cache from the environment) evaluated on the bundled dataset, then replayed from the file to the same
/// figures without a request.
#[test]
fn llama_server_readme_pipeline_records_then_replays() {
    let Some(url) = server("RAG_EVAL_EMBED_URL") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let golden = dir.path().join("golden/rag-eval-cache.sqlite");
    std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
    let corpus =
        Corpus::from_folder(bundled("examples/data/corpus").to_str().unwrap(), None).unwrap();
    let AnyDataset::Token(questions) =
        rag_eval::dataset::load(bundled("examples/data/questions.jsonl").to_str().unwrap())
            .unwrap()
    else {
        panic!("the bundled dataset is token-level")
    };
    let evaluation = TokenLevelEvaluation::new(corpus, questions).unwrap();
    let metrics = token_level_metrics(SpanMode::Standard, None);

    let run = |url: &str, cache: Arc<Cache>| {
        let live = embedder(url);
        let pipeline = Pipeline::new(
            RecursiveCharacterChunker::new(400, 0),
            CachedEmbedder::new(Arc::clone(&live), cache),
        );
        let started = Instant::now();
        let result = evaluation.run_blocking(&pipeline, 5, &metrics).unwrap();
        (result, live.http_stats().requests, started.elapsed())
    };
    let recording = Arc::new(Cache::from_env_or(golden.to_str().unwrap()).unwrap());
    assert_eq!(recording.mode(), CacheMode::ReadWrite);
    let (recorded, requests, took) = run(&url, Arc::clone(&recording));
    recording.checkpoint().unwrap();
    drop(recording);
    let recall = recorded.scores.metrics.get("span_recall@5").unwrap();
    assert!(requests > 0);
    assert!((0.0..=1.0).contains(&recall));
    eprintln!("recorded: span_recall@5 {recall:.3} in {requests} requests, {took:?}");

    let (replayed, requests, took) = run(
        &url,
        Arc::new(Cache::open(golden.to_str().unwrap(), CacheMode::Replay).unwrap()),
    );
    assert_eq!(requests, 0);
    assert_eq!(replayed.scores.metrics, recorded.scores.metrics);
    eprintln!("replayed: the same figures in {took:?}, no request");
}

/// `rag-eval generate` at its default concurrency against a one-slot server: requests queue,
/// the server is slow but alive, and no request is sent twice.
#[test]
fn llama_server_generate_at_default_concurrency_retries_nothing() {
    let Some(url) = server("RAG_EVAL_LLM_URL") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("real.jsonl");
    let started = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["-v", "generate", "token", "--corpus"])
        .arg(bundled("examples/data/corpus"))
        .args([
            "--glob",
            "{glossary,changelog,overview,troubleshooting}.md",
            "-o",
        ])
        .arg(&out)
        .args(["--queries-per-doc", "2", "--model", &model()])
        .args(["--base-url", &url, "--temperature", "0"])
        // The server's own cap (`-n 1024` in .ci/llama.sh): the default 2048 would let the
        // small model ramble twice as long per request.
        .args(["--max-tokens", "1024"])
        .args(["--api-key-env", "RAG_EVAL_NO_KEY"])
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&o.stderr);
    eprintln!("{err}");
    // A 135M-parameter model often asks questions whose excerpts cannot be found in the
    // document; a run that keeps none ends with exit 1 and says so. What this test is about is
    // the transport: every request answered once, none retried.
    let kept_none = err.contains("no rows were generated: every question was dropped");
    assert!(
        o.status.code() == Some(0) || (o.status.code() == Some(1) && kept_none),
        "{err}"
    );
    assert!(err.contains(" 0 retried requests"), "{err}");
    assert!(!err.contains("retrying"), "{err}");
    eprintln!("4 documents at the default concurrency: {took:?}");
    if kept_none {
        eprintln!("notice: the model's questions were all dropped; no rows to validate");
        return;
    }

    let v = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["dataset", "validate", "--corpus"])
        .arg(bundled("examples/data/corpus"))
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        v.status.code(),
        Some(0),
        "the dataset validates: {}",
        String::from_utf8_lossy(&v.stderr)
    );
}

/// Answers generated and judged (faithfulness, answer relevancy, answer match) by the real
/// model, twice per query at temperature 0.7, through a cache; then the same run replayed from
/// the cache with no request to either server. A 135M model judges badly, so the figures are
/// not asserted: the path is — every request with its schema, every sample `ok`, `undetermined`
/// or `invalid` (never `error`: the server answers), repairs counted, the tokens the server
/// reported summed, and the replay identical.
#[test]
fn llama_server_judges_record_then_replay() {
    use rag_eval::cache::{CachedEmbedder, CachedLlm};
    use rag_eval::generator::{Generator, LlmGenerator};
    use rag_eval::judge::{
        judge_all, AnswerMatch, AnswerRelevancy, Faithfulness, Judge, JudgeConfig, JudgeInput,
        JudgeRun, JudgeStatus,
    };
    use rag_eval::llm::OpenAiChat;

    let (Some(chat_url), Some(embed_url)) =
        (server("RAG_EVAL_LLM_URL"), server("RAG_EVAL_EMBED_URL"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("judges.sqlite");
    let chat = || {
        Arc::new(
            OpenAiChat::builder(model())
                .base_url(&chat_url)
                .api_key_env("RAG_EVAL_NO_KEY")
                .build()
                .unwrap(),
        )
    };
    let doc = "The harbor lantern is lit at dusk by the keeper. It burns whale oil and stays lit \
               until dawn. In 1902 the lantern was moved to the north pier.";
    let context = |from: usize, to: usize| {
        let text: String = doc.chars().skip(from).take(to - from).collect();
        RetrievedChunk::new(PositionAwareChunk::new("harbor.md", from, to, text), 1.0)
    };
    let contexts = vec![
        context(0, 49),
        context(50, 96),
        context(97, doc.chars().count()),
    ];
    let questions = [
        (
            "q1",
            "When is the harbor lantern lit?",
            "At dusk, by the keeper.",
        ),
        (
            "q2",
            "Where was the lantern moved in 1902?",
            "To the north pier.",
        ),
    ];
    let config = JudgeConfig {
        samples: 2,
        temperature: 0.7,
        max_tokens: 256,
        repairs: 1,
        concurrency: 1,
        ..JudgeConfig::default()
    };

    let run = |mode: CacheMode| {
        let live = chat();
        let cache = cache(&path, mode);
        let llm = Arc::new(CachedLlm::new(Arc::clone(&live), Arc::clone(&cache)));
        let live_embed = embedder(&embed_url);
        let embed = CachedEmbedder::new(Arc::clone(&live_embed), Arc::clone(&cache));
        let generator = LlmGenerator::new(Arc::clone(&llm)).with_max_tokens(Some(128));
        let answers: Vec<_> = questions
            .iter()
            .map(|(_, q, _)| pollster::block_on(generator.generate(q, &contexts)).unwrap())
            .collect();
        let inputs: Vec<JudgeInput> = questions
            .iter()
            .zip(&answers)
            .map(|((id, q, r), a)| JudgeInput {
                query_id: id,
                question: q,
                answer: a,
                reference: Some(r),
            })
            .collect();
        let judges: Vec<Box<dyn Judge>> = vec![
            Box::new(Faithfulness::new(Arc::clone(&llm))),
            Box::new(AnswerRelevancy::new(Arc::clone(&llm), embed)),
            Box::new(AnswerMatch::new(Arc::clone(&llm))),
        ];
        let runs: Vec<JudgeRun> = judges
            .iter()
            .map(|j| pollster::block_on(judge_all(j.as_ref(), &inputs, &config)))
            .collect();
        (
            answers,
            runs,
            live.requests(),
            live.usage(),
            live_embed.usage().requests,
            generator.usage(),
        )
    };

    let started = Instant::now();
    let (answers, recorded, requests, usage, _, answer_usage) = run(CacheMode::ReadWrite);
    let took = started.elapsed();
    let mut judge_calls = 0;
    let mut judge_tokens = 0;
    for r in &recorded {
        let s = &r.summary;
        eprintln!(
            "{}: mean {:?}, ok {}, undetermined {}, invalid {}, error {}, {} calls ({} repairs), {} tokens",
            s.metric, s.mean, s.ok, s.undetermined, s.invalid, s.error, s.usage.calls,
            s.usage.repairs, s.usage.tokens()
        );
        assert_eq!(s.samples, 4);
        assert_eq!(s.error, 0, "the server answered every request: {r:?}");
        assert_eq!(s.ok + s.undetermined + s.invalid, 4);
        for j in &r.judgements {
            for sample in &j.samples {
                // An invalid sample took every repair, or stopped at the answer the token limit
                // cut off; a valid one fewer.
                if sample.status == JudgeStatus::Invalid {
                    eprintln!(
                        "  {} sample {} invalid: {:?}",
                        j.query_id, sample.sample, sample.message
                    );
                    let message = sample
                        .message
                        .as_deref()
                        .expect("an invalid sample says why");
                    if message.contains("cut off by the token limit") {
                        assert!(sample.usage.repairs <= u64::from(config.repairs));
                    } else {
                        assert_eq!(
                            sample.usage.repairs,
                            u64::from(config.repairs),
                            "{sample:?}"
                        );
                    }
                }
                assert!(sample.usage.repairs < sample.usage.calls.max(1));
            }
        }
        judge_calls += s.usage.calls;
        judge_tokens += s.usage.tokens();
    }
    assert!(answers.iter().all(|a| a.contexts == contexts));
    // Every chat request went to the server once: two answers plus every judge call.
    assert_eq!(requests, 2 + judge_calls);
    assert!(
        judge_calls >= 8,
        "at least faithfulness and answer match called per sample"
    );
    // The tokens the server reported, split between answering and judging without a remainder.
    assert!(judge_tokens > 0 && answer_usage.total() > 0, "{usage:?}");
    assert_eq!(usage.total(), answer_usage.total() + judge_tokens);
    eprintln!("recorded: 2 answers and {judge_calls} judge calls, {judge_tokens} judge tokens, in {took:?}");

    let started = Instant::now();
    let (replayed_answers, replayed, requests, _, embed_requests, replayed_usage) =
        run(CacheMode::Replay);
    assert_eq!(replayed_usage, answer_usage, "recorded token counts replay");
    assert_eq!((requests, embed_requests), (0, 0));
    assert_eq!(replayed_answers, answers);
    assert_eq!(replayed, recorded);
    eprintln!(
        "replayed: the same judgements in {:?}, no request",
        started.elapsed()
    );
}

/// A criteria judge on a 1–5 scale against the real model: the server holds the verdict to the
/// schema and returns its tokens' log-probabilities, so each score is their weighted mean (not
/// only one of the five grid values); recorded, then replayed with no request.
#[test]
fn llama_server_criteria_judge_weights_its_verdicts_and_replays() {
    use rag_eval::cache::CachedLlm;
    use rag_eval::judge::{
        judge_all, Criteria, CriteriaJudge, JudgeConfig, JudgeDetails, JudgeInput, JudgeStatus,
    };
    use rag_eval::llm::OpenAiChat;

    let Some(chat_url) = server("RAG_EVAL_LLM_URL") else {
        return;
    };
    let criteria = Criteria::parse(
        "---\nname: polite\nscale: 1-5\ninputs: question, answer\n---\nThe answer is courteous.\n",
        "polite.md",
    )
    .unwrap();
    let contexts = vec![RetrievedChunk::new(
        PositionAwareChunk::new("harbor.md", 0, 27, "The lantern is lit at dusk."),
        1.0,
    )];
    let answers = [
        RagAnswer {
            answer: "Thank you for asking! The lantern is lit at dusk.".into(),
            contexts: contexts.clone(),
        },
        RagAnswer {
            answer: "Figure it out yourself.".into(),
            contexts,
        },
    ];
    let inputs: Vec<JudgeInput> = answers
        .iter()
        .enumerate()
        .map(|(i, a)| JudgeInput {
            query_id: ["q1", "q2"][i],
            question: "When is the lantern lit?",
            answer: a,
            reference: None,
        })
        .collect();
    let config = JudgeConfig {
        samples: 2,
        max_tokens: 256,
        concurrency: 1,
        ..JudgeConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("criteria.sqlite");
    let run = |mode: CacheMode| {
        let live = Arc::new(
            OpenAiChat::builder(model())
                .base_url(&chat_url)
                .api_key_env("RAG_EVAL_NO_KEY")
                .build()
                .unwrap(),
        );
        let llm = CachedLlm::new(Arc::clone(&live), cache(&path, mode));
        let judge = CriteriaJudge::new(llm, criteria.clone());
        let run = pollster::block_on(judge_all(&judge, &inputs, &config));
        (run, live.requests())
    };
    let (recorded, requests) = run(CacheMode::ReadWrite);
    let s = &recorded.summary;
    eprintln!(
        "polite: mean {:?}, ok {}, invalid {}, error {}, {} calls ({} repairs)",
        s.mean, s.ok, s.invalid, s.error, s.usage.calls, s.usage.repairs
    );
    assert_eq!((s.samples, s.error), (4, 0), "{recorded:?}");
    assert_eq!(requests, s.usage.calls);
    let weighted = recorded
        .judgements
        .iter()
        .flat_map(|j| &j.samples)
        .filter(|x| x.status == JudgeStatus::Ok)
        .filter(|x| {
            matches!(&x.details, JudgeDetails::Criteria { probabilities: Some(p), .. } if !p.is_empty())
        })
        .count();
    assert!(
        weighted >= 1,
        "llama-server returns log-probabilities: at least one score is weighted: {recorded:?}"
    );
    for x in recorded.judgements.iter().flat_map(|j| &j.samples) {
        if let Some(score) = x.score {
            assert!((0.0..=1.0).contains(&score), "{x:?}");
        }
    }
    let (replayed, requests) = run(CacheMode::Replay);
    assert_eq!(requests, 0, "replayed with no request");
    assert_eq!(replayed, recorded);
}

/// The share of `invalid` faithfulness answers of the real model on the 50 answers of the
/// judges bench (`benches/fixtures/judges/answers.jsonl`), one sample each, 1,024 tokens at
/// most, no cache. Slow (minutes at SmolLM2's speed), so ignored; benches/README.md records
/// its figures:
///
/// ```sh
/// source .ci/llama.sh
/// cargo test --all-features --test real_server llama_server_faithfulness_invalid_share -- --ignored --nocapture
/// ```
#[test]
#[ignore = "minutes against a real server; run by hand for benches/README.md"]
fn llama_server_faithfulness_invalid_share() {
    use rag_eval::judge::{judge_all, Faithfulness, JudgeConfig, JudgeInput, JudgeStatus};
    use rag_eval::llm::OpenAiChat;

    let Some(chat_url) = server("RAG_EVAL_LLM_URL") else {
        return;
    };
    let text = std::fs::read_to_string(bundled("benches/fixtures/judges/answers.jsonl")).unwrap();
    let rows: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let answers: Vec<RagAnswer> = rows
        .iter()
        .map(|r| RagAnswer {
            answer: r["answer"].as_str().unwrap().to_owned(),
            contexts: r["contexts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    let at = |k: &str| c[k].as_u64().unwrap() as usize;
                    let chunk = PositionAwareChunk::new(
                        c["doc_id"].as_str().unwrap(),
                        at("start"),
                        at("end"),
                        c["text"].as_str().unwrap(),
                    );
                    RetrievedChunk::new(chunk, 1.0)
                })
                .collect(),
        })
        .collect();
    let inputs: Vec<JudgeInput> = rows
        .iter()
        .zip(&answers)
        .map(|(r, a)| JudgeInput {
            query_id: r["id"].as_str().unwrap(),
            question: r["question"].as_str().unwrap(),
            answer: a,
            reference: None,
        })
        .collect();
    let chat = OpenAiChat::builder(model())
        .base_url(&chat_url)
        .api_key_env("RAG_EVAL_NO_KEY")
        .build()
        .unwrap();
    let config = JudgeConfig {
        concurrency: 1,
        ..JudgeConfig::default()
    };
    let started = Instant::now();
    let run = pollster::block_on(judge_all(&Faithfulness::new(&chat), &inputs, &config));
    let s = &run.summary;
    let cut = run
        .judgements
        .iter()
        .flat_map(|j| &j.samples)
        .filter(|x| {
            x.status == JudgeStatus::Invalid
                && x.message
                    .as_deref()
                    .is_some_and(|m| m.contains("token limit"))
        })
        .count();
    println!(
        "faithfulness on {} answers: {} ok, {} undetermined, {} invalid ({} cut off by the token \
         limit), {} error; {} calls ({} repairs), {} prompt + {} completion tokens; {:.1} s",
        s.queries,
        s.ok,
        s.undetermined,
        s.invalid,
        cut,
        s.error,
        s.usage.calls,
        s.usage.repairs,
        s.usage.prompt_tokens,
        s.usage.completion_tokens,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(s.queries, 50);
}

/// A conversation through the real model: faithfulness of its one retrieving turn to that
/// turn's contexts, and goal accuracy of the whole conversation against its reference outcome
/// (two judged samples, each at most three calls); recorded, then replayed with no request.
#[test]
fn llama_server_conversation_goal_and_turn_faithfulness_record_then_replay() {
    use rag_eval::cache::CachedLlm;
    use rag_eval::conversation::score::{run_result, Scorer};
    use rag_eval::conversation::Reader;
    use rag_eval::judge::{Faithfulness, GoalAccuracy, JudgeConfig, JudgeStatus};
    use rag_eval::llm::OpenAiChat;

    let Some(chat_url) = server("RAG_EVAL_LLM_URL") else {
        return;
    };
    let line = concat!(
        r#"{"id":"lantern","turns":["#,
        r#"{"role":"user","content":"When is the harbor lantern lit?"},"#,
        r#"{"role":"assistant","content":"The lantern is lit at dusk.","contexts":[{"doc_id":"harbor.md","start":0,"end":27,"text":"The lantern is lit at dusk."}]}"#,
        r#"],"reference_outcome":"The user learns that the lantern is lit at dusk."}"#
    );
    let conversation = Reader::new(line.as_bytes(), "chat.jsonl".into())
        .next()
        .unwrap()
        .unwrap();
    let config = JudgeConfig {
        concurrency: 1,
        ..JudgeConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conversation.sqlite");
    let run = |mode: CacheMode| {
        let live = Arc::new(
            OpenAiChat::builder(model())
                .base_url(&chat_url)
                .api_key_env("RAG_EVAL_NO_KEY")
                .build()
                .unwrap(),
        );
        let llm = Arc::new(CachedLlm::new(Arc::clone(&live), cache(&path, mode)));
        let scorer = Scorer::new(3)
            .with_turn_judge(Arc::new(Faithfulness::new(Arc::clone(&llm))))
            .with_conversation_judge(Arc::new(GoalAccuracy::new(Arc::clone(&llm))))
            .with_judge_config(config.clone());
        let result = pollster::block_on(scorer.score(&conversation)).unwrap();
        (result, live.requests())
    };
    let (recorded, requests) = run(CacheMode::ReadWrite);
    let turn = &recorded.turns[1];
    let faithfulness = &turn.judges[0];
    let goal = &recorded.judges[0];
    assert_eq!(faithfulness.metric, "faithfulness");
    assert_eq!(goal.metric, "goal_accuracy");
    let calls = faithfulness.usage().calls + goal.usage().calls;
    eprintln!(
        "faithfulness {:?} ({:?} {:?}), goal_accuracy {:?} ({:?} {:?}); {calls} calls",
        faithfulness.score(),
        faithfulness.samples[0].status,
        faithfulness.samples[0].message,
        goal.score(),
        goal.samples[0].status,
        goal.samples[0].message,
    );
    assert_eq!(requests, calls, "every call reached the server once");
    for j in [faithfulness, goal] {
        let s = &j.samples[0];
        // The server answers: never a transport error. A score is a figure in [0, 1] under the
        // metric's name; an answer that broke the schema is no figure, never a 0.
        assert_ne!(s.status, JudgeStatus::Error, "{s:?}");
        let figure = if j.metric == "faithfulness" {
            turn.metrics.get("faithfulness")
        } else {
            recorded.metrics.get("goal_accuracy")
        };
        assert_eq!(figure, s.score, "{s:?}");
        if let Some(score) = s.score {
            assert!((0.0..=1.0).contains(&score), "{s:?}");
        }
    }
    assert_eq!(
        recorded.metrics.get("faithfulness"),
        turn.metrics.get("faithfulness"),
        "one retrieving turn: the conversation's figure is its turn's"
    );
    let (replayed, requests) = run(CacheMode::Replay);
    assert_eq!(requests, 0, "replayed with no request");
    assert_eq!(replayed, recorded);
    assert_eq!(run_result(vec![replayed]).queries, 1);
}
