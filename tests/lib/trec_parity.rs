//! `rag_eval::trec` agrees with trec_eval (as pytrec_eval packages it) on every per-query
//! figure of the fixture in `tests/fixtures/trec/` (see its README for how it was made).

use camino::Utf8PathBuf;
use rag_eval::trec::{evaluate, mean, Measure, Qrels, Run};
use serde_json::Value;
use std::collections::BTreeMap;

const TOLERANCE: f64 = 1e-9;

fn fixture(name: &str) -> Utf8PathBuf {
    Utf8PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/trec")
        .join(name)
}

fn expected() -> Value {
    let text = std::fs::read_to_string(fixture("expected.json")).expect("read expected.json");
    serde_json::from_str(&text).expect("parse expected.json")
}

/// The fixture's measures, with a map from trec_eval's names to ours.
fn measures(expected: &Value) -> (Vec<Measure>, BTreeMap<String, String>) {
    let mut all = Vec::new();
    for name in expected["measures"].as_array().expect("measures") {
        all.extend(Measure::parse(name.as_str().expect("measure name"), &[]).expect("measure"));
    }
    let names = all
        .iter()
        .map(|m| (m.trec_name(), m.report_name()))
        .collect();
    (all, names)
}

#[test]
fn every_per_query_figure_matches_pytrec_eval() {
    let expected = expected();
    let qrels = Qrels::from_file(&fixture("qrels.txt")).expect("qrels");
    let run = Run::from_file(&fixture("run.txt")).expect("run");
    let (measures, names) = measures(&expected);
    let ours = evaluate(&qrels, &run, &measures);

    let theirs = expected["per_query"].as_object().expect("per_query");
    let our_queries: Vec<&String> = ours.keys().collect();
    let their_queries: Vec<&String> = {
        let mut v: Vec<&String> = theirs.keys().collect();
        v.sort();
        v
    };
    assert_eq!(our_queries, their_queries, "the evaluated queries differ");

    let mut compared = 0;
    let mut mismatches = Vec::new();
    for (qid, figures) in theirs {
        for (trec_name, value) in figures.as_object().expect("figures") {
            let report = &names[trec_name];
            let want = value.as_f64().expect("number");
            let got = ours[qid][report];
            if (got - want).abs() > TOLERANCE {
                mismatches.push(format!("{qid} {trec_name}: ours {got}, pytrec_eval {want}"));
            }
            compared += 1;
        }
        assert_eq!(figures.as_object().unwrap().len(), ours[qid].len(), "{qid}");
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    // 18 figures (P, recall, ndcg_cut at 5 cut-offs, ndcg, recip_rank, map) for every query
    assert_eq!(compared, theirs.len() * 18);
    // trec_eval's ndcg has no cut-off: on rankings longer than 20 it is not ndcg_cut_20.
    let past_the_cutoffs = theirs
        .values()
        .filter(|f| (f["ndcg"].as_f64().unwrap() - f["ndcg_cut_20"].as_f64().unwrap()).abs() > 1e-6)
        .count();
    assert!(past_the_cutoffs >= 5, "{past_the_cutoffs}");
    assert!(theirs.len() >= 50, "fixture too small: {}", theirs.len());
}

#[test]
fn the_fixture_exercises_ties_and_the_edge_cases() {
    let expected = expected();
    let ties = expected["tie_sensitive_queries"]
        .as_array()
        .expect("tie list");
    assert!(
        ties.len() >= 10,
        "only {} queries depend on the tie rule",
        ties.len()
    );

    let qrels = Qrels::from_file(&fixture("qrels.txt")).expect("qrels");
    let run = Run::from_file(&fixture("run.txt")).expect("run");
    let judged_not_run = qrels
        .query_ids()
        .filter(|q| run.ranking(q).is_none())
        .count();
    let run_not_judged = run
        .query_ids()
        .filter(|q| qrels.num_relevant(q).is_none())
        .count();
    let no_relevant = qrels
        .query_ids()
        .filter(|q| qrels.num_relevant(q) == Some(0) && run.ranking(q).is_some())
        .count();
    let lengths: Vec<usize> = run
        .query_ids()
        .map(|q| run.ranking(q).unwrap().count())
        .collect();
    assert!(judged_not_run > 0 && run_not_judged > 0 && no_relevant > 0);
    assert!(lengths.iter().any(|&n| n < 3) && lengths.iter().any(|&n| n > 20));
}

#[test]
fn means_match_the_mean_of_pytrec_eval_figures() {
    let expected = expected();
    let qrels = Qrels::from_file(&fixture("qrels.txt")).expect("qrels");
    let run = Run::from_file(&fixture("run.txt")).expect("run");
    let (measures, names) = measures(&expected);
    let ours = mean(&evaluate(&qrels, &run, &measures));
    let theirs = expected["per_query"].as_object().unwrap();
    for (trec_name, report) in &names {
        let sum: f64 = theirs
            .values()
            .map(|f| f[trec_name].as_f64().unwrap())
            .sum();
        let want = sum / theirs.len() as f64;
        assert!(
            (ours[report] - want).abs() < TOLERANCE,
            "{report}: {} vs {want}",
            ours[report]
        );
    }
}
