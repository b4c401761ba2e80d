//! LLM judges and the answer generator against a scripted model: parsing, support spans,
//! repairs, invalid and failed answers, repeats, pass^n, the gate and the cache.

use rag_eval::chunk::{PositionAwareChunk, RetrievedChunk};
use rag_eval::embed::Embedder;
use rag_eval::generator::{
    Generator, LlmGenerator, PromptTemplate, RagAnswer, ANSWER_PLACEHOLDERS,
};
use rag_eval::judge::{
    judge_all, judge_query, pass_hat, AnswerMatch, AnswerRelevancy, Faithfulness, Judge,
    JudgeConfig, JudgeDetails, JudgeInput, JudgeStatus, LlmContextPrecision, LlmContextRecall,
    QueryJudgement,
};
use rag_eval::llm::{ChatRequest, ChatResponse, LlmClient, Role, TokenUsage};
use rag_eval::locate::MatchKind;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

type Script = Box<dyn Fn(&ChatRequest, usize) -> Result<String, String> + Send + Sync>;

/// A chat model that answers by a script: given the request and the number of calls before
/// it, the text to answer or a transport error. Every call costs 100 + 10 tokens.
struct Scripted {
    script: Script,
    calls: AtomicUsize,
    requests: Mutex<Vec<ChatRequest>>,
    /// The `finish_reason` of every answer: `stop`, or `length` for a model the token limit cuts off.
    finish_reason: &'static str,
}

impl Scripted {
    fn new(
        script: impl Fn(&ChatRequest, usize) -> Result<String, String> + Send + Sync + 'static,
    ) -> Self {
        Scripted {
            script: Box::new(script),
            calls: AtomicUsize::new(0),
            requests: Mutex::new(Vec::new()),
            finish_reason: "stop",
        }
    }

    /// Answers the replies in order, one per call.
    fn replies(replies: &[&str]) -> Self {
        let replies: Vec<String> = replies.iter().map(|s| s.to_string()).collect();
        Self::new(move |_, n| {
            Ok(replies
                .get(n)
                .cloned()
                .unwrap_or_else(|| "(script ended)".into()))
        })
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl LlmClient for Scripted {
    fn name(&self) -> String {
        "scripted(model=judge)".into()
    }
    async fn complete(&self, request: &ChatRequest) -> rag_eval::Result<ChatResponse> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        self.requests.lock().unwrap().push(request.clone());
        match (self.script)(request, n) {
            Ok(content) => Ok(ChatResponse {
                content,
                finish_reason: Some(self.finish_reason.into()),
                usage: TokenUsage {
                    prompt_tokens: 100,
                    completion_tokens: 10,
                },
                model: "judge".into(),
                logprobs: None,
            }),
            Err(message) => Err(rag_eval::Error::Http {
                endpoint: "POST http://127.0.0.1:1/v1/chat/completions".into(),
                status: None,
                message,
            }),
        }
    }
}

/// Two chunks of a document `doc.md`; the second starts at character 200.
fn contexts() -> Vec<RetrievedChunk> {
    vec![
        RetrievedChunk::new(
            PositionAwareChunk::new(
                "doc.md",
                40,
                95,
                "The server keeps every flag in memory. Restarts: 2 s.",
            ),
            0.9,
        ),
        RetrievedChunk::new(
            PositionAwareChunk::new(
                "doc.md",
                200,
                249,
                "Größe der Regeln: SDKs download the whole set.",
            ),
            0.8,
        ),
    ]
}

fn rag(answer: &str) -> RagAnswer {
    RagAnswer {
        answer: answer.into(),
        contexts: contexts(),
    }
}

fn input<'a>(id: &'a str, answer: &'a RagAnswer, reference: Option<&'a str>) -> JudgeInput<'a> {
    JudgeInput {
        query_id: id,
        question: "How are flags served?",
        answer,
        reference,
    }
}

fn judge_once(judge: &dyn Judge, answer: &RagAnswer, reference: Option<&str>) -> QueryJudgement {
    pollster::block_on(judge_query(
        judge,
        &input("q1", answer, reference),
        &JudgeConfig::default(),
    ))
}

fn statements(details: &JudgeDetails) -> &[rag_eval::judge::Statement] {
    match details {
        JudgeDetails::Faithfulness { statements } => statements,
        other => panic!("not faithfulness details: {other:?}"),
    }
}

