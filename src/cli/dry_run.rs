//! `--dry-run` of `score --answers`, `eval --rag` and `eval` (with its retriever, and with
//! `--answers` its generator): the generator, judge, embedding and system calls a run would
//! make, their tokens and cost, counted without calling anything.
//!
//! The generator and the judges run over a client that sends nothing: each request they build
//! is counted (under the name its prompt version gives) and answered from the record/replay
//! cache when it holds it (a cached call costs nothing: counted apart), else refused, so that no
//! request leaves the process. A retriever's remote embedder is asked nothing either: its texts
//! are looked up in the cache, and the retrieval runs only when it calls nothing. A service's
//! responses (`eval --rag`) are looked up in the cache too, and the judges judge the cached
//! answers. The cache is only read: a dry run creates and writes no file. The format is in
//! `docs/reference/commands.md`.

use super::answering::{AnswerRun, Counter};
use super::judging::Judging;
use super::output::Output;
use crate::cache::{Cache, CacheMode, CachedEmbedder};
use crate::chunk::RetrievedChunk;
use crate::chunker::PositionAwareChunker;
use crate::components::{AnyLevelRetriever, Context};
use crate::corpus::Corpus;
use crate::dataset::Dataset;
use crate::embed::Embedder;
use crate::generator::{Generator, RagAnswer};
use crate::judge::JudgeInput;
use crate::level::{Level, TokenLevel};
use crate::llm::{ChatRequest, ChatResponse, LlmClient};
use crate::retrieve::{Bm25Retriever, Retriever};
use crate::spec::Spec;
use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

/// The options of a dry run, shared by `eval` and `score`.
#[derive(Args, Clone, Default)]
pub(super) struct DryRunArgs {
    /// Call nothing: print the generator, judge, embedding and system calls the run would
    /// make, with their tokens and, given prices (--price, --price-per-1k-tokens), their cost
    /// (calls the --cache holds are counted apart: they cost nothing).
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run: each of N shards' share too. `N`: query i (from 0, in dataset order)
    /// goes to shard i mod N + 1; `hash:N` (with --case): where `cargo nextest run --partition
    /// hash:i/N` runs the query's test.
    #[arg(
        long,
        value_name = "N|hash:N",
        requires = "dry_run",
        value_parser = Shards::parse
    )]
    pub shards: Option<Shards>,
    /// With --shards hash:N: the `#[rag_eval]` case whose tests run the queries, each named
    /// `CASE::<query id>` (as `cargo test -- --list` shows them).
    #[arg(long, value_name = "CASE", requires = "shards")]
    pub case: Option<String>,
    /// With --dry-run: US dollars per 1,000 tokens, prompt and completion alike, for the
    /// cost of the calls to a model no --price names.
    #[arg(long, value_name = "USD", requires = "dry_run")]
    pub price_per_1k_tokens: Option<f64>,
    /// With --dry-run: one model's US dollars per 1,000 prompt and per 1,000 completion
    /// tokens, e.g. `gpt-4o-mini=0.00015/0.0006` (repeat for each model; an embedding model
    /// has no completion: `text-embedding-3-small=0.00002/0`).
    #[arg(long = "price", value_name = "MODEL=IN/OUT", requires = "dry_run")]
    pub prices: Vec<String>,
}

/// How `--shards` splits the queries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Shards {
    /// Query i (from 0, in dataset order) to shard i mod N + 1.
    Positional(u16),
    /// As nextest's `hash:` partitions split the case's tests.
    Hash(u16),
}

impl Shards {
    fn parse(text: &str) -> std::result::Result<Shards, String> {
        let (hash, n) = match text.strip_prefix("hash:") {
            Some(n) => (true, n),
            None => (false, text),
        };
        match n.parse::<u16>() {
            Ok(n) if n >= 1 && hash => Ok(Shards::Hash(n)),
            Ok(n) if n >= 1 => Ok(Shards::Positional(n)),
            _ => Err(format!(
                "expected N or hash:N, N a number of shards from 1 to {}; got `{text}`",
                u16::MAX
            )),
        }
    }

