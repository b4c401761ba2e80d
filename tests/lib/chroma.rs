//! `ChromaStore` against a real Chroma server: the bundled evaluation gives the same top-k and
//! figures as `InMemoryStore`, and the store behaves like it (replace, ties, clear, errors).
//!
//! The server comes from `RAG_EVAL_CHROMA_URL` (`.ci/run` starts one through `.ci/chroma.sh`);
//! without it the server tests print a notice and pass without checking anything.

use crate::shared_data;
use crate::support;

use pollster::block_on;
use rag_eval::chunk::{PositionAwareChunk, PositionAwareChunkId, RetrievedChunk};
use rag_eval::chunker::{PositionAwareChunker, RecursiveCharacterChunker};
use rag_eval::corpus::Corpus;
use rag_eval::dataset::{self, AnyDataset};
use rag_eval::embed::{cosine, HashingEmbedder};
use rag_eval::eval::TokenLevelEvaluation;
use rag_eval::http::{HttpClient, HttpConfig};
use rag_eval::metrics::{token_level_metrics, ChunkIndex, SpanMode};
use rag_eval::retrieve::Pipeline;
use rag_eval::span::CharSpan;
use rag_eval::store::{ChromaStore, InMemoryStore, VectorStore};
use rag_eval::Error;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Scores closer than this count as tied: the two stores round differently.
const TIE: f32 = 1e-5;

fn server() -> Option<String> {
    match std::env::var("RAG_EVAL_CHROMA_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
        _ => {
            eprintln!(
                "skipped: RAG_EVAL_CHROMA_URL is unset (`bash .ci/run` starts a Chroma server and sets it)"
            );
            None
        }
    }
}

/// A collection name no other test or earlier run uses.
fn unique(label: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("rag-eval-{label}-{}-{nanos}", std::process::id())
}

/// Deletes the collection when the test ends, passed or not.
struct Cleanup<'a>(&'a ChromaStore);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        if let Err(e) = block_on(self.0.delete_collection()) {
            eprintln!("could not delete collection `{}`: {e}", self.0.collection());
        }
    }
}

fn chunk(doc: &str, start: usize, text: &str) -> PositionAwareChunk {
    PositionAwareChunk::new(doc, start, start + text.chars().count(), text)
}

fn ids(hits: &[RetrievedChunk]) -> Vec<&str> {
    hits.iter().map(|h| h.chunk.id.as_str()).collect()
}

/// The bundled example corpus and its evaluation.
fn bundled() -> (Arc<Corpus>, TokenLevelEvaluation) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");
    let corpus = Arc::new(Corpus::from_folder(format!("{root}/corpus"), None).unwrap());
    let AnyDataset::Token(questions) = dataset::load(format!("{root}/questions.jsonl")).unwrap()
    else {
        panic!("the bundled dataset is token-level")
    };
    let eval = TokenLevelEvaluation::new(Arc::clone(&corpus), questions).unwrap();
    (corpus, eval)
}

