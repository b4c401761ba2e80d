//! `rag-eval trec_eval -m all_trec` against trec_eval 10.0's C binary, side by side on the same
//! generated files: wall time and peak resident memory of each, as a child process, rounds
//! interleaved, after checking that both print the same bytes with `-q -m all_trec`.
//!
//! ```sh
//! TREC_EVAL=/path/to/trec_eval cargo bench --features trec --bench trec_eval -- [QUERIES RESULTS JUDGED [ROUNDS]]
//! ```
//!
//! Defaults: 2,000 queries × 1,000 results × 50 judgements, 3 rounds. Without `TREC_EVAL` only
//! ours is timed. trec_eval is built from <https://github.com/usnistgov/trec_eval> with `make`.
//! Figures and commands are in benches/README.md.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The child's side: runs trec_eval with the arguments after `child`, output to stdout.
fn child(args: &[String]) -> ! {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut err = std::io::stderr();
    let code = rag_eval::trec::trec_eval::run(args, &mut std::io::stdin(), &mut out, &mut err);
    let _ = out.flush();
    std::process::exit(code)
}

/// A small deterministic generator (SplitMix64): the same sizes give the same files.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Writes qrels (JUDGED lines per query, grades 0–3, one relevant at least) and a run grouped
/// by query (RESULTS lines, half the judged documents among them, three-decimal scores so that
/// ties are common), as benches/scripts/trec_files.py does.
fn generate(dir: &Path, queries: usize, results: usize, judged: usize) -> std::io::Result<()> {
    let mut rng = Rng(2024);
    let mut qrels = std::io::BufWriter::new(std::fs::File::create(dir.join("qrels.txt"))?);
    let mut run = std::io::BufWriter::new(std::fs::File::create(dir.join("run.txt"))?);
    let retrieved = judged / 2;
    for q in 0..queries {
        let qid = format!("q{q:05}");
        let docs: Vec<u64> = (0..judged + results - retrieved)
            .map(|_| rng.below(10_000_000))
            .collect();
        for (i, d) in docs[..judged].iter().enumerate() {
            let grade = [0, 0, 0, 0, 1, 1, 1, 2, 2, 3][rng.below(10) as usize];
            let grade = if i == 0 && grade == 0 { 1 } else { grade };
            writeln!(qrels, "{qid} 0 d{d}-{i} {grade}")?;
        }
        let mut scores: Vec<u64> = (0..results).map(|_| rng.below(1000)).collect();
        scores.sort_unstable_by(|a, b| b.cmp(a));
        // the judged documents retrieved are the last `retrieved` of the judged ones, named
        // as in the qrels; the others are fresh (the position keeps every name unique)
        for (rank, score) in scores.iter().enumerate() {
            let k = judged - retrieved + rank;
            writeln!(run, "{qid} Q0 d{}-{k} {} 0.{score:03} r", docs[k], rank + 1)?;
        }
    }
    qrels.flush()?;
    run.flush()
}

/// Runs a command to completion: its wall time and peak resident memory (kB).
#[cfg(unix)]
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4, which gives its resource usage"
)]
fn measure(command: &mut Command) -> (Duration, i64) {
    let start = Instant::now();
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the command starts");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our child's, not yet waited for; both pointers are valid.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert!(pid > 0 && status == 0, "the command failed ({status})");
    (start.elapsed(), usage.ru_maxrss)
}

#[cfg(not(unix))]
fn main() {
    eprintln!("this bench measures memory with wait4: it runs on Unix only");
}

#[cfg(unix)]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") {
        child(&args[1..]);
    }
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let (queries, results, judged) = match numbers[..] {
        [q, r, j, ..] => (q, r, j),
        _ => (2000, 1000, 50),
    };
    let rounds = numbers.get(3).copied().unwrap_or(3);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/trec-eval-bench")
        .join(format!("{queries}-{results}-{judged}"));
    std::fs::create_dir_all(&dir).unwrap();
    if !dir.join("run.txt").exists() {
        generate(&dir, queries, results, judged).unwrap();
    }
    let (qrels, run) = (dir.join("qrels.txt"), dir.join("run.txt"));
    let me = std::env::current_exe().unwrap();
    let ours = |extra: &[&str]| {
        let mut c = Command::new(&me);
        c.arg("child").args(extra).arg(&qrels).arg(&run);
        c
    };
    let c_binary = std::env::var_os("TREC_EVAL");
    if let Some(c) = &c_binary {
        let a = ours(&["-q", "-m", "all_trec"]).output().unwrap();
        let b = Command::new(c)
            .args(["-q", "-m", "all_trec"])
            .arg(&qrels)
            .arg(&run)
            .output()
            .unwrap();
        assert!(a.status.success() && b.status.success());
        assert!(a.stdout == b.stdout, "the outputs of -q -m all_trec differ");
        println!("same output with -q -m all_trec ({} bytes)", a.stdout.len());
    }
    println!("{queries} queries × {results} results × {judged} judged, -m all_trec:");
    for round in 1..=rounds {
        let (t, m) = measure(&mut ours(&["-m", "all_trec"]));
        println!(
            "round {round}: rag-eval trec_eval {:.3} s {m} kB",
            t.as_secs_f64()
        );
        if let Some(c) = &c_binary {
            let (t, m) = measure(
                Command::new(c)
                    .args(["-m", "all_trec"])
                    .arg(&qrels)
                    .arg(&run),
            );
            println!(
                "round {round}: trec_eval (C)      {:.3} s {m} kB",
                t.as_secs_f64()
            );
        }
    }
}
