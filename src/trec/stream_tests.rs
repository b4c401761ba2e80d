//! Scoring run files as streams, against reading them whole with `Run`.

use super::*;
use crate::error::Error;
use camino::{Utf8Path, Utf8PathBuf};
use proptest::prelude::*;

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> Utf8PathBuf {
    let path = Utf8Path::from_path(dir.path()).unwrap().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// `score_run_file` on `text` written to a file, and `score` on `Run::from_file` of it.
fn both(
    qrels: &Qrels,
    text: &[u8],
    measures: &[Measure],
) -> (Result<ScoredRun>, Result<RunResult>) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "run.txt", text);
    let streamed = score_run_file(qrels, &path, measures);
    let whole = Run::from_file(&path).map(|run| score(qrels, &run, measures));
    (streamed, whole)
}

fn same_error(a: &Error, b: &Error) -> bool {
    match (a, b) {
        (
            Error::Parse {
                path: p,
                line: l,
                message: m,
            },
            Error::Parse {
                path: q,
                line: k,
                message: n,
            },
        ) => p == q && l == k && m == n,
        (Error::NotUtf8 { path: p, offset: o }, Error::NotUtf8 { path: q, offset: f }) => {
            p == q && o == f
        }
        _ => false,
    }
}

use crate::error::Result;
use crate::metrics::RunResult;

/// A run of `queries` (query, [(doc, score)]) as lines, each query's lines together.
fn grouped_lines(queries: &[(u8, Vec<(u8, u8)>)]) -> Vec<String> {
    queries
        .iter()
        .flat_map(|(q, docs)| {
            docs.iter()
                .enumerate()
                .map(move |(i, (d, s))| format!("q{q} Q0 doc{d} {} 0.{s} t", i + 1))
        })
        .collect()
}

/// Docnos of every length around the eight bytes a key holds, the long ones sharing those.
const DOCNOS: [&str; 8] = [
    "d1",
    "d10",
    "clueweb0",
    "clueweb09",
    "clueweb09-en0000-00-00001",
    "clueweb09-en0000-00-00002",
    "clueweb09-en0000-00-000010",
    "clueweb1",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Docnos short and long, repeated or not, in lines listed by score or not: the stream
    /// ranks them, finds their judgements and refuses a repeat as reading the run whole does.
    #[test]
    fn docnos_are_judged_ranked_and_refused_as_reading_whole(
        queries in prop::collection::vec(
            prop::collection::vec((0..DOCNOS.len(), 0u8..5), 1..12),
            1..4,
        ),
        by_score in any::<bool>(),
        judged in prop::collection::vec((0u8..4, 0..DOCNOS.len(), 0i32..3), 0..20),
    ) {
        let mut qrels_text = String::new();
        let mut seen = std::collections::HashSet::new();
        for (q, d, g) in judged {
            if seen.insert((q, d)) {
                qrels_text += &format!("q{q} 0 {} {g}\n", DOCNOS[d]);
            }
        }
        let qrels = Qrels::parse(&qrels_text, "qrels").unwrap();
        let mut text = String::new();
        for (q, mut docs) in queries.into_iter().enumerate() {
            if by_score {
                docs.sort_by_key(|&(_, s)| std::cmp::Reverse(s));
            }
            for (rank, (d, s)) in docs.into_iter().enumerate() {
                text += &format!("q{q} Q0 {} {} 0.{s} t\n", DOCNOS[d], rank + 1);
            }
        }
        let (streamed, whole) = both(&qrels, text.as_bytes(), &Measure::defaults(&[1, 3, 10]));
        match (streamed, whole) {
            (Ok(streamed), Ok(whole)) => prop_assert_eq!(streamed.scores.to_result(), whole),
            (Err(a), Err(b)) => prop_assert!(same_error(&a, &b), "{a} / {b}"),
            (a, b) => prop_assert!(false, "{:?} / {:?}", a.map(|_| ()), b.map(|_| ())),
        }
    }
}

