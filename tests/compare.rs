//! `Comparison` by hand: alignment, refusals, the figures of a small case, the gate, and the
//! JSON shape `rag-eval compare --json` prints.

use rag_eval::compare::{CompareError, CompareOptions, Comparison, PairedTest};
use rag_eval::metrics::{Figures, QueryResult, ResultLevel, RunResult};
use rag_eval::stats::{exact_test, paired_t_test, Correction};

/// A run over queries `q0…`, each `(difficulty, [recall, mrr])`.
fn run(hash: &str, rows: &[(&str, [f64; 2])]) -> RunResult {
    let per_query = rows
        .iter()
        .enumerate()
        .map(|(i, (difficulty, v))| QueryResult {
            id: format!("q{i}"),
            query: Some(format!("question {i}?")),
            difficulty: (!difficulty.is_empty()).then(|| (*difficulty).to_owned()),
            metrics: Figures(vec![("recall@5".into(), v[0]), ("mrr".into(), v[1])]),
            ..QueryResult::default()
        })
        .collect();
    let mut r = RunResult::from_queries(
        ResultLevel::Token,
        vec!["recall@5".into(), "mrr".into()],
        per_query,
    );
    r.dataset_hash = Some(hash.into());
    r
}

fn pair() -> (RunResult, RunResult) {
    let a = run(
        "aaaa",
        &[
            ("easy", [1.0, 1.0]),
            ("easy", [1.0, 0.5]),
            ("hard", [0.5, 0.5]),
            ("hard", [1.0, 1.0]),
            ("", [0.5, 0.25]),
            ("hard", [1.0, 1.0]),
        ],
    );
    let b = run(
        "aaaa",
        &[
            ("easy", [1.0, 1.0]),
            ("easy", [0.5, 1.0]),
            ("hard", [0.0, 0.5]),
            ("hard", [0.25, 1.0]),
            ("", [0.5, 0.5]),
            ("hard", [0.0, 0.0]),
        ],
    );
    (a, b)
}

#[test]
fn two_runs_by_hand() {
    let (a, b) = pair();
    let c = Comparison::new(&[("a", &a), ("b", &b)], &CompareOptions::default()).unwrap();
    assert_eq!(
        (c.baseline.as_str(), c.queries, c.datasets_differ),
        ("a", 6, false)
    );
    assert_eq!(c.metrics.len(), 2);
    let recall = &c.metrics[0];
    assert_eq!(recall.metric, "recall@5");
    assert_eq!(recall.runs[0].mean, 5.0 / 6.0);
    assert_eq!(recall.runs[1].mean, 2.25 / 6.0);
    let d = &recall.vs_baseline[0];
    let diffs = [0.0, -0.5, -0.5, -0.75, 0.0, -1.0];
    assert!((d.difference - (-2.75 / 6.0)).abs() < 1e-15);
    // Six queries: every sign pattern enumerated.
    assert!(d.exact);
    assert_eq!(d.p_value, exact_test(&diffs).p_value);
    // Two non-zero-difference queries tie at zero, four lose.
    assert_eq!(
        (d.outcome.wins, d.outcome.ties, d.outcome.losses),
        (0, 2, 4)
    );
    assert!(d.ci[0] <= d.difference && d.difference <= d.ci[1] && d.ci[1] <= 0.0);
    // Holm over the two metrics' p-values.
    let mrr = &c.metrics[1].vs_baseline[0];
    let holm = Correction::Holm.apply(&[d.p_value, mrr.p_value]);
    assert_eq!(
        (d.corrected_p_value, mrr.corrected_p_value),
        (holm[0], holm[1])
    );
    // Most worse first, with their text; the only gains are on mrr.
    let worse: Vec<&str> = d.most_worse.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(worse, ["q5", "q3", "q1", "q2"]);
    assert_eq!(d.most_worse[0].query.as_deref(), Some("question 5?"));
    assert_eq!(d.most_worse[0].difficulty.as_deref(), Some("hard"));
    assert_eq!((d.most_worse[0].baseline, d.most_worse[0].run), (1.0, 0.0));
    assert!(d.most_better.is_empty());
    let better: Vec<&str> = mrr.most_better.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(better, ["q1", "q4"]);
    // Per difficulty: labels sorted, unlabelled queries in their own group.
    let groups: Vec<(&str, usize)> = c
        .by_difficulty
        .iter()
        .map(|g| (g.difficulty.as_str(), g.queries))
        .collect();
    assert_eq!(groups, [("easy", 2), ("hard", 3), ("unlabelled", 1)]);
    let hard = &c.by_difficulty[1].metrics[0];
    assert_eq!(hard.runs[0].mean, 2.5 / 3.0);
    assert!((hard.vs_baseline[0].difference - (-2.25 / 3.0)).abs() < 1e-15);
    assert_eq!(
        hard.vs_baseline[0].p_value,
        exact_test(&[-0.5, -0.75, -1.0]).p_value
    );
}

#[test]
fn student_option_uses_the_t_test() {
    let (a, b) = pair();
    let options = CompareOptions {
        test: PairedTest::Student,
        correction: Correction::None,
        ..CompareOptions::default()
    };
    let c = Comparison::new(&[("a", &a), ("b", &b)], &options).unwrap();
    let d = &c.metrics[0].vs_baseline[0];
    let t = paired_t_test(&[0.0, -0.5, -0.5, -0.75, 0.0, -1.0]);
    assert_eq!(
        (d.p_value, d.corrected_p_value, d.exact),
        (t.p_value, t.p_value, false)
    );
}

