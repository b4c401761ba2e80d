//! Synthetic datasets: questions and their ground truth written by a language model from the
//! corpus itself.
//!
//! - [`TokenLevelDataGenerator`] asks, per document, for questions with the verbatim excerpts
//!   that answer them, then finds each excerpt in the document ([`locate`]): the ground truth is
//!   character spans, independent of any chunker.
//! - [`ChunkLevelDataGenerator`] chunks each document with a given chunker, shows the chunks
//!   with their [`ChunkId`](crate::chunk::ChunkId)s and asks for questions citing the chunks
//!   that answer them: the ground truth is tied to that chunker.
//!
//! Both work one document at a time ([`TokenLevelDataGenerator::generate_document`]) so that a
//! caller can write each document's rows as soon as they exist and resume after an interruption;
//! the filters that need the whole dataset (near-duplicate questions, the difficulty mix) run
//! once at the end (`finish`). Everything the model got wrong is counted in [`Dropped`], never
//! silently repaired: an excerpt that cannot be found, a chunk id that was never shown, an answer
//! that is not JSON.
//!
//! ```
//! use rag_eval::generate::{Difficulty, GenerateConfig, Prompts};
//! let config = GenerateConfig {
//!     queries_per_doc: 5,
//!     difficulty_mix: Some(rag_eval::generate::parse_mix("factual=0.5,inferential=0.5").unwrap()),
//!     ..GenerateConfig::default()
//! };
//! assert!(config.validate().is_ok());
//! assert_eq!(Prompts::builtin().token.version, "1");
//! assert_eq!("paraphrased".parse::<Difficulty>().unwrap(), Difficulty::Paraphrased);
//! ```
//!
//! # Prompts
//!
//! The built-in prompts live in `src/generate/prompts/{token,chunk,answerable}.md`; each starts
//! with a `version: N` line, recorded as `prompt_version` in every row's metadata. They are the
//! system messages; the documents go in the user message. A prompt file given to
//! [`Prompts::from_file`] starts with its own `version:` line and holds one or more sections,
//! each introduced by a line `=== token ===`, `=== chunk ===` or `=== answerable ===`; sections
//! it leaves out keep the built-in text. Templates may use these placeholders:
//! `{{questions}}` (how many questions this call asks for), `{{min_chars}}` and `{{max_chars}}`
//! (excerpt lengths, token prompt), `{{examples}}` (the few-shot examples).
//!
//! # Row metadata
//!
//! `difficulty` (`factual`, `analytical`, `inferential`, `paraphrased`), `source_docs` (the
//! documents the ground truth lies in, sorted), `generation_model`, `prompt_version`,
//! `cross_document` (only when true), at token level `excerpt_match` (how each excerpt was
//! found: `exact`, `normalized`, `fuzzy`), at chunk level `chunker` (the chunker's spec).

mod chunk;
mod filters;
pub mod locate;
pub mod resume;
mod token;

pub use chunk::ChunkLevelDataGenerator;
pub use token::TokenLevelDataGenerator;

use crate::corpus::{DocId, Metadata};
use crate::dataset::Example;
use crate::error::{Error, Result};
use crate::level::Level;
use crate::llm::{ChatMessage, ChatRequest, LlmClient, TokenUsage};
use camino::Utf8Path;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// How hard a question is for a retriever (the four classes of the difficulty breakdown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Difficulty {
    /// One fact stated explicitly in one place, asked in words close to the text's.
    Factual,
    /// Needs several statements put together: compared, listed, or followed step by step.
    Analytical,
    /// The answer is not stated outright; it follows from what the text says.
    Inferential,
    /// A stated fact asked in different words (synonyms, rephrasing), so that word overlap
    /// with the text is small.
    Paraphrased,
}

impl Difficulty {
    /// All four, in order.
    pub const ALL: [Difficulty; 4] = [
        Difficulty::Factual,
        Difficulty::Analytical,
        Difficulty::Inferential,
        Difficulty::Paraphrased,
    ];

    /// The lowercase label, as written in datasets.
    pub fn as_str(self) -> &'static str {
        match self {
            Difficulty::Factual => "factual",
            Difficulty::Analytical => "analytical",
            Difficulty::Inferential => "inferential",
            Difficulty::Paraphrased => "paraphrased",
        }
    }
}

impl fmt::Display for Difficulty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Difficulty {
    type Err = Error;
    /// Case-insensitive; surrounding whitespace ignored.
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim();
        Difficulty::ALL
            .into_iter()
            .find(|d| d.as_str().eq_ignore_ascii_case(t))
            .ok_or_else(|| {
                Error::Config(format!(
                    "unknown difficulty `{t}` (expected factual, analytical, inferential or paraphrased)"
                ))
            })
    }
}

