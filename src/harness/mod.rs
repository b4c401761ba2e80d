//! The `cargo test` harness: each query of a case's dataset is a named test, plus a summary
//! test per case that checks thresholds and the golden snapshot.
//!
//! Trials are named `case::<query id>` and `case::summary` (and `case::langsmith_upload` for a
//! case with `langsmith_experiment = "NAME"`: the upload of its runs and feedback, whose
//! failure fails that trial alone), sorted. A case is a retriever, a function that ranks or
//! answers, or a [`Rag`]: a retriever plus a generator; or, with `traces = …`, an instrumented
//! system whose exported traces are scored as its answers (`docs/reference/traces.md`). A case's retriever is built
//! and run once per process, on the first trial that needs it, over the queries whose trials
//! the process runs (all of them when its summary runs; a name filter selects fewer); under
//! `cargo nextest run`, where every trial is its own process, the results are shared through a
//! file under the target directory keyed by the nextest run, the test binary and the inputs.
//!
//! With a run group (`RAG_EVAL_RUN_GROUP` or the CI's run, and `RAG_EVAL_RUNS`), each process
//! writes the queries it computed into that group of the run store, nextest's processes compute
//! their own query each, and a summary that runs without its case's queries gates over the
//! group's merged results, as `gate` does (feature `runs`; `docs/guide/ci.md`).
//!
//! Golden snapshots live in `golden/<case>.snap` (insta's format). A query trial fails when one
//! of its figures dropped by more than the case's tolerance; the summary trial also fails on
//! such a drop of a mean, on a `min_…`/`max_…` bar, and when the snapshot is missing under
//! `CI`. Improvements pass and are reported; `cargo insta review` takes the new baseline.
//!
//! Under `cargo test` the binary prints a screen that leads with the news instead of
//! libtest's line per test and block per failure (`screen`); `--format pretty` asks for
//! libtest's own.

#[cfg(feature = "answers")]
mod answers;
/// Without the `answers` feature no case answers: a case's answer report never exists.
#[cfg(not(feature = "answers"))]
mod answers {
    /// What the judges said about a case's answers: none without the feature.
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    pub(crate) enum AnswerReport {}
}
mod case;
#[cfg(feature = "answers")]
mod conversations;
pub(crate) mod golden;
mod junit;
#[cfg(feature = "langsmith")]
mod langsmith;
mod libtest;
pub(crate) mod private;
pub(crate) mod progress;
#[cfg(feature = "answers")]
mod rag;
mod rows;
mod screen;
#[cfg(feature = "runs")]
mod shards;
mod store_env;
#[cfg(feature = "traces")]
mod traces;
mod vocabulary;

#[cfg(feature = "answers")]
pub use rag::Rag;
#[cfg(feature = "runs")]
pub use shards::{gate, group_from_env, shard_from_env, Verdict, GROUP_ENV, SHARD_ENV};

use crate::metrics::Bar;
use crate::metrics::RunResult as Outcome;
use case::Case;
use golden::Golden;
use libtest::{Arguments, Completion, Failed, Trial};
use private::{CaseSpec, InstaHook, SnapshotRequest};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

/// The async runtime that builds retrievers and runs evaluations (user code often expects
/// Tokio).
fn runtime() -> &'static tokio::runtime::Runtime {
    crate::runtime::shared().unwrap_or_else(|e| panic!("the harness needs an async runtime: {e}"))
}

/// Runs the cases as a libtest-compatible test binary (`--list`, `--exact`, filters,
/// `--ignored`, `-q`, `--test-threads` as with `cargo test`).
pub fn run(cases: Vec<CaseSpec>, hook: InstaHook) -> ExitCode {
    let mut args = match Arguments::from_env() {
        Ok(args) => args,
        Err(code) => return code,
    };
    let screen = screen::take_over(&mut args, one_test_per_process());
    progress::enable_for(&args, screen);
    quiet_snapshot_panics();
    quiet_insta_output();
    let hook = Arc::new(hook);
    // Before any trial runs, while no other thread reads the environment: the systems of
    // traces cases build their exporters from the variables this sets.
    #[cfg(feature = "traces")]
    if !args.list {
        traces::start_receiver_for(&cases);
    }
    let mut trials = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for spec in cases {
        if !seen.insert(spec.name) {
            eprintln!(
                "error: two cases are named `{}` (their tests would share names); rename one",
                spec.name
            );
            return ExitCode::FAILURE;
        }
        // Under nextest a process runs one test, named exactly: the other cases' datasets and
        // corpora are not read.
        if one_test_per_process() && !args.may_run_under(&format!("{}::", spec.name)) {
            continue;
        }
        #[cfg(feature = "answers")]
        if let private::Build::Conversation(system) = spec.build {
            trials.extend(conversations::trials(spec, system, &hook));
            continue;
        }
        let case = Arc::new(Case::new(spec));
        let own = trials_of(&case, &hook);
        case.set_scope(scope_of(&case, &args, &own));
        trials.extend(own);
    }
    // Most datasets list their queries in order: checked in one pass, sorted only if not.
    if !trials.is_sorted_by(|a, b| a.name() <= b.name()) {
        trials.sort_by(|a, b| a.name().cmp(b.name()));
    }
    let ignored: Vec<String> = trials
        .iter()
        .filter(|t| t.has_ignored_flag())
        .map(|t| t.name().to_owned())
        .collect();
    let listing = args.list;
    if screen {
        let running = trials.iter().filter(|t| !args.is_filtered_out(t)).count();
        println!("{}", screen::title(running));
    }
    let started = std::time::Instant::now();
    let mut conclusion = libtest::run(&args, trials);
    if screen {
        print!("{}", screen::render(&conclusion, started.elapsed()));
    }
    // The tables come after every test's line, where a reader of the log looks last.
    for report in reports().lock().unwrap_or_else(|e| e.into_inner()).iter() {
        print!("{report}");
    }
    // Under nextest each process runs one test: nextest's own JUnit output covers the run.
    if !listing && !one_test_per_process() {
        match junit::write_if_asked(&ignored) {
            Some(Ok(path)) => println!("JUnit report: {}", path.display()),
            Some(Err(e)) => {
                eprintln!("error: cannot write the JUnit report ({}): {e}", junit::VAR);
                conclusion.failed += 1;
            }
            None => {}
        }
    }
    conclusion.exit_code()
}

