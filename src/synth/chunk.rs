//! Chunk-level generation: questions citing the chunks of a given chunker.

use super::filters;
use super::fit::{Fit, Sent};
use super::{
    ask_json, base_metadata, example_id, read_difficulty, read_reference, render_examples,
    share_questions, Difficulty, DocumentBatch, Dropped, GenerateConfig, SplitMix,
};
use crate::chunk::{ChunkId, PositionAwareChunk};
use crate::chunker::PositionAwareChunker;
use crate::corpus::{Corpus, DocId, Document};
use crate::dataset::Example;
use crate::error::Result;
use crate::level::ChunkLevel;
use crate::llm::{ChatMessage, LlmClient, TokenUsage};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Generates chunk-level examples: each document is chunked with the given chunker, the chunks
/// are shown to the model with their [`ChunkId`]s, and the model writes questions citing the
/// chunks that answer them.
///
/// A cited id that was not shown is removed and counted (`unknown_chunk_ids`); a question left
/// with no id is dropped (`unlocated`). The ground truth holds only for this chunker: every row
/// records its spec as `chunker`, and an evaluation must chunk the same way.
///
/// A document whose chunks add up to more than `window_chars` is shown a run of chunks at a
/// time, its questions shared among the runs; a request the server refuses as longer than the
/// model's context makes the runs shorter, as at token level
/// ([`TokenLevelDataGenerator::generate_document`](super::TokenLevelDataGenerator::generate_document)).
pub struct ChunkLevelDataGenerator<C: LlmClient> {
    client: C,
    chunker: Arc<dyn PositionAwareChunker>,
    config: GenerateConfig,
    fit: Fit,
}

impl<C: LlmClient + std::fmt::Debug> std::fmt::Debug for ChunkLevelDataGenerator<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkLevelDataGenerator")
            .field("client", &self.client)
            .field("chunker", &self.chunker.name())
            .field("config", &self.config)
            .finish()
    }
}

/// A question that passed the per-document checks, before ids are given.
struct Candidate {
    query: String,
    ids: Vec<ChunkId>,
    docs: Vec<DocId>,
    texts: Vec<String>,
    difficulty: Option<Difficulty>,
    cross_document: bool,
    /// The model's short answer: one reference answer, or none when it gave none.
    reference_answers: Vec<String>,
}

#[derive(Default)]
struct Acc {
    candidates: Vec<Candidate>,
    dropped: Dropped,
    usage: TokenUsage,
    calls: usize,
    /// The last request sent.
    sent: Sent,
}

/// A run of chunks of one document shown in one call.
type Run<'a> = &'a [PositionAwareChunk];

impl<C: LlmClient> ChunkLevelDataGenerator<C> {
    /// A generator asking `client` about the chunks `chunker` makes, with `config`.
    pub fn new(client: C, chunker: Arc<dyn PositionAwareChunker>, config: GenerateConfig) -> Self {
        ChunkLevelDataGenerator {
            fit: Fit::new(&config),
            client,
            chunker,
            config,
        }
    }

    /// The settings.
    pub fn config(&self) -> &GenerateConfig {
        &self.config
    }

    /// The chunker whose ids the rows cite.
    pub fn chunker(&self) -> &Arc<dyn PositionAwareChunker> {
        &self.chunker
    }

    /// The model recorded in metadata: the configured one, else the client's name.
    pub fn model_name(&self) -> String {
        self.config
            .model
            .clone()
            .unwrap_or_else(|| self.client.name())
    }

    /// Asks for questions about `doc`'s chunks (`corpus` supplies the partner of
    /// cross-document questions) and returns the kept ones with ids `q{first_id:04}`, … in the
    /// order the model wrote them. A document without chunks gives an empty batch and no call.
    pub async fn generate_document(
        &self,
        corpus: &Corpus,
        doc: &Document,
        first_id: usize,
    ) -> Result<DocumentBatch<ChunkLevel>> {
        self.config.validate()?;
        let mut acc = Acc::default();
        let mut window = self.fit.window();
        loop {
            match self.in_runs(corpus, doc, first_id, window, &mut acc).await {
                Ok(batch) => return Ok(batch),
                Err(e) => {
                    // What the document gave so far is asked for again; what it cost stays.
                    acc.candidates.clear();
                    acc.dropped = Dropped::default();
                    let cost = (doc, acc.usage, acc.calls);
                    match self
                        .fit
                        .retry_or_leave_out(e, window, acc.sent, &self.config, cost)?
                    {
                        Ok(smaller) => window = smaller,
                        Err(left_out) => return Ok(left_out),
                    }
                }
            }
        }
    }