#[test]
fn grouped_and_ungrouped_files_score_alike_by_hand() {
    let qrels = Qrels::parse("q1 0 a 2\nq1 0 b 0\nq2 0 c 1\nq2 0 d 3\n", "qrels").unwrap();
    let grouped =
        "q2 Q0 x 1 0.9 t\nq2 Q0 d 2 0.5 t\nq2 Q0 c 3 0.5 t\nq1 Q0 a 1 0.1 t\nq9 Q0 a 1 1 t\n";
    let apart =
        "q2 Q0 x 1 0.9 t\nq1 Q0 a 1 0.1 t\nq2 Q0 d 2 0.5 t\nq9 Q0 a 1 1 t\nq2 Q0 c 3 0.5 t\n";
    let ms = [Measure::ReciprocalRank, Measure::Precision(2)];
    for text in [grouped, apart] {
        let (streamed, _) = both(&qrels, text.as_bytes(), &ms);
        let streamed = streamed.unwrap();
        // q1: a at rank 1 → 1, P@2 = 1/2; q2: x, d (tie with c, d ranks first), c → 1/2, 1/2
        let r = &streamed.scores.to_result();
        assert_eq!(r.queries, 2);
        assert_eq!(r.per_query[0].id, "q1");
        assert_eq!(r.per_query[0].metrics.get("mrr"), Some(1.0));
        assert_eq!(r.per_query[1].metrics.get("mrr"), Some(0.5));
        assert_eq!(r.per_query[1].metrics.get("precision@2"), Some(0.5));
        assert_eq!(r.metrics.get("mrr"), Some(0.75));
        let mut ids = streamed.query_ids.clone();
        ids.sort();
        assert_eq!(ids, ["q1", "q2", "q9"]);
    }
}

#[test]
fn errors_name_the_same_line_as_reading_whole() {
    let qrels = Qrels::parse("q1 0 a 1\nq2 0 b 1\n", "qrels").unwrap();
    let cases: [&[u8]; 8] = [
        // a docno twice in one query, grouped and apart, and three times
        b"q1 Q0 a 1 1 t\nq1 Q0 b 2 1 t\nq1 Q0 a 3 1 t\nq2 Q0 b 1 1 t\n",
        b"q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\n\nq1 Q0 a 3 1 t\n",
        b"q3 Q0 z 1 1 t\nq3 Q0 z 2 1 t\n",
        // bad fields and scores, after blank lines
        b"q1 Q0 a 1 1 t\n\n  \nq1 Q0 b 2 t\n",
        b"q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\nq1 Q0 c 1 NaN t\n",
        b"q1 Q0 a 1 1 t\r\nq1 Q0 c 1 high t\r\n",
        // not UTF-8 on the second line, grouped and apart
        b"q1 Q0 a 1 1 t\nq1 Q0 \xff 2 1 t\n",
        b"q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\nq1 Q0 c\xc3 2 1 t\n",
    ];
    for text in cases {
        let (streamed, whole) = both(&qrels, text, &[]);
        let (s, w) = (streamed.unwrap_err(), whole.unwrap_err());
        assert!(
            same_error(&s, &w),
            "{}: {s} vs {w}",
            String::from_utf8_lossy(text)
        );
    }
    let (streamed, _) = both(&qrels, cases[0], &[]);
    assert!(streamed
        .unwrap_err()
        .to_string()
        .contains("document `a` is retrieved twice for query `q1` (first on line 1)"));
    let missing = score_run_file(&qrels, Utf8Path::new("/nonexistent/run.txt"), &[]);
    assert!(missing
        .unwrap_err()
        .to_string()
        .contains("/nonexistent/run.txt"));
}