#[test]
fn bundled_evaluation_matches_the_in_memory_store() {
    let Some(url) = server() else { return };
    let (corpus, eval) = bundled();
    let chunker = RecursiveCharacterChunker::new(400, 0);
    let spans: Vec<CharSpan> = chunker
        .chunk_corpus(&corpus)
        .into_iter()
        .map(|c| c.span)
        .collect();
    let metrics = token_level_metrics(SpanMode::Standard, Some(ChunkIndex::new(&spans)));
    let k = 5;

    let memory =
        Pipeline::new(chunker.clone(), HashingEmbedder::default()).with_store(InMemoryStore::new());
    let expected = eval.run_blocking(&memory, k, &metrics).unwrap();

    let store = ChromaStore::new(&url, unique("eval")).unwrap();
    let _cleanup = Cleanup(&store);
    let chroma = Pipeline::new(chunker, HashingEmbedder::default())
        .with_store(ChromaStore::new(&url, store.collection()).unwrap());
    let started = Instant::now();
    let got = eval.run_blocking(&chroma, k, &metrics).unwrap();
    eprintln!(
        "{} chunks, {} queries: in-memory index {:.1} ms + retrieve {:.1} ms; chroma index {:.1} ms + retrieve {:.1} ms ({:.2} s in all)",
        spans.len(),
        eval.dataset().len(),
        expected.timings.index_ms,
        expected.timings.retrieve_ms,
        got.timings.index_ms,
        got.timings.retrieve_ms,
        started.elapsed().as_secs_f64()
    );
    assert_eq!(block_on(store.len()).unwrap(), spans.len());
    let retriever = got
        .scores
        .config
        .as_ref()
        .unwrap()
        .retriever
        .as_deref()
        .unwrap();
    assert!(retriever.contains("chroma("), "{retriever}");

    // The embedder is deterministic, so every chunk's true score can be recomputed.
    let embedder = HashingEmbedder::default();
    let texts: HashMap<PositionAwareChunkId, String> = spans_and_texts(&corpus);
    let mut reordered = Vec::new();
    for (e, (want, have)) in eval
        .dataset()
        .examples()
        .iter()
        .zip(expected.retrieved.iter().zip(&got.retrieved))
    {
        let q = embedder.embed_one(&e.query);
        let true_score = |h: &RetrievedChunk| cosine(&q, &embedder.embed_one(&texts[&h.chunk.id]));
        if let Err(why) = same_top_k(want, have, true_score) {
            panic!(
                "query {} ({:?}): {why}\n in-memory {:?}\n chroma    {:?}",
                e.id,
                e.query,
                scored(want),
                scored(have)
            );
        }
        if ids(want) != ids(have) {
            reordered.push(e.id.clone());
        }
    }
    if reordered.is_empty() {
        assert_eq!(got.scores.metrics, expected.scores.metrics);
        assert_eq!(got.scores.per_query, expected.scores.per_query);
    } else {
        // Near-ties may come out in another order; the other queries must score the same.
        eprintln!("near-ties ordered differently in {reordered:?}");
        for (a, b) in expected.scores.per_query.iter().zip(&got.scores.per_query) {
            if !reordered.contains(&a.id) {
                assert_eq!(a, b);
            }
        }
    }
    eprintln!("figures: {:?}", got.scores.metrics);
    // The figures are not trivially equal: the run found relevant text.
    assert!(expected.scores.metrics.get("span_recall@5").unwrap() > 0.1);
}

/// Every position-aware chunk of the corpus with its text.
fn spans_and_texts(corpus: &Corpus) -> HashMap<PositionAwareChunkId, String> {
    RecursiveCharacterChunker::new(400, 0)
        .chunk_corpus(corpus)
        .into_iter()
        .map(|c| (c.id, c.content))
        .collect()
}

fn scored(hits: &[RetrievedChunk]) -> Vec<(&str, f32)> {
    hits.iter()
        .map(|h| (h.chunk.id.as_str(), h.score))
        .collect()
}

/// Same length; the same score (within [`TIE`]) at every rank; each chunk Chroma returned
/// scored as it truly does; no chunk twice; and runs of scores that are not tied hold the same
/// chunks in the same order, while a tied run holds the same chunks in any order (or, at the
/// cut, any chunks that tie with it).
fn same_top_k(
    want: &[RetrievedChunk],
    have: &[RetrievedChunk],
    true_score: impl Fn(&RetrievedChunk) -> f32,
) -> Result<(), String> {
    if want.len() != have.len() {
        return Err(format!("{} results, expected {}", have.len(), want.len()));
    }
    let mut seen = HashSet::new();
    for (i, (w, h)) in want.iter().zip(have).enumerate() {
        if (w.score - h.score).abs() > TIE {
            return Err(format!("rank {i} scores {}, expected {}", h.score, w.score));
        }
        let t = true_score(h);
        if (t - h.score).abs() > TIE {
            return Err(format!("rank {i} reports {} but scores {t}", h.score));
        }
        if !seen.insert(&h.chunk.id) {
            return Err(format!("chunk {} returned twice", h.chunk.id));
        }
        if h.chunk != w.chunk && h.chunk.id == w.chunk.id {
            return Err(format!("chunk {} came back altered", h.chunk.id));
        }
    }
    // Split the expected list into runs of tied scores.
    let mut start = 0;
    while start < want.len() {
        let mut end = start + 1;
        while end < want.len() && (want[end - 1].score - want[end].score).abs() <= TIE {
            end += 1;
        }
        let w: HashSet<_> = want[start..end].iter().map(|h| &h.chunk.id).collect();
        let h: HashSet<_> = have[start..end].iter().map(|h| &h.chunk.id).collect();
        if end < want.len() && w != h {
            return Err(format!("ranks {start}..{end} hold other chunks"));
        }
        start = end;
    }
    Ok(())
}

