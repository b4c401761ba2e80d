//! Judges of a whole conversation: goal accuracy, topic adherence and knowledge retention.
//!
//! A conversation judge reads a [`JudgeInput`](super::JudgeInput) whose answer is the
//! conversation's transcript as [`conversation::score::transcript`] renders it (the judged
//! text, with no contexts), whose `question` is the user's first message, and whose
//! `reference` is the conversation's reference outcome.
//! [`Scorer`](crate::conversation::score::Scorer) builds that input; a criteria judge given
//! it judges the transcript.
//!
//! [`conversation::score::transcript`]: crate::conversation::score::transcript

use super::driver::{LlmJudge, Rubric, Sample, Sealed};
use super::{Judge, JudgeConfig, JudgeInput};
use crate::llm::{LlmClient, PromptTemplate};
use crate::metrics::{JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage};
use serde::Deserialize;
use serde_json::json;

/// Placeholders the goal accuracy prompt may use.
pub const GOAL_ACCURACY_PLACEHOLDERS: &[&str] = &["transcript", "reference"];

/// What the prompt says in place of a reference outcome when the conversation has none: the
/// judge then compares the end state with the user goal it inferred.
const NO_REFERENCE: &str =
    "none given: the desired outcome is the user goal you infer from the conversation";

/// The longest free text a conversation judge's answer may hold in one field, in characters
/// (the schemas' `maxLength`).
const MAX_TEXT: usize = 300;

/// `goal_accuracy`: did the conversation reach what the user wanted. ragas'
/// `AgentGoalAccuracyWithReference` and `AgentGoalAccuracyWithoutReference`
/// (`ragas/metrics/_goal_accuracy.py`, ragas 0.4.3): the judge infers the user goal and the
/// end state from the transcript, and compares the end state with the reference outcome when
/// the conversation has one, else with the goal it inferred; 1 when they agree, 0 when not.
/// ragas asks in two calls (infer, then compare); this judge asks both in one. A conversation
/// with no turn of the assistant is `undetermined`, with no call (ragas would still ask).
pub type GoalAccuracy<C> = LlmJudge<C, GoalAccuracyRubric>;

impl<C: LlmClient> GoalAccuracy<C> {
    /// The judge with the built-in prompt.
    pub fn new(llm: C) -> Self {
        LlmJudge::asking(llm, GoalAccuracyRubric)
    }
}

/// What [`GoalAccuracy`] asks.
pub struct GoalAccuracyRubric;

#[derive(Deserialize)]
struct Reply {
    user_goal: String,
    end_state: String,
    #[serde(default)]
    reason: String,
    achieved: bool,
}

impl Sealed for GoalAccuracyRubric {}

#[async_trait::async_trait]
impl Rubric for GoalAccuracyRubric {
    const NAME: &'static str = "goal_accuracy";
    const PLACEHOLDERS: &'static [&'static str] = GOAL_ACCURACY_PLACEHOLDERS;
    const PROMPT: &'static str = include_str!("prompts/goal_accuracy.md");

    async fn sample(&self, s: Sample<'_>) -> JudgeSample {
        let transcript = s.input.answer.answer.trim();
        if assistant_turns(transcript).is_empty() {
            let why = "the conversation has no turn of the assistant";
            return s.unscored(JudgeStatus::Undetermined, why, JudgeUsage::default());
        }
        let reference = if s.reference.is_empty() {
            NO_REFERENCE
        } else {
            s.reference
        };
        let values = [("transcript", transcript), ("reference", reference)];
        let schema = json!({
            "type": "object",
            // Bounded strings: a server that enforces the schema (llama-server) ends each one
            // instead of letting a small model run to the token limit inside it.
            "properties": {
                "user_goal": {"type": "string", "maxLength": MAX_TEXT},
                "end_state": {"type": "string", "maxLength": MAX_TEXT},
                "reason": {"type": "string", "maxLength": MAX_TEXT},
                "achieved": {"type": "boolean"}
            },
            "required": ["user_goal", "end_state", "reason", "achieved"],
            "additionalProperties": false
        });
        let check = |r: Reply| {
            if r.end_state.trim().is_empty() {
                Err("the end state is empty".to_owned())
            } else {
                Ok(r)
            }
        };
        match s.ask(&values, schema, check).await {
            Ok((r, usage)) => {
                let verdict = if r.achieved {
                    "achieved"
                } else {
                    "not_achieved"
                };
                let details = JudgeDetails::Criteria {
                    verdict: verdict.to_owned(),
                    reason: format!(
                        "goal: {}; end state: {}; {}",
                        r.user_goal.trim(),
                        r.end_state.trim(),
                        r.reason.trim()
                    ),
                    probabilities: None,
                    scale: Some(vec![
                        ("not_achieved".to_owned(), 0.0),
                        ("achieved".to_owned(), 1.0),
                    ]),
                };
                s.scored(if r.achieved { 1.0 } else { 0.0 }, details, usage)
            }
            Err(failed) => failed,
        }
    }
}

