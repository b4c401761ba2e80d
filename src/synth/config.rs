//! Settings of a generation run.

use super::{check_mix, Difficulty, FewShot, Prompts};
use crate::error::{Result, SettingError};
use crate::llm::{ChatMessage, ChatRequest};
use std::collections::BTreeMap;

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
    /// Target shares of each difficulty, summing to 1 (see [`parse_mix`](super::parse_mix)); the
    /// excess of over-represented difficulties is dropped (chosen by the seed). A difficulty
    /// left out gets share 0.
    pub difficulty_mix: Option<BTreeMap<Difficulty, f64>>,
    /// Worked examples shown to the model; empty means [`FewShot::builtin`].
    pub few_shot: Vec<FewShot>,
    /// The prompts.
    pub prompts: Prompts,
    /// The model to ask for (sent with every request) and to record in metadata; `None` keeps
    /// the client's default and records [`LlmClient::name`](crate::llm::LlmClient::name).
    pub model: Option<String>,
    /// Sampling temperature sent with every request, from 0 to 2; `None` keeps the server's
    /// default.
    pub temperature: Option<f32>,
    /// Seed for every choice made at random: the partner document, which windows get the
    /// questions, which questions the difficulty mix drops.
    pub seed: u64,
    /// The most tokens the model may answer one request with (sent as `max_tokens`; default
    /// [`DEFAULT_MAX_TOKENS`]); `None` leaves it to the server, which may then write until its
    /// context is full. Once the model's context is known ([`GenerateConfig::context_tokens`],
    /// or named by a server's refusal of a request as too long), the budget sent is at most a
    /// quarter of the context and half of what the prompt leaves of it, so that a budget
    /// larger than a small context can give an answer does not keep the documents out.
    pub max_tokens: Option<u32>,
    /// The model's context, in tokens, when known: windows are cut short enough from the
    /// start (an estimate at 3 characters a token, half the room the answer's budget
    /// leaves for the document). Without it, the first request that a server refuses as longer than its
    /// context (llama-server's `exceed_context_size_error`, OpenAI's
    /// `context_length_exceeded`) teaches the window from the sizes the server names. Either
    /// way a document that cannot fit is dropped ([`Dropped::documents`](super::Dropped::documents)),
    /// not the run.
    pub context_tokens: Option<usize>,
}

/// The default of [`GenerateConfig::max_tokens`]: enough for a few questions with their
/// excerpts and answers.
pub const DEFAULT_MAX_TOKENS: u32 = 2048;

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
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            context_tokens: None,
        }
    }
}

impl GenerateConfig {
    /// Checks that the settings make sense together.
    pub fn validate(&self) -> Result<()> {
        let bad = |setting: &str, value: &dyn std::fmt::Display, expected: String| {
            Err(SettingError::new("generation", setting, value, expected).into())
        };
        if self.window_chars < 100 {
            return bad(
                "window_chars",
                &self.window_chars,
                "must be at least 100 (characters of a window)".into(),
            );
        }
        if self.window_overlap * 2 > self.window_chars {
            return bad(
                "window_overlap",
                &self.window_overlap,
                format!(
                    "must be at most half of window_chars ({})",
                    self.window_chars
                ),
            );
        }
        if self.min_excerpt_chars > self.max_excerpt_chars {
            return bad(
                "min_excerpt_chars",
                &self.min_excerpt_chars,
                format!(
                    "must be at most max_excerpt_chars ({})",
                    self.max_excerpt_chars
                ),
            );
        }
        if !(0.0..=1.0).contains(&self.fuzzy_threshold) {
            return bad(
                "fuzzy_threshold",
                &self.fuzzy_threshold,
                "must be in [0, 1]".into(),
            );
        }
        if let Some(t) = self.dedup_threshold {
            if !(-1.0..=1.0).contains(&t) {
                return bad("dedup_threshold", &t, "must be in [-1, 1]".into());
            }
        }
        if let Some(t) = self.temperature {
            // NaN would be sent as JSON `null`, silently keeping the server's default.
            if !t.is_finite() || !(0.0..=2.0).contains(&t) {
                return bad("temperature", &t, "must be in [0, 2]".into());
            }
        }
        if let Some(mix) = &self.difficulty_mix {
            check_mix(mix)?;
        }
        if self.max_tokens == Some(0) {
            return bad(
                "max_tokens",
                &0,
                "must be at least 1 (the model could not answer)".into(),
            );
        }
        if self.context_tokens == Some(0) {
            return bad("context_tokens", &0, "must be at least 1".into());
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

    /// A request with the run's model, temperature and `max_tokens`.
    pub(crate) fn request(&self, messages: Vec<ChatMessage>) -> ChatRequest {
        let mut r = ChatRequest::new(messages);
        r.model = self.model.clone();
        r.temperature = self.temperature;
        r.max_tokens = self.max_tokens;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            (
                GenerateConfig {
                    temperature: Some(f32::NAN),
                    ..ok.clone()
                },
                "temperature must be in [0, 2], got NaN",
            ),
            (
                GenerateConfig {
                    temperature: Some(2.5),
                    ..ok.clone()
                },
                "temperature must be in [0, 2], got 2.5",
            ),
            (
                GenerateConfig {
                    difficulty_mix: Some(BTreeMap::from([(Difficulty::Factual, 0.5)])),
                    ..ok.clone()
                },
                "must sum to 1, got factual=0.5 = 0.5",
            ),
        ];
        for (c, name) in cases {
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        }
    }
}
