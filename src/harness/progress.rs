//! A progress line on standard error while cases compute: the screen comes once every test has
//! finished, and a case of 2,000 questions with judges would otherwise be silent for minutes.
//! The command line's long commands (`eval`, `score`, `generate`) show the same line.
//!
//! The line names each case (or command) being computed, its stage (`index`, `retrieve`,
//! `generate`, `judge <metric>`), what the stage has done of its total and the time since the
//! case began: `recursive_400: judge faithfulness 120/2000 queries, 1m05s`. On a terminal it is
//! one line rewritten in place from the first second and wiped when the last case is done;
//! elsewhere (a CI log) a line is written after five seconds and then every ten. Of the
//! harness, only its own screen has it: not `--format json|terse`, `-q`, `--list`,
//! `--logfile`, nor a process of nextest's that runs one test.

use super::libtest::{Arguments, Format};
use crate::chunk::RetrievedChunk;
use crate::corpus::Corpus;
use crate::level::Level;
use crate::retrieve::Retriever;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// On a terminal: the line appears once a case has run this long, and is rewritten this often.
const TERMINAL_DELAY: Duration = Duration::from_secs(1);
const TERMINAL_EVERY: Duration = Duration::from_millis(250);
/// Elsewhere: the first line after this long, then one line every [`LOG_EVERY`].
const LOG_DELAY: Duration = Duration::from_secs(5);
const LOG_EVERY: Duration = Duration::from_secs(10);
/// A terminal line is cut to this many characters, so that it never wraps (and then cannot be
/// rewritten in place) on an ordinary terminal.
const TERMINAL_WIDTH: usize = 100;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Shows the progress of the cases computed from now on when the run prints the harness's own
/// screen (`screen`) in full: not with `-q`, whose screen is a character per test.
pub(crate) fn enable_for(args: &Arguments, screen: bool) {
    ENABLED.store(wanted(args, screen), Ordering::Relaxed);
}

/// Shows the progress of what is computed from now on, whatever standard error is: for the
/// command line, whose output goes to standard output.
#[cfg(feature = "cli")]
pub(crate) fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

fn wanted(args: &Arguments, screen: bool) -> bool {
    screen && args.format == Format::Pretty
}

/// One case being computed: its stage, and what the stage has done of its total.
pub(crate) struct Task {
    case: String,
    started: Instant,
    stage: Mutex<Stage>,
    done: AtomicUsize,
}

/// A stage's name, its total and what it counts (`queries`, `documents`).
#[derive(Clone)]
struct Stage {
    name: String,
    total: usize,
    unit: &'static str,
}

impl Task {
    /// `case`'s task, beginning now with `stage` over `total` queries.
    pub(crate) fn new(case: &str, stage: &str, total: usize) -> Arc<Task> {
        Arc::new(Task {
            case: case.to_owned(),
            started: Instant::now(),
            stage: Mutex::new(Stage {
                name: stage.to_owned(),
                total,
                unit: "queries",
            }),
            done: AtomicUsize::new(0),
        })
    }

    /// Begins `stage` over `total` queries, none done yet.
    pub(crate) fn stage(&self, stage: &str, total: usize) {
        self.stage_of(stage, total, "queries");
    }

    /// Begins `stage` over `total` of `unit` (`documents`), none done yet.
    pub(crate) fn stage_of(&self, stage: &str, total: usize, unit: &'static str) {
        *lock(&self.stage) = Stage {
            name: stage.to_owned(),
            total,
            unit,
        };
        self.done.store(0, Ordering::Relaxed);
    }

    /// `n` more queries of the stage are done.
    pub(crate) fn add(&self, n: usize) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// `n` queries of the stage are done.
    fn set(&self, n: usize) {
        self.done.store(n, Ordering::Relaxed);
    }

    /// The task as its line shows it, `elapsed` after it began.
    pub(crate) fn line(&self, elapsed: Duration) -> String {
        let stage = lock(&self.stage).clone();
        let done = self.done.load(Ordering::Relaxed).min(stage.total);
        line(&self.case, &stage, done, elapsed)
    }
}