/// The numbers of the assistant's turns in a transcript as
/// [`transcript`](crate::conversation::score::transcript) renders it (`[2] assistant: …`).
fn assistant_turns(transcript: &str) -> Vec<usize> {
    let mut turns: Vec<usize> = transcript
        .lines()
        .filter_map(|l| {
            let (n, rest) = l.strip_prefix('[')?.split_once("] ")?;
            rest.starts_with("assistant").then(|| n.parse().ok())?
        })
        .collect();
    turns.dedup();
    turns
}

/// Placeholders the topic adherence prompt may use.
pub const TOPIC_ADHERENCE_PLACEHOLDERS: &[&str] = &["transcript", "reference", "max_topics"];

/// The most topics the judge may list: the schema says so (`maxItems`).
const MAX_TOPICS: usize = 16;

/// Which figure a [`TopicAdherence`] judge reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicMode {
    /// `topic_adherence_precision`: of the topics the assistant answered, the share on a
    /// reference topic.
    Precision,
    /// `topic_adherence_recall`: of the topics on a reference topic, the share the assistant
    /// answered.
    Recall,
    /// `topic_adherence_f1`: their harmonic mean.
    F1,
}

impl TopicMode {
    /// The three, in report order.
    pub const ALL: [TopicMode; 3] = [TopicMode::Precision, TopicMode::Recall, TopicMode::F1];

    /// The metric's name.
    pub fn name(self) -> &'static str {
        match self {
            TopicMode::Precision => "topic_adherence_precision",
            TopicMode::Recall => "topic_adherence_recall",
            TopicMode::F1 => "topic_adherence_f1",
        }
    }
}

/// Topic adherence: does the assistant keep to the conversation's reference topics. ragas'
/// `TopicAdherenceScore` (ragas 0.4.3, `ragas/metrics/_topic_adherence.py`): the topics of
/// the conversation are listed, each marked answered or refused and on or off the reference
/// topics; with TP the answered topics on a reference topic, FP the answered ones off them and
/// FN the refused ones on them, precision is TP / (TP + FP), recall TP / (TP + FN) and F1 their
/// harmonic mean. ragas asks in 2 + one call per topic; this judge asks for the list with both
/// marks in one call, and the three figures share it (same request: a cache answers the second
/// and third). The judge's input `reference` is the reference topics, one a line
/// ([`Scorer`](crate::conversation::score::Scorer) gives it so).
///
/// **Empty cases.** No reference topics: `undetermined`, no call (ragas requires them). A
/// figure whose denominator is 0 (precision with no topic answered, recall with none on a
/// reference topic) is `undetermined`, and F1 with it; ragas adds `1e-10` to each denominator
/// and scores 0. F1 of a precision and recall both 0 is 0.
pub struct TopicAdherence<C> {
    llm: C,
    prompt: PromptTemplate,
    mode: TopicMode,
}