    fn count(self) -> u16 {
        match self {
            Shards::Positional(n) | Shards::Hash(n) => n,
        }
    }
}

/// The shard (from 0, of `n`) that nextest's `hash:` partitions give the test `name`: the
/// XXH64 of its name (seed 0) modulo `n`, fixed for the whole cargo-nextest 0.9 series.
fn nextest_shard(name: &str, n: u16) -> usize {
    (xxhash_rust::xxh64::xxh64(name.as_bytes(), 0) % u64::from(n)) as usize
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

/// One kind of call of a dry run: to the generator, one judge, an embedder or the system
/// under test.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(super) struct Calls {
    /// `generator`, `judge`, `embedding` or `rag`.
    pub kind: &'static str,
    /// The judge, the generator's prompt (`answer`), what the embeddings are for (a metric,
    /// `corpus` or `queries`), or the system's spec for `rag`.
    pub name: String,
    /// The model called, when known: what `--price` names.
    pub model: Option<String>,
    /// Calls the run would send.
    pub calls: u64,
    /// Calls the cache would answer, sending nothing.
    pub cached: u64,
    /// Prompt (input) tokens of the calls to send.
    pub prompt_tokens: u64,
    /// At most this many completion tokens (the calls' `max_tokens`); `null` when unbounded
    /// or not a chat.
    pub completion_tokens_max: Option<u64>,
    /// A judge's: at most this many repair calls besides (an answer that breaks the judge's
    /// schema is sent back up to the judges' repair limit times); `null` for the others.
    pub repairs_max: Option<u64>,
    /// At most this many US dollars, with a price for the model.
    pub cost_usd_max: Option<f64>,
}

impl Calls {
    fn add(&mut self, other: &Calls) {
        self.calls += other.calls;
        self.cached += other.cached;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens_max = sum(self.completion_tokens_max, other.completion_tokens_max);
        self.repairs_max = sum(self.repairs_max, other.repairs_max);
    }

    fn priced(mut self, prices: &Prices) -> Self {
        self.cost_usd_max = prices.of(self.model.as_deref()).map(|p| {
            (self.prompt_tokens as f64 * p.prompt
                + self.completion_tokens_max.unwrap_or(0) as f64 * p.completion)
                / 1000.0
        });
        self
    }
}

fn sum(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// One model's price, US dollars per 1,000 tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(super) struct Price {
    /// Per 1,000 prompt tokens.
    pub prompt: f64,
    /// Per 1,000 completion tokens.
    pub completion: f64,
}

/// The prices of a dry run: each `--price` model's, and `--price-per-1k-tokens` for the rest.
#[derive(Debug, Default)]
struct Prices {
    models: BTreeMap<String, Price>,
    rest: Option<f64>,
}

impl Prices {
    fn parse(args: &DryRunArgs) -> Result<Self> {
        let dollars = |text: &str, what: &str| -> Result<f64> {
            match text.trim().parse::<f64>() {
                Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
                _ => bail!("{what} must be a number of dollars, 0 or more; got `{text}`"),
            }
        };
        let rest = match args.price_per_1k_tokens {
            Some(p) if !(p.is_finite() && p >= 0.0) => {
                bail!("--price-per-1k-tokens must be a number of dollars, 0 or more; got `{p}`")
            }
            rest => rest,
        };
        let mut models = BTreeMap::new();
        for text in &args.prices {
            let what = format!("--price `{text}`");
            let Some((model, both)) = text.rsplit_once('=') else {
                bail!("{what}: expected MODEL=IN/OUT, e.g. `gpt-4o-mini=0.00015/0.0006`");
            };
            let Some((prompt, completion)) = both.split_once('/') else {
                bail!("{what}: expected MODEL=IN/OUT (dollars per 1,000 prompt and completion tokens), e.g. `gpt-4o-mini=0.00015/0.0006`");
            };
            let price = Price {
                prompt: dollars(prompt, &format!("{what}: IN"))?,
                completion: dollars(completion, &format!("{what}: OUT"))?,
            };
            if models.insert(model.trim().to_owned(), price).is_some() {
                bail!("{what}: `{}` has a price already", model.trim());
            }
        }
        Ok(Prices { models, rest })
    }

