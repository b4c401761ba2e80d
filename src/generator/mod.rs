//! The generator under test: "question + retrieved chunks → answer".
//!
//! [`Generator`] is the trait a RAG system's answering step implements; [`LlmGenerator`] is
//! the built-in one over any [`LlmClient`] (an `OpenAiChat`, or one wrapped in a `CachedLlm`
//! so that a recorded run replays). Its prompt is a versioned file
//! (`src/generator/prompts/answer.md`, a [`PromptTemplate`]), replaceable with
//! [`LlmGenerator::with_prompt`].
//! The answer comes back as a [`RagAnswer`] holding the chunks it was given, each with its
//! position-aware id and character offsets, so every claim a judge checks can be traced back
//! to a place in a document.
//!
//! ```
//! use rag_eval::chunk::{PositionAwareChunk, RetrievedChunk};
//! use rag_eval::generator::{Generator, LlmGenerator};
//! use rag_eval::llm::{ChatRequest, ChatResponse, LlmClient, TokenUsage};
//!
//! struct Parrot;
//! #[async_trait::async_trait]
//! impl LlmClient for Parrot {
//!     fn name(&self) -> String { "parrot".into() }
//!     async fn complete(&self, _: &ChatRequest) -> rag_eval::Result<ChatResponse> {
//!         Ok(ChatResponse { content: " Flags live in memory [1]. ".into(),
//!             finish_reason: Some("stop".into()),
//!             usage: TokenUsage { prompt_tokens: 40, completion_tokens: 6 }, model: "p".into(),
//!             logprobs: None })
//!     }
//! }
//!
//! let chunk = RetrievedChunk::new(PositionAwareChunk::new("guide.md", 10, 34, "Flags are kept in memory"), 0.9);
//! let generator = LlmGenerator::new(Parrot);
//! let answer = pollster::block_on(generator.generate("Where are flags kept?", &[chunk]))?;
//! assert_eq!(answer.answer, "Flags live in memory [1].");
//! assert_eq!(answer.contexts[0].chunk.span.start, 10);
//! assert_eq!(generator.usage().total(), 46);
//! # Ok::<(), rag_eval::Error>(())
//! ```

/// The prompt template type lives with the LLM clients it is written for; it is named here
/// too, where the generator's prompt is set.
pub use crate::llm::PromptTemplate;

use crate::chunk::RetrievedChunk;
use crate::error::Result;
use crate::llm::{ChatMessage, ChatRequest, LlmClient, TokenUsage};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// An answer and the retrieved chunks it was generated from (with their ids and offsets).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RagAnswer {
    /// The answer text.
    pub answer: String,
    /// The chunks the answer was generated from, in the order they were given.
    pub contexts: Vec<RetrievedChunk>,
}

/// Turns a question and the chunks retrieved for it into an answer.
#[async_trait::async_trait]
pub trait Generator: Send + Sync {
    /// Model and prompt, for reports and run records.
    fn name(&self) -> String;
    /// Answers `question` from `contexts`.
    async fn generate(&self, question: &str, contexts: &[RetrievedChunk]) -> Result<RagAnswer>;
}

/// The built-in answer prompt.
const ANSWER_PROMPT: &str = include_str!("prompts/answer.md");

/// Placeholders the answer prompt may use.
pub const ANSWER_PLACEHOLDERS: &[&str] = &["question", "contexts"];

/// A [`Generator`] over any chat model: the prompt rendered with the question and the numbered
/// chunks, sent as one user message.
pub struct LlmGenerator<C> {
    llm: C,
    prompt: PromptTemplate,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
}

impl<C: LlmClient> LlmGenerator<C> {
    /// A generator with the built-in prompt, temperature 0 and answers of at most 512 tokens.
    pub fn new(llm: C) -> Self {
        LlmGenerator {
            llm,
            prompt: Self::builtin_prompt(),
            temperature: Some(0.0),
            max_tokens: Some(512),
            prompt_tokens: AtomicU64::new(0),
            completion_tokens: AtomicU64::new(0),
        }
    }

    /// The prompt shipped with the library (`src/generator/prompts/answer.md`).
    pub fn builtin_prompt() -> PromptTemplate {
        PromptTemplate::builtin(ANSWER_PROMPT, "answer.md", ANSWER_PLACEHOLDERS)
    }

