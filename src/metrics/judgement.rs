//! What a judge says about one query: per sample a status, a score and the details behind it,
//! kept with the query's figures ([`QueryResult::judges`](super::QueryResult::judges)).

use super::claims::{claim_metrics, ClaimChecks, ClaimMetrics, Verdict};
use crate::chunk::PositionAwareChunkId;
use crate::locate::MatchKind;
use crate::span::CharSpan;
use serde::{Deserialize, Serialize};

/// The largest token count kept anywhere: `i64::MAX`, what the cache and the run store hold.
pub const MAX_TOKENS: u64 = i64::MAX as u64;

/// `a + b`, at most [`MAX_TOKENS`]: how every token count is added up, and (as
/// `add_tokens(0, n)`) how a count a server sent is bounded, so that a figure is the same
/// live and replayed from the cache whatever a server claims.
pub fn add_tokens(a: u64, b: u64) -> u64 {
    a.saturating_add(b).min(MAX_TOKENS)
}

/// How one judging of one query ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JudgeStatus {
    /// A score was computed.
    Ok,
    /// The metric has no value for this query (faithfulness of an answer without statements,
    /// a judge needing a reference answer the row lacks): neither good nor bad, left out of the
    /// mean and not counted against the gate.
    Undetermined,
    /// The judge's answer did not follow its schema even after the repair retries.
    Invalid,
    /// The model could not be reached (after the client's own retries), or an embedding failed.
    Error,
}

impl JudgeStatus {
    /// `ok`, `undetermined`, `invalid` or `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            JudgeStatus::Ok => "ok",
            JudgeStatus::Undetermined => "undetermined",
            JudgeStatus::Invalid => "invalid",
            JudgeStatus::Error => "error",
        }
    }
}

/// Calls and tokens spent on judging.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeUsage {
    /// Chat requests sent (repairs included; a cache may have answered some).
    pub calls: u64,
    /// Of those, requests that asked the model to repair an answer that broke its schema.
    pub repairs: u64,
    /// Prompt tokens (as recorded, for answers a cache replayed).
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

impl JudgeUsage {
    /// Prompt and completion tokens together.
    pub fn tokens(&self) -> u64 {
        add_tokens(self.prompt_tokens, self.completion_tokens)
    }

    /// What the tokens cost at these prices (US dollars per 1,000 tokens).
    pub fn cost(&self, prompt_per_1k: f64, completion_per_1k: f64) -> f64 {
        (self.prompt_tokens as f64 * prompt_per_1k
            + self.completion_tokens as f64 * completion_per_1k)
            / 1000.0
    }

    /// Adds `other` to this.
    pub fn add(&mut self, other: &JudgeUsage) {
        self.calls += other.calls;
        self.repairs += other.repairs;
        self.prompt_tokens = add_tokens(self.prompt_tokens, other.prompt_tokens);
        self.completion_tokens = add_tokens(self.completion_tokens, other.completion_tokens);
    }
}

/// Where in the contexts a supported statement comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Support {
    /// Position (0-based) of the chunk among the answer's contexts.
    pub context: usize,
    /// The chunk's position-aware id.
    pub chunk_id: PositionAwareChunkId,
    /// The supporting passage in document characters (end-exclusive).
    pub span: CharSpan,
    /// How the judge's quote was found in the chunk.
    pub kind: MatchKind,
    /// 1 for exact and normalized matches, the fuzzy score otherwise.
    pub score: f64,
}

/// One atomic statement of an answer and the judge's verdict on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    /// The statement.
    pub text: String,
    /// Whether it counts as supported: the judge said so and its quote was located in a
    /// context.
    pub supported: bool,
    /// The judge called it supported, but its quote (or the lack of one) was found in no
    /// context: it counts as unsupported (see [`JudgeDetails::unlocated`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unlocated: bool,
    /// The judge's reason.
    pub reason: String,
    /// The judge's verbatim quote of the supporting passage (empty when it gave none).
    pub evidence: String,
    /// The quote located in the contexts; `None` for an unsupported statement.
    pub support: Option<Support>,
}

/// A question generated back from the answer, and its cosine to the real question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratedQuestion {
    /// The question.
    pub question: String,
    /// Cosine similarity of its embedding to the real question's.
    pub cosine: f64,
}

