//! `trec_eval::run` against a naive model of six measures on random qrels and runs with tied
//! scores, duplicate documents and queries missing on either side; and the measures on
//! hand-worked cases.

use super::measures::{self as m, Gains, Ranked, NONPOOL};
use super::trec_eval;
use super::trec_eval_input::{read_results, Results};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Runs trec_eval in-process on files written to a temporary folder: code, stdout, stderr.
fn run(args: &[&str], qrels: &str, results: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let q = dir.path().join("qrels");
    let r = dir.path().join("run");
    std::fs::write(&q, qrels).unwrap();
    std::fs::write(&r, results).unwrap();
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.push(q.to_str().unwrap().to_owned());
    all.push(r.to_str().unwrap().to_owned());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = trec_eval::run(&all, &mut std::io::empty(), &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

/// The naive model: per query, the figures of the six measures, from the definitions.
fn naive(judged: &BTreeMap<String, i64>, results: Option<&[(String, f64)]>) -> [f64; 6] {
    let Some(results) = results else {
        // -c: a query without results scores 0 everywhere
        return [0.0; 6];
    };
    let mut ranked: Vec<&(String, f64)> = results.iter().collect();
    ranked.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap().then(b.0.cmp(&a.0)));
    let grade = |d: &str| judged.get(d).copied();
    let relevant = |d: &str| grade(d).is_some_and(|g| g >= 1);
    let r = judged.values().filter(|&&g| g >= 1).count() as f64;
    let n_nonrel = judged.values().filter(|&&g| g == 0).count() as f64;
    let rels: Vec<bool> = ranked.iter().map(|d| relevant(&d.0)).collect();
    let hits = |k: usize| rels.iter().take(k).filter(|&&x| x).count() as f64;
    let p5 = hits(5) / 5.0;
    let recall10 = if r > 0.0 { hits(10) / r } else { 0.0 };
    let mut ap = 0.0;
    let mut found = 0.0;
    for (i, &x) in rels.iter().enumerate() {
        if x {
            found += 1.0;
            ap += found / (i + 1) as f64;
        }
    }
    let ap = if r > 0.0 { ap / r } else { 0.0 };
    let rr = rels
        .iter()
        .position(|&x| x)
        .map_or(0.0, |i| 1.0 / (i + 1) as f64);
    let dcg: f64 = ranked
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, d)| {
            grade(&d.0)
                .filter(|&g| g > 0)
                .map_or(0.0, |g| g as f64 / ((i + 2) as f64).log2())
        })
        .sum();
    let mut ideal: Vec<i64> = judged.values().copied().filter(|&g| g > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(10)
        .enumerate()
        .map(|(i, &g)| g as f64 / ((i + 2) as f64).log2())
        .sum();
    let ndcg10 = if idcg > 0.0 { dcg / idcg } else { 0.0 };
    let mut bpref = 0.0;
    let mut nonrel_above = 0.0;
    for d in &ranked {
        match grade(&d.0) {
            Some(0) => nonrel_above += 1.0,
            Some(g) if g >= 1 => {
                bpref += if nonrel_above > 0.0 {
                    1.0 - f64::min(nonrel_above, r) / f64::min(n_nonrel, r)
                } else {
                    1.0
                }
            }
            _ => {}
        }
    }
    let bpref = if r > 0.0 { bpref / r } else { bpref };
    [p5, recall10, ap, rr, ndcg10, bpref]
}

const NAMES: [&str; 6] = [
    "P_5",
    "recall_10",
    "map",
    "recip_rank",
    "ndcg_cut_10",
    "bpref",
];

/// Random qrels (grades -1..=3, every query with a judged grade) and a run over them.
fn inputs() -> impl Strategy<Value = (String, String)> {
    let query = (
        proptest::collection::btree_map(0u8..20, -1i64..=3, 1..12),
        proptest::option::weighted(0.8, proptest::collection::vec((0u8..20, 0u8..4), 0..15)),
    );
    (proptest::collection::vec(query, 1..6), 0u8..3).prop_map(|(queries, extra)| {
        let (mut qrels, mut run) = (String::new(), String::new());
        for (q, (judged, results)) in queries.iter().enumerate() {
            for (d, g) in judged {
                qrels.push_str(&format!("q{q} 0 d{d} {g}\n"));
            }
            if !judged.values().any(|&g| g >= 0) {
                qrels.push_str(&format!("q{q} 0 zz 0\n"));
            }
            for (d, s) in results.iter().flatten() {
                run.push_str(&format!("q{q} Q0 d{d} 0 {} r{q}\n", *s as f64 / 2.0));
            }
        }
        for e in 0..extra {
            run.push_str(&format!("unjudged{e} Q0 d1 1 1 rx\n"));
        }
        (qrels, run)
    })
}