#[test]
fn stores_searches_replaces_and_clears() {
    let Some(url) = server() else { return };
    // A tenant and database of their own exercise their creation.
    let store = ChromaStore::new(&url, unique("store"))
        .unwrap()
        .with_tenant("rag-eval-tests")
        .unwrap()
        .with_database("store-tests")
        .unwrap()
        .with_batch_size(2);
    let _cleanup = Cleanup(&store);
    assert!(block_on(store.is_empty()).unwrap());
    assert_eq!(block_on(store.dimension()).unwrap(), None);
    assert_eq!(
        store.name(),
        format!(
            "chroma(rag-eval-tests/store-tests/{}, cosine)",
            store.collection()
        )
    );
    // Nothing stored: no results, whatever the query's length.
    assert!(block_on(store.search(&[1.0, 2.0, 3.0], 3))
        .unwrap()
        .is_empty());

    let mut cats = chunk("a.md", 0, "cats");
    cats.metadata
        .insert("section".into(), json!({"title": "Pets"}));
    let dogs = chunk("a.md", 5, "dogs");
    let fish = chunk("b.md", 0, "fish");
    let chunks = [cats.clone(), dogs.clone(), fish.clone()];
    // Five records in batches of two, scaled vectors: cosine ignores length.
    block_on(store.add(&chunks, &[vec![2.0, 0.0], vec![0.6, 0.8], vec![0.0, 5.0]])).unwrap();
    assert_eq!(block_on(store.len()).unwrap(), 3);
    assert_eq!(block_on(store.dimension()).unwrap(), Some(2));

    let hits = block_on(store.search(&[0.0, 2.0], 2)).unwrap();
    assert_eq!(ids(&hits), [fish.id.as_str(), dogs.id.as_str()]);
    assert!((hits[0].score - 1.0).abs() < 1e-6, "{}", hits[0].score);
    assert!((hits[1].score - 0.8).abs() < 1e-6, "{}", hits[1].score);
    assert_eq!(hits[1].chunk, dogs);
    // k beyond the store: everything, best first; the chunk's own metadata comes back.
    let hits = block_on(store.search(&[3.0, 0.0], 10)).unwrap();
    assert_eq!(
        ids(&hits),
        [cats.id.as_str(), dogs.id.as_str(), fish.id.as_str()]
    );
    assert_eq!(hits[0].chunk, cats);
    assert!(hits[2].score.abs() < 1e-6);
    assert!(block_on(store.search(&[3.0, 0.0], 0)).unwrap().is_empty());

    // Same id again: the vector is replaced, nothing added; a repeated id keeps its last vector.
    block_on(store.add(
        &[cats.clone(), cats.clone()],
        &[vec![1.0, 0.0], vec![0.0, 1.0]],
    ))
    .unwrap();
    assert_eq!(block_on(store.len()).unwrap(), 3);
    let hits = block_on(store.search(&[0.0, 1.0], 3)).unwrap();
    assert!((hits[0].score - 1.0).abs() < 1e-6 && (hits[1].score - 1.0).abs() < 1e-6);
    let mut tied = [cats.id.as_str(), fish.id.as_str()];
    tied.sort();
    assert_eq!(ids(&hits[..2]), tied, "ties break by chunk id");

    block_on(store.delete(std::slice::from_ref(&dogs.id))).unwrap();
    assert_eq!(block_on(store.len()).unwrap(), 2);

    block_on(store.clear()).unwrap();
    assert!(block_on(store.is_empty()).unwrap());
    // Cleared means a new collection: another dimension is fine now.
    assert_eq!(block_on(store.dimension()).unwrap(), None);
    block_on(store.add(std::slice::from_ref(&dogs), &[vec![1.0, 2.0, 3.0]])).unwrap();
    assert_eq!(block_on(store.dimension()).unwrap(), Some(3));
}

#[test]
fn a_collection_deleted_by_another_client_is_created_again() {
    let Some(url) = server() else { return };
    let a = ChromaStore::new(&url, unique("shared")).unwrap();
    let _cleanup = Cleanup(&a);
    let b = ChromaStore::new(&url, a.collection()).unwrap();
    let cats = chunk("a.md", 0, "cats");
    let dogs = chunk("a.md", 5, "dogs");
    block_on(a.add(std::slice::from_ref(&cats), &[vec![1.0, 0.0]])).unwrap();
    let first = block_on(b.connect()).unwrap();
    assert_eq!(block_on(b.len()).unwrap(), 1);

    block_on(a.clear()).unwrap();
    // `b` still holds the old collection's id: the server answers 404, `b` looks again.
    assert!(block_on(b.search(&[1.0, 0.0], 1)).unwrap().is_empty());
    let second = block_on(b.connect()).unwrap();
    assert_ne!(first, second);
    // Again for `search_many`.
    block_on(a.clear()).unwrap();
    let hits = block_on(b.search_many(&[vec![1.0, 0.0], vec![0.0, 1.0]], 1)).unwrap();
    assert_eq!(hits, vec![Vec::new(); 2]);
    let second = block_on(b.connect()).unwrap();
    assert_ne!(first, second);
    block_on(b.add(std::slice::from_ref(&dogs), &[vec![0.0, 1.0]])).unwrap();
    assert_eq!(block_on(a.len()).unwrap(), 1);
    let hits = block_on(a.search(&[0.0, 1.0], 5)).unwrap();
    assert_eq!(ids(&hits), [dogs.id.as_str()]);
}

