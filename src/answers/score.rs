//! Scoring answers against a dataset: the retrieval metrics from each answer's contexts and
//! the answer metrics against the rows' reference answers, in one [`RunResult`].

use super::{Answers, RagAnswer};
use crate::chunk::{ChunkId, RetrievedChunk};
use crate::dataset::Dataset;
use crate::embed::{BatchingEmbedder, Embedder};
use crate::error::Result;
use crate::level::{ChunkLevel, Level, TokenLevel};
use crate::metrics::answer::{AnswerInput, AnswerMetric};
use crate::metrics::{scorecard, Metric, Passage, QueryResult, RunResult, Scored, SpanMode};
use crate::span::CharSpan;

/// How a level reads the retrieved items of an answer's contexts: character spans at token
/// level (a context with no character placed, text not found in the corpus, is left out),
/// content ids ([`ChunkId::from_content`]) at chunk level.
pub trait ContextItems: Level {
    /// The contexts as this level's ranked items.
    fn items(contexts: &[RetrievedChunk]) -> Vec<Self::Item>;
}

impl ContextItems for TokenLevel {
    fn items(contexts: &[RetrievedChunk]) -> Vec<CharSpan> {
        contexts
            .iter()
            .filter(|c| !c.chunk.span.is_empty())
            .map(|c| c.chunk.span.clone())
            .collect()
    }
}

impl ContextItems for ChunkLevel {
    fn items(contexts: &[RetrievedChunk]) -> Vec<ChunkId> {
        contexts
            .iter()
            .map(|c| ChunkId::from_content(&c.chunk.content))
            .collect()
    }
}

/// Embeddings of one query's answer and of its reference answers.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerEmbeddings {
    /// The answer's vector.
    pub answer: Vec<f32>,
    /// One vector per reference answer, in the row's order.
    pub references: Vec<Vec<f32>>,
}

/// Embeds every answer and reference answer with `embedder`, each distinct text once and in
/// batches; one entry per pair, in order (a pair without references gets no reference vectors).
pub async fn embed_answers<E: Embedder>(
    embedder: E,
    pairs: &[(&str, &[String])],
) -> Result<Vec<AnswerEmbeddings>> {
    let mut texts: Vec<String> = Vec::new();
    for (answer, references) in pairs {
        texts.push((*answer).to_owned());
        texts.extend(references.iter().cloned());
    }
    let vectors = BatchingEmbedder::new(embedder).embed(&texts).await?;
    let mut vectors = vectors.into_iter();
    let mut out = Vec::with_capacity(pairs.len());
    for (_, references) in pairs {
        let answer = vectors.next().unwrap_or_default();
        let references = vectors.by_ref().take(references.len()).collect();
        out.push(AnswerEmbeddings { answer, references });
    }
    Ok(out)
}

/// Keeps in each query of `per_query` its answer, the contexts it was given and its reference
/// answers (`given`, one pair per query, in order), and appends the figures of the `metrics`
/// of the answer against the references (those that read embeddings from `embeddings`, one
/// entry per query, when given). A metric with no value for a query (no reference answer)
/// adds no figure to it.
pub fn add_answers(
    per_query: &mut [QueryResult],
    given: &[(&RagAnswer, &[String])],
    metrics: &[Box<dyn AnswerMetric>],
    embeddings: Option<&[AnswerEmbeddings]>,
) {
    for (i, (q, (answer, references))) in per_query.iter_mut().zip(given).enumerate() {
        let mut input = AnswerInput::new(&answer.answer, references);
        if let Some(v) = embeddings.and_then(|all| all.get(i)) {
            input = input.with_embeddings(&v.answer, &v.references);
        }
        for m in metrics {
            if let Some(value) = m.compute(&input) {
                q.metrics.0.push((m.name().to_owned(), value));
            }
        }
        q.answer = Some(answer.answer.clone());
        q.contexts = Some(answer.contexts.iter().map(Passage::of_retrieved).collect());
        q.references = references.to_vec();
    }
}

