//! Scoring a conversation: the agent metrics of its tool calls and steps, each retrieving
//! turn's retrieval and answer figures and judgements, and the judges of the whole
//! conversation ([`Scorer`]); a run's result ([`run_result`]).

use super::{Conversation, Role, Turn};
use crate::answers::place::{ContextLocator, NOT_SEARCHED};
use crate::answers::{ContextItems, Placement};
use crate::chunk::RetrievedChunk;
use crate::corpus::Corpus;
use crate::error::Result;
use crate::generator::RagAnswer;
use crate::judge::{judge_query, Judge, JudgeConfig, JudgeInput};
use crate::level::TokenLevel;
use crate::metrics::answer::{AnswerInput, AnswerMetric};
use crate::metrics::tool_calls::{self, Args, Order, Sequence};
use crate::metrics::{
    scorecard, Figures, Metric, Passage, QueryResult, ResultLevel, RunResult, Scored, SpanMode,
    Truth, TurnResult,
};
use std::sync::Arc;

/// The figures of a conversation, in report order. The first seven compare with the
/// reference calls; `tool_calls` and `steps` count; `steps_within_max` holds `steps` to the
/// conversation's `max_steps`.
pub const AGENT_METRICS: [&str; 10] = [
    "tool_call_accuracy",
    "tool_call_accuracy_flexible",
    "tool_call_f1",
    "tool_sequence_exact",
    "tool_sequence_in_order",
    "tool_args_match",
    "tool_args_match_exact",
    "tool_calls",
    "steps",
    "steps_within_max",
];

/// Every figure of `c`, `None` where there is nothing to compare (no reference calls given,
/// or none expected and none made; no `max_steps`).
pub fn agent_figures(c: &Conversation) -> [Option<f64>; 10] {
    let made = c.tool_calls();
    let steps = c.steps();
    let counts = [
        Some(made.len() as f64),
        Some(steps as f64),
        tool_calls::within_max(steps, c.max_steps),
    ];
    let compared = match &c.reference_tool_calls {
        None => [None; 7],
        Some(want) => [
            tool_calls::tool_call_accuracy(&made, want, Order::Strict),
            tool_calls::tool_call_accuracy(&made, want, Order::Flexible),
            tool_calls::tool_call_f1(&made, want),
            tool_calls::tool_sequence(&made, want, Sequence::Exact),
            tool_calls::tool_sequence(&made, want, Sequence::InOrder),
            tool_calls::tool_args_match(&made, want, Args::Partial),
            tool_calls::tool_args_match(&made, want, Args::Exact),
        ],
    };
    let mut all = [None; 10];
    all[..7].copy_from_slice(&compared);
    all[7..].copy_from_slice(&counts);
    all
}

/// Renders `turns` for a judge, one line (or paragraph) per turn, each numbered from 1:
/// `[1] user: …`, `[2] assistant: …`, `[2] assistant calls NAME {args}` per tool call,
/// `[3] tool (id): …` for a tool's result. The conversation judges read the whole
/// conversation so; a turn's judges read the turns before it.
pub fn transcript(turns: &[Turn]) -> String {
    let mut out = String::new();
    for (i, t) in turns.iter().enumerate() {
        let n = i + 1;
        let content = t.content.trim();
        match t.role {
            Role::Tool => {
                let id = t.tool_call_id.as_deref().map(|id| format!(" ({id})"));
                out.push_str(&format!(
                    "[{n}] tool{}: {content}\n",
                    id.unwrap_or_default()
                ));
            }
            role => {
                if !content.is_empty() || t.tool_calls.is_empty() {
                    out.push_str(&format!("[{n}] {}: {content}\n", role.as_str()));
                }
                for call in &t.tool_calls {
                    let args = serde_json::Value::Object(call.args.clone());
                    out.push_str(&format!(
                        "[{n}] {} calls {} {args}\n",
                        role.as_str(),
                        call.name
                    ));
                }
            }
        }
    }
    out
}