    fn of(&self, model: Option<&str>) -> Option<Price> {
        model
            .and_then(|m| self.models.get(m).copied())
            .or(self.rest.map(|p| Price {
                prompt: p,
                completion: p,
            }))
    }
}

/// What `--dry-run` prints.
#[derive(Debug, Serialize)]
pub(super) struct Plan {
    /// The chunker (`eval` over a retriever, whose every `--chunker` is a run of its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunker: Option<String>,
    /// Queries of the dataset.
    pub queries: usize,
    /// What prompt tokens are counted with.
    pub tokenizer: &'static str,
    /// The price given for every model without one of its own, per 1,000 tokens.
    pub price_per_1k_tokens: Option<f64>,
    /// The prices of the models `--price` names.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, Price>,
    /// What is estimated rather than counted, when something is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
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

/// Requests counted by kind and name: what the cache answered and what would be sent.
#[derive(Default)]
struct Tally(Mutex<BTreeMap<(&'static str, String), Calls>>);

impl Tally {
    fn take(&self) -> Vec<Calls> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
            .into_values()
            .collect()
    }
}

/// A model's client in a dry run: `inner` answers from the cache or refuses (see
/// [`Unsent`](super::answering::Unsent)); each request is counted.
struct Counted {
    inner: Arc<dyn LlmClient>,
    tally: Arc<Tally>,
    kind: &'static str,
    model: String,
}

#[async_trait::async_trait]
impl LlmClient for Counted {
    fn name(&self) -> String {
        self.inner.name()
    }

    async fn complete(&self, request: &ChatRequest) -> crate::Result<ChatResponse> {
        let answer = self.inner.complete(request).await;
        let name = request
            .prompt_version
            .as_deref()
            .and_then(|v| v.split('/').next())
            .unwrap_or(self.kind)
            .to_owned();
        let mut tally = self.tally.0.lock().unwrap_or_else(|e| e.into_inner());
        let c = tally
            .entry((self.kind, name.clone()))
            .or_insert_with(|| Calls {
                kind: self.kind,
                name,
                model: Some(self.model.clone()),
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
            c.completion_tokens_max =
                sum(c.completion_tokens_max, request.max_tokens.map(u64::from));
        }
        answer
    }
}

/// An embedder that embeds nothing: every call fails, and the texts asked of it are kept.
/// Behind the cache, what it was asked are the texts the cache lacks.
struct Asked {
    inner: Arc<dyn Embedder>,
    texts: Mutex<Vec<String>>,
}

impl Asked {
    fn new(inner: Arc<dyn Embedder>) -> Self {
        Asked {
            inner,
            texts: Mutex::default(),
        }
    }

    fn refuse(&self, texts: &[String]) -> crate::Error {
        self.texts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(texts);
        crate::EmbedError::new(self.inner.name(), "a dry run embeds nothing").into()
    }
}

#[async_trait::async_trait]
impl Embedder for Asked {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    async fn embed(&self, texts: &[String]) -> crate::Result<Vec<Vec<f32>>> {
        Err(self.refuse(texts))
    }
    async fn embed_query(&self, query: &str) -> crate::Result<Vec<f32>> {
        Err(self.refuse(&[query.to_owned()]))
    }
    async fn embed_queries(&self, queries: &[String]) -> crate::Result<Vec<Vec<f32>>> {
        Err(self.refuse(queries))
    }
}

/// The embedder a dry run gives the judges: `embedder`'s name, no embedding.
pub(super) fn unembedded(embedder: Arc<dyn Embedder>) -> Arc<dyn Embedder> {
    Arc::new(Asked::new(embedder))
}

/// A dry run under way: what its clients counted.
#[derive(Default)]
pub(super) struct DryRun {
    tally: Arc<Tally>,
}

/// One query as a dry run sees it.
pub(super) struct Row<'a> {
    pub input: JudgeInput<'a>,
    /// Its reference answers (for `answer_similarity`'s embeddings).
    pub references: &'a [String],
    /// The generator's call for it (`eval --answers`).
    pub generated: Option<Calls>,
}

/// What a dry run needs besides the rows.
pub(super) struct Setting<'a> {
    pub args: &'a DryRunArgs,
    pub judging: Option<&'a Judging>,
    /// The answer metrics' embedder, when there is one (`answer_similarity`).
    pub embedder: Option<AnswerEmbedder>,
    /// The system under test, when each query asks it (`eval --rag`).
    pub rag: Option<Service>,
    /// A retriever's remote embedder (`eval`).
    pub retrieval: Option<&'a Embedding>,
}

impl Setting<'_> {
    /// The setting of `args` alone: no judge, embedder, system or retriever.
    pub fn new(args: &DryRunArgs) -> Setting<'_> {
        Setting {
            args,
            judging: None,
            embedder: None,
            rag: None,
            retrieval: None,
        }
    }
}