#[test]
fn ties_beyond_the_first_query_still_break_by_id() {
    let Some(url) = server() else { return };
    let store = ChromaStore::new(&url, unique("ties")).unwrap();
    let _cleanup = Cleanup(&store);
    // Twenty copies of one vector, more than k plus the store's margin, and one better chunk.
    let mut chunks: Vec<PositionAwareChunk> = (0..20)
        .map(|i| chunk("copies.md", i * 10, "same text"))
        .collect();
    let mut vectors = vec![vec![0.5, 0.5, 0.0]; 20];
    chunks.push(chunk("best.md", 0, "best"));
    vectors.push(vec![1.0, 0.2, 0.0]);
    // A zero vector scores 0 against every query, as in the in-memory store.
    chunks.push(chunk("zero.md", 0, "zero"));
    vectors.push(vec![0.0, 0.0, 0.0]);
    block_on(store.add(&chunks, &vectors)).unwrap();

    let memory = InMemoryStore::new();
    memory.insert(&chunks, &vectors).unwrap();
    for k in [1, 3, 8, 21, 30] {
        let query = [1.0, 0.3, 0.0];
        let want = block_on(memory.search(&query, k)).unwrap();
        let have = block_on(store.search(&query, k)).unwrap();
        assert_eq!(ids(&have), ids(&want), "k = {k}");
        for (h, w) in have.iter().zip(&want) {
            assert!(
                (h.score - w.score).abs() < 1e-6,
                "{} vs {}",
                h.score,
                w.score
            );
        }
    }
    let zero = chunks.last().unwrap();
    let hits = block_on(store.search(&[0.0, 0.0, 1.0], 30)).unwrap();
    let z = hits.iter().find(|h| h.chunk.id == zero.id).unwrap();
    assert_eq!(z.score, 0.0);
}

#[test]
fn bad_vectors_are_rejected_with_what_and_where() {
    let Some(url) = server() else { return };
    let store = ChromaStore::new(&url, unique("dims")).unwrap();
    let _cleanup = Cleanup(&store);
    let a = chunk("a.md", 0, "cats");
    let b = chunk("a.md", 5, "dogs");
    block_on(store.add(std::slice::from_ref(&a), &[vec![1.0, 0.0]])).unwrap();

    let err = block_on(store.add(std::slice::from_ref(&b), &[vec![1.0, 0.0, 0.0]])).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("dimension 3, expected 2") && msg.contains(b.id.as_str()),
        "{msg}"
    );
    let err = block_on(store.search(&[1.0, 0.0, 0.0], 1)).unwrap_err();
    assert!(err.to_string().contains("query has dimension 3"), "{err}");
    let err = block_on(store.add(std::slice::from_ref(&b), &[vec![f32::NAN, 0.0]])).unwrap_err();
    assert!(
        err.to_string()
            .contains("non-finite component NaN at index 0"),
        "{err}"
    );
    let err = block_on(store.add(&[a.clone(), b.clone()], &[vec![1.0, 0.0]])).unwrap_err();
    assert!(
        err.to_string().contains("2 chunks but 1 embeddings"),
        "{err}"
    );
    assert_eq!(block_on(store.len()).unwrap(), 1, "nothing was written");

    // A second client that learnt the collection before the first write has no dimension
    // to check against: Chroma refuses, and its message comes through with the endpoint.
    let other = ChromaStore::new(&url, unique("dims-2")).unwrap();
    let _cleanup_other = Cleanup(&other);
    let late = ChromaStore::new(&url, other.collection()).unwrap();
    block_on(late.connect()).unwrap();
    block_on(other.add(std::slice::from_ref(&a), &[vec![1.0, 0.0]])).unwrap();
    let err = block_on(late.add(std::slice::from_ref(&b), &[vec![1.0, 0.0, 0.0]])).unwrap_err();
    let Error::Http {
        endpoint, status, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(*status, Some(400), "{err}");
    assert!(
        endpoint.starts_with("POST ") && endpoint.ends_with("/upsert"),
        "{endpoint}"
    );
    assert!(
        err.to_string()
            .contains("Collection expecting embedding with dimension of 2, got 3"),
        "{err}"
    );
}

