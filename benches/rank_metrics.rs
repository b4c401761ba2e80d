//! Rank-metric speed: P@10, R@10, MRR, nDCG@10 and MAP over 100,000 queries × 100 results,
//! `rag_eval::trec::evaluate_columns` against ranx and pytrec_eval, all measured in the same run.
//!
//! `cargo bench --bench rank_metrics` (optional: `-- --queries N --reps N --rounds N
//! --peer-reps N`, `--no-ranx`, and `--no-peers` to time our side only). Ours and pytrec_eval
//! are timed in alternation, one call each per round, so both see the same load. Under `cargo test --benches` (no `--bench` flag) it
//! scores 500 queries once, unmeasured, and checks every figure against the grades read back
//! through `Qrels::grade` and `Run::ranking`.
//! The data is synthetic and seeded; it is written as TREC qrels and run files to a temporary
//! folder, which both sides read. The Python side runs `benches/scripts/rank_peers.py` with
//! `benches/scripts/.venv`, and is skipped with a notice when that venv is missing. Every
//! side's means are printed and compared: ours must equal pytrec_eval's to 1e-9.

use camino::Utf8Path;
use rag_eval::metrics::{
    average_precision, ideal_grades, ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank,
};
use rag_eval::trec::{evaluate, evaluate_columns, Measure, PerQuery, Qrels, Run};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const RESULTS: usize = 100;
const JUDGED: usize = 20;
const JUDGED_RETRIEVED: usize = 8;
const SEED: u64 = 0x5eed_2024;

