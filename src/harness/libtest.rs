//! The libtest side of the harness: the arguments `cargo test` and nextest give a test binary
//! (`--list`, `--format terse|json`, `--exact`, `--ignored`, `--include-ignored`, `--skip`,
//! name filters, `-q`, `--test-threads`, `--nocapture`, `--color`, `--logfile`), and the run of
//! the trials with libtest's output and exit code. It does what libtest-mimic did for the
//! harness without its command-line parser (clap and its derive macros are a large part of a
//! gate crate's build).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::{mpsc, Mutex};
use std::time::Instant;

/// What `--help` prints.
const USAGE: &str = "\
USAGE: [OPTIONS] [FILTERS...]

Runs the tests whose names contain any of the FILTERS (all of them without one).

Options:
      --include-ignored      Run ignored tests too
      --ignored              Run only ignored tests
      --list                 List all tests
      --exact                Match FILTERS and --skip exactly rather than by substring
      --skip FILTER          Skip tests whose names contain FILTER (repeatable)
  -q, --quiet                One character per test; the same as --format terse
      --format FORMAT        pretty, terse or json
      --test-threads N       Number of threads running tests (1: all on the main thread)
      --color WHEN           auto, always or never
      --logfile PATH         Write the output to PATH instead of standard output
      --nocapture            Accepted; the output of tests is never captured
      --show-output          Accepted; the output of tests is never captured
      --test                 Accepted; every trial is a test
  -h, --help                 Print this help
";

/// How the run is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Format {
    /// A line per test.
    #[default]
    Pretty,
    /// A character per test.
    Terse,
    /// libtest's JSON events, one a line.
    Json,
}

/// The libtest arguments the harness honours.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Arguments {
    pub(crate) list: bool,
    pub(crate) ignored: bool,
    pub(crate) include_ignored: bool,
    pub(crate) exact: bool,
    pub(crate) format: Format,
    /// `--format` was given (`-q` alone leaves the harness its own screen).
    pub(crate) format_given: bool,
    pub(crate) test_threads: Option<usize>,
    pub(crate) color: Option<bool>,
    pub(crate) logfile: Option<String>,
    pub(crate) skip: Vec<String>,
    /// The name filters: a test runs when it matches any of them (all run without one).
    pub(crate) filters: Vec<String>,
}

