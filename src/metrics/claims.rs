//! Claim-level diagnostics: RAGChecker's metrics as pure functions of its four check matrices.
//!
//! The claims of the response and of the reference answer are each checked against the other
//! and against every retrieved chunk; the verdicts say which part of a RAG system failed (the
//! retriever that missed a fact, the generator that ignored a passage or was misled by one).
//! The formulas are those of RAGChecker's `ragchecker/computation.py` (amazon-science/RAGChecker),
//! figure for figure, with one difference: where RAGChecker writes `0.` because there was
//! nothing to judge (no claims, no chunks, no recalled claim), the figure here is missing
//! (`None`), to be counted as such. Every figure that is present equals RAGChecker's.
//!
//! ```
//! use rag_eval::metrics::claims::{claim_metrics, ClaimChecks, Verdict::*};
//!
//! // Two response claims, one reference claim, one chunk.
//! let checks = ClaimChecks::new(
//!     vec![Entailment, Neutral],      // answer2response: the reference entails response claim 0
//!     vec![Entailment],               // response2answer: the response entails the reference claim
//!     vec![vec![Entailment], vec![Neutral]], // retrieved2response
//!     vec![vec![Entailment]],         // retrieved2answer
//!     1,
//! )
//! .unwrap();
//! let m = claim_metrics(&checks);
//! assert_eq!(m.answer_claim_precision, Some(0.5));
//! assert_eq!(m.answer_claim_recall, Some(1.0));
//! assert_eq!(m.claim_faithfulness, Some(0.5));
//! assert_eq!(m.hallucination, Some(0.5)); // claim 1: unsupported and not in the reference
//!
//! // No chunks: claim recall and faithfulness have nothing to judge.
//! let none = ClaimChecks::new(vec![Entailment], vec![], vec![vec![]], vec![], 0).unwrap();
//! let m = claim_metrics(&none);
//! assert_eq!((m.answer_claim_precision, m.claim_faithfulness), (Some(1.0), None));
//! ```

use serde::{Deserialize, Serialize};

/// A checker's verdict on one claim against one reference text (RAGChecker's strings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// The reference supports the claim: the only verdict RAGChecker counts as true.
    Entailment,
    /// The reference neither supports nor contradicts the claim.
    Neutral,
    /// The reference contradicts the claim.
    Contradiction,
}

impl Verdict {
    /// The verdict RAGChecker writes as `text`, if it is one of its three.
    pub fn parse(text: &str) -> Option<Verdict> {
        match text {
            "Entailment" => Some(Verdict::Entailment),
            "Neutral" => Some(Verdict::Neutral),
            "Contradiction" => Some(Verdict::Contradiction),
            _ => None,
        }
    }

    fn holds(self) -> bool {
        self == Verdict::Entailment
    }
}

/// A check matrix whose shape does not fit the claims and chunks.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{field}`{row}: {found} entries, expected {expected} ({what})")]
pub struct ShapeError {
    /// The matrix (RAGChecker's field name).
    pub field: &'static str,
    /// ` row N` for a row of a chunk matrix, else empty.
    pub row: String,
    /// How many entries it has.
    pub found: usize,
    /// How many it should have.
    pub expected: usize,
    /// What the entries stand for.
    pub what: &'static str,
}

/// RAGChecker's four check matrices for one query, of consistent shapes.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimChecks {
    answer2response: Vec<Verdict>,
    response2answer: Vec<Verdict>,
    retrieved2response: Vec<Vec<Verdict>>,
    retrieved2answer: Vec<Vec<Verdict>>,
    chunks: usize,
}