#[test]
fn the_gate_reports_only_significant_drops() {
    // 30 queries: 24 lose 0.5 on recall, mrr unchanged; a third run gains.
    let rows = |delta: f64| -> Vec<(&'static str, [f64; 2])> {
        (0..30)
            .map(|i| ("", [if i < 24 { 0.5 + delta } else { 0.5 }, 0.5]))
            .collect()
    };
    let base = run("h", &rows(0.0));
    let worse = run("h", &rows(-0.5));
    let better = run("h", &rows(0.25));
    let c = Comparison::new(
        &[("base", &base), ("worse", &worse), ("better", &better)],
        &CompareOptions::default(),
    )
    .unwrap();
    let r = c.regressions(0.05);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(
        (r[0].metric.as_str(), r[0].run.as_str()),
        ("recall@5", "worse")
    );
    assert!((r[0].difference - (-0.4)).abs() < 1e-12);
    // 30 queries: Monte-Carlo, and p = 1 / 10,001 at best: Holm over 4 tests keeps it small.
    assert!(!c.metrics[0].vs_baseline[0].exact);
    assert!(r[0].corrected_p_value < 0.001);
    // Unchanged mrr: no test to speak of.
    assert_eq!(c.metrics[1].vs_baseline[0].p_value, 1.0);
    assert!(c.regressions(1e-9).is_empty());
}

#[test]
fn refuses_what_it_cannot_compare() {
    let (a, b) = pair();
    let one = Comparison::new(&[("a", &a)], &CompareOptions::default()).unwrap_err();
    assert!(matches!(one, CompareError::RunCount(1)), "{one}");
    let many: Vec<(&str, &RunResult)> = (0..11).map(|_| ("a", &a)).collect();
    let err = Comparison::new(&many, &CompareOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "compare takes 2 to 10 runs (the first is the baseline), got 11"
    );

    let mut other = b.clone();
    other.dataset_hash = Some("bbbb".into());
    let err = Comparison::new(&[("a", &a), ("b", &other)], &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("aaaa") && err.contains("bbbb") && err.contains("`b`"),
        "{err}"
    );

    // Allowed: the shared ids are compared, and the comparison says the datasets differ.
    other.per_query.truncate(4);
    let allow = CompareOptions {
        allow_different_datasets: true,
        ..CompareOptions::default()
    };
    let c = Comparison::new(&[("a", &a), ("b", &other)], &allow).unwrap();
    assert_eq!((c.queries, c.datasets_differ), (4, true));
    assert_eq!((c.runs[0].queries, c.runs[1].queries), (6, 4));

    // Same hash, different queries: refused without the option, naming the counts.
    let mut fewer = b.clone();
    fewer.per_query.truncate(5);
    let err = Comparison::new(&[("a", &a), ("b", &fewer)], &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("1 only in the baseline (e.g. `q5`)"), "{err}");

    let mut nan = b.clone();
    nan.per_query[2].metrics.0[1].1 = f64::NAN;
    let err = Comparison::new(&[("a", &a), ("b", &nan)], &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(err, "run `b`, query `q2`: mrr is NaN");

    let mut twice = b.clone();
    twice.per_query[1].id = "q0".into();
    let err = Comparison::new(&[("a", &a), ("b", &twice)], &CompareOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "run `b` has query `q0` twice");
}

#[test]
fn metrics_missing_from_a_run_are_left_out_and_named() {
    let (a, mut b) = pair();
    for q in &mut b.per_query {
        q.metrics.0.truncate(1);
    }
    b.metrics.0.truncate(1);
    b.std.0.truncate(1);
    let c = Comparison::new(&[("a", &a), ("b", &b)], &CompareOptions::default()).unwrap();
    assert_eq!(c.metrics.len(), 1);
    assert_eq!(c.metrics_not_shared, ["mrr"]);
}

#[test]
fn json_contract() {
    let (a, b) = pair();
    let c = Comparison::new(&[("a", &a), ("b", &b)], &CompareOptions::default()).unwrap();
    let v: serde_json::Value = serde_json::to_value(&c).unwrap();
    // serde_json's map is sorted: compare key sets.
    let sorted = |mut k: Vec<&'static str>| {
        k.sort_unstable();
        k
    };
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        sorted(vec![
            "baseline",
            "runs",
            "queries",
            "datasets_differ",
            "test",
            "permutations",
            "resamples",
            "seed",
            "correction",
            "confidence",
            "metrics_not_shared",
            "metrics",
            "by_difficulty"
        ])
    );
    assert_eq!(v["test"], "fisher");
    assert_eq!(v["correction"], "holm");
    assert_eq!(
        v["runs"][0],
        serde_json::json!({"label": "a", "queries": 6, "dataset_hash": "aaaa"})
    );
    let m = &v["metrics"][0];
    assert_eq!(m["metric"], "recall@5");
    assert_eq!(m["runs"][1]["label"], "b");
    let d = m["vs_baseline"][0].as_object().unwrap();
    let keys: Vec<&str> = d.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        sorted(vec![
            "label",
            "difference",
            "ci",
            "p_value",
            "exact",
            "corrected_p_value",
            "wins",
            "ties",
            "losses",
            "most_worse",
            "most_better"
        ])
    );
    assert_eq!(
        d["most_worse"][0],
        serde_json::json!({"id": "q5", "query": "question 5?", "difficulty": "hard",
                           "baseline": 1.0, "run": 0.0, "difference": -1.0})
    );
    assert_eq!(v["by_difficulty"][0]["difficulty"], "easy");
    // It reads back as it was.
    let back: Comparison = serde_json::from_value(v).unwrap();
    assert_eq!(back, c);
}