impl Arguments {
    /// The arguments after the program name, `None` when `--help` was asked for.
    pub(crate) fn parse(
        args: impl IntoIterator<Item = String>,
    ) -> Result<Option<Arguments>, String> {
        let mut parsed = Arguments::default();
        let (mut quiet, mut format) = (false, None);
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
                _ => (arg.as_str(), None),
            };
            let mut value = |name: &str| {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| format!("`{name}` needs a value"))
            };
            match flag {
                "-h" | "--help" => return Ok(None),
                "--list" => parsed.list = true,
                "--ignored" => parsed.ignored = true,
                "--include-ignored" => parsed.include_ignored = true,
                "--exact" => parsed.exact = true,
                "-q" | "--quiet" => quiet = true,
                "--nocapture" | "--show-output" | "--test" => {}
                "-Z" => {
                    value("-Z")?;
                }
                "--format" => {
                    format = Some(match value("--format")?.as_str() {
                        "pretty" => Format::Pretty,
                        "terse" => Format::Terse,
                        "json" => Format::Json,
                        other => {
                            return Err(format!(
                                "`--format {other}`: expected pretty, terse or json"
                            ))
                        }
                    })
                }
                "--test-threads" => {
                    let n = value("--test-threads")?;
                    match n.parse::<usize>() {
                        Ok(n) if n > 0 => parsed.test_threads = Some(n),
                        _ => {
                            return Err(format!(
                                "`--test-threads {n}`: expected a number of threads above 0"
                            ))
                        }
                    }
                }
                "--color" => {
                    parsed.color = match value("--color")?.as_str() {
                        "auto" => None,
                        "always" => Some(true),
                        "never" => Some(false),
                        other => {
                            return Err(format!(
                                "`--color {other}`: expected auto, always or never"
                            ))
                        }
                    }
                }
                "--logfile" => parsed.logfile = Some(value("--logfile")?),
                "--skip" => parsed.skip.push(value("--skip")?),
                _ if arg.starts_with('-') => return Err(format!("unknown option `{arg}`")),
                _ => parsed.filters.push(arg),
            }
        }
        if quiet && format.is_some_and(|f| f != Format::Terse) {
            return Err("`-q` and `--format` conflict".to_owned());
        }
        parsed.format_given = format.is_some();
        parsed.format = if quiet {
            Format::Terse
        } else {
            format.unwrap_or_default()
        };
        Ok(Some(parsed))
    }

    /// The process's arguments; `--help` prints the usage and a mistake the usage with the
    /// mistake, both ending the process (0 and 2, as libtest).
    pub(crate) fn from_env() -> Result<Arguments, ExitCode> {
        match Self::parse(std::env::args().skip(1)) {
            Ok(Some(args)) => Ok(args),
            Ok(None) => {
                print!("{USAGE}");
                Err(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("error: {e}\n\n{USAGE}");
                Err(ExitCode::from(2))
            }
        }
    }

    /// Whether a test whose name starts with `prefix` may run: not when `--exact` filters
    /// (nextest's, each process given its one test) name none such. A listing lists them all.
    pub(crate) fn may_run_under(&self, prefix: &str) -> bool {
        self.list
            || !self.exact
            || self.filters.is_empty()
            || self.filters.iter().any(|f| f.starts_with(prefix))
    }

    /// Whether the name filters (`FILTERS`, `--skip`) or `--ignored` leave `trial` out of the
    /// run: as libtest, a test runs when it matches any filter and no `--skip`.
    pub(crate) fn is_filtered_out(&self, trial: &Trial) -> bool {
        let matches = |filter: &str| match self.exact {
            true => trial.name == filter,
            false => trial.name.contains(filter),
        };
        (!self.filters.is_empty() && !self.filters.iter().any(|f| matches(f)))
            || self.skip.iter().any(|s| matches(s))
            || (self.ignored && !trial.ignored)
    }
}

/// How a test that did not fail ended.
#[derive(Debug)]
pub(crate) enum Completion {
    /// It ran and passed.
    Completed,
    /// It decided at run time not to judge, for a reason shown beside `ignored`.
    Ignored { reason: String },
}

impl Completion {
    pub(crate) fn ignored_with(reason: impl ToString) -> Self {
        Completion::Ignored {
            reason: reason.to_string(),
        }
    }
}

/// A failed test, with what to print under its name.
#[derive(Debug)]
pub(crate) struct Failed {
    message: String,
}

impl Failed {
    pub(crate) fn message(&self) -> &str {
        &self.message
    }
}

impl<M: std::fmt::Display> From<M> for Failed {
    fn from(message: M) -> Self {
        Failed {
            message: message.to_string(),
        }
    }
}

type Runner = Box<dyn FnOnce() -> Result<Completion, Failed> + Send>;

/// A named test: a function run once, on some thread of the run.
pub(crate) struct Trial {
    name: String,
    ignored: bool,
    runner: Runner,
}

impl Trial {
    pub(crate) fn ignorable_test(
        name: String,
        runner: impl FnOnce() -> Result<Completion, Failed> + Send + 'static,
    ) -> Self {
        Trial {
            name,
            ignored: false,
            runner: Box::new(runner),
        }
    }

    /// Marked `#[ignore]`: run only with `--ignored` or `--include-ignored`.
    pub(crate) fn with_ignored_flag(self, ignored: bool) -> Self {
        Trial { ignored, ..self }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn has_ignored_flag(&self) -> bool {
        self.ignored
    }
}

/// A test's end as printed and counted.
enum Outcome {
    Passed,
    Failed(String),
    Ignored(Option<String>),
}

/// The counts of a run, as libtest's last line gives them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Conclusion {
    pub(crate) passed: u64,
    pub(crate) failed: u64,
    pub(crate) ignored: u64,
    pub(crate) filtered_out: u64,
}

impl Conclusion {
    /// 101 when a test failed, as libtest.
    pub(crate) fn exit_code(&self) -> ExitCode {
        match self.failed {
            0 => ExitCode::SUCCESS,
            _ => ExitCode::from(101),
        }
    }
}

