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
#[cfg(feature = "answers")]
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

/// The labelled faithfulness set (`examples/data/labelled/`, written by `make_labelled.py`):
/// its labels hold by construction. A supported answer (`-s`, label 1) is its question's
/// relevant spans stitched together, each span inside a context; an altered one (`-a`, label
/// 0) differs from its supported twin in one place, and the altered passage is in no context
/// and nowhere in the corpus.
#[cfg(feature = "answers")]
#[test]
fn labelled_set_holds_its_construction() {
    use rag_eval::answers::Answers;
    use serde_json::Value;
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/data");
    let corpus = Corpus::from_folder(format!("{root}/corpus"), None).unwrap();
    let AnyDataset::Token(d) = dataset::load(format!("{root}/labelled/dataset.jsonl")).unwrap()
    else {
        panic!("the labelled dataset is token-level")
    };
    assert!(d.check_against(&corpus).is_empty());
    let answers = Answers::load(format!("{root}/labelled/answers.jsonl")).unwrap();
    answers.check_ids(&d).unwrap();
    let labels: Vec<Value> = std::fs::read_to_string(format!("{root}/labelled/labels.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(labels.len() >= 60 && labels.len() == d.len() && answers.len() == d.len());
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let corpus_text: Vec<String> = corpus
        .documents()
        .iter()
        .map(|doc| squash(doc.content()))
        .collect();
    let (mut supported, mut altered) = (0, 0);
    for (e, label) in d.examples().iter().zip(&labels) {
        assert_eq!(label["id"], e.id.as_str());
        let a = answers.get(&e.id).unwrap();
        let contexts: Vec<String> = a
            .contexts
            .iter()
            .map(|c| {
                let doc = corpus.get(c.chunk.doc_id().as_str()).unwrap();
                assert_eq!(
                    doc.slice(c.chunk.start(), c.chunk.end()),
                    Some(c.chunk.content.as_str())
                );
                squash(&c.chunk.content)
            })
            .collect();
        let spans: Vec<String> = e
            .span_texts
            .iter()
            .map(|t| squash(t.as_deref().unwrap()))
            .collect();
        assert!(
            spans
                .iter()
                .all(|s| contexts.iter().any(|c| c.contains(s.as_str()))),
            "{}",
            e.id
        );
        let stitched = spans.join(" ");
        assert_eq!(e.reference_answers, std::slice::from_ref(&stitched));
        if e.id.ends_with("-s") {
            assert_eq!(label["labels"]["faithfulness"], 1);
            assert_eq!(a.answer, stitched);
            supported += 1;
        } else {
            assert!(e.id.ends_with("-a"));
            assert_eq!(label["labels"]["faithfulness"], 0);
            // One changed place: common prefix and suffix cover everything else.
            let (x, y) = (stitched.as_bytes(), a.answer.as_bytes());
            let prefix = x.iter().zip(y).take_while(|(p, q)| p == q).count();
            let suffix = x
                .iter()
                .rev()
                .zip(y.iter().rev())
                .take_while(|(p, q)| p == q)
                .count();
            assert!(
                prefix + suffix >= x.len().min(y.len()).saturating_sub(40),
                "{}: more than one change",
                e.id
            );
            // The altered span (the answer's piece holding the change) is held by nothing.
            let piece = a
                .answer
                .split(". ")
                .find(|p| !stitched.contains(p))
                .unwrap_or(&a.answer);
            assert!(
                !contexts
                    .iter()
                    .chain(&corpus_text)
                    .any(|t| t.contains(piece)),
                "{}",
                e.id
            );
            altered += 1;
        }
    }
    assert_eq!(supported, 40);
    assert!(altered >= 30, "{altered}");
}