impl<C: LlmClient> TopicAdherence<C> {
    /// The judge of `mode`'s figure with the built-in prompt.
    pub fn new(llm: C, mode: TopicMode) -> Self {
        TopicAdherence {
            llm,
            prompt: Self::builtin_prompt(),
            mode,
        }
    }

    /// The prompt shipped with the library (`src/judge/prompts/topic_adherence.md`).
    pub fn builtin_prompt() -> PromptTemplate {
        PromptTemplate::builtin(
            include_str!("prompts/topic_adherence.md"),
            "topic_adherence.md",
            TOPIC_ADHERENCE_PLACEHOLDERS,
        )
    }

    /// Uses `prompt` instead; it may use [`TOPIC_ADHERENCE_PLACEHOLDERS`].
    pub fn with_prompt(mut self, prompt: PromptTemplate) -> Self {
        self.prompt = prompt;
        self
    }
}

#[derive(Deserialize)]
struct TopicsReply {
    topics: Vec<RawTopic>,
}

#[derive(Deserialize)]
struct RawTopic {
    topic: String,
    answered: bool,
    on_reference_topic: bool,
    #[serde(default)]
    reason: String,
}

/// (true positives, false positives, false negatives) of the judge's topics.
fn counts(topics: &[RawTopic]) -> (usize, usize, usize) {
    let n = |f: fn(&RawTopic) -> bool| topics.iter().filter(|t| f(t)).count();
    (
        n(|t| t.answered && t.on_reference_topic),
        n(|t| t.answered && !t.on_reference_topic),
        n(|t| !t.answered && t.on_reference_topic),
    )
}

/// The figure of `mode` from the counts, `None` where its denominator is 0.
fn topic_figure(mode: TopicMode, (tp, fp, fn_): (usize, usize, usize)) -> Option<f64> {
    let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    let precision = ratio(tp, tp + fp);
    let recall = ratio(tp, tp + fn_);
    match mode {
        TopicMode::Precision => precision,
        TopicMode::Recall => recall,
        TopicMode::F1 => match (precision?, recall?) {
            (p, r) if p + r == 0.0 => Some(0.0),
            (p, r) => Some(2.0 * p * r / (p + r)),
        },
    }
}

#[async_trait::async_trait]
impl<C: LlmClient> Judge for TopicAdherence<C> {
    fn name(&self) -> &str {
        self.mode.name()
    }

    fn prompt_version(&self) -> String {
        format!("topic_adherence/{}", self.prompt.version)
    }

