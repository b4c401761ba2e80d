//! Token-level generation: questions with verbatim excerpts, located as character spans.

use super::filters;
use super::fit::{Fit, Sent};
use super::{
    ask_json, base_metadata, example_id, read_difficulty, read_reference, render_examples,
    share_questions, Difficulty, DocumentBatch, Dropped, GenerateConfig, SplitMix,
};
use crate::corpus::{Corpus, DocId, Document};
use crate::dataset::Example;
use crate::error::Result;
use crate::level::TokenLevel;
use crate::llm::{ChatMessage, LlmClient, TokenUsage};
use crate::locate::{Locator, MatchKind};
use crate::span::CharSpan;
use serde_json::Value;

/// Generates token-level examples: per document, the model writes questions and copies the
/// passages that answer them; each passage is located in the document
/// ([`locate`](crate::locate)) and becomes a character span whose recorded text is the corpus
/// text at that span.
///
/// A document longer than `window_chars` is shown in overlapping windows, its questions shared
/// among them; spans found in a window are mapped back to document offsets. A question is
/// dropped (and counted in [`Dropped`]) when any of its excerpts cannot be located, or is
/// shorter than `min_excerpt_chars` or longer than `max_excerpt_chars`.
///
/// ```no_run
/// # async fn run(client: impl rag_eval::llm::LlmClient, corpus: rag_eval::corpus::Corpus) -> rag_eval::Result<()> {
/// use rag_eval::synth::{Dropped, GenerateConfig, TokenLevelDataGenerator};
/// let generator = TokenLevelDataGenerator::new(client, GenerateConfig::default());
/// let (mut rows, mut dropped) = (Vec::new(), Dropped::default());
/// for doc in corpus.documents() {
///     let batch = generator.generate_document(&corpus, doc, rows.len() + 1).await?;
///     dropped += batch.dropped;
///     rows.extend(batch.examples);
/// }
/// generator.finish(&mut rows, &mut dropped);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TokenLevelDataGenerator<C: LlmClient> {
    client: C,
    config: GenerateConfig,
    fit: Fit,
}

/// One window of one document shown to the model.
struct View<'a> {
    doc: &'a Document,
    /// Char offset of the window in its document.
    start: usize,
    end: usize,
    locator: Locator<'a>,
}

impl<'a> View<'a> {
    fn new(doc: &'a Document, start: usize, end: usize) -> Self {
        let text = doc.slice(start, end).unwrap_or_default();
        View {
            doc,
            start,
            end,
            locator: Locator::new(text),
        }
    }

    fn text(&self) -> &'a str {
        self.locator.text()
    }

    fn heading(&self) -> String {
        let len = self.doc.char_len();
        if self.start == 0 && self.end == len {
            format!("Document `{}`", self.doc.id())
        } else {
            format!(
                "Document `{}` (characters {}–{} of {len})",
                self.doc.id(),
                self.start,
                self.end
            )
        }
    }
}

/// A question that passed the per-document checks, before ids are given.
struct Candidate {
    query: String,
    spans: Vec<CharSpan>,
    matches: Vec<MatchKind>,
    difficulty: Option<Difficulty>,
    cross_document: bool,
    /// The model's short answer: one reference answer, or none when it gave none.
    reference_answers: Vec<String>,
}

/// What a document's calls accumulate.
#[derive(Default)]
struct Acc {
    candidates: Vec<Candidate>,
    dropped: Dropped,
    usage: TokenUsage,
    calls: usize,
    /// The last request sent.
    sent: Sent,
}

impl<C: LlmClient> TokenLevelDataGenerator<C> {
    /// A generator asking `client`, with `config`.
    pub fn new(client: C, config: GenerateConfig) -> Self {
        TokenLevelDataGenerator {
            fit: Fit::new(&config),
            client,
            config,
        }
    }

    /// The settings.
    pub fn config(&self) -> &GenerateConfig {
        &self.config
    }

    /// The model recorded in metadata: the configured one, else the client's name.
    pub fn model_name(&self) -> String {
        self.config
            .model
            .clone()
            .unwrap_or_else(|| self.client.name())
    }