#[test]
fn byte_order_marks_line_endings_and_long_lines() {
    let qrels = Qrels::parse("q1 0 a 1\n", "qrels").unwrap();
    // a docno longer than the read buffer, a BOM, CRLF and no final newline
    let long = "x".repeat(3 << 20);
    let text = format!("\u{feff}q1 Q0 {long} 1 2 t\r\n\r\nq1 Q0 a 2 1 t");
    let (streamed, whole) = both(&qrels, text.as_bytes(), &[Measure::ReciprocalRank]);
    let streamed = streamed.unwrap();
    assert_eq!(streamed.scores.to_result(), whole.unwrap());
    assert_eq!(streamed.query_ids, ["q1"]);
    assert_eq!(streamed.scores.metrics().get("mrr"), Some(0.5));
    let (empty, whole) = both(&qrels, b"", &[]);
    assert_eq!(empty.unwrap().scores.to_result(), whole.unwrap());
}

#[test]
fn newlines_are_found_in_every_position() {
    for len in 0..40 {
        for at in 0..len {
            let mut bytes = vec![b'a'; len];
            bytes[at] = b'\n';
            if at + 3 < len {
                bytes[at + 3] = b'\n';
            }
            assert_eq!(blocks::find_newline(&bytes), Some(at), "{len} {at}");
        }
        let mut bytes = vec![0x8a_u8; len]; // high bytes that differ from '\n' by one bit
        assert_eq!(blocks::find_newline(&bytes), None);
        bytes.push(b'\n');
        assert_eq!(blocks::find_newline(&bytes), Some(len));
    }
}

/// `score_run_file` with `threads` threads and blocks of `block` bytes on `text` written to a
/// file, and `score` on `Run::from_file` of it.
fn blocks(
    qrels: &Qrels,
    text: &[u8],
    measures: &[Measure],
    threads: usize,
    block: usize,
) -> (Result<ScoredRun>, Result<RunResult>) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "run.txt", text);
    let streamed = stream::score_run_file_with(qrels, &path, measures, threads, block);
    let whole = Run::from_file(&path).map(|run| score(qrels, &run, measures));
    (streamed, whole)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever the blocks and threads, a run scores as `Run` read whole scores it (ties,
    /// queries not judged, judged queries not run), grouped or shuffled, its JSON is the
    /// `RunResult`'s byte for byte, its query ids are listed in order of first appearance,
    /// and a bad line or a docno listed twice anywhere gives the same error, on the same line.
    #[test]
    fn blocks_and_threads_score_as_reading_whole(
        queries in prop::collection::vec(
            (0u8..12, prop::collection::vec((0u8..30, 0u8..4), 1..15)),
            0..10,
        ),
        judged in prop::collection::vec((0u8..14, 0u8..30, -1i32..4), 1..80),
        shuffle in prop::collection::vec(any::<u32>(), 0..200),
        threads in 1usize..4,
        // Small blocks, or one as large as the default: the whole file in one.
        block in prop_oneof![1usize..200, Just(super::blocks::BLOCK_BYTES)],
        fault in prop::option::of((any::<prop::sample::Index>(), 0u8..4)),
    ) {
        let mut queries = queries;
        queries.sort_by_key(|(q, _)| *q);
        queries.dedup_by_key(|(q, _)| *q);
        for (_, docs) in &mut queries {
            docs.sort_by_key(|(d, _)| *d);
            docs.dedup_by_key(|(d, _)| *d);
        }
        queries.reverse(); // ids not in byte order in the file
        let mut qrels_text = String::new();
        let mut seen = std::collections::HashSet::new();
        for (q, d, g) in judged {
            if seen.insert((q, d)) {
                qrels_text += &format!("q{q} 0 doc{d} {g}\n");
            }
        }
        let qrels = Qrels::parse(&qrels_text, "qrels").unwrap();
        let measures = Measure::defaults(&[1, 3, 10]);
        let mut lines = grouped_lines(&queries);
        for round in 0..2 {
            if round == 1 {
                for (i, r) in shuffle.iter().enumerate() {
                    let n = lines.len();
                    if n > 0 {
                        lines.swap(i % n, *r as usize % n);
                    }
                }
            }
            let mut lines = lines.clone();
            if let (Some((at, kind)), false) = (&fault, lines.is_empty()) {
                let i = at.index(lines.len());
                match kind {
                    0 => lines[i] = "q1 Q0 short t".to_owned(),
                    1 => lines[i] = lines[i].replace(" t", "").replace(" 0.", " x0."),
                    // the same docno again, next to it or at the end
                    2 => lines.insert(i + 1, lines[i].clone()),
                    _ => lines.push(lines[i].clone()),
                }
            }
            let text = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
            let (streamed, whole) = blocks(&qrels, text.as_bytes(), &measures, threads, block);
            match (streamed, whole) {
                (Ok(s), Ok(w)) => {
                    prop_assert_eq!(&s.scores.to_result(), &w);
                    prop_assert_eq!(
                        serde_json::to_string(&s.scores).unwrap(),
                        serde_json::to_string(&w).unwrap()
                    );
                    let mut firsts: Vec<String> = Vec::new();
                    for l in &lines {
                        let q = l.split(' ').next().unwrap().to_owned();
                        if !firsts.contains(&q) {
                            firsts.push(q);
                        }
                    }
                    prop_assert_eq!(s.query_ids, firsts);
                }
                (Err(s), Err(w)) => prop_assert!(same_error(&s, &w), "{} vs {}", s, w),
                (s, w) => prop_assert!(false, "{:?} vs {:?}", s.map(|_| ()), w.map(|_| ())),
            }
        }
    }
}