const THREE_STATEMENTS: &str = r#"{"statements": [
  {"statement": "The server keeps flags in memory.", "verdict": "supported", "context": 1,
   "evidence": "keeps every flag in memory", "reason": "said in 1"},
  {"statement": "SDKs download all rules.", "verdict": "supported", "context": 1,
   "evidence": "sdks DOWNLOAD the  whole set", "reason": "said in 2 (judge named the wrong passage)"},
  {"statement": "Flags are encrypted.", "verdict": "not_supported", "context": 0,
   "evidence": "", "reason": "not in the passages"}]}"#;

#[test]
fn faithfulness_parses_statements_and_locates_support_in_document_offsets() {
    let llm = Scripted::replies(&[THREE_STATEMENTS]);
    let answer =
        rag("The server keeps flags in memory; SDKs download all rules; flags are encrypted.");
    let j = judge_once(&Faithfulness::new(&llm), &answer, None);
    assert_eq!(j.status(), JudgeStatus::Ok);
    assert_eq!(j.score(), Some(2.0 / 3.0));
    let s = &j.samples[0];
    let st = statements(&s.details);
    assert_eq!(st.len(), 3);
    assert_eq!(
        st.iter().map(|s| s.supported).collect::<Vec<_>>(),
        [true, true, false]
    );
    // Exact quote in chunk 1: "keeps every flag in memory" starts at char 11 of the chunk.
    let a = st[0].support.as_ref().unwrap();
    assert_eq!(
        (a.context, a.span.start, a.span.end, a.kind),
        (0, 51, 77, MatchKind::Exact)
    );
    assert_eq!(a.chunk_id, contexts()[0].chunk.id);
    // Case and whitespace differ, and the judge named passage 1: found in passage 2, after
    // "Größe der Regeln: " (18 characters, 2 of them non-ASCII), so at 218, not at a byte offset.
    let b = st[1].support.as_ref().unwrap();
    assert_eq!(
        (b.context, b.span.start, b.span.end, b.kind),
        (1, 218, 245, MatchKind::Normalized)
    );
    let chunk = &contexts()[1].chunk.content;
    let local: String = chunk
        .chars()
        .skip(b.span.start - 200)
        .take(b.span.end - b.span.start)
        .collect();
    assert_eq!(local, "SDKs download the whole set");
    assert!(st[2].support.is_none());
    assert_eq!(s.details.unsupported().len(), 1);
    assert_eq!(s.details.unsupported()[0].text, "Flags are encrypted.");
    assert_eq!(
        (s.usage.calls, s.usage.repairs, s.usage.tokens()),
        (1, 0, 110)
    );
    // The request carried the schema, the prompt version and the sample index.
    let r = &llm.requests()[0];
    assert_eq!(r.json_schema.as_ref().unwrap().name, "faithfulness");
    assert_eq!(r.prompt_version.as_deref(), Some("faithfulness/2"));
    assert_eq!((r.sample, r.temperature), (Some(0), Some(0.0)));
    assert!(r.messages[0]
        .content
        .contains("[2] (doc.md, characters 200..249)"));
}

#[test]
fn a_supported_statement_whose_quote_is_in_no_context_counts_as_unsupported_and_is_counted() {
    let llm = Scripted::replies(&[r#"{"statements": [
      {"statement": "Flags live in RAM.", "verdict": "supported", "context": 1,
       "evidence": "flags are cached in RAM on every node", "reason": "paraphrase"},
      {"statement": "Restarts take 2 s.", "verdict": "supported", "context": 1,
       "evidence": "", "reason": "no quote given"},
      {"statement": "Flags are in memory.", "verdict": "supported", "context": 1,
       "evidence": "keeps every flag in memory", "reason": "said"},
      {"statement": "Flags are encrypted.", "verdict": "not_supported", "context": 0,
       "evidence": "", "reason": "not said"}]}"#]);
    let answer = rag("Flags live in RAM; restarts take 2 s; in memory; encrypted.");
    let answers = [answer];
    let inputs = [input("q1", &answers[0], None)];
    let run = pollster::block_on(judge_all(
        &Faithfulness::new(&llm),
        &inputs,
        &JudgeConfig::default(),
    ));
    // The judge's claim of support is checked: a quote found nowhere (or none at all) leaves
    // the statement unsupported, so one of four statements is supported.
    let j = &run.judgements[0];
    assert_eq!(j.score(), Some(0.25));
    let d = &j.samples[0].details;
    let st = statements(d);
    assert_eq!(
        st.iter()
            .map(|s| (s.supported, s.unlocated))
            .collect::<Vec<_>>(),
        [(false, true), (false, true), (true, false), (false, false)]
    );
    assert!(st[2].support.is_some());
    assert_eq!(d.unlocated().len(), 2);
    assert_eq!(d.unsupported().len(), 3);
    // The summary counts them, and its JSON carries the count.
    assert_eq!(run.summary.unlocated, 2);
    let json = serde_json::to_value(&run.summary).unwrap();
    assert_eq!(json["unlocated"], 2);
}