/// Lists or runs `trials` as `args` say, printing libtest's output.
pub(crate) fn run(args: &Arguments, mut trials: Vec<Trial>) -> Conclusion {
    let started = Instant::now();
    let before = trials.len();
    trials.retain(|t| !args.is_filtered_out(t));
    let mut conclusion = Conclusion {
        filtered_out: (before - trials.len()) as u64,
        ..Conclusion::default()
    };
    let mut out = Printer::new(args, &trials);
    if args.list {
        for t in &trials {
            out.line(format_args!("{}: test", t.name));
        }
        return Conclusion::default();
    }
    out.title(trials.len());
    let mut failures = Vec::new();
    let mut finish = |name: String, outcome: Outcome, out: &mut Printer| {
        out.outcome(&name, &outcome);
        match outcome {
            Outcome::Passed => conclusion.passed += 1,
            Outcome::Ignored(_) => conclusion.ignored += 1,
            Outcome::Failed(message) => {
                conclusion.failed += 1;
                failures.push((name, message));
            }
        }
    };
    let skipped = |t: &Trial| t.ignored && !args.ignored && !args.include_ignored;
    let threads = args
        .test_threads
        .or_else(|| std::thread::available_parallelism().ok().map(Into::into))
        .unwrap_or(1);
    if threads == 1 {
        for t in trials {
            out.started(&t.name);
            let outcome = if skipped(&t) {
                Outcome::Ignored(None)
            } else {
                run_one(t.runner)
            };
            finish(t.name, outcome, &mut out);
        }
    } else {
        let count = trials.len();
        let (sender, receiver) = mpsc::channel();
        let queue = Mutex::new(trials.into_iter());
        std::thread::scope(|scope| {
            for _ in 0..threads {
                let sender = sender.clone();
                let (queue, skipped) = (&queue, &skipped);
                scope.spawn(move || loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some(t) = next else { break };
                    let outcome = if skipped(&t) {
                        Outcome::Ignored(None)
                    } else {
                        run_one(t.runner)
                    };
                    if sender.send((t.name, outcome)).is_err() {
                        break;
                    }
                });
            }
            for (name, outcome) in receiver.iter().take(count) {
                out.started(&name);
                finish(name, outcome, &mut out);
            }
        });
    }
    out.failures(&failures);
    out.summary(&conclusion, started.elapsed().as_secs_f64());
    conclusion
}

/// Runs a test, a panic failing it with the panic's message.
fn run_one(runner: Runner) -> Outcome {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(runner));
    match result {
        Ok(Ok(Completion::Completed)) => Outcome::Passed,
        Ok(Ok(Completion::Ignored { reason })) => Outcome::Ignored(Some(reason)),
        Ok(Err(failed)) => Outcome::Failed(failed.message),
        Err(panic) => {
            let payload = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied());
            Outcome::Failed(match payload {
                Some(payload) => format!("test panicked: {payload}"),
                None => "test panicked".to_owned(),
            })
        }
    }
}

/// libtest's output, in the format asked for, coloured on a terminal.
struct Printer {
    out: Box<dyn Write>,
    format: Format,
    color: bool,
    width: usize,
}

impl Printer {
    fn new(args: &Arguments, trials: &[Trial]) -> Self {
        let file = args
            .logfile
            .as_ref()
            .and_then(|path| match std::fs::File::create(path) {
                Ok(file) => Some(file),
                Err(e) => {
                    eprintln!(
                        "error: cannot create the log file {path}: {e}; writing to standard output"
                    );
                    None
                }
            });
        let color = args
            .color
            .unwrap_or(file.is_none() && std::io::stdout().is_terminal());
        let out: Box<dyn Write> = match file {
            Some(file) => Box::new(file),
            None => Box::new(std::io::stdout()),
        };
        Printer {
            out,
            format: args.format,
            color,
            width: trials
                .iter()
                .map(|t| t.name.chars().count())
                .max()
                .unwrap_or(0),
        }
    }

    /// Writes `text`; a closed output (a pipe whose reader left) is not the tests' failure.
    fn write(&mut self, text: std::fmt::Arguments<'_>) {
        let _ = self.out.write_fmt(text).and_then(|()| self.out.flush());
    }

