//! Criteria judges: a team's own rule ("cites its sources", "refuses out-of-scope questions")
//! judged by the model on a scale the team picks, through the same driver as the built-in
//! judges.

use super::driver::Sample;
use super::{Judge, JudgeConfig, JudgeInput};
use crate::error::{Error, Result};
use crate::generator::numbered_contexts;
use crate::llm::{LlmClient, PromptTemplate, TokenLogprob};
use crate::metrics::{JudgeDetails, JudgeSample, JudgeStatus, JudgeUsage};
use camino::Utf8Path;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Placeholders the criteria prompt may use.
pub const CRITERIA_PLACEHOLDERS: &[&str] = &["name", "criteria", "steps", "scale", "inputs"];

/// Alternatives asked for at each answer token when log-probabilities are on.
const TOP_LOGPROBS: u8 = 10;

/// What a criteria judge is shown of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CriteriaInput {
    /// The question.
    Question,
    /// The answer.
    Answer,
    /// The retrieved chunks the answer was written from, numbered.
    Contexts,
    /// The reference answer; a query without one is `undetermined`, with no call.
    Reference,
}

impl CriteriaInput {
    const ALL: [CriteriaInput; 4] = [
        CriteriaInput::Question,
        CriteriaInput::Answer,
        CriteriaInput::Contexts,
        CriteriaInput::Reference,
    ];

    /// `question`, `answer`, `contexts` or `reference`.
    pub fn as_str(self) -> &'static str {
        match self {
            CriteriaInput::Question => "question",
            CriteriaInput::Answer => "answer",
            CriteriaInput::Contexts => "contexts",
            CriteriaInput::Reference => "reference",
        }
    }
}

/// The verdicts a criteria judge may give and the score of each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// `pass` (1) or `fail` (0).
    PassFail,
    /// An integer from `low` to `high`, mapped linearly onto [0, 1]: `low` is 0, `high` is 1,
    /// `v` is `(v − low) / (high − low)` (on 1–5: 1 → 0, 2 → 0.25, 3 → 0.5, 4 → 0.75, 5 → 1).
    Range {
        /// The lowest verdict.
        low: i64,
        /// The highest verdict.
        high: i64,
    },
    /// Named categories, each with its score in [0, 1].
    Categories(Vec<(String, f64)>),
}

impl Scale {
    /// Every verdict as the judge writes it, with its score.
    pub fn options(&self) -> Vec<(String, f64)> {
        match self {
            Scale::PassFail => vec![("pass".into(), 1.0), ("fail".into(), 0.0)],
            Scale::Range { low, high } => (*low..=*high)
                .map(|v| (v.to_string(), (v - low) as f64 / (high - low) as f64))
                .collect(),
            Scale::Categories(c) => c.clone(),
        }
    }

    fn check(&self) -> std::result::Result<(), String> {
        match self {
            Scale::PassFail => Ok(()),
            Scale::Range { low, high } if low < high && high - low <= 100 => Ok(()),
            Scale::Range { low, high } => Err(format!(
                "the range {low}-{high} must go up, by at most 100 steps"
            )),
            Scale::Categories(c) => {
                if c.len() < 2 {
                    return Err("a scale of categories needs at least two".into());
                }
                for (i, (label, value)) in c.iter().enumerate() {
                    if label.is_empty() || label.chars().any(|ch| ch == '"' || ch.is_whitespace()) {
                        return Err(format!(
                            "category `{label}`: a label is one word without quotes"
                        ));
                    }
                    if !(0.0..=1.0).contains(value) {
                        return Err(format!(
                            "category `{label}`: its value {value} is not in [0, 1]"
                        ));
                    }
                    if c[..i].iter().any(|(l, _)| l == label) {
                        return Err(format!("category `{label}` is listed twice"));
                    }
                }
                Ok(())
            }
        }
    }

