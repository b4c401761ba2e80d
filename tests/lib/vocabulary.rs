//! The metric vocabulary is one list: the registry (`rag_eval::metrics::REGISTRY`). The bars
//! `#[rag_eval]` accepts (checked against it at compile time; the macro crate has no list of
//! its own), the metrics an evaluation reports and the metric table of
//! `docs/reference/metrics.md` must all say the same.

use rag_eval::chunk::{ChunkId, PositionAwareChunk};
use rag_eval::chunker::{PositionAwareChunker, RecursiveCharacterChunker};
use rag_eval::corpus::{Corpus, Document};
use rag_eval::dataset::{self, AnyDataset, Dataset, Example};
use rag_eval::embed::HashingEmbedder;
use rag_eval::eval::{ChunkLevelEvaluation, TokenLevelEvaluation};
use rag_eval::level::LevelKind;
use rag_eval::metrics::{registry, ChunkIndex, Metric, MetricInput, PrecisionOmega, SpanMode};
use rag_eval::prelude::*;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

fn registered() -> BTreeSet<&'static str> {
    registry::REGISTRY.iter().map(|m| m.name).collect()
}

fn read(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The macro crate keeps no list of metrics: the library checks a bar's metric against its
/// registry at compile time (`#[rag_eval]` emits the check). No registered name may appear as a
/// string literal in the macro crate's code (its tests left out).
#[test]
fn the_macro_crate_holds_no_metric_names() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("macros/src");
    let mut read_any = false;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let source = std::fs::read_to_string(&path).unwrap();
        let code = source.split("#[cfg(test)]").next().unwrap();
        // The conversation figures too: the library checks a conversation case's bars.
        #[cfg(feature = "answers")]
        let conversation = rag_eval::conversation::score::AGENT_METRICS.as_slice();
        #[cfg(not(feature = "answers"))]
        let conversation: &[&str] = &[];
        for name in registered().into_iter().chain(conversation.iter().copied()) {
            let literal = format!("\"{name}\"");
            assert!(
                !code.contains(&literal),
                "{} names the metric {literal}: the names belong to rag_eval::metrics::REGISTRY",
                path.display()
            );
        }
        read_any = true;
    }
    assert!(read_any, "{} holds no source", dir.display());
}

// Every registered metric as a bar: the attribute rejects unknown metrics at compile time, so
// this file compiling is the proof that each name is accepted. The answer metrics need a case
// that answers, the judges' a judge, the embeddings' an embedder.
#[cfg(feature = "answers")]
#[rag_eval(
    dataset = "examples/data/questions.jsonl",
    mode = "chunking_evaluation",
    judge = judge,
    embedder = embedder,
    min_chunk_recall = 0.0,
    min_chunk_precision = 0.0,
    min_chunk_f1 = 0.0,
    min_span_recall = 0.0,
    min_span_precision = 0.0,
    min_span_iou = 0.0,
    min_precision_omega = 0.0,
    min_precision = 0.0,
    min_recall = 0.0,
    min_f1 = 0.0,
    min_hit = 0.0,
    min_mrr = 0.0,
    min_ndcg = 0.0,
    max_map = 1.0,
    min_bleu = 0.0,
    min_chrf = 0.0,
    min_rouge_1 = 0.0,
    min_rouge_2 = 0.0,
    min_rouge_l = 0.0,
    min_rouge_1_precision = 0.0,
    min_rouge_1_recall = 0.0,
    min_rouge_2_precision = 0.0,
    min_rouge_2_recall = 0.0,
    min_rouge_l_precision = 0.0,
    min_rouge_l_recall = 0.0,
    min_exact_match = 0.0,
    min_token_f1 = 0.0,
    max_answer_similarity = 1.0,
    min_faithfulness = 0.0,
    min_answer_relevancy = 0.0,
    min_llm_context_precision = 0.0,
    min_llm_context_recall = 0.0,
    min_answer_match = 0.0,
    min_answer_claim_precision = 0.0,
    min_answer_claim_recall = 0.0,
    min_answer_claim_f1 = 0.0,
    min_claim_recall = 0.0,
    min_chunk_usefulness = 0.0,
    min_context_utilization = 0.0,
    max_noise_sensitivity_in_relevant = 1.0,
    max_noise_sensitivity_in_irrelevant = 1.0,
    max_hallucination = 1.0,
    min_self_knowledge = 0.0,
    min_claim_faithfulness = 0.0
)]
async fn every_bar(query: &str) -> RagAnswer {
    RagAnswer {
        answer: query.to_owned(),
        contexts: Vec::new(),
    }
}