fn parse_qrels(qrels: &str) -> BTreeMap<String, BTreeMap<String, i64>> {
    let mut out: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
    for line in qrels.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        out.entry(f[0].into())
            .or_default()
            .insert(f[2].into(), f[3].parse().unwrap());
    }
    out
}

fn parse_run(run: &str) -> BTreeMap<String, Vec<(String, f64)>> {
    let mut out: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
    for line in run.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        out.entry(f[0].into())
            .or_default()
            .push((f[2].into(), f[4].parse().unwrap()));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn all_trec_per_query_matches_a_naive_model((qrels, results) in inputs(), complete in any::<bool>()) {
        let args: &[&str] = if complete { &["-q", "-c", "-m", "all_trec"] } else { &["-q", "-m", "all_trec"] };
        let (code, out, err) = run(args, &qrels, &results);
        if results.is_empty() {
            // trec_eval refuses an empty results file as unreadable
            prop_assert_eq!(code, 2);
            prop_assert!(err.starts_with("trec_eval.get_results: Cannot read results file"), "{}", err);
            return Ok(());
        }
        let judged = parse_qrels(&qrels);
        let by_query = parse_run(&results);
        // trec_eval's order: qrels queries by id; the first one that cannot be scored stops it.
        let mut expected: Vec<(String, [f64; 6])> = Vec::new();
        let mut failure = None;
        for (qid, grades) in &judged {
            let docs = by_query.get(qid);
            if docs.is_none() && !complete {
                failure = Some((4, format!("trec_eval: result qid '{qid}' not found in qrels\n")));
                break;
            }
            if let Some(docs) = docs {
                let mut seen: Vec<&str> = docs.iter().map(|d| d.0.as_str()).collect();
                seen.sort_unstable();
                if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
                    failure = Some((4, format!("trec_eval.form_res_qrels: duplicate docs {}trec_eval: Can't calculate measure 'num_ret'\n", w[0])));
                    break;
                }
            }
            expected.push((qid.clone(), naive(grades, docs.map(Vec::as_slice))));
        }
        let mut printed: BTreeMap<(String, String), f64> = BTreeMap::new();
        for line in out.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            prop_assert_eq!(f.len(), 3, "{}", line);
            prop_assert_eq!(f[0].len(), 22.max(f[0].trim_end().len()), "{}", line);
            if let Ok(v) = f[2].parse::<f64>() {
                printed.insert((f[0].trim_end().to_owned(), f[1].to_owned()), v);
            }
        }
        if let Some((want_code, message)) = failure {
            prop_assert_eq!(code, want_code);
            prop_assert_eq!(err, message);
            for (qid, _) in &expected {
                prop_assert!(printed.contains_key(&("map".to_owned(), qid.clone())), "{} printed before the failure", qid);
            }
            return Ok(());
        }
        prop_assert_eq!(code, 0, "{}", err);
        let mut sums = [0.0; 6];
        for (qid, values) in &expected {
            for (k, name) in NAMES.iter().enumerate() {
                let got = printed[&(name.to_string(), qid.clone())];
                prop_assert!((got - values[k]).abs() <= 0.00005 + 1e-12, "{} {}: {} vs naive {}", name, qid, got, values[k]);
                sums[k] += values[k];
            }
        }
        for (k, name) in NAMES.iter().enumerate() {
            let got = printed[&(name.to_string(), "all".to_owned())];
            let want = sums[k] / expected.len() as f64;
            prop_assert!((got - want).abs() <= 0.00005 + 1e-12, "{} all: {} vs naive {}", name, got, want);
        }
        prop_assert_eq!(printed[&("num_q".to_owned(), "all".to_owned())], expected.len() as f64);
    }
}