/// `case: stage done/total unit, elapsed`; the count is left out when the stage has none.
fn line(case: &str, stage: &Stage, done: usize, elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    let time = match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, secs % 3600 / 60),
    };
    let Stage { name, total, unit } = stage;
    match total {
        0 => format!("{case}: {name}, {time}"),
        _ => format!("{case}: {name} {done}/{total} {unit}, {time}"),
    }
}

/// When a line is due, on a terminal or elsewhere, by the time since the cases began.
#[derive(Debug)]
struct Meter {
    terminal: bool,
    last: Option<Duration>,
}

impl Meter {
    fn new(terminal: bool) -> Self {
        Meter {
            terminal,
            last: None,
        }
    }

    /// Whether a line is due `now` after the cases began; if so, it counts as written.
    fn due(&mut self, now: Duration) -> bool {
        let (delay, every) = match self.terminal {
            true => (TERMINAL_DELAY, TERMINAL_EVERY),
            false => (LOG_DELAY, LOG_EVERY),
        };
        let due = now >= delay && self.last.is_none_or(|last| now >= last + every);
        if due {
            self.last = Some(now);
        }
        due
    }
}

/// The cases being computed and what the terminal shows of them.
struct Board {
    tasks: Vec<Arc<Task>>,
    /// When the oldest of the cases being computed began, and the meter since then.
    since: Instant,
    meter: Meter,
    /// A terminal line is on the screen, to be wiped before anything else is printed.
    shown: bool,
}

impl Board {
    /// The line of every case being computed, when one is due `now`.
    fn tick(&mut self, now: Instant) -> Option<String> {
        if self.tasks.is_empty() || !self.meter.due(now.duration_since(self.since)) {
            return None;
        }
        let line = self
            .tasks
            .iter()
            .map(|t| t.line(now.duration_since(t.started)))
            .collect::<Vec<_>>()
            .join("; ");
        Some(match self.meter.terminal {
            true => {
                self.shown = true;
                format!("\r\x1b[K{}", cut(&line, TERMINAL_WIDTH))
            }
            false => format!("{line}\n"),
        })
    }

    /// Takes `task` off the board; what wipes the terminal line when it was the last.
    fn remove(&mut self, task: &Arc<Task>) -> Option<&'static str> {
        self.tasks.retain(|t| !Arc::ptr_eq(t, task));
        if !self.tasks.is_empty() {
            return None;
        }
        self.meter.last = None;
        std::mem::take(&mut self.shown).then_some("\r\x1b[K")
    }
}

/// `line` cut to `width` characters, ending with `…` when cut.
fn cut(line: &str, width: usize) -> String {
    match line.char_indices().nth(width.saturating_sub(1)) {
        Some((at, _)) if line.chars().count() > width => format!("{}…", &line[..at]),
        _ => line.to_owned(),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn board() -> &'static Mutex<Board> {
    static BOARD: OnceLock<Mutex<Board>> = OnceLock::new();
    BOARD.get_or_init(|| {
        let terminal = std::io::stderr().is_terminal();
        // The one thread that writes the line, for as long as the process lives.
        let tick = if terminal { TERMINAL_EVERY } else { LOG_EVERY };
        std::thread::spawn(move || loop {
            std::thread::sleep(tick.min(LOG_DELAY) / 2);
            let mut board = lock(board());
            if let Some(text) = board.tick(Instant::now()) {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(text.as_bytes());
                let _ = err.flush();
            }
        });
        Mutex::new(Board {
            tasks: Vec::new(),
            since: Instant::now(),
            meter: Meter::new(terminal),
            shown: false,
        })
    })
}

/// A case on the progress line until dropped.
pub(crate) struct Shown(Arc<Task>);

impl Shown {
    pub(crate) fn task(&self) -> &Arc<Task> {
        &self.0
    }
}

impl Drop for Shown {
    fn drop(&mut self) {
        if let Some(wipe) = lock(board()).remove(&self.0) {
            let _ = std::io::stderr().write_all(wipe.as_bytes());
        }
    }
}

/// `case` on the progress line, beginning `stage` over `total` queries; `None` when the run
/// shows no progress.
pub(crate) fn show(case: &str, stage: &str, total: usize) -> Option<Shown> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    let task = Task::new(case, stage, total);
    let mut board = lock(board());
    if board.tasks.is_empty() {
        board.since = task.started;
    }
    board.tasks.push(task.clone());
    Some(Shown(task))
}

