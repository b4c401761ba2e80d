//! The 472-question chunking-eval-general evaluation, per query against batched: BM25 and the
//! dense pipeline with the hashing embedder, both over `recursive:size=400,overlap=0`, k = 5.
//!
//! "Per query" is the evaluation as it ran before `Retriever::retrieve_many`: the retriever
//! wrapped so that only `retrieve` is visible, so the evaluation falls back to one call per
//! query, 8 in flight. "Batched" is the same evaluation with the retriever's own
//! `retrieve_many`. Both sides' retrieved chunks are compared (they must be identical), and the
//! two are measured in alternation in the same run. Each dense run gets a fresh pipeline, so
//! that no query vector is remembered from the run before; its indexing is not counted.
//!
//! `cargo bench --bench eval` (optional: `-- --reps N`, default 7). Without
//! `../shared/data/chunking-eval-general` it prints a notice and exits. Under
//! `cargo test --benches` it runs the BM25 pair once, unmeasured, as a smoke test.

use rag_eval::chunk::RetrievedChunk;
use rag_eval::chunker::PositionAwareChunker;
use rag_eval::prelude::*;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A retriever seen through `retrieve` alone: `retrieve_many` is the trait's default.
struct PerQuery<R>(R);

#[async_trait::async_trait]
impl<R: Retriever<TokenLevel>> Retriever<TokenLevel> for PerQuery<R> {
    fn name(&self) -> String {
        self.0.name()
    }
    fn chunker(&self) -> Option<rag_eval::spec::Value> {
        self.0.chunker()
    }
    fn chunker_object(&self) -> Option<&dyn PositionAwareChunker> {
        self.0.chunker_object()
    }
    fn indexed_spans(&self) -> Option<Vec<CharSpan>> {
        self.0.indexed_spans()
    }
    async fn index(&self, corpus: &Arc<Corpus>) -> rag_eval::Result<()> {
        self.0.index(corpus).await
    }
    async fn retrieve(&self, query: &str, k: usize) -> rag_eval::Result<Vec<RetrievedChunk>> {
        self.0.retrieve(query, k).await
    }
}

const K: usize = 5;

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Wall time of the evaluation after indexing (retrieval and scoring), and what it retrieved.
fn timed<R: Retriever<TokenLevel>>(
    eval: &TokenLevelEvaluation,
    retriever: &R,
    metrics: &[Box<dyn Metric<TokenLevel>>],
) -> (Duration, Duration, Vec<Vec<RetrievedChunk>>) {
    pollster::block_on(retriever.index(eval.corpus())).expect("indexing");
    let started = Instant::now();
    let result = eval
        .run_blocking(retriever, K, metrics)
        .expect("evaluation");
    let total = started.elapsed();
    let retrieve = Duration::from_secs_f64(result.timings.retrieve_ms / 1e3);
    (total, retrieve, result.retrieved)
}

fn dense() -> Pipeline {
    Pipeline::new(
        RecursiveCharacterChunker::new(400, 0),
        HashingEmbedder::default(),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let measuring = args.iter().any(|a| a == "--bench");
    let reps = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(7usize)
        .max(1);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/chunking-eval-general");
    if !dir.is_dir() {
        println!(
            "skipping the evaluation benchmark: {} is absent",
            dir.display()
        );
        return;
    }
    let corpora = dir.join("corpora");
    let corpus = Arc::new(
        Corpus::from_folder(corpora.to_str().expect("UTF-8 path"), None).expect("corpora load"),
    );
    let questions = rag_eval::dataset::import::chroma_csv(
        dir.join("questions_df.csv").to_str().expect("UTF-8 path"),
        &corpus,
    )
    .expect("questions load");
    let n = questions.len();
    let eval = TokenLevelEvaluation::new(Arc::clone(&corpus), questions).expect("evaluation");
    let metrics = token_level_metrics(SpanMode::Standard, None);

    let bm25 = Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0));
    let bm25_per_query = PerQuery(Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0)));
    if !measuring {
        let (_, _, a) = timed(&eval, &bm25_per_query, &metrics);
        let (_, _, b) = timed(&eval, &bm25, &metrics);
        assert_eq!(a, b, "batched BM25 must retrieve what per-query BM25 does");
        println!("evaluation smoke run: {n} questions, BM25 per query = batched; use `cargo bench` to measure");
        return;
    }
    println!(
        "chunking-eval-general: {n} questions, {} documents, k = {K}; medians of {reps} runs, \
         interleaved; wall time after indexing (retrieval + scoring), retrieval alone in brackets",
        corpus.len()
    );
    let mut runs: [(Vec<Duration>, Vec<Duration>); 4] = Default::default();
    for rep in 0..reps {
        // Alternate which side goes first, so that neither always runs on a warmer cache.
        let order: [usize; 4] = if rep % 2 == 0 {
            [0, 1, 2, 3]
        } else {
            [1, 0, 3, 2]
        };
        let mut seen: [Option<Vec<Vec<RetrievedChunk>>>; 4] = Default::default();
        for side in order {
            let (total, retrieve, hits) = match side {
                0 => timed(&eval, &bm25_per_query, &metrics),
                1 => timed(&eval, &bm25, &metrics),
                2 => timed(&eval, &PerQuery(dense()), &metrics),
                _ => timed(&eval, &dense(), &metrics),
            };
            runs[side].0.push(total);
            runs[side].1.push(retrieve);
            seen[side] = Some(hits);
        }
        assert_eq!(
            seen[0], seen[1],
            "BM25: batched must retrieve what per-query does"
        );
        assert_eq!(
            seen[2], seen[3],
            "dense: batched must retrieve what per-query does"
        );
    }
    let labels = [
        "bm25 over recursive 400/0, per query",
        "bm25 over recursive 400/0, batched",
        "dense hashing(dim=384,ngrams=2), per query",
        "dense hashing(dim=384,ngrams=2), batched",
    ];
    let medians: Vec<(Duration, Duration)> = runs
        .into_iter()
        .map(|(t, r)| (median(t), median(r)))
        .collect();
    for (label, (total, retrieve)) in labels.iter().zip(&medians) {
        println!("{label:<44} {:>12}  ({})", ms(*total), ms(*retrieve));
    }
    for (name, a, b) in [("bm25", 0, 1), ("dense", 2, 3)] {
        println!(
            "{name}: batched {:.1}x the per-query speed (evaluation), {:.1}x (retrieval)",
            medians[a].0.as_secs_f64() / medians[b].0.as_secs_f64(),
            medians[a].1.as_secs_f64() / medians[b].1.as_secs_f64()
        );
    }
}