fn ranked(rels: &[i64], levels: &[u64]) -> Ranked {
    let level = 1;
    Ranked {
        rels: rels.to_vec(),
        rel_levels: levels.to_vec(),
        level,
        num_rel: levels.iter().skip(1).sum(),
        num_rel_ret: rels.iter().filter(|&&g| g >= level).count() as u64,
        num_nonpool: rels.iter().filter(|&&g| g == NONPOOL).count() as u64,
        num_unjudged: rels.iter().filter(|&&g| g == m::UNJUDGED).count() as u64,
    }
}

#[test]
fn measures_by_hand() {
    // relevant at ranks 1 and 3, a non-pooled document at 2; 3 relevant, 2 non-relevant judged
    let r = ranked(&[1, NONPOOL, 2, 0], &[2, 2, 1]);
    assert_eq!(m::precision(&r, &[2, 10]), [0.5, 0.2]);
    assert_eq!(m::recall(&r, &[1, 3]), [1.0 / 3.0, 2.0 / 3.0]);
    assert_eq!(m::average_precision(&r), (1.0 + 2.0 / 3.0) / 3.0);
    assert_eq!(m::reciprocal_rank(&r), 1.0);
    assert_eq!(m::r_precision(&r), 2.0 / 3.0);
    assert_eq!(m::success(&r, &[1]), [1.0]);
    assert_eq!(m::unjudged(&r, &[2]), [0.5]);
    assert_eq!(m::relstring(&r, 10), "1-20");
    assert_eq!(
        m::set_f(&r, 1.0),
        2.0 * 0.5 * (2.0 / 3.0) / (0.5 + 2.0 / 3.0)
    );
    assert_eq!(m::num_nonrel_judged_ret(&r), 1.0);
    // bpref: both relevant retrieved documents are above every non-relevant one
    assert_eq!(m::bpref(&r), 2.0 / 3.0);
    // ndcg_cut gains the grade: DCG 1 + 2/log2(4), ideal 2 + 1/log2(3) + 1/log2(4)
    let dcg = 1.0 + 2.0 / 2.0;
    let ideal = 2.0 + 1.0 / 3f64.log2() + 1.0 / 2.0;
    assert!((m::ndcg_cut(&r, &[10])[0] - dcg / ideal).abs() < 1e-15);
    // ndcg with the default gains (the grades) is the same over the whole ranking
    assert!((m::ndcg(&r, &Gains::new(&r, &[])) - dcg / ideal).abs() < 1e-15);
    // a gain map changes it: grade 2 is worth 10
    let mapped = Gains::new(&r, &[("2".into(), 10.0)]);
    let (d, i) = m::dcg(&r, &mapped);
    assert!((d - (1.0 + 10.0 / 2.0)).abs() < 1e-15);
    assert!((i - (10.0 + 1.0 / 3f64.log2() + 1.0 / 2.0)).abs() < 1e-15);
    // rbp with p = 0.5: grades rescaled to [0, 1] (max 2) → 0.5 * (0.5 + 1 * 0.25)
    assert_eq!(m::rbp(&r, &Gains::new(&r, &[]), 0.5), 0.5 * (0.5 + 0.25));
    assert_eq!(m::rbp_resid(&r, 0.5), 0.5f64.powi(4) + 0.5 * 0.5);
}

#[test]
fn all_trec_has_a_hundred_names() {
    let names = trec_eval::all_trec_names();
    assert_eq!(names.len(), 100);
    let (code, out, err) = run(&["-m", "all_trec"], "q 0 d 1\n", "q Q0 d 1 1 r\n");
    assert_eq!(code, 0, "{err}");
    let printed: Vec<&str> = out
        .lines()
        .map(|l| l.split('\t').next().unwrap().trim_end())
        .collect();
    // relstring prints per query only
    let without_relstring: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| *n != "relstring")
        .collect();
    assert_eq!(printed, without_relstring);
}

#[test]
fn ties_rank_by_descending_docno_and_docnos_may_hold_a_hash() {
    let (code, out, _) = run(
        &["-q", "-m", "relstring", "-m", "recip_rank"],
        "q 0 d9 1\nq 0 d10 0\nq 0 a#1 2\n",
        "q Q0 d10 1 0.5 r\nq Q0 d9 2 0.5 r\nq Q0 a#1 3 0.5 r\n",
    );
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "recip_rank            \tq\t1.0000\nrelstring             \tq\t'102'\n\
         recip_rank            \tall\t1.0000\n"
    );
}