/// The system under test of `eval --rag` in a dry run.
pub(super) struct Service {
    /// Its spec, as it prints it.
    pub spec: String,
    /// The queries whose response the cache holds: the run would not send them.
    pub cached: HashSet<String>,
}

/// The context of a dry run with the cache `text` names (`--cache`): the file opened to be
/// read only, since a dry run records nothing, and no cache in `rw` mode while there is no file
/// (it would hold nothing): a dry run never creates the cache file. `off`, and `replay` of a
/// missing file, are as a run has them.
pub(super) fn cache_context(text: &str) -> Result<Context> {
    use crate::spec::Kind;
    let spec = Spec::parse(Kind::Cache, text)?;
    let mode: CacheMode = spec.name().parse()?;
    let path = camino::Utf8PathBuf::from(spec.text("path").unwrap_or(crate::cache::DEFAULT_PATH));
    Ok(match mode {
        CacheMode::Off => Context::new(),
        CacheMode::ReadWrite if !path.is_file() => Context::new(),
        // Read without a write (nor a file beside it); its misses count as calls.
        CacheMode::ReadWrite | CacheMode::Replay => {
            Context::new().with_cache(Arc::new(Cache::open_untouched(path)?))
        }
    })
}

/// The embedder of `answer_similarity` and `answer_relevancy` in a dry run.
pub(super) struct AnswerEmbedder {
    /// Texts per call.
    pub batch: usize,
    /// Its model, as `--price` names it.
    pub model: String,
    /// The embedder outside the cache, and the cache it is behind (none for `hashing`, which
    /// no cache keeps).
    pub cached: Option<(Arc<dyn Embedder>, Arc<Cache>)>,
}

impl AnswerEmbedder {
    /// `embedder`, built from `spec` behind `cache` when there is one.
    pub fn new(embedder: &dyn Embedder, spec: &str, cache: Option<&Arc<Cache>>) -> Result<Self> {
        let parsed = Spec::parse(crate::spec::Kind::Embedder, spec)?;
        let cached = match cache {
            // The embedder alone, outside the cache: its name and size key the cache.
            Some(cache) if parsed.name() != "hashing" => Some((
                crate::components::embedder_from(&parsed, &Context::new())
                    .map_err(|f| f.in_spec(crate::spec::Kind::Embedder.as_str(), spec))?,
                Arc::clone(cache),
            )),
            _ => None,
        };
        Ok(AnswerEmbedder {
            batch: embedder.preferred_batch_size().unwrap_or(64),
            model: embedding_model(&parsed),
            cached,
        })
    }
}

/// A retriever's remote embedder in a dry run: the texts the cache lacks, and the corpus's
/// embedding calls.
pub(super) struct Embedding {
    model: String,
    batch: usize,
    /// The queries whose embedding the cache lacks.
    queries_missing: HashSet<String>,
    /// The corpus's embedding calls: each machine's, made once per process that indexes.
    corpus: Calls,
}

