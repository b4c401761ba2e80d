//! The claims judge against a scripted model that knows each claim's verdict against each
//! text: the four matrices it fills, the figures (equal to `metrics::claims` on the same
//! matrices), batches of five, spans of the chunks' evidence, and invalid answers counted.

use rag_eval::chunk::{PositionAwareChunk, RetrievedChunk};
use rag_eval::generator::RagAnswer;
use rag_eval::judge::{
    add_to_result, judge_all, judge_query, Claims, JudgeConfig, JudgeDetails, JudgeInput,
    JudgeStatus, CLAIMS_PER_CHECK,
};
use rag_eval::llm::{ChatRequest, ChatResponse, LlmClient, TokenUsage};
use rag_eval::metrics::claims::{claim_metrics, ClaimChecks, Verdict, NAMES};
use rag_eval::metrics::{QueryResult, ResultLevel, RunResult};
use std::sync::Mutex;

const ANSWER: &str = "Flags are kept in memory, restarts take 2 s and SDKs download the whole \
                      rule set. Flags are encrypted, served over HTTP and change at once; the \
                      server is written in Rust.";
const REFERENCE: &str = "Flags are kept in memory, served over HTTP, and change at once.";
const CHUNK0: &str = "The server keeps every flag in memory. Restarts: 2 s.";
const CHUNK1: &str = "SDKs download the whole rule set at start.";

/// The answer's seven claims: two batches of checks per text.
const RESPONSE_CLAIMS: [&str; 7] = [
    "Flags are kept in memory.",
    "Restarts take 2 s.",
    "SDKs download the whole rule set.",
    "Flags are encrypted.",
    "Flags are served over HTTP.",
    "The server is written in Rust.",
    "Flags change at once.",
];
const REFERENCE_CLAIMS: [&str; 3] = [
    "Flags are kept in memory.",
    "Flags are served over HTTP.",
    "Flags change at once.",
];

fn contexts() -> Vec<RetrievedChunk> {
    let n = |t: &str| t.chars().count();
    vec![
        RetrievedChunk::new(
            PositionAwareChunk::new("doc.md", 100, 100 + n(CHUNK0), CHUNK0),
            0.9,
        ),
        RetrievedChunk::new(
            PositionAwareChunk::new("doc.md", 300, 300 + n(CHUNK1), CHUNK1),
            0.8,
        ),
    ]
}

/// The script's verdict and quote for `claim` against the text `against`.
fn oracle(claim: &str, against: &str) -> (&'static str, &'static str) {
    match (claim, against) {
        ("Flags are kept in memory.", REFERENCE | ANSWER) => ("Entailment", ""),
        ("Flags are kept in memory.", CHUNK0) => ("Entailment", "keeps every flag in memory"),
        ("Restarts take 2 s.", CHUNK0) => ("Entailment", "Restarts: 2 s."),
        ("SDKs download the whole rule set.", CHUNK1) => {
            ("Entailment", "download the whole rule set")
        }
        ("Flags are served over HTTP.", REFERENCE | ANSWER) => ("Entailment", ""),
        ("The server is written in Rust.", REFERENCE) => ("Contradiction", ""),
        ("Flags change at once.", REFERENCE | ANSWER) => ("Entailment", ""),
        // The judge says so, but quotes what the chunk does not hold: counted Neutral.
        ("Flags change at once.", CHUNK0) => ("Entailment", "flags change at once"),
        _ => ("Neutral", ""),
    }
}

/// What the judge must make of the oracle: the four matrices, by hand.
fn expected() -> ClaimChecks {
    use Verdict::{Contradiction as C, Entailment as E, Neutral as N};
    ClaimChecks::new(
        vec![E, N, N, N, E, C, E],
        vec![E, E, E],
        vec![
            vec![E, N],
            vec![E, N],
            vec![N, E],
            vec![N, N],
            vec![N, N],
            vec![N, N],
            vec![N, N],
        ],
        vec![vec![E, N], vec![N, N], vec![N, N]],
        2,
    )
    .unwrap()
}

/// A model answering by the oracle: the claims of the text it is given, or the verdicts on
/// the numbered claims against the reference text. `broken` names a text against which the
/// checks of the claims starting with `broken.1` get no JSON.
struct Oracle {
    requests: Mutex<Vec<String>>,
    broken: Option<(&'static str, &'static str)>,
}

