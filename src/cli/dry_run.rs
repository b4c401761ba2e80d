//! `--dry-run` of `score --answers` and `eval --rag`: the judge, embedding and system calls a
//! run would make, their tokens and cost, counted without calling anything.
//!
//! The judges run over a client that sends nothing: each request they build is counted (under
//! the judge its prompt version names) and answered from the record/replay cache when it holds
//! it (a cached call costs nothing: counted apart), else refused, so that no request leaves the
//! process. The format is in `docs/reference/dry-run.md`.

use super::judging::Judging;
use super::output::Output;
use crate::judge::JudgeInput;
use crate::llm::{ChatRequest, ChatResponse, LlmClient};
use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The options of a dry run, shared by `eval` and `score`.
#[derive(Args, Clone, Copy, Default)]
pub(super) struct DryRunArgs {
    /// Call nothing: print the judge, embedding and system calls the run would make, with
    /// their tokens and, given --price-per-1k-tokens, their cost (calls the --cache holds are
    /// counted apart: they cost nothing).
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run: each of N shards' share too, query i (from 0, in dataset order) going to
    /// shard i mod N + 1.
    #[arg(
        long,
        value_name = "N",
        requires = "dry_run",
        value_parser = clap::value_parser!(u16).range(1..)
    )]
    pub shards: Option<u16>,
    /// With --dry-run: US dollars per 1,000 tokens, prompt and completion alike, for the
    /// cost of the calls to make.
    #[arg(long, value_name = "USD", requires = "dry_run")]
    pub price_per_1k_tokens: Option<f64>,
}

/// Generated questions per answer that `answer_relevancy` embeds (the judge's default).
const RELEVANCY_QUESTIONS: u64 = 3;

/// The tokenizer prompt tokens are counted with.
#[cfg(feature = "tiktoken")]
const TOKENIZER: &str = "cl100k_base";
#[cfg(not(feature = "tiktoken"))]
const TOKENIZER: &str = "chars/4";

/// `text`'s tokens: cl100k_base's count (exact for OpenAI's GPT-4 and GPT-3.5 models, an
/// estimate for others), or a quarter of its characters, rounded up, without `tiktoken`.
pub(super) fn tokens(text: &str) -> u64 {
    #[cfg(feature = "tiktoken")]
    {
        tiktoken_rs::cl100k_base_singleton()
            .encode_ordinary(text)
            .len() as u64
    }
    #[cfg(not(feature = "tiktoken"))]
    {
        (text.chars().count() as u64).div_ceil(4)
    }
}

/// One kind of call of a dry run: to one judge, the embedder or the system under test.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(super) struct Calls {
    /// `judge`, `embedding` or `rag`.
    pub kind: &'static str,
    /// The judge or metric the calls are for; the system's spec for `rag`.
    pub name: String,
    /// Calls the run would send.
    pub calls: u64,
    /// Calls the cache would answer, sending nothing.
    pub cached: u64,
    /// Prompt (input) tokens of the calls to send.
    pub prompt_tokens: u64,
    /// At most this many completion tokens (the calls' `max_tokens`); `null` when unbounded
    /// or not a chat.
    pub completion_tokens_max: Option<u64>,
    /// At most this many US dollars, with a price.
    pub cost_usd_max: Option<f64>,
}