/// How `eval --dry-run` retrieves: with the retriever itself when that calls nothing, else
/// with a stand-in.
struct Retrieval {
    retriever: Box<dyn AnyLevelRetriever>,
    embedding: Option<Embedding>,
    /// Why the chunks are a stand-in's, when they are.
    note: Option<String>,
}

/// What `eval --dry-run` plans for one chunker.
pub(super) struct EvalPlan<'a> {
    pub args: &'a DryRunArgs,
    /// The retriever's spec, parsed from `text`.
    pub spec: &'a Spec,
    pub text: &'a str,
    /// The context the retriever is built in: cache and chunker.
    pub context: &'a Context,
    pub chunker: Arc<dyn PositionAwareChunker>,
    pub label: String,
    pub corpus: &'a Arc<Corpus>,
    pub k: usize,
    /// The generator and judges, with --answers.
    pub answering: Option<&'a AnswerRun>,
}

impl Counter for DryRun {
    /// `inner` (the cache over [`Unsent`](super::answering::Unsent), or `Unsent` alone)
    /// counting its requests as calls of `kind` to `model`.
    fn counted(
        &self,
        inner: Arc<dyn LlmClient>,
        kind: &'static str,
        model: &str,
    ) -> Arc<dyn LlmClient> {
        Arc::new(Counted {
            inner,
            tally: Arc::clone(&self.tally),
            kind,
            model: model.to_owned(),
        })
    }
}

impl DryRun {
    /// The calls of `eval` over `d` with `p`'s retriever (and with --answers its generator and
    /// judges): the retrieval runs when it calls nothing, else bm25 over the same chunker
    /// stands in for it, so that the generator's prompts hold chunks of the corpus alike.
    pub fn plan_eval<L: Level>(&self, d: &Dataset<L>, p: &EvalPlan<'_>) -> Result<Plan> {
        let questions: Vec<String> = d.examples().iter().map(|e| e.query.clone()).collect();
        let runtime = super::runtime()?;
        let retrieval = runtime.block_on(retrieval(p, &questions))?;
        let references: Vec<Option<String>> = d
            .examples()
            .iter()
            .map(|e| crate::judge::reference_text(&e.reference_answers))
            .collect();
        let mut answers: Vec<(RagAnswer, Option<Calls>)> = Vec::new();
        if let Some(run) = p.answering {
            let r = &*retrieval.retriever as &dyn Retriever<TokenLevel>;
            runtime.block_on(r.index(p.corpus))?;
            for q in &questions {
                let hits: Vec<RetrievedChunk> = runtime.block_on(r.retrieve(q, p.k))?;
                // The answer the cache holds, else a one-word stand-in over the chunks.
                let answer = runtime
                    .block_on(run.generator().generate(q, &hits))
                    .unwrap_or(RagAnswer {
                        answer: "answer".into(),
                        contexts: hits,
                    });
                answers.push((answer, self.tally.take().pop()));
            }
        }
        let empty = RagAnswer {
            answer: String::new(),
            contexts: Vec::new(),
        };
        let rows: Vec<Row<'_>> = d
            .examples()
            .iter()
            .zip(&references)
            .enumerate()
            .map(|(i, (e, reference))| {
                let (answer, generated) = answers
                    .get(i)
                    .map_or((&empty, None), |(a, g)| (a, g.clone()));
                Row {
                    input: JudgeInput {
                        query_id: &e.id,
                        question: &e.query,
                        answer,
                        reference: reference.as_deref(),
                    },
                    references: &e.reference_answers,
                    generated,
                }
            })
            .collect();
        let setting = Setting {
            judging: p.answering.and_then(|a| a.judging.as_ref()),
            retrieval: retrieval.embedding.as_ref(),
            ..Setting::new(p.args)
        };
        let mut plan = self.plan(&rows, &setting)?;
        plan.chunker = Some(p.label.clone());
        plan.note = retrieval.note;
        Ok(plan)
    }