/// Whether the run includes `trial` with `args` (its filters, `--skip`, `--ignored`).
fn runs_here(args: &Arguments, trial: &Trial) -> bool {
    !args.is_filtered_out(trial)
        && !matches!(
            (trial.has_ignored_flag(), args.ignored, args.include_ignored),
            (true, false, false) | (false, true, false)
        )
}

/// Which of the case's queries this process computes: those whose trials it runs (a filtered
/// run, one of a named shard's nextest processes), or every query when its summary runs here.
/// In a run group ([`shards`]) the summary of a named shard, or a summary run alone, gates
/// over the group's merged results instead. Under nextest without a named shard, the
/// processes of a machine share one computation of the whole case (a file under the target
/// folder).
fn scope_of(case: &Case, args: &Arguments, trials: &[Trial]) -> case::Scope {
    let Ok(setup) = &case.setup else {
        return case::Scope::default();
    };
    // `trials_of` makes the query trials first, in the dataset's order.
    let queries = if case.spec.per_query {
        setup.ids.len()
    } else {
        0
    };
    let prefix = format!("{}::", case.spec.name);
    let (mut selected, mut all, mut whole) = (std::collections::BTreeSet::new(), true, false);
    for (i, t) in trials.iter().enumerate() {
        let rest = t.name().strip_prefix(&prefix).unwrap_or_default();
        match (i < queries, runs_here(args, t)) {
            (true, true) => {
                selected.insert(rest.to_owned());
            }
            (true, false) => all = false,
            (false, here) => whole |= here,
        }
    }
    let (grouped, shard) = run_group_and_shard();
    let split = if one_test_per_process() {
        // nextest runs every test in its own process: only a named shard splits the case (a
        // run that is not sharded keeps its summary from racing the other processes).
        shard
    } else if whole {
        // A summary gates over the group when it is a shard's, or runs alone (a gate job).
        grouped && (shard || selected.is_empty())
    } else {
        true
    };
    if all || !split {
        // A process of query tests alone reads their figures of the whole case's.
        let reads = (!all && !whole).then_some(selected);
        return case::Scope {
            reads,
            ..case::Scope::default()
        };
    }
    case::Scope {
        queries: Some(selected),
        merged_summary: whole,
        reads: None,
    }
}

/// Whether this run writes into a run group (`RAG_EVAL_RUNS` names a store and a group is
/// named), and whether it is a named shard of it (`RAG_EVAL_SHARD`).
fn run_group_and_shard() -> (bool, bool) {
    #[cfg(feature = "runs")]
    {
        let grouped = shards::group_from_env().is_some()
            && std::env::var(crate::runs::RUNS_ENV)
                .is_ok_and(|v| !v.trim().is_empty() && !v.trim().eq_ignore_ascii_case("off"));
        (grouped, grouped && !shards::shard_from_env().is_empty())
    }
    #[cfg(not(feature = "runs"))]
    (false, false)
}

/// The metric tables of the summaries that ran, printed once every test has finished.
fn reports() -> &'static std::sync::Mutex<Vec<String>> {
    static REPORTS: OnceLock<std::sync::Mutex<Vec<String>>> = OnceLock::new();
    REPORTS.get_or_init(Default::default)
}

/// insta's own account of a snapshot mismatch ("Stopped on the first failure", a diff of every
/// line) repeats the harness's verdict in a worse form; it stays quiet unless asked for.
fn quiet_insta_output() {
    if std::env::var_os("INSTA_OUTPUT").is_none() {
        // Before any test thread starts, so nothing reads the environment concurrently.
        std::env::set_var("INSTA_OUTPUT", "none");
    }
}

/// The case's trials: one per query in the dataset's order (when each query is a test), then
/// the upload's and the summary's.
fn trials_of(case: &Arc<Case>, hook: &Arc<InstaHook>) -> Vec<Trial> {
    let name = case.spec.name;
    let mut trials = Vec::new();
    if let (Ok(setup), true) = (&case.setup, case.spec.per_query) {
        for id in &setup.ids {
            let (c, id_owned) = (case.clone(), id.clone());
            trials.push(
                Trial::ignorable_test(
                    format!("{name}::{id}"),
                    junit::recorded(
                        format!("{name}::{id}"),
                        screen::recorded(name, format!("{name}::{id}"), true, move || {
                            query_trial(&c, &id_owned)
                        }),
                    ),
                )
                .with_ignored_flag(case.spec.ignore),
            );
        }
    }
    if let Some(experiment) = case.spec.langsmith_experiment {
        let c = case.clone();
        let name = format!("{name}::langsmith_upload");
        trials.push(
            Trial::ignorable_test(
                name.clone(),
                junit::recorded(
                    name.clone(),
                    screen::recorded(case.spec.name, name, false, move || {
                        upload_trial(&c, experiment).map(|()| Completion::Completed)
                    }),
                ),
            )
            .with_ignored_flag(case.spec.ignore),
        );
    }
    let (c, h) = (case.clone(), hook.clone());
    trials.push(
        Trial::ignorable_test(
            format!("{name}::summary"),
            junit::recorded(
                format!("{name}::summary"),
                screen::recorded(name, format!("{name}::summary"), false, move || {
                    summary_trial(&c, &h).map(|()| Completion::Completed)
                }),
            ),
        )
        .with_ignored_flag(case.spec.ignore),
    );
    trials
}