impl Oracle {
    fn new() -> Self {
        Oracle {
            requests: Mutex::new(Vec::new()),
            broken: None,
        }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

fn json_list(items: &[&str]) -> String {
    serde_json::to_string(items).unwrap()
}

#[async_trait::async_trait]
impl LlmClient for Oracle {
    fn name(&self) -> String {
        "oracle(model=judge)".into()
    }

    async fn complete(&self, request: &ChatRequest) -> rag_eval::Result<ChatResponse> {
        // The prompt, and for a repair what the model is told after it.
        let prompt = request.messages[0].content.clone();
        self.requests.lock().unwrap().push(prompt.clone());
        let content = if let Some((_, text)) = prompt.rsplit_once("\nText: ") {
            match text.trim() {
                ANSWER => format!("{{\"claims\": {}}}", json_list(&RESPONSE_CLAIMS)),
                REFERENCE => format!("{{\"claims\": {}}}", json_list(&REFERENCE_CLAIMS)),
                other => panic!("unexpected text {other:?}"),
            }
        } else {
            let (_, rest) = prompt.split_once("Reference text:\n").unwrap();
            let (against, claims) = rest.split_once("\n\nClaims:\n").unwrap();
            let claims: Vec<&str> = claims
                .lines()
                .map(|l| l.split_once(". ").unwrap().1)
                .collect();
            if self
                .broken
                .is_some_and(|(text, first)| text == against && claims[0] == first)
            {
                "the claims look fine to me".to_owned()
            } else {
                let verdicts: Vec<serde_json::Value> = claims
                    .iter()
                    .map(|c| {
                        let (verdict, evidence) = oracle(c, against);
                        serde_json::json!({"verdict": verdict, "evidence": evidence})
                    })
                    .collect();
                serde_json::json!({ "verdicts": verdicts }).to_string()
            }
        };
        Ok(ChatResponse {
            content,
            finish_reason: Some("stop".into()),
            usage: TokenUsage {
                prompt_tokens: 100,
                completion_tokens: 10,
            },
            model: "judge".into(),
            logprobs: None,
        })
    }
}

fn answer() -> RagAnswer {
    RagAnswer {
        answer: ANSWER.into(),
        contexts: contexts(),
    }
}

fn input(answer: &RagAnswer) -> JudgeInput<'_> {
    JudgeInput {
        query_id: "q1",
        question: "How are flags served?",
        answer,
        reference: Some(REFERENCE),
    }
}

#[test]
fn the_matrices_and_figures_are_ragcheckers_and_the_checks_go_five_claims_at_a_time() {
    let oracle = std::sync::Arc::new(Oracle::new());
    let judge = Claims::new(oracle.clone());
    let answer = answer();
    let inputs = [input(&answer)];
    let run = pollster::block_on(judge_all(&judge, &inputs, &JudgeConfig::default()));
    let j = &run.judgements[0];
    let s = &j.samples[0];
    assert_eq!(s.status, JudgeStatus::Ok, "{:?}", s.message);

    // 2 extractions; 7 answer claims in 2 batches and 3 reference claims in 1, each against
    // the other answer and the 2 chunks: 2 + 3 · (2 + 1) = 11 calls.
    let requests = oracle.requests();
    assert_eq!(s.usage.calls, 11);
    assert_eq!(requests.len(), 11);
    assert_eq!(s.usage.tokens(), 11 * 110);
    let mut sizes: Vec<usize> = requests
        .iter()
        .filter_map(|r| r.split_once("\n\nClaims:\n"))
        .map(|(_, claims)| claims.lines().count())
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [2, 2, 2, 3, 3, 3, 5, 5, 5]);
    assert!(sizes.iter().all(|&n| n <= CLAIMS_PER_CHECK));