    /// The header's `scale:` value: `pass/fail`, `1-5`, or `label = value, …`.
    fn parse(text: &str) -> std::result::Result<Self, String> {
        let text = text.trim();
        if text == "pass/fail" {
            return Ok(Scale::PassFail);
        }
        if text.contains('=') {
            let categories = text
                .split(',')
                .map(|pair| {
                    let (label, value) = pair
                        .split_once('=')
                        .ok_or_else(|| format!("`{}` is not `label = value`", pair.trim()))?;
                    let value: f64 = value.trim().parse().map_err(|_| {
                        format!(
                            "category `{}`: `{}` is not a number",
                            label.trim(),
                            value.trim()
                        )
                    })?;
                    Ok((label.trim().to_owned(), value))
                })
                .collect::<std::result::Result<Vec<_>, String>>()?;
            return Ok(Scale::Categories(categories));
        }
        let range = text
            .split_once('-')
            .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)));
        match range {
            Some((low, high)) => Ok(Scale::Range { low, high }),
            None => Err(format!(
                "unknown scale `{text}` (pass/fail, an integer range such as 1-5, or categories \
                 such as `good = 1, partial = 0.5, bad = 0`)"
            )),
        }
    }

    /// The scale as the prompt states it.
    fn describe(&self) -> String {
        match self {
            Scale::PassFail => "\"pass\" when the answer meets the criterion, \"fail\" otherwise.".into(),
            Scale::Range { low, high } => format!(
                "an integer from {low} (does not meet the criterion at all) to {high} (meets it fully)."
            ),
            Scale::Categories(c) => {
                let labels: Vec<String> = c.iter().map(|(l, _)| format!("\"{l}\"")).collect();
                format!("one of {}.", labels.join(", "))
            }
        }
    }

    /// The verdict's JSON schema.
    fn schema(&self) -> serde_json::Value {
        match self {
            Scale::Range { low, high } => {
                json!({"type": "integer", "minimum": low, "maximum": high})
            }
            _ => {
                let labels: Vec<String> = self.options().into_iter().map(|(l, _)| l).collect();
                json!({"type": "string", "enum": labels})
            }
        }
    }
}

/// A team's criterion: its name (the reported metric), what it asks, optional evaluation
/// steps, what the judge sees, and the scale of its verdict.
///
/// Written as a Markdown file ([`Criteria::parse`]) or built in code ([`Criteria::new`]).
/// Its [`version`](Criteria::version) is a hash of all of that, so an edited criterion is a new
/// entry of a cache and shows in the run record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Criteria {
    /// The reported metric's name: lowercase letters, digits and `_`, starting with a letter,
    /// not the name of a built-in metric.
    pub name: String,
    /// What the answer must do, in the team's words.
    pub criteria: String,
    /// Steps the judge follows, in order (may be empty).
    pub steps: Vec<String>,
    /// What the judge sees, in this order.
    pub inputs: Vec<CriteriaInput>,
    /// The verdicts and their scores.
    pub scale: Scale,
}

impl Criteria {
    /// A criterion the judge checks on the question and the answer; fails on a name or scale
    /// [`Criteria::check`] refuses.
    ///
    /// ```
    /// use rag_eval::judge::{Criteria, CriteriaInput, Scale};
    /// let c = Criteria::new("polite", "The answer is courteous.", Scale::Range { low: 1, high: 5 })?
    ///     .with_inputs(vec![CriteriaInput::Answer]);
    /// assert_eq!(c.scale.options()[1], ("2".to_string(), 0.25));
    /// # Ok::<(), rag_eval::Error>(())
    /// ```
    pub fn new(name: &str, criteria: &str, scale: Scale) -> Result<Self> {
        let c = Criteria {
            name: name.to_owned(),
            criteria: criteria.trim().to_owned(),
            steps: Vec::new(),
            inputs: vec![CriteriaInput::Question, CriteriaInput::Answer],
            scale,
        };
        c.check()?;
        Ok(c)
    }

    /// With these evaluation steps.
    pub fn with_steps(mut self, steps: Vec<String>) -> Self {
        self.steps = steps;
        self
    }

    /// Shows the judge these inputs (default: the question and the answer).
    pub fn with_inputs(mut self, inputs: Vec<CriteriaInput>) -> Self {
        self.inputs = inputs;
        self
    }