thread_local! {
    /// Set while insta asserts a snapshot on this thread: its panic on a mismatch is expected
    /// (the harness gives its own verdict), so the panic message and backtrace are not printed.
    static SNAPSHOT_ASSERT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Wraps the panic hook so that expected snapshot panics stay quiet; every other panic is
/// reported as before.
fn quiet_snapshot_panics() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !SNAPSHOT_ASSERT.with(|q| q.get()) {
                previous(info);
            }
        }));
    });
}

/// Whether insta would treat this as a CI run (`CI` set and not `0`/`false`/empty, or
/// `TF_BUILD`).
fn is_ci() -> bool {
    match std::env::var("CI").ok().as_deref() {
        Some("false") | Some("0") | Some("") => false,
        None => std::env::var("TF_BUILD").is_ok(),
        Some(_) => true,
    }
}

/// Whether snapshot differences are reported without failing: `INSTA_FORCE_PASS`, or
/// `INSTA_UPDATE=always`/`force`, which write the new figures over the baseline as insta does.
fn force_pass() -> bool {
    matches!(
        std::env::var("INSTA_FORCE_PASS").as_deref(),
        Ok("1") | Ok("true")
    ) || matches!(
        std::env::var("INSTA_UPDATE").as_deref(),
        Ok("always") | Ok("force")
    )
}

fn read_golden_text(case: &Case) -> Option<String> {
    snapshot_text(&case.golden_path())
}

/// The text of the snapshot file at `path`, if there is a readable one.
fn snapshot_text(path: &std::path::Path) -> Option<String> {
    let snapshot = insta::Snapshot::from_file(path).ok()?;
    Some(snapshot.as_text()?.to_string())
}

/// The golden snapshot parsed, once per case and process.
fn golden_of(case: &Case) -> Option<Arc<Golden>> {
    case.golden(|| read_golden_text(case).and_then(|t| golden::parse(&t)))
}

/// Under nextest every test is its own process, which then needs one query's golden figures,
/// not the whole parsed snapshot.
fn one_test_per_process() -> bool {
    std::env::var_os("NEXTEST_RUN_ID").is_some()
}

fn query_trial(case: &Case, id: &str) -> Result<Completion, Failed> {
    if let Some((_, why)) = case.missing_traces()?.into_iter().find(|(m, _)| m == id) {
        return Err(why.into());
    }
    let (outcome, place) = case.query_outcome(id)?;
    let Some(q) = place.map(|i| &outcome.per_query[i]) else {
        return Ok(Completion::Completed);
    };
    #[cfg(feature = "answers")]
    if let Some(explained) = case.answers()?.and_then(|a| a.queries.get(id).cloned()) {
        answer_bars(case, id, &explained)?;
    }
    // A process that runs a few queries' tests reads their lines of the snapshot alone.
    let (old, header) = if one_test_per_process() || case.needs_part() {
        let path = case.golden_path();
        let text = golden::snapshot_body(&path).or_else(|| snapshot_text(&path));
        (
            text.as_deref().and_then(|t| golden::query_figures(t, id)),
            text.as_deref().map(golden::header),
        )
    } else {
        let g = golden_of(case);
        (
            g.as_ref().and_then(|g| g.per_query.get(id).cloned()),
            g.map(|g| g.header.clone()),
        )
    };
    // Figures of another k, mode or level are not comparable: skipped, for the summary's reason.
    if let Some(what) =
        header.and_then(|h| golden::configuration_change(&h, &golden::header_of(&outcome)))
    {
        return Ok(Completion::ignored_with(configuration_changed(case, &what)));
    }
    let Some(old) = old else {
        return Ok(Completion::Completed); // no baseline for this query: the summary reports it
    };
    let new = golden::rounded(&snapshot_figures(case, &q.metrics));
    let comparison = golden::compare_scope(id, &old, &new, tolerance(case));
    // Improvements are the summary's to report, once, for the queries that did not fail.
    let regressed: Vec<&golden::Change> = comparison.regressions().collect();
    if regressed.is_empty() || force_pass() {
        return Ok(Completion::Completed);
    }
    screen::dropped(format!("{}::{id}", case.spec.name));
    let nextest = if one_test_per_process() {
        format!(
            "\n(nextest stops at the first failure by default: run it with `--no-fail-fast` so that `{}::summary` reports the whole case)",
            case.spec.name
        )
    } else {
        String::new()
    };
    Err(format!(
        "query `{id}` ({:?}) regressed beyond the tolerance {}: {}{nextest}",
        q.query.as_deref().unwrap_or_default(),
        case.spec.tolerance,
        golden::describe_inline(&regressed),
    )
    .into())
}

/// The one line that says a snapshot of another configuration cannot be compared.
fn configuration_changed(case: &Case, what: &str) -> String {
    format!(
        "the configuration changed ({what}): the snapshot {} cannot be compared; review it with `cargo insta review`",
        case.golden_path().display()
    )
}