#[test]
fn collections_not_made_for_cosine_or_by_this_store_are_refused() {
    let Some(url) = server() else { return };
    let http = HttpClient::new(HttpConfig::new(&url)).unwrap();
    let base = "/api/v2/tenants/default_tenant/databases/default_database/collections";

    let l2 = unique("l2");
    let made: Value = block_on(http.post_json(
        base,
        &json!({"name": l2, "configuration": {"hnsw": {"space": "l2"}}}),
    ))
    .unwrap();
    let store = ChromaStore::new(&url, &l2).unwrap();
    let _cleanup = Cleanup(&store);
    let err = block_on(store.connect()).unwrap_err().to_string();
    assert!(err.contains(&l2) && err.contains("`l2`"), "{err}");
    assert!(made["id"].is_string());

    // A record written by someone else, without the chunk's position.
    let foreign = ChromaStore::new(&url, unique("foreign")).unwrap();
    let _cleanup_foreign = Cleanup(&foreign);
    let id = block_on(foreign.connect()).unwrap();
    let _: Value = block_on(http.post_json(
        &format!("{base}/{id}/add"),
        &json!({"ids": ["x1"], "embeddings": [[1.0, 0.0]], "documents": ["text"]}),
    ))
    .unwrap();
    let err = block_on(foreign.search(&[1.0, 0.0], 1)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("record `x1`") && msg.contains("not written by ChromaStore"),
        "{msg}"
    );
    assert!(msg.contains(&format!("{id}/query")), "{msg}");
    // Searched with others, the failure names the query it answers and the collection.
    let err = block_on(foreign.search_many(&[vec![1.0, 0.0], vec![0.0, 1.0]], 1)).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("chroma collection `{}`", foreign.collection()))
            && msg.contains("query 0: record `x1`")
            && msg.contains("not written by ChromaStore"),
        "{msg}"
    );
}

