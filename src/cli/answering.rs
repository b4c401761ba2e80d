//! `rag-eval eval --answers`: answers generated over the retrieved chunks, then judged.

use super::judging::{JudgeArgs, Judging};
use crate::answers::add_answers;
use crate::cache::{Cache, CachedLlm};
use crate::chunk::RetrievedChunk;
use crate::generator::{Generator, LlmGenerator, RagAnswer};
use crate::http::HttpClient;
use crate::judge::{JudgeInput, JudgeSummary};
use crate::level::Level;
use crate::llm::{ChatRequest, ChatResponse, LlmClient, OpenAiChat, TokenUsage};
use crate::metrics::{answer_metrics, RunResult};
use crate::retrieve::Retriever;
use crate::runs::{RunRecord, Spend};
use anyhow::{bail, Result};
use clap::Args;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What `--answers` needs: the generator's model and, to judge, the judge's.
#[derive(Args, Clone)]
pub(super) struct AnswerArgs {
    /// Generate an answer for every query from its retrieved chunks, and score the answers.
    #[arg(long, requires = "model")]
    pub answers: bool,
    /// The generator's model, as the server names it.
    #[arg(long)]
    model: Option<String>,
    /// Base URL of the generator's OpenAI-compatible server.
    #[arg(long, default_value = crate::http::OPENAI_BASE_URL)]
    pub base_url: String,
    /// Environment variable holding the API key (local servers need none).
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    #[command(flatten)]
    pub judge: JudgeArgs,
}

/// A client named `name` that sends nothing: every request fails. Behind the cache, it makes
/// the cache's answers the only ones.
pub(super) struct Unsent(pub String);

#[async_trait::async_trait]
impl LlmClient for Unsent {
    fn name(&self) -> String {
        self.0.clone()
    }

    async fn complete(&self, _: &ChatRequest) -> crate::Result<ChatResponse> {
        Err(crate::Error::other("a dry run sends nothing"))
    }
}

/// What a dry run wraps its clients in: each request counted as a call of a kind to a model.
pub(super) trait Counter {
    /// `inner` counting its requests as calls of `kind` to `model`.
    fn counted(
        &self,
        inner: Arc<dyn LlmClient>,
        kind: &'static str,
        model: &str,
    ) -> Arc<dyn LlmClient>;
}

/// An OpenAI-compatible chat client of `model` at `url`, behind `cache` when there is one,
/// and its HTTP client (for its counts of retries). Unless `send`, the client sends nothing
/// (see [`Unsent`]): only the cache answers.
pub(super) fn client(
    model: &str,
    url: &str,
    key_env: &str,
    cache: Option<&Arc<Cache>>,
    timeout: super::TimeoutArgs,
    concurrency: usize,
    send: bool,
) -> Result<(Arc<dyn LlmClient>, HttpClient)> {
    let key_set = std::env::var(key_env).is_ok_and(|v| !v.trim().is_empty());
    if send && !key_set && url.contains("api.openai.com") {
        bail!(
            "environment variable `{key_env}` (--api-key-env) is not set; OpenAI needs a key (local servers do not: give their --base-url)"
        );
    }
    let chat = OpenAiChat::builder(model)
        .base_url(url)
        .api_key_env(key_env)
        .http(|h| timeout.apply(h).with_concurrency(concurrency))
        .build()?;
    let http = chat.http_client();
    let chat: Arc<dyn LlmClient> = if send {
        Arc::new(chat)
    } else {
        Arc::new(Unsent(chat.name()))
    };
    let llm: Arc<dyn LlmClient> = match cache {
        Some(cache) => Arc::new(CachedLlm::new(chat, cache.clone())),
        None => chat,
    };
    Ok((llm, http))
}

/// A retriever that also answers: each query's chunks go to the generator, the answer is kept.
pub(super) struct Answering<'a, R: ?Sized> {
    retriever: &'a R,
    generator: &'a LlmGenerator<Arc<dyn LlmClient>>,
    answers: Mutex<HashMap<String, RagAnswer>>,
    /// Time spent retrieving and generating, summed over queries (they overlap in time).
    spent: Mutex<(Duration, Duration)>,
}

