//! Claims: RAGChecker's claim-level checks, so that a wrong answer says which part of the
//! system failed. The answer's and the reference answer's claims are extracted, then each
//! claim is checked against the other answer and against every retrieved chunk, five claims
//! per request; the figures are [`claim_metrics`](crate::metrics::claims::claim_metrics) of
//! the four matrices.

use super::driver::{LlmJudge, Rubric, Sample, Sealed};
use super::faithfulness::locate_in;
use crate::llm::{LlmClient, PromptTemplate};
use crate::metrics::claims::{Verdict, JUDGE};
use crate::metrics::{ClaimCheck, JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage};
use serde::Deserialize;
use serde_json::json;

/// Placeholders the claims judge's extraction prompt may use.
pub const CLAIMS_PLACEHOLDERS: &[&str] = &["question", "text", "max_claims"];

/// Placeholders the claims judge's check prompt may use.
pub const CLAIMS_CHECK_PLACEHOLDERS: &[&str] = &["question", "reference", "claims", "count"];

/// Claims checked per request, as RAGChecker batches them.
pub const CLAIMS_PER_CHECK: usize = 5;

/// The most claims the judge may list for `text`: one per three words, at least one and at
/// most 64 (the schema's `maxItems`, as for faithfulness's statements).
fn max_claims(text: &str) -> usize {
    text.split_whitespace().count().div_ceil(3).clamp(1, 64)
}

/// The claims judge (`--judges claims`): RAGChecker's checks of one answer.
///
/// 1. Two requests extract the claims of the answer and of the reference answer (the
///    extraction prompt, `claims.md`).
/// 2. Requests of the check prompt (`claims_check.md`), each on at most
///    [`CLAIMS_PER_CHECK`] claims against one text, fill RAGChecker's four matrices: the
///    answer's claims against the reference answer (`answer2response`) and against each
///    chunk (`retrieved2response`), the reference's claims against the answer
///    (`response2answer`) and against each chunk (`retrieved2answer`).
///
/// With `a` answer claims, `g` reference claims and `n` chunks a query takes
/// `2 + (1 + n) · (⌈a/5⌉ + ⌈g/5⌉)` calls (repairs aside). An `Entailment` by a chunk carries
/// the judge's quote located in that chunk as document characters ([`ClaimCheck::support`]);
/// a quote found nowhere in it makes the verdict `Neutral` ([`ClaimCheck::unlocated`]), as an
/// unlocated faithfulness statement counts unsupported. The details are
/// [`JudgeDetails::Claims`]; the figures the harness and the command line report are the
/// eleven of [`claim_metrics`](crate::metrics::claims::claim_metrics), each under its own name
/// (`hallucination`, `context_utilization`, …), none under `claims`. The sample's score is
/// `answer_claim_f1`. No reference answer, an empty answer, or no claim found in either:
/// `undetermined`. Any request that never comes back valid makes the sample `invalid` (or
/// `error`), with every call counted.
pub type Claims<C> = LlmJudge<C, ClaimsRubric>;

impl<C: LlmClient> Claims<C> {
    /// The judge with the built-in prompts.
    pub fn new(llm: C) -> Self {
        LlmJudge::asking(
            llm,
            ClaimsRubric {
                check: Self::builtin_check_prompt(),
            },
        )
    }

    /// The check prompt shipped with the library (`src/judge/prompts/claims_check.md`).
    pub fn builtin_check_prompt() -> PromptTemplate {
        PromptTemplate::builtin(
            include_str!("prompts/claims_check.md"),
            "claims_check.md",
            CLAIMS_CHECK_PLACEHOLDERS,
        )
    }

    /// Uses `prompt` to check claims instead; it may use [`CLAIMS_CHECK_PLACEHOLDERS`].
    /// ([`LlmJudge::with_prompt`] replaces the extraction prompt.)
    pub fn with_check_prompt(mut self, prompt: PromptTemplate) -> Self {
        self.rubric.check = prompt;
        self
    }
}