/// The judge's verdict on one retrieved chunk (LLM context precision).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextVerdict {
    /// Position (0-based) of the chunk among the contexts.
    pub context: usize,
    /// The chunk's position-aware id.
    pub chunk_id: PositionAwareChunkId,
    /// Whether the chunk was useful in arriving at the reference answer.
    pub useful: bool,
    /// The judge's reason.
    pub reason: String,
}

/// A statement of the reference answer and whether the contexts hold it (LLM context recall).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// The statement.
    pub text: String,
    /// Whether it can be attributed to the contexts.
    pub attributed: bool,
    /// The chunk it is attributed to (0-based), when the judge named one.
    pub context: Option<usize>,
    /// The judge's reason.
    pub reason: String,
}

/// One claim checked against one text (the other answer, or one retrieved chunk): a cell of
/// one of RAGChecker's check matrices ([`JudgeDetails::Claims`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimCheck {
    /// The verdict as counted: `Entailment` only when the text supports the claim (and, against
    /// a chunk, the judge's quote was found in it).
    pub verdict: Verdict,
    /// The judge's verbatim quote of the supporting passage (empty when it gave none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub evidence: String,
    /// Against a chunk, an entailment's quote located in it, in document characters; `None`
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub support: Option<Support>,
    /// The judge said `Entailment` against a chunk, but its quote (or the lack of one) was
    /// found nowhere in that chunk: the verdict is counted `Neutral`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unlocated: bool,
}

impl ClaimCheck {
    /// A check with `verdict` and nothing behind it (as RAGChecker's files hold them).
    pub fn of(verdict: Verdict) -> ClaimCheck {
        ClaimCheck {
            verdict,
            evidence: String::new(),
            support: None,
            unlocated: false,
        }
    }
}

/// What a judge found, per metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum JudgeDetails {
    /// Nothing (the judge could not answer, or was not asked).
    None,
    /// Faithfulness: the answer's statements and their verdicts.
    Faithfulness {
        /// The statements, in the judge's order.
        statements: Vec<Statement>,
    },
    /// Answer relevancy: the questions generated back from the answer.
    AnswerRelevancy {
        /// The questions and their cosines to the real question.
        questions: Vec<GeneratedQuestion>,
        /// Whether the judge found the answer evasive or vague.
        noncommittal: bool,
    },
    /// LLM context precision: one verdict per retrieved chunk, in rank order.
    ContextPrecision {
        /// The verdicts.
        verdicts: Vec<ContextVerdict>,
    },
    /// LLM context recall: the reference answer's statements.
    ContextRecall {
        /// The statements.
        statements: Vec<Attribution>,
    },
    /// A criteria judge: the verdict on the team's criterion.
    Criteria {
        /// The verdict as the judge wrote it (`pass`, `4`, a category).
        verdict: String,
        /// The judge's reason.
        reason: String,
        /// Each verdict's probability at the verdict's first token, normalised over the
        /// verdicts the scale allows, when the score is their weighted mean; `None` when the
        /// score is the sampled verdict's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        probabilities: Option<Vec<(String, f64)>>,
        /// The verdicts the judge's scale allows, each with its score in [0, 1], in the
        /// scale's order (a 1–5 range: `1` 0, `2` 0.25, … `5` 1); `None` in records made
        /// before the scale was kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scale: Option<Vec<(String, f64)>>,
    },
    /// Claims (RAGChecker's checks): the claims of the answer and of the reference answer,
    /// each checked against the other and against every retrieved chunk. The four matrices are
    /// RAGChecker's, by its names; the figures are [`JudgeDetails::claim_metrics`].
    Claims {
        /// The answer's claims, in the judge's order.
        response_claims: Vec<String>,
        /// The reference answer's claims.
        reference_claims: Vec<String>,
        /// How many chunks the answer was given.
        chunks: usize,
        /// The reference answer on each answer claim.
        answer2response: Vec<ClaimCheck>,
        /// The answer on each reference claim.
        response2answer: Vec<ClaimCheck>,
        /// Per answer claim, each chunk on it, in rank order.
        retrieved2response: Vec<Vec<ClaimCheck>>,
        /// Per reference claim, each chunk on it, in rank order.
        retrieved2answer: Vec<Vec<ClaimCheck>>,
    },
    /// Answer match: does the answer answer the question as the reference does.
    AnswerMatch {
        /// The verdict.
        matches: bool,
        /// The judge's reason.
        reason: String,
    },
}

