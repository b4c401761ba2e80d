//! `rag_eval::metrics::answer` agrees with sacrebleu, rouge-score, NLTK's Porter stemmer and
//! the SQuAD v1.1 script on every figure of the fixture in `tests/fixtures/answer/` (see its
//! README for how it was made), and keeps the properties the definitions promise.

use camino::Utf8PathBuf;
use proptest::prelude::*;
use rag_eval::metrics::answer::{
    corpus_bleu, corpus_chrf, exact_match, porter_stem, rouge, sentence_bleu, sentence_chrf,
    token_f1, RougeScore,
};
use serde_json::Value;
use std::collections::HashMap;

const TOLERANCE: f64 = 1e-9;

fn fixture(name: &str) -> String {
    let path = Utf8PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/answer")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

struct Pair {
    id: u64,
    answer: String,
    references: Vec<String>,
    figures: Value,
}

fn expected() -> (Vec<Pair>, Vec<Value>) {
    let (mut pairs, mut corpora) = (Vec::new(), Vec::new());
    for line in fixture("expected.jsonl").lines() {
        let row: Value = serde_json::from_str(line).expect("a JSON line");
        match row["kind"].as_str() {
            Some("pair") => pairs.push(Pair {
                id: row["id"].as_u64().expect("id"),
                answer: row["answer"].as_str().expect("answer").to_owned(),
                references: row["references"]
                    .as_array()
                    .expect("references")
                    .iter()
                    .map(|r| r.as_str().expect("a reference").to_owned())
                    .collect(),
                figures: row,
            }),
            Some("corpus") => corpora.push(row),
            other => panic!("unknown kind {other:?}"),
        }
    }
    (pairs, corpora)
}

/// Collects "name: ours vs theirs" for every figure off by more than the tolerance.
#[derive(Default)]
struct Comparison {
    compared: usize,
    mismatches: Vec<String>,
}

impl Comparison {
    fn check(&mut self, what: impl Fn() -> String, ours: f64, theirs: &Value) {
        let theirs = theirs
            .as_f64()
            .unwrap_or_else(|| panic!("{}: not a number", what()));
        self.compared += 1;
        // NaN on our side is a mismatch too.
        if ours.is_nan() || (ours - theirs).abs() > TOLERANCE {
            self.mismatches
                .push(format!("{}: ours {ours}, reference {theirs}", what()));
        }
    }

    fn rouge(&mut self, id: u64, name: &str, ours: RougeScore, theirs: &Value) {
        let parts = [ours.precision, ours.recall, ours.f1];
        for (i, (label, value)) in ["precision", "recall", "f1"].iter().zip(parts).enumerate() {
            self.check(|| format!("pair {id} {name} {label}"), value, &theirs[i]);
        }
    }

    fn assert_clean(&self) {
        assert!(
            self.mismatches.is_empty(),
            "{} of {} figures differ:\n{}",
            self.mismatches.len(),
            self.compared,
            self.mismatches.join("\n")
        );
    }
}

#[test]
fn every_pair_figure_matches_the_reference_implementations() {
    let (pairs, _) = expected();
    let mut cmp = Comparison::default();
    for p in &pairs {
        let (id, f, refs) = (p.id, &p.figures, &p.references);
        let bleu = sentence_bleu(&p.answer, refs).expect("bleu");
        cmp.check(|| format!("pair {id} bleu"), bleu.score, &f["bleu"]);
        cmp.check(
            || format!("pair {id} bleu bp"),
            bleu.brevity_penalty,
            &f["bleu_bp"],
        );
        cmp.check(
            || format!("pair {id} bleu hyp len"),
            bleu.hypothesis_len as f64,
            &f["bleu_sys_len"],
        );
        cmp.check(
            || format!("pair {id} bleu ref len"),
            bleu.reference_len as f64,
            &f["bleu_ref_len"],
        );
        let chrf = sentence_chrf(&p.answer, refs).expect("chrf");
        cmp.check(|| format!("pair {id} chrf"), chrf, &f["chrf"]);
        let r = rouge(&p.answer, refs).expect("rouge");
        cmp.rouge(id, "rouge_1", r.rouge_1, &f["rouge_1"]);
        cmp.rouge(id, "rouge_2", r.rouge_2, &f["rouge_2"]);
        cmp.rouge(id, "rouge_l", r.rouge_l, &f["rouge_l"]);
        let em = exact_match(&p.answer, refs).expect("exact match");
        cmp.check(|| format!("pair {id} exact_match"), em, &f["exact_match"]);
        let f1 = token_f1(&p.answer, refs).expect("token f1");
        cmp.check(|| format!("pair {id} token_f1"), f1, &f["token_f1"]);
    }
    cmp.assert_clean();
    assert!(
        pairs.len() >= 1000,
        "fixture too small: {} pairs",
        pairs.len()
    );
    // 4 BLEU + 1 chrF + 9 ROUGE + 2 SQuAD figures per pair
    assert_eq!(cmp.compared, pairs.len() * 16);
}

#[test]
fn every_corpus_figure_matches_sacrebleu() {
    let (pairs, corpora) = expected();
    let by_id: HashMap<u64, &Pair> = pairs.iter().map(|p| (p.id, p)).collect();
    let mut cmp = Comparison::default();
    for (i, corpus) in corpora.iter().enumerate() {
        let rows: Vec<&Pair> = corpus["ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|id| by_id[&id.as_u64().expect("an id")])
            .collect();
        let answers: Vec<&str> = rows.iter().map(|p| p.answer.as_str()).collect();
        let references: Vec<&[String]> = rows.iter().map(|p| p.references.as_slice()).collect();
        let bleu = corpus_bleu(&answers, &references).expect("corpus bleu");
        cmp.check(|| format!("corpus {i} bleu"), bleu.score, &corpus["bleu"]);
        let chrf = corpus_chrf(&answers, &references).expect("corpus chrf");
        cmp.check(|| format!("corpus {i} chrf"), chrf, &corpus["chrf"]);
    }
    cmp.assert_clean();
    assert!(corpora.len() >= 50, "{} corpora", corpora.len());
}

#[test]
fn every_stem_matches_nltk() {
    let text = fixture("porter.tsv");
    let mut mismatches = Vec::new();
    let mut words = 0;
    for line in text.lines() {
        let (word, stem) = line.split_once('\t').expect("word<TAB>stem");
        words += 1;
        let ours = porter_stem(word);
        if ours != stem {
            mismatches.push(format!("{word}: ours {ours}, nltk {stem}"));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {words} stems differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert!(words >= 4000, "only {words} words");
}

/// The fixture keeps covering what it claims to: without these rows the comparison above
/// would prove less than the README says.
#[test]
fn the_fixture_covers_the_edge_cases() {
    let (pairs, _) = expected();
    let count = |pred: &dyn Fn(&Pair) -> bool| pairs.iter().filter(|p| pred(p)).count();
    let all_text = |p: &Pair| std::iter::once(p.answer.clone()).chain(p.references.clone());
    let score = |p: &Pair, name: &str| p.figures[name].as_f64().expect("a figure");

    assert!(count(&|p| p.answer.trim().is_empty()) >= 5, "empty answers");
    assert!(
        count(&|p| p.references.iter().any(|r| r.is_empty())) >= 5,
        "empty references"
    );
    assert!(
        count(&|p| p.references.len() > 1) >= 200,
        "multi-reference rows"
    );
    assert!(
        count(&|p| all_text(p).any(|t| !t.is_ascii())) >= 200,
        "non-ASCII text"
    );
    assert!(
        count(&|p| all_text(p).any(|t| t.chars().any(|c| c.is_ascii_digit()))) >= 200,
        "numbers"
    );
    assert!(
        count(&|p| all_text(p).any(|t| t.chars().any(|c| c.is_ascii_punctuation()))) >= 500,
        "punctuation"
    );
    // a spread of figures, not a fixture of zeros and ones
    let partial = |name: &str| count(&|p| score(p, name) > 0.05 && score(p, name) < 0.95);
    for name in ["bleu", "chrf", "token_f1"] {
        assert!(
            partial(name) >= 300,
            "{name}: only {} partial scores",
            partial(name)
        );
    }
    assert!(
        count(&|p| score(p, "exact_match") == 1.0) >= 50,
        "exact matches"
    );
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 .,!?'-]{0,40}",
        "(the|a|cat|sat|on|mat|runs|running|42|3.14|Paris|é|東京|,|\\.| ){0,12}",
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn scores_stay_in_the_unit_interval(answer in text(), refs in proptest::collection::vec(text(), 1..4)) {
        let r = rouge(&answer, &refs).unwrap();
        let figures = [
            sentence_bleu(&answer, &refs).unwrap().score,
            sentence_chrf(&answer, &refs).unwrap(),
            exact_match(&answer, &refs).unwrap(),
            token_f1(&answer, &refs).unwrap(),
            r.rouge_1.precision, r.rouge_1.recall, r.rouge_1.f1,
            r.rouge_2.precision, r.rouge_2.recall, r.rouge_2.f1,
            r.rouge_l.precision, r.rouge_l.recall, r.rouge_l.f1,
        ];
        for f in figures {
            prop_assert!((0.0..=1.0).contains(&f), "{f}");
        }
    }

    #[test]
    fn identical_text_scores_one(words in proptest::collection::vec("[a-z]{1,8}|[0-9]{1,3}", 2..12)) {
        let text = words.join(" ");
        let refs = [text.as_str()];
        prop_assert_eq!(sentence_bleu(&text, &refs).unwrap().score, 1.0);
        prop_assert_eq!(sentence_chrf(&text, &refs).unwrap(), 1.0);
        let r = rouge(&text, &refs).unwrap();
        prop_assert_eq!((r.rouge_1.f1, r.rouge_2.f1, r.rouge_l.f1), (1.0, 1.0, 1.0));
        prop_assert_eq!(exact_match(&text, &refs).unwrap(), 1.0);
        // every word may be an article; F1 is 1 whenever something is left
        let f1 = token_f1(&text, &refs).unwrap();
        prop_assert!(f1 == 1.0 || words.iter().all(|w| matches!(w.as_str(), "a" | "an" | "the")));
    }

    #[test]
    fn overlap_metrics_are_symmetric(a in text(), b in text()) {
        prop_assert_eq!(token_f1(&a, &[&b]).unwrap(), token_f1(&b, &[&a]).unwrap());
        prop_assert_eq!(exact_match(&a, &[&b]).unwrap(), exact_match(&b, &[&a]).unwrap());
        let (ab, ba) = (rouge(&a, &[&b]).unwrap(), rouge(&b, &[&a]).unwrap());
        for (x, y) in [(ab.rouge_1, ba.rouge_1), (ab.rouge_2, ba.rouge_2), (ab.rouge_l, ba.rouge_l)] {
            prop_assert_eq!((x.precision, x.recall), (y.recall, y.precision));
            prop_assert!((x.f1 - y.f1).abs() < 1e-15);
        }
    }

    #[test]
    fn another_reference_never_lowers_a_score(a in text(), r1 in text(), r2 in text()) {
        let one = [r1.as_str()];
        let two = [r1.as_str(), r2.as_str()];
        prop_assert!(sentence_chrf(&a, &two).unwrap() >= sentence_chrf(&a, &one).unwrap());
        prop_assert!(token_f1(&a, &two).unwrap() >= token_f1(&a, &one).unwrap());
        prop_assert!(exact_match(&a, &two).unwrap() >= exact_match(&a, &one).unwrap());
        let (x, y) = (rouge(&a, &two).unwrap(), rouge(&a, &one).unwrap());
        prop_assert!(x.rouge_1.f1 >= y.rouge_1.f1 && x.rouge_2.f1 >= y.rouge_2.f1 && x.rouge_l.f1 >= y.rouge_l.f1);
    }
}

/// The registry's answer metric `name` on one answer and its references.
fn registered(name: &str, answer: &str, refs: &[String]) -> Option<f64> {
    let info = rag_eval::metrics::registry::lookup(name).expect("registered");
    let m = info.build_answer().expect("an answer metric");
    m.compute(&rag_eval::metrics::answer::AnswerInput::new(answer, refs))
}

proptest! {
    /// rouge-score's `score_multi` and the SQuAD script take, per metric, the reference with
    /// the best F (ties: the first); a naive loop over single references gives the same.
    #[test]
    fn several_references_score_as_the_best_single_one(a in text(), refs in proptest::collection::vec(text(), 1..5)) {
        for name in ["exact_match", "token_f1", "rouge_1", "rouge_2", "rouge_l"] {
            let best = refs
                .iter()
                .map(|r| registered(name, &a, std::slice::from_ref(r)).unwrap())
                .fold(f64::NEG_INFINITY, f64::max);
            prop_assert_eq!(registered(name, &a, &refs), Some(best), "{}", name);
        }
        for (f1, p, r) in [
            ("rouge_1", "rouge_1_precision", "rouge_1_recall"),
            ("rouge_2", "rouge_2_precision", "rouge_2_recall"),
            ("rouge_l", "rouge_l_precision", "rouge_l_recall"),
        ] {
            let single = |n: &str, x: &String| registered(n, &a, std::slice::from_ref(x)).unwrap();
            let mut best = &refs[0];
            for x in &refs[1..] {
                if single(f1, x) > single(f1, best) {
                    best = x;
                }
            }
            prop_assert_eq!(registered(p, &a, &refs), Some(single(p, best)), "{}", p);
            prop_assert_eq!(registered(r, &a, &refs), Some(single(r, best)), "{}", r);
        }
        prop_assert_eq!(registered("bleu", &a, &[]), None);
    }
}