/// SplitMix64: tiny, seeded, good enough to make benchmark data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Qrels and run text: every query has `JUDGED` judged documents (grades 0..3, at least one
/// relevant), `JUDGED_RETRIEVED` of which appear among its `RESULTS` retrieved; scores have
/// three decimals, so ties are frequent.
fn synthetic(queries: usize) -> (String, String) {
    let mut rng = Rng(SEED);
    let mut qrels = String::with_capacity(queries * JUDGED * 24);
    let mut run = String::with_capacity(queries * RESULTS * 40);
    let mut seen = HashSet::new();
    for q in 0..queries {
        seen.clear();
        let mut judged = Vec::with_capacity(JUDGED);
        while judged.len() < JUDGED {
            let d = rng.below(5_000_000);
            if seen.insert(d) {
                let grade = match rng.below(20) {
                    0..=9 => 0,
                    10..=14 => 1,
                    15..=17 => 2,
                    _ => 3,
                };
                judged.push((d, grade));
            }
        }
        if judged.iter().all(|&(_, g)| g == 0) {
            judged[0].1 = 1;
        }
        for &(d, g) in &judged {
            writeln!(qrels, "q{q:06} 0 d{d} {g}").unwrap();
        }
        let mut docs: Vec<u64> = judged[..JUDGED_RETRIEVED].iter().map(|&(d, _)| d).collect();
        while docs.len() < RESULTS {
            let d = rng.below(5_000_000);
            if seen.insert(d) {
                docs.push(d);
            }
        }
        for (i, d) in docs.iter().enumerate() {
            let score = rng.below(1000) as f64 / 1000.0;
            writeln!(run, "q{q:06} Q0 d{d} {} {score:.3} synthetic", i + 1).unwrap();
        }
    }
    (qrels, run)
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

/// Median and fastest wall time of `reps` runs of `f`, after one warm-up run.
fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> (Duration, Duration) {
    black_box(f());
    let runs: Vec<Duration> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .collect();
    let fastest = runs.iter().copied().min().unwrap_or_default();
    (median(runs), fastest)
}

fn median_f(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Times `ours` and pytrec_eval's evaluation in alternation, `rounds` times: pytrec_eval runs in
/// `rank_peers.py --serve`, which reads the files and builds its evaluator once, then evaluates
/// on each `go`. Returns both sides' times and pytrec_eval's means.
fn interleaved(
    python: &Path,
    script: &Path,
    files: [&str; 2],
    rounds: usize,
    mut ours: impl FnMut(),
) -> (Vec<Duration>, Vec<Duration>, serde_json::Value) {
    use std::io::{BufRead, BufReader, Write};
    let mut child = Command::new(python)
        .arg(script)
        .args(files)
        .arg("--serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start rank_peers.py --serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = || {
        lines
            .next()
            .expect("a line from rank_peers.py")
            .expect("read")
    };
    assert_eq!(next(), "ready");
    ours(); // warm-up
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        ours();
        mine.push(t.elapsed());
        writeln!(stdin, "go").expect("write");
        stdin.flush().expect("flush");
        let s: f64 = next().parse().expect("seconds");
        theirs.push(Duration::from_secs_f64(s));
    }
    drop(stdin);
    let last = next();
    child.wait().expect("rank_peers.py");
    let out: serde_json::Value = serde_json::from_str(&last).expect("peer JSON");
    (mine, theirs, out["pytrec_eval"]["means"].clone())
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn fmt_s(s: f64) -> String {
    if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// Recomputes every figure from the grades of each ranking looked up one by one, and compares.
fn check(qrels: &Qrels, run: &Run, per_query: &PerQuery, qrels_text: &str) {
    let mut judged: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for line in qrels_text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        judged.entry(f[0]).or_default().push(f[3].parse().unwrap());
    }
    for (qid, figures) in per_query {
        let grades: Vec<i32> = run
            .ranking(qid)
            .unwrap()
            .map(|(doc, _)| qrels.grade(qid, doc).unwrap_or(-1))
            .collect();
        let all = &judged[qid.as_str()];
        let relevant = all.iter().filter(|&&g| g >= 1).count();
        let ideal = ideal_grades(all.iter().copied());
        let want = [
            ("precision@10", precision_at_k(&grades, 10)),
            ("recall@10", recall_at_k(&grades, 10, relevant)),
            ("ndcg@10", ndcg_at_k(&grades, &ideal, 10)),
            ("mrr", reciprocal_rank(&grades)),
            ("map", average_precision(&grades, relevant)),
        ];
        for (name, v) in want {
            assert_eq!(figures[name], v, "{qid} {name}");
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench");
    let queries = arg(&args, "--queries", if bench { 100_000 } else { 500 });
    let reps = arg(&args, "--reps", 7);
    let peer_reps = arg(&args, "--peer-reps", 3);
    let rounds = arg(&args, "--rounds", 7);

    let (qrels_text, run_text) = synthetic(queries);
    let dir = tempfile::tempdir().expect("temporary folder");
    let root = Utf8Path::from_path(dir.path()).expect("UTF-8 temporary path");
    let (qrels_path, run_path) = (root.join("qrels.txt"), root.join("run.txt"));
    std::fs::write(&qrels_path, &qrels_text).expect("write qrels");
    std::fs::write(&run_path, &run_text).expect("write run");
    println!(
        "{queries} queries × {RESULTS} results ({:.0} MB run, {:.0} MB qrels), \
         P@10 R@10 MRR nDCG@10 MAP",
        run_text.len() as f64 / 1e6,
        qrels_text.len() as f64 / 1e6
    );
    drop(run_text);

    let mut measures = Measure::parse("P.10", &[]).unwrap();
    measures.extend(Measure::parse("recall.10", &[]).unwrap());
    measures.extend(Measure::parse("ndcg_cut.10", &[]).unwrap());
    measures.push(Measure::ReciprocalRank);
    measures.push(Measure::AveragePrecision);

    if !bench {
        let (qrels, run) = (
            Qrels::from_file(&qrels_path).expect("qrels"),
            Run::from_file(&run_path).expect("run"),
        );
        let per_query = evaluate(&qrels, &run, &measures);
        assert_eq!(per_query.len(), queries);
        check(&qrels, &run, &per_query, &qrels_text);
        println!("rank_metrics: smoke run checked (pass --bench to measure)");
        return;
    }
    drop(qrels_text);
    let load = || {
        (
            Qrels::from_file(&qrels_path).expect("qrels"),
            Run::from_file(&run_path).expect("run"),
        )
    };
    let (load_time, _) = time(reps.min(3), load);
    let (qrels, run) = load();
    let (eval_time, eval_fastest) = time(reps, || evaluate_columns(&qrels, &run, &measures));
    let (maps_time, _) = time(reps.min(3), || evaluate(&qrels, &run, &measures));
    let scores = evaluate_columns(&qrels, &run, &measures);
    assert_eq!(scores.to_per_query(), evaluate(&qrels, &run, &measures));
    let ours: BTreeMap<String, f64> = scores.means().into_iter().collect();
    let ours_s = eval_time.as_secs_f64();
    println!(
        "ours: evaluate_columns {} (median of {reps}, fastest {}); evaluate (maps) {} \
         (median of {}); reading both files {} (median of {})",
        fmt_s(ours_s),
        fmt_s(eval_fastest.as_secs_f64()),
        fmt_s(maps_time.as_secs_f64()),
        reps.min(3),
        fmt_s(load_time.as_secs_f64()),
        reps.min(3)
    );

    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = manifest.join("benches/scripts/.venv/bin/python");
    if args.iter().any(|a| a == "--no-peers") {
        return;
    }
    if !python.exists() {
        println!(
            "skipping the Python peers: {} is missing (run benches/scripts/setup.sh)",
            python.display()
        );
        return;
    }
    let script = manifest.join("benches/scripts/rank_peers.py");
    let (ours_rounds, pytrec_rounds, pytrec_means) = interleaved(
        &python,
        &script,
        [qrels_path.as_str(), run_path.as_str()],
        rounds,
        || {
            black_box(evaluate_columns(&qrels, &run, &measures));
        },
    );
    let mut peers = serde_json::json!({ "pytrec_eval": { "means": pytrec_means } });
    if !args.iter().any(|a| a == "--no-ranx") {
        let out = Command::new(&python)
            .arg(&script)
            .args([qrels_path.as_str(), run_path.as_str(), "--only", "ranx"])
            .args(["--reps", &peer_reps.to_string()])
            .output()
            .expect("run rank_peers.py");
        let stdout = String::from_utf8_lossy(&out.stdout);
        match serde_json::from_str::<serde_json::Value>(stdout.lines().last().unwrap_or_default()) {
            Ok(v) if out.status.success() => peers["ranx"] = v["ranx"].clone(),
            _ => println!(
                "rank_peers.py --only ranx failed ({}):\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    let ratios: Vec<f64> = ours_rounds
        .iter()
        .zip(&pytrec_rounds)
        .map(|(o, p)| p.as_secs_f64() / o.as_secs_f64())
        .collect();
    let ours_s = median(ours_rounds).as_secs_f64();
    let pytrec_s = median(pytrec_rounds).as_secs_f64();
    println!();
    println!("| side | median | ours is faster by |");
    println!("|---|---|---|");
    println!(
        "| ours, `trec::evaluate_columns` (files already read), {rounds} rounds | {} | 1× |",
        fmt_s(ours_s)
    );
    println!(
        "| pytrec_eval `RelevanceEvaluator.evaluate`, the same {rounds} rounds | {} | {:.1}× |",
        fmt_s(pytrec_s),
        pytrec_s / ours_s
    );
    println!(
        "| ours, `trec::evaluate` (per-query maps) | {} | — |",
        fmt_s(maps_time.as_secs_f64())
    );
    println!(
        "| ours, reading both files + `evaluate_columns` | {} | — |",
        fmt_s(ours_s + load_time.as_secs_f64())
    );
    if let Some(s) = peers["ranx"]["median_s"].as_f64() {
        println!(
            "| ranx `evaluate` (after its numba compilation), median of {} | {} | {:.1}× |",
            peers["ranx"]["reps"],
            fmt_s(s),
            s / ours_s
        );
        println!(
            "ranx: first call (numba compilation) {}; building its Qrels/Run {}",
            fmt_s(peers["ranx"]["first_call_s"].as_f64().unwrap_or(f64::NAN)),
            fmt_s(peers["ranx"]["build_s"].as_f64().unwrap_or(f64::NAN))
        );
    }
    println!(
        "pytrec_eval / ours per round: {}; median {:.1}×",
        ratios
            .iter()
            .map(|r| format!("{r:.1}×"))
            .collect::<Vec<_>>()
            .join(" "),
        median_f(ratios.clone())
    );

    println!();
    let names: Vec<String> = measures.iter().map(Measure::report_name).collect();
    let mut worst: BTreeMap<&str, f64> = BTreeMap::new();
    for name in &names {
        let o = ours[name];
        let mut line = format!("{name:>13}: ours {o:.12}");
        for peer in ["pytrec_eval", "ranx"] {
            let p = peers[peer]["means"][name].as_f64().unwrap_or(f64::NAN);
            if p.is_nan() {
                continue;
            }
            let e = worst.entry(peer).or_insert(0.0);
            *e = e.max((o - p).abs());
            write!(line, "  {peer} {p:.12}").unwrap();
        }
        println!("{line}");
    }
    let pytrec = worst["pytrec_eval"];
    println!(
        "largest difference of a mean: pytrec_eval {pytrec:.1e}, ranx {:.1e}",
        worst.get("ranx").copied().unwrap_or(f64::NAN)
    );
    assert!(pytrec <= 1e-9, "means differ from pytrec_eval by {pytrec}");
}