    /// Whether the criterion can judge: a name that is not a built-in metric's, a criterion,
    /// an input, a scale that goes up. The error ([`Error::Criteria`]) names the criterion and
    /// what is wrong.
    pub fn check(&self) -> Result<()> {
        self.problem().map_err(|message| Error::Criteria {
            name: self.name.clone(),
            message,
        })
    }

    /// What is wrong with the criterion, if anything.
    fn problem(&self) -> std::result::Result<(), String> {
        self.faults().map_err(|(_, message)| message)
    }

    /// What is wrong with the criterion, if anything, and which part of it: a file's error
    /// names that part's own line.
    fn faults(&self) -> std::result::Result<(), (Part, String)> {
        self.name_problem().map_err(|e| (Part::Name, e))?;
        if self.criteria.trim().is_empty() {
            return Err((Part::Criterion, "the criterion says nothing".into()));
        }
        if self.inputs.is_empty() {
            return Err((Part::Inputs, "the judge must see at least one input".into()));
        }
        self.scale.check().map_err(|e| (Part::Scale, e))
    }

    fn name_problem(&self) -> std::result::Result<(), String> {
        let n = &self.name;
        let well_formed = n.len() <= 63
            && n.starts_with(|c: char| c.is_ascii_lowercase())
            && n.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !well_formed {
            return Err(format!(
                "the name `{n}` must be lowercase letters, digits and `_`, start with a letter \
                 and be at most 63 characters"
            ));
        }
        if crate::metrics::registry::lookup(n).is_some() {
            return Err(format!(
                "`{n}` is a built-in metric; give the criterion another name"
            ));
        }
        Ok(())
    }

    /// The version: the first 16 hex digits of the SHA-256 of the criterion's content.
    pub fn version(&self) -> String {
        let json = serde_json::to_vec(self).expect("a criterion is JSON");
        crate::digest::short_sha256(&json)
    }