/// How a case's retriever's queries are counted on the progress line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    /// Each query through [`Retriever::retrieve`](crate::retrieve::Retriever::retrieve) (the retriever has no batch of its own).
    EachQuery,
    /// A batch when it returns (the retriever embeds or scores the queries together).
    Batch,
    #[cfg_attr(not(feature = "answers"), allow(dead_code))]
    /// Elsewhere, as each answer is kept (a case that answers); a batch that returns has
    /// done them all.
    Answers,
}

/// How a case's retriever shows on its task's line: its indexing as the stage `index`, then
/// its queries as `stage` over `total`, counted as `count`.
#[derive(Clone)]
pub(crate) struct Counting {
    task: Arc<Task>,
    stage: &'static str,
    total: usize,
    count: Count,
}

impl Counting {
    pub(crate) fn new(task: Arc<Task>, stage: &'static str, total: usize, count: Count) -> Self {
        Counting {
            task,
            stage,
            total,
            count,
        }
    }

    pub(crate) fn indexing(&self) {
        self.task.stage("index", 0);
    }

    pub(crate) fn indexed(&self) {
        self.task.stage(self.stage, self.total);
    }

    /// Whether each query is to go through [`Retriever::retrieve`](crate::retrieve::Retriever::retrieve) alone, to be counted.
    pub(crate) fn one_by_one(&self) -> bool {
        self.count == Count::EachQuery
    }

    /// A query went through [`Retriever::retrieve`](crate::retrieve::Retriever::retrieve).
    pub(crate) fn retrieved(&self) {
        if self.one_by_one() {
            self.task.add(1);
        }
    }

    /// A batch of `n` queries returned.
    pub(crate) fn batch(&self, n: usize) {
        if !self.one_by_one() {
            self.task.set(n);
        }
    }
}

/// `inner` shown on the progress line as `counting` says (not at all without it): its
/// indexing as the stage `index`, then its queries.
pub(crate) struct Counted<'a, R: ?Sized> {
    pub(crate) inner: &'a R,
    pub(crate) counting: Option<&'a Counting>,
}

