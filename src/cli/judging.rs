//! The LLM judges of `eval --answers`, `eval --rag` and `score --answers`: their options, the
//! judges they pick, the figures they add, and what a run record keeps of them.

use crate::embed::Embedder;
use crate::http::HttpClient;
use crate::judge::{
    add_to_result, judge_all, judge_all_reporting, AnswerMatch, AnswerRelevancy, Criteria,
    CriteriaJudge, Faithfulness, Judge, JudgeConfig, JudgeInput, JudgeSummary, LlmContextPrecision,
    LlmContextRecall,
};
use crate::llm::LlmClient;
use crate::metrics::RunResult;
use crate::runs::{RunRecord, Spend};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::sync::Arc;

/// The judge options `eval --answers`, `eval --rag` and `score --answers` share. Each command
/// names the options that bring answers in a group `judged`, which the judge's model requires.
#[derive(Args, Clone)]
pub(super) struct JudgeArgs {
    /// The judge's model: with it, the answers are judged.
    #[arg(long, requires = "judged")]
    pub judge_model: Option<String>,
    /// Base URL of the judge's OpenAI-compatible server (eval: default --base-url).
    #[arg(long, requires = "judge_model")]
    pub judge_url: Option<String>,
    /// Judgings per answer, 1 to 100 (each one a call to the judge's model).
    #[arg(
        long,
        default_value_t = 1,
        requires = "judge_model",
        value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::judge::MAX_SAMPLES))
    )]
    pub judge_samples: u32,
    /// The judges, comma-separated: faithfulness, answer_relevancy, llm_context_precision,
    /// llm_context_recall, answer_match (score and eval --rag: every one; eval --answers:
    /// faithfulness); with --conversations also goal_accuracy, topic_adherence and
    /// knowledge_retention.
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        requires = "judge_model"
    )]
    pub judges: Vec<String>,
    /// A criteria judge's Markdown file (repeat for several): the team's criterion, reported
    /// under the name in its header. With --criteria and no --judges, only the criteria
    /// judges run.
    #[arg(long, value_name = "FILE", requires = "judge_model")]
    pub criteria: Vec<camino::Utf8PathBuf>,
    /// Criteria judges ask for no token log-probabilities: the score is the sampled verdict's,
    /// not the probability-weighted mean of the verdicts (for a server that refuses
    /// `logprobs`, or to see the unweighted figure).
    #[arg(long, requires = "criteria")]
    pub no_logprobs: bool,
    /// Share of judge answers that may be invalid or failed before the run fails.
    #[arg(long, default_value_t = 0.05, requires = "judge_model")]
    pub max_invalid_share: f64,
    /// The most requests in flight at once to the generator's and to the judge's server, 1 to
    /// 256 (also the answers judged at once); fewer while a server answers 429 or 503, times
    /// out or slows down, growing back as it recovers.
    #[arg(
        long,
        value_name = "N",
        default_value_t = crate::http::DEFAULT_CONCURRENCY,
        value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u16).range(1..=256), usize::from)
    )]
    pub concurrency: usize,
}

/// The judges of one run: the model, the settings, the judges picked, and their summaries.
pub(super) struct Judging {
    model: String,
    config: JudgeConfig,
    judges: Vec<Arc<dyn Judge>>,
    /// The judges' HTTP client, whose retries each judge run counts.
    http: HttpClient,
    /// One per judge run, for the closing lines, the gate and the record.
    pub summaries: Vec<JudgeSummary>,
}

impl Judging {
    /// The judges `a` asks for (`default` when it names none) through `client` (over `http`). Without an
    /// `embedder`, answer_relevancy is an error when asked for by name and left out with a
    /// notice when it is only a default.
    pub fn new(
        a: &JudgeArgs,
        model: &str,
        client: Arc<dyn LlmClient>,
        http: HttpClient,
        embedder: Option<Arc<dyn Embedder>>,
        default: &[&str],
        no_embedder: &str,
    ) -> Result<Self> {
        if !(0.0..=1.0).contains(&a.max_invalid_share) {
            bail!(
                "--max-invalid-share must be between 0 and 1, got {}",
                a.max_invalid_share
            );
        }
        if a.judge_samples == 0 {
            bail!("--judge-samples must be at least 1");
        }
        let explicit = !a.judges.is_empty();
        let mut names: Vec<&str> = if explicit {
            a.judges.iter().map(|n| n.trim()).collect()
        } else if a.criteria.is_empty() {
            default.to_vec()
        } else {
            Vec::new()
        };
        let known = crate::metrics::registry::judge_names();
        if let Some(bad) = names.iter().find(|n| !known.contains(n)) {
            bail!(
                "--judges: unknown judge `{bad}` (known: {})",
                known.join(", ")
            );
        }
        names.sort_by_key(|n| known.iter().position(|j| j == n));
        names.dedup();
        let mut judges: Vec<Arc<dyn Judge>> = Vec::new();
        for name in names {
            let c = client.clone();
            judges.push(match (name, &embedder) {
                ("faithfulness", _) => Arc::new(Faithfulness::new(c)),
                ("answer_relevancy", Some(e)) => Arc::new(AnswerRelevancy::new(c, e.clone())),
                ("answer_relevancy", None) if explicit => {
                    bail!("--judges answer_relevancy needs an embedder: {no_embedder}")
                }
                ("answer_relevancy", None) => {
                    note!("answer_relevancy is left out: it needs an embedder ({no_embedder})");
                    continue;
                }
                ("llm_context_precision", _) => Arc::new(LlmContextPrecision::new(c)),
                ("llm_context_recall", _) => Arc::new(LlmContextRecall::new(c)),
                _ => Arc::new(AnswerMatch::new(c)),
            });
        }
        for path in &a.criteria {
            let criteria = Criteria::from_file(path).context("--criteria")?;
            if judges.iter().any(|j| j.name() == criteria.name) {
                bail!(
                    "--criteria {path}: another --criteria file is named `{}` too",
                    criteria.name
                );
            }
            judges.push(Arc::new(
                CriteriaJudge::new(client.clone(), criteria).with_logprobs(!a.no_logprobs),
            ));
        }
        Ok(Judging {
            model: model.to_owned(),
            config: JudgeConfig {
                samples: a.judge_samples,
                max_invalid_share: a.max_invalid_share,
                concurrency: a.concurrency,
                ..JudgeConfig::default()
            },
            judges,
            http,
            summaries: Vec::new(),
        })
    }