/// Uploads the case's runs and feedback to its LangSmith experiment. Its own trial: a failed
/// upload is seen as a failure without changing any metric test's verdict, and the local
/// results (snapshots, the run store) do not depend on it.
fn upload_trial(case: &Case, experiment: &str) -> Result<(), Failed> {
    #[cfg(feature = "langsmith")]
    return langsmith::upload(case, experiment).map_err(Failed::from);
    #[cfg(not(feature = "langsmith"))]
    return Err(format!(
        "case `{}` names the LangSmith experiment `{experiment}`, but rag-eval is built without its `langsmith` feature: enable it in the dev-dependency",
        case.spec.name
    )
    .into());
}

/// The figures a summary gates: the case's own, or the run group's merged results with what
/// is wrong with the group (missing queries, conflicting shards).
type SummaryInputs = (
    Arc<Outcome>,
    Option<Arc<answers::AnswerReport>>,
    Vec<String>,
);

fn summary_inputs(case: &Case) -> Result<SummaryInputs, String> {
    #[cfg(feature = "runs")]
    if case.merged_summary() {
        let merged = case.merged()?;
        return Ok((
            Arc::new(merged.outcome.clone()),
            merged.answers.clone().map(Arc::new),
            merged.problems(),
        ));
    }
    Ok((case.outcome()?, case.answers()?, untraced(case)?))
}

/// The summary's failure when rows of a traces case have no trace: how many of the rows,
/// which (each row's own trial says what to check).
fn untraced(case: &Case) -> Result<Vec<String>, String> {
    let missing = case.missing_traces()?;
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let scored = case.outcome()?.per_query.len();
    let mut ids: Vec<String> = missing
        .iter()
        .take(10)
        .map(|(id, _)| format!("`{id}`"))
        .collect();
    if missing.len() > ids.len() {
        ids.push(format!("and {} more", missing.len() - 10));
    }
    Ok(vec![format!(
        "{} of {} rows have no trace and were not scored: {} (each row's test says what to check)",
        missing.len(),
        missing.len() + scored,
        ids.join(", ")
    )])
}

