//! What a test binary of cases prints under `cargo test`: a screen that leads with the news.
//!
//! libtest's own account prints a line per test and a block per failure, so one chunker change
//! that moves a dozen queries fills three screens before the means that dropped. Instead, the
//! harness keeps every trial's verdict and prints, once the tests have finished: a line per
//! case for its query tests (counted, with the one reason they were skipped), a line per other
//! test, the failing summaries first (the table of the means against the baseline, drops
//! first, then the worst queries, then how many more), the other failures, the names of every failed test, and libtest's result line.
//! A query test that failed on a drop its summary already accounts for is named but its message
//! is not repeated: it stays in its own verdict (`cargo test -- --exact case::q0001`, nextest,
//! JUnit). `--format`, `--logfile`, `--list` and nextest's one-test processes get libtest's own
//! output.

use super::libtest::{Arguments, Completion, Conclusion, Failed};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Where libtest's own account goes while the harness prints this one.
const SINK: &str = if cfg!(windows) { "NUL" } else { "/dev/null" };

/// Failed query tests shown on a line of the list of failures.
const NAMES_PER_LINE: usize = 6;

/// A trial's verdict as the screen shows it.
enum Verdict {
    Passed,
    Ignored(Option<String>),
    Failed(Option<String>),
}

struct Record {
    case: String,
    name: String,
    query: bool,
    verdict: Verdict,
}

#[derive(Default)]
struct State {
    records: Vec<Record>,
    /// Query tests that failed on a drop of their figures, which their summary accounts for.
    dropped: BTreeSet<String>,
}

fn state() -> std::sync::MutexGuard<'static, State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Whether this run prints the screen (and sends libtest's account to the sink): not for a
/// listing, a format or log file asked for, or a process that runs one test.
pub(crate) fn take_over(args: &mut Arguments, one_test_per_process: bool) -> bool {
    let ours = !args.list && !args.format_given && args.logfile.is_none() && !one_test_per_process;
    if ours {
        args.logfile = Some(SINK.to_owned());
    }
    ours
}

/// The title libtest prints before running `count` tests.
pub(crate) fn title(count: usize) -> String {
    format!(
        "\nrunning {count} test{}",
        if count == 1 { "" } else { "s" }
    )
}

/// `test` of case `case` (a query test when `query`), with its verdict kept for the screen.
pub(crate) fn recorded(
    case: &str,
    name: String,
    query: bool,
    test: impl FnOnce() -> Result<Completion, Failed> + Send + 'static,
) -> impl FnOnce() -> Result<Completion, Failed> + Send + 'static {
    let case = case.to_owned();
    move || {
        let record = |verdict| {
            state().records.push(Record {
                case,
                name,
                query,
                verdict,
            })
        };
        // A panic in the user's code fails the test as libtest says it; the screen names it.
        let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(test)) {
            Ok(result) => result,
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned());
                record(Verdict::Failed(Some(format!(
                    "test panicked: {}",
                    message.as_deref().unwrap_or("(no message)")
                ))));
                std::panic::resume_unwind(payload)
            }
        };
        record(match &result {
            Ok(Completion::Completed) => Verdict::Passed,
            Ok(Completion::Ignored { reason }) => Verdict::Ignored(Some(reason.clone())),
            Err(e) => Verdict::Failed(Some(e.message().to_owned())),
        });
        result
    }
}

/// Marks the query test `name` as failed on a drop its case's summary accounts for.
pub(crate) fn dropped(name: String) {
    state().dropped.insert(name);
}

/// The screen of the tests that ran, ending with libtest's result line.
pub(crate) fn render(conclusion: &Conclusion, elapsed: Duration) -> String {
    let mut state = state();
    let State { records, dropped } = &mut *state;
    layout(records, dropped, conclusion, elapsed)
}