/// Scores conversations: the agent figures ([`agent_figures`]), each retrieving assistant
/// turn's retrieval metrics, answer metrics and judges, and the judges of the whole
/// conversation. Build it once and [`score`](Scorer::score) each conversation;
/// [`run_result`] gathers the results of a run.
///
/// **A turn's figures.** An assistant turn *retrieved* when it has contexts. Its contexts
/// given as text are placed in the corpus ([`Scorer::with_corpus`]) as an answers file's are;
/// the retrieval metrics at cut-off `k` compare its placed contexts with the turn's
/// `relevant_spans` (not measured without them, or with no context placed); the answer metrics
/// compare its content with its `reference_answer` (not measured without one); each turn judge
/// reads its content and contexts, with as question the user turns since the assistant last
/// answered, after the conversation before them. A turn with nothing to judge has no figure:
/// missing, never 0 or 1.
///
/// **A conversation's figures.** The agent figures; for each turn figure, the mean over the
/// assistant turns that have it (a conversation none of whose turns has it has none); then
/// each conversation judge's score.
pub struct Scorer {
    k: usize,
    mode: SpanMode,
    corpus: Option<Arc<Corpus>>,
    retrieval: Vec<Box<dyn Metric<TokenLevel>>>,
    answer: Vec<Box<dyn AnswerMetric>>,
    turn_judges: Vec<Arc<dyn Judge>>,
    conversation_judges: Vec<Arc<dyn Judge>>,
    config: JudgeConfig,
}

impl Scorer {
    /// Agent figures, retrieval metrics at cut-off `k` (standard span mode) and the lexical
    /// answer metrics; no corpus and no judge.
    pub fn new(k: usize) -> Scorer {
        Scorer {
            k,
            mode: SpanMode::Standard,
            corpus: None,
            retrieval: crate::metrics::token_level_metrics(SpanMode::Standard, None),
            answer: crate::metrics::answer_metrics(false),
            turn_judges: Vec::new(),
            conversation_judges: Vec::new(),
            config: JudgeConfig::default(),
        }
    }

    /// Places the turns' contexts given as text in `corpus`, and gives the truth spans their
    /// text.
    pub fn with_corpus(mut self, corpus: Arc<Corpus>) -> Scorer {
        self.corpus = Some(corpus);
        self
    }

    /// Scores retrieval in span mode `mode`.
    pub fn with_mode(mut self, mode: SpanMode) -> Scorer {
        self.mode = mode;
        self.retrieval = crate::metrics::token_level_metrics(mode, None);
        self
    }

    /// Uses `metrics` as the answer metrics of a turn with a reference answer (those reading
    /// embeddings are not measured here: they have none).
    pub fn with_answer_metrics(mut self, metrics: Vec<Box<dyn AnswerMetric>>) -> Scorer {
        self.answer = metrics;
        self
    }

    /// Asks `judge` of every assistant turn that retrieved and answered.
    pub fn with_turn_judge(mut self, judge: Arc<dyn Judge>) -> Scorer {
        self.turn_judges.push(judge);
        self
    }

    /// Asks `judge` once of the whole conversation ([`crate::judge::GoalAccuracy`], a
    /// criteria judge, …): the judged answer is the [`transcript`] (with no contexts), the
    /// question the user's first message and the reference the conversation's reference
    /// outcome (for [`crate::judge::TopicAdherence`], its reference topics, one a line).
    pub fn with_conversation_judge(mut self, judge: Arc<dyn Judge>) -> Scorer {
        self.conversation_judges.push(judge);
        self
    }

    /// Judges with `config` (samples, repairs, temperature, …).
    pub fn with_judge_config(mut self, config: JudgeConfig) -> Scorer {
        self.config = config;
        self
    }

    /// The judge settings in use.
    pub fn judge_config(&self) -> &JudgeConfig {
        &self.config
    }

    /// Scores `c`: its [`QueryResult`] with the conversation's figures in `metrics`, the
    /// conversation judges' judgements in `judges` and the transcript with each turn's figures
    /// and judgements in `turns`. Judges never fail: a failed call is an `invalid` or `error`
    /// sample, with no figure.
    pub async fn score(&self, c: &Conversation) -> Result<QueryResult> {
        let mut metrics = Figures::default();
        for (name, v) in AGENT_METRICS.iter().zip(agent_figures(c)) {
            if let Some(v) = v {
                metrics.0.push(((*name).to_owned(), v));
            }
        }
        let mut turns = Vec::with_capacity(c.turns.len());
        for (i, t) in c.turns.iter().enumerate() {
            turns.push(self.turn(c, i, t).await);
        }
        for (name, mean) in turn_means(&turns) {
            metrics.0.push((name, mean));
        }
        let mut judges = Vec::new();
        if !self.conversation_judges.is_empty() {
            // The judged text is the whole transcript; the question the user's first message.
            let answer = RagAnswer {
                answer: transcript(&c.turns),
                contexts: Vec::new(),
            };
            let first = c.turns.iter().find(|t| t.role == Role::User);
            let topics = (!c.reference_topics.is_empty()).then(|| c.reference_topics.join("\n"));
            for j in &self.conversation_judges {
                // Topic adherence compares with the reference topics, the others with the
                // reference outcome.
                let reference = if j.name().starts_with("topic_adherence") {
                    topics.as_deref()
                } else {
                    c.reference_outcome.as_deref()
                };
                let input = JudgeInput {
                    query_id: &c.id,
                    question: first.map_or("", |t| t.content.as_str()),
                    answer: &answer,
                    reference,
                };
                let judgement = judge_query(j.as_ref(), &input, &self.config).await;
                if let Some(score) = judgement.score() {
                    metrics.0.push((judgement.metric.clone(), score));
                }
                judges.push(judgement);
            }
        }
        Ok(QueryResult {
            id: c.id.clone(),
            metrics,
            judges,
            turns,
            ..QueryResult::default()
        })
    }