#[test]
fn docnos_of_every_length_find_their_grade_and_their_duplicate() {
    // The hash reads a docno's tail with wide loads that overlap its head: names differing in
    // their last byte only, of each length around those loads' sizes, must stay apart.
    for n in 1..=20 {
        let (a, b) = (
            format!("{}a", "x".repeat(n - 1)),
            format!("{}b", "x".repeat(n - 1)),
        );
        let qrels = format!("q 0 {a} 1\nq 0 {b} 0\n");
        let (code, out, _) = run(
            &["-q", "-m", "relstring"],
            &qrels,
            &format!("q Q0 {b} 1 0.9 r\nq Q0 {a} 2 0.5 r\n"),
        );
        assert_eq!(
            (code, out.as_str()),
            (0, "relstring             \tq\t'01'\n"),
            "length {n}"
        );
        let (code, _, err) = run(
            &["-m", "relstring"],
            &qrels,
            &format!("q Q0 {a} 1 0.9 r\nq Q0 {b} 2 0.5 r\nq Q0 {a} 3 0.1 r\n"),
        );
        assert_ne!(code, 0, "length {n}");
        assert!(
            err.contains(&format!("duplicate docs {a}")),
            "length {n}: {err}"
        );
    }
}

#[test]
fn a_query_missing_from_the_run_scores_zero_with_c() {
    let (code, out, _) = run(
        &["-c", "-m", "num_q", "-m", "map", "-m", "num_ret"],
        "q1 0 d 1\nq2 0 d 1\n",
        "q1 Q0 d 1 1 r\n",
    );
    assert_eq!(code, 0);
    assert_eq!(
        out,
        "num_q                 \tall\t2\nnum_ret               \tall\t1\nmap                   \tall\t0.5000\n"
    );
}

#[test]
fn a_run_read_in_pieces_is_the_run_read_whole() {
    let text = b"# c\nq1 Q0 a 1 1 r\nq2 Q0 b 1 1 r\n\nq1 Q0 c 1 0.5 r\nq3 Q0 a 1 1 last\n";
    let whole = read_results(text, 1).ok().unwrap();
    for threads in 2..6 {
        let parts = read_results(text, threads).ok().unwrap();
        assert_eq!(parts.run_id, b"last");
        let flat = |r: &Results<'_>| {
            (0..r.len())
                .map(|q| r.docs(q).map(|d| (d.0.to_vec(), d.1)).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        };
        assert_eq!(flat(&parts), flat(&whole), "{threads} threads");
    }
    let bad = b"q1 Q0 a 1 1 r\n\n# c\nq1 Q0 b 1 1 r\nq1 Q0 c 1 1\nq1 Q0 d 1 1 r\n";
    for threads in 1..6 {
        assert_eq!(
            read_results(bad, threads).err(),
            Some(3),
            "{threads} threads"
        );
    }
}

/// `(qid, docno, score key)` of each line of a run.
type RunLines = Vec<(Vec<u8>, Vec<u8>, u64)>;

/// The run as trec_eval reads it, line by line: `(qid, docno, score)` of each line, or the
/// number of the first malformed one (blank and comment lines not counted).
fn model_run(text: &[u8]) -> Result<RunLines, usize> {
    use super::trec_eval_input::{atof, score_key, tokens};
    let mut out = Vec::new();
    let mut count = 0;
    for line in text.split(|&b| b == b'\n') {
        let (f, n) = tokens::<6>(line);
        if n == 0 || f[0][0] == b'#' {
            continue;
        }
        count += 1;
        if n < 6 {
            return Err(count);
        }
        out.push((f[0].to_vec(), f[2].to_vec(), score_key(atof(f[4]))));
    }
    Ok(out)
}