impl ClaimChecks {
    /// The checks, in RAGChecker's layout: `answer2response[i]`, the reference answer on
    /// response claim `i`; `response2answer[i]`, the response on reference claim `i`;
    /// `retrieved2response[i][j]` and `retrieved2answer[i][j]`, chunk `j` on response or
    /// reference claim `i`. The response claims are `answer2response`'s, the reference claims
    /// `response2answer`'s; every row of a chunk matrix has one verdict per chunk.
    pub fn new(
        answer2response: Vec<Verdict>,
        response2answer: Vec<Verdict>,
        retrieved2response: Vec<Vec<Verdict>>,
        retrieved2answer: Vec<Vec<Verdict>>,
        chunks: usize,
    ) -> Result<ClaimChecks, ShapeError> {
        let check = |field, found, expected, what, row: Option<usize>| {
            if found == expected {
                Ok(())
            } else {
                Err(ShapeError {
                    field,
                    row: row.map(|r| format!(" row {r}")).unwrap_or_default(),
                    found,
                    expected,
                    what,
                })
            }
        };
        let (responses, references) = (answer2response.len(), response2answer.len());
        let claims = "one per response claim, as `answer2response`";
        check(
            "retrieved2response",
            retrieved2response.len(),
            responses,
            claims,
            None,
        )?;
        let claims = "one per reference claim, as `response2answer`";
        check(
            "retrieved2answer",
            retrieved2answer.len(),
            references,
            claims,
            None,
        )?;
        for (field, matrix) in [
            ("retrieved2response", &retrieved2response),
            ("retrieved2answer", &retrieved2answer),
        ] {
            for (i, row) in matrix.iter().enumerate() {
                check(field, row.len(), chunks, "one per retrieved chunk", Some(i))?;
            }
        }
        Ok(ClaimChecks {
            answer2response,
            response2answer,
            retrieved2response,
            retrieved2answer,
            chunks,
        })
    }

    /// How many claims the response has.
    pub fn response_claims(&self) -> usize {
        self.answer2response.len()
    }

    /// How many claims the reference answer has.
    pub fn reference_claims(&self) -> usize {
        self.response2answer.len()
    }

    /// How many chunks were retrieved.
    pub fn chunks(&self) -> usize {
        self.chunks
    }
}

/// RAGChecker's eleven figures for one query; `None` where there was nothing to judge.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct ClaimMetrics {
    /// Share of response claims the reference answer entails (RAGChecker `precision`).
    pub answer_claim_precision: Option<f64>,
    /// Share of reference claims the response entails (RAGChecker `recall`).
    pub answer_claim_recall: Option<f64>,
    /// Harmonic mean of the two (RAGChecker `f1`).
    pub answer_claim_f1: Option<f64>,
    /// Share of reference claims some chunk entails (RAGChecker `claim_recall`).
    pub claim_recall: Option<f64>,
    /// Share of chunks that entail some reference claim (RAGChecker `context_precision`; not
    /// ragas' rank-weighted context precision).
    pub chunk_usefulness: Option<f64>,
    /// Of the reference claims some chunk entails, the share the response entails too.
    pub context_utilization: Option<f64>,
    /// Share of response claims that are wrong and entailed by a useful chunk.
    pub noise_sensitivity_in_relevant: Option<f64>,
    /// Share of response claims that are wrong and entailed only by chunks useful for nothing.
    pub noise_sensitivity_in_irrelevant: Option<f64>,
    /// Share of response claims that are wrong and entailed by no chunk.
    pub hallucination: Option<f64>,
    /// Share of response claims that are right and entailed by no chunk.
    pub self_knowledge: Option<f64>,
    /// Share of response claims some chunk entails (RAGChecker `faithfulness`).
    pub claim_faithfulness: Option<f64>,
}

/// The name of the judge whose figures these are (`--judges claims`,
/// [`Claims`](crate::judge::Claims)): it reports no figure of its own name, only these.
pub const JUDGE: &str = "claims";

/// Our name, RAGChecker's name and RAGChecker's group of each figure, in RAGChecker's order.
pub const NAMES: [(&str, &str, &str); 11] = [
    ("answer_claim_precision", "precision", "overall_metrics"),
    ("answer_claim_recall", "recall", "overall_metrics"),
    ("answer_claim_f1", "f1", "overall_metrics"),
    ("claim_recall", "claim_recall", "retriever_metrics"),
    ("chunk_usefulness", "context_precision", "retriever_metrics"),
    (
        "context_utilization",
        "context_utilization",
        "generator_metrics",
    ),
    (
        "noise_sensitivity_in_relevant",
        "noise_sensitivity_in_relevant",
        "generator_metrics",
    ),
    (
        "noise_sensitivity_in_irrelevant",
        "noise_sensitivity_in_irrelevant",
        "generator_metrics",
    ),
    ("hallucination", "hallucination", "generator_metrics"),
    ("self_knowledge", "self_knowledge", "generator_metrics"),
    ("claim_faithfulness", "faithfulness", "generator_metrics"),
];