    /// Turn `i` of `c` with its figures.
    async fn turn(&self, c: &Conversation, i: usize, t: &Turn) -> TurnResult {
        let mut r = TurnResult::new(t.role, t.content.clone());
        r.tool_calls = t.tool_calls.clone();
        r.tool_call_id = t.tool_call_id.clone();
        r.reference_answer = t.reference_answer.clone();
        if t.role != Role::Assistant {
            return r;
        }
        let contexts = self.placed(t);
        if let Some(spans) = &t.relevant_spans {
            // Without a corpus the truth spans keep their offsets and have no text.
            let empty = Corpus::default();
            let corpus = self.corpus.as_deref().unwrap_or(&empty);
            let passages = spans.iter().map(|s| Passage::of_span(s, None, corpus));
            r.truth = Some(Truth::Spans(passages.collect()));
        }
        let retrieved = !t.contexts.is_empty();
        if retrieved {
            r.contexts = Some(
                contexts
                    .iter()
                    .map(|(c, why)| {
                        let mut p = Passage::of_retrieved(c);
                        if let Some(why) = why {
                            p.located = false;
                            p.not_found = Some(why.clone());
                        }
                        p
                    })
                    .collect(),
            );
        }
        let chunks: Vec<RetrievedChunk> = contexts.into_iter().map(|(c, _)| c).collect();
        // Retrieval: the placed contexts against the turn's truth, when it has both.
        let items = TokenLevel::items(&chunks);
        if let (Some(truth), false) = (&t.relevant_spans, items.is_empty()) {
            let id = format!("{}#{}", c.id, i + 1);
            let scored = [Scored {
                id: &id,
                truth,
                retrieved: &items,
            }];
            let card = scorecard(&scored, &self.retrieval, self.k, self.mode, None);
            if let Some(q) = card.per_query.into_iter().next() {
                r.metrics.0.extend(q.metrics.0);
            }
        }
        // Answer metrics: the turn's content against its reference answer.
        let content = t.content.trim();
        if let Some(reference) = &t.reference_answer {
            if !content.is_empty() {
                let references = std::slice::from_ref(reference);
                let input = AnswerInput::new(content, references);
                for m in &self.answer {
                    if let Some(v) = m.compute(&input) {
                        r.metrics.0.push((m.name().to_owned(), v));
                    }
                }
            }
        }
        // Judges: a turn that retrieved and answered.
        if retrieved && !content.is_empty() && !self.turn_judges.is_empty() {
            let question = question(&c.turns[..i]);
            let answer = RagAnswer {
                answer: t.content.clone(),
                contexts: chunks,
            };
            let id = format!("{}#{}", c.id, i + 1);
            let input = JudgeInput {
                query_id: &id,
                question: &question,
                answer: &answer,
                reference: t.reference_answer.as_deref(),
            };
            for j in &self.turn_judges {
                let judgement = judge_query(j.as_ref(), &input, &self.config).await;
                if let Some(score) = judgement.score() {
                    r.metrics.0.push((judgement.metric.clone(), score));
                }
                r.judges.push(judgement);
            }
        }
        r
    }