#[async_trait::async_trait]
impl<L: Level, R: Retriever<L> + ?Sized> Retriever<L> for Counted<'_, R> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn spec(&self) -> crate::spec::Value {
        self.inner.spec()
    }
    fn chunker(&self) -> Option<crate::spec::Value> {
        self.inner.chunker()
    }
    fn chunker_object(&self) -> Option<&dyn crate::chunker::PositionAwareChunker> {
        self.inner.chunker_object()
    }
    fn indexed_spans(&self) -> Option<Vec<crate::span::CharSpan>> {
        self.inner.indexed_spans()
    }
    async fn index(&self, corpus: &Arc<Corpus>) -> crate::Result<()> {
        self.counting.iter().for_each(|c| c.indexing());
        let indexed = self.inner.index(corpus).await;
        self.counting.iter().for_each(|c| c.indexed());
        indexed
    }
    async fn retrieve(&self, query: &str, k: usize) -> crate::Result<Vec<RetrievedChunk>> {
        let hits = self.inner.retrieve(query, k).await?;
        self.counting.iter().for_each(|c| c.retrieved());
        Ok(hits)
    }
    async fn retrieve_many(
        &self,
        queries: &[&str],
        k: usize,
        concurrency: usize,
    ) -> Result<Vec<Vec<RetrievedChunk>>, crate::retrieve::BatchError> {
        if self.counting.is_some_and(Counting::one_by_one) {
            return crate::retrieve::many::one_by_one(self, queries, k, concurrency).await;
        }
        let hits = self.inner.retrieve_many(queries, k, concurrency).await?;
        self.counting.iter().for_each(|c| c.batch(queries.len()));
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(case: &str, started: Instant) -> Arc<Task> {
        Arc::new(Task {
            case: case.into(),
            started,
            stage: Mutex::new(Stage {
                name: "retrieve".into(),
                total: 40,
                unit: "queries",
            }),
            done: AtomicUsize::new(0),
        })
    }

    #[test]
    fn a_line_names_the_case_the_stage_the_count_and_the_time() {
        let s = Duration::from_secs;
        let stage = |name: &str, total, unit| Stage {
            name: name.into(),
            total,
            unit,
        };
        assert_eq!(
            line(
                "recursive_400",
                &stage("judge faithfulness", 2000, "queries"),
                120,
                s(65)
            ),
            "recursive_400: judge faithfulness 120/2000 queries, 1m05s"
        );
        assert_eq!(
            line("c", &stage("index", 0, "queries"), 0, s(3)),
            "c: index, 3s"
        );
        assert_eq!(
            line(
                "c",
                &stage("retrieve", 2, "queries"),
                1,
                s(2 * 3600 + 7 * 60)
            ),
            "c: retrieve 1/2 queries, 2h07m"
        );
        assert_eq!(
            line("generate", &stage("generate", 40, "documents"), 3, s(9)),
            "generate: generate 3/40 documents, 9s"
        );
        assert_eq!(cut("abcdef", 4), "abc…");
        assert_eq!(cut("abcd", 4), "abcd");
        assert_eq!(cut("ééééé", 3), "éé…");
    }

    #[test]
    fn a_log_gets_a_line_after_five_seconds_then_every_ten() {
        let mut meter = Meter::new(false);
        let due: Vec<u64> = (0..40)
            .filter(|&s| meter.due(Duration::from_secs(s)))
            .collect();
        assert_eq!(due, [5, 15, 25, 35]);
    }

    #[test]
    fn a_terminal_line_comes_after_a_second_and_is_rewritten_four_times_a_second() {
        let mut meter = Meter::new(true);
        let due: Vec<u64> = (0..14)
            .map(|tenth| tenth * 100)
            .filter(|&ms| meter.due(Duration::from_millis(ms)))
            .collect();
        assert_eq!(due, [1000, 1300]);
    }

    #[test]
    fn the_board_counts_queries_rewrites_its_line_and_wipes_it_when_done() {
        let start = Instant::now();
        let (a, b) = (task("a", start), task("b", start + Duration::from_secs(1)));
        let mut board = Board {
            tasks: vec![a.clone(), b.clone()],
            since: start,
            meter: Meter::new(true),
            shown: false,
        };
        assert_eq!(board.tick(start + Duration::from_millis(500)), None);
        a.add(3);
        b.stage("judge faithfulness", 10);
        b.add(12);
        assert_eq!(
            board.tick(start + Duration::from_secs(2)).as_deref(),
            Some("\r\x1b[Ka: retrieve 3/40 queries, 2s; b: judge faithfulness 10/10 queries, 1s")
        );
        assert_eq!(board.remove(&a), None, "b still runs");
        assert_eq!(board.remove(&b), Some("\r\x1b[K"));
        assert_eq!(board.tick(start + Duration::from_secs(3)), None);
        // Elsewhere nothing is wiped: each line stands on its own.
        let c = task("c", start);
        let mut log = Board {
            tasks: vec![c.clone()],
            since: start,
            meter: Meter::new(false),
            shown: false,
        };
        assert_eq!(
            log.tick(start + Duration::from_secs(6)).as_deref(),
            Some("c: retrieve 0/40 queries, 6s\n")
        );
        assert_eq!(log.remove(&c), None);
    }

    #[test]
    fn only_the_harnesss_full_screen_shows_progress() {
        let shows = |a: &[&str], one_test_per_process: bool| {
            let mut args = Arguments::parse(a.iter().map(|s| s.to_string()))
                .unwrap()
                .unwrap();
            let screen = super::super::screen::take_over(&mut args, one_test_per_process);
            wanted(&args, screen)
        };
        assert!(shows(&["case::"], false));
        for quiet in [
            &["-q"][..],
            &["--quiet"],
            &["--format", "json"],
            &["--format", "terse"],
        ] {
            assert!(!shows(quiet, false), "{quiet:?}");
        }
        assert!(!shows(&["--list"], false));
        assert!(!shows(&["--logfile", "out.txt"], false));
        assert!(!shows(&["case::q1"], true), "a process of nextest's");
    }
}