fn summary_trial(case: &Case, hook: &InstaHook) -> Result<(), Failed> {
    let (outcome, answers, mut problems) = summary_inputs(case)?;
    // The case's own problems are its rows without a trace: the figures lack them, so the
    // snapshot is neither compared nor written.
    #[cfg(feature = "runs")]
    let untraced = !case.merged_summary() && !problems.is_empty();
    #[cfg(not(feature = "runs"))]
    let untraced = !problems.is_empty();
    // The report printed after every test's line: the means (the table of each against the
    // baseline once there is one to compare with, and then not twice), then a note.
    let publish = |means: &str, note: &str| {
        let text = report(case, &outcome, means);
        #[cfg(feature = "answers")]
        let text = answers
            .iter()
            .flat_map(|a| &a.summaries)
            .fold(text, |text, s| text + &s.usage_lines());
        let mut reports = reports().lock().unwrap_or_else(|e| e.into_inner());
        reports.push(text + note);
    };
    let counts: Vec<_> = outcome
        .metrics
        .names()
        .map(|n| outcome.coverage(n))
        .collect();
    let mut means = crate::eval::metric_table_counted(&outcome.metrics, &outcome.std, &counts);
    let mut note = String::new();
    problems.extend(thresholds(case, &outcome, answers.as_deref()));
    problems.extend(disagreements(
        case.spec.agreement.as_ref(),
        std::path::Path::new(case.spec.manifest_dir),
        case.spec.dataset,
        &outcome,
    ));
    // Figures that cannot gate: a bar's figure missing, or a judge that failed too often.
    let unusable = untraced
        || case
            .spec
            .thresholds
            .iter()
            .any(|t| t.index_in(&outcome.metrics).is_none());
    #[cfg(feature = "answers")]
    let unusable = {
        let judges = answers.as_deref().map(unusable_judges).unwrap_or_default();
        let failed = !judges.is_empty();
        problems.extend(judges);
        unusable || failed
    };
    if unusable {
        // A baseline without the figures a bar gates on would pass the next run unseen.
        problems.push(format!(
            "the golden snapshot {} was neither compared nor written: this run lacks figures the case gates on",
            case.golden_path().display()
        ));
        publish(&means, "");
        return Err(format!("case `{}`:\n{}", case.spec.name, problems.join("\n")).into());
    }

    let mut snapshot = (*outcome).clone();
    for q in &mut snapshot.per_query {
        q.metrics = snapshot_figures(case, &q.metrics);
    }
    let contents = golden::render(&snapshot);
    let old = golden_of(case);
    let new = Golden::of(&snapshot);
    let request = SnapshotRequest {
        dir: case.golden_dir(),
        name: case.spec.name.to_owned(),
        input_file: std::path::Path::new(case.spec.manifest_dir).join(case.spec.source),
        description: format!(
            "{} with k = {}, mode = {} over {}",
            retriever_of(&outcome),
            outcome.k.unwrap_or_default(),
            outcome.mode.unwrap_or_default(),
            case.spec.dataset
        ),
        contents: contents.clone(),
        tolerance: case.spec.tolerance,
        judge_tolerance: tolerance(case).judged,
    };
    // insta decides what to write (pending `.snap.new`, in place, nothing under CI) and
    // panics on a mismatch; the verdict below is the harness's own.
    let assert = hook.assert;
    SNAPSHOT_ASSERT.with(|q| q.set(true));
    let snapshot_panicked = std::panic::catch_unwind(|| assert(&request)).is_err();
    SNAPSHOT_ASSERT.with(|q| q.set(false));
    if !snapshot_panicked {
        remove_stale_pending(case, &new);
    }
    match &old {
        None if is_ci() => problems.push(format!(
            "no golden snapshot at {}: run the tests locally, review the new snapshot with `cargo insta review` and commit it",
            case.golden_path().display()
        )),
        None if snapshot_panicked => println!(
            "NEW {}: no baseline yet; this run's figures are in {}.new: accept them with `cargo insta accept` (or `cargo insta review`, or run once with INSTA_UPDATE=always) and commit golden/",
            case.spec.name,
            case.golden_path().display()
        ),
        None => println!(
            "NEW {}: baseline written to {}; commit it",
            case.spec.name,
            case.golden_path().display()
        ),
        Some(old) => {
            let comparison = golden::compare(old, &new, tolerance(case));
            let regressions: Vec<&golden::Change> = comparison.regressions().collect();
            // A query whose test failed gets no note that it improved.
            let failed: std::collections::HashSet<&str> =
                regressions.iter().map(|r| r.scope.as_str()).collect();
            let improvements: Vec<&golden::Change> = comparison
                .improvements()
                .filter(|c| c.scope == "summary" || !failed.contains(c.scope.as_str()))
                .collect();
            if let Some(what) = &comparison.configuration {
                let line = configuration_changed(case, what);
                if is_ci() && !force_pass() {
                    problems.push(line);
                } else {
                    println!("CHANGED {}: {line}", case.spec.name);
                }
            }
            if comparison.configuration.is_none() {
                means = golden::means_table(&old.summary, &new.summary, &comparison.changes);
            }
            if !regressions.is_empty() {
                let account = golden::dropped(
                    case.spec.tolerance,
                    &case.golden_path(),
                    &means,
                    &regressions,
                    false,
                );
                // The table is the drop's account: the report does not repeat it.
                means.clear();
                if force_pass() {
                    println!("DROPPED {}: {account}", case.spec.name);
                } else {
                    problems.push(account);
                }
            }
            if !improvements.is_empty() {
                // Accepting a baseline accepts every figure in it: never advise it while some
                // figure dropped, and then count the queries that gained instead of naming them.
                // After the table, below the verdicts: good news never hides a failure.
                note = if regressions.is_empty() {
                    format!(
                        "IMPROVED {}\n{}  accept the new baseline with `cargo insta review` (or `cargo insta accept`)\n",
                        case.spec.name,
                        golden::query_account(&improvements, IMPROVEMENTS_SHOWN)
                    )
                } else {
                    let scopes: std::collections::BTreeSet<&str> =
                        improvements.iter().map(|c| c.scope.as_str()).collect();
                    let means = usize::from(scopes.contains("summary"));
                    format!(
                        "IMPROVED {}: {} means and {} queries gained; other figures dropped: fix those before accepting a new baseline\n",
                        case.spec.name,
                        improvements.iter().filter(|c| c.scope == "summary").count(),
                        scopes.len() - means
                    )
                };
            }
            if !comparison.structure.is_empty() {
                let what = comparison.structure.join("; ");
                if is_ci() && !force_pass() {
                    problems.push(format!(
                        "the golden snapshot no longer fits the case ({what}): accept a new baseline locally and commit it"
                    ));
                } else {
                    println!(
                        "CHANGED {}: {what}; review the new snapshot with `cargo insta review`",
                        case.spec.name
                    );
                }
            }
        }
    }
    publish(&means, &note);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("case `{}`:\n{}", case.spec.name, problems.join("\n")).into())
    }
}

/// Queries an improvement note names one by one when no figure dropped.
const IMPROVEMENTS_SHOWN: usize = 5;

/// The case's tolerances: `tolerance` for its figures, `judge_tolerance` for its judges'.
fn tolerance(case: &Case) -> golden::Tolerance<'static> {
    golden::Tolerance {
        figures: case.spec.tolerance,
        judged: case.spec.judge.map_or(case.spec.tolerance, |j| j.tolerance),
        criteria: golden::Criteria::Files(case.spec.criteria),
    }
}

/// A query's figures as its golden snapshot records them: judge figures only with
/// `judge_per_query = true` (a judge's per-query verdicts drift more than their mean).
fn snapshot_figures(case: &Case, figures: &crate::metrics::Figures) -> crate::metrics::Figures {
    kept_figures(
        case.spec.judge.is_some_and(|j| j.per_query_snapshot),
        figures,
        |name| case.spec.criteria.iter().any(|c| c.name() == name),
    )
}

/// `figures` without the judges' (the registry's, and those `is_criteria` names) unless
/// `keep_judged`.
fn kept_figures(
    keep_judged: bool,
    figures: &crate::metrics::Figures,
    is_criteria: impl Fn(&str) -> bool,
) -> crate::metrics::Figures {
    crate::metrics::Figures(
        figures
            .0
            .iter()
            .filter(|(name, _)| {
                let judged = crate::metrics::registry::is_judged(name) || is_criteria(name);
                keep_judged || !judged
            })
            .cloned()
            .collect(),
    )
}

