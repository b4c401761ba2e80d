//! `rag-eval trec_eval`: trec_eval 10.0's quicktest, byte for byte, and its command line.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trec_eval")
}

/// Runs `rag-eval trec_eval ARGS` in the fixture folder (trec_eval's `test/` files), with
/// `stdin` as standard input: exit code, standard output, standard error.
fn trec_eval(args: &[&str], stdin: &[u8]) -> (i32, Vec<u8>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .arg("trec_eval")
        .args(args)
        .current_dir(fixtures())
        .env("RAG_EVAL_RUNS", "off")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts that the command's output is the expected file's bytes, naming the first line
/// that differs.
fn same_as(args: &[&str], expected: &str) {
    let (code, out, err) = trec_eval(args, b"");
    assert_eq!(code, 0, "{args:?}: {err}");
    let want = std::fs::read(fixtures().join(expected)).unwrap();
    if out != want {
        let (got, want) = (
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&want),
        );
        let diff = got
            .lines()
            .zip(want.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| format!("line {}: got {a:?}, want {b:?}", i + 1))
            .unwrap_or_else(|| {
                format!(
                    "{} lines, want {}",
                    got.lines().count(),
                    want.lines().count()
                )
            });
        panic!("{args:?} differs from {expected}: {diff}");
    }
}

// The commands of trec_eval's `make quicktest` that use the qrels format, in its order.

#[test]
fn quicktest_official_measures() {
    same_as(&["qrels.test", "results.test"], "out.test");
}

#[test]
fn quicktest_qrels_with_comments() {
    same_as(&["qrels.test.with-comments", "results.test"], "out.test");
}

#[test]
fn quicktest_all_trec() {
    same_as(
        &["-m", "all_trec", "qrels.test", "results.test"],
        "out.test.a",
    );
}

#[test]
fn quicktest_all_trec_per_query() {
    same_as(
        &["-m", "all_trec", "-q", "qrels.test", "results.test"],
        "out.test.aq",
    );
}

#[test]
fn quicktest_complete_with_missing_queries() {
    same_as(
        &["-m", "all_trec", "-q", "-c", "qrels.test", "results.trunc"],
        "out.test.aqc",
    );
}

#[test]
fn quicktest_complete_at_most_100() {
    same_as(
        &[
            "-m",
            "all_trec",
            "-q",
            "-c",
            "-M100",
            "qrels.test",
            "results.trunc",
        ],
        "out.test.aqcM",
    );
}

#[test]
fn quicktest_relevance_level_and_relstring() {
    same_as(
        &[
            "-m",
            "all_trec",
            "-mrelstring.20",
            "-q",
            "-l2",
            "qrels.rel_level",
            "results.test",
        ],
        "out.test.aql",
    );
}

#[test]
fn quicktest_measure_parameters() {
    same_as(
        &[
            "-q",
            "-miprec_at_recall..10,.20,.25,.75,.50",
            "-m",
            "P.5,7,3",
            "-m",
            "recall.20,2000",
            "-m",
            "Rprec_mult.5.0,0.2,0.35",
            "-mutility.2,-1,0,0",
            "-m",
            "11pt_avg..25,.5,.75",
            "-mndcg.1=3,2=9,4=4.5",
            "-mndcg_cut.10,20,23.4",
            "-msuccess.2,5,20",
            "qrels.test",
            "results.test",
        ],
        "out.test.meas_params",
    );
}

#[test]
fn quicktest_zscores() {
    same_as(
        &[
            "-q",
            "-m",
            "all_trec",
            "-Z",
            "zscores_file",
            "qrels.test",
            "results.test",
        ],
        "out.test.aqZ",
    );
}

#[test]
fn the_run_is_read_from_standard_input_with_a_dash() {
    let run = std::fs::read(fixtures().join("results.test")).unwrap();
    let (code, out, err) = trec_eval(&["-m", "all_trec", "-q", "qrels.test", "-"], &run);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, std::fs::read(fixtures().join("out.test.aq")).unwrap());
}

#[test]
fn options_may_follow_the_files_and_long_names_are_taken() {
    let want = std::fs::read(fixtures().join("out.test.aq")).unwrap();
    let (code, out, err) = trec_eval(
        &[
            "qrels.test",
            "results.test",
            "--measure=all_trec",
            "--query_eval_wanted",
        ],
        b"",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, want);
}

#[test]
fn a_judged_query_without_results_is_an_error_without_c() {
    let (code, _, err) = trec_eval(&["qrels.test", "results.trunc"], b"");
    assert_eq!(code, 4);
    assert_eq!(err, "trec_eval: result qid '302' not found in qrels\n");
}

#[test]
fn errors_exit_as_trec_eval_does() {
    let (code, out, err) = trec_eval(&["-m", "bogus", "qrels.test", "results.test"], b"");
    assert_eq!((code, out.len()), (1, 0));
    assert_eq!(err, "trec_eval: illegal measure 'bogus'\n");
    let (code, _, err) = trec_eval(&["qrels.test"], b"");
    assert_eq!(code, 1);
    assert!(err.starts_with("Usage: trec_eval"), "{err}");
    let (code, _, err) = trec_eval(&["-m", "P.0", "qrels.test", "results.test"], b"");
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "trec_eval: Negative cutoff detected\ntrec_eval: Cannot initialize measure 'P'\n"
    );
    let (code, _, err) = trec_eval(&["missing.qrels", "results.test"], b"");
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "trec_eval.get_qrels: Cannot read qrels file 'missing.qrels'\n\
         trec_eval: Quit in file 'missing.qrels'\n"
    );
    let (code, _, err) = trec_eval(&["-x", "qrels.test", "results.test"], b"");
    assert_eq!(code, 1);
    assert!(
        err.starts_with("trec_eval: invalid option -- 'x'\nUsage"),
        "{err}"
    );
}

#[test]
fn duplicate_documents_and_malformed_lines_are_refused() {
    let run = b"301 Q0 d1 1 0.5 r\n301 Q0 d1 2 0.4 r\n";
    let (code, out, err) = trec_eval(&["-q", "qrels.test", "-"], run);
    assert_eq!((code, out.len()), (4, 0));
    assert_eq!(
        err,
        "trec_eval.form_res_qrels: duplicate docs d1trec_eval: Can't calculate measure 'num_ret'\n"
    );
    let (code, _, err) = trec_eval(&["qrels.test", "-"], b"# a comment\n\n301 Q0 d1 1 0.5\n");
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "trec_eval.get_results: Malformed line 1\ntrec_eval: Quit in file '-'\n"
    );
}

#[test]
fn help_lists_every_all_trec_measure() {
    let (code, out, _) = trec_eval(&["-h"], b"");
    assert_eq!(code, 0);
    let help = String::from_utf8(out).unwrap();
    for name in [
        "num_q",
        "iprec_at_recall",
        "ndcg_cut",
        "rbp_resid",
        "num_nonrel_judged_ret",
    ] {
        assert!(
            help.contains(&format!("  {name}")),
            "{name} missing from {help}"
        );
    }
}

#[cfg(unix)]
#[test]
fn an_argument_that_is_not_utf8_is_refused_by_name() {
    use std::os::unix::ffi::OsStringExt as _;
    let out = Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .arg("trec_eval")
        .arg("qrels.test")
        .arg(std::ffi::OsString::from_vec(b"run\xff.test".to_vec()))
        .current_dir(fixtures())
        .env("RAG_EVAL_RUNS", "off")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("argument `run\u{fffd}.test` is not UTF-8"),
        "{err}"
    );
}