impl Calls {
    fn add(&mut self, other: &Calls) {
        self.calls += other.calls;
        self.cached += other.cached;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens_max = match (self.completion_tokens_max, other.completion_tokens_max)
        {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    fn priced(mut self, price: Option<f64>) -> Self {
        self.cost_usd_max = price.map(|p| {
            (self.prompt_tokens + self.completion_tokens_max.unwrap_or(0)) as f64 * p / 1000.0
        });
        self
    }
}

/// What `--dry-run` prints.
#[derive(Debug, Serialize)]
pub(super) struct Plan {
    /// Queries of the dataset.
    pub queries: usize,
    /// What prompt tokens are counted with.
    pub tokenizer: &'static str,
    /// The price given, per 1,000 tokens.
    pub price_per_1k_tokens: Option<f64>,
    /// Every kind of call over the whole dataset.
    pub total: Vec<Calls>,
    /// With --shards: each shard's calls, shard 1 first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardPlan>,
}

/// One shard's calls.
#[derive(Debug, Serialize)]
pub(super) struct ShardPlan {
    /// From 1.
    pub shard: usize,
    /// Queries of the shard.
    pub queries: usize,
    /// Every kind of call of the shard.
    pub calls: Vec<Calls>,
}

/// Judge requests counted by judge: what the cache answered and what would be sent.
#[derive(Default)]
struct Tally(Mutex<BTreeMap<String, Calls>>);

impl Tally {
    fn take(&self) -> BTreeMap<String, Calls> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// A judge's client in a dry run: `inner` answers from the cache or refuses (see
/// [`unsent`]); each request is counted.
pub(super) struct Counted {
    inner: Arc<dyn LlmClient>,
    tally: Arc<Tally>,
}

#[async_trait::async_trait]
impl LlmClient for Counted {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn complete(&self, request: &ChatRequest) -> crate::Result<ChatResponse> {
        let answer = self.inner.complete(request).await;
        let judge = request
            .prompt_version
            .as_deref()
            .and_then(|v| v.split('/').next())
            .unwrap_or("judge")
            .to_owned();
        let mut tally = self.tally.0.lock().unwrap_or_else(|e| e.into_inner());
        let c = tally.entry(judge.clone()).or_insert_with(|| Calls {
            kind: "judge",
            name: judge,
            ..Calls::default()
        });
        if answer.is_ok() {
            c.cached += 1;
        } else {
            c.calls += 1;
            c.prompt_tokens += request
                .messages
                .iter()
                .map(|m| tokens(&m.content))
                .sum::<u64>();
            c.completion_tokens_max = match request.max_tokens {
                Some(m) => Some(c.completion_tokens_max.unwrap_or(0) + u64::from(m)),
                None => c.completion_tokens_max,
            };
        }
        answer
    }
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

/// An embedder that embeds nothing (a judge whose chat call the cache answered would embed
/// next): every call fails.
struct Unembedded(Arc<dyn crate::embed::Embedder>);

#[async_trait::async_trait]
impl crate::embed::Embedder for Unembedded {
    fn name(&self) -> String {
        self.0.name()
    }
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    async fn embed(&self, _: &[String]) -> crate::Result<Vec<Vec<f32>>> {
        Err(crate::EmbedError::new(self.name(), "a dry run embeds nothing").into())
    }
}

/// A dry run's judge client: `inner` (the cache over [`Unsent`], or [`Unsent`]) counted.
pub(super) fn counted(inner: Arc<dyn LlmClient>) -> (Arc<dyn LlmClient>, DryRun) {
    let tally = Arc::new(Tally::default());
    let client = Arc::new(Counted {
        inner,
        tally: Arc::clone(&tally),
    });
    (client, DryRun { tally })
}

/// The embedder a dry run gives the judges: `embedder`'s name, no embedding.
pub(super) fn unembedded(
    embedder: Arc<dyn crate::embed::Embedder>,
) -> Arc<dyn crate::embed::Embedder> {
    Arc::new(Unembedded(embedder))
}

/// A dry run under way: what its judge client counted.
#[derive(Default)]
pub(super) struct DryRun {
    tally: Arc<Tally>,
}

/// One query as a dry run sees it.
pub(super) struct Row<'a> {
    pub input: JudgeInput<'a>,
    /// Its reference answers (for `answer_similarity`'s embeddings).
    pub references: &'a [String],
}

/// What a dry run needs besides the rows.
pub(super) struct Setting<'a> {
    pub args: DryRunArgs,
    pub judging: Option<&'a Judging>,
    /// The embedder's batch size, when there is an embedder (`answer_similarity`).
    pub embed_batch: Option<usize>,
    /// The system under test's spec, when each query asks it (`eval --rag`).
    pub rag: Option<String>,
}

impl DryRun {
    /// Counts the calls of `rows` in each shard, and over all.
    pub fn plan(&self, rows: &[Row<'_>], s: &Setting<'_>) -> Result<Plan> {
        let price = s.args.price_per_1k_tokens;
        if let Some(p) = price {
            if !(p.is_finite() && p >= 0.0) {
                bail!("--price-per-1k-tokens must be a number of dollars, 0 or more; got {p}");
            }
        }
        let n = usize::from(s.args.shards.unwrap_or(1));
        let mut shards = Vec::with_capacity(n);
        for shard in 0..n {
            let mine: Vec<&Row<'_>> = rows.iter().skip(shard).step_by(n).collect();
            let calls = self.shard(&mine, s)?;
            shards.push(ShardPlan {
                shard: shard + 1,
                queries: mine.len(),
                calls: calls.into_iter().map(|c| c.priced(price)).collect(),
            });
        }
        let mut total: Vec<Calls> = Vec::new();
        for c in shards.iter().flat_map(|s| &s.calls) {
            match total
                .iter_mut()
                .find(|t| t.kind == c.kind && t.name == c.name)
            {
                Some(t) => t.add(c),
                None => total.push(c.clone()),
            }
        }
        Ok(Plan {
            queries: rows.len(),
            tokenizer: TOKENIZER,
            price_per_1k_tokens: price,
            total: total.into_iter().map(|c| c.priced(price)).collect(),
            shards: if s.args.shards.is_some() {
                shards
            } else {
                Vec::new()
            },
        })
    }

    /// The calls of `rows`: the system's, the judges' (run over the counting client), and the
    /// embedder's.
    fn shard(&self, rows: &[&Row<'_>], s: &Setting<'_>) -> Result<Vec<Calls>> {
        let mut calls = Vec::new();
        if let Some(spec) = &s.rag {
            calls.push(Calls {
                kind: "rag",
                name: spec.clone(),
                calls: rows.len() as u64,
                ..Calls::default()
            });
        }
        let Some(judging) = s.judging else {
            calls.extend(similarity(rows, s.embed_batch));
            return Ok(calls);
        };
        let inputs: Vec<JudgeInput<'_>> = rows.iter().map(|r| r.input).collect();
        super::runtime()?.block_on(judging.rehearse(&inputs));
        calls.extend(self.tally.take().into_values());
        calls.extend(similarity(rows, s.embed_batch));
        if judging.has("answer_relevancy") {
            // Per sample of a query: the generated questions in one call, the question in
            // another; the generated ones taken to be as long as the question.
            let samples = u64::from(judging.samples());
            let question_tokens: u64 = rows.iter().map(|r| tokens(r.input.question)).sum();
            calls.push(Calls {
                kind: "embedding",
                name: "answer_relevancy".into(),
                calls: 2 * samples * rows.len() as u64,
                prompt_tokens: (RELEVANCY_QUESTIONS + 1) * samples * question_tokens,
                ..Calls::default()
            });
        }
        Ok(calls)
    }
}

/// `answer_similarity`'s embeddings: each answer with a reference and its references, in
/// batches of `batch` (none without an embedder).
fn similarity(rows: &[&Row<'_>], batch: Option<usize>) -> Option<Calls> {
    let batch = batch?;
    let texts: Vec<&str> = rows
        .iter()
        .filter(|r| !r.references.is_empty())
        .flat_map(|r| {
            std::iter::once(r.input.answer.answer.as_str())
                .chain(r.references.iter().map(String::as_str))
        })
        .collect();
    Some(Calls {
        kind: "embedding",
        name: "answer_similarity".into(),
        calls: texts.len().div_ceil(batch.max(1)) as u64,
        prompt_tokens: texts.iter().map(|t| tokens(t)).sum(),
        ..Calls::default()
    })
}

/// Prints `plan`: one JSON object with `--json`, else lines.
pub(super) fn print(plan: &Plan, json: bool, out: &mut Output) -> Result<()> {
    if json {
        return Ok(out.json_line(plan)?);
    }
    let mut text = format!(
        "dry run: {} queries, nothing called (prompt tokens counted with {})\n",
        plan.queries, plan.tokenizer
    );
    text.push_str(&lines(&plan.total, ""));
    for s in &plan.shards {
        text.push_str(&format!(
            "shard {}/{} ({} queries):\n",
            s.shard,
            plan.shards.len(),
            s.queries
        ));
        text.push_str(&lines(&s.calls, "  "));
    }
    Ok(out.text(text.trim_end())?)
}

fn lines(calls: &[Calls], indent: &str) -> String {
    let mut s = String::new();
    for c in calls {
        s.push_str(&format!(
            "{indent}{} {}: {} calls, {} cached, {} prompt tokens",
            c.kind,
            crate::escape::terminal(&c.name),
            c.calls,
            c.cached,
            c.prompt_tokens
        ));
        if let Some(m) = c.completion_tokens_max {
            s.push_str(&format!(", at most {m} completion tokens"));
        }
        if let Some(cost) = c.cost_usd_max {
            s.push_str(&format!(", at most ${cost:.4}"));
        }
        s.push('\n');
    }
    s
}