impl JudgeDetails {
    /// Statements the contexts do not support (faithfulness), for a failing test's message.
    pub fn unsupported(&self) -> Vec<&Statement> {
        match self {
            JudgeDetails::Faithfulness { statements } => {
                statements.iter().filter(|s| !s.supported).collect()
            }
            _ => Vec::new(),
        }
    }

    /// What the judge gave as its reasons, in one line: a criteria or answer-match judge's
    /// reason; each statement's (faithfulness, context recall) or each context's (context
    /// precision) verdict and reason; whether an answer was noncommittal (answer relevancy).
    /// `None` when it gave none.
    pub fn reason(&self) -> Option<String> {
        let verdict = |on: bool, yes: &str, no: &str| if on { yes } else { no }.to_owned();
        let parts: Vec<String> = match self {
            JudgeDetails::None => Vec::new(),
            JudgeDetails::Criteria {
                verdict, reason, ..
            } => vec![format!("{verdict}: {reason}")],
            JudgeDetails::AnswerMatch { matches, reason } => vec![format!(
                "{}: {reason}",
                verdict(*matches, "matches", "does not match")
            )],
            JudgeDetails::Faithfulness { statements } => statements
                .iter()
                .map(|s| {
                    let v = if s.unlocated {
                        "evidence not found".to_owned()
                    } else {
                        verdict(s.supported, "supported", "unsupported")
                    };
                    format!("\"{}\" {v}: {}", s.text, s.reason)
                })
                .collect(),
            JudgeDetails::ContextRecall { statements } => statements
                .iter()
                .map(|s| {
                    let v = verdict(s.attributed, "attributed", "not attributed");
                    format!("\"{}\" {v}: {}", s.text, s.reason)
                })
                .collect(),
            JudgeDetails::ContextPrecision { verdicts } => verdicts
                .iter()
                .map(|c| {
                    let v = verdict(c.useful, "useful", "not useful");
                    format!("context {} {v}: {}", c.context + 1, c.reason)
                })
                .collect(),
            JudgeDetails::Claims {
                response_claims,
                answer2response,
                retrieved2response,
                ..
            } => response_claims
                .iter()
                .zip(answer2response)
                .zip(retrieved2response)
                .map(|((claim, a), row)| {
                    let chunks: Vec<String> = row
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.verdict == Verdict::Entailment)
                        .map(|(j, _)| (j + 1).to_string())
                        .collect();
                    let source = if chunks.is_empty() {
                        "in no context".to_owned()
                    } else {
                        format!("in context {}", chunks.join(", "))
                    };
                    format!("\"{claim}\" {:?} by the reference, {source}", a.verdict)
                })
                .collect(),
            JudgeDetails::AnswerRelevancy { noncommittal, .. } => {
                if *noncommittal {
                    vec!["the answer is noncommittal".into()]
                } else {
                    Vec::new()
                }
            }
        };
        (!parts.is_empty()).then(|| parts.join("; "))
    }

    /// Statements the judge called supported whose quoted evidence was found in no context
    /// (faithfulness): counted unsupported, so also among [`JudgeDetails::unsupported`].
    pub fn unlocated(&self) -> Vec<&Statement> {
        match self {
            JudgeDetails::Faithfulness { statements } => {
                statements.iter().filter(|s| s.unlocated).collect()
            }
            _ => Vec::new(),
        }
    }

    /// How many verdicts the judge gave whose quoted evidence was found nowhere it said:
    /// faithfulness's [`unlocated`](JudgeDetails::unlocated) statements, or claim checks
    /// against a chunk ([`ClaimCheck::unlocated`]).
    pub fn unlocated_count(&self) -> usize {
        match self {
            JudgeDetails::Claims {
                retrieved2response,
                retrieved2answer,
                ..
            } => retrieved2response
                .iter()
                .chain(retrieved2answer)
                .flatten()
                .filter(|c| c.unlocated)
                .count(),
            _ => self.unlocated().len(),
        }
    }

    /// The claims' verdict matrices, for [`claim_metrics`](super::claims::claim_metrics);
    /// `None` for other details, or matrices whose shapes do not fit (a hand-edited record).
    pub fn claim_checks(&self) -> Option<ClaimChecks> {
        let JudgeDetails::Claims {
            chunks,
            answer2response,
            response2answer,
            retrieved2response,
            retrieved2answer,
            ..
        } = self
        else {
            return None;
        };
        let row = |r: &[ClaimCheck]| r.iter().map(|c| c.verdict).collect::<Vec<_>>();
        let matrix = |m: &[Vec<ClaimCheck>]| m.iter().map(|r| row(r)).collect::<Vec<_>>();
        ClaimChecks::new(
            row(answer2response),
            row(response2answer),
            matrix(retrieved2response),
            matrix(retrieved2answer),
            *chunks,
        )
        .ok()
    }

    /// RAGChecker's figures of the claims' checks; `None` for other details.
    pub fn claim_metrics(&self) -> Option<ClaimMetrics> {
        self.claim_checks().map(|c| claim_metrics(&c))
    }
}