proptest! {
    /// The run parser (eight bytes at a time, scores by a short way) reads what the line by
    /// line model reads: fields apart at C's whitespace (vertical tab and form feed too, other
    /// control bytes inside fields), blank and comment lines skipped, malformed lines numbered.
    #[test]
    fn the_run_parser_reads_as_line_by_line(
        parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "q1", "q2", "#", "Q0", "d1", "d\u{e9}", "0.5", "-1.25", "+3", "1e3", "0.1x", ".",
                "007.500", "12345678901234567", "-0", "inf", " ", "  ", "\t", "\r", "\x0b",
                "\x0c", "\x01", "\n", "\n", "\n",
            ]),
            0..80,
        ),
        threads in 1usize..4,
    ) {
        let text: String = parts.concat();
        let model = model_run(text.as_bytes());
        match read_results(text.as_bytes(), threads) {
            Err(line) => prop_assert_eq!(Err::<(), usize>(line), model.map(|_| ())),
            Ok(r) => {
                let mut read: RunLines = Vec::new();
                let mut model = model.expect("the model reads it too");
                // Grouped by query in order of first appearance, as the reader keeps them.
                let mut order: Vec<Vec<u8>> = Vec::new();
                for (q, _, _) in &model {
                    if !order.contains(q) {
                        order.push(q.clone());
                    }
                }
                model.sort_by_key(|(q, _, _)| order.iter().position(|o| o == q));
                for q in &order {
                    let at = r.query(q).expect("every query is there");
                    read.extend(r.docs(at).map(|(d, k)| (q.clone(), d.to_vec(), k)));
                }
                prop_assert_eq!(r.len(), order.len());
                prop_assert_eq!(read, model);
            }
        }
    }
}

/// Runs trec_eval in-process with the run read from a file in blocks of `block` bytes:
/// code, stdout, stderr.
fn run_in_blocks(
    args: &[&str],
    qrels: &str,
    results: &str,
    block: usize,
) -> (i32, Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let (q, r) = (dir.path().join("qrels"), dir.path().join("run"));
    std::fs::write(&q, qrels).unwrap();
    std::fs::write(&r, results).unwrap();
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.push(q.to_str().unwrap().to_owned());
    all.push(r.to_str().unwrap().to_owned());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = trec_eval::run_in_blocks(&all, &mut std::io::empty(), &mut out, &mut err, block);
    let err = String::from_utf8(err)
        .unwrap()
        .replace(r.to_str().unwrap(), "-")
        .into_bytes();
    (code, out, err)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A run file read in blocks (each query scored as its lines come in, or, when a judged
    /// query's lines are apart, the file read whole after all) prints what the run read whole
    /// from standard input prints: figures, errors, exit codes.
    #[test]
    fn a_run_read_in_blocks_prints_what_it_prints_read_whole(
        (qrels, results) in inputs(),
        swaps in proptest::collection::vec((0usize..64, 0usize..64), 0..3),
        junk in proptest::option::of((0usize..64, proptest::sample::select(vec![
            "", "# comment", "q0 Q0 d1 1 0.5", "\t", "q1 Q0 d3 1 2 r1",
        ]))),
        block in 1usize..300,
        options in proptest::sample::select(vec![
            "-q -m all_trec", "-q -c -m all_trec", "-q -M3 -m P.2 -m map", "-n -c -m map",
            "-q -J -l2 -m relstring -m ndcg", "-q",
        ]),
    ) {
        let mut lines: Vec<&str> = results.lines().collect();
        for (a, b) in swaps {
            if !lines.is_empty() {
                let n = lines.len();
                lines.swap(a % n, b % n);
            }
        }
        if let Some((at, line)) = junk {
            lines.insert(at % (lines.len() + 1), line);
        }
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        // An empty file cannot be read; empty standard input is a run without lines.
        prop_assume!(!text.is_empty());
        let args: Vec<&str> = options.split(' ').collect();
        let in_blocks = run_in_blocks(&args, &qrels, &text, block);
        let dir = tempfile::tempdir().unwrap();
        let q = dir.path().join("qrels");
        std::fs::write(&q, &qrels).unwrap();
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.extend([q.to_str().unwrap().to_owned(), "-".to_owned()]);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = trec_eval::run(&all, &mut text.as_bytes(), &mut out, &mut err);
        prop_assert_eq!(in_blocks.0, code);
        prop_assert_eq!(String::from_utf8_lossy(&in_blocks.1), String::from_utf8_lossy(&out));
        prop_assert_eq!(String::from_utf8_lossy(&in_blocks.2), String::from_utf8_lossy(&err));
    }
}