impl ClaimMetrics {
    /// The figures in the order of [`NAMES`].
    pub fn values(&self) -> [Option<f64>; 11] {
        [
            self.answer_claim_precision,
            self.answer_claim_recall,
            self.answer_claim_f1,
            self.claim_recall,
            self.chunk_usefulness,
            self.context_utilization,
            self.noise_sensitivity_in_relevant,
            self.noise_sensitivity_in_irrelevant,
            self.hallucination,
            self.self_knowledge,
            self.claim_faithfulness,
        ]
    }
}

/// `count / n` as numpy's mean of a boolean array computes it (exact sum, one division).
fn share(count: usize, n: usize) -> f64 {
    count as f64 / n as f64
}

/// The figures of one query. Each is present exactly when RAGChecker's function for it takes
/// its computing branch, and then equals RAGChecker's value.
pub fn claim_metrics(c: &ClaimChecks) -> ClaimMetrics {
    let (responses, references, chunks) = (c.response_claims(), c.reference_claims(), c.chunks);
    let count = |it: &mut dyn Iterator<Item = bool>| it.filter(|&b| b).count();
    let precision = (responses > 0).then(|| {
        share(
            count(&mut c.answer2response.iter().map(|v| v.holds())),
            responses,
        )
    });
    let recall = (references > 0).then(|| {
        share(
            count(&mut c.response2answer.iter().map(|v| v.holds())),
            references,
        )
    });
    let f1 = match (precision, recall) {
        (Some(p), Some(r)) if p > 0.0 && r > 0.0 => Some(2.0 * p * r / (p + r)),
        (Some(_), Some(_)) => Some(0.0),
        _ => None,
    };
    let mut m = ClaimMetrics {
        answer_claim_precision: precision,
        answer_claim_recall: recall,
        answer_claim_f1: f1,
        ..ClaimMetrics::default()
    };
    if chunks == 0 {
        // Every other figure judges claims against chunks: RAGChecker's `0.` branches.
        return m;
    }
    // Reference claims some chunk entails, and chunks that entail some reference claim.
    let recalled: Vec<bool> = c
        .retrieved2answer
        .iter()
        .map(|row| row.iter().any(|v| v.holds()))
        .collect();
    let useful: Vec<bool> = (0..chunks)
        .map(|j| c.retrieved2answer.iter().any(|row| row[j].holds()))
        .collect();
    if references > 0 {
        let n_recalled = count(&mut recalled.iter().copied());
        m.claim_recall = Some(share(n_recalled, references));
        m.chunk_usefulness = Some(share(count(&mut useful.iter().copied()), chunks));
        if n_recalled > 0 {
            let used = recalled
                .iter()
                .zip(&c.response2answer)
                .filter(|(r, v)| **r && v.holds())
                .count();
            m.context_utilization = Some(share(used, n_recalled));
        }
    }
    if responses == 0 {
        return m;
    }
    let supported_by = |i: usize, relevant: bool| {
        c.retrieved2response[i]
            .iter()
            .zip(&useful)
            .any(|(v, u)| v.holds() && *u == relevant)
    };
    if references > 0 {
        let (mut in_relevant, mut in_irrelevant) = (0, 0);
        for (i, v) in c.answer2response.iter().enumerate() {
            if v.holds() {
                continue;
            }
            // A claim both kinds of chunk support counts as the relevant kind only.
            if supported_by(i, true) {
                in_relevant += 1;
            } else if supported_by(i, false) {
                in_irrelevant += 1;
            }
        }
        m.noise_sensitivity_in_relevant = Some(share(in_relevant, responses));
        m.noise_sensitivity_in_irrelevant = Some(share(in_irrelevant, responses));
    }
    let (mut hallucinated, mut self_known, mut faithful) = (0, 0, 0);
    for (row, v) in c.retrieved2response.iter().zip(&c.answer2response) {
        if row.iter().any(|v| v.holds()) {
            faithful += 1;
        } else if v.holds() {
            self_known += 1;
        } else {
            hallucinated += 1;
        }
    }
    m.hallucination = Some(share(hallucinated, responses));
    m.self_knowledge = Some(share(self_known, responses));
    m.claim_faithfulness = Some(share(faithful, responses));
    m
}