#[cfg(feature = "answers")]
/// The case above is only inspected, never run: its judge is never built.
fn judge() -> std::sync::Arc<dyn rag_eval::llm::LlmClient> {
    unreachable!("`every_bar` is not run")
}

#[cfg(feature = "answers")]
fn embedder() -> HashingEmbedder {
    HashingEmbedder::new(64, 1)
}

#[cfg(feature = "answers")]
#[test]
fn every_registered_metric_is_accepted_as_a_bar() {
    use rag_eval::__private::{Bound, Mode};
    let spec = every_bar::__rag_eval_case();
    let bars: BTreeSet<&str> = spec.thresholds.iter().map(|t| t.metric.as_ref()).collect();
    assert_eq!(bars, registered(), "the case above must name every metric");
    assert_eq!(spec.thresholds.len(), bars.len());
    assert!(spec.thresholds.iter().any(|t| t.bound == Bound::Max));
    // the new spelling of the mode and the old one name the same mode
    assert_eq!(spec.mode, Mode::ChunkingEvaluation);
    assert_eq!(Mode::Chroma, SpanMode::ChunkingEvaluation);
}

/// One chunker call per document, counted: proves the corpus is chunked once per evaluation.
struct CountingWindows {
    size: usize,
    calls: AtomicUsize,
}

impl PositionAwareChunker for CountingWindows {
    fn name(&self) -> String {
        format!("my windows of {}", self.size)
    }
    fn chunk_with_positions(&self, doc: &Document) -> Vec<PositionAwareChunk> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let chars: Vec<char> = doc.content().chars().collect();
        (0..chars.len())
            .step_by(self.size)
            .map(|start| {
                let end = (start + self.size).min(chars.len());
                let text: String = chars[start..end].iter().collect();
                PositionAwareChunk::new(doc.id().clone(), start, end, text)
            })
            .collect()
    }
}

fn example_data() -> (std::sync::Arc<Corpus>, rag_eval::dataset::TokenDataset) {
    let root = camino::Utf8PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/data");
    let corpus = Corpus::from_folder(root.join("corpus"), None).unwrap();
    let AnyDataset::Token(d) = dataset::load(root.join("questions.jsonl")).unwrap() else {
        panic!("examples/data/questions.jsonl is token-level");
    };
    (std::sync::Arc::new(corpus), d)
}

fn base(report_name: &str) -> &str {
    report_name.split_once('@').map_or(report_name, |(b, _)| b)
}

#[test]
fn an_evaluation_reports_every_registered_metric_of_its_level() {
    let (corpus, d) = example_data();
    for mode in [SpanMode::Standard, SpanMode::ChunkingEvaluation] {
        let eval = TokenLevelEvaluation::new(corpus.clone(), d.clone())
            .unwrap()
            .with_mode(mode);
        let retriever = Bm25Retriever::new(RecursiveCharacterChunker::new(300, 0));
        let r = pollster::block_on(eval.run_reported(&retriever, 4))
            .unwrap()
            .scores;
        let reported: Vec<&str> = r.metrics.names().map(base).collect();
        // Answer metrics need answers: a retrieval run never reports them.
        let want: Vec<&str> = registry::at_level(LevelKind::Token)
            .filter(|m| !m.is_answer_metric())
            .map(|m| m.name)
            .collect();
        assert_eq!(
            reported, want,
            "every retrieval metric, and no answer metric"
        );
        assert_eq!(r.mode, Some(mode));
        assert!(r.metrics.get("span_recall@4").is_some());
    }

    // chunk level, on a dataset made by the retriever's chunker
    let corpus = Corpus::new([Document::new("a.md", "Alpha beta.\n\nGamma delta.")]).unwrap();
    let mut metadata = rag_eval::corpus::Metadata::new();
    metadata.insert(
        "chunker".into(),
        "recursive:size=20,overlap=0,length=chars,separators=langchain".into(),
    );
    let d = Dataset::new(vec![Example {
        id: "c1".into(),
        query: "gamma".into(),
        truth: vec![ChunkId::from_content("Gamma delta.")],
        span_texts: vec![],
        metadata,
        reference_answers: Vec::new(),
    }])
    .unwrap();
    let eval = ChunkLevelEvaluation::new(corpus, d).unwrap();
    let r = pollster::block_on(eval.run_reported(
        &Bm25Retriever::new(RecursiveCharacterChunker::new(20, 0)),
        2,
    ))
    .unwrap()
    .scores;
    let reported: Vec<&str> = r.metrics.names().map(base).collect();
    let want: Vec<&str> = registry::at_level(LevelKind::Chunk)
        .filter(|m| !m.is_answer_metric())
        .map(|m| m.name)
        .collect();
    assert_eq!(
        reported, want,
        "every retrieval metric, and no answer metric"
    );
    assert_eq!(r.metrics.get("chunk_recall@2"), Some(1.0));
}