    /// A turn's contexts, those given as text placed in the corpus when there is one, each
    /// with why it is not placed when it is not.
    fn placed(&self, t: &Turn) -> Vec<(RetrievedChunk, Option<String>)> {
        let locator = self.corpus.as_deref().map(ContextLocator::new);
        let mut placement = Placement::default();
        t.contexts
            .iter()
            .enumerate()
            .map(|(i, chunk)| {
                let Some((_, text)) = t.text_contexts.iter().find(|(at, _)| *at == i) else {
                    return (chunk.clone(), None);
                };
                match (&locator, self.corpus.as_deref()) {
                    (Some(l), Some(corpus)) => {
                        let before = placement.unlocated;
                        let placed = l.place(text, &mut placement);
                        let why = (placement.unlocated > before)
                            .then(|| crate::answers::place::not_found(corpus, text));
                        (placed, why)
                    }
                    _ => (chunk.clone(), Some(NOT_SEARCHED.to_owned())),
                }
            })
            .collect()
    }
}

/// The question a turn's judges read: the user turns since the assistant last answered, after
/// the conversation before them when there is one.
fn question(before: &[Turn]) -> String {
    let start = before
        .iter()
        .rposition(|t| t.role == Role::Assistant && !t.content.trim().is_empty())
        .map_or(0, |at| at + 1);
    let asked: Vec<&str> = before[start..]
        .iter()
        .filter(|t| t.role == Role::User)
        .map(|t| t.content.trim())
        .collect();
    let asked = asked.join("\n");
    if start == 0 {
        asked
    } else {
        format!(
            "(the conversation so far)\n{}\n(the question now)\n{asked}",
            transcript(&before[..start]).trim_end()
        )
    }
}

/// Per figure name, in the order the turns first have them, the mean over the turns that have
/// it.
fn turn_means(turns: &[TurnResult]) -> Vec<(String, f64)> {
    let mut sums: Vec<(String, f64, usize)> = Vec::new();
    for (name, v) in turns.iter().flat_map(|t| &t.metrics.0) {
        match sums.iter_mut().find(|(n, _, _)| n == name) {
            Some((_, sum, n)) => {
                *sum += v;
                *n += 1;
            }
            None => sums.push((name.clone(), *v, 1)),
        }
    }
    sums.into_iter()
        .map(|(name, sum, n)| (name, sum / n as f64))
        .collect()
}

/// The result of a conversation run: `per_conversation` in order (each from
/// [`Scorer::score`]), level [`ResultLevel::Conversation`], and per figure the mean and
/// population standard deviation over the conversations that have it (each conversation
/// counts once, however many turns it has); a figure no conversation has gets no mean.
/// Figures are in report order: the agent figures,
/// then the others in the order the conversations first have them.
pub fn run_result(per_conversation: Vec<QueryResult>) -> RunResult {
    // A figure no conversation has gets no mean (never a 0): it is only counted missing.
    let names = names(&per_conversation)
        .into_iter()
        .filter(|n| per_conversation.iter().any(|q| q.metrics.get(n).is_some()))
        .collect();
    RunResult::from_queries(ResultLevel::Conversation, names, per_conversation)
}

/// Every figure name of `per_conversation` in report order: [`AGENT_METRICS`], then the
/// others in the order the conversations first have them.
fn names(per_conversation: &[QueryResult]) -> Vec<String> {
    let mut names: Vec<String> = AGENT_METRICS.iter().map(|n| (*n).to_owned()).collect();
    for q in per_conversation {
        for n in q.metrics.names() {
            if !names.iter().any(|m| m == n) {
                names.push(n.to_owned());
            }
        }
    }
    names
}

