//! LLM calls, tokens and wall time of `faithfulness` + `answer_relevancy` per judged answer,
//! against ragas 0.4.3's metrics of the same names, on the same 50 answers and the same local
//! OpenAI-compatible server, at the same concurrency.
//!
//! ```sh
//! bash benches/scripts/ragas_setup.sh       # once: benches/scripts/.venv-ragas
//! RAG_EVAL_LLM_URL=http://127.0.0.1:PORT/v1 RAG_EVAL_EMBED_URL=http://127.0.0.1:PORT2/v1 \
//!   cargo bench --features openai --bench judges -- [--reps 3] [--concurrency 2] [--limit N] [--max-tokens 1024] [--ours-only]
//! ```
//!
//! Both sides talk to the servers through `benches/scripts/llm_proxy.py` (one proxy for chat,
//! one for embeddings), which counts requests and sums the `usage` tokens the server reports,
//! so neither side's own accounting is used. Repetitions alternate which side goes first. Our
//! side: `Faithfulness` and `AnswerRelevancy` (3 questions, ragas' default strictness) over the
//! fixture, `judge_all` at concurrency C, no cache. The peer: `benches/scripts/ragas_judges.py`
//! with ragas' `evaluate(…, RunConfig(max_workers=C))`.
//!
//! The answers are `benches/fixtures/judges/answers.jsonl` (how they were made: the README
//! beside it); `-- --make-fixture` writes them again with `RAG_EVAL_LLM_URL`. Without the
//! fixture or the servers the bench prints a notice and exits; without the ragas venv it
//! measures our side only. Under `cargo test --benches` it judges the fixture once with a
//! scripted model and the hashing embedder (no server), checking the calls per answer.

use rag_eval::chunk::{PositionAwareChunk, RetrievedChunk};
use rag_eval::chunker::RecursiveCharacterChunker;
use rag_eval::corpus::Corpus;
use rag_eval::dataset::AnyDataset;
use rag_eval::embed::{Embedder, HashingEmbedder, OpenAiEmbedder};
use rag_eval::generator::{Generator, LlmGenerator, RagAnswer};
use rag_eval::judge::{
    judge_all, AnswerRelevancy, Faithfulness, JudgeConfig, JudgeInput, JudgeRun, JudgeSummary,
};
use rag_eval::llm::{ChatRequest, ChatResponse, LlmClient, OpenAiChat, TokenUsage};
use rag_eval::retrieve::Bm25Retriever;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

const FIXTURE: &str = "benches/fixtures/judges/answers.jsonl";
/// Chunks given to the generator (and so to the judges) per question.
const K: usize = 3;
/// ragas' default `strictness` for answer relevancy.
const QUESTIONS: usize = 3;

/// Ten questions on the bundled corpus that `examples/data/questions.jsonl` does not ask,
/// so the fixture has 50.
const EXTRA_QUESTIONS: [&str; 10] = [
    "What is the default path of the Larkspur server's configuration file?",
    "How is the storage.max_connections option set through an environment variable?",
    "What is the largest request body the server accepts by default?",
    "Which storage drivers can Larkspur use, and which one is the default?",
    "How long does SQLite wait for the write lock by default?",
    "In which order does Larkspur evaluate the rules of a flag?",
    "What does every context receive when a flag is switched off in an environment?",
    "Which hash function do the SDKs use for percentage rollouts?",
    "What is the finest possible step of a percentage rollout?",
    "Which server option must be set when single sign-on is enabled?",
];

/// One line of the fixture: an answers-file line (`id`, `answer`, `contexts` with `text`) plus
/// the question, so ragas reads exactly what we judge.
#[derive(Serialize, Deserialize)]
struct Row {
    id: String,
    question: String,
    answer: String,
    contexts: Vec<Context>,
}

#[derive(Serialize, Deserialize)]
struct Context {
    doc_id: String,
    start: usize,
    end: usize,
    text: String,
    score: f32,
}

impl Row {
    fn rag_answer(&self) -> RagAnswer {
        RagAnswer {
            answer: self.answer.clone(),
            contexts: self
                .contexts
                .iter()
                .map(|c| {
                    RetrievedChunk::new(
                        PositionAwareChunk::new(c.doc_id.as_str(), c.start, c.end, c.text.clone()),
                        c.score,
                    )
                })
                .collect(),
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load_fixture(path: &Path) -> Result<Vec<Row>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
        })
        .collect()
}