#[test]
fn broken_json_is_sent_back_and_repaired() {
    let llm = Scripted::replies(&[
        "Sure! Here are the statements: statements = [...]",
        r#"{"statements": [{"statement": "x", "verdict": "supported", "context": 7, "evidence": "", "reason": ""}]}"#,
        "```json\n{\"statements\": [{\"statement\": \"The server keeps flags in memory.\", \"verdict\": \"supported\", \"context\": 1, \"evidence\": \"in memory\", \"reason\": \"\"}]}\n```",
    ]);
    let answer = rag("The server keeps flags in memory.");
    let j = judge_once(&Faithfulness::new(&llm), &answer, None);
    assert_eq!(j.status(), JudgeStatus::Ok);
    assert_eq!(j.score(), Some(1.0));
    let u = j.samples[0].usage;
    assert_eq!(
        (u.calls, u.repairs, u.prompt_tokens, u.completion_tokens),
        (3, 2, 300, 30)
    );
    let requests = llm.requests();
    // Each repair turn holds the broken answer and what was wrong with it.
    let second = &requests[1].messages;
    assert_eq!(second.len(), 3);
    assert_eq!(second[1].role, Role::Assistant);
    assert!(
        second[2].content.contains("not JSON of the expected shape"),
        "{}",
        second[2].content
    );
    let third = &requests[2].messages;
    assert!(
        third[4].content.contains("statement 1: context 7 does not exist (the contexts are numbered 1 to 2; 0 means none)"),
        "{}",
        third[4].content
    );
}

#[test]
fn an_answer_broken_after_every_repair_is_invalid_not_zero_and_a_transport_error_is_error() {
    let llm = Scripted::replies(&["nope", "still no", "{\"statements\": 3}", "never asked"]);
    let answer = rag("The server keeps flags in memory.");
    let j = judge_once(&Faithfulness::new(&llm), &answer, None);
    assert_eq!(j.status(), JudgeStatus::Invalid);
    assert_eq!(j.score(), None);
    assert_eq!(llm.calls(), 3, "one call and two repairs");
    assert!(j.samples[0]
        .message
        .as_deref()
        .unwrap()
        .contains("invalid type"));

    let down = Scripted::new(|_, _| Err("connection refused after 5 attempts".into()));
    let j = judge_once(&Faithfulness::new(&down), &answer, None);
    assert_eq!(j.status(), JudgeStatus::Error);
    assert_eq!(down.calls(), 1, "no repair for a transport error");
    assert!(j.samples[0]
        .message
        .as_deref()
        .unwrap()
        .contains("connection refused"));
}