/// Parses a difficulty mix such as `factual=0.4,analytical=0.3,inferential=0.3`. Shares must be
/// finite and non-negative with a positive sum; they need not sum to 1 (they are normalised).
/// A difficulty left out gets share 0.
pub fn parse_mix(s: &str) -> Result<BTreeMap<Difficulty, f64>> {
    let mut mix = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, share) = part.split_once('=').ok_or_else(|| {
            Error::Config(format!(
                "difficulty mix entry `{part}` is not `difficulty=share`"
            ))
        })?;
        let d: Difficulty = name.parse()?;
        let share: f64 = share.trim().parse().map_err(|_| {
            Error::Config(format!(
                "difficulty mix entry `{part}`: `{}` is not a number",
                share.trim()
            ))
        })?;
        if mix.insert(d, share).is_some() {
            return Err(Error::Config(format!("difficulty mix names `{d}` twice")));
        }
    }
    check_mix(&mix)?;
    Ok(mix)
}

fn check_mix(mix: &BTreeMap<Difficulty, f64>) -> Result<()> {
    if let Some((d, s)) = mix.iter().find(|(_, s)| !s.is_finite() || **s < 0.0) {
        return Err(Error::Config(format!(
            "difficulty mix: share {s} of `{d}` is not a non-negative number"
        )));
    }
    if mix.values().sum::<f64>() <= 0.0 {
        return Err(Error::Config(
            "difficulty mix: the shares sum to zero".into(),
        ));
    }
    Ok(())
}

/// A worked example shown to the model (few-shot prompting).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FewShot {
    /// The question.
    pub question: String,
    /// The passage that answers it, verbatim.
    pub excerpt: String,
    /// Its difficulty.
    pub difficulty: Difficulty,
}

impl FewShot {
    /// Reads few-shot examples from JSONL, one `{"question","excerpt","difficulty"}` object per
    /// line (blank lines skipped); errors name the file and line.
    pub fn load_jsonl(path: impl AsRef<Utf8Path>) -> Result<Vec<FewShot>> {
        let path = path.as_ref();
        let text = crate::corpus::read_utf8(path)?;
        FewShot::parse_jsonl(&text, path.as_str())
    }

    /// Parses few-shot JSONL; `source` names the input in messages.
    pub fn parse_jsonl(text: &str, source: &str) -> Result<Vec<FewShot>> {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let perr = |message: String| Error::Parse {
                path: source.into(),
                line: i + 1,
                message,
            };
            let shot: FewShot = serde_json::from_str(line).map_err(|e| perr(e.to_string()))?;
            if shot.question.trim().is_empty() || shot.excerpt.trim().is_empty() {
                return Err(perr("`question` and `excerpt` must not be empty".into()));
            }
            out.push(shot);
        }
        Ok(out)
    }

    /// The examples the built-in prompts show when the configuration has none: one per
    /// difficulty, on a made-up text, so that they teach the form without leaking facts.
    pub fn builtin() -> Vec<FewShot> {
        let shot = |q: &str, e: &str, d| FewShot {
            question: q.into(),
            excerpt: e.into(),
            difficulty: d,
        };
        vec![
            shot(
                "How long does the Meridian ferry take to cross the bay?",
                "The crossing takes 40 minutes in calm weather.",
                Difficulty::Factual,
            ),
            shot(
                "Which two ferry routes share the north pier, and how do their timetables differ?",
                "Both the Meridian and the Harbour Loop leave from the north pier; the Meridian runs hourly, the Harbour Loop only at weekends.",
                Difficulty::Analytical,
            ),
            shot(
                "Could a passenger with a bicycle board the last evening sailing?",
                "Bicycles are carried on every sailing before 18:00. The last sailing leaves at 21:30.",
                Difficulty::Inferential,
            ),
            shot(
                "What is the duration of the trip across the water on the Meridian boat?",
                "The crossing takes 40 minutes in calm weather.",
                Difficulty::Paraphrased,
            ),
        ]
    }
}

/// One prompt template: the system message of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// Its version (the `version:` line), recorded in every row's metadata.
    pub version: String,
    /// The template text, with `{{…}}` placeholders.
    pub template: String,
}

impl Prompt {
    /// The template with each `{{name}}` replaced by its value. Placeholders without a value
    /// stay as they are (the prompt files were checked at load time).
    pub fn render(&self, values: &[(&str, String)]) -> String {
        let mut out = self.template.clone();
        for (name, value) in values {
            out = out.replace(&format!("{{{{{name}}}}}"), value);
        }
        out
    }
}