    async fn judge(
        &self,
        input: &JudgeInput<'_>,
        sample: u32,
        config: &JudgeConfig,
    ) -> JudgeSample {
        let s = Sample::new(
            input,
            sample,
            config,
            "topic_adherence",
            self.prompt_version(),
            &self.llm,
            &self.prompt,
        );
        if s.reference.is_empty() {
            let why = "the conversation has no reference topics";
            return s.unscored(JudgeStatus::Undetermined, why, JudgeUsage::default());
        }
        let most = MAX_TOPICS.to_string();
        let values = [
            ("transcript", input.answer.answer.trim()),
            ("reference", s.reference),
            ("max_topics", most.as_str()),
        ];
        let schema = json!({
            "type": "object",
            "properties": {
                "topics": {
                    "type": "array",
                    "maxItems": MAX_TOPICS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "topic": {"type": "string", "maxLength": MAX_TEXT},
                            "answered": {"type": "boolean"},
                            "on_reference_topic": {"type": "boolean"},
                            "reason": {"type": "string", "maxLength": MAX_TEXT}
                        },
                        "required": ["topic", "answered", "on_reference_topic", "reason"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["topics"],
            "additionalProperties": false
        });
        let check = |r: TopicsReply| {
            if r.topics.len() > MAX_TOPICS {
                return Err(format!(
                    "{} topics, more than the {MAX_TOPICS} allowed",
                    r.topics.len()
                ));
            }
            match r.topics.iter().position(|t| t.topic.trim().is_empty()) {
                Some(i) => Err(format!("topic {}: the topic is empty", i + 1)),
                None => Ok(r.topics),
            }
        };
        let (topics, usage) = match s.ask(&values, schema, check).await {
            Ok(v) => v,
            Err(failed) => return failed,
        };
        let c = counts(&topics);
        let listed: Vec<String> = topics
            .iter()
            .map(|t| {
                format!(
                    "{} ({}, {}): {}",
                    t.topic.trim(),
                    if t.answered { "answered" } else { "refused" },
                    if t.on_reference_topic {
                        "on a reference topic"
                    } else {
                        "off the reference topics"
                    },
                    t.reason.trim()
                )
            })
            .collect();
        let verdict = format!(
            "{} on topic, {} off topic, {} refused on topic",
            c.0, c.1, c.2
        );
        let Some(score) = topic_figure(self.mode, c) else {
            let why = format!("{verdict}: {} has nothing to count", self.mode.name());
            return s.unscored(JudgeStatus::Undetermined, why, usage);
        };
        let details = JudgeDetails::Criteria {
            verdict,
            reason: listed.join("; "),
            probabilities: None,
            scale: None,
        };
        s.scored(score, details, usage)
    }
}

/// Placeholders the knowledge retention prompt may use.
pub const KNOWLEDGE_RETENTION_PLACEHOLDERS: &[&str] = &["transcript", "assistant_turns"];

/// The most facts the judge may list: the schema says so (`maxItems`).
const MAX_FACTS: usize = 32;

/// `knowledge_retention`: does the assistant keep what the user told it. deepeval's
/// `KnowledgeRetentionMetric` (`deepeval/metrics/knowledge_retention/knowledge_retention.py`):
/// the facts each user turn gives are extracted, each assistant turn that comes after at least
/// one fact gets a verdict (does it forget one: ask again, contradict, ignore), and the score
/// is the share of those turns that keep them. deepeval asks one call per user turn and one
/// per assistant turn; this judge asks for the facts and the verdicts in one, on the numbered
/// transcript, and checks that each verdict names an assistant turn after the first fact, at
/// most once.
///
/// **Empty case.** No fact given, or no assistant turn after one: nothing to judge,
/// `undetermined` (no figure). deepeval scores 0 when it has no verdict.
pub type KnowledgeRetention<C> = LlmJudge<C, KnowledgeRetentionRubric>;

impl<C: LlmClient> KnowledgeRetention<C> {
    /// The judge with the built-in prompt.
    pub fn new(llm: C) -> Self {
        LlmJudge::asking(llm, KnowledgeRetentionRubric)
    }
}

/// What [`KnowledgeRetention`] asks.
pub struct KnowledgeRetentionRubric;

#[derive(Deserialize)]
struct RetentionReply {
    facts: Vec<Fact>,
    verdicts: Vec<Retention>,
}

#[derive(Deserialize)]
struct Fact {
    turn: i64,
    fact: String,
}

#[derive(Deserialize)]
struct Retention {
    turn: i64,
    forgets: bool,
    #[serde(default)]
    reason: String,
}

/// Checks the judge's facts and verdicts against the transcript's `assistant` turns: a fact
/// names a turn of the conversation (1 to `turns`), a verdict an assistant turn after the
/// first fact, each at most once.
fn check_retention(
    r: RetentionReply,
    assistant: &[usize],
    turns: usize,
) -> Result<RetentionReply, String> {
    if r.facts.len() > MAX_FACTS {
        return Err(format!(
            "{} facts, more than the {MAX_FACTS} allowed",
            r.facts.len()
        ));
    }
    for (i, f) in r.facts.iter().enumerate() {
        if f.fact.trim().is_empty() {
            return Err(format!("fact {}: the fact is empty", i + 1));
        }
        if f.turn < 1 || f.turn as u64 > turns as u64 {
            return Err(format!(
                "fact {}: turn {} does not exist (the turns are numbered 1 to {turns})",
                i + 1,
                f.turn
            ));
        }
    }
    let first = r.facts.iter().map(|f| f.turn).min();
    let mut seen = Vec::new();
    for (i, v) in r.verdicts.iter().enumerate() {
        let at = |m: String| format!("verdict {}: {m}", i + 1);
        let n = usize::try_from(v.turn).unwrap_or(0);
        if !assistant.contains(&n) {
            return Err(at(format!("turn {} is not an assistant turn", v.turn)));
        }
        match first {
            Some(first) if v.turn > first => {}
            _ => {
                return Err(at(format!(
                    "turn {} comes before any fact the user gave",
                    v.turn
                )))
            }
        }
        if seen.contains(&n) {
            return Err(at(format!("turn {} has a verdict already", v.turn)));
        }
        seen.push(n);
    }
    Ok(r)
}

impl Sealed for KnowledgeRetentionRubric {}

#[async_trait::async_trait]
impl Rubric for KnowledgeRetentionRubric {
    const NAME: &'static str = "knowledge_retention";
    const PLACEHOLDERS: &'static [&'static str] = KNOWLEDGE_RETENTION_PLACEHOLDERS;
    const PROMPT: &'static str = include_str!("prompts/knowledge_retention.md");

    async fn sample(&self, s: Sample<'_>) -> JudgeSample {
        let transcript = s.input.answer.answer.trim();
        let assistant = assistant_turns(transcript);
        // Only an assistant turn after a user turn can forget what the user said.
        let judged: Vec<usize> = assistant.iter().copied().filter(|n| *n > 1).collect();
        if judged.is_empty() {
            let why = "no assistant turn follows a user turn: nothing to retain";
            return s.unscored(JudgeStatus::Undetermined, why, JudgeUsage::default());
        }
        let turns = transcript
            .lines()
            .filter_map(|l| {
                l.strip_prefix('[')?
                    .split_once(']')?
                    .0
                    .parse::<usize>()
                    .ok()
            })
            .max()
            .unwrap_or(0);
        let listed: Vec<String> = judged.iter().map(usize::to_string).collect();
        let listed = listed.join(", ");
        let values = [
            ("transcript", transcript),
            ("assistant_turns", listed.as_str()),
        ];
        let schema = json!({
            "type": "object",
            "properties": {
                "facts": {
                    "type": "array",
                    "maxItems": MAX_FACTS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "turn": {"type": "integer"},
                            "fact": {"type": "string", "maxLength": MAX_TEXT}
                        },
                        "required": ["turn", "fact"],
                        "additionalProperties": false
                    }
                },
                "verdicts": {
                    "type": "array",
                    "maxItems": judged.len(),
                    "items": {
                        "type": "object",
                        "properties": {
                            "turn": {"type": "integer"},
                            "forgets": {"type": "boolean"},
                            "reason": {"type": "string", "maxLength": MAX_TEXT}
                        },
                        "required": ["turn", "forgets", "reason"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["facts", "verdicts"],
            "additionalProperties": false
        });
        let check = |r: RetentionReply| check_retention(r, &judged, turns);
        let (r, usage) = match s.ask(&values, schema, check).await {
            Ok(v) => v,
            Err(failed) => return failed,
        };
        if r.verdicts.is_empty() {
            let why = if r.facts.is_empty() {
                "the user gave no fact to retain"
            } else {
                "no assistant turn comes after a fact"
            };
            return s.unscored(JudgeStatus::Undetermined, why, usage);
        }
        let kept = r.verdicts.iter().filter(|v| !v.forgets).count();
        let facts: Vec<String> = r
            .facts
            .iter()
            .map(|f| format!("[{}] {}", f.turn, f.fact.trim()))
            .collect();
        let verdicts: Vec<String> = r
            .verdicts
            .iter()
            .map(|v| {
                let said = if v.forgets { "forgets" } else { "keeps" };
                format!("[{}] {said}: {}", v.turn, v.reason.trim())
            })
            .collect();
        let details = JudgeDetails::Criteria {
            verdict: format!(
                "{kept} of {} turns keep what the user said",
                r.verdicts.len()
            ),
            reason: format!("facts: {}; {}", facts.join(", "), verdicts.join("; ")),
            probabilities: None,
            scale: None,
        };
        s.scored(kept as f64 / r.verdicts.len() as f64, details, usage)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(answered: bool, on: bool) -> RawTopic {
        RawTopic {
            topic: "t".into(),
            answered,
            on_reference_topic: on,
            reason: String::new(),
        }
    }

    #[test]
    fn topic_figures_are_ragas_with_an_empty_denominator_undetermined() {
        // Two answered on topic, one answered off topic, one refused on topic, one refused
        // off topic (which counts nowhere): P 2/3, R 2/3, F1 2/3.
        let topics = [
            topic(true, true),
            topic(true, true),
            topic(true, false),
            topic(false, true),
            topic(false, false),
        ];
        let c = counts(&topics);
        assert_eq!(c, (2, 1, 1));
        let p = topic_figure(TopicMode::Precision, c).unwrap();
        assert!((p - 2.0 / 3.0).abs() < 1e-12);
        let f1 = topic_figure(TopicMode::F1, c).unwrap();
        assert!((f1 - 2.0 / 3.0).abs() < 1e-12);
        // Only refusals on topic: nothing answered, so no precision (ragas: 0), recall 0.
        let c = counts(&[topic(false, true)]);
        assert_eq!(topic_figure(TopicMode::Precision, c), None);
        assert_eq!(topic_figure(TopicMode::Recall, c), Some(0.0));
        assert_eq!(topic_figure(TopicMode::F1, c), None);
        // Everything answered off topic: precision 0, no recall.
        let c = counts(&[topic(true, false)]);
        assert_eq!(topic_figure(TopicMode::Precision, c), Some(0.0));
        assert_eq!(topic_figure(TopicMode::Recall, c), None);
        // Answered off topic and refused on topic: P 0 and R 0, F1 0.
        let c = counts(&[topic(true, false), topic(false, true)]);
        assert_eq!(topic_figure(TopicMode::F1, c), Some(0.0));
    }

    #[test]
    fn a_retention_verdict_must_name_an_assistant_turn_after_a_fact_once() {
        let reply = |facts: &[(i64, &str)], verdicts: &[i64]| RetentionReply {
            facts: facts
                .iter()
                .map(|(turn, fact)| Fact {
                    turn: *turn,
                    fact: (*fact).into(),
                })
                .collect(),
            verdicts: verdicts
                .iter()
                .map(|turn| Retention {
                    turn: *turn,
                    forgets: false,
                    reason: String::new(),
                })
                .collect(),
        };
        let assistant = [2, 4];
        assert!(check_retention(reply(&[(1, "name Ada")], &[2, 4]), &assistant, 4).is_ok());
        let e = |r| check_retention(r, &assistant, 4).err().unwrap();
        assert!(e(reply(&[(1, "x")], &[3])).contains("turn 3 is not an assistant turn"));
        assert!(e(reply(&[(3, "x")], &[2])).contains("comes before any fact"));
        assert!(e(reply(&[(1, "x")], &[2, 2])).contains("has a verdict already"));
        assert!(e(reply(&[(9, "x")], &[])).contains("turn 9 does not exist"));
        assert_eq!(
            assistant_turns(
                "[1] user: a\n[2] assistant calls f {}\n[3] tool: b\n[4] assistant: c\n"
            ),
            [2, 4]
        );
    }
}
