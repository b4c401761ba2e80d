//! The bundled example corpus and dataset load cleanly and agree with each other.

use rag_eval::corpus::Corpus;
use rag_eval::dataset::{self, AnyDataset};

#[test]
fn bundled_dataset_matches_its_corpus() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");
    let corpus = Corpus::from_folder(format!("{root}/corpus"), None).unwrap();
    assert_eq!(corpus.len(), 12);
    let AnyDataset::Token(d) = dataset::load(format!("{root}/questions.jsonl")).unwrap() else {
        panic!("the bundled dataset is token-level")
    };
    assert_eq!(d.len(), 40);
    let problems = d.check_against(&corpus);
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(d
        .examples()
        .iter()
        .all(|e| e.difficulty().is_some() && e.span_texts.iter().all(Option::is_some)));
}

/// Every bundled question has a reference answer, and the bundled answers file answers every
/// question with contexts given as text that the corpus holds (all but the four made-up ones).
#[test]
fn bundled_reference_answers_and_answers_file() {
    use rag_eval::answers::{Answers, Placement};
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");
    let corpus = Corpus::from_folder(format!("{root}/corpus"), None).unwrap();
    let AnyDataset::Token(d) = dataset::load(format!("{root}/questions.jsonl")).unwrap() else {
        panic!("the bundled dataset is token-level")
    };
    assert!(d
        .examples()
        .iter()
        .all(|e| e.reference_answers().len() == 1));
    let mut answers = Answers::load(format!("{root}/answers.jsonl")).unwrap();
    answers.check_ids(&d).unwrap();
    assert_eq!(answers.len(), 40);
    assert_eq!(
        answers.place_in(&corpus),
        Placement {
            exact: 82,
            normalized: 38,
            unlocated: 4
        }
    );
}