/// The prompts of a generation run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompts {
    /// Token-level generation: questions with verbatim excerpts.
    pub token: Prompt,
    /// Chunk-level generation: questions citing chunk ids.
    pub chunk: Prompt,
    /// The check whether a question can be answered without the document.
    pub answerable: Prompt,
}

const TOKEN_PROMPT: &str = include_str!("prompts/token.md");
const CHUNK_PROMPT: &str = include_str!("prompts/chunk.md");
const ANSWERABLE_PROMPT: &str = include_str!("prompts/answerable.md");

/// Placeholders each prompt may use.
const TOKEN_PLACEHOLDERS: &[&str] = &["questions", "min_chars", "max_chars", "examples"];
const CHUNK_PLACEHOLDERS: &[&str] = &["questions", "examples"];
const ANSWERABLE_PLACEHOLDERS: &[&str] = &[];

impl Default for Prompts {
    fn default() -> Self {
        Prompts::builtin()
    }
}

impl Prompts {
    /// The prompts shipped with the library.
    pub fn builtin() -> Self {
        let parse = |text: &str, name: &str| {
            split_version(text)
                .map(|(version, template)| Prompt {
                    version: version.to_owned(),
                    template: template.to_owned(),
                })
                .unwrap_or_else(|| panic!("built-in prompt {name} lacks its version line"))
        };
        Prompts {
            token: parse(TOKEN_PROMPT, "token.md"),
            chunk: parse(CHUNK_PROMPT, "chunk.md"),
            answerable: parse(ANSWERABLE_PROMPT, "answerable.md"),
        }
    }

    /// The built-in prompts with the sections of a user file in their place (see the module
    /// documentation for the format).
    pub fn from_file(path: impl AsRef<Utf8Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = crate::corpus::read_utf8(path)?;
        Prompts::builtin().overridden_by(&text, path.as_str())
    }