/// The mean of `values` summed as numpy sums a float64 array (pairwise, in blocks of eight),
/// so that an average of RAGChecker's figures is numpy's to the last bit.
pub fn numpy_mean(values: &[f64]) -> Option<f64> {
    fn pairwise(a: &[f64]) -> f64 {
        let n = a.len();
        if n < 8 {
            a.iter().fold(0.0, |s, x| s + x)
        } else if n <= 128 {
            let mut r = [0.0; 8];
            r.copy_from_slice(&a[..8]);
            let whole = n - n % 8;
            for block in a[8..whole].chunks_exact(8) {
                for (r, x) in r.iter_mut().zip(block) {
                    *r += x;
                }
            }
            let mut s = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for x in &a[whole..] {
                s += x;
            }
            s
        } else {
            let half = n / 2;
            let half = half - half % 8;
            pairwise(&a[..half]) + pairwise(&a[half..])
        }
    }
    (!values.is_empty()).then(|| pairwise(values) / values.len() as f64)
}

/// `round(mean * 100, 1)` as RAGChecker writes a group figure: Python's `round`, which rounds
/// the exact binary value to the nearest tenth (halves to even), as Rust's formatting does.
pub fn percent(mean: f64) -> f64 {
    let text = format!("{:.1}", mean * 100.0);
    // A finite f64 always formats to a parseable number.
    text.parse().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::Verdict::{Contradiction as C, Entailment as E, Neutral as N};
    use super::*;

    #[test]
    fn shapes_that_do_not_fit_are_errors_naming_the_matrix() {
        let e = ClaimChecks::new(vec![E], vec![], vec![], vec![], 0).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`retrieved2response`: 0 entries, expected 1 (one per response claim, as `answer2response`)"
        );
        let e = ClaimChecks::new(vec![], vec![N], vec![], vec![vec![E, C]], 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`retrieved2answer` row 0: 2 entries, expected 1 (one per retrieved chunk)"
        );
    }

    #[test]
    fn nothing_to_judge_is_missing_not_zero() {
        let empty = ClaimChecks::new(vec![], vec![], vec![], vec![], 0).unwrap();
        assert_eq!(claim_metrics(&empty).values(), [None; 11]);
        // Reference claims and chunks, but no chunk recalls a claim: utilization is missing,
        // claim recall a true 0.
        let c = ClaimChecks::new(vec![], vec![E], vec![], vec![vec![N, C]], 2).unwrap();
        let m = claim_metrics(&c);
        assert_eq!(m.claim_recall, Some(0.0));
        assert_eq!(m.context_utilization, None);
        assert_eq!(m.hallucination, None);
    }

    #[test]
    fn a_precision_of_zero_makes_f1_zero_not_missing() {
        let c = ClaimChecks::new(vec![N], vec![E], vec![vec![]], vec![vec![]], 0).unwrap();
        assert_eq!(claim_metrics(&c).answer_claim_f1, Some(0.0));
    }

    #[test]
    fn numpy_mean_sums_pairwise_and_percent_rounds_as_python() {
        // numpy.mean of these (the blocks of eight change the last bit of a plain sum).
        let v: Vec<f64> = (1..=9).map(|i| 1.0 / f64::from(3 * i)).collect();
        let plain = v.iter().fold(0.0, |s, x| s + x) / 9.0;
        assert_eq!(numpy_mean(&v), Some(0.1047766019988242));
        assert_eq!(plain, 0.10477660199882423);
        assert_eq!(numpy_mean(&[]), None);
        // Python: round(12.25, 1) == 12.2, round(0.35 * 100, 1) == 35.0, round(2/3*100, 1) == 66.7
        assert_eq!(percent(0.1225), 12.2);
        assert_eq!(percent(0.35), 35.0);
        assert_eq!(percent(2.0 / 3.0), 66.7);
    }
}
