//! Scores a RAG system's answers against the bundled reference answers, offline, and gates them.
//!
//! ```sh
//! cargo run --example answers
//! ```
//!
//! `examples/data/answers.jsonl` holds one system's answers to the 40 bundled questions, with
//! the contexts it used given as text. The contexts are found in the corpus and scored as a
//! retrieval; the answers are compared with the rows' `reference_answer` by the lexical metrics
//! (BLEU, chrF, ROUGE, exact match, token F1), which need no model and no server. A bar on
//! `token_f1` then gates the run: these answers miss it, so the example exits with code 1, as a
//! CI step would.

use rag_eval::answers::{score_answers, Answers};
use rag_eval::metrics::{answer_metrics, token_level_metrics};
use rag_eval::prelude::*;
use std::process::ExitCode;

/// The bar: the mean token F1 the answers must reach.
const MIN_TOKEN_F1: f64 = 0.5;

fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");
    let corpus = Corpus::from_folder(format!("{data}/corpus"), None)?;
    let AnyDataset::Token(questions) = rag_eval::dataset::load(format!("{data}/questions.jsonl"))?
    else {
        return Err("the bundled dataset is token-level".into());
    };
    let mut answers = Answers::load(format!("{data}/answers.jsonl"))?;
    let placed = answers.place_in(&corpus);
    println!("{placed}\n");

    let scores = score_answers(
        &questions,
        &answers,
        &token_level_metrics(SpanMode::Standard, None),
        &answer_metrics(false),
        None,
        5,
        SpanMode::Standard,
    )?;
    let result = &scores.result;
    println!("{:<18} {:>7}", "metric", "mean");
    for (name, mean) in &result.metrics.0 {
        println!("{name:<18} {mean:>7.4}");
    }

    let f1 = result.metrics.get("token_f1").ok_or("no token_f1")?;
    let worst = result
        .per_query
        .iter()
        .filter_map(|q| Some((q.metrics.get("token_f1")?, q.id.as_str())))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    println!();
    if f1 >= MIN_TOKEN_F1 {
        println!("gate passed: token_f1 {f1:.4} >= {MIN_TOKEN_F1}");
        return Ok(ExitCode::SUCCESS);
    }
    println!("gate FAILED: token_f1 {f1:.4} < {MIN_TOKEN_F1}");
    if let Some((value, id)) = worst {
        let answer = answers.get(id).map_or("", |a| a.answer.as_str());
        let reference = questions
            .get(id)
            .and_then(|e| e.reference_answer())
            .unwrap_or("");
        println!("worst query {id}: token_f1 {value:.4}\n  answer:    {answer}\n  reference: {reference}");
    }
    Ok(ExitCode::FAILURE)
}