    /// Counts the calls of `rows` in each shard, and over all.
    pub fn plan(&self, rows: &[Row<'_>], s: &Setting<'_>) -> Result<Plan> {
        let prices = Prices::parse(s.args)?;
        // The answers and references `answer_similarity` would embed that the cache lacks.
        let lacking_similarity = match s.embedder.as_ref().and_then(|e| e.cached.as_ref()) {
            Some((embedder, cache)) => {
                let texts: Vec<String> = similarity_texts(rows.iter()).map(str::to_owned).collect();
                Some(super::runtime()?.block_on(lacking(Some(cache), embedder, &texts, false))?)
            }
            None => None,
        };
        let n = s.args.shards.map_or(1, Shards::count);
        let shard_of = |i: usize, row: &Row<'_>| -> Result<usize> {
            Ok(match (s.args.shards, &s.args.case) {
                (Some(Shards::Hash(n)), Some(case)) => {
                    nextest_shard(&format!("{case}::{}", row.input.query_id), n)
                }
                (Some(Shards::Hash(_)), None) => bail!(
                    "--shards hash:N splits the tests as nextest does, by name: give --case CASE (its tests are named CASE::<query id>)"
                ),
                (_, Some(case)) => bail!(
                    "--case {case} names the tests that --shards hash:N splits; with --shards N the queries go to the shards in turn"
                ),
                _ => i % usize::from(n),
            })
        };
        let assigned: Vec<usize> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| shard_of(i, r))
            .collect::<Result<_>>()?;
        let mut shards = Vec::with_capacity(usize::from(n));
        for shard in 0..usize::from(n) {
            let mine: Vec<&Row<'_>> = rows
                .iter()
                .zip(&assigned)
                .filter(|(_, a)| **a == shard)
                .map(|(r, _)| r)
                .collect();
            let calls = self.shard(&mine, s, lacking_similarity.as_ref())?;
            shards.push(ShardPlan {
                shard: shard + 1,
                queries: mine.len(),
                calls: calls.into_iter().map(|c| c.priced(&prices)).collect(),
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
            chunker: None,
            queries: rows.len(),
            tokenizer: TOKENIZER,
            price_per_1k_tokens: prices.rest,
            note: None,
            total: total.into_iter().map(|c| c.priced(&prices)).collect(),
            shards: if s.args.shards.is_some() {
                shards
            } else {
                Vec::new()
            },
            prices: prices.models,
        })
    }

