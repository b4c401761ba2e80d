//! `trec_eval::run -R prefs` against a naive model of five preference measures on random
//! preference files (several groups, several sub-groups, ties in the run).

use super::trec_eval;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// Runs trec_eval in-process on files written to a temporary folder: code, stdout, stderr.
fn run(args: &[&str], prefs: &str, results: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (p, r) = (dir.path().join("prefs"), dir.path().join("run"));
    std::fs::write(&p, prefs).unwrap();
    std::fs::write(&r, results).unwrap();
    let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    all.push(p.to_str().unwrap().to_owned());
    all.push(r.to_str().unwrap().to_owned());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = trec_eval::run(&all, &mut std::io::empty(), &mut out, &mut err);
    (
        code,
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

/// One query: per group, per sub-group, `(doc, level)`; and the run's `(doc, score)`.
type Query = (Vec<Vec<Vec<(u8, u8)>>>, Vec<(u8, u8)>);

/// The naive model: `prefs_num_prefs_poss`, `prefs_simp`, `prefs_simp_ret`, `prefs_avgjg`,
/// `prefs_pair`, from the definitions.
fn naive((groups, results): &Query) -> [f64; 5] {
    // Ranked by score, ties by docno ascending (as text: "d10" < "d9").
    let mut ranked: Vec<(String, u8)> =
        results.iter().map(|&(d, s)| (format!("d{d}"), s)).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let rank = |d: &str| ranked.iter().position(|r| r.0 == d);
    // Fulfilled: a above b, or a retrieved and b not.
    let fulfils = |a: &str, b: &str| match (rank(a), rank(b)) {
        (Some(x), Some(y)) => x < y,
        (Some(_), None) => true,
        _ => false,
    };
    let (mut ful, mut poss, mut ful_ret, mut poss_ret) = (0usize, 0usize, 0usize, 0usize);
    let mut per_group = 0.0;
    // How many groups prefer a to b.
    let mut counts: BTreeMap<(String, String), usize> = BTreeMap::new();
    for subs in groups {
        let mut prefers: BTreeSet<(String, String)> = BTreeSet::new();
        for sub in subs {
            for &(a, la) in sub {
                for &(b, lb) in sub {
                    if la > lb {
                        prefers.insert((format!("d{a}"), format!("d{b}")));
                    }
                }
            }
        }
        // The transitive closure, by brute force.
        loop {
            let more: Vec<(String, String)> = prefers
                .iter()
                .flat_map(|(a, b)| {
                    prefers
                        .iter()
                        .filter(move |(c, _)| c == b)
                        .map(move |(_, d)| (a.clone(), d.clone()))
                })
                .filter(|p| !prefers.contains(p))
                .collect();
            if more.is_empty() {
                break;
            }
            prefers.extend(more);
        }
        let (mut f, mut p) = (0usize, 0usize);
        for (a, b) in &prefers {
            *counts.entry((a.clone(), b.clone())).or_default() += 1;
            p += 1;
            f += usize::from(fulfils(a, b));
            if rank(a).is_some() && rank(b).is_some() {
                poss_ret += 1;
                ful_ret += usize::from(fulfils(a, b));
            }
        }
        ful += f;
        poss += p;
        if p > 0 {
            per_group += f as f64 / p as f64;
        }
    }
    let ratio = |f: usize, p: usize| if p > 0 { f as f64 / p as f64 } else { 0.0 };
    // Pairs: the share of their preferences fulfilled, 0 when neither was retrieved.
    let (mut pairs, mut shares) = (0usize, 0.0);
    let docs: BTreeSet<&String> = counts.keys().flat_map(|(a, b)| [a, b]).collect();
    for &a in &docs {
        for &b in &docs {
            if a >= b {
                continue;
            }
            let ab = counts.get(&(a.clone(), b.clone())).copied().unwrap_or(0);
            let ba = counts.get(&(b.clone(), a.clone())).copied().unwrap_or(0);
            if ab + ba == 0 {
                continue;
            }
            pairs += 1;
            let (ra, rb) = (rank(a), rank(b));
            if ra.is_some() || rb.is_some() {
                let a_first = fulfils(a, b);
                shares += if a_first { ab } else { ba } as f64 / (ab + ba) as f64;
            }
        }
    }
    [
        poss as f64,
        ratio(ful, poss),
        ratio(ful_ret, poss_ret),
        per_group / groups.len() as f64,
        if pairs > 0 {
            shares / pairs as f64
        } else {
            0.0
        },
    ]
}

const NAMES: [&str; 5] = [
    "prefs_num_prefs_poss",
    "prefs_simp",
    "prefs_simp_ret",
    "prefs_avgjg",
    "prefs_pair",
];

/// A query: groups, each with one hidden level per document (so its sub-groups never
/// contradict each other) and sub-groups judging some of them; a run of distinct documents
/// with few distinct scores (ties).
fn query() -> impl Strategy<Value = Query> {
    let group = (
        proptest::collection::vec(0u8..4, 8),
        proptest::collection::vec(proptest::collection::btree_set(0u8..8, 1..5), 1..4),
    )
        .prop_map(|(levels, subs)| {
            subs.into_iter()
                .map(|docs| docs.into_iter().map(|d| (d, levels[d as usize])).collect())
                .collect::<Vec<Vec<(u8, u8)>>>()
        });
    (
        proptest::collection::vec(group, 1..4),
        proptest::collection::btree_map(0u8..12, 0u8..3, 1..8)
            .prop_map(|m| m.into_iter().collect::<Vec<_>>()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    #[test]
    fn prefs_per_query_match_a_naive_model(queries in proptest::collection::vec(query(), 1..4)) {
        let (mut prefs, mut results) = (String::new(), String::new());
        for (q, (groups, docs)) in queries.iter().enumerate() {
            for (g, subs) in groups.iter().enumerate() {
                for (s, sub) in subs.iter().enumerate() {
                    for (d, level) in sub {
                        prefs.push_str(&format!("q{q} u{g} s{s} d{d} {level}\n"));
                    }
                }
            }
            for (d, score) in docs {
                results.push_str(&format!("q{q} Q0 d{d} 0 {score} run\n"));
            }
        }
        let (code, out, err) = run(&["-q", "-R", "prefs", "-m", "all_prefs"], &prefs, &results);
        prop_assert_eq!(code, 0, "{}", err);
        let printed: BTreeMap<(&str, &str), f64> = out
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                Some(((f[0].trim_end(), f[1]), f[2].parse().ok()?))
            })
            .collect();
        let mut sums = [0.0; 5];
        for (q, query) in queries.iter().enumerate() {
            let qid = format!("q{q}");
            for (k, want) in naive(query).iter().enumerate() {
                let got = printed[&(NAMES[k], qid.as_str())];
                prop_assert!((got - want).abs() <= 0.00005 + 1e-12, "{} {}: {} vs naive {}", NAMES[k], qid, got, want);
                sums[k] += want;
            }
        }
        // The counts are summed over the queries, the ratios averaged.
        for (k, name) in NAMES.iter().enumerate() {
            let want = if k == 0 { sums[k] } else { sums[k] / queries.len() as f64 };
            let got = printed[&(*name, "all")];
            prop_assert!((got - want).abs() <= 0.00005 + 1e-12, "{} all: {} vs naive {}", name, got, want);
        }
    }
}