    fn line(&mut self, text: std::fmt::Arguments<'_>) {
        self.write(format_args!("{text}\n"));
    }

    fn title(&mut self, count: usize) {
        match self.format {
            Format::Json => self.line(format_args!(
                r#"{{ "type": "suite", "event": "started", "test_count": {count} }}"#
            )),
            _ => {
                let s = if count == 1 { "" } else { "s" };
                self.write(format_args!("\nrunning {count} test{s}\n"));
            }
        }
    }

    fn started(&mut self, name: &str) {
        match self.format {
            Format::Pretty => {
                let width = self.width;
                self.write(format_args!("test {name: <width$} ... "));
            }
            Format::Terse => {}
            Format::Json => self.line(format_args!(
                r#"{{ "type": "test", "event": "started", "name": {} }}"#,
                json(name)
            )),
        }
    }

    /// `text` in the colour of `outcome` when colouring.
    fn painted(&self, outcome: &Outcome, text: &str) -> String {
        let code = match outcome {
            Outcome::Passed => 32,
            Outcome::Failed(_) => 31,
            Outcome::Ignored(_) => 33,
        };
        match self.color {
            true => format!("\x1b[{code}m{text}\x1b[0m"),
            false => text.to_owned(),
        }
    }

    fn word(&self, outcome: &Outcome) -> String {
        match outcome {
            Outcome::Passed => self.painted(outcome, "ok"),
            Outcome::Failed(_) => self.painted(outcome, "FAILED"),
            Outcome::Ignored(None) => self.painted(outcome, "ignored"),
            Outcome::Ignored(Some(reason)) => self.painted(outcome, &format!("ignored ({reason})")),
        }
    }

    fn outcome(&mut self, name: &str, outcome: &Outcome) {
        match self.format {
            Format::Pretty => {
                let word = self.word(outcome);
                self.line(format_args!("{word}"));
            }
            Format::Terse => {
                let mark = match outcome {
                    Outcome::Passed => ".",
                    Outcome::Failed(_) => "F",
                    Outcome::Ignored(_) => "i",
                };
                let mark = self.painted(outcome, mark);
                self.write(format_args!("{mark}"));
            }
            Format::Json => {
                let (event, stdout) = match outcome {
                    Outcome::Passed => ("ok", String::new()),
                    Outcome::Ignored(_) => ("ignored", String::new()),
                    Outcome::Failed(message) => (
                        "failed",
                        format!(
                            r#", "stdout": {}"#,
                            json(&format!("Error: \"{message}\"\n"))
                        ),
                    ),
                };
                self.line(format_args!(
                    r#"{{ "type": "test", "name": {}, "event": "{event}"{stdout} }}"#,
                    json(name)
                ));
            }
        }
    }

    fn failures(&mut self, failures: &[(String, String)]) {
        if failures.is_empty() || self.format == Format::Json {
            return;
        }
        self.write(format_args!("\nfailures:\n\n"));
        for (name, message) in failures {
            self.write(format_args!("---- {name} ----\n{message}\n\n"));
        }
        self.write(format_args!("\nfailures:\n"));
        for (name, _) in failures {
            self.line(format_args!("    {name}"));
        }
    }

    fn summary(&mut self, c: &Conclusion, seconds: f64) {
        let Conclusion {
            passed,
            failed,
            ignored,
            filtered_out,
        } = c;
        if self.format == Format::Json {
            let event = if *failed > 0 { "failed" } else { "ok" };
            self.line(format_args!(
                r#"{{ "type": "suite", "event": "{event}", "passed": {passed}, "failed": {failed}, "ignored": {ignored}, "measured": 0, "filtered_out": {filtered_out}, "exec_time": {seconds} }}"#
            ));
            return;
        }
        let verdict = match failed {
            0 => self.word(&Outcome::Passed),
            _ => self.word(&Outcome::Failed(String::new())),
        };
        self.write(format_args!(
            "\ntest result: {verdict}. {passed} passed; {failed} failed; {ignored} ignored; \
             0 measured; {filtered_out} filtered out; finished in {seconds:.2}s\n\n"
        ));
    }
}