/// Needs no server: nothing listens on port 1.
#[test]
fn an_unreachable_server_is_named_in_the_error() {
    let store = ChromaStore::with_http(
        HttpConfig::new("http://127.0.0.1:1")
            .with_max_retries(1)
            .with_backoff(Duration::from_millis(1), Duration::from_millis(2))
            .with_timeout(Duration::from_secs(5)),
        "unreachable",
    )
    .unwrap();
    let err = block_on(store.len()).unwrap_err();
    let Error::Http {
        endpoint, status, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(
        endpoint,
        "GET http://127.0.0.1:1/api/v2/tenants/default_tenant"
    );
    assert_eq!(*status, None);
    // A refused connection is not retried.
    assert!(
        err.to_string()
            .contains("cannot connect (connection refused)"),
        "{err}"
    );
    assert_eq!(store.http_stats().requests, 1);
}

/// The chunking-eval-general benchmark (4.6k chunks, 472 questions) through Chroma, against
/// the exact search of the in-memory store.
/// Chroma's index is approximate: with Chroma's defaults (ef_search 100, ef_construction 100)
/// it missed about 6% of the exact top-5 here, the hashing embedder's sparse vectors being hard
/// for HNSW; with a wider search it must find nearly all of them, score each as the exact
/// search does, and order them as the exact search does wherever it found them all.
#[test]
#[ignore = "needs ../shared/data"]
fn benchmark_corpus_agrees_with_exact_search() {
    let root = shared_data::chunking_eval_general();
    let Some(url) = server() else { return };
    let corpus =
        Arc::new(Corpus::from_folder(root.join("corpora").to_str().unwrap(), None).unwrap());
    let questions = rag_eval::dataset::import::chroma_csv(
        root.join("questions_df.csv").to_str().unwrap(),
        &corpus,
    )
    .unwrap();
    let eval = TokenLevelEvaluation::new(corpus.clone(), questions).unwrap();
    let chunker = RecursiveCharacterChunker::new(400, 0);
    let chunks = chunker.chunk_corpus(&corpus);
    let spans: Vec<CharSpan> = chunks.iter().map(|c| c.span.clone()).collect();
    let metrics = token_level_metrics(SpanMode::Standard, Some(ChunkIndex::new(&spans)));
    let k = 5;
    // The exact reference: every query at once through the in-memory store's matrix product.
    let embedder = HashingEmbedder::default();
    let vectors: Vec<Vec<f32>> = chunks
        .iter()
        .map(|c| embedder.embed_one(&c.content))
        .collect();
    let memory = InMemoryStore::new();
    memory.insert(&chunks, &vectors).unwrap();
    let queries: Vec<Vec<f32>> = eval
        .dataset()
        .examples()
        .iter()
        .map(|e| embedder.embed_one(&e.query))
        .collect();
    let started = Instant::now();
    let expected = memory.search_many(&queries, k).unwrap();
    let exact_ms = started.elapsed().as_secs_f64() * 1e3;

    let store = ChromaStore::new(&url, unique("bench"))
        .unwrap()
        .with_ef_search(1000)
        .with_ef_construction(200);
    let _cleanup = Cleanup(&store);
    let chroma = Pipeline::new(chunker, HashingEmbedder::default()).with_store(
        ChromaStore::new(&url, store.collection())
            .unwrap()
            .with_ef_search(1000)
            .with_ef_construction(200),
    );
    let got = eval.run_blocking(&chroma, k, &metrics).unwrap();

    let texts: HashMap<&PositionAwareChunkId, &str> =
        chunks.iter().map(|c| (&c.id, c.content.as_str())).collect();
    let (mut identical, mut found) = (0, 0);
    for (e, (want, have)) in eval
        .dataset()
        .examples()
        .iter()
        .zip(expected.iter().zip(&got.retrieved))
    {
        let q = embedder.embed_one(&e.query);
        let true_score = |h: &RetrievedChunk| cosine(&q, &embedder.embed_one(texts[&h.chunk.id]));
        for h in have {
            let t = true_score(h);
            assert!(
                (t - h.score).abs() <= TIE,
                "query {}: {} scored {} not {t}",
                e.id,
                h.chunk.id,
                h.score
            );
        }
        assert!(
            have.windows(2).all(|w| w[0].score >= w[1].score),
            "query {}: {:?}",
            e.id,
            scored(have)
        );
        let w: HashSet<_> = ids(want).into_iter().collect();
        let hits = ids(have).iter().filter(|id| w.contains(*id)).count();
        found += hits;
        if hits == want.len() {
            if let Err(why) = same_top_k(want, have, true_score) {
                panic!(
                    "query {}: {why}\n in-memory {:?}\n chroma    {:?}",
                    e.id,
                    scored(want),
                    scored(have)
                );
            }
        }
        identical += usize::from(ids(want) == ids(have));
    }
    let total = eval.dataset().len() * k;
    eprintln!(
        "{} chunks, {} queries: {found} of the {total} exact top-{k} hits found, identical lists for {identical}; exact search of all queries {exact_ms:.0} ms; chroma index {:.0} ms + retrieve {:.0} ms",
        chunks.len(),
        eval.dataset().len(),
        got.timings.index_ms,
        got.timings.retrieve_ms,
    );
    assert!(found * 100 >= total * 98, "{found} of {total}");
}

/// A proxy in front of the Chroma server: it records how many query embeddings each query
/// request carries and can refuse one query request, as Chroma refuses a bad one (400).
struct Proxy {
    server: support::TestServer,
    queries: Arc<Mutex<Vec<usize>>>,
}

impl Proxy {
    /// Forwards everything to `url`; the query request numbered `fail` (from 0), if any, is
    /// answered with a 400 instead.
    fn new(url: &str, fail: Option<usize>) -> Proxy {
        let upstream = url
            .trim_end_matches('/')
            .trim_start_matches("http://")
            .to_owned();
        let queries = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&queries);
        let server = support::TestServer::start(move |request| {
            if request.method == "POST" && request.path().ends_with("/query") {
                let body = request.json().expect("a JSON query");
                let n = body["query_embeddings"].as_array().map_or(0, Vec::len);
                let mut log = log.lock().unwrap();
                log.push(n);
                if fail == Some(log.len() - 1) {
                    return support::Reply::json(
                        400,
                        &json!({"error": "InvalidArgumentError", "message": "refused on purpose"}),
                    );
                }
            }
            forward(&upstream, &request)
        });
        Proxy { server, queries }
    }

    fn url(&self) -> String {
        self.server.url("")
    }

    /// Query requests so far.
    fn count(&self) -> usize {
        self.queries.lock().unwrap().len()
    }

    /// The query embeddings of each query request since the last call.
    fn take(&self) -> Vec<usize> {
        std::mem::take(&mut *self.queries.lock().unwrap())
    }
}

/// `request` sent to `upstream` (`host:port`) on a connection of its own, its answer returned.
fn forward(upstream: &str, request: &support::Request) -> support::Reply {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(upstream).expect("connect to Chroma");
    let head = format!(
        "{} {} HTTP/1.1\r\nhost: {upstream}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        request.method,
        request.target,
        request.body.len()
    );
    stream.write_all(head.as_bytes()).expect("send to Chroma");
    stream.write_all(&request.body).expect("send to Chroma");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("Chroma's answer");
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP answer");
    let head = String::from_utf8_lossy(&answer[..end]);
    assert!(
        !head.to_ascii_lowercase().contains("transfer-encoding"),
        "a chunked answer: {head}"
    );
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    support::Reply::raw(status, answer[end + 4..].to_vec())
}