#[test]
fn errors_name_the_same_line_in_any_blocks() {
    let qrels = Qrels::parse("q1 0 a 1\nq2 0 b 1\n", "qrels").unwrap();
    let cases: [&[u8]; 6] = [
        // a docno twice in the last query of a block, then a bad line: the bad line first
        b"q1 Q0 a 1 1 t\nq1 Q0 a 2 1 t\n\n\nq2 Q0 b 1 x t\n",
        b"q1 Q0 a 1 1 t\nq1 Q0 a 2 1 t\n\n\nq2 Q0 b 1 1 t\n",
        b"q1 Q0 a 1 1 t\nq1 Q0 a 2 1 t\n",
        // a docno twice, then a query seen before
        b"q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\nq2 Q0 b 1 1 t\nq1 Q0 c 1 1 t\n",
        // not UTF-8 deep in the file
        b"q1 Q0 a 1 1 t\nq1 Q0 b 1 1 t\nq2 Q0 b 1 1 t\nq2 Q0 \xff 1 1 t\n",
        // a bad line in a query seen before
        b"q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\n\nq1 Q0 c 1 1\n",
    ];
    for text in cases {
        for block in [1, 5, 14, 20, 29, 40, 1000] {
            for threads in [1, 3] {
                let (streamed, whole) = blocks(&qrels, text, &[], threads, block);
                let (streamed, whole) = (streamed.unwrap_err(), whole.unwrap_err());
                assert!(
                    same_error(&streamed, &whole),
                    "{} in blocks of {block}: {streamed} vs {whole}",
                    String::from_utf8_lossy(text)
                );
            }
        }
    }
}

#[test]
fn json_of_the_table_is_the_results() {
    let qrels = Qrels::parse("q1 0 a 2\nq1 0 b 0\nq2 0 c 1\nq3 0 x 1\n", "qrels").unwrap();
    let text = "q2 Q0 c 1 0.5 t\nq10 Q0 z 1 1 t\nq1 Q0 b 1 0.3 t\nq1 Q0 a 2 0.3 t\n";
    for measures in [Vec::new(), Measure::parse("ndcg", &[]).unwrap()] {
        let (streamed, whole) = both(&qrels, text.as_bytes(), &measures);
        let (scores, whole) = (streamed.unwrap().scores, whole.unwrap());
        assert_eq!(
            serde_json::to_string(&scores).unwrap(),
            serde_json::to_string(&whole).unwrap()
        );
        assert_eq!(scores.headline(), whole.headline());
        assert_eq!(scores.headline(), "trec, 2 queries");
        assert_eq!(scores.query_ids().collect::<Vec<_>>(), ["q1", "q2"]);
        assert_eq!(scores.len(), 2);
    }
    let (empty, whole) = both(&qrels, b"q9 Q0 a 1 1 t\n", &[]);
    let empty = empty.unwrap().scores;
    assert!(empty.is_empty());
    assert_eq!(
        serde_json::to_string(&empty).unwrap(),
        serde_json::to_string(&whole.unwrap()).unwrap()
    );
}

