//! `Retriever::retrieve_many` against `Retriever::retrieve` query by query: the built-ins'
//! batched paths (BM25 on every core, the dense pipeline's batched embedding and matrix search)
//! must give every query exactly what it gets alone; failures name the queries they belong to.

use proptest::prelude::*;
use rag_eval::chunk::RetrievedChunk;
use rag_eval::prelude::*;
use rag_eval::retrieve::BatchError;
use std::sync::Arc;

const WORDS: &[&str] = &[
    "cats", "purr", "dogs", "bark", "fish", "swim", "birds", "fly", "the", "a", "runner",
    "running", "garden", "trees", "grow", "Größe", "naïve", "café", "river", "stone",
];

fn text(words: &[usize]) -> String {
    let mut s = String::new();
    for (i, &w) in words.iter().enumerate() {
        if i > 0 {
            s.push_str(if i % 7 == 0 { ".\n\n" } else { " " });
        }
        s.push_str(WORDS[w % WORDS.len()]);
    }
    s
}

fn corpus(docs: &[Vec<usize>]) -> Arc<Corpus> {
    Arc::new(
        Corpus::new(
            docs.iter()
                .enumerate()
                .map(|(i, words)| Document::new(format!("d{i}.md"), text(words))),
        )
        .unwrap(),
    )
}

fn one_by_one<R: Retriever<TokenLevel>>(
    r: &R,
    queries: &[&str],
    k: usize,
) -> Vec<Vec<RetrievedChunk>> {
    queries
        .iter()
        .map(|q| pollster::block_on(r.retrieve(q, k)).unwrap())
        .collect()
}

fn bits(hits: &[Vec<RetrievedChunk>]) -> Vec<Vec<u32>> {
    hits.iter()
        .map(|h| h.iter().map(|c| c.score.to_bits()).collect())
        .collect()
}

fn check<R: Retriever<TokenLevel>>(r: &R, c: &Arc<Corpus>, queries: &[String], k: usize) {
    pollster::block_on(r.index(c)).unwrap();
    let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
    let alone = one_by_one(r, &queries, k);
    let together = pollster::block_on(r.retrieve_many(&queries, k, 4)).unwrap();
    assert_eq!(together.len(), queries.len());
    assert_eq!(together, alone);
    assert_eq!(bits(&together), bits(&alone), "scores to the last bit");
}

