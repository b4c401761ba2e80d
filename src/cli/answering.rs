//! `rag-eval eval --answers`: answers generated over the retrieved chunks, then judged.

use crate::cache::{Cache, CachedLlm};
use crate::chunk::RetrievedChunk;
use crate::generator::{Generator, LlmGenerator, RagAnswer};
use crate::judge::{add_to_result, judge_all, Faithfulness, JudgeConfig, JudgeInput, JudgeSummary};
use crate::level::Level;
use crate::llm::{LlmClient, OpenAiChat};
use crate::metrics::RunResult;
use crate::retrieve::Retriever;
use anyhow::{bail, Result};
use clap::Args;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
    base_url: String,
    /// Environment variable holding the API key (local servers need none).
    #[arg(long, value_name = "VAR", default_value = "OPENAI_API_KEY")]
    api_key_env: String,
    /// The judge's model: with it, the answers' faithfulness is judged.
    #[arg(long, requires = "answers")]
    judge_model: Option<String>,
    /// Base URL of the judge's server (default: the generator's).
    #[arg(long, requires = "judge_model")]
    judge_url: Option<String>,
    /// Judgings per answer.
    #[arg(long, default_value_t = 1, requires = "judge_model")]
    judge_samples: u32,
    /// Share of judge answers that may be invalid or failed before the run fails.
    #[arg(long, default_value_t = 0.05, requires = "judge_model")]
    max_invalid_share: f64,
}

fn client(
    model: &str,
    url: &str,
    key_env: &str,
    cache: Option<&Arc<Cache>>,
) -> Result<Arc<dyn LlmClient>> {
    let key_set = std::env::var(key_env).is_ok_and(|v| !v.trim().is_empty());
    if !key_set && url.contains("api.openai.com") {
        bail!(
            "environment variable `{key_env}` (--api-key-env) is not set; OpenAI needs a key (local servers do not: give their --base-url)"
        );
    }
    let chat = OpenAiChat::builder(model)
        .base_url(url)
        .api_key_env(key_env)
        .build()?;
    Ok(match cache {
        Some(cache) => Arc::new(CachedLlm::new(chat, cache.clone())),
        None => Arc::new(chat),
    })
}

/// A retriever that also answers: each query's chunks go to the generator, the answer is kept.
pub(super) struct Answering<'a, R: ?Sized> {
    retriever: &'a R,
    generator: &'a LlmGenerator<Arc<dyn LlmClient>>,
    answers: Mutex<HashMap<String, RagAnswer>>,
    bar: Option<indicatif::ProgressBar>,
}

#[async_trait::async_trait]
impl<L: Level, R: Retriever<L> + ?Sized> Retriever<L> for Answering<'_, R> {
    fn name(&self) -> String {
        self.retriever.name()
    }

    fn spec(&self) -> String {
        self.retriever.spec()
    }

    fn chunker(&self) -> Option<String> {
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
        let hits = self.retriever.retrieve(query, k).await?;
        let answer = self.generator.generate(query, &hits).await?;
        self.answers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(query.to_owned(), answer);
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
        Ok(hits)
    }
}

/// The generator and judge of one `eval --answers` run.
pub(super) struct AnswerRun {
    generator: LlmGenerator<Arc<dyn LlmClient>>,
    judge: Option<(Arc<dyn LlmClient>, JudgeConfig)>,
    /// The judges' summaries, for the closing lines.
    pub summaries: Vec<JudgeSummary>,
}

impl AnswerRun {
    /// The clients `a` names, behind `cache` when there is one.
    pub fn new(a: &AnswerArgs, cache: Option<&Arc<Cache>>) -> Result<Self> {
        let Some(model) = &a.model else {
            bail!("--answers needs --model (the generator's model)");
        };
        if !(0.0..=1.0).contains(&a.max_invalid_share) {
            bail!(
                "--max-invalid-share must be between 0 and 1, got {}",
                a.max_invalid_share
            );
        }
        if a.judge_samples == 0 {
            bail!("--judge-samples must be at least 1");
        }
        let generator = LlmGenerator::new(client(model, &a.base_url, &a.api_key_env, cache)?);
        let judge = match &a.judge_model {
            Some(m) => {
                let url = a.judge_url.as_deref().unwrap_or(&a.base_url);
                let config = JudgeConfig {
                    samples: a.judge_samples,
                    max_invalid_share: a.max_invalid_share,
                    ..JudgeConfig::default()
                };
                Some((client(m, url, &a.api_key_env, cache)?, config))
            }
            None => None,
        };
        Ok(AnswerRun {
            generator,
            judge,
            summaries: Vec::new(),
        })
    }

    /// `retriever` answering too, with a progress bar over `queries` on a terminal.
    pub fn wrap<'a, R: ?Sized>(&'a self, retriever: &'a R, queries: usize) -> Answering<'a, R> {
        use std::io::IsTerminal;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(queries as u64);
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} queries answered, {elapsed} elapsed, eta {eta}",
                )
                .expect("the template is valid"),
            );
            bar
        });
        Answering {
            retriever,
            generator: &self.generator,
            answers: Mutex::default(),
            bar,
        }
    }

    /// Judges the answers `answering` kept and adds the figures to `result`.
    pub async fn score<R: ?Sized>(
        &self,
        answering: Answering<'_, R>,
        result: &mut RunResult,
    ) -> Option<JudgeSummary> {
        if let Some(bar) = &answering.bar {
            bar.finish_and_clear();
        }
        let (client, config) = self.judge.as_ref()?;
        let answers = answering
            .answers
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        let empty = RagAnswer {
            answer: String::new(),
            contexts: Vec::new(),
        };
        let inputs: Vec<JudgeInput<'_>> = result
            .per_query
            .iter()
            .map(|q| {
                let question = q.query.as_deref().unwrap_or_default();
                JudgeInput {
                    query_id: &q.id,
                    question,
                    answer: answers.get(question).unwrap_or(&empty),
                    reference: None,
                }
            })
            .collect();
        let run = judge_all(&Faithfulness::new(client.clone()), &inputs, config).await;
        drop(inputs);
        add_to_result(result, &run);
        Some(run.summary)
    }

    /// Tokens and judge counts, one line each, for stderr.
    pub fn usage_lines(&self) -> String {
        let u = self.generator.usage();
        let mut s = format!(
            "generator: {} tokens ({} prompt, {} completion)\n",
            u.total(),
            u.prompt_tokens,
            u.completion_tokens
        );
        for j in &self.summaries {
            s.push_str(&format!(
                "{}: {} calls ({} repairs), {} tokens; {} of {} samples scored, {} undetermined, {} invalid, {} failed\n",
                j.metric,
                j.usage.calls,
                j.usage.repairs,
                j.usage.tokens(),
                j.ok,
                j.samples,
                j.undetermined,
                j.invalid,
                j.error
            ));
        }
        s
    }

    /// The judges whose invalid or failed answers exceed the allowed share.
    pub fn gate_failures(&self) -> Vec<String> {
        self.summaries
            .iter()
            .filter(|s| s.gate_fails())
            .map(|s| {
                format!(
                    "{}: {:.1}% of the judge's answers were invalid or failed, above --max-invalid-share {:.1}%",
                    s.metric,
                    100.0 * s.invalid_share(),
                    100.0 * s.max_invalid_share
                )
            })
            .collect()
    }
}