    /// These prompts with the sections of a prompt file's text in their place; `source` names
    /// the text in messages.
    pub fn overridden_by(mut self, text: &str, source: &str) -> Result<Self> {
        let err = |line: usize, message: String| Error::Parse {
            path: source.into(),
            line,
            message,
        };
        let (version, body) = split_version(text).ok_or_else(|| {
            err(
                1,
                "a prompt file starts with a `version: N` line".to_owned(),
            )
        })?;
        // Line numbers in messages count from the line after the version line.
        let mut sections: Vec<(String, usize, String)> = Vec::new();
        for (i, line) in body.lines().enumerate() {
            let t = line.trim();
            if let Some(name) = t
                .strip_prefix("===")
                .and_then(|r| r.strip_suffix("==="))
                .map(str::trim)
            {
                if !["token", "chunk", "answerable"].contains(&name) {
                    return Err(err(
                        i + 2,
                        format!("unknown section `{name}` (expected token, chunk or answerable)"),
                    ));
                }
                if sections.iter().any(|(n, _, _)| n == name) {
                    return Err(err(i + 2, format!("section `{name}` appears twice")));
                }
                sections.push((name.to_owned(), i + 2, String::new()));
            } else if let Some((_, _, text)) = sections.last_mut() {
                text.push_str(line);
                text.push('\n');
            } else if !t.is_empty() {
                return Err(err(
                    i + 2,
                    "text before the first `=== token ===`, `=== chunk ===` or `=== answerable ===` line"
                        .into(),
                ));
            }
        }
        if sections.is_empty() {
            return Err(err(
                1,
                "no `=== token ===`, `=== chunk ===` or `=== answerable ===` section".into(),
            ));
        }
        for (name, line, template) in sections {
            let (slot, allowed) = match name.as_str() {
                "token" => (&mut self.token, TOKEN_PLACEHOLDERS),
                "chunk" => (&mut self.chunk, CHUNK_PLACEHOLDERS),
                _ => (&mut self.answerable, ANSWERABLE_PLACEHOLDERS),
            };
            if let Some(bad) = placeholders(&template).find(|p| !allowed.contains(p)) {
                let known = if allowed.is_empty() {
                    "none".to_owned()
                } else {
                    allowed
                        .iter()
                        .map(|p| format!("{{{{{p}}}}}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(err(
                    line,
                    format!(
                        "section `{name}` uses unknown placeholder {{{{{bad}}}}} (known: {known})"
                    ),
                ));
            }
            if template.trim().is_empty() {
                return Err(err(line, format!("section `{name}` is empty")));
            }
            *slot = Prompt {
                version: version.to_owned(),
                template: template.trim().to_owned() + "\n",
            };
        }
        Ok(self)
    }
}

/// The value of a leading `version: N` line and the text after that line.
fn split_version(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let version = first.trim().strip_prefix("version:")?.trim();
    (!version.is_empty()).then_some((version, rest))
}

/// Names of the `{{…}}` placeholders in a template.
fn placeholders(template: &str) -> impl Iterator<Item = &str> {
    template.split("{{").skip(1).filter_map(|s| {
        let (name, _) = s.split_once("}}")?;
        let name = name.trim();
        (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then_some(name)
    })
}

/// Settings of a generation run.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateConfig {
    /// Questions to ask for per document (default 3); a document split into windows shares
    /// them among its windows.
    pub queries_per_doc: usize,
    /// Longest text, in characters, shown in one call; longer documents are split into
    /// windows (default 6000). Chunk level: the chunks of one call add up to at most this
    /// (a single longer chunk is shown alone).
    pub window_chars: usize,
    /// Characters consecutive windows share, so that a passage cut by one window boundary is
    /// whole in the next one (default 500; token level).
    pub window_overlap: usize,
    /// Also ask, per document, for questions that need it and one other document (chosen by
    /// the seed).
    pub cross_document: bool,
    /// Questions per cross-document call (default 1).
    pub cross_document_queries: usize,
    /// Shortest excerpt kept, in characters (default 20); a question with a shorter one is
    /// dropped.
    pub min_excerpt_chars: usize,
    /// Longest excerpt kept, in characters (default 1000).
    pub max_excerpt_chars: usize,
    /// Lowest similarity (1 − edit distance / excerpt length) at which an excerpt the model
    /// changed is still located by the fuzzy step (default 0.9).
    pub fuzzy_threshold: f64,
    /// Questions whose embedding cosine similarity (with [`HashingEmbedder`](crate::embed::HashingEmbedder))
    /// to an earlier question reaches this are dropped as near-duplicates (default `Some(0.95)`;
    /// `None` keeps all).
    pub dedup_threshold: Option<f32>,
    /// Ask the model to answer each question without the document, and drop the question when
    /// it answers confidently with the excerpt's content (it would not test retrieval).
    pub check_answerable: bool,
    /// Target shares of each difficulty; the excess of over-represented difficulties is
    /// dropped (chosen by the seed). A difficulty left out gets share 0.
    pub difficulty_mix: Option<BTreeMap<Difficulty, f64>>,
    /// Worked examples shown to the model; empty means [`FewShot::builtin`].
    pub few_shot: Vec<FewShot>,
    /// The prompts.
    pub prompts: Prompts,
    /// The model to ask for (sent with every request) and to record in metadata; `None` keeps
    /// the client's default and records [`LlmClient::name`].
    pub model: Option<String>,
    /// Sampling temperature sent with every request; `None` keeps the server's default.
    pub temperature: Option<f32>,
    /// Seed for every choice made at random: the partner document, which windows get the
    /// questions, which questions the difficulty mix drops.
    pub seed: u64,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            queries_per_doc: 3,
            window_chars: 6000,
            window_overlap: 500,
            cross_document: false,
            cross_document_queries: 1,
            min_excerpt_chars: 20,
            max_excerpt_chars: 1000,
            fuzzy_threshold: 0.9,
            dedup_threshold: Some(0.95),
            check_answerable: false,
            difficulty_mix: None,
            few_shot: Vec::new(),
            prompts: Prompts::builtin(),
            model: None,
            temperature: None,
            seed: 0,
        }
    }
}

impl GenerateConfig {
    /// Checks that the settings make sense together.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::Config(m));
        if self.window_chars < 100 {
            return bad(format!(
                "window_chars is {}; a window needs at least 100 characters",
                self.window_chars
            ));
        }
        if self.window_overlap * 2 > self.window_chars {
            return bad(format!(
                "window_overlap {} is more than half of window_chars {}",
                self.window_overlap, self.window_chars
            ));
        }
        if self.min_excerpt_chars > self.max_excerpt_chars {
            return bad(format!(
                "min_excerpt_chars {} exceeds max_excerpt_chars {}",
                self.min_excerpt_chars, self.max_excerpt_chars
            ));
        }
        if !(0.0..=1.0).contains(&self.fuzzy_threshold) {
            return bad(format!(
                "fuzzy_threshold {} is outside [0, 1]",
                self.fuzzy_threshold
            ));
        }
        if let Some(t) = self.dedup_threshold {
            if !(-1.0..=1.0).contains(&t) {
                return bad(format!("dedup_threshold {t} is outside [-1, 1]"));
            }
        }
        if let Some(mix) = &self.difficulty_mix {
            check_mix(mix)?;
        }
        Ok(())
    }

    /// The few-shot examples the prompts show.
    pub(crate) fn examples(&self) -> Vec<FewShot> {
        if self.few_shot.is_empty() {
            FewShot::builtin()
        } else {
            self.few_shot.clone()
        }
    }

    /// A request with the run's model and temperature.
    pub(crate) fn request(&self, messages: Vec<ChatMessage>) -> ChatRequest {
        let mut r = ChatRequest::new(messages);
        r.model = self.model.clone();
        r.temperature = self.temperature;
        r
    }
}