    // The matrices are the oracle's, with the unlocated entailment counted Neutral.
    let details = &s.details;
    assert_eq!(details.claim_checks(), Some(expected()));
    let JudgeDetails::Claims {
        response_claims,
        reference_claims,
        retrieved2response,
        retrieved2answer,
        ..
    } = details
    else {
        panic!("{details:?}")
    };
    assert_eq!(response_claims, &RESPONSE_CLAIMS);
    assert_eq!(reference_claims, &REFERENCE_CLAIMS);
    // Each chunk's entailment carries its evidence as document characters.
    let support = retrieved2response[1][0].support.as_ref().unwrap();
    assert_eq!(
        (
            support.span.doc.as_str(),
            support.span.start,
            support.span.end
        ),
        ("doc.md", 139, 153)
    );
    assert_eq!(&CHUNK0[39..53], "Restarts: 2 s.");
    let support = retrieved2answer[0][0].support.as_ref().unwrap();
    assert_eq!((support.span.start, support.span.end), (111, 137));
    let unlocated = &retrieved2response[6][0];
    assert!(unlocated.unlocated && unlocated.support.is_none());
    assert_eq!(unlocated.verdict, Verdict::Neutral);
    assert_eq!(details.unlocated_count(), 2);
    assert_eq!(run.summary.unlocated, 2);
    assert!(run.summary.usage_lines().starts_with(
        "claims: 11 calls (0 repairs) and 0 HTTP retries, 1210 tokens; 1 of 1 samples scored, \
         0 undetermined, 0 invalid, 0 failed; entailments counted neutral for a quote not in \
         their context: 2\n"
    ));

    // The figures are metrics::claims's on the same matrices, every one of them, under our
    // names; the sample's score is answer_claim_f1.
    let m = claim_metrics(&expected());
    assert_eq!(s.score, m.answer_claim_f1);
    assert_eq!(m.hallucination, Some(2.0 / 7.0));
    assert_eq!(m.noise_sensitivity_in_relevant, Some(1.0 / 7.0));
    assert_eq!(m.noise_sensitivity_in_irrelevant, Some(1.0 / 7.0));
    assert_eq!(m.self_knowledge, Some(2.0 / 7.0));
    assert_eq!(m.context_utilization, Some(1.0));
    let mut result = RunResult::from_queries(
        ResultLevel::Token,
        vec![],
        vec![QueryResult {
            id: "q1".into(),
            ..QueryResult::default()
        }],
    );
    add_to_result(&mut result, &run);
    for ((name, ..), want) in NAMES.iter().zip(m.values()) {
        assert_eq!(result.per_query[0].metrics.get(name), want, "{name}");
        assert_eq!(result.metrics.get(name), want, "{name}");
    }
    assert_eq!(result.metrics.get("claims"), None);

    // The details round-trip through a record's JSON.
    let text = serde_json::to_string(&result.per_query[0].judges).unwrap();
    let back: Vec<rag_eval::judge::QueryJudgement> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, result.per_query[0].judges);
    assert!(text.contains("\"kind\":\"claims\""), "{text}");
    assert!(text.contains("\"answer2response\":[{\"verdict\":\"Entailment\"}"));
}

#[test]
fn an_answer_that_never_comes_back_valid_makes_the_query_invalid_with_every_call_counted() {
    let oracle = std::sync::Arc::new(Oracle {
        broken: Some((CHUNK1, RESPONSE_CLAIMS[5])),
        ..Oracle::new()
    });
    let judge = Claims::new(oracle.clone());
    let answer = answer();
    let inputs = [input(&answer)];
    let run = pollster::block_on(judge_all(&judge, &inputs, &JudgeConfig::default()));
    let s = &run.judgements[0].samples[0];
    assert_eq!(s.status, JudgeStatus::Invalid);
    assert_eq!(s.score, None);
    let message = s.message.as_deref().unwrap();
    assert!(
        message.starts_with("the answer's claims 6 to 7 against context 2: not JSON"),
        "{message}"
    );
    // The 11 requests, and the broken one's 2 repairs.
    assert_eq!((s.usage.calls, s.usage.repairs), (13, 2));
    assert_eq!(oracle.requests().len(), 13);
    assert_eq!((run.summary.invalid, run.summary.ok), (1, 0));
    assert_eq!(run.summary.usage.calls, 13);
    // No figure rather than a 0.
    let mut result = RunResult::from_queries(
        ResultLevel::Token,
        vec![],
        vec![QueryResult {
            id: "q1".into(),
            ..QueryResult::default()
        }],
    );
    add_to_result(&mut result, &run);
    for (name, ..) in NAMES {
        assert_eq!(result.per_query[0].metrics.get(name), None, "{name}");
        assert_eq!(result.metrics.get(name), None, "{name}");
    }
}