fn arg_value<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    let i = args.iter().position(|a| a == name)?;
    args.get(i + 1)?.parse().ok()
}

fn env_url(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

fn model() -> String {
    std::env::var("RAG_EVAL_LLM_MODEL").unwrap_or_else(|_| "smollm2".into())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime")
}

fn chat(url: &str) -> Arc<OpenAiChat> {
    Arc::new(
        OpenAiChat::builder(model())
            .base_url(url)
            .api_key_env("RAG_EVAL_NO_KEY")
            .build()
            .expect("chat client"),
    )
}

fn embedder(url: &str) -> Arc<OpenAiEmbedder> {
    Arc::new(
        OpenAiEmbedder::builder(model())
            .base_url(url)
            .api_key_env("RAG_EVAL_NO_KEY")
            .build()
            .expect("embeddings client"),
    )
}

/// The 50 answers: BM25 over the bundled corpus (400-character recursive chunks), the top
/// `K` chunks to `LlmGenerator` (built-in prompt, temperature 0, at most 64 tokens).
fn make_fixture(url: &str, out: &Path) {
    let corpus = Arc::new(
        Corpus::from_folder(root().join("examples/data/corpus").to_str().unwrap(), None)
            .expect("the bundled corpus"),
    );
    let AnyDataset::Token(dataset) = rag_eval::dataset::load(
        root()
            .join("examples/data/questions.jsonl")
            .to_str()
            .unwrap(),
    )
    .expect("the bundled questions") else {
        panic!("the bundled dataset is token-level")
    };
    let mut questions: Vec<(String, String)> = dataset
        .examples()
        .iter()
        .map(|e| (e.id.clone(), e.query.clone()))
        .collect();
    questions.extend(
        EXTRA_QUESTIONS
            .iter()
            .enumerate()
            .map(|(i, q)| (format!("x{:03}", i + 1), (*q).to_owned())),
    );
    let retriever = Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0));
    retriever.build_index(&corpus).expect("BM25 index");
    let generator = LlmGenerator::new(chat(url)).with_max_tokens(Some(64));
    let started = Instant::now();
    let rt = runtime();
    let rows: Vec<Row> = rt.block_on(async {
        use futures_util::stream::{self, StreamExt};
        stream::iter(&questions)
            .map(|(id, q)| {
                let contexts = retriever.search(q, K).expect("retrieval");
                let generator = &generator;
                async move {
                    let a = generator.generate(q, &contexts).await.expect("an answer");
                    eprintln!("{id}: {}", a.answer.replace('\n', " "));
                    Row {
                        id: id.clone(),
                        question: q.clone(),
                        answer: a.answer,
                        contexts: a
                            .contexts
                            .into_iter()
                            .map(|c| Context {
                                doc_id: c.chunk.span.doc.to_string(),
                                start: c.chunk.span.start,
                                end: c.chunk.span.end,
                                text: c.chunk.content,
                                score: c.score,
                            })
                            .collect(),
                    }
                }
            })
            .buffered(4)
            .collect()
            .await
    });
    let mut text = String::new();
    for r in &rows {
        text.push_str(&serde_json::to_string(r).unwrap());
        text.push('\n');
    }
    let dir = out.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let mut tmp = tempfile::NamedTempFile::new_in(dir).unwrap();
    tmp.write_all(text.as_bytes()).unwrap();
    tmp.persist(out).unwrap();
    eprintln!(
        "wrote {} answers to {} in {:.0?} ({} prompt + {} completion tokens)",
        rows.len(),
        out.display(),
        started.elapsed(),
        generator.usage().prompt_tokens,
        generator.usage().completion_tokens
    );
}