    /// Parses a criteria file: a header between `---` lines, then the criterion in Markdown,
    /// with optional evaluation steps under a `## Steps` heading (one per list item). `source`
    /// names the text in messages.
    ///
    /// ```
    /// use rag_eval::judge::{Criteria, CriteriaInput, Scale};
    /// let text = concat!(
    ///     "---\nname: cites_sources\nscale: pass/fail\ninputs: answer, contexts\n---\n",
    ///     "Every fact of the answer names the passage it comes from, as [1], [2].\n\n",
    ///     "## Steps\n1. List the facts of the answer.\n",
    ///     "2. Check that each is followed by a passage number.\n",
    /// );
    /// let c = Criteria::parse(text, "judges/cites_sources.md")?;
    /// assert_eq!(c.name, "cites_sources");
    /// assert_eq!(c.scale, Scale::PassFail);
    /// assert_eq!(c.inputs, [CriteriaInput::Answer, CriteriaInput::Contexts]);
    /// assert_eq!(c.steps.len(), 2);
    /// # Ok::<(), rag_eval::Error>(())
    /// ```
    ///
    /// Header keys: `name` (required), `scale` (required: `pass/fail`, an integer range such as
    /// `1-5`, or categories `good = 1, partial = 0.5, bad = 0`), `inputs` (any of `question`,
    /// `answer`, `contexts`, `reference`, comma-separated; default `question, answer`).
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        let err = |line: usize, message: String| Error::Parse {
            path: source.into(),
            line,
            message,
        };
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text.lines().enumerate();
        if lines.next().map(|(_, l)| l.trim()) != Some("---") {
            return Err(err(
                1,
                "a criteria file starts with a `---` header line".into(),
            ));
        }
        let (mut name, mut scale, mut inputs) = (None, None, None);
        // The line of each header key, for the errors about its value.
        let mut at = std::collections::BTreeMap::new();
        let mut body_from = None;
        for (i, line) in lines.by_ref() {
            let line = line.trim();
            if line == "---" {
                body_from = Some(i + 1);
                break;
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line
                .split_once(':')
                .ok_or_else(|| err(i + 1, format!("`{line}` is not `key: value`")))?;
            let value = value.trim();
            let part = match key.trim() {
                "name" => Some(Part::Name),
                "scale" => Some(Part::Scale),
                "inputs" => Some(Part::Inputs),
                _ => None,
            };
            if let Some(part) = part {
                at.insert(part, i + 1);
            }
            match key.trim() {
                "name" => name = Some(value.to_owned()),
                "scale" => scale = Some(Scale::parse(value).map_err(|e| err(i + 1, e))?),
                "inputs" => {
                    let parsed = value
                        .split(',')
                        .map(|v| {
                            let v = v.trim();
                            CriteriaInput::ALL
                                .into_iter()
                                .find(|k| k.as_str() == v)
                                .ok_or_else(|| {
                                    err(i + 1, format!(
                                        "unknown input `{v}` (question, answer, contexts, reference)"
                                    ))
                                })
                        })
                        .collect::<Result<Vec<_>>>()?;
                    inputs = Some(parsed);
                }
                other => {
                    return Err(err(
                        i + 1,
                        format!("unknown header key `{other}` (name, scale, inputs)"),
                    ))
                }
            }
        }
        let body_from =
            body_from.ok_or_else(|| err(1, "the header has no closing `---` line".into()))?;
        let name = name.ok_or_else(|| err(1, "the header has no `name:`".into()))?;
        let scale = scale.ok_or_else(|| err(1, "the header has no `scale:`".into()))?;
        let body: Vec<&str> = text.lines().skip(body_from).collect();
        let heading = body.iter().position(|l| {
            let l = l.trim().to_ascii_lowercase();
            l == "## steps" || l == "## evaluation steps"
        });
        let (criteria, steps) = match heading {
            Some(at) => (&body[..at], &body[at + 1..]),
            None => (&body[..], &[][..]),
        };
        let steps = steps
            .iter()
            .map(|l| list_item(l.trim()))
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect();
        let c = Criteria {
            name,
            criteria: criteria.join("\n").trim().to_owned(),
            steps,
            inputs: inputs.unwrap_or_else(|| vec![CriteriaInput::Question, CriteriaInput::Answer]),
            scale,
        };
        c.faults().map_err(|(part, e)| {
            let line = match part {
                // The criterion's first line after the header (its line 1 when it is empty).
                Part::Criterion => body_from + 1,
                // `inputs:` left out is the default, which is never empty.
                part => at.get(&part).copied().unwrap_or(1),
            };
            err(line, e)
        })?;
        Ok(c)
    }

    /// Reads and parses a criteria file ([`Criteria::parse`]).
    pub fn from_file(path: impl AsRef<Utf8Path>) -> Result<Self> {
        let path = path.as_ref();
        Self::parse(&crate::corpus::read_utf8(path)?, path.as_str())
    }
}

/// A part of a criterion, for the line an error about it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Name,
    Criterion,
    Inputs,
    Scale,
}

/// A list item's text without its `1.`, `-` or `*` marker.
fn list_item(line: &str) -> &str {
    let digits = line.trim_start_matches(|c: char| c.is_ascii_digit());
    if digits.len() < line.len() {
        if let Some(rest) = digits.strip_prefix(['.', ')']) {
            return rest.trim();
        }
    }
    line.strip_prefix(['-', '*']).map_or(line, str::trim)
}

