//! PrecisionΩ depends only on the chunker and the ground truth, not on retrieval, so our
//! Chroma-compatible PrecisionΩ over our chunkers must reproduce the figures published for
//! chunking_evaluation's general set (README of the data set) exactly as printed.

use crate::shared_data;

use rag_eval::chunker::parse_spec;
use rag_eval::corpus::Corpus;
use rag_eval::dataset::import::chroma_csv;
use rag_eval::metrics::{mean_std, precision_omega, ChunkIndex};
use rag_eval::span::CharSpan;

#[test]
#[ignore = "needs ../shared/data"]
fn precision_omega_of_the_recursive_token_chunkers_matches_the_published_table() {
    let root = shared_data::chunking_eval_general();
    let corpus = Corpus::from_folder(root.join("corpora").to_str().unwrap(), None).unwrap();
    let questions = chroma_csv(root.join("questions_df.csv").to_str().unwrap(), &corpus).unwrap();
    // (chunker, published PrecisionΩ mean ± SD in %), text-embedding-3-large rows.
    let published = [
        (
            "recursive:size=800,overlap=400,length=tokens,separators=chroma",
            "6.7±5.2",
        ),
        (
            "recursive:size=400,overlap=0,length=tokens,separators=chroma",
            "17.7±14.0",
        ),
        (
            "recursive:size=200,overlap=0,length=tokens,separators=chroma",
            "29.9±18.4",
        ),
    ];
    for (spec, expected) in published {
        let chunker = parse_spec(spec).unwrap();
        let spans: Vec<CharSpan> = chunker
            .chunk_corpus(&corpus)
            .into_iter()
            .map(|c| c.span)
            .collect();
        let index = ChunkIndex::new(&spans);
        let values: Vec<f64> = questions
            .examples()
            .iter()
            .map(|e| precision_omega(&e.truth, &index))
            .collect();
        let (mean, std) = mean_std(&values);
        assert_eq!(
            format!("{:.1}±{:.1}", mean * 100.0, std * 100.0),
            expected,
            "{spec}"
        );
    }
}