fn cases() -> impl Strategy<Value = (Vec<Vec<usize>>, Vec<String>, usize, usize)> {
    (
        prop::collection::vec(prop::collection::vec(0usize..40, 0..80), 1..5),
        // Up to 80 queries: past the size where BM25 spreads them over threads, and past one
        // embedding batch of the pipeline with the batch size below. Repeats included.
        prop::collection::vec(prop::collection::vec(0usize..40, 0..6), 0..80),
        1usize..9,
        8usize..120,
    )
        .prop_map(|(docs, queries, k, size)| {
            (docs, queries.iter().map(|q| text(q)).collect(), k, size)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn bm25_retrieve_many_is_retrieve_for_each_query((docs, queries, k, size) in cases()) {
        let c = corpus(&docs);
        check(&Bm25Retriever::new(RecursiveCharacterChunker::new(size, 0)), &c, &queries, k);
    }

    #[test]
    fn pipeline_retrieve_many_is_retrieve_for_each_query((docs, queries, k, size) in cases()) {
        let c = corpus(&docs);
        // The batched path first, so that its vectors are the ones memoised and the single
        // queries after it must agree with them; then a fresh pipeline the other way round.
        let batched_first = Pipeline::new(RecursiveCharacterChunker::new(size, 0), HashingEmbedder::new(64, 2));
        pollster::block_on(Retriever::<TokenLevel>::index(&batched_first, &c)).unwrap();
        let qs: Vec<&str> = queries.iter().map(String::as_str).collect();
        let together = pollster::block_on(Retriever::<TokenLevel>::retrieve_many(&batched_first, &qs, k, 2)).unwrap();
        let fresh = Pipeline::new(RecursiveCharacterChunker::new(size, 0), HashingEmbedder::new(64, 2));
        pollster::block_on(Retriever::<TokenLevel>::index(&fresh, &c)).unwrap();
        let alone = one_by_one(&fresh, &qs, k);
        prop_assert_eq!(&together, &alone);
        prop_assert_eq!(bits(&together), bits(&alone));
        check(&batched_first, &c, &queries, k);
    }
}

#[test]
fn the_pipeline_embeds_queries_in_batches() {
    let c = corpus(&[(0..60).collect(), (20..90).collect()]);
    let p = Pipeline::new(
        RecursiveCharacterChunker::new(40, 0),
        HashingEmbedder::default(),
    );
    pollster::block_on(Retriever::<TokenLevel>::index(&p, &c)).unwrap();
    let before = p.embedder().stats();
    let queries: Vec<String> = (0..150).map(|i| text(&[i, i + 3, i * 7])).collect();
    let qs: Vec<&str> = queries.iter().map(String::as_str).collect();
    let distinct = queries
        .iter()
        .collect::<std::collections::HashSet<_>>()
        .len();
    pollster::block_on(Retriever::<TokenLevel>::retrieve_many(&p, &qs, 3, 1)).unwrap();
    let after = p.embedder().stats();
    assert_eq!(after.texts_embedded - before.texts_embedded, distinct);
    // 64 queries per call at most: never one call per query.
    assert_eq!(
        after.calls - before.calls,
        distinct.div_ceil(p.embedder().batch_size()),
        "{distinct} distinct queries"
    );
}

/// Embeds as the hashing embedder does, but fails on any batch holding a query with "fail".
struct FailsOn(HashingEmbedder);

#[async_trait::async_trait]
impl Embedder for FailsOn {
    fn name(&self) -> String {
        "fails-on".into()
    }
    fn dimension(&self) -> usize {
        self.0.dimension()
    }
    async fn embed(&self, texts: &[String]) -> rag_eval::Result<Vec<Vec<f32>>> {
        if texts.iter().any(|t| t.contains("fail")) {
            return Err(rag_eval::EmbedError::new(
                self.name(),
                format!("{} texts refused", texts.len()),
            )
            .into());
        }
        self.0.embed(texts).await
    }
    async fn embed_queries(&self, queries: &[String]) -> rag_eval::Result<Vec<Vec<f32>>> {
        self.embed(queries).await
    }
}

fn dataset(queries: &[String]) -> TokenDataset {
    rag_eval::dataset::Dataset::new(
        queries
            .iter()
            .enumerate()
            .map(|(i, q)| rag_eval::dataset::Example {
                id: format!("q{i}"),
                query: q.clone(),
                truth: vec![rag_eval::span::CharSpan::new("d0.md", 0, 4)],
                span_texts: vec![None],
                metadata: Default::default(),
                reference_answers: Vec::new(),
            })
            .collect(),
    )
    .unwrap()
}

#[test]
fn a_failed_batch_names_its_queries_by_position_and_the_evaluation_by_id() {
    let c = corpus(&[(0..60).collect()]);
    let p = Pipeline::new(
        RecursiveCharacterChunker::new(40, 0),
        FailsOn(HashingEmbedder::default()),
    );
    pollster::block_on(Retriever::<TokenLevel>::index(&p, &c)).unwrap();
    // 70 queries: the second batch of 64 (queries 64..70) holds the one that fails.
    let mut queries: Vec<String> = (0..70).map(|i| format!("cats {i}")).collect();
    queries[66] = "this one will fail".into();
    let qs: Vec<&str> = queries.iter().map(String::as_str).collect();
    let BatchError { queries: at, error } =
        pollster::block_on(Retriever::<TokenLevel>::retrieve_many(&p, &qs, 3, 1)).unwrap_err();
    assert_eq!(at, 64..70);
    assert!(error.to_string().contains("6 texts refused"), "{error}");

    let eval = TokenLevelEvaluation::new(c, dataset(&queries)).unwrap();
    let err = eval
        .run_blocking(&p, 3, &token_level_metrics(SpanMode::Standard, None))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("query `q64 (with the 5 after it through q69, retrieved together)`"),
        "{err}"
    );
    assert!(err.contains("6 texts refused"), "{err}");
}

#[test]
fn retrieving_many_before_indexing_fails_for_every_query() {
    let bm25 = Bm25Retriever::new(RecursiveCharacterChunker::new(40, 0));
    let failure = pollster::block_on(Retriever::<TokenLevel>::retrieve_many(
        &bm25,
        &["a", "b", "c"],
        3,
        1,
    ))
    .unwrap_err();
    assert_eq!(failure.queries, 0..3);
    assert!(
        failure.error.to_string().contains("no index yet"),
        "{}",
        failure.error
    );
    let p = Pipeline::new(
        RecursiveCharacterChunker::new(40, 0),
        HashingEmbedder::default(),
    );
    let failure = pollster::block_on(Retriever::<TokenLevel>::retrieve_many(
        &p,
        &["a", "b"],
        3,
        1,
    ))
    .unwrap_err();
    assert_eq!(failure.queries, 0..2);
    // No queries, nothing to fail.
    assert!(
        pollster::block_on(Retriever::<TokenLevel>::retrieve_many(&bm25, &[], 3, 1))
            .unwrap()
            .is_empty()
    );
}