#[test]
fn without_a_reference_or_a_claim_the_query_is_undetermined_at_no_or_few_calls() {
    let oracle = std::sync::Arc::new(Oracle::new());
    let judge = Claims::new(oracle.clone());
    let answer = answer();
    let none = JudgeInput {
        reference: None,
        ..input(&answer)
    };
    let j = pollster::block_on(judge_query(&judge, &none, &JudgeConfig::default()));
    assert_eq!(j.samples[0].status, JudgeStatus::Undetermined);
    assert_eq!(oracle.requests().len(), 0);
    let empty = RagAnswer {
        answer: " ".into(),
        contexts: contexts(),
    };
    let j = pollster::block_on(judge_query(&judge, &input(&empty), &JudgeConfig::default()));
    assert_eq!(j.samples[0].status, JudgeStatus::Undetermined);
    assert_eq!(j.samples[0].message.as_deref(), Some("the answer is empty"));
    assert_eq!(oracle.requests().len(), 0);
}

/// Runs whose queries each have one answer claim, one reference claim and one chunk; a query
/// marked `true` has a wrong answer claim no chunk entails (a hallucination), the others a
/// right one the chunk entails.
#[cfg(feature = "compare")]
fn judged_run(wrong: &[bool]) -> RunResult {
    use rag_eval::judge::{JudgeRun, JudgeSample, JudgeSummary, QueryJudgement};
    use rag_eval::metrics::ClaimCheck;
    use Verdict::{Entailment as E, Neutral as N};
    let of = |v: Verdict| ClaimCheck::of(v);
    let judgements: Vec<QueryJudgement> = wrong
        .iter()
        .enumerate()
        .map(|(i, &w)| QueryJudgement {
            metric: "claims".into(),
            query_id: format!("q{i}"),
            samples: vec![JudgeSample {
                sample: 0,
                status: JudgeStatus::Ok,
                score: Some(1.0),
                details: JudgeDetails::Claims {
                    response_claims: vec!["claim".into()],
                    reference_claims: vec!["claim".into()],
                    chunks: 1,
                    answer2response: vec![of(if w { N } else { E })],
                    response2answer: vec![of(E)],
                    retrieved2response: vec![vec![of(if w { N } else { E })]],
                    retrieved2answer: vec![vec![of(E)]],
                },
                message: None,
                kind: None,
                usage: Default::default(),
            }],
        })
        .collect();
    let summary = JudgeSummary::new("claims", &judgements, 0.05);
    let mut result = RunResult::from_queries(
        ResultLevel::Token,
        vec![],
        (0..wrong.len())
            .map(|i| QueryResult {
                id: format!("q{i}"),
                ..QueryResult::default()
            })
            .collect(),
    );
    add_to_result(
        &mut result,
        &JudgeRun {
            judgements,
            summary,
        },
    );
    result.dataset_hash = Some("aaaa".into());
    result
}

#[cfg(feature = "compare")]
#[test]
fn compare_reads_the_claim_figures_like_any_other() {
    use rag_eval::compare::{CompareOptions, Comparison};
    let a = judged_run(&[false; 6]);
    let b = judged_run(&[true, true, false, true, true, true]);
    assert_eq!(b.metrics.get("hallucination"), Some(5.0 / 6.0));
    let c = Comparison::new(&[("a", &a), ("b", &b)], &CompareOptions::default()).unwrap();
    let h = c
        .metrics
        .iter()
        .find(|m| m.metric == "hallucination")
        .expect("hallucination is compared");
    assert_eq!((h.runs[0].mean, h.runs[1].mean), (0.0, 5.0 / 6.0));
    let d = &h.vs_baseline[0];
    assert!((d.difference - 5.0 / 6.0).abs() < 1e-15);
    assert_eq!((d.outcome.wins, d.outcome.ties, d.outcome.losses).1, 1);
    let worse: Vec<&str> = d
        .most_better
        .iter()
        .chain(&d.most_worse)
        .map(|q| q.id.as_str())
        .collect();
    assert_eq!(worse.len(), 5);
    // The figures a judge could not give are absent, not compared as zeros: context
    // utilization is 1 everywhere, claim faithfulness falls with the hallucinations.
    let cf = c
        .metrics
        .iter()
        .find(|m| m.metric == "claim_faithfulness")
        .unwrap();
    assert_eq!((cf.runs[0].mean, cf.runs[1].mean), (1.0, 1.0 / 6.0));
    assert!(c.metrics.iter().all(|m| m.metric != "claims"));
}