/// What [`score_answers`] gives: the run's figures and the counts behind them.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerScores {
    /// Retrieval metrics (from the contexts) then answer metrics, per query and on average,
    /// with means per difficulty. A query whose row has no reference answer has no figure for
    /// the metrics that need one, and is left out of their means.
    pub result: RunResult,
    /// Queries whose row has no reference answer.
    pub without_reference: usize,
    /// Queries the answers file has no line for, scored as an empty answer with no contexts.
    pub unanswered: usize,
    /// Queries whose retrieval is not measured: the dataset has no retrieval truth, or the
    /// answer has no context to score (none given, or none found in the corpus).
    pub retrieval_not_measured: usize,
}

/// Scores `answers` for every query of `dataset`: `retrieval` metrics at cut-off `k` over each
/// answer's contexts, and `answer` metrics against the row's reference answers (metrics that
/// read embeddings need `embeddings`, one entry per example of `dataset`, in order). Ids of
/// `answers` must all be queries of `dataset` ([`Answers::check_ids`]); a query without an
/// answer scores as an empty answer with no contexts and is counted.
///
/// Retrieval is not measured (its figures are absent, never 0) for a query with no context to
/// score, and for every query of a dataset without retrieval truth; a retrieval metric no
/// query measures is left out of the result.
pub fn score_answers<L: ContextItems>(
    dataset: &Dataset<L>,
    answers: &Answers,
    retrieval: &[Box<dyn Metric<L>>],
    answer: &[Box<dyn AnswerMetric>],
    embeddings: Option<&[AnswerEmbeddings]>,
    k: usize,
    mode: SpanMode,
) -> Result<AnswerScores> {
    answers.check_ids(dataset)?;
    let empty = RagAnswer {
        answer: String::new(),
        contexts: Vec::new(),
    };
    let given: Vec<&RagAnswer> = dataset
        .examples()
        .iter()
        .map(|e| answers.get(&e.id).unwrap_or(&empty))
        .collect();
    let items: Vec<Vec<L::Item>> = given.iter().map(|a| L::items(&a.contexts)).collect();
    let queries: Vec<Scored<'_, L>> = dataset
        .examples()
        .iter()
        .zip(&items)
        .map(|(e, items)| Scored {
            id: &e.id,
            truth: &e.truth,
            retrieved: items,
        })
        .collect();
    let card = scorecard(&queries, retrieval, k, mode, None);
    let measured: Vec<bool> = items
        .iter()
        .map(|items| dataset.has_retrieval_truth() && !items.is_empty())
        .collect();
    let mut names: Vec<String> = if measured.contains(&true) {
        card.metrics.names().map(str::to_owned).collect()
    } else {
        Vec::new()
    };
    names.extend(answer.iter().map(|m| m.name().to_owned()));
    let mut per_query = card.per_query;
    for (q, measured) in per_query.iter_mut().zip(&measured) {
        if !measured {
            q.metrics.0.clear();
        }
    }
    let pairs: Vec<(&RagAnswer, &[String])> = given
        .iter()
        .zip(dataset.examples())
        .map(|(a, e)| (*a, e.reference_answers.as_slice()))
        .collect();
    add_answers(&mut per_query, &pairs, answer, embeddings);
    for (q, e) in per_query.iter_mut().zip(dataset.examples()) {
        for (i, p) in q.contexts.iter_mut().flatten().enumerate() {
            if let Some(why) = answers.not_found(&e.id, i) {
                p.located = false;
                p.not_found = Some(why.to_owned());
            }
        }
        q.query = Some(e.query.clone());
        q.difficulty = e.difficulty().map(str::to_owned);
    }
    let mut result = RunResult::from_queries(L::KIND.into(), names, per_query);
    result.k = Some(k);
    result.mode = Some(mode);
    result.group_by_difficulty();
    Ok(AnswerScores {
        result,
        without_reference: dataset
            .examples()
            .iter()
            .filter(|e| e.reference_answers.is_empty())
            .count(),
        unanswered: dataset
            .examples()
            .iter()
            .filter(|e| answers.get(&e.id).is_none())
            .count(),
        retrieval_not_measured: measured.iter().filter(|m| !**m).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::PositionAwareChunk;
    use crate::dataset::{self, AnyDataset};
    use crate::embed::HashingEmbedder;
    use crate::metrics::answer_metrics;

    const DATA: &str = concat!(
        "{\"id\":\"q1\",\"inputs\":{\"query\":\"when?\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":10}],\"reference_answer\":\"In May 2021.\"},\"metadata\":{\"difficulty\":\"factual\"}}\n",
        "{\"id\":\"q2\",\"inputs\":{\"query\":\"who?\"},\"outputs\":{\"relevant_spans\":[{\"doc_id\":\"a.md\",\"start\":20,\"end\":30}]},\"metadata\":{\"difficulty\":\"factual\"}}\n",
    );

    fn dataset() -> crate::dataset::TokenDataset {
        match dataset::parse(DATA, "d.jsonl").unwrap() {
            AnyDataset::Token(d) => d,
            AnyDataset::Chunk(_) => panic!(),
        }
    }

    #[test]
    fn retrieval_from_contexts_and_answers_against_references() {
        let d = dataset();
        let answers = Answers::parse(
            concat!(
                "{\"id\":\"q2\",\"answer\":\"Ada.\",\"contexts\":[]}\n",
                "{\"id\":\"q1\",\"answer\":\"in may 2021\",\"contexts\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":5,\"text\":\"xxxxx\"}]}\n",
            ),
            "a.jsonl".into(),
        )
        .unwrap();
        let retrieval = crate::metrics::token_level_metrics(SpanMode::Standard, None);
        let s = score_answers(
            &d,
            &answers,
            &retrieval,
            &answer_metrics(false),
            None,
            3,
            SpanMode::Standard,
        )
        .unwrap();
        assert_eq!((s.without_reference, s.unanswered), (1, 0));
        let r = &s.result;
        // q1 retrieved half of its truth (0..5 of 0..10); q2 gave no context: its retrieval
        // is not measured (no figure, not 0) and the mean is q1's alone.
        assert_eq!(r.per_query[0].metrics.get("span_recall@3"), Some(0.5));
        assert_eq!(r.per_query[1].metrics.get("span_recall@3"), None);
        assert_eq!(r.metrics.get("span_recall@3"), Some(0.5));
        assert_eq!(s.retrieval_not_measured, 1);
        // "in may 2021" normalises to "in may 2021", as "In May 2021." does.
        assert_eq!(r.per_query[0].metrics.get("exact_match"), Some(1.0));
        assert_eq!(r.per_query[0].metrics.get("token_f1"), Some(1.0));
        // q2 has no reference: no figure, and the mean is q1's alone.
        assert_eq!(r.per_query[1].metrics.get("exact_match"), None);
        assert_eq!(r.metrics.get("exact_match"), Some(1.0));
        assert_eq!(r.std.get("exact_match"), Some(0.0));
        assert!(r.metrics.get("answer_similarity").is_none());
        let by = r.by_difficulty.as_ref().unwrap();
        assert_eq!(by["factual"].queries, 2);
        assert_eq!(by["factual"].metrics.get("token_f1"), Some(1.0));
    }

    #[test]
    fn without_retrieval_truth_or_placed_contexts_retrieval_is_absent_not_zero() {
        let qa = match dataset::parse(
            concat!(
                "{\"id\":\"q1\",\"inputs\":{\"query\":\"when?\"},\"outputs\":{\"reference_answer\":\"In May 2021.\"}}\n",
                "{\"id\":\"q2\",\"inputs\":{\"query\":\"who?\"},\"outputs\":{\"reference_answer\":\"Ada\"}}\n",
            ),
            "qa.jsonl",
        )
        .unwrap()
        {
            AnyDataset::Token(d) => d,
            AnyDataset::Chunk(_) => panic!(),
        };
        let answers = Answers::parse(
            concat!(
                "{\"id\":\"q1\",\"answer\":\"In May 2021\",\"contexts\":[{\"doc_id\":\"a.md\",\"start\":0,\"end\":5,\"text\":\"xxxxx\"}]}\n",
                "{\"id\":\"q2\",\"answer\":\"Ada Lovelace\"}\n",
            ),
            "a.jsonl".into(),
        )
        .unwrap();
        let retrieval = crate::metrics::token_level_metrics(SpanMode::Standard, None);
        let s = score_answers(
            &qa,
            &answers,
            &retrieval,
            &answer_metrics(false),
            None,
            3,
            SpanMode::Standard,
        )
        .unwrap();
        assert_eq!(s.retrieval_not_measured, 2);
        let names: Vec<&str> = s.result.metrics.names().collect();
        let lexical = answer_metrics(false);
        let answer_names: Vec<&str> = lexical.iter().map(|m| m.name()).collect();
        assert_eq!(names, answer_names);
        assert!(s
            .result
            .per_query
            .iter()
            .all(|q| q.metrics.get("span_recall@3").is_none()));
        assert_eq!(s.result.per_query[0].metrics.get("exact_match"), Some(1.0));
        // "ada lovelace" against "ada": precision 1/2, recall 1, F1 2/3.
        let f1 = s.result.per_query[1].metrics.get("token_f1").unwrap();
        assert!((f1 - 2.0 / 3.0).abs() < 1e-9, "{f1}");

        // A context whose text is not in the corpus is kept for the judges, and left out of
        // the spans: with no other context, q1's retrieval is not measured.
        let d = dataset();
        let mut unplaced = Answers::parse(
            "{\"id\":\"q1\",\"answer\":\"x\",\"contexts\":[\"not in the corpus\"]}",
            "a.jsonl".into(),
        )
        .unwrap();
        let corpus =
            crate::corpus::Corpus::new([crate::corpus::Document::new("a.md", "hello")]).unwrap();
        assert_eq!(unplaced.place_in(&corpus).unlocated, 1);
        assert_eq!(
            unplaced.get("q1").unwrap().contexts[0].chunk.content,
            "not in the corpus"
        );
        let s = score_answers(&d, &unplaced, &retrieval, &[], None, 3, SpanMode::Standard).unwrap();
        assert_eq!(s.result.per_query[0].metrics.get("span_recall@3"), None);
    }

    #[test]
    fn an_unknown_id_is_an_error_and_a_missing_answer_scores_empty() {
        let d = dataset();
        let bad = Answers::parse(
            "{\"id\":\"q7\",\"answer\":\"x\",\"contexts\":[]}",
            "a.jsonl".into(),
        )
        .unwrap();
        let e = score_answers(&d, &bad, &[], &[], None, 1, SpanMode::Standard).unwrap_err();
        assert!(e.to_string().contains("a.jsonl:1: `q7`"), "{e}");
        let none = Answers::parse("", "a.jsonl".into()).unwrap();
        let s = score_answers(
            &d,
            &none,
            &[],
            &answer_metrics(false),
            None,
            1,
            SpanMode::Standard,
        )
        .unwrap();
        assert_eq!(s.unanswered, 2);
        assert_eq!(s.result.per_query[0].metrics.get("token_f1"), Some(0.0));
    }

    #[test]
    fn similarity_reads_the_embeddings_and_identical_text_scores_one() {
        let d = dataset();
        let answers = Answers::parse(
            "{\"id\":\"q1\",\"answer\":\"In May 2021.\",\"contexts\":[]}",
            "a.jsonl".into(),
        )
        .unwrap();
        let pairs: Vec<(&str, &[String])> = d
            .examples()
            .iter()
            .map(|e| {
                let a = answers.get(&e.id).map_or("", |a| a.answer.as_str());
                (a, e.reference_answers.as_slice())
            })
            .collect();
        let v = pollster::block_on(embed_answers(HashingEmbedder::default(), &pairs)).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].references.len(), 1);
        assert!(v[1].references.is_empty());
        let s = score_answers(
            &d,
            &answers,
            &[],
            &answer_metrics(true),
            Some(&v),
            1,
            SpanMode::Standard,
        )
        .unwrap();
        let sim = s.result.per_query[0]
            .metrics
            .get("answer_similarity")
            .unwrap();
        assert!((sim - 1.0).abs() < 1e-6, "{sim}");
        assert_eq!(s.result.per_query[1].metrics.get("answer_similarity"), None);
    }

    #[test]
    fn chunk_level_contexts_are_content_ids() {
        let c = RetrievedChunk::new(PositionAwareChunk::new("a.md", 0, 5, "hello"), 0.0);
        assert_eq!(
            ChunkLevel::items(std::slice::from_ref(&c)),
            [ChunkId::from_content("hello")]
        );
        assert_eq!(TokenLevel::items(&[c]), [CharSpan::new("a.md", 0, 5)]);
    }
}