    /// [`ChunkLevelDataGenerator::generate_document`] with runs of chunks of at most `window`
    /// characters.
    async fn in_runs(
        &self,
        corpus: &Corpus,
        doc: &Document,
        first_id: usize,
        window: usize,
        acc: &mut Acc,
    ) -> Result<DocumentBatch<ChunkLevel>> {
        let cfg = &self.config;
        let mut rng = SplitMix::keyed(cfg.seed, doc.id().as_str());
        let chunks = self.chunker.chunk_with_positions(doc);
        let runs = runs(&chunks, window);
        let shares = share_questions(cfg.queries_per_doc, runs.len(), &mut rng);
        for (run, &n) in runs.iter().zip(&shares) {
            if n > 0 {
                self.ask(&[run], n, false, acc).await?;
            }
        }
        if cfg.cross_document && cfg.cross_document_queries > 0 && !runs.is_empty() {
            let others: Vec<&Document> = corpus
                .documents()
                .iter()
                .filter(|d| d.id() != doc.id())
                .collect();
            if !others.is_empty() {
                let partner = others[rng.below(others.len())];
                let own = runs[rng.below(runs.len())];
                let partner_chunks = self.chunker.chunk_with_positions(partner);
                let partner_runs = self::runs(&partner_chunks, window);
                if !partner_runs.is_empty() {
                    let theirs = partner_runs[rng.below(partner_runs.len())];
                    self.ask(&[own, theirs], cfg.cross_document_queries, true, acc)
                        .await?;
                }
            }
        }
        let model = self.model_name();
        let chunker = self.chunker.name();
        let mut examples = Vec::with_capacity(acc.candidates.len());
        for c in std::mem::take(&mut acc.candidates) {
            if cfg.check_answerable
                && filters::answerable_without_document(
                    &self.client,
                    cfg,
                    &c.query,
                    &c.texts,
                    &mut acc.usage,
                    &mut acc.calls,
                )
                .await?
            {
                acc.dropped.unanswerable += 1;
                continue;
            }
            let mut metadata = base_metadata(
                c.difficulty,
                &c.docs,
                &model,
                &cfg.prompts.chunk.version,
                c.cross_document,
            );
            metadata.insert("chunker".into(), chunker.clone().into());
            if cfg.check_answerable {
                metadata.insert(
                    "answerable_prompt_version".into(),
                    cfg.prompts.answerable.version.clone().into(),
                );
            }
            examples.push(Example {
                id: example_id(first_id + examples.len()),
                query: c.query,
                truth: c.ids,
                span_texts: Vec::new(),
                metadata,
                reference_answers: c.reference_answers,
            });
        }
        Ok(DocumentBatch {
            doc_id: doc.id().clone(),
            examples,
            dropped: acc.dropped,
            usage: acc.usage,
            calls: acc.calls,
            dropped_reason: None,
        })
    }

    /// The corpus-wide filters, applied once all documents are done: near-duplicate questions
    /// (the later one goes), then the difficulty mix. Counts go into `dropped`.
    pub fn finish(&self, examples: &mut Vec<Example<ChunkLevel>>, dropped: &mut Dropped) {
        filters::finish(&self.config, examples, dropped);
    }

