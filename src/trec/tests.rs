//! Parsing, ranking and scoring, by hand-worked cases and against a naive model.

use super::parse::NameKey;
use super::*;
use crate::error::{Error, Result};
use camino::Utf8Path;
use std::collections::BTreeMap;
use std::fmt;

fn ranked(run: &Run, qid: &str) -> Vec<String> {
    run.ranking(qid)
        .map(|r| r.map(|(d, _)| d.to_owned()).collect())
        .unwrap_or_default()
}

fn parse_err(result: Result<impl fmt::Debug>) -> (usize, String) {
    match result {
        Err(Error::Parse {
            line,
            message,
            path,
        }) => {
            assert_eq!(path.as_str(), "f.txt");
            (line, message)
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn run_ranks_by_score_then_descending_docno_ignoring_the_rank_column() {
    let run = Run::parse(
        "q1 Q0 d10 1 0.5 t\n\
         q1 Q0 d9 2 0.5 t\n\
         q1 Q0 a 3 0.7 t\n\
         q1 Q0 d2 4 0.5 t\n\
         q1 Q0 z 5 -1e-3 t\n",
        "f.txt",
    )
    .unwrap();
    assert_eq!(ranked(&run, "q1"), ["a", "d9", "d2", "d10", "z"]);
    assert_eq!(run.tag(), Some("t"));
}

#[test]
fn interleaved_queries_and_blank_lines() {
    let run = Run::parse(
        "q2 Q0 a 1 3 t\n\n   \nq1 Q0 b 1 2 t\nq2 Q0 c 2 4 t\r\n",
        "f.txt",
    )
    .unwrap();
    assert_eq!(run.len(), 2);
    assert_eq!(run.query_ids().collect::<Vec<_>>(), ["q2", "q1"]);
    assert_eq!(ranked(&run, "q2"), ["c", "a"]);
    assert_eq!(ranked(&run, "q1"), ["b"]);
    assert!(run.ranking("q3").is_none());
}

#[test]
fn a_byte_order_mark_is_not_part_of_the_first_query_id() {
    let run = Run::parse("\u{feff}q1 Q0 a 1 3 t\n", "f.txt").unwrap();
    assert_eq!(run.query_ids().collect::<Vec<_>>(), ["q1"]);
    let qrels = Qrels::parse("\u{feff}q1 0 a 1\n", "f.txt").unwrap();
    assert_eq!(qrels.grade("q1", "a"), Some(1));
}

#[test]
fn run_errors_name_the_line() {
    let (line, msg) = parse_err(Run::parse("q1 Q0 a 1 1 t\nq1 Q0 b 2 1\n", "f.txt"));
    assert_eq!(line, 2);
    assert!(
        msg.contains("expected 6 fields") && msg.contains("found 5"),
        "{msg}"
    );
    let (line, msg) = parse_err(Run::parse("q1 Q0 a 1 high t\n", "f.txt"));
    assert_eq!(line, 1);
    assert!(msg.contains("`high`"), "{msg}");
    let (_, msg) = parse_err(Run::parse("q1 Q0 a 1 NaN t\n", "f.txt"));
    assert!(msg.contains("not a number"), "{msg}");
    let (line, msg) = parse_err(Run::parse(
        "q1 Q0 a 1 1 t\nq2 Q0 a 1 1 t\n\nq1 Q0 b 2 1 t\nq1 Q0 a 3 0.5 t\n",
        "f.txt",
    ));
    assert_eq!(line, 5);
    assert!(
        msg.contains("`a` is retrieved twice for query `q1` (first on line 1)"),
        "{msg}"
    );
    // Listed three times: named at its second line, whatever the ranking.
    for scores in [[1, 2, 3], [3, 2, 1], [2, 2, 2]] {
        let text: String = scores
            .iter()
            .enumerate()
            .map(|(i, s)| format!("q1 Q0 a {} {s} t\n", i + 1))
            .collect();
        let (line, msg) = parse_err(Run::parse(&text, "f.txt"));
        assert_eq!(line, 2, "{msg}");
        assert!(msg.contains("(first on line 1)"), "{msg}");
    }
}

#[test]
fn qrels_parse_and_errors() {
    let q = Qrels::parse("q1 0 a 2\nq1 0 b 0\nq1 0 c -1\nq2 0 a 1\n", "f.txt").unwrap();
    assert_eq!(q.len(), 2);
    assert_eq!(q.query_ids().collect::<Vec<_>>(), ["q1", "q2"]);
    assert_eq!(q.grade("q1", "c"), Some(-1));
    assert_eq!(q.num_relevant("q1"), Some(1));
    assert_eq!(q.num_relevant("q9"), None);
    let (line, msg) = parse_err(Qrels::parse("q1 0 a 1\nq1 0 b\n", "f.txt"));
    assert_eq!(line, 2);
    assert!(msg.contains("expected 4 fields"), "{msg}");
    let (_, msg) = parse_err(Qrels::parse("q1 0 a 1.5\n", "f.txt"));
    assert!(msg.contains("`1.5` is not an integer"), "{msg}");
    let (line, msg) = parse_err(Qrels::parse("q1 0 a 1\nq1 0 b 1\nq1 0 a 0\n", "f.txt"));
    assert_eq!(line, 3);
    assert!(
        msg.contains("judged twice") && msg.contains("line 1"),
        "{msg}"
    );
    let (line, msg) = parse_err(Qrels::parse(
        "q1 0 a 1\nq1 0 b 1\nq1 0 a 0\nq1 0 a 2\n",
        "f.txt",
    ));
    assert_eq!(line, 3, "{msg}");
    assert!(msg.contains("(first on line 1)"), "{msg}");
    assert!(Qrels::parse("", "f.txt").unwrap().is_empty());
}

#[test]
fn files_missing_or_not_utf8_are_errors_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = Utf8Path::from_path(dir.path()).unwrap();
    let missing = root.join("none.qrels");
    let err = Qrels::from_file(&missing).unwrap_err().to_string();
    assert!(err.contains("none.qrels"), "{err}");
    let bad = root.join("bad.run");
    std::fs::write(&bad, b"q1 Q0 \xff 1 1 t\n").unwrap();
    assert!(matches!(
        Run::from_file(&bad),
        Err(Error::NotUtf8 { offset: 6, .. })
    ));
    let good = root.join("good.run");
    std::fs::write(&good, "q1 Q0 a 1 1 t\n").unwrap();
    assert_eq!(Run::from_file(&good).unwrap().len(), 1);
}

proptest::proptest! {
    #[test]
    fn name_keys_order_names_as_their_bytes(
        a in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', b'b', 0xff]), 0..12),
        b in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', b'b', 0xff]), 0..12),
    ) {
        let (ka, kb) = (NameKey::new(&a), NameKey::new(&b));
        match ka.cmp(kb) {
            Some(order) => proptest::prop_assert_eq!(order, a.cmp(&b)),
            None => proptest::prop_assert!(a.len() > 8 && b.len() > 8 && a[..8] == b[..8]),
        }
    }
}

#[test]
fn ties_among_long_names_sharing_eight_bytes_are_ordered_by_all_bytes() {
    let run = Run::parse(
        "q Q0 document-10 1 1 t\nq Q0 document-9 1 1 t\nq Q0 document-1 1 1 t\nq Q0 document 1 1 t\n",
        "f.txt",
    )
    .unwrap();
    assert_eq!(
        ranked(&run, "q"),
        ["document-9", "document-10", "document-1", "document"]
    );
    let qrels = Qrels::parse("q 0 document-1 1\nq 0 document-10 2\nq 0 document 3\n", "q").unwrap();
    let ms = [Measure::Ndcg(4)];
    let r = &evaluate(&qrels, &run, &ms)["q"]["ndcg@4"];
    // grades by rank: unjudged, 2, 1, 3; ideal 3, 2, 1
    let l2 = |x: f64| x.log2();
    let dcg = 2.0 / l2(3.0) + 1.0 / l2(4.0) + 3.0 / l2(5.0);
    let idcg = 3.0 + 2.0 / l2(3.0) + 1.0 / l2(4.0);
    assert!((r - dcg / idcg).abs() < 1e-12);
}

#[test]
fn measure_names() {
    use Measure::*;
    assert_eq!(Measure::parse("P", &[]).unwrap().len(), 9);
    assert_eq!(
        Measure::parse("P", &[3, 1, 3]).unwrap(),
        [Precision(3), Precision(1)]
    );
    assert_eq!(
        Measure::parse("P.5,10", &[7]).unwrap(),
        [Precision(5), Precision(10)]
    );
    assert_eq!(Measure::parse("P_5", &[]).unwrap(), [Precision(5)]);
    assert_eq!(Measure::parse("recall_10", &[]).unwrap(), [Recall(10)]);
    assert_eq!(Measure::parse("ndcg_cut", &[2]).unwrap(), [Ndcg(2)]);
    assert_eq!(Measure::parse("ndcg_cut.20", &[]).unwrap(), [Ndcg(20)]);
    assert_eq!(
        Measure::parse("precision@10", &[]).unwrap(),
        [Precision(10)]
    );
    assert_eq!(Measure::parse("ndcg@4", &[]).unwrap(), [Ndcg(4)]);
    // trec_eval's `ndcg` has no cut-off, whatever -k says; asking for one points to ndcg_cut.
    assert_eq!(Measure::parse("ndcg", &[]).unwrap(), [NdcgFull]);
    assert_eq!(Measure::parse("ndcg", &[5, 10]).unwrap(), [NdcgFull]);
    for bad in ["ndcg.5", "ndcg_5"] {
        let e = Measure::parse(bad, &[]).unwrap_err().to_string();
        assert!(
            e.contains("takes no cut-off") && e.contains("`ndcg_cut.5`"),
            "{e}"
        );
    }
    assert_eq!(Measure::parse("recip_rank", &[]).unwrap(), [ReciprocalRank]);
    assert_eq!(Measure::parse(" map ", &[10]).unwrap(), [AveragePrecision]);
    for bad in ["bpref", "P.", "P.x", "ndcg_cut.0", "", "P_", "ndcg_cut_"] {
        assert!(Measure::parse(bad, &[]).is_err(), "{bad}");
    }
    assert!(Measure::parse("P", &[0]).is_err());
    let m = [
        Precision(10),
        Recall(10),
        Ndcg(10),
        NdcgFull,
        ReciprocalRank,
        AveragePrecision,
    ];
    let report: Vec<String> = m.iter().map(Measure::report_name).collect();
    let trec: Vec<String> = m.iter().map(Measure::trec_name).collect();
    assert_eq!(
        report,
        ["precision@10", "recall@10", "ndcg@10", "ndcg", "mrr", "map"]
    );
    assert_eq!(
        trec,
        [
            "P_10",
            "recall_10",
            "ndcg_cut_10",
            "ndcg",
            "recip_rank",
            "map"
        ]
    );
    assert_eq!(Ndcg(3).to_string(), "ndcg_cut_3");
    assert_eq!(
        (
            Ndcg(3).cutoff(),
            NdcgFull.cutoff(),
            AveragePrecision.cutoff()
        ),
        (Some(3), None, None)
    );
    // names round-trip
    for x in m {
        assert_eq!(Measure::parse(&x.trec_name(), &[]).unwrap(), [x]);
        assert_eq!(Measure::parse(&x.report_name(), &[10]).unwrap(), [x]);
    }
}

#[test]
fn evaluate_by_hand() {
    // q1: judged a=2, b=0, c=1, e=3 (e never retrieved), u=-1 (unjudged)
    // ranking by score: x(nonpool) c b a u
    let qrels = Qrels::parse(
        "q1 0 a 2\nq1 0 b 0\nq1 0 c 1\nq1 0 e 3\nq1 0 u -1\n",
        "qrels",
    )
    .unwrap();
    let run = Run::parse(
        "q1 Q0 a 9 0.2 t\nq1 Q0 b 9 0.3 t\nq1 Q0 c 9 0.4 t\nq1 Q0 x 9 0.9 t\nq1 Q0 u 9 0.1 t\n",
        "run",
    )
    .unwrap();
    let mut ms = Measure::parse("P.1,2,4,6", &[]).unwrap();
    ms.extend(Measure::parse("recall.2,4", &[]).unwrap());
    ms.extend(Measure::parse("ndcg_cut.2,5", &[]).unwrap());
    ms.push(Measure::ReciprocalRank);
    ms.push(Measure::AveragePrecision);
    ms.push(Measure::NdcgFull);
    let r = &evaluate(&qrels, &run, &ms)["q1"];
    let close = |name: &str, v: f64| assert!((r[name] - v).abs() < 1e-12, "{name}: {}", r[name]);
    close("precision@1", 0.0);
    close("precision@2", 0.5);
    close("precision@4", 0.5);
    close("precision@6", 2.0 / 6.0);
    close("recall@2", 1.0 / 3.0);
    close("recall@4", 2.0 / 3.0);
    close("mrr", 0.5);
    close("map", (1.0 / 2.0 + 2.0 / 4.0) / 3.0);
    let l2 = |x: f64| x.log2();
    // gains: rank 2 → 1, rank 4 → 2; ideal 3, 2, 1
    close("ndcg@2", (1.0 / l2(3.0)) / (3.0 + 2.0 / l2(3.0)));
    let idcg5 = 3.0 + 2.0 / l2(3.0) + 1.0 / l2(4.0);
    close("ndcg@5", (1.0 / l2(3.0) + 2.0 / l2(5.0)) / idcg5);
    // The whole ranking (five documents) against every judged grade: ndcg@5 here, not ndcg@2.
    close("ndcg", (1.0 / l2(3.0) + 2.0 / l2(5.0)) / idcg5);
}

#[test]
fn evaluate_scores_run_queries_that_are_judged() {
    let qrels = Qrels::parse("q1 0 a 1\nq2 0 a 0\nq4 0 a 1\n", "qrels").unwrap();
    let run = Run::parse("q1 Q0 a 1 1 t\nq2 Q0 a 1 1 t\nq3 Q0 a 1 1 t\n", "run").unwrap();
    let r = evaluate(&qrels, &run, &[Measure::AveragePrecision]);
    assert_eq!(r.keys().collect::<Vec<_>>(), ["q1", "q2"]);
    assert_eq!(r["q1"]["map"], 1.0);
    assert_eq!(r["q2"]["map"], 0.0, "no relevant document judged");
    assert_eq!(mean(&r)["map"], 0.5);
    // no measures: trec_eval's defaults
    let all = evaluate(&qrels, &run, &[]);
    assert_eq!(all["q1"].len(), 29);
    assert_eq!(all["q1"]["precision@1000"], 0.001);
    assert!(mean(&PerQuery::new()).is_empty());
}

#[test]
fn score_aggregates_in_measure_order_with_population_std() {
    let qrels = Qrels::parse("q1 0 a 1\nq1 0 b 1\nq2 0 c 1\nq3 0 z 1\n", "q.txt").unwrap();
    // q1: a at 1, b missing; q2: c at 2; q3 judged but not run; q9 run but not judged
    let run = Run::parse(
        "q1 Q0 a 1 3 t\nq1 Q0 x 2 2 t\nq2 Q0 y 1 3 t\nq2 Q0 c 2 2 t\nq9 Q0 a 1 1 t\n",
        "r.txt",
    )
    .unwrap();
    let measures = [
        Measure::Recall(2),
        Measure::ReciprocalRank,
        Measure::Precision(1),
    ];
    let r = score(&qrels, &run, &measures);
    assert_eq!(r.level, crate::metrics::ResultLevel::Trec);
    assert_eq!((r.k, r.mode, r.queries), (None, None, 2));
    assert_eq!(r.cutoffs, Some(vec![1, 2]));
    let names: Vec<&str> = r.metrics.names().collect();
    assert_eq!(names, ["recall@2", "mrr", "precision@1"]);
    let ids: Vec<&str> = r.per_query.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(ids, ["q1", "q2"]);
    // recall@2: 1/2 and 1 → mean 0.75, std 0.25; mrr: 1 and 1/2; P@1: 1 and 0
    assert_eq!(
        r.metrics.0,
        [
            ("recall@2".into(), 0.75),
            ("mrr".into(), 0.75),
            ("precision@1".into(), 0.5)
        ]
    );
    assert_eq!(
        r.std.0,
        [
            ("recall@2".into(), 0.25),
            ("mrr".into(), 0.25),
            ("precision@1".into(), 0.5)
        ]
    );
    // the means agree with `mean` over `evaluate`
    let means = mean(&evaluate(&qrels, &run, &measures));
    for (n, v) in &r.metrics.0 {
        assert_eq!(means[n], *v);
    }
    let none = score(&qrels, &Run::parse("", "r.txt").unwrap(), &[]);
    assert_eq!(none.queries, 0);
    assert_eq!(none.metrics.0.len(), Measure::defaults(&[]).len());
    assert!(none.metrics.values().all(|v| v == 0.0));
}

#[test]
fn a_measure_given_twice_is_scored_once() {
    let qrels = Qrels::parse("q1 0 a 1\n", "qrels").unwrap();
    let run = Run::parse("q1 Q0 a 1 1 t\n", "run").unwrap();
    use Measure::*;
    let r = score(
        &qrels,
        &run,
        &[Precision(1), NdcgFull, Precision(1), NdcgFull],
    );
    let names = |f: &crate::metrics::Figures| -> Vec<String> {
        f.0.iter().map(|(n, _)| n.clone()).collect()
    };
    assert_eq!(names(&r.metrics), ["precision@1", "ndcg"]);
    assert_eq!(names(&r.std), ["precision@1", "ndcg"]);
    assert_eq!(names(&r.per_query[0].metrics), ["precision@1", "ndcg"]);
}

#[test]
fn columns_hold_each_query_alone_scored_across_threads() {
    // Enough queries (4,500 > 2 × 2,048) for the scoring to split over threads, ids written
    // out of order; every 7th query is checked against scoring it in a run of its own.
    let (mut qrels_text, mut run_text) = (String::new(), String::new());
    for q in 0..4500 {
        let id = format!("q{:05}", (q * 7919) % 4500);
        for d in 0..4 {
            qrels_text += &format!("{id} 0 d{d} {}\n", (q + d) % 3);
        }
        for d in 0..6 {
            run_text += &format!("{id} Q0 d{} {d} {}.{d} t\n", d * 2, (q * d) % 5);
        }
    }
    let (qrels, run) = (
        Qrels::parse(&qrels_text, "qrels").unwrap(),
        Run::parse(&run_text, "run").unwrap(),
    );
    let mut ms = Measure::parse("P.2,5", &[]).unwrap();
    ms.push(Measure::AveragePrecision);
    ms.push(Measure::NdcgFull);
    ms.push(Measure::ReciprocalRank);
    let scores = evaluate_columns(&qrels, &run, &ms);
    assert_eq!(scores.len(), 4500);
    assert_eq!(
        scores.names(),
        ["map", "mrr", "ndcg", "precision@2", "precision@5"]
    );
    let ids = scores.query_ids();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids in byte order");
    for (q, id) in ids.iter().enumerate().step_by(7) {
        let mine = |text: &str| -> String {
            text.lines()
                .filter(|l| l.split(' ').next() == Some(*id))
                .map(|l| format!("{l}\n"))
                .collect()
        };
        let alone = evaluate(
            &Qrels::parse(&mine(&qrels_text), "qrels").unwrap(),
            &Run::parse(&mine(&run_text), "run").unwrap(),
            &ms,
        );
        for name in scores.names() {
            assert_eq!(
                scores.column(name).unwrap()[q],
                alone[*id][name],
                "{id} {name}"
            );
        }
    }
    let per_query = evaluate(&qrels, &run, &ms);
    assert_eq!(scores.to_per_query(), per_query);
    let means: BTreeMap<String, f64> = scores.means().into_iter().collect();
    assert_eq!(means, mean(&per_query));
    assert_eq!(scores.column("recall@2"), None);
    let empty = Run::parse("", "run").unwrap();
    let none = evaluate_columns(&qrels, &empty, &ms);
    assert!(none.is_empty() && none.means().is_empty());
}

proptest::proptest! {
    /// The short way of reading a score gives `str::parse`'s value, bit for bit, and refuses
    /// what it refuses.
    #[test]
    fn scores_read_as_str_parse_reads_them(
        text in "[+-]?[0-9]{0,20}(\\.[0-9]{0,20})?([eE][+-]?[0-9]{1,3})?|[-+.0-9a-zA-Z]{0,8}",
    ) {
        let ours = super::parse::parse_score(&text).map(f64::to_bits);
        let std = text.parse::<f64>().ok().map(f64::to_bits);
        proptest::prop_assert_eq!(ours, std, "{}", text);
    }

    /// Run lines split into the fields `split_ascii_whitespace` gives, and the same count.
    #[test]
    fn run_lines_split_as_split_ascii_whitespace(
        parts in proptest::collection::vec(
            proptest::sample::select(vec!["q1", "Q0", "d\u{3000}x", "0.5", "-2", " ", "\t", "\r", "\x0c", "\u{a0}", "é"]),
            0..14,
        ),
    ) {
        let line: String = parts.concat();
        let path = camino::Utf8Path::new("run.txt");
        let expected: Vec<&str> = line.split_ascii_whitespace().collect();
        match super::parse::run_line(&line, path, 3) {
            Ok((qid, docno, score, tag)) => {
                proptest::prop_assert_eq!(expected.len(), 6);
                proptest::prop_assert_eq!((qid, docno, tag), (expected[0], expected[2], expected[5]));
                proptest::prop_assert_eq!(score.to_bits(), expected[4].parse::<f64>().unwrap().to_bits());
            }
            Err(e) => {
                let message = e.to_string();
                proptest::prop_assert!(
                    message.contains(&format!("found {}", expected.len()))
                        || (expected.len() == 6 && message.contains("is not a number")),
                    "{}", message
                );
            }
        }
    }
}

#[test]
fn below_bang_marks_exactly_the_bytes_below_it() {
    for b in 0..=255u8 {
        for at in 0..8 {
            let mut word = [b'!'; 8];
            word[at] = b;
            let want = if b < b'!' { 0x80u64 << (8 * at) } else { 0 };
            assert_eq!(
                super::parse::below_bang(u64::from_le_bytes(word)),
                want,
                "byte {b:#x} at {at}"
            );
        }
    }
}

proptest::proptest! {
    /// Qrels parsed in pieces on threads are the qrels parsed in one, and give the same
    /// errors: grouped by query or not, with bad lines, blank lines and repeats.
    #[test]
    fn qrels_in_pieces_are_qrels_in_one(
        lines in proptest::collection::vec((0u8..6, 0u8..5, -1i32..3, 0u8..40), 0..60),
        grouped in proptest::bool::ANY,
        threads in 2usize..5,
    ) {
        let mut lines = lines;
        if grouped {
            lines.sort_by_key(|l| l.0);
        }
        let text: String = lines
            .iter()
            .map(|&(q, d, g, noise)| match noise {
                0 => format!("q{q} 0 d{d}\n"),
                1 => "\n".to_owned(),
                _ => format!("q{q} 0 d{d} {g}\n"),
            })
            .collect();
        let one = Qrels::parse(&text, "qrels");
        let pieces = Qrels::parse_in_pieces(&text, "qrels", threads, 1);
        match (one, pieces) {
            (Ok(one), Ok(pieces)) => proptest::prop_assert_eq!(one, pieces),
            (Err(a), Err(b)) => proptest::prop_assert_eq!(a.to_string(), b.to_string()),
            (a, b) => proptest::prop_assert!(false, "{:?} / {:?}", a.is_ok(), b.is_ok()),
        }
    }
}