/// Both judges over every row, `concurrency` answers at a time, one judge after the other.
async fn judge_rows<C, E>(
    rows: &[Row],
    llm: C,
    embedder: E,
    concurrency: usize,
    max_tokens: u32,
) -> (JudgeRun, JudgeRun)
where
    C: LlmClient + Clone,
    E: Embedder,
{
    let answers: Vec<RagAnswer> = rows.iter().map(Row::rag_answer).collect();
    let inputs: Vec<JudgeInput> = rows
        .iter()
        .zip(&answers)
        .map(|(r, a)| JudgeInput {
            query_id: &r.id,
            question: &r.question,
            answer: a,
            reference: None,
        })
        .collect();
    let config = JudgeConfig {
        concurrency,
        max_tokens,
        ..JudgeConfig::default()
    };
    let faithfulness = judge_all(&Faithfulness::new(llm.clone()), &inputs, &config).await;
    let relevancy = AnswerRelevancy::new(llm, embedder).with_questions(QUESTIONS);
    let relevancy = judge_all(&relevancy, &inputs, &config).await;
    (faithfulness, relevancy)
}

/// A counting proxy in front of a server, as a child process.
struct Proxy {
    child: Child,
    port: u16,
    path: String,
}

impl Proxy {
    fn start(upstream: &str) -> Result<Proxy, String> {
        let mut child = Command::new("python3")
            .arg(root().join("benches/scripts/llm_proxy.py"))
            .args(["--upstream", upstream])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("python3 benches/scripts/llm_proxy.py: {e}"))?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let port = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("the proxy said {line:?}"))?;
        // The client's base URL keeps the upstream's path (`/v1`).
        let path = upstream
            .split_once("://")
            .and_then(|(_, rest)| rest.find('/').map(|i| rest[i..].to_owned()))
            .unwrap_or_default();
        Ok(Proxy { child, port, path })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}{}", self.port, self.path)
    }

    fn call(&self, method: &str, path: &str) -> Value {
        let rt = runtime();
        rt.block_on(async {
            let client = reqwest::Client::new();
            let url = format!("http://127.0.0.1:{}{path}", self.port);
            let r = match method {
                "POST" => client.post(url).send().await,
                _ => client.get(url).send().await,
            }
            .expect("the proxy answers");
            r.json().await.expect("JSON from the proxy")
        })
    }

    fn reset(&self) {
        self.call("POST", "/__reset");
    }

    /// The counts of the paths ending in `endpoint` (`/chat/completions`, `/embeddings`);
    /// other paths are the clients' liveness probes of the base URL, not model calls.
    fn counts(&self, endpoint: &str) -> Counts {
        let v = self.call("GET", "/__stats");
        let mut c = Counts::default();
        for (path, e) in v.as_object().into_iter().flatten() {
            let f = |k: &str| e.get(k).and_then(Value::as_u64).unwrap_or(0);
            if !path.ends_with(endpoint) {
                c.other += f("requests");
                continue;
            }
            c.requests += f("requests");
            c.failed += f("failed");
            c.prompt_tokens += f("prompt_tokens");
            c.completion_tokens += f("completion_tokens");
            c.inputs += f("inputs");
            c.multi_choice += f("multi_choice_requests");
        }
        c
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Default, Clone, Copy, Debug)]
struct Counts {
    requests: u64,
    failed: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    inputs: u64,
    multi_choice: u64,
    other: u64,
}

/// One side's figures for one repetition.
struct Measured {
    seconds: f64,
    /// ragas: the whole process (Python start and imports included).
    process_seconds: Option<f64>,
    chat: Counts,
    embed: Counts,
    failures: String,
}

fn describe(s: &JudgeSummary) -> String {
    format!(
        "{} ok {}/undet. {}/invalid {}/error {} ({} repairs, mean {})",
        s.metric,
        s.ok,
        s.undetermined,
        s.invalid,
        s.error,
        s.usage.repairs,
        s.mean.map_or("-".into(), |m| format!("{m:.3}"))
    )
}

fn ours(
    rows: &[Row],
    chat_proxy: &Proxy,
    embed_proxy: &Proxy,
    c: usize,
    max_tokens: u32,
) -> Measured {
    chat_proxy.reset();
    embed_proxy.reset();
    let started = Instant::now();
    let llm = chat(&chat_proxy.url());
    let embed = embedder(&embed_proxy.url());
    let (f, r) = runtime().block_on(judge_rows(rows, llm, embed, c, max_tokens));
    let seconds = started.elapsed().as_secs_f64();
    Measured {
        seconds,
        process_seconds: None,
        chat: chat_proxy.counts("/chat/completions"),
        embed: embed_proxy.counts("/embeddings"),
        failures: format!("{}; {}", describe(&f.summary), describe(&r.summary)),
    }
}