    /// Runs every judge over `inputs` (one per query of `result`, by id) and adds the figures
    /// to `result`, each judge a stage of `case`'s progress line. The summaries of this call;
    /// [`Judging::summaries`] keeps every call's.
    pub async fn judge(
        &mut self,
        case: &str,
        inputs: &[JudgeInput<'_>],
        result: &mut RunResult,
    ) -> Vec<JudgeSummary> {
        let first = self.summaries.len();
        let shown = crate::harness::progress::show(case, "judge", inputs.len());
        let task = shown.as_ref().map(|s| s.task());
        let done = || task.iter().for_each(|t| t.add(1));
        for judge in &self.judges {
            task.iter()
                .for_each(|t| t.stage(&format!("judge {}", judge.name()), inputs.len()));
            // The judges run one after the other, so the client's retries meanwhile are this
            // judge's.
            let before = self.http.stats().retries;
            let mut run = judge_all_reporting(judge.as_ref(), inputs, &self.config, &done).await;
            run.summary.retries = self.http.stats().retries - before;
            add_to_result(result, &run);
            self.summaries.push(run.summary);
        }
        self.summaries[first..].to_vec()
    }

    /// Runs every judge over `inputs` and drops the figures: for a dry run, whose client
    /// counts the requests and sends none.
    pub async fn rehearse(&self, inputs: &[JudgeInput<'_>]) {
        for judge in &self.judges {
            judge_all(judge.as_ref(), inputs, &self.config).await;
        }
    }

    /// The judges, in the order they run: the named ones, then the criteria judges.
    pub fn judges(&self) -> &[Arc<dyn Judge>] {
        &self.judges
    }

    /// Adds `judge` after the others (a judge the command builds itself).
    pub fn push(&mut self, judge: Arc<dyn Judge>) {
        self.judges.push(judge);
    }

    /// How the judges call the model.
    pub fn config(&self) -> &JudgeConfig {
        &self.config
    }

    /// The judges' HTTP client's retries so far.
    pub fn retries(&self) -> u64 {
        self.http.stats().retries
    }

    /// Whether the judge `name` is among these.
    pub fn has(&self, name: &str) -> bool {
        self.judges.iter().any(|j| j.name() == name)
    }

    /// Judgings per answer.
    pub fn samples(&self) -> u32 {
        self.config.samples
    }

    /// Repairs of an answer that breaks a judge's schema, at most, per call.
    pub fn repairs(&self) -> u32 {
        self.config.repairs
    }

    /// Calls, retries, tokens and judge counts, one line per judge (with faithfulness's
    /// statements whose evidence is in no context, when there are any), each followed by the
    /// first failure of each kind with its count, for stderr.
    pub fn usage_lines(&self) -> String {
        self.summaries
            .iter()
            .map(JudgeSummary::usage_lines)
            .collect()
    }

    /// The judges whose invalid or failed answers exceed the allowed share, each with its
    /// most frequent failure.
    pub fn gate_failures(&self) -> Vec<String> {
        self.summaries
            .iter()
            .filter_map(|s| s.gate_failure("--max-invalid-share"))
            .collect()
    }

    /// Puts the judges in `record`: the model (never its URL), the samples, the prompt
    /// versions, and the tokens of `summaries` (the run's) under the run's judge usage.
    pub fn fill(&self, record: &mut RunRecord, summaries: &[JudgeSummary]) {
        let c = &mut record.config;
        if !c.judge_models.contains(&self.model) {
            c.judge_models.push(self.model.clone());
        }
        c.judge_samples = Some(self.config.samples);
        for j in &self.judges {
            let v = j.prompt_version();
            if !c.judge_prompts.contains(&v) {
                c.judge_prompts.push(v);
            }
        }
        record.add_chat_usage(None, Spend::of_judges(summaries));
    }
}