#[test]
fn an_evaluation_refuses_span_metrics_in_another_mode() {
    let (corpus, d) = example_data();
    let eval = TokenLevelEvaluation::new(corpus, d).unwrap();
    let metrics = token_level_metrics(SpanMode::ChunkingEvaluation, None);
    let retriever = Bm25Retriever::new(RecursiveCharacterChunker::new(300, 0));
    let err = eval
        .run_blocking(&retriever, 3, &metrics)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("span_recall") && err.contains("`chroma`") && err.contains("`standard`"),
        "{err}"
    );
}

#[test]
fn precision_omega_comes_from_a_custom_chunker_chunked_once() {
    let (corpus, d) = example_data();
    let eval = TokenLevelEvaluation::new(corpus.clone(), d.clone()).unwrap();
    let chunker = std::sync::Arc::new(CountingWindows {
        size: 250,
        calls: AtomicUsize::new(0),
    });
    let pipeline = Pipeline::from_arc(
        chunker.clone(),
        std::sync::Arc::new(HashingEmbedder::default()),
    );
    let r = pollster::block_on(eval.run_reported(&pipeline, 4))
        .unwrap()
        .scores;
    assert_eq!(
        chunker.calls.load(Ordering::Relaxed),
        corpus.len(),
        "the corpus is chunked once, for the index, and PrecisionΩ reuses those chunks"
    );
    let i = r.metric_index("precision_omega").expect("reported");
    let spans: Vec<_> = CountingWindows {
        size: 250,
        calls: AtomicUsize::new(0),
    }
    .chunk_corpus(&corpus)
    .into_iter()
    .map(|c| c.span)
    .collect();
    let omega = PrecisionOmega::with_index(ChunkIndex::new(&spans));
    for (q, e) in r.per_query.iter().zip(d.examples()) {
        assert_eq!(
            q.metrics.0[i].1,
            omega.compute(&MetricInput::new(&[], &e.truth, 4)),
            "{}",
            q.id
        );
    }
}

/// The rows of the metric table of `docs/reference/metrics.md`: (name as shown, level,
/// definition).
fn documented_rows() -> Vec<(String, String, String)> {
    let doc = read("docs/reference/metrics.md");
    let header = "| name | level | definition |";
    let at = doc
        .find(header)
        .expect("docs/reference/metrics.md has the metric table");
    doc[at..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|line| {
            // cells are separated by `|` not preceded by a backslash
            let mut cells = Vec::new();
            let mut cell = String::new();
            let mut chars = line.trim().trim_start_matches('|').chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '\\' if chars.peek() == Some(&'|') => {
                        cell.push('|');
                        chars.next();
                    }
                    '|' => cells.push(std::mem::take(&mut cell).trim().to_owned()),
                    c => cell.push(c),
                }
            }
            assert_eq!(cells.len(), 3, "metric row `{line}` has 3 cells");
            (cells[0].clone(), cells[1].clone(), cells[2].clone())
        })
        .collect()
}

#[test]
fn the_documented_metric_table_is_the_registry() {
    let want: Vec<(String, String, String)> = registry::REGISTRY
        .iter()
        .map(|m| {
            let name = if m.at_k {
                format!("`{}@k`", m.name)
            } else {
                format!("`{}`", m.name)
            };
            let level = match m.levels().as_slice() {
                [LevelKind::Chunk, LevelKind::Token] => "both",
                [level] => level.name(),
                other => panic!("`{}` at levels {other:?}", m.name),
            };
            (name, level.to_owned(), m.definition.to_owned())
        })
        .collect();
    let got = documented_rows();
    if got != want {
        let table: Vec<String> = want
            .iter()
            .map(|(n, l, d)| format!("| {n} | {l} | {} |", d.replace('|', "\\|")))
            .collect();
        panic!(
            "docs/reference/metrics.md's metric table differs from the registry; it should read:\n| name | level | definition |\n|---|---|---|\n{}",
            table.join("\n")
        );
    }
}