fn ragas(
    python: &Path,
    fixture: &Path,
    limit: usize,
    chat_proxy: &Proxy,
    embed_proxy: &Proxy,
    c: usize,
    max_tokens: u32,
) -> Result<Measured, String> {
    chat_proxy.reset();
    embed_proxy.reset();
    let started = Instant::now();
    let out = Command::new(python)
        .arg(root().join("benches/scripts/ragas_judges.py"))
        .arg("--answers")
        .arg(fixture)
        .args([
            "--llm-url",
            &chat_proxy.url(),
            "--embed-url",
            &embed_proxy.url(),
        ])
        .args(["--model", &model(), "--concurrency", &c.to_string()])
        .args(["--strictness", &QUESTIONS.to_string()])
        .args(["--limit", &limit.to_string()])
        .args(["--max-tokens", &max_tokens.to_string()])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    let process_seconds = started.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!("ragas_judges.py exited with {}", out.status));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    let v: Value =
        serde_json::from_str(last).map_err(|e| format!("ragas_judges.py printed {last:?}: {e}"))?;
    Ok(Measured {
        seconds: v["seconds"].as_f64().unwrap_or(f64::NAN),
        process_seconds: Some(process_seconds),
        chat: chat_proxy.counts("/chat/completions"),
        embed: embed_proxy.counts("/embeddings"),
        failures: v["failures"].to_string(),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn report(side: &str, runs: &[Measured], answers: usize) {
    let per = |f: &dyn Fn(&Measured) -> f64| median(runs.iter().map(f).collect()) / answers as f64;
    println!(
        "| {side} | {:.2} | {:.0} | {:.0} | {:.2} | {:.1} | {} |",
        per(&|m| m.chat.requests as f64),
        per(&|m| m.chat.prompt_tokens as f64),
        per(&|m| m.chat.completion_tokens as f64),
        per(&|m| m.embed.requests as f64),
        median(runs.iter().map(|m| m.seconds).collect()),
        match runs
            .iter()
            .filter_map(|m| m.process_seconds)
            .collect::<Vec<_>>()
        {
            p if p.is_empty() => "—".to_owned(),
            p => format!("{:.1}", median(p)),
        },
    );
}

/// A model that answers every judge question validly, counting the calls.
#[derive(Clone, Default)]
struct Scripted(Arc<AtomicU64>);

#[async_trait::async_trait]
impl LlmClient for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }

    async fn complete(&self, request: &ChatRequest) -> rag_eval::Result<ChatResponse> {
        self.0.fetch_add(1, Ordering::Relaxed);
        let schema = request.json_schema.as_ref().map(|s| s.name.as_str());
        let content = match schema {
            Some("faithfulness") => serde_json::json!({"statements": [{
                "statement": "The answer says something.", "verdict": "not_supported",
                "context": 0, "evidence": "", "reason": "scripted"}]}),
            _ => serde_json::json!({
                "questions": ["What is it?", "Which one is it?", "How is it done?"],
                "noncommittal": false}),
        };
        Ok(ChatResponse {
            content: content.to_string(),
            finish_reason: Some("stop".into()),
            usage: TokenUsage {
                prompt_tokens: 10,
                completion_tokens: 5,
            },
            model: "scripted".into(),
            logprobs: None,
        })
    }
}

