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

/// Finite figures that add up to an infinity (1e308 twice) are refused rather than printed as
/// `inf ± inf` and gated as a difference.
#[test]
fn figures_too_large_to_add_up_are_refused() {
    let (a, b) = pair();
    let mut huge = b.clone();
    for q in &mut huge.per_query {
        q.metrics.0[1].1 = 1e308;
    }
    let err = Comparison::new(&[("a", &a), ("b", &huge)], &CompareOptions::default()).unwrap_err();
    assert!(
        matches!(&err, CompareError::NonFiniteFigure { run, what: "mean", .. } if run == "b"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "run `b`: the mean of mrr is inf, not a finite number: its per-query figures are too \
         large to add up, so mrr cannot be compared"
    );
    // Means that are finite, a spread that is not: −1e308 against 1e308 on one query.
    let (mut low, mut high) = (a.clone(), b.clone());
    low.per_query[0].metrics.0[0].1 = -1e308;
    high.per_query[0].metrics.0[0].1 = 1e308;
    let err = Comparison::new(&[("a", &low), ("b", &high)], &CompareOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("run `a`: the standard deviation of recall@5 is inf"),
        "{err}"
    );
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

/// A run over `q0…q4` (`q0`, `q1` easy, the rest hard) with the figures given, `None` where the
/// query has no figure for the metric.
fn sparse(metrics: &[(&str, [Option<f64>; 5])]) -> RunResult {
    let per_query = (0..5)
        .map(|i| QueryResult {
            id: format!("q{i}"),
            query: Some(format!("question {i}?")),
            difficulty: Some(if i < 2 { "easy" } else { "hard" }.into()),
            metrics: Figures(
                metrics
                    .iter()
                    .filter_map(|(name, v)| v[i].map(|x| ((*name).to_owned(), x)))
                    .collect(),
            ),
            ..QueryResult::default()
        })
        .collect();
    let mut r = RunResult::from_queries(
        ResultLevel::Token,
        metrics.iter().map(|(n, _)| (*n).to_owned()).collect(),
        per_query,
    );
    r.dataset_hash = Some("aaaa".into());
    r
}

#[test]
fn missing_figures_leave_queries_out_of_that_metric_only() {
    let (n, s) = (None, Some);
    let a = sparse(&[
        ("recall@5", [s(1.0), s(1.0), s(0.5), s(1.0), s(0.5)]),
        ("faithfulness", [s(1.0), s(0.5), n, s(1.0), s(0.0)]),
        ("answer_match", [s(1.0), n, n, n, s(0.0)]),
    ]);
    let b = sparse(&[
        ("recall@5", [s(0.5), s(1.0), s(0.5), s(0.5), s(1.0)]),
        ("faithfulness", [s(0.5), n, s(0.5), s(1.0), s(1.0)]),
        ("answer_match", [n, n, n, s(1.0), s(0.0)]),
    ]);
    let c = Comparison::new(&[("a", &a), ("b", &b)], &CompareOptions::default()).unwrap();
    // The run-level count is unchanged: every query is in both runs.
    assert_eq!(c.queries, 5);
    assert_eq!((c.runs[0].queries, c.runs[1].queries), (5, 5));
    assert_eq!(c.metrics.len(), 2);

    // recall@5 has every figure: all five queries, d = (−.5, 0, 0, −.5, +.5).
    let r = &c.metrics[0];
    assert_eq!((r.metric.as_str(), r.queries), ("recall@5", 5));
    assert_eq!((r.runs[0].missing, r.runs[1].missing), (0, 0));
    let rd = &r.vs_baseline[0];
    assert!((rd.difference + 0.1).abs() < 1e-12);
    assert_eq!(
        (rd.outcome.wins, rd.outcome.ties, rd.outcome.losses),
        (1, 2, 2)
    );

    // faithfulness: a lacks q2, b lacks q1, so the pairs are q0, q3, q4:
    // a = (1, 1, 0), mean 2/3, std √(2/9); b = (.5, 1, 1), mean 5/6, std √(1/18);
    // d = (−.5, 0, +1), mean 1/6; one win, one tie, one loss; every sign pattern of
    // (±.5, ±0, ±1) is at least as far from 0 as the observed .5, so p = 1.
    let f = &c.metrics[1];
    assert_eq!((f.metric.as_str(), f.queries), ("faithfulness", 3));
    assert_eq!((f.runs[0].missing, f.runs[1].missing), (1, 1));
    assert!((f.runs[0].mean - 2.0 / 3.0).abs() < 1e-12);
    assert!((f.runs[0].std - (2.0f64 / 9.0).sqrt()).abs() < 1e-12);
    assert!((f.runs[1].mean - 5.0 / 6.0).abs() < 1e-12);
    assert!((f.runs[1].std - (1.0f64 / 18.0).sqrt()).abs() < 1e-12);
    let fd = &f.vs_baseline[0];
    assert!((fd.difference - 1.0 / 6.0).abs() < 1e-12);
    assert_eq!(
        (fd.outcome.wins, fd.outcome.ties, fd.outcome.losses),
        (1, 1, 1)
    );
    assert!(fd.exact);
    assert_eq!(fd.p_value, 1.0);
    assert_eq!(fd.p_value, exact_test(&[-0.5, 0.0, 1.0]).p_value);
    let ids = |q: &[rag_eval::compare::QueryChange]| -> Vec<String> {
        q.iter().map(|c| c.id.clone()).collect()
    };
    assert_eq!(ids(&fd.most_worse), ["q0"]);
    assert_eq!(ids(&fd.most_better), ["q4"]);
    assert_eq!(
        (fd.most_better[0].baseline, fd.most_better[0].run),
        (0.0, 1.0)
    );

    // Holm over the two tested metrics only.
    let holm = Correction::Holm.apply(&[rd.p_value, fd.p_value]);
    assert_eq!(
        [rd.corrected_p_value, fd.corrected_p_value],
        [holm[0], holm[1]]
    );

    // answer_match: only q4 has a figure in both runs: no test, named with the reason.
    assert_eq!(c.metrics_untested.len(), 1);
    let u = &c.metrics_untested[0];
    assert_eq!((u.metric.as_str(), u.queries), ("answer_match", 1));
    assert_eq!(u.missing, [3, 3]);
    assert_eq!(
        u.reason,
        "1 of 5 queries have a figure in every run; a test needs 2"
    );

    // Per difficulty, the same pairing within the label: easy has faithfulness for q0 only.
    let easy = &c.by_difficulty[0];
    assert_eq!((easy.difficulty.as_str(), easy.queries), ("easy", 2));
    let names: Vec<&str> = easy.metrics.iter().map(|m| m.metric.as_str()).collect();
    assert_eq!(names, ["recall@5"]);
    let untested: Vec<(&str, usize)> = easy
        .metrics_untested
        .iter()
        .map(|u| (u.metric.as_str(), u.queries))
        .collect();
    assert_eq!(untested, [("faithfulness", 1), ("answer_match", 0)]);
    let hard = &c.by_difficulty[1];
    let hf = hard
        .metrics
        .iter()
        .find(|m| m.metric == "faithfulness")
        .unwrap();
    // q3 and q4: d = (0, +1).
    assert_eq!(hf.queries, 2);
    assert_eq!((hf.runs[0].missing, hf.runs[1].missing), (1, 0));
    assert!((hf.vs_baseline[0].difference - 0.5).abs() < 1e-12);

    // Each metric's figures are those of a comparison of its paired queries alone.
    let only = |run: &RunResult, metric: &str, keep: &[usize]| -> RunResult {
        let mut r = run.clone();
        r.per_query = keep.iter().map(|&i| run.per_query[i].clone()).collect();
        for q in &mut r.per_query {
            q.metrics.0.retain(|(n, _)| n == metric);
        }
        r.metrics.0.retain(|(n, _)| n == metric);
        r.std.0.retain(|(n, _)| n == metric);
        r
    };
    let no_correction = CompareOptions {
        correction: Correction::None,
        ..CompareOptions::default()
    };
    let mixed = Comparison::new(&[("a", &a), ("b", &b)], &no_correction).unwrap();
    for (metric, keep) in [
        ("recall@5", &[0, 1, 2, 3, 4][..]),
        ("faithfulness", &[0, 3, 4]),
    ] {
        let alone = Comparison::new(
            &[
                ("a", &only(&a, metric, keep)),
                ("b", &only(&b, metric, keep)),
            ],
            &no_correction,
        )
        .unwrap();
        let m = mixed.metrics.iter().find(|m| m.metric == metric).unwrap();
        assert_eq!(m.vs_baseline, alone.metrics[0].vs_baseline, "{metric}");
        let means = |m: &rag_eval::compare::MetricComparison| -> Vec<(f64, f64)> {
            m.runs.iter().map(|r| (r.mean, r.std)).collect()
        };
        assert_eq!(means(m), means(&alone.metrics[0]), "{metric}");
    }

    // The gate never names an untested metric, and the text says what was left out.
    assert!(c
        .regressions(1.0)
        .iter()
        .all(|r| r.metric != "answer_match"));
    let text = c.to_text(0.05);
    assert!(
        text.contains("faithfulness: over the 3 of 5 queries with a figure in every run (left out for a missing figure: a 1, b 1)"),
        "{text}"
    );
    assert!(
        text.contains("answer_match: no test: 1 of 5 queries have a figure in every run; a test needs 2 (left out for a missing figure: a 3, b 3)"),
        "{text}"
    );
    // Beside each mean, how many of the queries it is over, where it is not all of them.
    let row = |metric: &str| -> &str {
        text.lines()
            .find(|l| l.starts_with(metric))
            .unwrap_or_else(|| panic!("no row of {metric}: {text}"))
    };
    assert!(row("faithfulness").contains(" (3 of 5)"), "{text}");
    assert!(!row("recall@5").contains(" of 5"), "{text}");

    // The JSON carries the counts, and reads back as it was.
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["metrics"][1]["queries"], 3);
    assert_eq!(v["metrics"][1]["runs"][1]["missing"], 1);
    assert_eq!(v["metrics"][0]["queries"], 5);
    assert!(v["metrics"][0]["runs"][0].get("missing").is_none());
    assert_eq!(v["metrics_untested"][0]["metric"], "answer_match");
    // No query holds a judgement: no metric is marked judged.
    assert!(v["metrics"][1].get("judged").is_none());
    let back: Comparison = serde_json::from_value(v).unwrap();
    assert_eq!(back, c);

    // A judge's figures are marked, and their means say n of N even over every query.
    let judged = |run: &RunResult| -> RunResult {
        let mut r = run.clone();
        for q in &mut r.per_query {
            q.judges.push(rag_eval::metrics::QueryJudgement {
                metric: "recall@5".into(),
                query_id: q.id.clone(),
                samples: Vec::new(),
            });
        }
        r
    };
    let c = Comparison::new(
        &[("a", &judged(&a)), ("b", &judged(&b))],
        &CompareOptions::default(),
    )
    .unwrap();
    assert!(c.metrics[0].judged && !c.metrics[1].judged);
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["metrics"][0]["judged"], true);
    let text = c.to_text(0.05);
    let recall = text.lines().find(|l| l.starts_with("recall@5")).unwrap();
    assert!(recall.contains(" (5 of 5)"), "{text}");
}

