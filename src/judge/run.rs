//! Judging many queries: repeats, the summary a gate reads, pass^n.

use super::{Judge, JudgeConfig, JudgeInput};
use crate::metrics::{JudgeStatus, JudgeUsage, QueryJudgement};
use futures_util::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};

/// Judges one query `config.samples` times (sample indices 0, 1, …).
pub async fn judge_query(
    judge: &dyn Judge,
    input: &JudgeInput<'_>,
    config: &JudgeConfig,
) -> QueryJudgement {
    let mut samples = Vec::new();
    for sample in 0..config.samples.max(1) {
        samples.push(judge.judge(input, sample, config).await);
    }
    QueryJudgement {
        metric: judge.name().to_owned(),
        query_id: input.query_id.to_owned(),
        samples,
    }
}

/// Every query's judgement, in input order, and their summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeRun {
    /// One per input, in input order.
    pub judgements: Vec<QueryJudgement>,
    /// Counts, mean, spread and usage.
    pub summary: JudgeSummary,
}

/// Judges every input, `config.concurrency` queries at a time.
pub async fn judge_all(
    judge: &dyn Judge,
    inputs: &[JudgeInput<'_>],
    config: &JudgeConfig,
) -> JudgeRun {
    judge_all_reporting(judge, inputs, config, &|| {}).await
}

/// [`judge_all`], calling `done` as each query's judging ends (for a progress bar).
pub async fn judge_all_reporting(
    judge: &dyn Judge,
    inputs: &[JudgeInput<'_>],
    config: &JudgeConfig,
    done: &(dyn Fn() + Sync),
) -> JudgeRun {
    let judgements: Vec<QueryJudgement> = stream::iter(inputs)
        .map(|input| async move {
            let j = judge_query(judge, input, config).await;
            done();
            j
        })
        .buffered(config.concurrency.max(1))
        .collect()
        .await;
    let summary = JudgeSummary::new(judge.name(), &judgements, config.max_invalid_share);
    JudgeRun {
        judgements,
        summary,
    }
}

/// What one judge's run amounts to.
///
/// `mean` and `std` are over queries with at least one `ok` sample, each query contributing the
/// mean of its `ok` samples; `invalid` and `error` samples are left out and counted, and the
/// gate fails when their share of all samples exceeds `max_invalid_share`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeSummary {
    /// The metric.
    pub metric: String,
    /// Queries judged.
    pub queries: usize,
    /// Queries with a score.
    pub scored: usize,
    /// Mean over scored queries (`None` when none scored).
    pub mean: Option<f64>,
    /// Population standard deviation over scored queries.
    pub std: Option<f64>,
    /// Mean over scored queries of the standard deviation of their samples (0 with one sample).
    pub mean_spread: Option<f64>,
    /// Samples judged (queries × samples).
    pub samples: usize,
    /// Samples with status `ok`.
    pub ok: usize,
    /// Samples with status `undetermined`.
    pub undetermined: usize,
    /// Samples with status `invalid`.
    pub invalid: usize,
    /// Samples with status `error`.
    pub error: usize,
    /// Faithfulness: statements of scored samples the judge called supported whose quoted
    /// evidence is in no context, counted unsupported ([`Statement::unlocated`]); claims:
    /// entailments by a chunk whose quote is not in it, counted neutral
    /// ([`ClaimCheck::unlocated`](super::ClaimCheck::unlocated)); 0 for the other judges.
    ///
    /// [`Statement::unlocated`]: super::Statement::unlocated
    #[serde(default)]
    pub unlocated: usize,
    /// Calls and tokens of the whole run.
    pub usage: JudgeUsage,
    /// HTTP requests sent again after a transient failure (a timeout, 429, 5xx) during the
    /// run: a provider may bill them, and `usage.calls` does not count them. Filled in by
    /// whoever runs the judge over an HTTP client (the CLI and the `cargo test` harness do,
    /// from [`LlmClient::http_retries`](crate::llm::LlmClient::http_retries)); 0 otherwise.
    #[serde(default)]
    pub retries: u64,
    /// The `invalid` and `error` samples by kind of failure, most frequent first, each with
    /// the first message of its kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<FailureCount>,
    /// The share of `invalid` and `error` samples above which the gate fails.
    pub max_invalid_share: f64,
}

/// How many samples failed one way, and the first message of that way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureCount {
    /// `invalid answer` for an answer that broke the judge's schema; for an `error`, its
    /// [`failure_kind`](super::failure_kind) (`HTTP 401`, `unreachable`, `replay miss`, …).
    pub kind: String,
    /// Samples that failed this way.
    pub count: usize,
    /// The first such sample's message (in query order).
    pub first: String,
}

impl FailureCount {
    /// `40 × unreachable, first: …`, for a person.
    pub fn describe(&self) -> String {
        format!("{} × {}, first: {}", self.count, self.kind, self.first)
    }
}