/// `cargo test --benches`: the fixture parses and both judges take one call per answer.
fn smoke(rows: &[Row]) {
    let llm = Scripted::default();
    let (f, r) = pollster::block_on(judge_rows(
        rows,
        llm.clone(),
        HashingEmbedder::new(64, 3),
        2,
        1024,
    ));
    let n = rows.len();
    assert_eq!((f.summary.ok, r.summary.ok), (n, n), "{f:?} {r:?}");
    assert_eq!(f.summary.usage.calls + r.summary.usage.calls, 2 * n as u64);
    assert_eq!(llm.0.load(Ordering::Relaxed), 2 * n as u64);
    println!("judges smoke: {n} answers judged with 2 calls each (scripted model)");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let measuring = args.iter().any(|a| a == "--bench");
    let fixture = root().join(FIXTURE);
    if args.iter().any(|a| a == "--make-fixture") {
        let Some(url) = env_url("RAG_EVAL_LLM_URL") else {
            eprintln!("--make-fixture needs RAG_EVAL_LLM_URL (a chat server's /v1 URL)");
            std::process::exit(2);
        };
        make_fixture(&url, &fixture);
        return;
    }
    let rows = match load_fixture(&fixture) {
        Ok(rows) => rows,
        Err(e) => {
            println!("judges: no fixture ({e}); nothing to measure");
            return;
        }
    };
    if !measuring {
        smoke(&rows);
        return;
    }
    let (Some(chat_url), Some(embed_url)) =
        (env_url("RAG_EVAL_LLM_URL"), env_url("RAG_EVAL_EMBED_URL"))
    else {
        println!(
            "judges: set RAG_EVAL_LLM_URL and RAG_EVAL_EMBED_URL to a chat and an embeddings \
             server's /v1 URLs (see the module docs); nothing measured"
        );
        return;
    };
    let reps: usize = arg_value(&args, "--reps").unwrap_or(3);
    // The first N answers only, when a loaded machine leaves no time for all of them.
    let limit: usize = arg_value(&args, "--limit").unwrap_or(rows.len());
    let rows = &rows[..limit.min(rows.len())];
    let c: usize = arg_value(&args, "--concurrency").unwrap_or(2);
    // Longest judge answer on both sides: ours sends it with every request, ragas' ChatOpenAI
    // gets it as `max_tokens` (default: `JudgeConfig`'s).
    let max_tokens: u32 =
        arg_value(&args, "--max-tokens").unwrap_or(JudgeConfig::default().max_tokens);
    let python = root().join("benches/scripts/.venv-ragas/bin/python");
    let with_ragas = !args.iter().any(|a| a == "--ours-only") && python.exists();
    if !with_ragas {
        println!("judges: no ragas side (benches/scripts/ragas_setup.sh makes its venv)");
    }
    let chat_proxy = Proxy::start(&chat_url).expect("the chat proxy");
    let embed_proxy = Proxy::start(&embed_url).expect("the embeddings proxy");
    let (mut our_runs, mut peer_runs) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        let mut sides = vec!["ours", "ragas"];
        if rep % 2 == 1 {
            sides.reverse();
        }
        for side in sides {
            let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
            let load = load.split_whitespace().next().unwrap_or("?").to_owned();
            let m = match side {
                "ours" => ours(rows, &chat_proxy, &embed_proxy, c, max_tokens),
                _ if !with_ragas => continue,
                _ => match ragas(
                    &python,
                    &fixture,
                    rows.len(),
                    &chat_proxy,
                    &embed_proxy,
                    c,
                    max_tokens,
                ) {
                    Ok(m) => m,
                    Err(e) => {
                        eprintln!("ragas: {e}");
                        continue;
                    }
                },
            };
            println!(
                "rep {} {side} (load {load}): {:.1} s{}; chat {} requests ({} failed, {} with n>1), \
                 {} + {} tokens; embeddings {} requests ({} texts); {} liveness probes; {}",
                rep + 1,
                m.seconds,
                m.process_seconds
                    .map_or(String::new(), |p| format!(" ({p:.1} s process)")),
                m.chat.requests,
                m.chat.failed,
                m.chat.multi_choice,
                m.chat.prompt_tokens,
                m.chat.completion_tokens,
                m.embed.requests,
                m.embed.inputs,
                m.chat.other + m.embed.other,
                m.failures
            );
            match side {
                "ours" => our_runs.push(m),
                _ => peer_runs.push(m),
            }
        }
    }
    let n = rows.len();
    println!("\n{n} answers, concurrency {c}, max_tokens {max_tokens}, medians of {reps} repetitions; per judged answer:");
    println!("| side | chat calls | prompt tokens | completion tokens | embedding requests | wall s (judging) | wall s (process) |");
    println!("|---|---|---|---|---|---|---|");
    report("rag-eval", &our_runs, n);
    if !peer_runs.is_empty() {
        report("ragas 0.4.3", &peer_runs, n);
    }
}