/// A query of a case that answers fails when one of its judge figures misses the case's bar;
/// the message shows what a reader needs to see why.
#[cfg(feature = "answers")]
fn answer_bars(case: &Case, id: &str, e: &answers::Explained) -> Result<(), Failed> {
    let mut missed = Vec::new();
    for t in case.spec.thresholds {
        let Some(&(_, v)) = e.figures.iter().find(|(n, _)| *n == t.metric) else {
            if let Some((_, why)) = e.failed.iter().find(|(n, _)| *n == t.metric) {
                missed.push(format!("{} has no figure: judging failed: {why}", t.metric));
            }
            continue;
        };
        if !t.passes(v) {
            missed.push(format!(
                "{} = {v:.4} is {} the bar {:.4} ({})",
                t.metric,
                t.bound.side_missed(),
                t.value,
                t.key()
            ));
        }
    }
    if missed.is_empty() {
        return Ok(());
    }
    let mut msg = format!(
        "the answer to query `{id}` of case `{}` misses its bars:\n  {}\nquestion: {}\nanswer: {}\n",
        case.spec.name,
        missed.join("\n  "),
        e.question,
        e.answer
    );
    if !e.unsupported.is_empty() {
        msg.push_str("unsupported statements:\n");
        for st in &e.unsupported {
            let _ = writeln!(msg, "  - {st}");
        }
    }
    match &e.reference {
        Some(r) => {
            let _ = writeln!(msg, "reference: {r}");
        }
        None => msg.push_str("reference: (the dataset has none)\n"),
    }
    Err(msg.into())
}

/// The retriever's description a case's result records.
fn retriever_of(o: &Outcome) -> &str {
    o.config
        .as_ref()
        .and_then(|c| c.retriever.as_deref())
        .unwrap_or("")
}

/// A pending `.snap.new` left by an earlier run is stale once the baseline on disk holds this
/// run's figures (after `INSTA_UPDATE=always`, or when the figures came back): `cargo insta
/// review` would otherwise offer an outdated run.
fn remove_stale_pending(case: &Case, new: &Golden) {
    if matches!(
        std::env::var("INSTA_FORCE_PASS").as_deref(),
        Ok("1") | Ok("true")
    ) {
        return; // insta wrote this run's figures as pending on purpose
    }
    let current = read_golden_text(case).and_then(|t| golden::parse(&t));
    if current.is_some_and(|g| golden::compare(&g, new, 0.0).is_match()) {
        let mut pending = case.golden_path().into_os_string();
        pending.push(".new");
        let _ = std::fs::remove_file(pending);
    }
}

/// The case's configuration, `means` (a table, or nothing when the summary's failure gave
/// it) and the per-difficulty means, printed once per run by the summary.
fn report(case: &Case, o: &Outcome, means: &str) -> String {
    let mut s = format!(
        "\n{} — {}-level, k = {}, mode = {}, {} queries, {}\n",
        case.spec.name,
        o.level,
        o.k.unwrap_or_default(),
        o.mode.unwrap_or_default(),
        o.per_query.len(),
        retriever_of(o)
    );
    s.push_str(means);
    let groups = o.by_difficulty.as_ref();
    if groups.is_some_and(|g| g.len() > 1 || g.keys().any(|l| l != "unlabelled")) {
        let shown = o.metrics.0.len().min(4);
        let _ = write!(s, "{:<14} {:>7}", "difficulty", "queries");
        for n in o.metrics.names().take(shown) {
            let _ = write!(s, " {n:>16}");
        }
        s.push('\n');
        for (label, d) in groups.into_iter().flatten() {
            let _ = write!(s, "{:<14} {:>7}", label, d.queries);
            for v in d.metrics.values().take(shown) {
                let _ = write!(s, " {v:>16.4}");
            }
            s.push('\n');
        }
    }
    if case.setup.as_ref().is_ok_and(|s| !s.retrieval_measured()) {
        let _ = writeln!(
            s,
            "retrieval not measured: {} holds questions with reference answers and no retrieval truth",
            case.spec.dataset
        );
    }
    // A bar on an answer metric judges only the queries with a reference answer: say which
    // have none, also when the bar holds.
    let mut named: Vec<&str> = Vec::new();
    for t in case.spec.thresholds {
        if needs_reference(&t.metric) && !named.contains(&&*t.metric) {
            named.push(&t.metric);
            let line = without_figure(o, &t.metric);
            if !line.is_empty() {
                let _ = writeln!(s, "{}:{line}", t.metric);
            }
        }
    }
    s
}

/// Every `min_…`/`max_…` bar the means miss, with the five worst queries for that metric and
/// the queries left out of its mean.
/// With `min_agreement`, one line per labelled metric of `o` whose agreement with people's
/// labels (the case's labels file, else its dataset's `outputs.labels`) is below the minimum,
/// as `rag-eval align --min-agreement` judges it; labels that cannot be read, or that label no
/// query of the run, are a line too. A label is of one answer: labels of answers the case no
/// longer gives measure nothing (a cached judge and generator keep answers fixed).
/// Paths are relative to `root`, the crate's.
fn disagreements(
    agreement: Option<&private::AgreementSpec>,
    root: &std::path::Path,
    dataset: &str,
    o: &Outcome,
) -> Vec<String> {
    let Some(agreement) = agreement else {
        return Vec::new();
    };
    agreement_failures(agreement, root, dataset, o)
}

/// Without the `compare` feature there are no agreement statistics to gate on: one line that
/// says so, so a case with `min_agreement` fails instead of passing unchecked.
#[cfg(not(feature = "compare"))]
fn agreement_failures(
    _: &private::AgreementSpec,
    _: &std::path::Path,
    _: &str,
    _: &Outcome,
) -> Vec<String> {
    vec!["min_agreement needs rag-eval's `compare` feature (the agreement statistics): `rag-eval = { version = \"…\", features = [\"compare\"] }`".to_owned()]
}