/// What was left out, and why. Each question the model wrote is either kept or counted here
/// exactly once; `invalid_json` counts answers instead (their questions are unknown).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Dropped {
    /// Questions whose ground truth could not be placed: an excerpt not found in the document
    /// (token level), or no cited chunk id that was shown (chunk level).
    pub unlocated: usize,
    /// Questions with an excerpt shorter than `min_excerpt_chars`.
    pub too_short: usize,
    /// Questions with an excerpt longer than `max_excerpt_chars`.
    pub too_long: usize,
    /// Questions too similar to an earlier one.
    pub duplicate: usize,
    /// Questions the model answered confidently without the document.
    pub unanswerable: usize,
    /// Answers that were not the JSON asked for, even after a reminder.
    pub invalid_json: usize,
    /// Cited chunk ids that were not among the chunks shown (each removed id counts once).
    pub unknown_chunk_ids: usize,
    /// Questions dropped to meet the difficulty mix.
    pub over_mix: usize,
    /// Questions without text or without excerpts / chunk ids, and answers with no question
    /// at all.
    pub empty: usize,
}

impl Dropped {
    /// Questions (and answers, for `invalid_json`) dropped, all reasons together, not counting
    /// `unknown_chunk_ids` (ids, not questions).
    pub fn total(&self) -> usize {
        self.unlocated
            + self.too_short
            + self.too_long
            + self.duplicate
            + self.unanswerable
            + self.invalid_json
            + self.over_mix
            + self.empty
    }

