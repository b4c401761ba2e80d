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

// The 15 commands of trec_eval's `make quicktest`, in its order.

#[test]
fn quicktest_official_measures() {
    same_as(&["qrels.test", "results.test"], "out.test");
}

#[test]
fn quicktest_qrels_with_comments() {
    same_as(&["qrels.test.with-comments", "results.test"], "out.test");
}

#[test]
fn quicktest_docnos_and_qids_with_hashes() {
    same_as(
        &["qrels.comment.test", "results.comment.test"],
        "out.comment.test",
    );
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
fn quicktest_preferences() {
    same_as(
        &[
            "-m",
            "all_prefs",
            "-q",
            "-R",
            "prefs",
            "prefs.test",
            "prefs.results.test",
        ],
        "out.test.prefs",
    );
}

#[test]
fn quicktest_preferences_with_comments() {
    same_as(
        &[
            "-m",
            "all_prefs",
            "-q",
            "-R",
            "prefs",
            "prefs.comment.test",
            "prefs.results.test",
        ],
        "out.test.prefs",
    );
}

#[test]
fn quicktest_qrels_as_preferences() {
    same_as(
        &[
            "-m",
            "all_prefs",
            "-q",
            "-R",
            "qrels_prefs",
            "qrels.test",
            "results.test",
        ],
        "out.test.qrels_prefs",
    );
}

#[test]
fn quicktest_judgement_groups() {
    same_as(
        &[
            "-m",
            "qrels_jg",
            "-q",
            "-R",
            "qrels_jg",
            "qrels.123",
            "results.test",
        ],
        "out.test.qrels_jg",
    );
}

#[test]
fn quicktest_judgement_groups_with_comments() {
    same_as(
        &[
            "-m",
            "qrels_jg",
            "-q",
            "-R",
            "qrels_jg",
            "qrels.comments.123",
            "results.test",
        ],
        "out.test.qrels_jg",
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

/// Writes `text` into a fresh folder as `name` and returns its path.
fn temp_file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_measure_given_judgements_of_another_format_fails_as_trec_eval_does() {
    let (code, out, err) = trec_eval(
        &[
            "-R",
            "prefs",
            "-m",
            "map",
            "prefs.test",
            "prefs.results.test",
        ],
        b"",
    );
    assert_eq!((code, out.len()), (4, 0));
    assert_eq!(
        err,
        "trec_eval.form_res_qrels: rel_info format not qrels or results format not \
         trec_results\ntrec_eval: Can't calculate measure 'map'\n"
    );
    let (code, _, err) = trec_eval(&["-m", "prefs_simp", "qrels.test", "results.test"], b"");
    assert_eq!(code, 4);
    assert_eq!(
        err,
        "trec_eval.form_prefs_info: prefs_info format not (prefs or qrels_prefs) or results \
         format not trec_results\ntrec_eval: Can't calculate measure 'prefs_simp'\n"
    );
    let (code, _, err) = trec_eval(
        &[
            "-R",
            "qrels_prefs",
            "-m",
            "P_avgjg",
            "qrels.test",
            "results.test",
        ],
        b"",
    );
    assert_eq!(code, 4);
    assert_eq!(
        err,
        "trec_eval: rel_info format not qrels_jg or results format not trec_results\n\
         trec_eval: Can't calculate measure 'P_avgjg'\n"
    );
}

#[test]
fn preference_files_are_read_and_refused_as_trec_eval_does() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = trec_eval(&["-R", "prefs", "missing.prefs", "results.test"], b"");
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "trec_eval.get_prefs: Cannot read prefs file 'missing.prefs'\n\
         trec_eval: Quit in file 'missing.prefs'\n"
    );
    let prefs = temp_file(&dir, "prefs", "# c\nq1 u1 s1 d1 2\n# c\nq1 u1 s1 d2\n");
    let (code, _, err) = trec_eval(&["-R", "prefs", &prefs, "results.test"], b"");
    assert_eq!(code, 2);
    assert_eq!(
        err,
        format!("trec_eval.get_prefs: Malformed line 2\ntrec_eval: Quit in file '{prefs}'\n")
    );
    let (code, _, err) = trec_eval(&["-R", "qrels_prefs", &prefs, "results.test"], b"");
    assert_eq!(code, 2);
    assert!(
        err.starts_with("trec_eval.get_qrels_prefs: Malformed line 1\n"),
        "{err}"
    );
    // A document judged twice by one group is refused when read.
    let groups = temp_file(&dir, "jg", "q1 a d1 1\nq1 b d1 0\nq1 a d1 0\n");
    let (code, _, err) = trec_eval(&["-R", "qrels_jg", "-m", "qrels_jg", &groups, "-"], b"");
    assert_eq!(code, 2);
    assert_eq!(
        err,
        format!("trec_eval.get_qrels: duplicate docs d1\ntrec_eval: Quit in file '{groups}'\n")
    );
    // One sub-group gives d1 two levels; sub-groups that contradict each other.
    let twice = temp_file(
        &dir,
        "twice",
        "q1 u1 s1 d1 2\nq1 u1 s1 d1 1\nq1 u1 s1 d2 0\n",
    );
    let run = b"q1 Q0 d2 1 0.9 r\nq1 Q0 d1 2 0.8 r\n";
    let (code, _, err) = trec_eval(&["-R", "prefs", "-m", "prefs", &twice, "-"], run);
    assert_eq!(code, 4);
    assert_eq!(
        err,
        "trec_eval.form_prefs_counts: Internal docid 1 occurs with different rel_level in same \
         jsg\ntrec_eval: Can't calculate measure 'prefs_num_prefs_poss'\n"
    );
    let conflict = temp_file(
        &dir,
        "conflict",
        "q1 u1 s1 d1 2\nq1 u1 s1 d2 1\nq1 u1 s2 d2 2\nq1 u1 s2 d1 1\n",
    );
    let (code, _, err) = trec_eval(&["-R", "prefs", "-m", "prefs_simp", &conflict, "-"], run);
    assert_eq!(code, 4);
    assert_eq!(
        err,
        "trec_eval.form_prefs_counts: Pref inconsistency found\n      internal rank 0 and \
         internal rank 1 are conflicted\ntrec_eval: Can't calculate measure 'prefs_simp'\n"
    );
}

/// Figures of small cases, checked by hand and against trec_eval 10.0.
#[test]
fn preference_measures_of_a_small_case() {
    let dir = tempfile::tempdir().unwrap();
    // One group of two sub-groups: d1 > d2 and d2 > d3, so d1 > d3 as well; a second group
    // of one sub-group: d3 > d1 (a conflict across groups) and d3 > d4.
    let prefs = temp_file(
        &dir,
        "prefs",
        "q1 u1 s1 d1 2\nq1 u1 s1 d2 1\nq1 u1 s2 d2 2\nq1 u1 s2 d3 1\n\
         q1 u2 s1 d3 1\nq1 u2 s1 d1 0\nq1 u2 s1 d4 0\n",
    );
    // Ranked d3, d1, d9 (not judged); d2 and d4 are not retrieved.
    let run = b"q1 Q0 d1 1 0.5 r\nq1 Q0 d3 2 0.9 r\nq1 Q0 d9 3 0.1 r\n";
    let (code, out, err) = trec_eval(&["-q", "-R", "prefs", "-m", "all_prefs", &prefs, "-"], run);
    assert_eq!(code, 0, "{err}");
    let out = String::from_utf8(out).unwrap();
    let value = |name: &str| -> String {
        out.lines()
            .find(|l| l.starts_with(&format!("{name:<22}\tq1\t")))
            .and_then(|l| l.split('\t').nth(2))
            .unwrap_or_else(|| panic!("{name} missing from {out}"))
            .to_owned()
    };
    // Preferences: u1 d1>d2, d1>d3, d2>d3; u2 d3>d1, d3>d4: five.
    assert_eq!(value("prefs_num_prefs_poss"), "5");
    // Fulfilled: d1>d2 (implied: d1 retrieved, d2 not), d3>d1 and d3>d4 (implied).
    assert_eq!(value("prefs_num_prefs_ful"), "3");
    assert_eq!(value("prefs_num_prefs_ful_ret"), "1");
    assert_eq!(value("prefs_simp"), "0.6000");
    // Per group: u1 1 of 3, u2 2 of 2.
    assert_eq!(
        value("prefs_avgjg"),
        format!("{:.4}", (1.0 / 3.0 + 1.0) / 2.0)
    );
    // Both retrieved: d1>d3 failed (u1), d3>d1 fulfilled (u2).
    assert_eq!(value("prefs_simp_ret"), "0.5000");
    // Pairs: {d3,d1} half fulfilled, {d1,d2} and {d3,d4} fulfilled, {d3,d2} not (u1 prefers
    // d2, which is not retrieved).
    assert_eq!(value("prefs_pair"), format!("{:.4}", 2.5 / 4.0));
    assert_eq!(value("prefs_pair_ret"), "0.5000");
    assert_eq!(value("prefs_pair_imp"), format!("{:.4}", 2.5 / 4.0));
    // With a retrieved document: 3 fulfilled of 5.
    assert_eq!(value("prefs_simp_imp"), "0.6000");
}

#[test]
fn judgement_group_measures_average_over_the_groups() {
    let dir = tempfile::tempdir().unwrap();
    // Group a judges d1 relevant, group b judges d2 relevant.
    let groups = temp_file(&dir, "jg", "q1 a d1 1\nq1 a d2 0\nq1 b d2 1\nq1 b d1 0\n");
    let run = b"q1 Q0 d1 1 0.9 r\nq1 Q0 d2 2 0.8 r\n";
    let (code, out, err) = trec_eval(
        &[
            "-R",
            "qrels_jg",
            "-m",
            "map_avgjg",
            "-m",
            "P_avgjg.1,2",
            &groups,
            "-",
        ],
        run,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "map_avgjg             \tall\t0.7500\n\
         P_avgjg_1             \tall\t0.5000\n\
         P_avgjg_2             \tall\t0.5000\n"
    );
}

#[test]
fn yaap_is_robertsons_smoothed_average_precision() {
    let dir = tempfile::tempdir().unwrap();
    let qrels = temp_file(&dir, "qrels", "q1 0 d1 1\nq1 0 d2 1\nq1 0 d3 0\n");
    // d1, relevant, at rank 2: the precisions at the relevant documents sum to 1/2; R is 2.
    let run = b"q1 Q0 d3 1 0.9 r\nq1 Q0 d1 2 0.8 r\n";
    let (code, out, err) = trec_eval(&["-m", "yaap", &qrels, "-"], run);
    assert_eq!(code, 0, "{err}");
    let want = ((1.0 + 0.5) / (1.0 + 2.0 - 0.5_f64)).ln();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!("yaap                  \tall\t{want:.4}\n")
    );
    assert_eq!(format!("{want:.4}"), "-0.5108");
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
        "prefs_avgjg_Rnonrel_ret",
        "Rprec_mult_avgjg",
        "yaap",
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