#[cfg(feature = "compare")]
fn agreement_failures(
    agreement: &private::AgreementSpec,
    root: &std::path::Path,
    dataset: &str,
    o: &Outcome,
) -> Vec<String> {
    let relative = agreement.labels.unwrap_or(dataset);
    let path = root.join(relative);
    let labels = camino::Utf8PathBuf::from_path_buf(path)
        .map_err(|p| format!("the labels path {} is not UTF-8", p.display()))
        .and_then(|p| crate::align::Labels::load(p).map_err(|e| e.to_string()));
    let labels = match labels {
        Ok(labels) => labels,
        Err(e) => return vec![format!("min_agreement: {e}")],
    };
    let mut run = o.clone();
    labels.apply(&mut run);
    if run.labels.is_empty() {
        return vec![format!(
            "min_agreement: no query of the run has a label in `{relative}` (`{{\"id\": …, \"labels\": {{\"<metric>\": value}}}}` lines, or a dataset's `outputs.labels`)"
        )];
    }
    // A label of a metric the case does not compute (a typo) would be judged against nothing.
    if let Err(e) = crate::align::check_labelled_metrics(&run) {
        return vec![format!("min_agreement: the labels of `{relative}`: {e}")];
    }
    let options = crate::align::AlignOptions {
        threshold: agreement.threshold,
        // The gate reads the statistics alone, not their intervals.
        resamples: 0,
        ..crate::align::AlignOptions::default()
    };
    crate::align::Alignment::new(&run, &options, None)
        .failures(agreement.min)
        .into_iter()
        .map(|f| format!("disagreement with the labels of `{relative}`: {f} (min_agreement)"))
        .collect()
}

fn thresholds(case: &Case, o: &Outcome, answers: Option<&answers::AnswerReport>) -> Vec<String> {
    missed_bars(case.spec.thresholds, o, answers)
}

/// One line for each judge whose invalid and failed answers exceed the case's
/// `max_invalid_share`: its figures cannot gate anything.
#[cfg(feature = "answers")]
fn unusable_judges(answers: &answers::AnswerReport) -> Vec<String> {
    answers
        .summaries
        .iter()
        .filter_map(|s| s.gate_failure("max_invalid_share"))
        .collect()
}

/// Every bar the means of `o` miss, described as [`thresholds`] does; a judged figure that
/// is missing is explained by the judge's failures in `answers`.
fn missed_bars(bars: &[Bar], o: &Outcome, answers: Option<&answers::AnswerReport>) -> Vec<String> {
    // Finite per-query figures can add up to an infinity (1e308 twice), which passes every
    // lower bar and no snapshot sees as a drop: such a mean fails the case whatever its bars.
    let mut problems: Vec<String> = o
        .metrics
        .0
        .iter()
        .filter(|(_, v)| !v.is_finite())
        .map(|(name, v)| {
            format!("the mean of {name} is {v}, not a finite number: its per-query figures are too large to add up")
        })
        .collect();
    for bar in bars {
        let metric = &*bar.metric;
        let Some(i) = bar.index_in(&o.metrics) else {
            #[cfg(feature = "answers")]
            let judged = answers
                .and_then(|a| a.summaries.iter().find(|s| s.metric == metric))
                .filter(|s| s.scored == 0 && !s.failures.is_empty())
                .map(|s| {
                    let failures: Vec<_> = s.failures.iter().map(|f| f.describe()).collect();
                    format!("judging failed for every query: {}", failures.join("; "))
                });
            #[cfg(not(feature = "answers"))]
            let judged: Option<String> = answers.map(|a| match *a {});
            let why = if let Some(why) = judged {
                why
            } else if needs_reference(metric) {
                format!(
                    "no query of the dataset has a reference answer (`outputs.reference_answer`){}",
                    without_figure(o, metric)
                )
            } else if metric == "precision_omega" {
                "precision_omega needs a corpus and a retriever that exposes its chunker, `Retriever::chunker_object`".to_owned()
            } else {
                "the case computes no such figure".to_owned()
            };
            problems.push(format!(
                "`{}` has a bar but was not computed ({why})",
                metric
            ));
            continue;
        };
        let (name, value) = (&o.metrics.0[i].0, o.metrics.0[i].1);
        if bar.passes(value) || !value.is_finite() {
            continue;
        }
        let mut worst: Vec<(f64, &str, &str)> = o
            .per_query
            .iter()
            .filter_map(|q| {
                let value = q.metrics.get(name)?;
                Some((value, q.id.as_str(), q.query.as_deref().unwrap_or_default()))
            })
            .collect();
        worst.sort_by(|a, b| bar.bound.worst_first(a.0, b.0).then_with(|| a.1.cmp(b.1)));
        let mut msg = format!(
            "{name} = {value:.4} is {} the bar {:.4} ({}); worst queries:",
            bar.bound.side_missed(),
            bar.value,
            bar.key()
        );
        for (v, id, q) in worst.iter().take(5) {
            let _ = write!(msg, "\n  {id} {v:.4} {q:?}");
        }
        msg.push_str(&without_figure(o, name));
        problems.push(msg);
    }
    problems
}

/// Whether a query without a reference answer gets no figure of `metric`.
fn needs_reference(metric: &str) -> bool {
    crate::metrics::registry::lookup(metric)
        .is_some_and(|m| m.needs(crate::metrics::Need::Reference))
}