/// What [`Claims`] asks: the extraction prompt is the judge's, the check prompt this.
pub struct ClaimsRubric {
    check: PromptTemplate,
}

fn extraction_schema(most: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "claims": {"type": "array", "maxItems": most, "items": {"type": "string"}}
        },
        "required": ["claims"],
        "additionalProperties": false
    })
}

fn check_schema(count: usize) -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "minItems": count,
                "maxItems": count,
                "items": {
                    "type": "object",
                    "properties": {
                        "verdict": {"type": "string", "enum": ["Entailment", "Neutral", "Contradiction"]},
                        "evidence": {"type": "string"}
                    },
                    "required": ["verdict", "evidence"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["verdicts"],
        "additionalProperties": false
    })
}

#[derive(Deserialize)]
struct Extracted {
    claims: Vec<String>,
}

fn check_extracted(r: Extracted, most: usize) -> Result<Vec<String>, String> {
    if r.claims.len() > most {
        return Err(format!(
            "{} claims, more than the {most} this text can hold",
            r.claims.len()
        ));
    }
    r.claims
        .into_iter()
        .enumerate()
        .map(|(i, c)| match c.trim() {
            "" => Err(format!("claim {}: the claim is empty", i + 1)),
            c => Ok(c.to_owned()),
        })
        .collect()
}

#[derive(Deserialize)]
struct Checked {
    verdicts: Vec<RawVerdict>,
}

#[derive(Deserialize)]
struct RawVerdict {
    verdict: String,
    #[serde(default)]
    evidence: String,
}

fn check_verdicts(r: Checked, count: usize) -> Result<Vec<(Verdict, String)>, String> {
    if r.verdicts.len() != count {
        return Err(format!(
            "{} verdicts for {count} claims: give exactly one per claim",
            r.verdicts.len()
        ));
    }
    r.verdicts
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let verdict = Verdict::parse(&v.verdict).ok_or_else(|| {
                format!(
                    "claim {}: verdict `{}` is none of `Entailment`, `Neutral`, `Contradiction`",
                    i + 1,
                    v.verdict
                )
            })?;
            Ok((verdict, v.evidence))
        })
        .collect()
}

/// Every result's value and the calls of all of them, or the first failure carrying the
/// calls of all of them.
// A failed sample is the driver's error type throughout (`Sample::ask`); boxing it here alone
// would only add a conversion.
#[allow(clippy::result_large_err)]
fn gather<T>(
    results: Vec<Result<(T, JudgeUsage), JudgeSample>>,
) -> Result<(Vec<T>, JudgeUsage), JudgeSample> {
    let mut usage = JudgeUsage::default();
    let mut values = Vec::with_capacity(results.len());
    let mut failed: Option<JudgeSample> = None;
    for r in results {
        match r {
            Ok((v, u)) => {
                usage.add(&u);
                values.push(v);
            }
            Err(f) => {
                usage.add(&f.usage);
                failed.get_or_insert(f);
            }
        }
    }
    match failed {
        Some(f) => Err(JudgeSample { usage, ..f }),
        None => Ok((values, usage)),
    }
}

/// `what: ` before a failed sample's message, so that it says which request failed.
fn naming(mut failed: JudgeSample, what: &str) -> JudgeSample {
    failed.message = failed.message.map(|m| format!("{what}: {m}"));
    failed
}

/// Whose claims a check is on.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Answer,
    Reference,
}

/// What a batch of claims is checked against.
#[derive(Clone, Copy, PartialEq)]
enum Against {
    /// The other answer (the reference for the answer's claims, the answer for the
    /// reference's).
    Other,
    /// Retrieved chunk `j`.
    Chunk(usize),
}

impl ClaimsRubric {
    fn check_version(&self) -> String {
        format!("{JUDGE}_check/{}", self.check.version)
    }