/// A judge of a team's [`Criteria`].
///
/// It shows the model the criterion, its steps, the scale and the inputs the criterion names,
/// and asks for `{"reason": …, "verdict": …}` in a JSON schema whose verdict is one of the
/// scale's. When the server returns token log-probabilities (OpenAI's `logprobs`, which
/// llama-server also gives), the score is the probability-weighted mean of the verdicts' scores
/// at the verdict's first token, over the verdicts the scale allows (G-Eval's method, Liu et
/// al. 2023); otherwise, or when that token does not tell the verdicts apart (on a 1–10 scale
/// `1` may begin `10`), it is the sampled verdict's score. Repairs, `invalid`, `error`, repeats
/// and the cache are the built-in judges'; the request's prompt version is
/// `NAME/CRITERIA_VERSION/PROMPT_VERSION`.
///
/// ```
/// use rag_eval::chunk::{PositionAwareChunk, RetrievedChunk};
/// use rag_eval::generator::RagAnswer;
/// use rag_eval::judge::{judge_query, Criteria, CriteriaJudge, JudgeConfig, JudgeInput, Scale};
/// use rag_eval::llm::{ChatRequest, ChatResponse, LlmClient, TokenUsage};
///
/// struct Scripted;
/// #[async_trait::async_trait]
/// impl LlmClient for Scripted {
///     fn name(&self) -> String { "scripted".into() }
///     async fn complete(&self, _: &ChatRequest) -> rag_eval::Result<ChatResponse> {
///         Ok(ChatResponse { finish_reason: None, usage: TokenUsage::default(), model: "s".into(),
///             logprobs: None, content: r#"{"reason": "Mostly polite.", "verdict": 4}"#.into() })
///     }
/// }
///
/// let c = Criteria::new("polite", "The answer is courteous.", Scale::Range { low: 1, high: 5 })?;
/// let answer = RagAnswer { answer: "Sure, in May.".into(), contexts: vec![] };
/// let input = JudgeInput { query_id: "q1", question: "When?", answer: &answer, reference: None };
/// let j = pollster::block_on(judge_query(&CriteriaJudge::new(Scripted, c), &input, &JudgeConfig::default()));
/// assert_eq!(j.metric, "polite");
/// assert_eq!(j.score(), Some(0.75));
/// # Ok::<(), rag_eval::Error>(())
/// ```
pub struct CriteriaJudge<C> {
    llm: C,
    criteria: Criteria,
    version: String,
    prompt: PromptTemplate,
    logprobs: bool,
}

impl<C: LlmClient> CriteriaJudge<C> {
    /// Judges `criteria` with `llm`, the built-in prompt and log-probabilities asked for.
    pub fn new(llm: C, criteria: Criteria) -> Self {
        CriteriaJudge {
            llm,
            version: criteria.version(),
            criteria,
            prompt: Self::builtin_prompt(),
            logprobs: true,
        }
    }

    /// The prompt shipped with the library (`src/judge/prompts/criteria.md`).
    pub fn builtin_prompt() -> PromptTemplate {
        PromptTemplate::builtin(
            include_str!("prompts/criteria.md"),
            "criteria.md",
            CRITERIA_PLACEHOLDERS,
        )
    }

    /// Uses `prompt` instead; it may use [`CRITERIA_PLACEHOLDERS`].
    pub fn with_prompt(mut self, prompt: PromptTemplate) -> Self {
        self.prompt = prompt;
        self
    }

    /// Whether to ask for token log-probabilities and weight the verdicts by them (default yes;
    /// some servers refuse them). Without, the score is the sampled verdict's.
    pub fn with_logprobs(mut self, yes: bool) -> Self {
        self.logprobs = yes;
        self
    }

    /// The criterion.
    pub fn criteria(&self) -> &Criteria {
        &self.criteria
    }
}

#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    reason: String,
    verdict: serde_json::Value,
}

#[async_trait::async_trait]
impl<C: LlmClient> Judge for CriteriaJudge<C> {
    fn name(&self) -> &str {
        &self.criteria.name
    }

    fn prompt_version(&self) -> String {
        format!(
            "{}/{}/{}",
            self.criteria.name, self.version, self.prompt.version
        )
    }

