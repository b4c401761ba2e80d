//! Compares four chunkers on the bundled example corpus with BM25 retrieval, offline.
//!
//! ```sh
//! cargo run --example quickstart
//! ```
//!
//! The corpus (`examples/data/corpus`, a dozen Markdown pages) and its 40 questions with
//! character-span answers (`examples/data/questions.jsonl`) ship with the crate, so this
//! needs no network, key or model.

use rag_eval::prelude::*;
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");
    let corpus = Arc::new(Corpus::from_folder(format!("{data}/corpus"), None)?);
    let AnyDataset::Token(questions) = rag_eval::dataset::load(format!("{data}/questions.jsonl"))?
    else {
        return Err("the bundled dataset is token-level".into());
    };
    let evaluation = TokenLevelEvaluation::new(corpus.clone(), questions)?;
    println!(
        "{} questions over {} documents ({} characters); BM25, top 5 chunks per question\n",
        evaluation.dataset().len(),
        corpus.len(),
        corpus.char_len()
    );

    // Chunkers by the specs `rag-eval chunk --chunker` and `rag-eval eval --chunker` take, so
    // that a line of the table can be rerun from the command line as it is labelled.
    let specs = [
        "recursive:size=400,overlap=0",
        "recursive:size=200,overlap=0",
        "token:size=100,overlap=50",
        "semantic:max_chars=800",
    ];
    let mut runs = Vec::new();
    for spec in specs {
        let chunker = rag_eval::chunker::parse_spec(spec)?;
        // PrecisionΩ needs every chunk the chunker makes, not just the retrieved ones.
        let spans: Vec<CharSpan> = chunker
            .chunk_corpus(&corpus)
            .into_iter()
            .map(|c| c.span)
            .collect();
        let metrics = token_level_metrics(SpanMode::Standard, Some(ChunkIndex::new(&spans)));
        let retriever = Bm25Retriever::new(chunker);
        runs.push((
            spec.to_owned(),
            evaluation.run_blocking(&retriever, 5, &metrics)?,
        ));
    }
    println!("{}", rag_eval::eval::comparison_table(&runs));
    println!("span_recall: share of the answer text retrieved; span_precision: share of the");
    println!("retrieved text that is answer; precision_omega: the best precision the chunker");
    println!("allows; span_iou: overlap of the two. Scores per difficulty: `rag-eval eval`.");
    Ok(())
}