    fn entries(&self) -> [(&'static str, usize); 9] {
        [
            ("unlocated", self.unlocated),
            ("too short", self.too_short),
            ("too long", self.too_long),
            ("duplicate", self.duplicate),
            ("unanswerable", self.unanswerable),
            ("invalid JSON", self.invalid_json),
            ("unknown chunk ids", self.unknown_chunk_ids),
            ("over mix", self.over_mix),
            ("empty", self.empty),
        ]
    }
}

impl std::ops::AddAssign for Dropped {
    fn add_assign(&mut self, o: Dropped) {
        self.unlocated += o.unlocated;
        self.too_short += o.too_short;
        self.too_long += o.too_long;
        self.duplicate += o.duplicate;
        self.unanswerable += o.unanswerable;
        self.invalid_json += o.invalid_json;
        self.unknown_chunk_ids += o.unknown_chunk_ids;
        self.over_mix += o.over_mix;
        self.empty += o.empty;
    }
}

impl fmt::Display for Dropped {
    /// The non-zero counts, e.g. `2 unlocated, 1 duplicate`, or `none`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .entries()
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{n} {name}"))
            .collect();
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// What one document gave: its examples (ids numbered from the caller's `first_id`), what was
/// dropped, and what the calls cost.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentBatch<L: Level> {
    /// The document.
    pub doc_id: DocId,
    /// The kept examples, in the order the model wrote them.
    pub examples: Vec<Example<L>>,
    /// What was left out.
    pub dropped: Dropped,
    /// Tokens of all calls for this document.
    pub usage: TokenUsage,
    /// Model calls made (retries and answerability checks included).
    pub calls: usize,
}

/// The dataset id of the `n`-th question: `q0001`, …
pub fn example_id(n: usize) -> String {
    format!("q{n:04}")
}

/// Deterministic pseudo-random numbers (SplitMix64): small, seedable, the same everywhere.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix(u64);

impl SplitMix {
    #[cfg(test)]
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    /// A generator for one named purpose, so that choices for one document do not depend on
    /// the order documents are processed in.
    pub(crate) fn keyed(seed: u64, key: &str) -> Self {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in key.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        let mut s = SplitMix(seed ^ h);
        s.next_u64();
        s
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        // Multiply-shift: the bias is below 2^-32 for any n a corpus can have.
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Fisher–Yates shuffle.
    pub(crate) fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

/// How `total` questions are shared among `parts` windows: as evenly as possible, the extra
/// ones going to windows spread over the document from a seeded offset.
pub(crate) fn share_questions(total: usize, parts: usize, rng: &mut SplitMix) -> Vec<usize> {
    if parts == 0 {
        return Vec::new();
    }
    let offset = rng.below(parts);
    let mut out = vec![0; parts];
    for (i, slot) in out.iter_mut().enumerate() {
        // Window i receives floor((k+1)·total/parts) − floor(k·total/parts) with k its place
        // after rotation, which sums to total and differs by at most one between windows.
        let k = (i + parts - offset) % parts;
        *slot = (k + 1) * total / parts - k * total / parts;
    }
    out
}

/// The answer of a generation call, read leniently: missing fields become empty (and are
/// counted as such), a bare array is taken as the question list, and a Markdown code fence
/// around the JSON is ignored.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawAnswer<Q> {
    #[serde(default = "Vec::new")]
    pub(crate) questions: Vec<Q>,
}

/// An answer's JSON, with a Markdown code fence around it ignored.
pub(crate) fn parse_answer_value(content: &str) -> std::result::Result<serde_json::Value, String> {
    let body = strip_fence(content);
    if body.trim().is_empty() {
        return Err("the answer is empty".into());
    }
    serde_json::from_str(body).map_err(|e| e.to_string())
}

pub(crate) fn parse_answer<Q: serde::de::DeserializeOwned>(
    content: &str,
) -> std::result::Result<Vec<Q>, String> {
    let value = match parse_answer_value(content)? {
        a @ serde_json::Value::Array(_) => serde_json::json!({ "questions": a }),
        v => v,
    };
    if !value.get("questions").is_some_and(|q| q.is_array()) {
        return Err("the answer has no `questions` array".into());
    }
    serde_json::from_value::<RawAnswer<Q>>(value)
        .map(|a| a.questions)
        .map_err(|e| e.to_string())
}

fn strip_fence(s: &str) -> &str {
    let t = s.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let rest = rest.split_once('\n').map_or("", |(_, r)| r);
    rest.trim_end().strip_suffix("```").unwrap_or(rest).trim()
}

/// A difficulty label as the model wrote it; unknown labels read as none.
pub(crate) fn read_difficulty(label: Option<&str>) -> Option<Difficulty> {
    label.and_then(|l| l.parse().ok())
}

/// Sends a generation request; an answer that does not parse gets one more chance with a
/// reminder. `None` when the second answer does not parse either.
pub(crate) async fn ask_json<C: LlmClient, Q: serde::de::DeserializeOwned>(
    client: &C,
    request: ChatRequest,
    usage: &mut TokenUsage,
    calls: &mut usize,
    what: &str,
) -> Result<Option<Vec<Q>>> {
    let first = client.complete(&request).await?;
    *calls += 1;
    add_usage(usage, first.usage);
    let error = match parse_answer(&first.content) {
        Ok(q) => return Ok(Some(q)),
        Err(e) => e,
    };
    tracing::debug!("{what}: answer was not the JSON asked for ({error}); asking again");
    let mut retry = request;
    retry
        .messages
        .push(ChatMessage::assistant(first.content.clone()));
    retry.messages.push(ChatMessage::user(format!(
        "That answer could not be used: {error}. Reply again with only the JSON object \
         {{\"questions\": [...]}} described above, with no other text."
    )));
    let second = client.complete(&retry).await?;
    *calls += 1;
    add_usage(usage, second.usage);
    match parse_answer(&second.content) {
        Ok(q) => Ok(Some(q)),
        Err(e) => {
            tracing::warn!(
                "{what}: the answer was not the JSON asked for, twice ({e}); skipping it"
            );
            Ok(None)
        }
    }
}

pub(crate) fn add_usage(total: &mut TokenUsage, u: TokenUsage) {
    total.prompt_tokens += u.prompt_tokens;
    total.completion_tokens += u.completion_tokens;
}

/// The few-shot block of a prompt.
pub(crate) fn render_examples(shots: &[FewShot], chunk_level: bool) -> String {
    let mut out = String::new();
    for (i, s) in shots.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let label = if chunk_level {
            "Passage of the cited chunk"
        } else {
            "Excerpt"
        };
        out.push_str(&format!(
            "Question: {}\n{label}: {}\nDifficulty: {}\n",
            s.question,
            serde_json::to_string(&s.excerpt).unwrap_or_default(),
            s.difficulty
        ));
    }
    out
}

/// Common metadata of a generated row.
pub(crate) fn base_metadata(
    difficulty: Option<Difficulty>,
    source_docs: &[DocId],
    model: &str,
    prompt_version: &str,
    cross_document: bool,
) -> Metadata {
    let mut m = Metadata::new();
    if let Some(d) = difficulty {
        m.insert("difficulty".into(), d.as_str().into());
    }
    let mut docs: Vec<&str> = source_docs.iter().map(DocId::as_str).collect();
    docs.sort_unstable();
    docs.dedup();
    m.insert("source_docs".into(), docs.into());
    m.insert("generation_model".into(), model.into());
    m.insert("prompt_version".into(), prompt_version.into());
    if cross_document {
        m.insert("cross_document".into(), true.into());
    }
    m
}

/// The JSON schema of a generator's answer: questions, each with its evidence (`excerpts` or
/// `chunk_ids`) as a list of strings and a difficulty label.
fn answer_schema(evidence: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string"},
                        evidence: {"type": "array", "items": {"type": "string"}},
                        "difficulty": {
                            "type": "string",
                            "enum": Difficulty::ALL.iter().map(|d| d.as_str()).collect::<Vec<_>>()
                        }
                    },
                    "required": ["question", evidence, "difficulty"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["questions"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_prompts_have_versions_and_only_known_placeholders() {
        let p = Prompts::builtin();
        for (prompt, allowed) in [
            (&p.token, TOKEN_PLACEHOLDERS),
            (&p.chunk, CHUNK_PLACEHOLDERS),
            (&p.answerable, ANSWERABLE_PLACEHOLDERS),
        ] {
            assert_eq!(prompt.version, "1");
            assert!(!prompt.template.starts_with("version"));
            for name in placeholders(&prompt.template) {
                assert!(allowed.contains(&name), "{name}");
            }
        }
        assert!(p.token.template.contains("{{examples}}"));
        for d in Difficulty::ALL {
            assert!(p.token.template.contains(d.as_str()), "{d}");
            assert!(p.chunk.template.contains(d.as_str()), "{d}");
        }
    }

    #[test]
    fn prompt_files_override_named_sections_only() {
        let text = "version: 7\n=== token ===\nAsk {{questions}} things.\n\n=== answerable ===\nAnswer it.\n";
        let p = Prompts::builtin().overridden_by(text, "p.md").unwrap();
        assert_eq!(p.token.version, "7");
        assert_eq!(p.token.template, "Ask {{questions}} things.\n");
        assert_eq!(
            p.token.render(&[("questions", "4".into())]),
            "Ask 4 things.\n"
        );
        assert_eq!(p.answerable.template, "Answer it.\n");
        assert_eq!(p.chunk, Prompts::builtin().chunk);
    }

    #[test]
    fn bad_prompt_files_are_errors_naming_the_line() {
        let e = |t: &str| {
            Prompts::builtin()
                .overridden_by(t, "p.md")
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            e("=== token ===\nx"),
            "p.md:1: a prompt file starts with a `version: N` line"
        );
        assert_eq!(
            e("version: 2\nhello\n=== token ===\nx"),
            "p.md:2: text before the first `=== token ===`, `=== chunk ===` or `=== answerable ===` line"
        );
        assert_eq!(
            e("version: 2\n=== tokens ===\nx"),
            "p.md:2: unknown section `tokens` (expected token, chunk or answerable)"
        );
        assert_eq!(
            e("version: 2\n=== chunk ===\nUse {{min_chars}}."),
            "p.md:2: section `chunk` uses unknown placeholder {{min_chars}} (known: {{questions}}, {{examples}})"
        );
        assert_eq!(
            e("version: 2\n=== chunk ===\n\n=== token ===\nx"),
            "p.md:2: section `chunk` is empty"
        );
        assert_eq!(
            e("version: 2\n\n"),
            "p.md:1: no `=== token ===`, `=== chunk ===` or `=== answerable ===` section"
        );
        assert!(e("version: 2\n=== chunk ===\na\n=== chunk ===\nb")
            .contains("p.md:4: section `chunk` appears twice"));
    }

    #[test]
    fn difficulty_mix_parses_and_rejects_nonsense() {
        let m = parse_mix("factual=0.4, Analytical=0.6").unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[&Difficulty::Analytical], 0.6);
        for (bad, msg) in [
            ("factual", "is not `difficulty=share`"),
            ("factual=x", "`x` is not a number"),
            ("easy=1", "unknown difficulty `easy`"),
            ("factual=-1", "not a non-negative number"),
            ("factual=0", "sum to zero"),
            ("factual=1,factual=2", "names `factual` twice"),
        ] {
            let e = parse_mix(bad).unwrap_err().to_string();
            assert!(e.contains(msg), "{bad}: {e}");
        }
    }

    #[test]
    fn config_validation_names_the_setting() {
        let ok = GenerateConfig::default();
        assert!(ok.validate().is_ok());
        let cases = [
            (
                GenerateConfig {
                    window_overlap: 4000,
                    ..ok.clone()
                },
                "window_overlap",
            ),
            (
                GenerateConfig {
                    min_excerpt_chars: 2000,
                    ..ok.clone()
                },
                "min_excerpt_chars",
            ),
            (
                GenerateConfig {
                    fuzzy_threshold: 1.5,
                    ..ok.clone()
                },
                "fuzzy_threshold",
            ),
            (
                GenerateConfig {
                    window_chars: 10,
                    window_overlap: 0,
                    ..ok.clone()
                },
                "window_chars",
            ),
        ];
        for (c, name) in cases {
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        }
    }

    #[test]
    fn few_shot_jsonl_reads_and_reports_line() {
        let text = "{\"question\":\"q?\",\"excerpt\":\"e\",\"difficulty\":\"factual\"}\n\n{\"question\":\"q\",\"excerpt\":\"e\",\"difficulty\":\"hard\"}\n";
        let e = FewShot::parse_jsonl(text, "f.jsonl")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("f.jsonl:3: unknown variant `hard`"), "{e}");
        let ok = FewShot::parse_jsonl(text.lines().next().unwrap(), "f").unwrap();
        assert_eq!(ok[0].difficulty, Difficulty::Factual);
        let e = FewShot::parse_jsonl(
            "{\"question\":\" \",\"excerpt\":\"e\",\"difficulty\":\"factual\"}",
            "f",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("must not be empty"), "{e}");
    }

