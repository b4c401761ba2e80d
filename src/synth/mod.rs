//! Synthetic datasets: questions and their ground truth written by a language model from the
//! corpus itself.
//!
//! - [`TokenLevelDataGenerator`] asks, per document, for questions with the verbatim excerpts
//!   that answer them, then finds each excerpt in the document ([`locate`](crate::locate)): the ground truth is
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
//! use rag_eval::synth::{Difficulty, GenerateConfig, Prompts};
//! let config = GenerateConfig {
//!     queries_per_doc: 5,
//!     difficulty_mix: Some(rag_eval::synth::parse_mix("factual=0.5,inferential=0.5").unwrap()),
//!     ..GenerateConfig::default()
//! };
//! assert!(config.validate().is_ok());
//! assert_eq!(Prompts::builtin().token.version, "2");
//! assert_eq!("paraphrased".parse::<Difficulty>().unwrap(), Difficulty::Paraphrased);
//! ```
//!
//! # Prompts
//!
//! The built-in prompts live in `src/synth/prompts/{token,chunk,answerable}.md`; each starts
//! with a `version: N` line, recorded as `prompt_version` in every row's metadata. They are the
//! system messages; the documents go in the user message. A prompt file given to
//! [`Prompts::from_file`] starts with its own `version:` line and holds one or more sections,
//! each introduced by a line `=== token ===`, `=== chunk ===` or `=== answerable ===`; sections
//! it leaves out keep the built-in text. Templates may use these placeholders:
//! `{{questions}}` (how many questions this call asks for), `{{min_chars}}` and `{{max_chars}}`
//! (excerpt lengths, token prompt), `{{examples}}` (the few-shot examples).
//!
//! # Reference answers
//!
//! With each question the model writes a short answer from the text it was shown; it becomes
//! the row's `outputs.reference_answer`. A question whose answer is missing or blank keeps its
//! row without a reference answer (counted as `without_answer` in the run's totals), since its
//! ground truth is still good for retrieval metrics.
//!
//! # Row metadata
//!
//! `difficulty` (`factual`, `analytical`, `inferential`, `paraphrased`), `source_docs` (the
//! documents the ground truth lies in, sorted), `generation_model`, `prompt_version`,
//! `cross_document` (only when true), at token level `excerpt_match` (how each excerpt was
//! found: `exact`, `normalized`, `fuzzy`), at chunk level `chunker` (the chunker's spec).

mod answer;
mod batch;
mod chunk;
mod config;
mod difficulty;
mod dropped;
mod few_shot;
mod filters;
mod fit;
mod prompt;
pub mod resume;
mod rng;
pub mod run;
mod token;

pub use batch::{example_id, DocumentBatch};
pub use chunk::ChunkLevelDataGenerator;
pub use config::{GenerateConfig, DEFAULT_MAX_TOKENS};
pub use difficulty::{parse_mix, Difficulty, MIX_SUM_TOLERANCE};
pub use dropped::Dropped;
pub use few_shot::FewShot;
pub use prompt::Prompts;
pub use token::TokenLevelDataGenerator;

use answer::{
    add_usage, answer_schema, ask_json, parse_answer_value, read_difficulty, read_reference,
};
use batch::base_metadata;
use difficulty::check_mix;
use few_shot::render_examples;
use rng::{share_questions, SplitMix};