#[test]
fn an_answer_cut_off_by_the_token_limit_is_invalid_at_once() {
    // A repair would run under the same limit, so it is not attempted.
    let mut llm = Scripted::replies(&[r#"{"statements": [{"statement": "The server keeps"#]);
    llm.finish_reason = "length";
    let answer = rag("The server keeps flags in memory.");
    let j = judge_once(&Faithfulness::new(&llm), &answer, None);
    assert_eq!(j.status(), JudgeStatus::Invalid);
    assert_eq!(j.score(), None);
    assert_eq!(llm.calls(), 1, "no repair turn");
    assert_eq!(j.samples[0].usage.repairs, 0);
    let message = j.samples[0].message.as_deref().unwrap();
    assert!(message.contains("cut off by the token limit"), "{message}");

    // The same broken answer, not cut off, is sent back for repair.
    let llm = Scripted::replies(&[r#"{"statements": [{"statement": "The server keeps"#]);
    let j = judge_once(&Faithfulness::new(&llm), &answer, None);
    assert_eq!(j.status(), JudgeStatus::Invalid);
    assert_eq!(llm.calls(), 3, "one call and two repairs");

    // An answer the limit cut off that still parses, and fails its check, says why it was not
    // repaired too.
    let mut llm = Scripted::replies(&[
        r#"{"statements": [{"statement": "The server keeps flags.", "verdict": "supported", "context": 9, "evidence": "", "reason": ""}]}"#,
    ]);
    llm.finish_reason = "length";
    let j = judge_once(&Faithfulness::new(&llm), &answer, None);
    assert_eq!(j.status(), JudgeStatus::Invalid);
    assert_eq!(llm.calls(), 1, "no repair turn");
    let message = j.samples[0].message.as_deref().unwrap();
    assert!(message.contains("context 9 does not exist"), "{message}");
    assert!(message.contains("cut off by the token limit"), "{message}");
}

#[test]
fn no_statements_is_undetermined_and_an_empty_answer_costs_no_call() {
    let llm = Scripted::replies(&[r#"{"statements": []}"#]);
    let answer = rag("Hello!");
    let j = judge_once(&Faithfulness::new(&llm), &answer, None);
    assert_eq!((j.status(), j.score()), (JudgeStatus::Undetermined, None));

    let never = Scripted::new(|_, _| panic!("an empty answer needs no judge"));
    let empty = rag("  ");
    let f = judge_once(&Faithfulness::new(&never), &empty, Some("ref"));
    assert_eq!((f.status(), f.score()), (JudgeStatus::Undetermined, None));
    let m = judge_once(&AnswerMatch::new(&never), &empty, Some("ref"));
    assert_eq!((m.status(), m.score()), (JudgeStatus::Ok, Some(0.0)));
    let r = judge_once(&AnswerRelevancy::new(&never, Vectors), &empty, None);
    assert_eq!((r.status(), r.score()), (JudgeStatus::Ok, Some(0.0)));
    assert_eq!(never.calls(), 0);

    // An undetermined query is in neither the mean nor the invalid share.
    let fine = rag("ok");
    let inputs = [input("q1", &answer, None), input("q2", &fine, None)];
    let llm = Scripted::new(|r, _| {
        Ok(if r.messages[0].content.contains("Answer: ok") {
            r#"{"statements": [{"statement": "ok", "verdict": "not_supported", "context": 0, "evidence": "", "reason": ""}]}"#
        } else {
            r#"{"statements": []}"#
        }
        .into())
    });
    let run = pollster::block_on(judge_all(
        &Faithfulness::new(&llm),
        &inputs,
        &JudgeConfig::default(),
    ));
    let s = &run.summary;
    assert_eq!(
        (s.queries, s.scored, s.undetermined, s.invalid),
        (2, 1, 1, 0)
    );
    assert_eq!(s.mean, Some(0.0));
    assert!(!s.gate_fails());
}

/// Embeds known strings as fixed 2-d vectors (cosines worked by hand).
struct Vectors;

#[async_trait::async_trait]
impl Embedder for Vectors {
    fn name(&self) -> String {
        "vectors".into()
    }
    fn dimension(&self) -> usize {
        2
    }
    async fn embed(&self, texts: &[String]) -> rag_eval::Result<Vec<Vec<f32>>> {
        Ok(texts
            .iter()
            .map(|t| match t.as_str() {
                "How are flags served?" | "same" => vec![1.0, 0.0],
                "orthogonal" => vec![0.0, 1.0],
                "close" => vec![0.6, 0.8],
                other => panic!("unexpected text {other}"),
            })
            .collect())
    }
}

#[test]
fn answer_relevancy_is_the_mean_cosine_of_the_generated_questions_and_0_when_noncommittal() {
    let llm = Scripted::replies(&[
        r#"{"questions": ["same", "orthogonal", "close", "same"], "noncommittal": false}"#,
    ]);
    let answer = rag("The server keeps flags in memory.");
    let j = judge_once(&AnswerRelevancy::new(&llm, Vectors), &answer, None);
    // Three questions asked for; a fourth is dropped. (1 + 0 + 0.6) / 3.
    assert!(
        (j.score().unwrap() - 1.6 / 3.0).abs() < 1e-6,
        "{:?}",
        j.score()
    );
    let JudgeDetails::AnswerRelevancy {
        questions,
        noncommittal,
    } = &j.samples[0].details
    else {
        panic!()
    };
    assert_eq!((questions.len(), *noncommittal), (3, false));
    let schema = &llm.requests()[0].json_schema.clone().unwrap().schema;
    assert_eq!(schema["properties"]["questions"]["minItems"], 3);
    assert!(llm.requests()[0].messages[0]
        .content
        .contains("write 3 different questions"));

    let llm = Scripted::replies(&[r#"{"questions": ["same"], "noncommittal": true}"#]);
    let evasive = rag("I don't know.");
    let j = judge_once(
        &AnswerRelevancy::new(&llm, Vectors).with_questions(1),
        &evasive,
        None,
    );
    assert_eq!(j.score(), Some(0.0));
    let JudgeDetails::AnswerRelevancy {
        questions,
        noncommittal,
    } = &j.samples[0].details
    else {
        panic!()
    };
    assert!(*noncommittal);
    assert_eq!(questions[0].cosine, 1.0, "the cosines stay visible");
    assert_eq!(
        llm.requests()[0].json_schema.as_ref().unwrap().schema["properties"]["questions"]
            ["maxItems"],
        1
    );
}

#[test]
fn context_precision_recall_and_answer_match_follow_the_reference_answer() {
    // Passage 2 useful, 1 not: AP = (1/2) / 1. The first answer leaves passage 2 out.
    let llm = Scripted::replies(&[
        r#"{"verdicts": [{"context": 1, "useful": false, "reason": "restarts"}]}"#,
        r#"{"verdicts": [{"context": 2, "useful": true, "reason": "the rule set"}, {"context": 1, "useful": false, "reason": "restarts"}]}"#,
    ]);
    let answer = rag("SDKs download everything.");
    let j = judge_once(
        &LlmContextPrecision::new(&llm),
        &answer,
        Some("SDKs download the whole rule set."),
    );
    assert_eq!(j.score(), Some(0.5));
    assert_eq!(j.samples[0].usage.repairs, 1);
    assert!(llm.requests()[1].messages[2]
        .content
        .contains("context 2 has no verdict"));
    let JudgeDetails::ContextPrecision { verdicts } = &j.samples[0].details else {
        panic!()
    };
    assert_eq!(
        verdicts.iter().map(|v| v.useful).collect::<Vec<_>>(),
        [false, true]
    );
    assert_eq!(verdicts[1].chunk_id, contexts()[1].chunk.id);

    let llm = Scripted::replies(&[r#"{"statements": [
      {"statement": "SDKs download the rules.", "attributed": true, "context": 2, "reason": ""},
      {"statement": "Rules are signed.", "attributed": false, "context": 0, "reason": ""},
      {"statement": "Rules are compressed.", "attributed": false, "context": 0, "reason": ""}]}"#]);
    let j = judge_once(
        &LlmContextRecall::new(&llm),
        &answer,
        Some("SDKs download signed, compressed rules."),
    );
    assert_eq!(j.score(), Some(1.0 / 3.0));

    let llm = Scripted::replies(&[r#"{"reason": "same fact", "matches": true}"#]);
    let j = judge_once(
        &AnswerMatch::new(&llm),
        &answer,
        Some("SDKs download the whole rule set."),
    );
    assert_eq!(j.score(), Some(1.0));
    let JudgeDetails::AnswerMatch { reason, .. } = &j.samples[0].details else {
        panic!()
    };
    assert_eq!(reason, "same fact");

    // Without a reference answer these three have nothing to judge against.
    let never = Scripted::new(|_, _| panic!("no call without a reference"));
    for judge in [
        &LlmContextPrecision::new(&never) as &dyn Judge,
        &LlmContextRecall::new(&never),
        &AnswerMatch::new(&never),
    ] {
        let j = judge_once(judge, &answer, None);
        assert_eq!(j.status(), JudgeStatus::Undetermined, "{}", judge.name());
    }
}

/// A judge whose verdict for sample i of query q is scripted: faithfulness with `k` of 2
/// statements supported.
fn per_sample(scores: &'static [(&'static str, [u32; 3])]) -> Scripted {
    Scripted::new(move |r, _| {
        let text = &r.messages[0].content;
        let (_, ks) = scores
            .iter()
            .find(|(a, _)| text.contains(&format!("Answer: {a}")))
            .expect("known answer");
        let k = ks[r.sample.unwrap() as usize];
        let verdict = |i: u32| if i < k { "supported" } else { "not_supported" };
        Ok(format!(
            r#"{{"statements": [{{"statement": "a", "verdict": "{}", "context": 0, "evidence": "in memory", "reason": ""}}, {{"statement": "b", "verdict": "{}", "context": 0, "evidence": "in memory", "reason": ""}}]}}"#,
            verdict(0),
            verdict(1)
        ))
    })
}

#[test]
fn repeats_give_the_mean_the_spread_and_pass_hat_n() {
    // Query A: 2/2, 2/2, 1/2 supported; query B: 2/2 three times (answers long enough for two
    // statements).
    let llm = per_sample(&[("alpha", [2, 2, 1]), ("beta", [2, 2, 2])]);
    let (a, b) = (
        rag("alpha, of two statements"),
        rag("beta, of two statements"),
    );
    let inputs = [input("a", &a, None), input("b", &b, None)];
    let config = JudgeConfig {
        samples: 3,
        temperature: 0.7,
        ..JudgeConfig::default()
    };
    let run = pollster::block_on(judge_all(&Faithfulness::new(&llm), &inputs, &config));
    let ja = &run.judgements[0];
    assert_eq!(
        ja.samples
            .iter()
            .map(|s| s.score.unwrap())
            .collect::<Vec<_>>(),
        [1.0, 1.0, 0.5]
    );
    assert!((ja.score().unwrap() - 2.5 / 3.0).abs() < 1e-12);
    let spread = ja.spread().unwrap();
    // Population std of (1, 1, 0.5): sqrt(((1/6)^2 * 2 + (1/3)^2) / 3).
    assert!((spread.std - ((2.0 / 36.0 + 1.0 / 9.0) / 3.0f64).sqrt()).abs() < 1e-12);
    assert_eq!((spread.min, spread.max), (0.5, 1.0));
    assert_eq!(run.judgements[1].spread().unwrap().std, 0.0);
    // pass^3 at 0.8: A fails one sample, B passes all three; at 0.5 both pass.
    assert_eq!(pass_hat(&run.judgements, 0.8), Some(0.5));
    assert_eq!(pass_hat(&run.judgements, 0.5), Some(1.0));
    let s = &run.summary;
    assert_eq!(
        (s.samples, s.ok, s.usage.calls, s.usage.tokens()),
        (6, 6, 6, 660)
    );
    assert!((s.mean.unwrap() - (2.5 / 3.0 + 1.0) / 2.0).abs() < 1e-12);
    // Every request carried its sample index and the temperature.
    let mut seen: Vec<(u32, f32)> = llm
        .requests()
        .iter()
        .map(|r| (r.sample.unwrap(), r.temperature.unwrap()))
        .collect();
    seen.sort_by(|x, y| x.partial_cmp(y).unwrap());
    assert_eq!(
        seen,
        [(0, 0.7), (0, 0.7), (1, 0.7), (1, 0.7), (2, 0.7), (2, 0.7)]
    );
}

#[test]
fn the_gate_fails_when_invalid_and_failed_answers_exceed_the_share() {
    // 20 queries; those whose answer is in `bad` always get broken JSON.
    let answers: Vec<RagAnswer> = (0..20).map(|i| rag(&format!("answer {i}"))).collect();
    let ids: Vec<String> = (0..20).map(|i| format!("q{i}")).collect();
    let inputs: Vec<JudgeInput> = (0..20).map(|i| input(&ids[i], &answers[i], None)).collect();
    let run_with = |bad: &'static [&'static str]| {
        let llm = Scripted::new(move |r, _| {
            let text = &r.messages[0].content;
            if bad.iter().any(|b| text.contains(&format!("Answer: {b}\n"))) {
                Ok("{".into())
            } else {
                Ok(r#"{"statements": [{"statement": "s", "verdict": "supported", "context": 0, "evidence": "in memory", "reason": ""}]}"#.into())
            }
        });
        pollster::block_on(judge_all(
            &Faithfulness::new(&llm),
            &inputs,
            &JudgeConfig::default(),
        ))
        .summary
    };
    let one = run_with(&["answer 3"]);
    assert_eq!((one.invalid, one.ok), (1, 19));
    assert_eq!(one.invalid_share(), 0.05);
    assert!(!one.gate_fails(), "5% is at the limit, not over it");
    assert_eq!(one.mean, Some(1.0), "the invalid answer is not a zero");
    assert_eq!(one.usage.repairs, 2);
    let two = run_with(&["answer 3", "answer 7"]);
    assert_eq!(two.invalid_share(), 0.1);
    assert!(two.gate_fails());
    assert_eq!(two.mean, Some(1.0));
    let strict = rag_eval::judge::JudgeSummary {
        max_invalid_share: 0.0,
        ..one
    };
    assert!(strict.gate_fails());
}

#[test]
fn the_generator_keeps_the_chunks_and_takes_a_prompt_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("answer.md");
    std::fs::write(
        &path,
        "version: 4\nPassages:\n{{contexts}}\nQ: {{question}}\n",
    )
    .unwrap();
    let prompt = PromptTemplate::from_file(path.to_str().unwrap(), ANSWER_PLACEHOLDERS).unwrap();
    let llm = Scripted::replies(&["  Flags stay in memory [1].\n"]);
    let generator = LlmGenerator::new(&llm).with_prompt(prompt);
    let chunks = contexts();
    let answer = pollster::block_on(generator.generate("Where?", &chunks)).unwrap();
    assert_eq!(answer.answer, "Flags stay in memory [1].");
    assert_eq!(answer.contexts, chunks);
    assert_eq!(generator.usage().total(), 110);
    let r = &llm.requests()[0];
    assert_eq!(r.prompt_version.as_deref(), Some("answer/4"));
    assert!(r.messages[0]
        .content
        .starts_with("Passages:\n[1] (doc.md, characters 40..95)\n"));
    assert!(r.messages[0].content.ends_with("Q: Where?\n"));
    std::fs::write(&path, "version: 4\n{{query}}\n").unwrap();
    let e = PromptTemplate::from_file(path.to_str().unwrap(), ANSWER_PLACEHOLDERS).unwrap_err();
    assert!(
        e.to_string()
            .ends_with(":2: unknown placeholder {{query}} (known: {{question}}, {{contexts}})"),
        "{e}"
    );
}

#[cfg(feature = "cache")]
mod cached {
    use super::*;
    use rag_eval::cache::{Cache, CacheMode, CachedLlm};
    use std::sync::Arc;

    #[test]
    fn a_recorded_run_replays_with_zero_calls_and_each_sample_has_its_own_entry() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("judge.sqlite");
        let path = path.to_str().unwrap();
        let (a, b) = (
            rag("alpha, of two statements"),
            rag("beta, of two statements"),
        );
        let inputs = [input("a", &a, None), input("b", &b, None)];
        let config = JudgeConfig {
            samples: 3,
            temperature: 0.7,
            ..JudgeConfig::default()
        };
        let llm = per_sample(&[("alpha", [2, 1, 0]), ("beta", [1, 2, 2])]);
        let cache = Arc::new(Cache::open(path, CacheMode::ReadWrite).unwrap());
        let recorded = pollster::block_on(judge_all(
            &Faithfulness::new(CachedLlm::new(&llm, cache)),
            &inputs,
            &config,
        ));
        assert_eq!(llm.calls(), 6);
        // Had the sample index not been in the key, samples 1 and 2 would have replayed
        // sample 0's answer.
        let scores: Vec<f64> = recorded.judgements[0]
            .samples
            .iter()
            .map(|s| s.score.unwrap())
            .collect();
        assert_eq!(scores, [1.0, 0.5, 0.0]);

        let never = Scripted::new(|_, _| panic!("replay calls nothing"));
        let cache = Arc::new(Cache::open(path, CacheMode::Replay).unwrap());
        let replayed = pollster::block_on(judge_all(
            &Faithfulness::new(CachedLlm::new(&never, cache)),
            &inputs,
            &config,
        ));
        assert_eq!(never.calls(), 0);
        assert_eq!(
            replayed, recorded,
            "same judgements, same recorded token counts"
        );
        assert_eq!(replayed.summary.usage.tokens(), 660);

        // A new prompt version (the built-in is 2) is a miss, not a stale hit.
        let cache = Arc::new(Cache::open(path, CacheMode::Replay).unwrap());
        let prompt = PromptTemplate::parse(
            &format!(
                "version: 3\n{}",
                Faithfulness::<&Scripted>::builtin_prompt().template
            ),
            "f.md",
            rag_eval::judge::FAITHFULNESS_PLACEHOLDERS,
        )
        .unwrap();
        let j = pollster::block_on(judge_query(
            &Faithfulness::new(CachedLlm::new(&never, cache)).with_prompt(prompt),
            &inputs[0],
            &config,
        ));
        assert_eq!(j.status(), JudgeStatus::Error);
        assert!(
            j.samples[0].message.as_deref().unwrap().contains("replay"),
            "{:?}",
            j.samples[0].message
        );
    }
}
