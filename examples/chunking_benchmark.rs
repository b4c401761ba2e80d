//! Runs the chunking-eval-general benchmark (472 questions over five corpora, retrieval across
//! all of them) with BM25 in the Chroma-compatible mode and prints the table in the published
//! format: recall, precision, PrecisionΩ and IoU, mean ± standard deviation in percent.
//!
//! ```sh
//! cargo run --release --example chunking_benchmark                      # the published chunkers
//! cargo run --release --example chunking_benchmark -- recursive:size=400,overlap=0
//! ```
//!
//! The data is read from `../shared/data/chunking-eval-general` beside the crate, or from
//! the folder in `RAG_EVAL_CHUNKING_EVAL`; without it the example says so and exits.

use rag_eval::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;

/// The report's chunkers (sizes in cl100k tokens; its Recursive chunker counts tokens with
/// chunking_evaluation's separators).
const PUBLISHED: &[&str] = &[
    "recursive:size=800,overlap=400,length=tokens,separators=chroma",
    "token:size=800,overlap=400",
    "recursive:size=400,overlap=0,length=tokens,separators=chroma",
    "token:size=400,overlap=0",
    "recursive:size=200,overlap=0,length=tokens,separators=chroma",
    "token:size=200,overlap=0",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::var_os("RAG_EVAL_CHUNKING_EVAL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/chunking-eval-general")
        });
    if !root.join("questions_df.csv").exists() {
        eprintln!(
            "skipping: the chunking-eval-general data is not at {} (set RAG_EVAL_CHUNKING_EVAL)",
            root.display()
        );
        return Ok(());
    }
    let root = camino::Utf8PathBuf::try_from(root)?;
    let started = std::time::Instant::now();
    let corpus = Arc::new(Corpus::from_folder(root.join("corpora"), None)?);
    let questions = rag_eval::dataset::import::chroma_csv(root.join("questions_df.csv"), &corpus)?;
    let evaluation = TokenLevelEvaluation::new(corpus.clone(), questions)?
        .with_mode(SpanMode::ChunkingEvaluation);

    let args: Vec<String> = std::env::args().skip(1).collect();
    let specs: Vec<&str> = if args.is_empty() {
        PUBLISHED.to_vec()
    } else {
        args.iter().map(String::as_str).collect()
    };
    let mut runs = Vec::new();
    for spec in specs {
        let chunker = rag_eval::chunker::parse_spec(spec)?;
        let spans: Vec<CharSpan> = chunker
            .chunk_corpus(&corpus)
            .into_iter()
            .map(|c| c.span)
            .collect();
        let metrics =
            token_level_metrics(SpanMode::ChunkingEvaluation, Some(ChunkIndex::new(&spans)));
        let retriever = Bm25Retriever::new(chunker);
        runs.push((
            spec.to_owned(),
            evaluation.run_blocking(&retriever, 5, &metrics)?,
        ));
    }
    println!("chunking-eval-general, BM25 retrieval over all five corpora, n = 5");
    println!("{}", rag_eval::eval::comparison_table(&runs));
    eprintln!("total {:.2} s", started.elapsed().as_secs_f64());
    Ok(())
}