    /// Asks for questions about `doc` (a document of `corpus`, which supplies the partner of
    /// cross-document questions) and returns the kept ones with ids `q{first_id:04}`,
    /// `q{first_id+1:04}`, …, in the order the model wrote them. Every question the model
    /// wrote is checked, also beyond the number asked for; a blank document costs no call.
    ///
    /// A request the server refuses as longer than the model's context makes the windows
    /// shorter (for this and every later document; see [`GenerateConfig::context_tokens`]) and
    /// the document is asked about again; a document that fits in no window is left out whole
    /// ([`Dropped::documents`], with the reason in [`DocumentBatch::dropped_reason`]).
    ///
    /// Errors: an invalid configuration, or a call the client could not complete (after its
    /// own retries). Answers that are not the JSON asked for are retried once with a reminder
    /// and then counted, not errors.
    pub async fn generate_document(
        &self,
        corpus: &Corpus,
        doc: &Document,
        first_id: usize,
    ) -> Result<DocumentBatch<TokenLevel>> {
        self.config.validate()?;
        let mut acc = Acc::default();
        if doc.content().trim().is_empty() {
            // Nothing to ask about; a call would only invite invented questions.
            return Ok(DocumentBatch {
                doc_id: doc.id().clone(),
                examples: Vec::new(),
                dropped: acc.dropped,
                usage: acc.usage,
                calls: 0,
                dropped_reason: None,
            });
        }
        let mut window = self.fit.window();
        loop {
            match self
                .in_windows(corpus, doc, first_id, window, &mut acc)
                .await
            {
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

    /// [`TokenLevelDataGenerator::generate_document`] with windows of `window` characters.
    async fn in_windows(
        &self,
        corpus: &Corpus,
        doc: &Document,
        first_id: usize,
        window: usize,
        acc: &mut Acc,
    ) -> Result<DocumentBatch<TokenLevel>> {
        let cfg = &self.config;
        let mut rng = SplitMix::keyed(cfg.seed, doc.id().as_str());
        let windows = windows(doc, window, cfg.window_overlap);
        let shares = share_questions(cfg.queries_per_doc, windows.len(), &mut rng);
        for (&(start, end), &n) in windows.iter().zip(&shares) {
            if n == 0 {
                continue;
            }
            let views = [View::new(doc, start, end)];
            self.ask(&views, n, false, acc).await?;
        }
        if cfg.cross_document && cfg.cross_document_queries > 0 {
            if let Some(partner) = partner_of(corpus, doc, &mut rng) {
                let own = windows[rng.below(windows.len())];
                let theirs = self::windows(partner, window, cfg.window_overlap);
                let theirs = theirs[rng.below(theirs.len())];
                let views = [
                    View::new(doc, own.0, own.1),
                    View::new(partner, theirs.0, theirs.1),
                ];
                self.ask(&views, cfg.cross_document_queries, true, acc)
                    .await?;
            }
        }
        let mut examples = Vec::with_capacity(acc.candidates.len());
        let model = self.model_name();
        let candidates = std::mem::take(&mut acc.candidates);
        for c in candidates {
            if cfg.check_answerable {
                let texts: Vec<String> = c
                    .spans
                    .iter()
                    .filter_map(|s| {
                        corpus
                            .get(s.doc.as_str())
                            .and_then(|d| d.slice(s.start, s.end))
                            .map(str::to_owned)
                    })
                    .collect();
                let verdict = filters::answerable_without_document(
                    &self.client,
                    cfg,
                    &c.query,
                    &texts,
                    &mut acc.usage,
                    &mut acc.calls,
                )
                .await?;
                if verdict {
                    acc.dropped.unanswerable += 1;
                    continue;
                }
            }
            let docs: Vec<DocId> = c.spans.iter().map(|s| s.doc.clone()).collect();
            let mut metadata = base_metadata(
                c.difficulty,
                &docs,
                &model,
                &cfg.prompts.token.version,
                c.cross_document,
            );
            metadata.insert(
                "excerpt_match".into(),
                c.matches
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .into(),
            );
            if cfg.check_answerable {
                metadata.insert(
                    "answerable_prompt_version".into(),
                    cfg.prompts.answerable.version.clone().into(),
                );
            }
            let span_texts = c
                .spans
                .iter()
                .map(|s| {
                    corpus
                        .get(s.doc.as_str())
                        .and_then(|d| d.slice(s.start, s.end))
                        .map(str::to_owned)
                })
                .collect();
            examples.push(Example {
                id: example_id(first_id + examples.len()),
                query: c.query,
                truth: c.spans,
                span_texts,
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
    pub fn finish(&self, examples: &mut Vec<Example<TokenLevel>>, dropped: &mut Dropped) {
        filters::finish(&self.config, examples, dropped);
    }

    /// One generation call over `views` asking for `n` questions.
    async fn ask(&self, views: &[View<'_>], n: usize, cross: bool, acc: &mut Acc) -> Result<()> {
        let cfg = &self.config;
        let system = cfg.prompts.token.render(&[
            ("questions", n.to_string()),
            ("min_chars", cfg.min_excerpt_chars.to_string()),
            ("max_chars", cfg.max_excerpt_chars.to_string()),
            ("examples", render_examples(&cfg.examples(), false)),
        ]);
        let mut user = String::new();
        for v in views {
            user.push_str(&format!(
                "{}:\n<document>\n{}\n</document>\n\n",
                v.heading(),
                v.text()
            ));
        }
        user.push_str(&if cross {
            format!(
                "Write {n} question{} that each need both documents.",
                plural(n)
            )
        } else {
            format!("Write {n} question{} about this document.", plural(n))
        });
        acc.sent = Sent {
            chars: system.chars().count() + user.chars().count(),
            document_chars: views.iter().map(|v| v.end - v.start).sum(),
        };
        let mut request = cfg
            .request(vec![ChatMessage::system(system), ChatMessage::user(user)])
            .with_json_schema("questions", schema());
        // The budget fitted to the model's context once it is known.
        request.max_tokens = self.fit.max_tokens(cfg);
        let what = format!("questions for `{}`", views[0].doc.id());
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
            self.check(q, views, cross, acc);
        }
        Ok(())
    }

    /// Locates and checks one question of an answer.
    fn check(&self, q: &Value, views: &[View<'_>], cross: bool, acc: &mut Acc) {
        let cfg = &self.config;
        let query = q
            .get("question")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim();
        let excerpts: Vec<&str> = match q.get("excerpts").or_else(|| q.get("excerpt")) {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            Some(Value::String(s)) => vec![s.as_str()],
            _ => Vec::new(),
        };
        let excerpts: Vec<&str> = excerpts
            .into_iter()
            .filter(|e| !e.trim().is_empty())
            .collect();
        if query.is_empty() || excerpts.is_empty() {
            acc.dropped.empty += 1;
            return;
        }
        let mut found: Vec<(CharSpan, MatchKind)> = Vec::new();
        for e in excerpts {
            let hit = views
                .iter()
                .find_map(|v| v.locator.locate(e, cfg.fuzzy_threshold).map(|l| (v, l)));
            let Some((v, l)) = hit else {
                tracing::debug!(doc = %views[0].doc.id(), "excerpt not found: {e:?}");
                acc.dropped.unlocated += 1;
                return;
            };
            let len = l.end - l.start;
            if len < cfg.min_excerpt_chars {
                acc.dropped.too_short += 1;
                return;
            }
            if len > cfg.max_excerpt_chars {
                acc.dropped.too_long += 1;
                return;
            }
            let span = CharSpan::new(v.doc.id().clone(), v.start + l.start, v.start + l.end);
            found.push((span, l.kind));
        }
        let (spans, matches) = merge(found);
        acc.candidates.push(Candidate {
            query: query.to_owned(),
            spans,
            matches,
            difficulty: read_difficulty(q.get("difficulty").and_then(Value::as_str)),
            cross_document: cross,
            reference_answers: read_reference(q).into_iter().collect(),
        });
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Spans in document order with overlapping ones merged (an excerpt quoted twice, or two
/// excerpts sharing text), each with how it was found (the weakest match of a merged group).
fn merge(mut found: Vec<(CharSpan, MatchKind)>) -> (Vec<CharSpan>, Vec<MatchKind>) {
    found.sort_by(|a, b| (&a.0.doc, a.0.start, a.0.end).cmp(&(&b.0.doc, b.0.start, b.0.end)));
    let rank = |k: MatchKind| match k {
        MatchKind::Exact => 0,
        MatchKind::Normalized => 1,
        MatchKind::Fuzzy => 2,
    };
    let mut out: Vec<(CharSpan, MatchKind)> = Vec::new();
    for (s, k) in found {
        match out.last_mut() {
            Some((p, pk)) if p.doc == s.doc && s.start < p.end => {
                p.end = p.end.max(s.end);
                if rank(k) > rank(*pk) {
                    *pk = k;
                }
            }
            _ => out.push((s, k)),
        }
    }
    out.into_iter().unzip()
}

/// The JSON schema of a token-level answer.
fn schema() -> Value {
    super::answer_schema("excerpts")
}

/// The document another one is paired with for cross-document questions; `None` in a
/// one-document corpus.
fn partner_of<'c>(corpus: &'c Corpus, doc: &Document, rng: &mut SplitMix) -> Option<&'c Document> {
    let others: Vec<&Document> = corpus
        .documents()
        .iter()
        .filter(|d| d.id() != doc.id() && d.char_len() > 0)
        .collect();
    (!others.is_empty()).then(|| others[rng.below(others.len())])
}

/// Char ranges covering `doc` in windows of at most `size` chars. A window ends, where it
/// can, at a paragraph break, else a line break, else whitespace, in its last quarter; the
/// next one starts about `overlap` chars earlier, at a word's beginning. Always at least one
/// window (an empty document gives `(0, 0)`).
pub(crate) fn windows(doc: &Document, size: usize, overlap: usize) -> Vec<(usize, usize)> {
    let chars: Vec<char> = doc.content().chars().collect();
    let n = chars.len();
    let size = size.max(1);
    let overlap = overlap.min(size / 2);
    if n <= size {
        return vec![(0, n)];
    }
    let mut out = Vec::new();
    let mut start = 0;
    loop {
        let hard = start + size;
        if hard >= n {
            out.push((start, n));
            break;
        }
        let floor = (hard - size / 4).max(start + 1);
        let cut_after = |pred: &dyn Fn(usize) -> bool| (floor..=hard).rev().find(|&e| pred(e));
        let end = cut_after(&|e| e >= 2 && chars[e - 1] == '\n' && chars[e - 2] == '\n')
            .or_else(|| cut_after(&|e| chars[e - 1] == '\n'))
            .or_else(|| cut_after(&|e| chars[e - 1].is_whitespace()))
            .unwrap_or(hard);
        out.push((start, end));
        let back = end - overlap;
        let next = (back..back + overlap / 2 + 1)
            .find(|&i| i > 0 && i < end && chars[i - 1].is_whitespace())
            .unwrap_or(back);
        start = next.max(start + 1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn windows_prefer_paragraph_breaks() {
        let text = format!(
            "{}\n\n{}\n\n{}",
            "a ".repeat(40),
            "b ".repeat(40),
            "c ".repeat(40)
        );
        let doc = Document::new("d", text);
        let w = windows(&doc, 100, 20);
        assert_eq!(w[0], (0, 82), "cut after the first paragraph break");
        assert!(w[1].0 < 82 && w[1].0 >= 62);
        assert_eq!(w.last().unwrap().1, doc.char_len());
        assert_eq!(windows(&Document::new("e", ""), 100, 10), [(0, 0)]);
    }

    #[test]
    fn overlapping_excerpts_merge_into_one_span() {
        let s = |a, b| CharSpan::new("d", a, b);
        let (spans, kinds) = merge(vec![
            (s(10, 20), MatchKind::Exact),
            (s(0, 5), MatchKind::Exact),
            (s(15, 30), MatchKind::Fuzzy),
            (s(30, 35), MatchKind::Exact),
        ]);
        assert_eq!(spans, [s(0, 5), s(10, 30), s(30, 35)]);
        assert_eq!(
            kinds,
            [MatchKind::Exact, MatchKind::Fuzzy, MatchKind::Exact]
        );
    }

    proptest! {
        #[test]
        fn windows_cover_the_document_in_bounded_overlapping_pieces(
            text in "[a-z \n]{0,3000}", size in 100usize..800, overlap in 0usize..400,
        ) {
            let overlap = overlap.min(size / 2);
            let doc = Document::new("d", text);
            let w = windows(&doc, size, overlap);
            prop_assert_eq!(w[0].0, 0);
            prop_assert_eq!(w.last().unwrap().1, doc.char_len());
            for (a, b) in &w {
                prop_assert!(b - a <= size);
            }
            for p in w.windows(2) {
                prop_assert!(p[1].0 > p[0].0, "{:?}", p);
                prop_assert!(p[1].0 <= p[0].1, "no gap: {:?}", p);
                prop_assert!(p[0].1 - p[1].0 >= overlap / 2, "overlap kept: {:?}", p);
            }
        }
    }
}