/// Per figure of a conversation run, in report order ([`AGENT_METRICS`] first, even those no
/// conversation has), how many of `per_conversation` have no figure for it; figures every
/// conversation has are left out.
pub fn missing(per_conversation: &[QueryResult]) -> Vec<(String, usize)> {
    names(per_conversation)
        .into_iter()
        .filter_map(|name| {
            let without = per_conversation
                .iter()
                .filter(|q| q.metrics.get(&name).is_none())
                .count();
            (without > 0).then_some((name, without))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Reader;
    use crate::corpus::Document;
    use crate::judge::{
        Criteria, CriteriaJudge, Faithfulness, GoalAccuracy, JudgeStatus, KnowledgeRetention,
        Scale, TopicAdherence, TopicMode,
    };
    use crate::llm::{ChatRequest, ChatResponse, LlmClient, TokenUsage};
    use std::sync::Mutex;

    /// A model that answers each request by a script reading the request's text, and keeps
    /// what it was asked.
    struct Scripted {
        script: fn(&str) -> String,
        asked: Mutex<Vec<String>>,
    }

    impl Scripted {
        fn new(script: fn(&str) -> String) -> Arc<Scripted> {
            Arc::new(Scripted {
                script,
                asked: Mutex::new(Vec::new()),
            })
        }

        fn asked(&self) -> Vec<String> {
            self.asked.lock().unwrap().clone()
        }
    }

    #[async_trait::async_trait]
    impl LlmClient for Scripted {
        fn name(&self) -> String {
            "scripted".into()
        }
        async fn complete(&self, request: &ChatRequest) -> crate::Result<ChatResponse> {
            let text = request.messages[0].content.clone();
            self.asked.lock().unwrap().push(text.clone());
            Ok(ChatResponse {
                content: (self.script)(&text),
                finish_reason: Some("stop".into()),
                usage: TokenUsage::default(),
                model: "scripted".into(),
                logprobs: None,
            })
        }
    }

    const CORPUS: &str = "Larkspur ships in May. Acme builds Larkspur.";

    /// Turn 2 retrieves a placed chunk (its truth), turn 4 answers from nothing, turn 6
    /// retrieves text the corpus holds at 23..44 (its truth).
    const CHAT: &str = concat!(
        r#"{"id":"c1","turns":["#,
        r#"{"role":"user","content":"When does Larkspur ship?"},"#,
        r#"{"role":"assistant","content":"In May.","contexts":[{"doc_id":"releases.md","start":0,"end":22,"text":"Larkspur ships in May."}],"relevant_spans":[{"doc_id":"releases.md","start":0,"end":22}],"reference_answer":"In May."},"#,
        r#"{"role":"user","content":"And 6 times 7?"},"#,
        r#"{"role":"assistant","content":"42.","reference_answer":"42"},"#,
        r#"{"role":"user","content":"Who makes it?"},"#,
        r#"{"role":"assistant","content":"Acme makes it, in Oslo.","contexts":["Acme builds Larkspur."],"relevant_spans":[{"doc_id":"releases.md","start":23,"end":44}]}"#,
        r#"],"reference_outcome":"The user learns the month and the maker."}"#,
        "\n",
        r#"{"id":"c2","turns":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello."}]}"#,
    );

    fn conversations() -> Vec<Conversation> {
        Reader::new(CHAT.as_bytes(), "chat.jsonl".into())
            .collect::<Result<Vec<_>>>()
            .unwrap()
    }

    fn faithfulness(text: &str) -> String {
        if text.contains("Acme makes it") {
            // One statement supported by context 1, one not: 1/2.
            r#"{"statements":[
              {"statement":"Acme makes it.","verdict":"supported","context":1,"evidence":"Acme builds Larkspur","reason":"said"},
              {"statement":"It is made in Oslo.","verdict":"not_supported","context":0,"evidence":"","reason":"not said"}]}"#
                .into()
        } else {
            r#"{"statements":[{"statement":"It ships in May.","verdict":"supported","context":1,"evidence":"ships in May","reason":"said"}]}"#.into()
        }
    }

    #[test]
    fn each_retrieving_turn_is_scored_and_the_conversation_takes_the_mean_of_the_turns_that_have_a_figure(
    ) {
        let llm = Scripted::new(faithfulness);
        let corpus = Corpus::new([Document::new("releases.md", CORPUS)]).unwrap();
        let scorer = Scorer::new(3)
            .with_corpus(Arc::new(corpus))
            .with_turn_judge(Arc::new(Faithfulness::new(Arc::clone(&llm))));
        let all = conversations();
        let per: Vec<QueryResult> = all
            .iter()
            .map(|c| pollster::block_on(scorer.score(c)).unwrap())
            .collect();
        let c1 = &per[0];
        assert_eq!(c1.turns.len(), 6);
        // Turn 2: its placed chunk is its truth; its answer matches its reference; the one
        // statement is supported.
        let t2 = &c1.turns[1].metrics;
        assert_eq!(t2.get("span_recall@3"), Some(1.0));
        assert_eq!(t2.get("exact_match"), Some(1.0));
        assert_eq!(t2.get("faithfulness"), Some(1.0));
        // Turn 4 retrieved nothing: no retrieval figure and no judge, only its answer's.
        let t4 = &c1.turns[3];
        assert_eq!(t4.metrics.get("span_recall@3"), None);
        assert_eq!(t4.metrics.get("faithfulness"), None);
        assert!(t4.judges.is_empty() && t4.contexts.is_none());
        assert_eq!(t4.metrics.get("exact_match"), Some(1.0));
        // Turn 6: its text context is placed at 23..44, all of its truth; no reference answer,
        // so no answer metric; one of two statements supported.
        let t6 = &c1.turns[5];
        let placed = &t6.contexts.as_ref().unwrap()[0];
        assert_eq!((placed.start, placed.end, placed.located), (23, 44, true));
        assert_eq!(t6.metrics.get("span_recall@3"), Some(1.0));
        assert_eq!(t6.metrics.get("exact_match"), None);
        assert_eq!(t6.metrics.get("faithfulness"), Some(0.5));
        let support = t6.judges[0].samples[0].details.reason().unwrap();
        assert!(support.contains("Oslo"), "{support}");
        // The conversation: means over the turns that have each figure.
        assert_eq!(c1.metrics.get("faithfulness"), Some(0.75));
        assert_eq!(c1.metrics.get("span_recall@3"), Some(1.0));
        assert_eq!(c1.metrics.get("exact_match"), Some(1.0));
        // Agent figures come first, then the turns' means.
        assert_eq!(c1.metrics.0[0].0, "tool_calls");
        // The last turn's judge saw the conversation before it and the question now.
        let asked = llm.asked();
        assert_eq!(asked.len(), 2, "two retrieving turns, one call each");
        assert!(
            asked[1].contains("[3] user: And 6 times 7?") && asked[1].contains("Who makes it?"),
            "{}",
            asked[1]
        );
        assert!(
            !asked[0].contains("the conversation so far"),
            "{}",
            asked[0]
        );

        // c2 retrieved nothing: it has no turn figure, and the run's mean is c1's alone.
        assert_eq!(per[1].metrics.get("faithfulness"), None);
        let missing = missing(&per);
        let run = run_result(per);
        assert_eq!(run.level, ResultLevel::Conversation);
        assert_eq!(run.queries, 2);
        assert_eq!(run.metrics.get("faithfulness"), Some(0.75));
        assert!(
            missing.contains(&("faithfulness".to_owned(), 1)),
            "{missing:?}"
        );
        assert!(missing.contains(&("tool_call_accuracy".to_owned(), 2)));
        let names: Vec<&str> = run.metrics.names().collect();
        assert_eq!(names[..2], ["tool_calls", "steps"]);
    }

    #[test]
    fn a_text_context_without_a_corpus_is_judged_but_not_span_scored() {
        let llm = Scripted::new(faithfulness);
        let scorer = Scorer::new(3).with_turn_judge(Arc::new(Faithfulness::new(llm)));
        let c = &conversations()[0];
        let r = pollster::block_on(scorer.score(c)).unwrap();
        let t6 = &r.turns[5];
        let p = &t6.contexts.as_ref().unwrap()[0];
        assert!(!p.located);
        assert_eq!(p.not_found.as_deref(), Some(NOT_SEARCHED));
        assert_eq!(t6.metrics.get("span_recall@3"), None);
        // The judge still reads the text; its quote is found in it, so the statement holds.
        assert_eq!(t6.metrics.get("faithfulness"), Some(0.5));
        // Turn 2's placed chunk is still scored.
        assert_eq!(r.turns[1].metrics.get("span_recall@3"), Some(1.0));
    }

    fn goal(text: &str) -> String {
        if text.contains("The user learns the month and the maker.") {
            r#"{"user_goal":"learn when Larkspur ships and who makes it","end_state":"told May and Acme","reason":"same","achieved":true}"#.into()
        } else if text.contains("Hello.") {
            r#"{"user_goal":"greet","end_state":"greeted","reason":"no goal reached","achieved":false}"#.into()
        } else {
            "not json".into()
        }
    }

    #[test]
    fn goal_accuracy_compares_with_the_reference_outcome_or_the_inferred_goal() {
        let llm = Scripted::new(goal);
        let scorer =
            Scorer::new(3).with_conversation_judge(Arc::new(GoalAccuracy::new(Arc::clone(&llm))));
        let per: Vec<QueryResult> = conversations()
            .iter()
            .map(|c| pollster::block_on(scorer.score(c)).unwrap())
            .collect();
        assert_eq!(per[0].metrics.get("goal_accuracy"), Some(1.0));
        assert_eq!(per[1].metrics.get("goal_accuracy"), Some(0.0));
        let asked = llm.asked();
        // With a reference outcome the judge compares with it; without one it is told to
        // infer the goal. Both read the whole transcript.
        assert!(asked[0].contains("Desired outcome: The user learns the month and the maker."));
        assert!(asked[0].contains("[6] assistant: Acme makes it, in Oslo."));
        assert!(
            asked[1].contains("Desired outcome: none given"),
            "{}",
            asked[1]
        );
        assert_eq!(per[0].judges[0].metric, "goal_accuracy");
        assert_eq!(run_result(per).metrics.get("goal_accuracy"), Some(0.5));
    }

    #[test]
    fn an_invalid_goal_answer_is_no_figure_and_a_conversation_without_the_assistant_is_not_asked() {
        let llm = Scripted::new(goal);
        let scorer =
            Scorer::new(3).with_conversation_judge(Arc::new(GoalAccuracy::new(Arc::clone(&llm))));
        let text = r#"{"id":"c3","turns":[{"role":"user","content":"Book a table."},{"role":"assistant","content":"Done."}]}
{"id":"c4","turns":[{"role":"user","content":"Anyone there?"}]}"#;
        let all: Vec<Conversation> = Reader::new(text.as_bytes(), "c.jsonl".into())
            .collect::<Result<Vec<_>>>()
            .unwrap();
        let r = pollster::block_on(scorer.score(&all[0])).unwrap();
        let sample = &r.judges[0].samples[0];
        // Not JSON, repaired twice, still not JSON: invalid after three calls, and no figure
        // (never a 0).
        assert_eq!(sample.status, JudgeStatus::Invalid);
        assert_eq!(sample.usage.calls, 3);
        assert_eq!(r.metrics.get("goal_accuracy"), None);
        let before = llm.asked().len();
        let r = pollster::block_on(scorer.score(&all[1])).unwrap();
        assert_eq!(r.judges[0].samples[0].status, JudgeStatus::Undetermined);
        assert_eq!(llm.asked().len(), before, "no call");
        assert_eq!(r.metrics.get("goal_accuracy"), None);
    }

    #[test]
    fn a_criteria_judge_of_the_conversation_judges_its_transcript() {
        let llm = Scripted::new(|text| {
            // Pass only when the judged answer is the whole transcript, tool calls included.
            if text.contains("Answer: [1] user: When does Larkspur ship?\n[2] assistant: In May.")
                && text.contains("[6] assistant: Acme makes it, in Oslo.")
            {
                r#"{"reason":"stays polite","verdict":"pass"}"#.into()
            } else {
                r#"{"reason":"not the transcript","verdict":"fail"}"#.into()
            }
        });
        let criteria =
            Criteria::new("polite", "Every answer is courteous.", Scale::PassFail).unwrap();
        let judge = CriteriaJudge::new(Arc::clone(&llm), criteria).with_logprobs(false);
        let scorer = Scorer::new(3).with_conversation_judge(Arc::new(judge));
        let r = pollster::block_on(scorer.score(&conversations()[0])).unwrap();
        assert_eq!(r.metrics.get("polite"), Some(1.0), "{:?}", llm.asked());
        assert!(llm.asked()[0].contains("Question: When does Larkspur ship?"));
        assert_eq!(r.judges[0].metric, "polite");
    }

    #[test]
    fn the_transcript_names_each_speaker_and_each_tool_call() {
        let text = r#"{"id":"t","turns":[{"role":"user","content":"6*7?"},{"role":"assistant","tool_calls":[{"id":"a","name":"calculator","args":{"expr":"6*7"}}]},{"role":"tool","tool_call_id":"a","content":"42"},{"role":"assistant","content":"42."}]}"#;
        let c = Reader::new(text.as_bytes(), "t.jsonl".into())
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(
            transcript(&c.turns),
            "[1] user: 6*7?\n[2] assistant calls calculator {\"expr\":\"6*7\"}\n[3] tool (a): 42\n[4] assistant: 42.\n"
        );
    }

    #[test]
    fn topic_adherence_reads_the_reference_topics_and_without_them_asks_nothing() {
        let llm = Scripted::new(|text| {
            assert!(
                text.contains("Reference topics:\nreleases\npricing"),
                "{text}"
            );
            // Releases answered (on topic), the weather answered (off), pricing refused (on):
            // precision 1/2, recall 1/2, F1 1/2.
            r#"{"topics":[
              {"topic":"release date","answered":true,"on_reference_topic":true,"reason":"r"},
              {"topic":"weather","answered":true,"on_reference_topic":false,"reason":"r"},
              {"topic":"price","answered":false,"on_reference_topic":true,"reason":"r"}]}"#
                .into()
        });
        let mut scorer = Scorer::new(3);
        for mode in TopicMode::ALL {
            scorer = scorer
                .with_conversation_judge(Arc::new(TopicAdherence::new(Arc::clone(&llm), mode)));
        }
        let text = concat!(
            r#"{"id":"t1","turns":[{"role":"user","content":"When, and the weather, and the price?"},{"role":"assistant","content":"May; sunny; I cannot say."}],"reference_topics":["releases","pricing"]}"#,
            "\n",
            r#"{"id":"t2","turns":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello."}]}"#,
        );
        let all: Vec<Conversation> = Reader::new(text.as_bytes(), "t.jsonl".into())
            .collect::<Result<Vec<_>>>()
            .unwrap();
        let r = pollster::block_on(scorer.score(&all[0])).unwrap();
        for name in [
            "topic_adherence_precision",
            "topic_adherence_recall",
            "topic_adherence_f1",
        ] {
            assert_eq!(r.metrics.get(name), Some(0.5), "{name}");
        }
        // One request, asked by each of the three (a cache would answer the second and third).
        let asked = llm.asked();
        assert_eq!(asked.len(), 3);
        assert!(asked.iter().all(|a| a == &asked[0]));
        let r = pollster::block_on(scorer.score(&all[1])).unwrap();
        assert_eq!(llm.asked().len(), 3, "no reference topics: no call");
        assert!(r
            .judges
            .iter()
            .all(|j| j.samples[0].status == JudgeStatus::Undetermined));
        assert_eq!(r.metrics.get("topic_adherence_f1"), None);
    }

    #[test]
    fn knowledge_retention_is_the_share_of_turns_after_a_fact_that_keep_it() {
        let llm = Scripted::new(|text| {
            if text.contains("What is my name?") {
                assert!(text.contains("numbered 2, 4"), "{text}");
                r#"{"facts":[{"turn":1,"fact":"the name is Ada"}],"verdicts":[
                  {"turn":2,"forgets":false,"reason":"uses the name"},
                  {"turn":4,"forgets":true,"reason":"says it does not know the name"}]}"#
                    .into()
            } else if text.contains("Hi there") {
                r#"{"facts":[],"verdicts":[]}"#.into()
            } else {
                // A verdict on a user turn, every time: invalid.
                r#"{"facts":[{"turn":1,"fact":"x"}],"verdicts":[{"turn":3,"forgets":false,"reason":"r"}]}"#
                    .into()
            }
        });
        let scorer = Scorer::new(3)
            .with_conversation_judge(Arc::new(KnowledgeRetention::new(Arc::clone(&llm))));
        let text = concat!(
            r#"{"id":"k1","turns":[{"role":"user","content":"My name is Ada."},{"role":"assistant","content":"Hi Ada."},{"role":"user","content":"What is my name?"},{"role":"assistant","content":"I do not know your name."}]}"#,
            "\n",
            r#"{"id":"k2","turns":[{"role":"user","content":"Hi there"},{"role":"assistant","content":"Hello."}]}"#,
            "\n",
            r#"{"id":"k3","turns":[{"role":"user","content":"I live in Oslo."},{"role":"assistant","content":"Noted."},{"role":"user","content":"Weather?"},{"role":"assistant","content":"Sunny in Oslo."}]}"#,
            "\n",
            r#"{"id":"k4","turns":[{"role":"user","content":"Anyone?"}]}"#,
        );
        let all: Vec<Conversation> = Reader::new(text.as_bytes(), "k.jsonl".into())
            .collect::<Result<Vec<_>>>()
            .unwrap();
        let score = |c: &Conversation| pollster::block_on(scorer.score(c)).unwrap();
        // One of the two turns after the fact keeps it.
        assert_eq!(score(&all[0]).metrics.get("knowledge_retention"), Some(0.5));
        // No fact: nothing to judge, no figure (deepeval scores 0).
        let k2 = score(&all[1]);
        assert_eq!(k2.metrics.get("knowledge_retention"), None);
        assert_eq!(k2.judges[0].samples[0].status, JudgeStatus::Undetermined);
        // A verdict on a turn that is not the assistant's, repaired twice: invalid, no figure.
        let k3 = score(&all[2]);
        let sample = &k3.judges[0].samples[0];
        assert_eq!(sample.status, JudgeStatus::Invalid);
        assert!(
            sample
                .message
                .as_deref()
                .unwrap()
                .contains("turn 3 is not an assistant turn"),
            "{sample:?}"
        );
        assert_eq!(k3.metrics.get("knowledge_retention"), None);
        // No assistant turn after a user turn: no call.
        let before = llm.asked().len();
        let k4 = score(&all[3]);
        assert_eq!(llm.asked().len(), before);
        assert_eq!(k4.judges[0].samples[0].status, JudgeStatus::Undetermined);
    }
}