/// `text` as a JSON string.
fn json(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Arguments>, String> {
        Arguments::parse(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn the_arguments_cargo_test_and_nextest_give_are_read() {
        let args = parse(&[
            "--exact",
            "case::q1",
            "--nocapture",
            "--include-ignored",
            "--test-threads=2",
            "--skip",
            "summary",
            "--skip=upload",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            args,
            Arguments {
                exact: true,
                include_ignored: true,
                test_threads: Some(2),
                skip: vec!["summary".into(), "upload".into()],
                filters: vec!["case::q1".into()],
                ..Arguments::default()
            }
        );
        let listing = parse(&["--list", "--format", "terse", "--ignored"])
            .unwrap()
            .unwrap();
        assert!(listing.list && listing.ignored);
        assert_eq!(
            (listing.format, listing.format_given),
            (Format::Terse, true)
        );
        let quiet = parse(&["-q"]).unwrap().unwrap();
        assert_eq!((quiet.format, quiet.format_given), (Format::Terse, false));
        assert_eq!(
            parse(&[
                "--format=json",
                "-Z",
                "unstable-options",
                "--color",
                "never"
            ])
            .unwrap()
            .unwrap(),
            Arguments {
                format: Format::Json,
                format_given: true,
                color: Some(false),
                ..Arguments::default()
            }
        );
        assert_eq!(parse(&["--help"]), Ok(None));
    }

    #[test]
    fn a_mistake_in_the_arguments_is_named() {
        for (args, said) in [
            (&["--frobnicate"][..], "unknown option `--frobnicate`"),
            (
                &["--format", "xml"],
                "`--format xml`: expected pretty, terse or json",
            ),
            (&["--test-threads", "0"], "`--test-threads 0`"),
            (&["--skip"], "`--skip` needs a value"),
            (&["-q", "--format", "json"], "`-q` and `--format` conflict"),
        ] {
            let error = parse(args).unwrap_err();
            assert!(error.contains(said), "{args:?}: {error}");
        }
    }

    fn trial(name: &str, ignored: bool) -> Trial {
        Trial::ignorable_test(name.to_owned(), || Ok(Completion::Completed))
            .with_ignored_flag(ignored)
    }

    #[test]
    fn filters_select_by_substring_or_exactly() {
        let names = |args: &[&str]| -> Vec<String> {
            let args = parse(args).unwrap().unwrap();
            [
                trial("case::q1", false),
                trial("case::q10", false),
                trial("case::summary", false),
                trial("slow::summary", true),
            ]
            .into_iter()
            .filter(|t| !args.is_filtered_out(t))
            .map(|t| t.name)
            .collect()
        };
        assert_eq!(names(&["case::q1"]), ["case::q1", "case::q10"]);
        assert_eq!(names(&["--exact", "case::q1"]), ["case::q1"]);
        assert_eq!(names(&["--skip", "summary"]), ["case::q1", "case::q10"]);
        assert_eq!(
            names(&["--exact", "--skip", "case::q1"]),
            ["case::q10", "case::summary", "slow::summary"]
        );
        assert_eq!(names(&["--ignored"]), ["slow::summary"]);
        // Several filters, as libtest: any of them, each exactly with `--exact`.
        assert_eq!(
            names(&["case::q10", "slow"]),
            ["case::q10", "slow::summary"]
        );
        assert_eq!(
            names(&["--exact", "case::q1", "case::summary"]),
            ["case::q1", "case::summary"]
        );
        assert_eq!(names(&["--exact", "case::q", "summary"]), [] as [&str; 0]);
        assert_eq!(
            names(&["case", "--skip", "q1", "--skip", "summary"]),
            [] as [&str; 0]
        );
        assert_eq!(
            names(&["q1", "summary", "--skip", "slow"]),
            ["case::q1", "case::q10", "case::summary"]
        );
    }

    #[test]
    fn only_exact_filters_rule_out_a_prefix() {
        let may = |args: &[&str], prefix: &str| parse(args).unwrap().unwrap().may_run_under(prefix);
        assert!(may(&["--exact", "case::q1"], "case::"));
        assert!(!may(&["--exact", "case::q1"], "slow::"));
        assert!(!may(&["--exact", "case::q1", "--nocapture"], "cas::"));
        assert!(may(&["--exact", "case::q1", "slow::summary"], "slow::"));
        // A substring may fall anywhere in a name; no filter runs every test; a listing lists.
        assert!(may(&["q1"], "slow::"));
        assert!(may(&["--exact"], "slow::"));
        assert!(may(&["--exact", "case::q1", "--list"], "slow::"));
    }

    #[test]
    fn a_run_counts_passes_failures_panics_and_ignored_tests() {
        let log = tempfile::tempdir().unwrap();
        let log = log.path().join("out.txt");
        let log = log.to_str().unwrap();
        for threads in ["1", "3"] {
            let trials = vec![
                trial("a::passes", false),
                Trial::ignorable_test("a::fails".into(), || Err("a bar was missed".into())),
                Trial::ignorable_test("a::panics".into(), || panic!("boom")),
                Trial::ignorable_test("a::decides".into(), || {
                    Ok(Completion::ignored_with("no baseline"))
                }),
                trial("a::slow", true),
                trial("b::other", false),
            ];
            let args = parse(&["a::", "--test-threads", threads, "--logfile", log])
                .unwrap()
                .unwrap();
            let conclusion = run(&args, trials);
            assert_eq!(
                conclusion,
                Conclusion {
                    passed: 1,
                    failed: 2,
                    ignored: 2,
                    filtered_out: 1,
                },
                "{threads} threads"
            );
            assert_eq!(conclusion.exit_code(), ExitCode::from(101));
        }
        let args = parse(&["--include-ignored", "--logfile", log])
            .unwrap()
            .unwrap();
        let conclusion = run(&args, vec![trial("a::slow", true)]);
        assert_eq!(conclusion.passed, 1);
        assert_eq!(conclusion.exit_code(), ExitCode::SUCCESS);
    }

    #[test]
    fn the_output_is_libtests() {
        let log = tempfile::tempdir().unwrap();
        let output = |args: &[&str]| {
            let path = log.path().join("out.txt");
            let mut args: Vec<&str> = args.to_vec();
            args.extend(["--logfile", path.to_str().unwrap(), "--test-threads", "1"]);
            let args = parse(&args).unwrap().unwrap();
            run(
                &args,
                vec![
                    trial("case::q1", false),
                    Trial::ignorable_test("case::summary".into(), || Err("mrr 0.4 < 0.5".into())),
                    Trial::ignorable_test("case::upload".into(), || {
                        Ok(Completion::ignored_with("no key"))
                    }),
                ],
            );
            let text = std::fs::read_to_string(&path).unwrap();
            // The run's duration is the one figure that varies.
            text.split("finished in").next().unwrap().to_owned()
        };
        assert_eq!(
            output(&[]),
            "\nrunning 3 tests\n\
             test case::q1      ... ok\n\
             test case::summary ... FAILED\n\
             test case::upload  ... ignored (no key)\n\
             \nfailures:\n\n---- case::summary ----\nmrr 0.4 < 0.5\n\n\
             \nfailures:\n    case::summary\n\
             \ntest result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; "
        );
        assert_eq!(
            output(&["-q", "--color", "always"]),
            "\nrunning 3 tests\n\x1b[32m.\x1b[0m\x1b[31mF\x1b[0m\x1b[33mi\x1b[0m\
             \nfailures:\n\n---- case::summary ----\nmrr 0.4 < 0.5\n\n\
             \nfailures:\n    case::summary\n\
             \ntest result: \x1b[31mFAILED\x1b[0m. 1 passed; 1 failed; 1 ignored; 0 measured; \
             0 filtered out; "
        );
        assert_eq!(
            output(&["--list", "--format", "terse", "--exact", "case::q1"]),
            "case::q1: test\n"
        );
        let events: Vec<serde_json::Value> = output(&["--format", "json", "summary"])
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect();
        assert_eq!(
            events[..3],
            [
                serde_json::json!({"type": "suite", "event": "started", "test_count": 1}),
                serde_json::json!({"type": "test", "event": "started", "name": "case::summary"}),
                serde_json::json!({"type": "test", "name": "case::summary", "event": "failed",
                    "stdout": "Error: \"mrr 0.4 < 0.5\"\n"}),
            ]
        );
        assert_eq!(events[3]["event"], "failed");
        assert_eq!(events[3]["filtered_out"], 2);
    }
}