    async fn judge(
        &self,
        input: &JudgeInput<'_>,
        sample: u32,
        config: &JudgeConfig,
    ) -> JudgeSample {
        let c = &self.criteria;
        let s = Sample::new(
            input,
            sample,
            config,
            &c.name,
            self.prompt_version(),
            &self.llm,
            &self.prompt,
        );
        if c.inputs.contains(&CriteriaInput::Reference) && s.reference.is_empty() {
            let why = "the query has no reference answer";
            return s.unscored(JudgeStatus::Undetermined, why, JudgeUsage::default());
        }
        let shown: Vec<String> = c
            .inputs
            .iter()
            .map(|i| match i {
                CriteriaInput::Question => format!("Question: {}", input.question.trim()),
                CriteriaInput::Answer => format!("Answer: {}", input.answer.answer.trim()),
                CriteriaInput::Contexts => format!(
                    "Context passages:\n{}",
                    numbered_contexts(&input.answer.contexts).trim_end()
                ),
                CriteriaInput::Reference => format!("Reference answer: {}", s.reference),
            })
            .collect();
        let steps: String = c
            .steps
            .iter()
            .enumerate()
            .map(|(i, step)| format!("{}. {step}\n", i + 1))
            .collect();
        let steps = if steps.is_empty() {
            String::new()
        } else {
            format!("\nEvaluation steps:\n{steps}")
        };
        let values = [
            ("name", c.name.as_str()),
            ("criteria", c.criteria.as_str()),
            ("steps", steps.as_str()),
            ("scale", &c.scale.describe()),
            ("inputs", &shown.join("\n\n")),
        ];
        let schema = json!({
            "type": "object",
            "properties": {
                "reason": {"type": "string"},
                "verdict": c.scale.schema()
            },
            "required": ["reason", "verdict"],
            "additionalProperties": false
        });
        let mut request = s.request(&values, schema);
        if self.logprobs {
            request = request.with_top_logprobs(TOP_LOGPROBS);
        }
        let options = c.scale.options();
        let check = |r: Reply| {
            let verdict = match &r.verdict {
                serde_json::Value::String(v) => v.trim().to_owned(),
                serde_json::Value::Number(n) => n.to_string(),
                other => other.to_string(),
            };
            match options.iter().find(|(label, _)| *label == verdict) {
                Some(&(_, score)) => Ok((verdict, score, r.reason)),
                None => Err(format!(
                    "verdict `{verdict}` is not one of {}",
                    options
                        .iter()
                        .map(|(l, _)| format!("`{l}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        };
        let ((verdict, sampled, reason), usage, response) = match s.ask_with(request, check).await {
            Ok(v) => v,
            Err(failed) => return failed,
        };
        // Not asked for, not used: a server may send them anyway.
        let weights = response
            .logprobs
            .as_deref()
            .filter(|_| self.logprobs)
            .and_then(|tokens| verdict_weights(tokens, &options, &verdict));
        let score = match &weights {
            Some(w) => {
                let total: f64 = w.iter().map(|(_, p)| p).sum();
                w.iter()
                    .map(|(label, p)| {
                        p * options
                            .iter()
                            .find(|(l, _)| l == label)
                            .map_or(0.0, |o| o.1)
                    })
                    .sum::<f64>()
                    / total
            }
            None => sampled,
        };
        let details = JudgeDetails::Criteria {
            verdict,
            reason,
            probabilities: weights.map(|w| {
                let total: f64 = w.iter().map(|(_, p)| p).sum();
                w.into_iter().map(|(l, p)| (l, p / total)).collect()
            }),
            scale: Some(options),
        };
        s.scored(score, details, usage)
    }
}

/// The probability of each verdict the scale allows at the verdict's first token, unnormalised;
/// `None` when the token cannot be found or does not tell the sampled verdict from another.
fn verdict_weights(
    tokens: &[TokenLogprob],
    options: &[(String, f64)],
    sampled: &str,
) -> Option<Vec<(String, f64)>> {
    // The text the tokens spell (a server may add code fences the content lacks).
    let mut text = String::new();
    let mut starts = Vec::with_capacity(tokens.len());
    for t in tokens {
        starts.push(text.len());
        text.push_str(&t.token);
    }
    let key = text.rfind("\"verdict\"")? + "\"verdict\"".len();
    let after = text[key..].trim_start().strip_prefix(':')?.trim_start();
    let after = after.strip_prefix('"').unwrap_or(after);
    let at = text.len() - after.len();
    let i = starts.iter().rposition(|&s| s <= at)?;
    let token = &tokens[i];
    let prefix = &text[starts[i]..at];
    // Which verdict a token's text at the value's start stands for, if exactly one.
    let verdict_of = |t: &str| -> Option<&str> {
        let rest = t.strip_prefix(prefix)?;
        let rest =
            rest.trim_end_matches(|c: char| c == '"' || c == ',' || c == '}' || c.is_whitespace());
        if rest.is_empty() {
            return None;
        }
        let mut hits = options.iter().filter(|(l, _)| l.starts_with(rest));
        let hit = hits.next()?;
        hits.next().is_none().then_some(hit.0.as_str())
    };
    if verdict_of(&token.token) != Some(sampled) {
        return None;
    }
    let mut alternatives: Vec<(&str, f64)> =
        token.top.iter().map(|(t, p)| (t.as_str(), *p)).collect();
    if !alternatives.iter().any(|(t, _)| *t == token.token) {
        alternatives.push((&token.token, token.logprob));
    }
    let mut weights: Vec<(String, f64)> = Vec::new();
    for (t, logprob) in alternatives {
        let Some(label) = verdict_of(t) else { continue };
        let p = logprob.exp();
        match weights.iter_mut().find(|(l, _)| l == label) {
            Some(w) => w.1 += p,
            None => weights.push((label.to_owned(), p)),
        }
    }
    let total: f64 = weights.iter().map(|(_, p)| p).sum();
    (total > 0.0 && total.is_finite()).then_some(weights)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(token: &str, logprob: f64, top: &[(&str, f64)]) -> TokenLogprob {
        TokenLogprob {
            token: token.into(),
            logprob,
            top: top.iter().map(|(t, p)| (t.to_string(), *p)).collect(),
        }
    }

    #[test]
    fn scales_parse_and_map_linearly() {
        assert_eq!(Scale::parse("pass/fail").unwrap(), Scale::PassFail);
        let five = Scale::parse(" 1-5 ").unwrap();
        assert_eq!(
            five.options(),
            [("1", 0.0), ("2", 0.25), ("3", 0.5), ("4", 0.75), ("5", 1.0)]
                .map(|(l, v)| (l.to_string(), v))
        );
        assert_eq!(
            Scale::parse("0-10").unwrap().options()[3],
            ("3".to_string(), 0.3)
        );
        let cats = Scale::parse("good = 1, partial = 0.5, bad = 0").unwrap();
        assert_eq!(cats.options()[1], ("partial".to_string(), 0.5));
        assert!(Scale::parse("often").unwrap_err().contains("unknown scale"));
        assert!(Scale::parse("5-1").unwrap().check().is_err());
        assert!(Scale::parse("a = 2, b = 0").unwrap().check().is_err());
        assert!(Scale::parse("a = 1").unwrap().check().is_err());
        assert!(Scale::parse("a = 1, a = 0").unwrap().check().is_err());
    }

    #[test]
    fn bad_files_say_where() {
        let e = |text: &str| Criteria::parse(text, "c.md").unwrap_err().to_string();
        assert!(e("name: x\n").contains("starts with a `---`"));
        assert!(e("---\nname: x\nscale: pass/fail\n").contains("no closing"));
        assert!(e("---\nscale: pass/fail\n---\nx").contains("no `name:`"));
        assert!(e("---\nname: x\nscale: pass/fail\ncolour: red\n---\nx").contains("c.md:4"));
        assert!(
            e("---\nname: x\nscale: pass/fail\ninputs: answer, mood\n---\nx")
                .contains("unknown input `mood`")
        );
        assert!(e("---\nname: Cites\nscale: pass/fail\n---\nx").contains("lowercase"));
        assert!(e("---\nname: faithfulness\nscale: pass/fail\n---\nx").contains("built-in"));
        assert!(e("---\nname: x\nscale: pass/fail\n---\n  \n").contains("says nothing"));
    }

    /// An error about a header value names the line of its key, not the header's first line.
    #[test]
    fn value_errors_name_their_own_line() {
        let e = |text: &str| Criteria::parse(text, "c.md").unwrap_err().to_string();
        let name = e("---\n# a comment\ninputs: answer\nname: Cites\nscale: pass/fail\n---\nx");
        assert!(
            name.starts_with("c.md:4:") && name.contains("lowercase"),
            "{name}"
        );
        let builtin = e("---\nscale: pass/fail\n\nname: faithfulness\n---\nx");
        assert!(builtin.starts_with("c.md:4:"), "{builtin}");
        let range = e("---\nname: x\n\nscale: 5-1\n---\nx");
        assert!(
            range.starts_with("c.md:4:") && range.contains("must go up"),
            "{range}"
        );
        let category = e("---\nname: x\nscale: a = 2, b = 0\n---\nx");
        assert!(
            category.starts_with("c.md:3:") && category.contains("[0, 1]"),
            "{category}"
        );
        // The criterion itself: the first line after the header.
        let empty = e("---\nname: x\nscale: pass/fail\n---\n  \n");
        assert!(empty.starts_with("c.md:5:"), "{empty}");
    }

    #[test]
    fn the_version_follows_the_content() {
        let a = Criteria::new("polite", "Courteous.", Scale::PassFail).unwrap();
        let b = a.clone().with_steps(vec!["Read it.".into()]);
        assert_ne!(a.version(), b.version());
        assert_eq!(a.version(), a.clone().version());
        assert_eq!(a.version().len(), 16);
    }

    /// llama-server's tokens for `{"reason": "…", "verdict": 1}`: fences around, the value its
    /// own token after a space.
    #[test]
    fn weights_come_from_the_verdict_token() {
        let options = Scale::Range { low: 1, high: 5 }.options();
        let tokens = [
            tok("```json\n{\n  \"reason\": \"ok\",\n  \"", -0.1, &[]),
            tok("verdict", -0.1, &[]),
            tok("\":", -0.1, &[]),
            tok(" ", -0.1, &[]),
            tok(
                "1",
                -0.88,
                &[("1", -0.88), ("5", -1.84), ("3", -2.12), ("x", -1.0)],
            ),
            tok("\n}", -0.1, &[]),
        ];
        let w = verdict_weights(&tokens, &options, "1").unwrap();
        let labels: Vec<&str> = w.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["1", "5", "3"]);
        assert!((w[1].1 - (-1.84f64).exp()).abs() < 1e-12);
        // The sampled verdict not at that token: no weights.
        assert_eq!(verdict_weights(&tokens, &options, "4"), None);
    }

    #[test]
    fn a_token_that_joins_the_quote_or_begins_two_verdicts() {
        let options = Scale::PassFail.options();
        let tokens = [
            tok("{\"reason\": \"x\", \"verdict\": \"", -0.1, &[]),
            tok("pass", -0.2, &[("pass", -0.2), ("fail", -1.7), ("p", -3.0)]),
            tok("\"}", -0.1, &[]),
        ];
        let w = verdict_weights(&tokens, &options, "pass").unwrap();
        assert_eq!(w.len(), 1 + 1, "`p` is pass too and adds to it: {w:?}");
        assert!((w[0].1 - ((-0.2f64).exp() + (-3.0f64).exp())).abs() < 1e-12);
        let joined = [
            tok("{\"reason\": \"x\", \"verdict\":", -0.1, &[]),
            tok(" \"fail", -0.3, &[(" \"fail", -0.3), (" \"pass", -1.4)]),
            tok("\"}", -0.1, &[]),
        ];
        assert_eq!(
            verdict_weights(&joined, &options, "fail").map(|w| w.len()),
            Some(2)
        );
        let ten = Scale::Range { low: 1, high: 10 }.options();
        let split = [
            tok("{\"verdict\": ", -0.1, &[]),
            tok("1", -0.1, &[("1", -0.1), ("9", -2.0)]),
            tok("0}", -0.1, &[]),
        ];
        assert_eq!(verdict_weights(&split, &ten, "10"), None);
    }

    #[test]
    fn steps_lose_their_markers() {
        assert_eq!(list_item("1. Read."), "Read.");
        assert_eq!(list_item("12) Read."), "Read.");
        assert_eq!(list_item("- Read."), "Read.");
        assert_eq!(list_item("Read."), "Read.");
    }
}