impl JudgeSummary {
    /// The summary of `judgements` of `metric`.
    pub fn new(metric: &str, judgements: &[QueryJudgement], max_invalid_share: f64) -> Self {
        let count = |st: JudgeStatus| {
            judgements
                .iter()
                .flat_map(|j| &j.samples)
                .filter(|s| s.status == st)
                .count()
        };
        let scores: Vec<f64> = judgements.iter().filter_map(|j| j.score()).collect();
        let spreads: Vec<f64> = judgements
            .iter()
            .filter_map(|j| j.spread())
            .map(|s| s.std)
            .collect();
        let mean_of = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let mean = mean_of(&scores);
        let std = mean.map(|m| {
            (scores.iter().map(|x| (x - m).powi(2)).sum::<f64>() / scores.len() as f64).sqrt()
        });
        let mut usage = JudgeUsage::default();
        for j in judgements {
            usage.add(&j.usage());
        }
        let mut failures: Vec<FailureCount> = Vec::new();
        for s in judgements.iter().flat_map(|j| &j.samples) {
            let kind = match s.status {
                JudgeStatus::Invalid => "invalid answer",
                JudgeStatus::Error => s.kind.as_deref().unwrap_or("error"),
                _ => continue,
            };
            match failures.iter_mut().find(|f| f.kind == kind) {
                Some(f) => f.count += 1,
                None => failures.push(FailureCount {
                    kind: kind.to_owned(),
                    count: 1,
                    first: s.message.clone().unwrap_or_default(),
                }),
            }
        }
        // Stable: kinds as frequent as each other stay in the order they first came.
        failures.sort_by_key(|f| std::cmp::Reverse(f.count));
        JudgeSummary {
            metric: metric.to_owned(),
            queries: judgements.len(),
            scored: scores.len(),
            mean,
            std,
            mean_spread: mean_of(&spreads),
            samples: judgements.iter().map(|j| j.samples.len()).sum(),
            ok: count(JudgeStatus::Ok),
            undetermined: count(JudgeStatus::Undetermined),
            invalid: count(JudgeStatus::Invalid),
            error: count(JudgeStatus::Error),
            unlocated: judgements
                .iter()
                .flat_map(|j| &j.samples)
                .map(|s| s.details.unlocated_count())
                .sum(),
            usage,
            retries: 0,
            failures,
            max_invalid_share,
        }
    }

    /// Calls, HTTP retries, tokens and sample counts on one line (with faithfulness's
    /// statements whose evidence is in no context, when there are any), then the first failure
    /// of each kind with its count, each line starting with the metric's name.
    pub fn usage_lines(&self) -> String {
        let unlocated = match self.unlocated {
            0 => String::new(),
            n if self.metric == crate::metrics::claims::JUDGE => {
                format!("; entailments counted neutral for a quote not in their context: {n}")
            }
            n => format!("; statements counted unsupported for evidence in no context: {n}"),
        };
        let mut lines = format!(
            "{}: {} calls ({} repairs) and {} HTTP retries, {} tokens; {} of {} samples scored, {} undetermined, {} invalid, {} failed{unlocated}\n",
            self.metric,
            self.usage.calls,
            self.usage.repairs,
            self.retries,
            self.usage.tokens(),
            self.ok,
            self.samples,
            self.undetermined,
            self.invalid,
            self.error
        );
        for f in &self.failures {
            lines.push_str(&format!("{}:   {}\n", self.metric, f.describe()));
        }
        lines
    }

    /// `invalid` and `error` samples as a share of all samples (0 for none).
    pub fn invalid_share(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            (self.invalid + self.error) as f64 / self.samples as f64
        }
    }

    /// Whether too many samples were `invalid` or `error` for the figures to gate anything.
    pub fn gate_fails(&self) -> bool {
        self.invalid_share() > self.max_invalid_share
    }

    /// Why the figures cannot gate anything (`None` when they can): the invalid and failed
    /// answers against the allowed share, named as `setting` (the option that sets it), and
    /// the most frequent failure.
    pub fn gate_failure(&self, setting: &str) -> Option<String> {
        if !self.gate_fails() {
            return None;
        }
        let cause = self
            .failures
            .first()
            .map(|f| format!("; judging failed: {}", f.describe()))
            .unwrap_or_default();
        Some(format!(
            "{}: {} invalid and {} failed judge answers of {} samples ({:.1}%) exceed the allowed share {:.1}% ({setting}): the figures cannot gate anything{cause}",
            self.metric,
            self.invalid,
            self.error,
            self.samples,
            100.0 * self.invalid_share(),
            100.0 * self.max_invalid_share
        ))
    }
}

/// pass^n at `threshold`: of the queries whose every sample is `ok`, the share whose every
/// sample scores at least `threshold` (`None` when no query has all its samples `ok`). With
/// one sample it is the share of queries at or above the threshold; with n it asks that the
/// judge agree n times out of n.
pub fn pass_hat(judgements: &[QueryJudgement], threshold: f64) -> Option<f64> {
    let verdicts: Vec<bool> = judgements
        .iter()
        .filter_map(|j| j.passes_all(threshold))
        .collect();
    (!verdicts.is_empty())
        .then(|| verdicts.iter().filter(|&&p| p).count() as f64 / verdicts.len() as f64)
}