    async fn extract(
        &self,
        s: &Sample<'_>,
        text: &str,
        what: &str,
    ) -> Result<(Vec<String>, JudgeUsage), JudgeSample> {
        let most = max_claims(text);
        let n = most.to_string();
        let values = [
            ("question", s.input.question),
            ("text", text),
            ("max_claims", n.as_str()),
        ];
        let ask = s.ask(&values, extraction_schema(most), |r| {
            check_extracted(r, most)
        });
        ask.await.map_err(|f| naming(f, what))
    }

    async fn check(
        &self,
        s: &Sample<'_>,
        reference: &str,
        claims: &[String],
        what: String,
    ) -> Result<(Vec<(Verdict, String)>, JudgeUsage), JudgeSample> {
        let numbered: Vec<String> = claims
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{}. {c}", i + 1))
            .collect();
        let numbered = numbered.join("\n");
        let count = claims.len();
        let n = count.to_string();
        let values = [
            ("question", s.input.question),
            ("reference", reference),
            ("claims", numbered.as_str()),
            ("count", n.as_str()),
        ];
        let request = s.request_with(
            &self.check,
            self.check_version(),
            &values,
            check_schema(count),
        );
        match s.ask_with(request, |r| check_verdicts(r, count)).await {
            Ok((v, usage, _)) => Ok((v, usage)),
            Err(f) => Err(naming(f, &what)),
        }
    }

    /// The sample, or the failed sample: `Err` carries every call made.
    async fn judge(&self, s: &Sample<'_>) -> Result<JudgeSample, JudgeSample> {
        let answer = s.input.answer.answer.trim();
        if answer.is_empty() {
            let none = JudgeUsage::default();
            return Ok(s.unscored(JudgeStatus::Undetermined, "the answer is empty", none));
        }
        let (a, g) = futures_util::future::join(
            self.extract(s, answer, "the answer's claims"),
            self.extract(s, s.reference, "the reference answer's claims"),
        )
        .await;
        let (mut claims, mut usage) = gather(vec![a, g])?;
        let reference_claims = claims.pop().unwrap_or_default();
        let response_claims = claims.pop().unwrap_or_default();
        for (claims, whose) in [
            (&response_claims, "the answer"),
            (&reference_claims, "the reference answer"),
        ] {
            if claims.is_empty() {
                let why = format!("the judge found no claim in {whose}");
                return Ok(s.unscored(JudgeStatus::Undetermined, why, usage));
            }
        }
        let contexts = &s.input.answer.contexts;
        let mut jobs = Vec::new();
        for (side, claims, other) in [
            (Side::Answer, &response_claims, s.reference),
            (Side::Reference, &reference_claims, answer),
        ] {
            let targets =
                std::iter::once(Against::Other).chain((0..contexts.len()).map(Against::Chunk));
            for against in targets {
                let text = match against {
                    Against::Other => other,
                    Against::Chunk(j) => contexts[j].chunk.content.as_str(),
                };
                for (b, batch) in claims.chunks(CLAIMS_PER_CHECK).enumerate() {
                    jobs.push((side, against, b * CLAIMS_PER_CHECK, text, batch));
                }
            }
        }
        let asked = jobs.iter().map(|&(side, against, start, text, batch)| {
            let whose = match side {
                Side::Answer => "the answer's",
                Side::Reference => "the reference answer's",
            };
            let what = match against {
                Against::Other if side == Side::Answer => "the reference answer".to_owned(),
                Against::Other => "the answer".to_owned(),
                Against::Chunk(j) => format!("context {}", j + 1),
            };
            let what = format!(
                "{whose} claims {} to {} against {what}",
                start + 1,
                start + batch.len()
            );
            self.check(s, text, batch, what)
        });
        let verdicts = futures_util::future::join_all(asked).await;
        let (verdicts, checks) = gather(verdicts).map_err(|mut failed| {
            failed.usage.add(&usage);
            failed
        })?;
        usage.add(&checks);
        let row = || vec![None; contexts.len()];
        let mut answer2response = vec![None; response_claims.len()];
        let mut response2answer = vec![None; reference_claims.len()];
        let mut retrieved2response = vec![row(); response_claims.len()];
        let mut retrieved2answer = vec![row(); reference_claims.len()];
        let threshold = s.config.locate_threshold;
        for (&(side, against, start, ..), batch) in jobs.iter().zip(verdicts) {
            for (i, (verdict, evidence)) in batch.into_iter().enumerate() {
                let mut check = ClaimCheck {
                    evidence,
                    ..ClaimCheck::of(verdict)
                };
                let cell = match (side, against) {
                    (Side::Answer, Against::Other) => &mut answer2response[start + i],
                    (Side::Reference, Against::Other) => &mut response2answer[start + i],
                    (Side::Answer, Against::Chunk(j)) => &mut retrieved2response[start + i][j],
                    (Side::Reference, Against::Chunk(j)) => &mut retrieved2answer[start + i][j],
                };
                if let (Against::Chunk(j), Verdict::Entailment) = (against, verdict) {
                    check.support = locate_in(&check.evidence, j, contexts, threshold);
                    if check.support.is_none() {
                        check.verdict = Verdict::Neutral;
                        check.unlocated = true;
                    }
                }
                *cell = Some(check);
            }
        }
        // Every cell was asked once: the batches cover every claim against every text.
        let filled = |v: Vec<Option<ClaimCheck>>| v.into_iter().flatten().collect::<Vec<_>>();
        let details = JudgeDetails::Claims {
            chunks: contexts.len(),
            answer2response: filled(answer2response),
            response2answer: filled(response2answer),
            retrieved2response: retrieved2response.into_iter().map(filled).collect(),
            retrieved2answer: retrieved2answer.into_iter().map(filled).collect(),
            response_claims,
            reference_claims,
        };
        match details.claim_metrics().and_then(|m| m.answer_claim_f1) {
            Some(f1) => Ok(s.scored(f1, details, usage)),
            // Unreachable with claims on both sides; said rather than scored 0 if it were not.
            None => Ok(s.unscored(
                JudgeStatus::Invalid,
                "the checks do not fill the claims' matrices",
                usage,
            )),
        }
    }
}