/// Wraps a pipeline; claims a built-in chunker's name whatever it really chunks with, and
/// exposes the real chunker only when `expose` is set.
struct Claims {
    inner: Pipeline,
    expose: bool,
}

#[async_trait::async_trait]
impl Retriever<TokenLevel> for Claims {
    fn name(&self) -> String {
        "claims".into()
    }
    fn chunker(&self) -> Option<rag_eval::spec::Value> {
        Some("recursive:size=400,overlap=0".into())
    }
    fn chunker_object(&self) -> Option<&dyn PositionAwareChunker> {
        if self.expose {
            Retriever::<TokenLevel>::chunker_object(&self.inner)
        } else {
            None
        }
    }
    async fn index(&self, corpus: &std::sync::Arc<Corpus>) -> rag_eval::Result<()> {
        Retriever::<TokenLevel>::index(&self.inner, corpus).await
    }
    async fn retrieve(&self, query: &str, k: usize) -> rag_eval::Result<Vec<RetrievedChunk>> {
        Retriever::<TokenLevel>::retrieve(&self.inner, query, k).await
    }
}

#[test]
fn precision_omega_follows_the_chunker_object_never_its_name() {
    let (corpus, d) = example_data();
    let eval = TokenLevelEvaluation::new(corpus.clone(), d).unwrap();
    let claims = |expose| Claims {
        inner: Pipeline::new(
            CountingWindows {
                size: 250,
                calls: AtomicUsize::new(0),
            },
            HashingEmbedder::default(),
        ),
        expose,
    };
    let omega = |r: &Claims| {
        let s = pollster::block_on(eval.run_reported(r, 4)).unwrap().scores;
        s.metric_index("precision_omega").map(|i| s.metrics.0[i].1)
    };
    let exposed = omega(&claims(true)).expect("reported from the exposed chunker");
    let direct = pollster::block_on(eval.run_reported(
        &Pipeline::new(
            CountingWindows {
                size: 250,
                calls: AtomicUsize::new(0),
            },
            HashingEmbedder::default(),
        ),
        4,
    ))
    .unwrap()
    .scores;
    let i = direct.metric_index("precision_omega").unwrap();
    assert_eq!(exposed, direct.metrics.0[i].1);
    assert_eq!(
        omega(&claims(false)),
        None,
        "a name alone is not trusted to rebuild the chunker"
    );
}

#[cfg(feature = "answers")]
#[test]
fn scoring_answers_reports_every_registered_metric_of_its_level() {
    use rag_eval::answers::{embed_answers, score_answers, Answers};
    let (corpus, d) = example_data();
    // One context per answer, the first characters of a document: retrieval is measured
    // (an answer without contexts has no retrieval figure at all).
    let doc = &corpus.documents()[0];
    let text: String = doc.content().chars().take(40).collect();
    let context = serde_json::json!({"doc_id": doc.id().as_str(), "start": 0, "end": text.chars().count(), "text": text});
    let lines: Vec<String> = d
        .examples()
        .iter()
        .map(|e| {
            format!(
                r#"{{"id":"{}","answer":"an answer","contexts":[{context}]}}"#,
                e.id
            )
        })
        .collect();
    let answers = Answers::parse(&lines.join("\n"), "a.jsonl".into()).unwrap();
    // Every row gets a reference, so that every answer metric has a figure.
    let mut rows = d.examples().to_vec();
    for e in &mut rows {
        e.reference_answers = vec!["a reference answer".into()];
    }
    let d = Dataset::new(rows).unwrap();
    let pairs: Vec<(&str, &[String])> = d
        .examples()
        .iter()
        .map(|e| ("an answer", e.reference_answers.as_slice()))
        .collect();
    let embeddings = pollster::block_on(embed_answers(HashingEmbedder::default(), &pairs)).unwrap();
    let s = score_answers(
        &d,
        &answers,
        &token_level_metrics(SpanMode::Standard, None),
        &registry::answer_metrics(true),
        Some(&embeddings),
        4,
        SpanMode::Standard,
    )
    .unwrap();
    let reported: Vec<&str> = s.result.metrics.names().map(base).collect();
    // Everything but the LLM judges, which need a judge model (`score_answers` takes none).
    let want: Vec<&str> = registry::at_level(LevelKind::Token)
        .filter(|m| !m.needs(registry::Need::ChunkerOutput) && !m.needs(registry::Need::Judge))
        .map(|m| m.name)
        .collect();
    assert_eq!(reported, want);
    for q in &s.result.per_query {
        assert_eq!(q.metrics.0.len(), want.len(), "{}", q.id);
    }
}