#[test]
fn options_beyond_their_maximum_are_refused_before_any_work() {
    let (a, b) = pair();
    for options in [
        CompareOptions {
            resamples: 10_000_000_000,
            ..CompareOptions::default()
        },
        CompareOptions {
            permutations: 1_000_000_000_000,
            ..CompareOptions::default()
        },
    ] {
        let err = Comparison::new(&[("a", &a), ("b", &b)], &options).unwrap_err();
        assert!(matches!(err, CompareError::Option(_)), "{err}");
        let text = err.to_string();
        assert!(text.contains("allowed"), "{text}");
    }
}

#[test]
fn a_stopped_comparison_gives_up_at_once() {
    use std::sync::atomic::AtomicBool;
    // 400 queries: Monte-Carlo permutations, the most allowed, and the most resamples.
    let rows: Vec<(&str, [f64; 2])> = (0..400)
        .map(|i| ("", [(i % 7) as f64 / 7.0, (i % 3) as f64 / 3.0]))
        .collect();
    let shifted: Vec<(&str, [f64; 2])> = rows.iter().map(|(d, v)| (*d, [v[1], v[0]])).collect();
    let (a, b) = (run("h", &rows), run("h", &shifted));
    let options = CompareOptions {
        permutations: rag_eval::stats::MAX_PERMUTATIONS,
        resamples: rag_eval::stats::MAX_RESAMPLES,
        ..CompareOptions::default()
    };
    let started = std::time::Instant::now();
    let err = Comparison::new_until(&[("a", &a), ("b", &b)], &options, &AtomicBool::new(true))
        .unwrap_err();
    assert!(matches!(err, CompareError::Cancelled), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

/// Eight queries that a lenient judge passes in both runs (figure 1 everywhere), the first four
/// labelled by people: every baseline answer passes, three of the run's four fail.
fn judged_pair() -> (RunResult, RunResult) {
    let run = |labels: [f64; 4]| {
        let per_query = (0..8)
            .map(|i| QueryResult {
                id: format!("q{i}"),
                answer: Some(format!("answer {i}")),
                metrics: Figures(vec![("faithfulness".into(), 1.0)]),
                ..QueryResult::default()
            })
            .collect();
        let mut r =
            RunResult::from_queries(ResultLevel::Token, vec!["faithfulness".into()], per_query);
        for (i, y) in labels.into_iter().enumerate() {
            r.labels
                .insert(format!("q{i}"), Figures(vec![("faithfulness".into(), y)]));
        }
        r
    };
    (run([1.0; 4]), run([0.0, 0.0, 0.0, 1.0]))
}

#[test]
fn judge_corrected_by_hand_and_the_gate_reads_it() {
    let (a, b) = judged_pair();
    // Raw: the judge sees no difference, so nothing regresses.
    let raw = Comparison::new(&[("a", &a), ("b", &b)], &CompareOptions::default()).unwrap();
    let d = &raw.metrics[0].vs_baseline[0];
    assert_eq!((d.difference, d.judge_corrected.is_none()), (0.0, true));
    assert!(raw.regressions(0.05).is_empty());

    let options = CompareOptions {
        judge_corrected: true,
        ..CompareOptions::default()
    };
    let c = Comparison::new(&[("a", &a), ("b", &b)], &options).unwrap();
    let d = &c.metrics[0].vs_baseline[0];
    // The paired test's fields are those of the raw comparison.
    assert_eq!(
        d.corrected_p_value,
        raw.metrics[0].vs_baseline[0].corrected_p_value
    );
    let j = d.judge_corrected.as_ref().unwrap();
    // θ̂_a = 1 − 0 = 1; θ̂_b = 1 − mean(1, 1, 1, 0) = 0.25; difference −0.75.
    assert_eq!((j.estimate.baseline.mean, j.estimate.run.mean), (1.0, 0.25));
    assert_eq!((j.estimate.run.judged, j.estimate.run.labelled), (8, 4));
    assert_eq!(j.estimate.difference, -0.75);
    assert!(j.estimate.paired_labels);
    // d = 0 everywhere; paired errors 1, 1, 1, 0: σ² = 0.25 over n = 4, a standard error of
    // 0.25, z = −3. Python: math.erfc(3 / math.sqrt(2)).
    assert!((j.estimate.p_value - 0.002_699_796_063_260_191_3).abs() < 1e-12);
    assert_eq!(
        j.corrected_p_value, j.estimate.p_value,
        "one test: Holm changes nothing"
    );
    let half = rag_eval::stats::Z_95 * 0.25;
    assert!((j.estimate.ci[0] - (-0.75 - half)).abs() < 1e-9);
    let gate = c.regressions(0.05);
    assert_eq!(gate.len(), 1);
    assert!(gate[0].judge_corrected && gate[0].difference == -0.75);

    let text = c.to_text(0.05);
    assert!(text.contains("judge-corrected"), "{text}");
    assert!(
        text.contains("1.0000 [1.0000, 1.0000]") && text.contains("4 of 8"),
        "{text}"
    );
    assert!(
        text.contains("-0.7500") && text.contains("0.0027 *"),
        "{text}"
    );

    let json = serde_json::to_value(&c).unwrap();
    let j = &json["metrics"][0]["vs_baseline"][0]["judge_corrected"];
    assert_eq!(j["difference"], -0.75);
    assert_eq!(j["run"]["mean"], 0.25);
    assert_eq!(j["run"]["labelled"], 4);
    assert_eq!(j["paired_labels"], true);
    assert!(j["ci"].as_array().unwrap().len() == 2 && j["corrected_p_value"].is_f64());
}

#[test]
fn judge_correction_needs_labels_in_every_run() {
    let (a, mut b) = judged_pair();
    let options = CompareOptions {
        judge_corrected: true,
        ..CompareOptions::default()
    };
    let mut bare = a.clone();
    bare.labels.clear();
    let e = Comparison::new(&[("a", &bare), ("b", &bare)], &options).unwrap_err();
    assert!(matches!(e, CompareError::NoLabels), "{e}");
    b.labels.retain(|id, _| id == "q0");
    let e = Comparison::new(&[("a", &a), ("b", &b)], &options).unwrap_err();
    assert_eq!(
        e.to_string(),
        "judge-corrected comparison: run `b` has 1 labelled of the 8 compared queries of \
         faithfulness, and 2 are needed; label its outputs (a label is of one run's output and \
         does not carry over to another's) or leave the metric out"
    );
}