#[async_trait::async_trait]
impl<L: Level, R: Retriever<L> + ?Sized> Retriever<L> for Answering<'_, R> {
    fn name(&self) -> String {
        self.retriever.name()
    }

    fn spec(&self) -> crate::spec::Value {
        self.retriever.spec()
    }

    fn chunker(&self) -> Option<crate::spec::Value> {
        self.retriever.chunker()
    }

    fn chunker_object(&self) -> Option<&dyn crate::chunker::PositionAwareChunker> {
        self.retriever.chunker_object()
    }

    fn indexed_spans(&self) -> Option<Vec<crate::span::CharSpan>> {
        self.retriever.indexed_spans()
    }

    async fn index(&self, corpus: &Arc<crate::corpus::Corpus>) -> crate::Result<()> {
        self.retriever.index(corpus).await
    }

    async fn retrieve(&self, query: &str, k: usize) -> crate::Result<Vec<RetrievedChunk>> {
        let started = Instant::now();
        let hits = self.retriever.retrieve(query, k).await?;
        let retrieved = Instant::now();
        let answer =
            self.generator
                .generate(query, &hits)
                .await
                .map_err(|e| crate::Error::Generation {
                    query: query.to_owned(),
                    source: Box::new(e),
                })?;
        {
            let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
            spent.0 += retrieved - started;
            spent.1 += retrieved.elapsed();
        }
        self.answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(query.to_owned(), answer);
        Ok(hits)
    }
}

impl<R: ?Sized> Answering<'_, R> {
    /// The answers, by question, once every query is answered, and the share of the time
    /// spent in each query's retrieval and generation that went to generation.
    pub fn finish(self) -> (HashMap<String, RagAnswer>, f64) {
        let (retrieve, generate) = self.spent.into_inner().unwrap_or_else(|e| e.into_inner());
        let total = (retrieve + generate).as_secs_f64();
        let share = if total > 0.0 {
            generate.as_secs_f64() / total
        } else {
            0.0
        };
        (
            self.answers.into_inner().unwrap_or_else(|e| e.into_inner()),
            share,
        )
    }
}

/// The generator and judges of one `eval --answers` run.
pub(super) struct AnswerRun {
    generator: LlmGenerator<Arc<dyn LlmClient>>,
    /// The generator's HTTP client, whose retries the summary counts.
    generator_http: HttpClient,
    /// The generator's model, as the server names it.
    model: String,
    /// The judges, with a judge model.
    pub judging: Option<Judging>,
}

impl AnswerRun {
    /// The clients `a` names, behind `cache` when there is one; in a `dry` run, they send
    /// nothing and count what they are asked.
    pub fn new(
        a: &AnswerArgs,
        cache: Option<&Arc<Cache>>,
        timeout: super::TimeoutArgs,
        dry: Option<&dyn Counter>,
    ) -> Result<Self> {
        let Some(model) = &a.model else {
            bail!("--answers needs --model (the generator's model)");
        };
        let concurrency = a.judge.concurrency;
        let send = dry.is_none();
        let counted = |llm: Arc<dyn LlmClient>, kind, model: &str| match dry {
            Some(dry) => dry.counted(llm, kind, model),
            None => llm,
        };
        let (generator, generator_http) = client(
            model,
            &a.base_url,
            &a.api_key_env,
            cache,
            timeout,
            concurrency,
            send,
        )?;
        let generator = LlmGenerator::new(counted(generator, "generator", model));
        let judging = match &a.judge.judge_model {
            Some(m) => {
                let url = a.judge.judge_url.as_deref().unwrap_or(&a.base_url);
                let (judge, http) =
                    client(m, url, &a.api_key_env, cache, timeout, concurrency, send)?;
                let judge = counted(judge, "judge", m);
                Some(Judging::new(
                    &a.judge,
                    m,
                    judge,
                    http,
                    None,
                    &["faithfulness"],
                    "eval --answers takes none; score --answers --embedder SPEC does",
                )?)
            }
            None => None,
        };
        Ok(AnswerRun {
            generator,
            generator_http,
            model: model.clone(),
            judging,
        })
    }

    /// `retriever` answering too.
    pub fn wrap<'a, R: ?Sized>(&'a self, retriever: &'a R) -> Answering<'a, R> {
        Answering {
            retriever,
            generator: &self.generator,
            answers: Mutex::default(),
            spent: Mutex::default(),
        }
    }