/// The requests `search_many` should make in batches of `size`, given how many requests each
/// query took alone: per batch, one request per round, holding the queries not yet complete.
fn expected_requests(rounds: &[usize], size: usize) -> Vec<usize> {
    let mut requests = Vec::new();
    for batch in rounds.chunks(size) {
        let most = batch.iter().copied().max().unwrap_or(0);
        for round in 0..most {
            requests.push(batch.iter().filter(|&&r| r > round).count());
        }
    }
    requests
}

/// Each query searched alone, with the query requests it took.
fn one_by_one(
    store: &ChromaStore,
    proxy: &Proxy,
    queries: &[Vec<f32>],
    k: usize,
) -> (Vec<Vec<RetrievedChunk>>, Vec<usize>) {
    let mut hits = Vec::new();
    let mut rounds = Vec::new();
    for q in queries {
        let before = proxy.count();
        hits.push(block_on(store.search(q, k)).unwrap());
        rounds.push(proxy.count() - before);
    }
    proxy.take();
    (hits, rounds)
}

#[test]
fn search_many_is_search_for_each_query_in_one_request_per_batch() {
    let Some(url) = server() else { return };
    let proxy = Proxy::new(&url, None);
    let store = ChromaStore::new(proxy.url(), unique("many"))
        .unwrap()
        .with_query_batch_size(3);
    let _cleanup = Cleanup(&store);
    // Twenty copies of one vector (ties beyond the first request for some queries), a better
    // chunk, a zero vector and a few others: 25 chunks.
    let mut chunks: Vec<PositionAwareChunk> = (0..20)
        .map(|i| chunk("copies.md", i * 10, "same text"))
        .collect();
    let mut vectors = vec![vec![0.5, 0.5, 0.0]; 20];
    for (i, v) in [
        [1.0, 0.2, 0.0],
        [0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.2, 0.1, 0.9],
        [0.7, -0.7, 0.1],
    ]
    .into_iter()
    .enumerate()
    {
        chunks.push(chunk("other.md", i * 10, &format!("other {i}")));
        vectors.push(v.to_vec());
    }
    block_on(store.add(&chunks, &vectors)).unwrap();
    let queries: Vec<Vec<f32>> = [
        [1.0, 0.3, 0.0],
        [0.0, 0.0, 1.0],
        [0.5, 0.5, 0.0],
        [1.0, 0.0, 0.0],
        [-1.0, 0.2, 0.1],
        [0.2, 1.0, 0.0],
        [3.0, 0.9, 0.0],
        [0.0, 0.0, 0.0],
    ]
    .iter()
    .map(|q| q.to_vec())
    .collect();
    proxy.take();

    for k in [1, 3, 8, 25, 40] {
        let (want, rounds) = one_by_one(&store, &proxy, &queries, k);
        let have = block_on(store.search_many(&queries, k)).unwrap();
        assert_eq!(have, want, "k = {k}");
        assert_eq!(proxy.take(), expected_requests(&rounds, 3), "k = {k}");
        if k >= chunks.len() {
            // Everything in the first answer: one request per batch of three.
            assert_eq!(rounds, [1; 8], "k = {k}");
        }
    }
    // Ties at the cut made some queries ask again: the comparison above covered that case.
    let (_, rounds) = one_by_one(&store, &proxy, &queries, 3);
    assert!(rounds.iter().any(|&r| r > 1), "{rounds:?}");
    let have = block_on(store.search_many(&queries, 40)).unwrap();
    assert_eq!(have.iter().map(Vec::len).collect::<Vec<_>>(), [25; 8]);
    assert_eq!(proxy.take(), [3, 3, 2]);

    // Nothing to search: nothing sent.
    assert!(block_on(store.search_many(&[], 5)).unwrap().is_empty());
    let none = block_on(store.search_many(&queries, 0)).unwrap();
    assert_eq!(none, vec![Vec::new(); 8]);
    assert_eq!(proxy.take(), Vec::<usize>::new());

    // A bad query fails before any request, named by its position.
    let mut bad = queries.clone();
    bad[5] = vec![1.0, 0.0];
    let err = block_on(store.search_many(&bad, 3))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("query 5 has dimension 2, expected 3") && err.contains(store.collection()),
        "{err}"
    );
    bad[5] = vec![f32::NAN, 0.0, 0.0];
    let err = block_on(store.search_many(&bad, 3))
        .unwrap_err()
        .to_string();
    assert!(err.contains("query 5 has a non-finite component"), "{err}");
    assert_eq!(proxy.take(), Vec::<usize>::new());
}