/// The queries with no figure of `name`, left out of its mean: `\n` and a line naming them
/// (the reason for answer metrics: the row has no reference answer), empty when every query has
/// one.
fn without_figure(o: &Outcome, name: &str) -> String {
    let missing: Vec<&str> = o
        .per_query
        .iter()
        .filter(|q| q.metrics.get(name).is_none())
        .map(|q| q.id.as_str())
        .collect();
    if missing.is_empty() {
        return String::new();
    }
    let why = if needs_reference(crate::metrics::ReportedName::parse(name).metric) {
        "without a reference answer"
    } else {
        "without a figure"
    };
    const SHOWN: usize = 10;
    let mut line = format!(
        "\n  {} {} {why} (left out of the mean): {}",
        missing.len(),
        if missing.len() == 1 {
            "query"
        } else {
            "queries"
        },
        missing[..missing.len().min(SHOWN)].join(", ")
    );
    if missing.len() > SHOWN {
        let _ = write!(line, ", … and {} more", missing.len() - SHOWN);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ResultLevel;
    use private::AgreementSpec;

    /// `min_agreement` on four judged answers that people labelled pass, fail, pass, fail: the
    /// figure 0.6 of `d` passes at the threshold 0.5 and the person fails it, so κ = 0.5; at the
    /// threshold 0.7 the two agree everywhere (κ = 1).
    #[test]
    #[cfg(feature = "compare")]
    fn a_case_fails_when_its_figures_disagree_with_the_labels() {
        use crate::metrics::{Figures, QueryResult};
        let dir = tempfile::tempdir().unwrap();
        let labels = "{\"id\":\"a\",\"labels\":{\"faithfulness\":1}}\n\
                      {\"id\":\"b\",\"labels\":{\"faithfulness\":0}}\n\
                      {\"id\":\"c\",\"labels\":{\"faithfulness\":1}}\n\
                      {\"id\":\"d\",\"labels\":{\"faithfulness\":0}}\n";
        std::fs::write(dir.path().join("labels.jsonl"), labels).unwrap();
        let dataset = labels
            .replace("\"labels\":{", "\"outputs\":{\"labels\":{")
            .replace("}}", "}}}");
        std::fs::write(dir.path().join("golden.jsonl"), dataset).unwrap();
        std::fs::write(
            dir.path().join("other.jsonl"),
            "{\"id\":\"z\",\"labels\":{\"faithfulness\":1}}\n",
        )
        .unwrap();
        let query = |id: &str, v: f64| QueryResult {
            id: id.into(),
            metrics: Figures(vec![("faithfulness".into(), v)]),
            ..QueryResult::default()
        };
        let run = Outcome::from_queries(
            ResultLevel::Token,
            vec!["faithfulness".into()],
            vec![
                query("a", 1.0),
                query("b", 0.2),
                query("c", 0.9),
                query("d", 0.6),
            ],
        );
        let check = |labels: Option<&'static str>, min: f64, threshold: f64| {
            let spec = AgreementSpec {
                labels,
                min,
                threshold,
            };
            disagreements(Some(&spec), dir.path(), "golden.jsonl", &run)
        };
        assert_eq!(
            check(Some("labels.jsonl"), 0.6, 0.5),
            ["disagreement with the labels of `labels.jsonl`: faithfulness: Cohen's κ 0.5000 over 4 labelled queries is below the minimum agreement 0.6 (min_agreement)"]
        );
        assert!(check(Some("labels.jsonl"), 0.4, 0.5).is_empty());
        assert!(check(Some("labels.jsonl"), 1.0, 0.7).is_empty());
        // Without a labels file, the dataset's `outputs.labels`.
        assert_eq!(check(None, 0.6, 0.5).len(), 1);
        assert!(check(None, 0.6, 0.5)[0].contains("labels of `golden.jsonl`"));
        let none = check(Some("other.jsonl"), 0.6, 0.5);
        assert!(
            none[0].starts_with("min_agreement: no query of the run has a label in `other.jsonl`"),
            "{none:?}"
        );
        std::fs::write(
            dir.path().join("typo.jsonl"),
            "{\"id\":\"a\",\"labels\":{\"faithfulnes\":1}}\n",
        )
        .unwrap();
        let typo = check(Some("typo.jsonl"), 0.6, 0.5);
        assert!(
            typo.len() == 1
                && typo[0].starts_with("min_agreement: the labels of `typo.jsonl`")
                && typo[0].contains("`faithfulnes`")
                && typo[0].contains("the run's metrics are faithfulness"),
            "{typo:?}"
        );
        let missing = check(Some("missing.jsonl"), 0.6, 0.5);
        assert!(
            missing[0].starts_with("min_agreement: ") && missing[0].contains("missing.jsonl"),
            "{missing:?}"
        );
        assert!(disagreements(None, dir.path(), "golden.jsonl", &run).is_empty());
    }

    /// Without the agreement statistics a case that asks for them fails, naming the feature.
    #[test]
    #[cfg(not(feature = "compare"))]
    fn min_agreement_without_the_compare_feature_is_a_failure_that_names_it() {
        let spec = AgreementSpec {
            labels: None,
            min: 0.6,
            threshold: 0.5,
        };
        let run = Outcome::from_queries(ResultLevel::Token, Vec::new(), Vec::new());
        let lines = disagreements(Some(&spec), std::path::Path::new("."), "d.jsonl", &run);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains("`compare` feature"), "{lines:?}");
    }
}