    #[test]
    fn dropped_adds_and_displays_nonzero_counts() {
        let mut d = Dropped {
            unlocated: 2,
            ..Dropped::default()
        };
        d += Dropped {
            unlocated: 1,
            duplicate: 4,
            ..Dropped::default()
        };
        assert_eq!(d.to_string(), "3 unlocated, 4 duplicate");
        assert_eq!(d.total(), 7);
        assert_eq!(Dropped::default().to_string(), "none");
        let back: Dropped = serde_json::from_str(r#"{"empty":1}"#).unwrap();
        assert_eq!(back.empty, 1);
    }

    #[test]
    fn questions_are_shared_evenly_among_windows() {
        for total in 0..12 {
            for parts in 1..9 {
                let v = share_questions(total, parts, &mut SplitMix::new(total as u64));
                assert_eq!(v.iter().sum::<usize>(), total);
                let (lo, hi) = (v.iter().min().unwrap(), v.iter().max().unwrap());
                assert!(hi - lo <= 1, "{v:?}");
            }
        }
    }

    #[test]
    fn answers_parse_leniently_but_not_blindly() {
        #[derive(Deserialize, Debug)]
        struct Q {
            question: String,
        }
        let fenced = "```json\n{\"questions\": [{\"question\": \"a\"}]}\n```";
        assert_eq!(parse_answer::<Q>(fenced).unwrap()[0].question, "a");
        let bare = "[{\"question\": \"b\"}]";
        assert_eq!(parse_answer::<Q>(bare).unwrap()[0].question, "b");
        assert!(parse_answer::<Q>("").unwrap_err().contains("empty"));
        assert!(parse_answer::<Q>("{\"qs\": []}")
            .unwrap_err()
            .contains("no `questions`"));
        assert!(parse_answer::<Q>("Sure! Here are").is_err());
    }

    #[test]
    fn keyed_generators_are_stable_and_distinct() {
        let a: Vec<u64> = (0..3)
            .map(|_| SplitMix::keyed(1, "a.md").next_u64())
            .collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(
            SplitMix::keyed(1, "a.md").next_u64(),
            SplitMix::keyed(1, "b.md").next_u64()
        );
        assert_ne!(
            SplitMix::keyed(1, "a.md").next_u64(),
            SplitMix::keyed(2, "a.md").next_u64()
        );
    }
}

#[cfg(test)]
mod schema_tests {
    #[test]
    fn the_answer_schema_names_the_evidence_field() {
        let s = super::answer_schema("excerpts");
        let item = &s["properties"]["questions"]["items"];
        assert_eq!(item["properties"]["excerpts"]["type"], "array");
        assert_eq!(
            item["required"],
            serde_json::json!(["question", "excerpts", "difficulty"])
        );
        assert!(item["properties"].get("evidence").is_none());
    }
}