#[test]
fn a_collection_without_a_dimension_gets_one_request_per_dimension() {
    let Some(url) = server() else { return };
    let proxy = Proxy::new(&url, None);
    let store = ChromaStore::new(proxy.url(), unique("dimless")).unwrap();
    let _cleanup = Cleanup(&store);
    // Empty, so any query goes; Chroma refuses a request mixing dimensions.
    let queries = [
        vec![1.0, 0.0],
        vec![0.0, 1.0],
        vec![1.0, 0.0, 0.0],
        vec![0.5, 0.5],
    ];
    let hits = block_on(store.search_many(&queries, 2)).unwrap();
    assert_eq!(hits, vec![Vec::new(); 4]);
    assert_eq!(proxy.take(), [2, 1, 1]);
}

#[test]
fn a_failing_batch_names_its_queries_and_stops_the_search() {
    let Some(url) = server() else { return };
    // The second query request fails.
    let proxy = Proxy::new(&url, Some(1));
    let store = ChromaStore::new(proxy.url(), unique("fault"))
        .unwrap()
        .with_query_batch_size(2);
    let _cleanup = Cleanup(&store);
    let chunks = [chunk("a.md", 0, "cats"), chunk("a.md", 5, "dogs")];
    block_on(store.add(&chunks, &[vec![1.0, 0.0], vec![0.0, 1.0]])).unwrap();
    let queries: Vec<Vec<f32>> = (0..5).map(|i| vec![1.0, i as f32]).collect();
    let err = block_on(store.search_many(&queries, 1)).unwrap_err();
    let Error::Http {
        endpoint,
        status,
        message,
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(*status, Some(400), "{err}");
    assert!(endpoint.ends_with("/query"), "{endpoint}");
    assert!(
        message.contains(&format!("chroma collection `{}`", store.collection()))
            && message.contains("queries 2..4 (searched together)")
            && message.contains("refused on purpose"),
        "{message}"
    );
    // The third batch was never sent.
    assert_eq!(proxy.take(), [2, 2]);

    // Through an evaluation, the failure reaches the retrieval error.
    let proxy = Proxy::new(&url, Some(0));
    let (_, eval) = bundled();
    let store = Arc::new(
        ChromaStore::new(proxy.url(), unique("fault-eval"))
            .unwrap()
            .with_query_batch_size(16),
    );
    let _cleanup = Cleanup(&store);
    let pipeline = Pipeline::new(
        RecursiveCharacterChunker::new(400, 0),
        HashingEmbedder::default(),
    )
    .with_store(Arc::clone(&store));
    let metrics = token_level_metrics(SpanMode::Standard, None);
    let err = eval
        .run_blocking(&pipeline, 5, &metrics)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("queries 0..16 (searched together)") && err.contains("refused on purpose"),
        "{err}"
    );
    assert_eq!(proxy.take(), [16]);
}

/// An evaluation of a dense pipeline on a Chroma store retrieves through `search_many`: its
/// query requests are batches, and each query gets what a search of it alone gets.
#[test]
fn an_evaluation_searches_chroma_in_batches() {
    let Some(url) = server() else { return };
    let proxy = Proxy::new(&url, None);
    let (_, eval) = bundled();
    let size = 16;
    let store = Arc::new(
        ChromaStore::new(proxy.url(), unique("eval-many"))
            .unwrap()
            .with_query_batch_size(size),
    );
    let _cleanup = Cleanup(&store);
    let pipeline = Pipeline::new(
        RecursiveCharacterChunker::new(400, 0),
        HashingEmbedder::default(),
    )
    .with_store(Arc::clone(&store));
    let metrics = token_level_metrics(SpanMode::Standard, None);
    let k = 5;
    let got = eval.run_blocking(&pipeline, k, &metrics).unwrap();
    let requests = proxy.take();

    let embedder = HashingEmbedder::default();
    let queries: Vec<Vec<f32>> = eval
        .dataset()
        .examples()
        .iter()
        .map(|e| embedder.embed_one(&e.query))
        .collect();
    let (want, rounds) = one_by_one(&store, &proxy, &queries, k);
    assert_eq!(got.retrieved, want);
    assert_eq!(requests, expected_requests(&rounds, size));
    assert!(requests.len() < queries.len() / 2, "{requests:?}");
}