impl Sealed for ClaimsRubric {}

#[async_trait::async_trait]
impl Rubric for ClaimsRubric {
    const NAME: &'static str = JUDGE;
    const PLACEHOLDERS: &'static [&'static str] = CLAIMS_PLACEHOLDERS;
    const NEEDS_REFERENCE: bool = true;
    const PROMPT: &'static str = include_str!("prompts/claims.md");

    async fn sample(&self, s: Sample<'_>) -> JudgeSample {
        self.judge(&s).await.unwrap_or_else(|failed| failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_must_be_one_per_claim() {
        let reply = |n: usize, verdict: &str| Checked {
            verdicts: (0..n)
                .map(|_| RawVerdict {
                    verdict: verdict.into(),
                    evidence: String::new(),
                })
                .collect(),
        };
        assert_eq!(
            check_verdicts(reply(2, "Neutral"), 2).unwrap(),
            vec![(Verdict::Neutral, String::new()); 2]
        );
        assert_eq!(
            check_verdicts(reply(1, "Neutral"), 2).unwrap_err(),
            "1 verdicts for 2 claims: give exactly one per claim"
        );
        assert_eq!(
            check_verdicts(reply(1, "entailed"), 1).unwrap_err(),
            "claim 1: verdict `entailed` is none of `Entailment`, `Neutral`, `Contradiction`"
        );
    }

    #[test]
    fn claims_are_bounded_and_never_empty() {
        let r = |c: &[&str]| Extracted {
            claims: c.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(check_extracted(r(&[" A. "]), 1).unwrap(), ["A."]);
        assert!(check_extracted(r(&["A.", "B."]), 1).is_err());
        assert_eq!(
            check_extracted(r(&["A.", " "]), 4).unwrap_err(),
            "claim 2: the claim is empty"
        );
        assert_eq!(extraction_schema(3)["properties"]["claims"]["maxItems"], 3);
        assert_eq!(check_schema(4)["properties"]["verdicts"]["minItems"], 4);
    }
}