/// The screen of `records`, of which `dropped` failed on drops their summaries account for.
fn layout(
    records: &mut [Record],
    dropped: &BTreeSet<String>,
    conclusion: &Conclusion,
    elapsed: Duration,
) -> String {
    records.sort_by(|a, b| a.name.cmp(&b.name));
    let summary_failed: BTreeSet<&str> = records
        .iter()
        .filter(|r| !r.query && r.name == format!("{}::summary", r.case))
        .filter(|r| matches!(r.verdict, Verdict::Failed(_)))
        .map(|r| r.case.as_str())
        .collect();
    // A query test whose drop the failed summary of its case lists.
    let folded =
        |r: &Record| r.query && summary_failed.contains(&*r.case) && dropped.contains(&r.name);

    let mut s = String::new();
    let mut cases: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in records.iter() {
        cases.entry(&r.case).or_default().push(r);
    }
    for (case, trials) in &cases {
        let queries: Vec<&&Record> = trials.iter().filter(|r| r.query).collect();
        if !queries.is_empty() {
            let _ = writeln!(s, "test {case}: {}", query_line(&queries));
        }
        for r in trials.iter().filter(|r| !r.query) {
            let verdict = match &r.verdict {
                Verdict::Passed => "ok".to_owned(),
                Verdict::Ignored(None) => "ignored".to_owned(),
                Verdict::Ignored(Some(why)) => format!("ignored ({why})"),
                Verdict::Failed(_) => "FAILED".to_owned(),
            };
            let _ = writeln!(s, "test {} ... {verdict}", r.name);
        }
    }

    let failed: Vec<&Record> = records
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Failed(_)))
        .collect();
    if !failed.is_empty() {
        s.push_str("\nfailures:\n\n");
        // The summaries lead: the means that dropped, then the worst queries.
        let (summaries, others): (Vec<&&Record>, Vec<&&Record>) =
            failed.iter().partition(|r| !r.query);
        for r in summaries.into_iter().chain(others).filter(|r| !folded(r)) {
            let _ = writeln!(s, "---- {} ----", r.name);
            if let Verdict::Failed(Some(message)) = &r.verdict {
                let _ = writeln!(s, "{message}");
            }
            s.push('\n');
        }
        // Each block ends with a blank line.
        s.push_str("failures:\n");
        for r in failed.iter().filter(|r| !folded(r)) {
            let _ = writeln!(s, "    {}", r.name);
        }
        let folded: Vec<&str> = failed
            .iter()
            .filter(|r| folded(r))
            .map(|r| r.name.as_str())
            .collect();
        for line in folded.chunks(NAMES_PER_LINE) {
            let _ = writeln!(s, "    {}", line.join(" "));
        }
    }
    let _ = writeln!(
        s,
        "\ntest result: {}. {} passed; {} failed; {} ignored; 0 measured; {} filtered out; finished in {:.2}s",
        if conclusion.failed > 0 { "FAILED" } else { "ok" },
        conclusion.passed,
        conclusion.failed,
        conclusion.ignored,
        conclusion.filtered_out,
        elapsed.as_secs_f64()
    );
    s
}