/// One judging (one sample) of one query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeSample {
    /// Which sample (0-based); part of every request's cache key.
    pub sample: u32,
    /// How it ended.
    pub status: JudgeStatus,
    /// The score, in `[0, 1]`, when the status is `ok`.
    pub score: Option<f64>,
    /// What the judge found.
    pub details: JudgeDetails,
    /// Why the status is not `ok` (the schema error, the transport error, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For an `error` sample, the kind of failure, by which [`JudgeSummary`](crate::judge::JudgeSummary)
    /// counts them: see [`failure_kind`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Calls and tokens.
    pub usage: JudgeUsage,
}

/// The kind of failure `e` is, for counting failures by cause: `HTTP 401` (any status the
/// server answered with), `unreachable` (a refused connection, an unknown host, a failed TLS
/// handshake), `no answer` (a timeout, an answer cut short), `replay miss` (a replaying cache
/// without the answer), `embedding`, or `error`.
pub fn failure_kind(e: &crate::Error) -> String {
    match e {
        crate::Error::Http {
            status: Some(status),
            ..
        } => format!("HTTP {status}"),
        crate::Error::Http { message, .. } if message.starts_with("cannot connect") => {
            "unreachable".into()
        }
        crate::Error::Http { .. } => "no answer".into(),
        crate::Error::CacheMiss { .. } => "replay miss".into(),
        crate::Error::Embed(_) => "embedding".into(),
        _ => "error".into(),
    }
}

/// Spread of one query's sample scores.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Population standard deviation.
    pub std: f64,
    /// Lowest score.
    pub min: f64,
    /// Highest score.
    pub max: f64,
}

/// Everything one judge said about one query: its samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryJudgement {
    /// The metric (`faithfulness`, …).
    pub metric: String,
    /// The query's id.
    pub query_id: String,
    /// One entry per sample, in sample order.
    pub samples: Vec<JudgeSample>,
}

impl QueryJudgement {
    fn scores(&self) -> impl Iterator<Item = f64> + '_ {
        self.samples.iter().filter_map(|s| s.score)
    }

    /// `ok` when any sample scored; otherwise `error` if any sample erred, else `invalid` if
    /// any was invalid, else `undetermined`.
    pub fn status(&self) -> JudgeStatus {
        let any = |st| self.samples.iter().any(|s| s.status == st);
        if any(JudgeStatus::Ok) {
            JudgeStatus::Ok
        } else if any(JudgeStatus::Error) {
            JudgeStatus::Error
        } else if any(JudgeStatus::Invalid) {
            JudgeStatus::Invalid
        } else {
            JudgeStatus::Undetermined
        }
    }

    /// Mean of the scored samples (`None` when none scored).
    pub fn score(&self) -> Option<f64> {
        let (n, sum) = self
            .scores()
            .fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
        (n > 0).then(|| sum / n as f64)
    }

    /// Spread of the scored samples (`None` when none scored).
    pub fn spread(&self) -> Option<Spread> {
        let mean = self.score()?;
        let scores: Vec<f64> = self.scores().collect();
        let var = scores.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / scores.len() as f64;
        Some(Spread {
            std: var.sqrt(),
            min: scores.iter().copied().fold(f64::INFINITY, f64::min),
            max: scores.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// Whether every sample scored at least `threshold`: `None` unless every sample is `ok`
    /// (a query with an invalid, failed or undetermined sample has no pass^n).
    pub fn passes_all(&self, threshold: f64) -> Option<bool> {
        if self.samples.is_empty() || self.samples.iter().any(|s| s.status != JudgeStatus::Ok) {
            return None;
        }
        Some(self.scores().all(|x| x >= threshold))
    }

    /// Calls and tokens of every sample.
    pub fn usage(&self) -> JudgeUsage {
        let mut u = JudgeUsage::default();
        for s in &self.samples {
            u.add(&s.usage);
        }
        u
    }
}