    async fn ask(&self, runs: &[Run<'_>], n: usize, cross: bool, acc: &mut Acc) -> Result<()> {
        let cfg = &self.config;
        let system = cfg.prompts.chunk.render(&[
            ("questions", n.to_string()),
            ("examples", render_examples(&cfg.examples(), true)),
        ]);
        // Ids shown in this call, with the document and text of each.
        let mut shown: HashMap<ChunkId, (DocId, &str)> = HashMap::new();
        let mut user = String::new();
        for run in runs {
            let Some(first) = run.first() else { continue };
            user.push_str(&format!("Chunks of document `{}`:\n\n", first.doc_id()));
            for c in *run {
                let id = ChunkId::from_content(&c.content);
                user.push_str(&format!("[{id}]\n{}\n\n", c.content));
                shown
                    .entry(id)
                    .or_insert((c.doc_id().clone(), c.content.as_str()));
            }
        }
        user.push_str(&if n == 1 && cross {
            "Write 1 question that needs both documents.".to_owned()
        } else if cross {
            format!("Write {n} questions that each need both documents.")
        } else if n == 1 {
            "Write 1 question about these chunks.".to_owned()
        } else {
            format!("Write {n} questions about these chunks.")
        });
        acc.sent = Sent {
            chars: system.chars().count() + user.chars().count(),
            document_chars: shown.values().map(|(_, text)| text.chars().count()).sum(),
        };
        let mut request = cfg
            .request(vec![ChatMessage::system(system), ChatMessage::user(user)])
            .with_json_schema("questions", schema());
        // The budget fitted to the model's context once it is known.
        request.max_tokens = self.fit.max_tokens(cfg);
        let what = match runs.first().and_then(|r| r.first()) {
            Some(c) => format!("questions for `{}`", c.doc_id()),
            None => "questions".to_owned(),
        };
        let Some(questions) =
            ask_json::<C, Value>(&self.client, request, &mut acc.usage, &mut acc.calls, &what)
                .await?
        else {
            acc.dropped.invalid_json += 1;
            return Ok(());
        };
        if questions.is_empty() {
            acc.dropped.empty += 1;
        }
        for q in &questions {
            check(q, &shown, cross, acc);
        }
        Ok(())
    }
}

/// Checks one question of an answer against the ids shown.
fn check(q: &Value, shown: &HashMap<ChunkId, (DocId, &str)>, cross: bool, acc: &mut Acc) {
    let query = q
        .get("question")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim();
    let cited: Vec<&str> = match q.get("chunk_ids").or_else(|| q.get("chunk_id")) {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        Some(Value::String(s)) => vec![s.as_str()],
        _ => Vec::new(),
    };
    let cited: Vec<ChunkId> = cited.into_iter().filter_map(read_id).collect();
    if query.is_empty() || cited.is_empty() {
        acc.dropped.empty += 1;
        return;
    }
    let mut ids: Vec<ChunkId> = Vec::new();
    let (mut docs, mut texts) = (Vec::new(), Vec::new());
    for id in cited {
        match shown.get(&id) {
            Some((doc, text)) => {
                if !ids.contains(&id) {
                    docs.push(doc.clone());
                    texts.push((*text).to_owned());
                    ids.push(id);
                }
            }
            None => {
                tracing::debug!("cited chunk id `{id}` was not shown; removing it");
                acc.dropped.unknown_chunk_ids += 1;
            }
        }
    }
    if ids.is_empty() {
        acc.dropped.unlocated += 1;
        return;
    }
    acc.candidates.push(Candidate {
        query: query.to_owned(),
        ids,
        docs,
        texts,
        difficulty: read_difficulty(q.get("difficulty").and_then(Value::as_str)),
        cross_document: cross,
        reference_answers: read_reference(q).into_iter().collect(),
    });
}

/// A cited id as the model wrote it: surrounding brackets, quotes and whitespace are ignored,
/// and twelve bare hex digits get the `chunk_` prefix. `None` when nothing is left.
fn read_id(raw: &str) -> Option<ChunkId> {
    let t = raw
        .trim()
        .trim_matches(|c: char| c == '[' || c == ']' || c == '"' || c == '`' || c == '\'')
        .trim();
    if t.is_empty() {
        return None;
    }
    if t.len() == 12 && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Some(ChunkId::from_raw(format!("{}{t}", ChunkId::PREFIX)));
    }
    Some(ChunkId::from_raw(t))
}

/// Consecutive chunks whose text adds up to at most `budget` chars (a longer chunk alone).
fn runs(chunks: &[PositionAwareChunk], budget: usize) -> Vec<Run<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut len = 0;
    for (i, c) in chunks.iter().enumerate() {
        let l = c.end() - c.start();
        if i > start && len + l > budget {
            out.push(&chunks[start..i]);
            start = i;
            len = 0;
        }
        len += l;
    }
    if start < chunks.len() {
        out.push(&chunks[start..]);
    }
    out
}

/// The JSON schema of a chunk-level answer.
fn schema() -> Value {
    super::answer_schema("chunk_ids")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cited_ids_are_read_leniently() {
        let id = ChunkId::from_content("hello");
        for raw in [
            "chunk_2cf24dba5fb0",
            "[chunk_2cf24dba5fb0]",
            " `chunk_2cf24dba5fb0` ",
            "2cf24dba5fb0",
        ] {
            assert_eq!(read_id(raw), Some(id.clone()), "{raw}");
        }
        assert_eq!(read_id(" [] "), None);
        assert_eq!(read_id("chunk_zz").unwrap().as_str(), "chunk_zz");
    }

    #[test]
    fn runs_respect_the_budget_and_keep_every_chunk() {
        let chunks: Vec<PositionAwareChunk> = [30, 40, 50, 200, 10, 10]
            .iter()
            .scan(0, |at, &l| {
                let c = PositionAwareChunk::new("d", *at, *at + l, "x".repeat(l));
                *at += l;
                Some(c)
            })
            .collect();
        let r = runs(&chunks, 100);
        let sizes: Vec<usize> = r.iter().map(|r| r.len()).collect();
        assert_eq!(sizes, [2, 1, 1, 2]);
        assert!(runs(&[], 100).is_empty());
    }
}
