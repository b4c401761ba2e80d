//! What one document gives: its rows, their ids and metadata, what was dropped and what it cost.

use super::{Difficulty, Dropped};
use crate::corpus::{DocId, Metadata};
use crate::dataset::Example;
use crate::level::Level;
use crate::llm::TokenUsage;

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
    /// Why the document gave nothing, when it was left out whole (counted in
    /// [`Dropped::documents`]).
    pub dropped_reason: Option<String>,
}

/// The dataset id of the `n`-th question: `q0001`, …
pub fn example_id(n: usize) -> String {
    format!("q{n:04}")
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