    /// Uses `prompt` instead (placeholders: `{{question}}`, `{{contexts}}`), e.g. one read with
    /// `PromptTemplate::from_file(path, ANSWER_PLACEHOLDERS)`.
    pub fn with_prompt(mut self, prompt: PromptTemplate) -> Self {
        self.prompt = prompt;
        self
    }

    /// Samples at `temperature` (the server's default with `None`).
    pub fn with_temperature(mut self, temperature: Option<f32>) -> Self {
        self.temperature = temperature;
        self
    }

    /// Bounds the answer's length in tokens (`None`: the server's limit).
    pub fn with_max_tokens(mut self, max_tokens: Option<u32>) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The prompt in use.
    pub fn prompt(&self) -> &PromptTemplate {
        &self.prompt
    }

    /// Tokens used by every answer so far (recorded usage for answers a cache replayed).
    pub fn usage(&self) -> TokenUsage {
        TokenUsage {
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            completion_tokens: self.completion_tokens.load(Ordering::Relaxed),
        }
    }

    /// The request for `question` over `contexts`.
    pub fn request(&self, question: &str, contexts: &[RetrievedChunk]) -> ChatRequest {
        let text = self.prompt.render(&[
            ("question", question),
            ("contexts", &numbered_contexts(contexts)),
        ]);
        let mut request = ChatRequest::new(vec![ChatMessage::user(text)])
            .with_prompt_version(format!("answer/{}", self.prompt.version));
        request.temperature = self.temperature;
        request.max_tokens = self.max_tokens;
        request
    }
}

#[async_trait::async_trait]
impl<C: LlmClient> Generator for LlmGenerator<C> {
    fn name(&self) -> String {
        format!(
            "llm({},prompt=answer/{})",
            self.llm.name(),
            self.prompt.version
        )
    }

    async fn generate(&self, question: &str, contexts: &[RetrievedChunk]) -> Result<RagAnswer> {
        let response = self.llm.complete(&self.request(question, contexts)).await?;
        crate::llm::add_tokens_to(&self.prompt_tokens, response.usage.prompt_tokens);
        crate::llm::add_tokens_to(&self.completion_tokens, response.usage.completion_tokens);
        Ok(RagAnswer {
            answer: response.content.trim().to_owned(),
            contexts: contexts.to_vec(),
        })
    }
}

/// The chunks as the prompts show them: `[n] (doc, characters start..end)` then the text,
/// numbered from 1 in the order given. Judges quote context numbers back in this numbering.
pub fn numbered_contexts(contexts: &[RetrievedChunk]) -> String {
    let mut out = String::new();
    for (i, c) in contexts.iter().enumerate() {
        let s = &c.chunk.span;
        out.push_str(&format!(
            "[{}] ({}, characters {}..{})\n{}\n\n",
            i + 1,
            s.doc,
            s.start,
            s.end,
            c.chunk.content.trim_end()
        ));
    }
    if out.is_empty() {
        out.push_str("(no passages)\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::PositionAwareChunk;

    #[test]
    fn the_request_numbers_the_chunks_and_carries_the_prompt_version() {
        let chunks = [
            RetrievedChunk::new(PositionAwareChunk::new("a.md", 0, 5, "alpha"), 1.0),
            RetrievedChunk::new(PositionAwareChunk::new("b.md", 7, 11, "beta"), 0.5),
        ];
        struct Never;
        #[async_trait::async_trait]
        impl LlmClient for Never {
            fn name(&self) -> String {
                "never".into()
            }
            async fn complete(&self, _: &ChatRequest) -> Result<crate::llm::ChatResponse> {
                unreachable!("not called")
            }
        }
        let g = LlmGenerator::new(Never);
        let r = g.request("Why?", &chunks);
        assert_eq!(r.prompt_version.as_deref(), Some("answer/1"));
        assert_eq!(r.temperature, Some(0.0));
        let text = &r.messages[0].content;
        assert!(text
            .contains("[1] (a.md, characters 0..5)\nalpha\n\n[2] (b.md, characters 7..11)\nbeta"));
        assert!(text.contains("Question: Why?"));
        assert_eq!(g.name(), "llm(never,prompt=answer/1)");
        let custom =
            PromptTemplate::parse("version: 9\nQ={{question}}", "p", ANSWER_PLACEHOLDERS).unwrap();
        let r = LlmGenerator::new(Never)
            .with_prompt(custom)
            .request("x", &[]);
        assert_eq!(r.messages[0].content, "Q=x");
        assert_eq!(r.prompt_version.as_deref(), Some("answer/9"));
    }
}