/// `write_json` on any number of threads, as `serde_json` writes the table.
fn written(scores: &RunScores, threads: usize) -> Vec<u8> {
    let mut out = Vec::new();
    scores.write_json(&mut out, threads).unwrap();
    out
}

#[test]
fn json_written_on_threads_is_the_serialised_table() {
    let mut qrels_text = String::new();
    let mut run_text = String::new();
    // More queries than are formatted together, ids with characters JSON escapes.
    for q in 0..5000 {
        qrels_text += &format!("q\"{q} 0 d{} 1\n", q % 7);
        for d in 0..5 {
            run_text += &format!("q\"{q} Q0 d{d} {} 0.{} t\n", d + 1, (q * 7 + d) % 10);
        }
    }
    let qrels = Qrels::parse(&qrels_text, "qrels").unwrap();
    let (streamed, _) = both(&qrels, run_text.as_bytes(), &[]);
    let scores = streamed.unwrap().scores;
    let serialised = serde_json::to_vec(&scores).unwrap();
    for threads in [1, 2, 5] {
        assert!(written(&scores, threads) == serialised, "{threads} threads");
    }
    let (empty, _) = both(&qrels, b"q9 Q0 a 1 1 t\n", &[]);
    let empty = empty.unwrap().scores;
    assert_eq!(written(&empty, 2), serde_json::to_vec(&empty).unwrap());
}

/// A writer that takes `room` bytes, then fails.
struct Full {
    room: usize,
}

impl std::io::Write for Full {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.room == 0 {
            return Err(std::io::Error::other("disk full"));
        }
        let n = buf.len().min(self.room);
        self.room -= n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn json_written_to_a_failing_writer_is_its_error() {
    let mut qrels_text = String::new();
    let mut run_text = String::new();
    for q in 0..20_000 {
        qrels_text += &format!("q{q} 0 d1 1\n");
        run_text += &format!("q{q} Q0 d1 1 1 t\n");
    }
    let qrels = Qrels::parse(&qrels_text, "qrels").unwrap();
    let (streamed, _) = both(&qrels, run_text.as_bytes(), &[]);
    let scores = streamed.unwrap().scores;
    // Fails in the head, and among the rows while workers are still formatting.
    for room in [10, 200_000] {
        let err = scores.write_json(&mut Full { room }, 2).unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }
}

#[test]
fn query_ids_of_every_length_in_an_ungrouped_run() {
    // ids around the 15 bytes a short key holds, one a prefix of another, and a long one
    let ids = [
        "q".repeat(14),
        "q".repeat(15),
        "q".repeat(16),
        format!("{}x", "q".repeat(15)),
        "query-with-a-rather-long-id".to_owned(),
        String::new() + "q",
    ];
    let mut qrels_text = String::new();
    let mut lines = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        qrels_text += &format!("{id} 0 d{i} 1\n");
        for d in 0..4 {
            lines.push(format!("{id} Q0 d{d} 1 0.{d} t"));
        }
    }
    let qrels = Qrels::parse(&qrels_text, "qrels").unwrap();
    // every query's lines apart: one line of each in turn
    let mut apart = Vec::new();
    for d in 0..4 {
        for q in 0..ids.len() {
            apart.push(lines[q * 4 + d].clone());
        }
    }
    let text = apart.iter().map(|l| format!("{l}\n")).collect::<String>();
    for block in [1, 30, 1 << 20] {
        let (streamed, whole) = blocks(&qrels, text.as_bytes(), &[], 2, block);
        let streamed = streamed.unwrap();
        assert_eq!(streamed.scores.to_result(), whole.unwrap());
        assert_eq!(streamed.query_ids, ids);
        assert_eq!(streamed.scores.len(), ids.len());
    }
}