/// A case's query tests on one line: how many passed, failed and were skipped, and why they
/// were skipped when they share one reason.
fn query_line(queries: &[&&Record]) -> String {
    let count = |f: fn(&Verdict) -> bool| queries.iter().filter(|r| f(&r.verdict)).count();
    let (ok, failed, ignored) = (
        count(|v| matches!(v, Verdict::Passed)),
        count(|v| matches!(v, Verdict::Failed(_))),
        count(|v| matches!(v, Verdict::Ignored(_))),
    );
    let mut parts = Vec::new();
    if ok > 0 {
        parts.push(format!("{ok} ok"));
    }
    if failed > 0 {
        parts.push(format!("{failed} FAILED"));
    }
    if ignored > 0 {
        let reasons: BTreeSet<Option<&str>> = queries
            .iter()
            .filter_map(|r| match &r.verdict {
                Verdict::Ignored(why) => Some(why.as_deref()),
                _ => None,
            })
            .collect();
        match reasons.into_iter().collect::<Vec<_>>()[..] {
            [Some(why)] => parts.push(format!("{ignored} ignored ({why})")),
            _ => parts.push(format!("{ignored} ignored")),
        }
    }
    format!(
        "{} query test{} ... {}",
        queries.len(),
        if queries.len() == 1 { "" } else { "s" },
        parts.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, verdict: Verdict) -> Record {
        let (case, rest) = name.split_once("::").unwrap();
        Record {
            case: case.into(),
            name: name.into(),
            query: rest != "summary",
            verdict,
        }
    }

    fn failed(message: &str) -> Verdict {
        Verdict::Failed(Some(message.into()))
    }

    #[test]
    fn the_summary_leads_and_the_drops_it_lists_are_named_not_repeated() {
        let mut records = vec![
            record(
                "c::q3",
                failed(
                    "query `q3` regressed beyond the tolerance 0.01: mrr 1.0000 → 0.0000 (-1.0000)",
                ),
            ),
            record("c::q1", Verdict::Passed),
            record(
                "c::q2",
                failed("the answer to query `q2` of case `c` misses its bars"),
            ),
            record(
                "c::summary",
                failed("case `c`:\nfigures dropped\n  mean  before   after  change\n  mrr   0.9000  0.6000 -0.3000  dropped"),
            ),
            record(
                "d::q1",
                Verdict::Ignored(Some("the configuration changed (k 1 → 5)".into())),
            ),
            record(
                "d::q2",
                Verdict::Ignored(Some("the configuration changed (k 1 → 5)".into())),
            ),
            record("d::summary", Verdict::Passed),
        ];
        let dropped = BTreeSet::from(["c::q3".to_owned()]);
        let conclusion = Conclusion {
            filtered_out: 0,
            passed: 2,
            failed: 3,
            ignored: 2,
        };
        let screen = layout(
            &mut records,
            &dropped,
            &conclusion,
            Duration::from_millis(250),
        );
        let lines: Vec<&str> = screen.lines().collect();
        assert_eq!(
            lines[..9],
            [
                "test c: 3 query tests ... 1 ok, 2 FAILED",
                "test c::summary ... FAILED",
                "test d: 2 query tests ... 2 ignored (the configuration changed (k 1 → 5))",
                "test d::summary ... ok",
                "",
                "failures:",
                "",
                "---- c::summary ----",
                "case `c`:",
            ],
            "{screen}"
        );
        // The summary's account comes before any other failure; the query whose drop it lists
        // is named in the list of failures only, the other failure is shown whole.
        let means = screen.find("  mrr   0.9000").unwrap();
        assert!(means < screen.find("---- c::q2 ----").unwrap(), "{screen}");
        assert!(!screen.contains("---- c::q3 ----"), "{screen}");
        assert!(!screen.contains("regressed beyond"), "{screen}");
        let list = &screen[screen.rfind("failures:\n").unwrap()..];
        assert!(
            list.starts_with("failures:\n    c::q2\n    c::summary\n    c::q3\n"),
            "{screen}"
        );
        assert!(
            screen.ends_with("\ntest result: FAILED. 2 passed; 3 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.25s\n"),
            "{screen}"
        );
    }

    #[test]
    fn a_test_that_panics_is_recorded_as_failed_and_still_panics() {
        let name = "screen_panics::q1".to_owned();
        let test = recorded("screen_panics", name.clone(), true, || {
            panic!("the index builds: no such folder")
        });
        assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(test)).is_err());
        let state = state();
        let r = state.records.iter().find(|r| r.name == name).unwrap();
        assert!(
            matches!(&r.verdict, Verdict::Failed(Some(m)) if m == "test panicked: the index builds: no such folder")
        );
    }

    #[test]
    fn a_drop_is_shown_whole_when_no_summary_failed_for_it() {
        // The summary did not run here (a filter): the query test's message is the account.
        let mut records = vec![record(
            "c::q3",
            failed("query `q3` regressed: mrr 1.0000 → 0.0000"),
        )];
        let dropped = BTreeSet::from(["c::q3".to_owned()]);
        let conclusion = Conclusion {
            filtered_out: 3,
            passed: 0,
            failed: 1,
            ignored: 0,
        };
        let screen = layout(&mut records, &dropped, &conclusion, Duration::ZERO);
        assert!(
            screen.contains("---- c::q3 ----\nquery `q3` regressed: mrr 1.0000 → 0.0000\n"),
            "{screen}"
        );
        assert!(screen.contains("failures:\n    c::q3\n"), "{screen}");
    }
}