    /// Keeps `answers` (by question, as [`Answering::finish`] gives them) in `result` with the
    /// rows' reference answers (`references`, by query id), adds the lexical answer metrics
    /// when any row has a reference, and judges the answers (`case` on the progress line);
    /// the judges' summaries.
    pub async fn score(
        &mut self,
        case: &str,
        answers: HashMap<String, RagAnswer>,
        references: &HashMap<String, Vec<String>>,
        result: &mut RunResult,
    ) -> Vec<JudgeSummary> {
        let empty = RagAnswer {
            answer: String::new(),
            contexts: Vec::new(),
        };
        let given: Vec<(&RagAnswer, &[String])> = result
            .per_query
            .iter()
            .map(|q| {
                let answer = q.query.as_ref().and_then(|t| answers.get(t));
                let refs = references.get(&q.id).map_or(&[][..], Vec::as_slice);
                (answer.unwrap_or(&empty), refs)
            })
            .collect();
        let metrics = if given.iter().any(|(_, r)| !r.is_empty()) {
            answer_metrics(false)
        } else {
            Vec::new()
        };
        add_answers(&mut result.per_query, &given, &metrics, None);
        // A metric no query could be scored on has no mean rather than a mean of 0.
        let names: Vec<String> = metrics
            .iter()
            .map(|m| m.name().to_owned())
            .filter(|n| result.per_query.iter().any(|q| q.metrics.get(n).is_some()))
            .collect();
        result.add_means(&names);
        let Some(judging) = &mut self.judging else {
            return Vec::new();
        };
        // Owned, since the figures go into `result` while the inputs are alive.
        let rows: Vec<(String, String, Option<String>, &RagAnswer)> = result
            .per_query
            .iter()
            .zip(&given)
            .map(|(q, (answer, refs))| {
                (
                    q.id.clone(),
                    q.query.clone().unwrap_or_default(),
                    crate::judge::reference_text(refs),
                    *answer,
                )
            })
            .collect();
        let inputs: Vec<JudgeInput<'_>> = rows
            .iter()
            .map(
                |&(ref id, ref question, ref reference, answer)| JudgeInput {
                    query_id: id,
                    question,
                    answer,
                    reference: reference.as_deref(),
                },
            )
            .collect();
        judging.judge(case, &inputs, result).await
    }

    /// The generator.
    pub fn generator(&self) -> &LlmGenerator<Arc<dyn LlmClient>> {
        &self.generator
    }

    /// Tokens the generator spent so far.
    pub fn generator_usage(&self) -> TokenUsage {
        self.generator.usage()
    }

    /// Puts the generator and the judges in `record`: the generator's model and prompt
    /// version, the judges' ([`Judging::fill`]), and the tokens each spent on this
    /// run (the generator's since `before`, the judges' of `judged`).
    pub fn fill(
        &self,
        record: &mut RunRecord,
        before: Option<TokenUsage>,
        judged: &[JudgeSummary],
    ) {
        // Its model and prompt version, never its name: that holds the server's URL.
        let c = &mut record.config;
        c.generator_model = Some(self.model.clone());
        c.generator_prompt = Some(format!("answer/{}", self.generator.prompt().version));
        let (now, before) = (self.generator.usage(), before.unwrap_or_default());
        let generated = Spend::tokens(
            now.prompt_tokens.saturating_sub(before.prompt_tokens),
            now.completion_tokens
                .saturating_sub(before.completion_tokens),
        );
        record.add_chat_usage(Some(generated), None);
        if let Some(judging) = &self.judging {
            judging.fill(record, judged);
        }
    }

    /// The generator's HTTP retries and tokens, and the judges' counts, one line each, for
    /// stderr.
    pub fn usage_lines(&self) -> String {
        let u = self.generator.usage();
        let mut s = format!(
            "generator: {} HTTP retries, {} tokens ({} prompt, {} completion)\n",
            self.generator_http.stats().retries,
            u.total(),
            u.prompt_tokens,
            u.completion_tokens
        );
        if let Some(j) = &self.judging {
            s.push_str(&j.usage_lines());
        }
        s
    }

    /// The judges whose invalid or failed answers exceed the allowed share.
    pub fn gate_failures(&self) -> Vec<String> {
        self.judging
            .as_ref()
            .map(Judging::gate_failures)
            .unwrap_or_default()
    }
}