    /// The calls of `rows`: the retriever's embeddings, the system's, the generator's, the
    /// judges' (run over the counting client), and the embedder's.
    fn shard(
        &self,
        rows: &[&Row<'_>],
        s: &Setting<'_>,
        lacking_similarity: Option<&HashSet<String>>,
    ) -> Result<Vec<Calls>> {
        let similarity = || similarity(rows, s.embedder.as_ref(), lacking_similarity);
        let mut calls = Vec::new();
        if let Some(e) = s.retrieval {
            calls.push(e.corpus.clone());
            let questions: Vec<&str> = rows.iter().map(|r| r.input.question).collect();
            calls.push(batched(
                "queries",
                &e.model,
                &questions,
                &|q| !e.queries_missing.contains(q),
                e.batch,
            ));
        }
        if let Some(service) = &s.rag {
            let cached = rows
                .iter()
                .filter(|r| service.cached.contains(r.input.query_id))
                .count() as u64;
            calls.push(Calls {
                kind: "rag",
                name: service.spec.clone(),
                calls: rows.len() as u64 - cached,
                cached,
                ..Calls::default()
            });
        }
        let mut generated: Option<Calls> = None;
        for g in rows.iter().filter_map(|r| r.generated.as_ref()) {
            match &mut generated {
                Some(all) => all.add(g),
                None => generated = Some(g.clone()),
            }
        }
        calls.extend(generated);
        let Some(judging) = s.judging else {
            calls.extend(similarity());
            return Ok(calls);
        };
        let inputs: Vec<JudgeInput<'_>> = rows.iter().map(|r| r.input).collect();
        super::runtime()?.block_on(judging.rehearse(&inputs));
        calls.extend(self.tally.take().into_iter().map(|mut c| {
            c.repairs_max = Some(c.calls * u64::from(judging.repairs()));
            c
        }));
        calls.extend(similarity());
        if let (true, Some(e)) = (judging.has("answer_relevancy"), &s.embedder) {
            // Per sample of a query: the generated questions in one call, the question in
            // another; the generated ones taken to be as long as the question.
            let samples = u64::from(judging.samples());
            let question_tokens: u64 = rows.iter().map(|r| tokens(r.input.question)).sum();
            calls.push(Calls {
                kind: "embedding",
                name: "answer_relevancy".into(),
                model: Some(e.model.clone()),
                calls: 2 * samples * rows.len() as u64,
                prompt_tokens: (RELEVANCY_QUESTIONS + 1) * samples * question_tokens,
                ..Calls::default()
            });
        }
        Ok(calls)
    }
}

/// The embedding calls `name` of `texts` to `model` as the run batches them: each distinct
/// text once, in batches of `batch`; a batch whose every text the cache holds (`cached` says
/// which) is a cached call, any other a call with the tokens of the texts it lacks.
fn batched(
    name: &str,
    model: &str,
    texts: &[&str],
    cached: &dyn Fn(&str) -> bool,
    batch: usize,
) -> Calls {
    let mut seen = HashSet::new();
    let distinct: Vec<&str> = texts.iter().copied().filter(|t| seen.insert(*t)).collect();
    let mut c = Calls {
        kind: "embedding",
        name: name.into(),
        model: Some(model.to_owned()),
        ..Calls::default()
    };
    for b in distinct.chunks(batch.max(1)) {
        let lacking: Vec<&str> = b.iter().copied().filter(|t| !cached(t)).collect();
        if lacking.is_empty() {
            c.cached += 1;
        } else {
            c.calls += 1;
            c.prompt_tokens += lacking.into_iter().map(tokens).sum::<u64>();
        }
    }
    c
}

/// The texts of `texts` that `cache` lacks for `embedder` (all of them without a cache), as
/// documents or as `queries`. Nothing is embedded: the texts the cache lacks are refused.
async fn lacking(
    cache: Option<&Arc<Cache>>,
    embedder: &Arc<dyn Embedder>,
    texts: &[String],
    queries: bool,
) -> Result<HashSet<String>> {
    let Some(cache) = cache else {
        return Ok(texts.iter().cloned().collect());
    };
    let ask = |texts: Vec<String>| {
        let asked = Arc::new(Asked::new(Arc::clone(embedder)));
        let cached = CachedEmbedder::new(Arc::clone(&asked), Arc::clone(cache));
        async move {
            let found = if queries {
                cached.embed_queries(&texts).await
            } else {
                cached.embed(&texts).await
            };
            let asked = std::mem::take(&mut *asked.texts.lock().unwrap_or_else(|e| e.into_inner()));
            (found, asked)
        }
    };
    match ask(texts.to_vec()).await {
        (Ok(_), _) => Ok(HashSet::new()),
        (Err(_), asked) if !asked.is_empty() => Ok(asked.into_iter().collect()),
        // In replay mode a miss fails before anything is asked: one text at a time then.
        (Err(crate::Error::CacheMiss { .. }), _) if cache.mode() == CacheMode::Replay => {
            let mut missing = HashSet::new();
            for t in texts {
                if let (Err(_), _) = ask(vec![t.clone()]).await {
                    missing.insert(t.clone());
                }
            }
            Ok(missing)
        }
        (Err(e), _) => Err(e.into()),
    }
}

/// The retrieval of `eval --dry-run`: the retriever `p` names when it calls nothing (bm25, a
/// dense pipeline in memory whose embedder is local or whose every text the cache holds), else
/// bm25 over the same chunker; with a remote embedder, the texts the cache lacks.
async fn retrieval(p: &EvalPlan<'_>, questions: &[String]) -> Result<Retrieval> {
    let retriever = crate::components::build_parsed_retriever(p.spec, p.text, p.context)?;
    let mut remote: Vec<String> = Vec::new();
    let mut embedding = None;
    if p.spec.name() == "dense" {
        if let Some(store) = p.spec.nested("store").filter(|s| s.name() != "memory") {
            remote.push(format!("store `{store}`"));
        }
        if let Some(reranker) = p.spec.nested("reranker") {
            remote.push(format!("reranker `{reranker}`"));
        }
        if let Some(e) = p
            .spec
            .nested("embedder")
            .filter(|e| !matches!(e.name(), "hashing" | "onnx"))
        {
            // The embedder alone, outside the cache: its name and size key the cache.
            let embedder = crate::components::embedder_from(e, &Context::new())
                .map_err(|f| f.in_spec(crate::spec::Kind::Embedder.as_str(), &e.to_string()))?;
            let batch = embedder.preferred_batch_size().unwrap_or(64).max(1);
            let model = embedding_model(e);
            let chunks: Vec<String> = p
                .chunker
                .chunk_corpus(p.corpus)
                .into_iter()
                .map(|c| c.content)
                .collect();
            let cache = p.context.cache();
            let documents_missing = lacking(cache, &embedder, &chunks, false).await?;
            let queries_missing = lacking(cache, &embedder, questions, true).await?;
            let texts: Vec<&str> = chunks.iter().map(String::as_str).collect();
            let corpus = batched(
                "corpus",
                &model,
                &texts,
                &|t| !documents_missing.contains(t),
                batch,
            );
            let lacked = documents_missing.len() + queries_missing.len();
            if lacked > 0 {
                remote.push(format!("embedder `{e}` ({lacked} texts the cache lacks)"));
            }
            embedding = Some(Embedding {
                model,
                batch,
                queries_missing,
                corpus,
            });
        }
    }
    if remote.is_empty() {
        return Ok(Retrieval {
            retriever,
            embedding,
            note: None,
        });
    }
    Ok(Retrieval {
        retriever: Box::new(Bm25Retriever::from_arc(Arc::clone(&p.chunker))),
        embedding,
        note: Some(format!(
            "retrieving would call the {}: the generator's and judges' prompts hold bm25's {} chunks over the same chunker instead, an estimate",
            remote.join(", the "),
            p.k
        )),
    })
}

/// The model of an embedder's spec, as `--price` names it: its `model` key, else its name
/// (`hashing`, `onnx`).
fn embedding_model(spec: &Spec) -> String {
    spec.text("model").unwrap_or(spec.name()).to_owned()
}

/// The texts `answer_similarity` embeds for `rows`: each answer with a reference, and its
/// references.
fn similarity_texts<'a>(rows: impl Iterator<Item = &'a Row<'a>>) -> impl Iterator<Item = &'a str> {
    rows.filter(|r| !r.references.is_empty()).flat_map(|r| {
        std::iter::once(r.input.answer.answer.as_str())
            .chain(r.references.iter().map(String::as_str))
    })
}

/// `answer_similarity`'s embeddings, as the run batches them (none without an embedder); with
/// a cache, `lacking` are the texts it lacks.
fn similarity(
    rows: &[&Row<'_>],
    embedder: Option<&AnswerEmbedder>,
    lacking: Option<&HashSet<String>>,
) -> Option<Calls> {
    let e = embedder?;
    let texts: Vec<&str> = similarity_texts(rows.iter().copied()).collect();
    let cached = |t: &str| lacking.is_some_and(|l| !l.contains(t));
    Some(batched(
        "answer_similarity",
        &e.model,
        &texts,
        &cached,
        e.batch,
    ))
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
    if let Some(c) = &plan.chunker {
        text.push_str(&format!("chunker: {}\n", crate::escape::terminal(c)));
    }
    if let Some(note) = &plan.note {
        text.push_str(&format!("note: {}\n", crate::escape::terminal(note)));
    }
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
    Ok(out.text(&format!("{}\n", text.trim_end()))?)
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
        if let Some(r) = c.repairs_max.filter(|r| *r > 0) {
            s.push_str(&format!(", up to {r} repairs"));
        }
        if let Some(cost) = c.cost_usd_max {
            s.push_str(&format!(", at most ${cost:.4}"));
        }
        s.push('\n');
    }
    s
}
