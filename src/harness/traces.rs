//! Cases gated by traces (`#[rag_eval(traces = "PATH")]`): the case's function is the system
//! under test, instrumented with OpenTelemetry; the harness runs every row through it, takes
//! the traces it exported to the harness's receiver, and scores what they say as an answers
//! case scores its answers.
//!
//! One receiver per process, on a free loopback port, started before any case runs when a
//! case of the binary has `traces` (an OpenTelemetry SDK reads `OTEL_EXPORTER_OTLP_*` when its
//! exporter is built, usually once per process, so they must be set before any system starts
//! and while no other thread reads the environment). Traces cases run their systems one at a
//! time, and each takes the requests received from its first call until its last row's trace
//! arrived: its window. A span a system exports after its case's window closed (past the
//! timeout) lands in the next traces case's window, where it matches no row.
//!
//! Record and replay follow the provider cache's words: `RAG_EVAL_TRACES` (else
//! `RAG_EVAL_CACHE`) is `rw` (default: run the system and write the traces it sent to the
//! case's file, atomically, as OTLP JSON lines), `off` (run it, write nothing) or `replay`
//! (call nothing: score the file; a missing file is an error naming it).

use super::private::{CaseSpec, TracesSystem};
use crate::answers::Answers;
use crate::corpus::Corpus;
use crate::generator::RagAnswer;
use crate::traces::otlp::SpanReader;
use crate::traces::receiver::Received;
use crate::traces::{self, Join, MappedTrace, Options, RetrievalRule};
use camino::Utf8PathBuf;
use futures_util::stream::{self, StreamExt};
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The variable that chooses between recording and replaying traces; unset, the provider
/// cache's [`MODE_ENV`] decides for both.
pub const TRACES_MODE_ENV: &str = "RAG_EVAL_TRACES";

/// The provider cache's mode variable, whose words traces take too.
const MODE_ENV: &str = "RAG_EVAL_CACHE";

/// The endpoint variable every OpenTelemetry SDK reads for its OTLP exporter.
pub const ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// The traces-only endpoint, which SDKs prefer to [`ENDPOINT_ENV`]: set too, so a value of the
/// user's does not divert the traces.
const TRACES_ENDPOINT_ENV: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";

/// How long the batch span processor waits between exports, in milliseconds (the SDKs'
/// default is 5000): set short so that traces arrive promptly.
const BSP_DELAY_ENV: &str = "OTEL_BSP_SCHEDULE_DELAY";

/// The harness's batch delay, in milliseconds.
const BSP_DELAY_MS: &str = "100";

/// How often the received requests are read while a case waits for its traces.
const POLL: Duration = Duration::from_millis(50);

/// What a traces case does with its system and its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Run the system and record its traces (`rw`).
    Record,
    /// Run the system, record nothing (`off`).
    Run,
    /// Score the recorded file; call nothing (`replay`).
    Replay,
}

/// The mode `RAG_EVAL_TRACES` (else `RAG_EVAL_CACHE`) names, or why it names none.
pub(crate) fn mode() -> Result<Mode, String> {
    let (var, value) = match std::env::var(TRACES_MODE_ENV) {
        Ok(v) => (TRACES_MODE_ENV, v),
        Err(std::env::VarError::NotPresent) => match std::env::var(MODE_ENV) {
            Ok(v) => (MODE_ENV, v),
            Err(std::env::VarError::NotPresent) => return Ok(Mode::Record),
            Err(e) => return Err(format!("`{MODE_ENV}` is {e}")),
        },
        Err(e) => return Err(format!("`{TRACES_MODE_ENV}` is {e}")),
    };
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "rw" => Ok(Mode::Record),
        "off" => Ok(Mode::Run),
        "replay" => Ok(Mode::Replay),
        other => Err(format!(
            "`{var}={other}` is not a mode: expected `rw`, `off` or `replay`"
        )),
    }
}

/// The process's receiver: its address and what it received, or why it could not start.
type Receiver = Result<(SocketAddr, Received), String>;

fn receiver_cell() -> &'static OnceLock<Receiver> {
    static RECEIVER: OnceLock<Receiver> = OnceLock::new();
    &RECEIVER
}

/// Starts the process's receiver and points OpenTelemetry's exporter variables at it, when
/// one of `cases` is a traces case that will call its system. Called by [`super::run`] before
/// any trial runs, while the process has one thread that reads the environment.
pub(crate) fn start_receiver_for(cases: &[CaseSpec]) {
    let traced = cases
        .iter()
        .any(|c| matches!(c.build, super::private::Build::Traces(_)));
    if !traced || matches!(mode(), Ok(Mode::Replay) | Err(_)) {
        return;
    }
    receiver_cell().get_or_init(|| {
        let runtime = super::runtime().handle();
        let (addr, received) = traces::receiver::listen(([127, 0, 0, 1], 0).into(), runtime)
            .map_err(|e| format!("the trace receiver could not start: {e}"))?;
        let endpoint = format!("http://{addr}");
        // Before any case runs: the SDK reads these when the system builds its exporter.
        std::env::set_var(ENDPOINT_ENV, &endpoint);
        std::env::set_var(TRACES_ENDPOINT_ENV, format!("{endpoint}/v1/traces"));
        // The protocol is left to the system (the receiver reads JSON and protobuf alike).
        if std::env::var_os(BSP_DELAY_ENV).is_none() {
            std::env::set_var(BSP_DELAY_ENV, BSP_DELAY_MS);
        }
        Ok((addr, received))
    });
}

/// Traces cases run their systems one at a time: each window holds one case's requests.
fn window_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a traces case's run gives: an answer per row whose trace arrived, and the rows
/// without one.
pub(crate) struct Traced {
    /// The answers, by question.
    pub answers: HashMap<String, RagAnswer>,
    /// The rows whose trace did not arrive, each with the message its trial fails with.
    pub missing: Vec<(String, String)>,
}

/// Runs (or replays) the traces case over `rows` (`(id, question)`, dataset order) and turns
/// the traces matched with them into answers, by question, each as the answers file of its
/// traces says it, its contexts placed in `corpus`. `whole`: the rows are the case's every
/// row (a filtered run records nothing, so as not to replace the recording with a part).
/// When no row's trace arrived, the case fails as a whole.
pub(crate) fn answers(
    spec: &CaseSpec,
    system: &TracesSystem,
    rows: &[(String, String)],
    corpus: &Corpus,
    whole: bool,
) -> Result<Traced, String> {
    let file = Utf8PathBuf::from(spec.manifest_dir).join(system.file);
    let options = Options {
        join_attribute: system.join_attribute.map(str::to_owned),
        retrievals: system
            .retrievals
            .parse::<RetrievalRule>()
            .map_err(|e| format!("`retrievals`: {e}"))?,
    };
    let pairs: Vec<(&str, &str)> = rows
        .iter()
        .map(|(id, q)| (id.as_str(), q.as_str()))
        .collect();
    let (traces, joined, missing) = match mode()? {
        Mode::Replay => {
            if !file.exists() {
                return Err(format!(
                    "replaying traces ({}=replay), and `{file}` does not exist: run the case once with the system ({0} unset or `rw`) to record it, and commit it",
                    mode_var()
                ));
            }
            let traces = traces::read(&file, &options).map_err(|e| e.to_string())?;
            let joined = traces::join(&traces, &pairs, system.join_attribute);
            let missing = missing_rows(&joined, &traces, None);
            let message = format!(
                "the recorded traces `{file}` hold no trace for {} of {} rows: {}; record them again with the system ({}=rw)",
                missing.len(),
                rows.len(),
                listed(&missing),
                mode_var()
            );
            (traces, joined, each_row(missing, rows.len(), &message)?)
        }
        mode => {
            let (text, traces, joined, missing) = run(spec, system, rows, &pairs, &options)?;
            if mode == Mode::Record && whole {
                if let Some(parent) = file.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| crate::Error::io("create", parent, e).to_string())?;
                }
                crate::fs::write_atomic(&file, text.as_bytes()).map_err(|e| e.to_string())?;
            }
            (traces, joined, missing)
        }
    };
    let is_document = |id: &str| corpus.get(id).is_some();
    let jsonl = traces::answers_jsonl(&traces, &joined, &is_document);
    let mut answers = Answers::parse(&jsonl, file.clone())
        .map_err(|e| format!("the answers of the traces of `{file}`: {e}"))?;
    answers.place_in(corpus);
    let answers = rows
        .iter()
        .filter(|(id, _)| !missing.iter().any(|(m, _)| m == id))
        .filter_map(|(id, q)| Some((q.clone(), answers.take(id)?)))
        .collect();
    Ok(Traced { answers, missing })
}

/// The rows `missing` of `rows`, each with its trial's failure (`message`, after a line naming
/// the row); the case's failure, `message`, when no row has a trace: then nothing is scored.
fn each_row(
    missing: Vec<String>,
    rows: usize,
    message: &str,
) -> Result<Vec<(String, String)>, String> {
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    if missing.len() == rows {
        return Err(message.to_owned());
    }
    Ok(missing
        .into_iter()
        .map(|id| {
            let why = format!("row `{id}` has no trace, so it was not scored (the case's other rows were)\n{message}");
            (id, why)
        })
        .collect())
}

/// The variable that set the mode, for messages.
fn mode_var() -> &'static str {
    if std::env::var_os(TRACES_MODE_ENV).is_some() {
        TRACES_MODE_ENV
    } else {
        MODE_ENV
    }
}

/// What a run received: the requests of the case's window as OTLP JSON lines, the traces they
/// hold, their match with the rows, and the rows without a trace (see [`each_row`]).
type Run = (String, Vec<MappedTrace>, Join, Vec<(String, String)>);

/// Runs every row through the system and waits for each row's trace (matched and complete,
/// see [`Arrivals`]) or the case's timeout: the requests of the case's window as OTLP JSON lines,
/// the traces they hold and their match with the rows.
fn run(
    spec: &CaseSpec,
    system: &TracesSystem,
    rows: &[(String, String)],
    pairs: &[(&str, &str)],
    options: &Options,
) -> Result<Run, String> {
    let Some(receiver) = receiver_cell().get() else {
        return Err(
            "no trace receiver was started: traces cases are run by `rag_eval::main!`".into(),
        );
    };
    let (addr, received) = receiver.as_ref().map_err(Clone::clone)?;
    let _window = window_lock();
    let start = received.len();
    let refused_before = received.refused().0;
    let concurrency = spec.concurrency.unwrap_or(8).max(1);
    let call = system.call;
    super::runtime().block_on(
        stream::iter(rows.iter().cloned())
            .map(|(id, question)| call(question, id))
            .buffer_unordered(concurrency)
            .collect::<Vec<()>>(),
    );
    let label = Utf8PathBuf::from(format!("traces received on {addr}"));
    let deadline = Instant::now() + Duration::from_millis(system.timeout_ms);
    let (mut arrivals, quiet) = (Arrivals::default(), quiet());
    loop {
        let text = received.since(start);
        let traces = traces::read_str(&text, label.clone(), options).map_err(|e| e.to_string())?;
        let complete = arrivals.complete(&text, &label, Instant::now(), quiet);
        let joined = traces::join(&traces, pairs, system.join_attribute);
        let missing = missing_rows(&joined, &traces, Some(&complete));
        if missing.is_empty() {
            return Ok((text, traces, joined, Vec::new()));
        }
        if Instant::now() >= deadline {
            let (refused, last) = received.refused();
            let mut message = no_trace(
                system,
                *addr,
                &missing,
                rows.len(),
                &joined,
                received.len() - start,
            );
            if let (n @ 1.., Some(last)) = (refused - refused_before, last) {
                message.push_str(&format!(
                    "\n{n} export requests were refused, the last answered {last}"
                ));
            }
            let missing = each_row(missing, rows.len(), &message)?;
            return Ok((text, traces, joined, missing));
        }
        std::thread::sleep(POLL);
    }
}

/// How long a trace without a parentless span must go without a new span before it counts
/// as complete: a few of the batch processor's delays (`OTEL_BSP_SCHEDULE_DELAY`, the
/// harness's when the user set none), at least [`MIN_QUIET`].
fn quiet() -> Duration {
    let delay = std::env::var(BSP_DELAY_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(100);
    Duration::from_millis(delay.saturating_mul(QUIET_DELAYS)).max(MIN_QUIET)
}

/// How many batch delays a trace whose top span has a remote parent must stay unchanged.
const QUIET_DELAYS: u64 = 4;

/// The shortest quiet period, for a batch delay set very short.
const MIN_QUIET: Duration = Duration::from_millis(300);

/// When each trace last grew: a trace whose top span is the child of a caller's span (a
/// remote parent, propagated through `traceparent`) has no span without a parent, and is
/// told from a trace whose root has yet to arrive by its spans no longer arriving.
#[derive(Default)]
struct Arrivals(HashMap<String, (usize, Instant)>);

impl Arrivals {
    /// The ids of the complete traces of `text` at `now`: those with a span without a parent,
    /// and those (every other trace has a span whose parent is not among its spans: its local
    /// root) to which no span was added for `quiet`. Called once the system's calls returned,
    /// so the quiet period starts when every root span has ended.
    fn complete(
        &mut self,
        text: &str,
        label: &Utf8PathBuf,
        now: Instant,
        quiet: Duration,
    ) -> HashSet<String> {
        let mut spans: HashMap<String, (usize, bool)> = HashMap::new();
        for span in SpanReader::new(text.as_bytes(), label.clone()).filter_map(Result::ok) {
            let (count, rooted) = spans.entry(span.trace_id).or_default();
            *count += 1;
            *rooted |= span.parent_span_id.is_none();
        }
        spans
            .into_iter()
            .filter(|(id, (count, rooted))| {
                let seen = self.0.entry(id.clone()).or_insert((*count, now));
                if seen.0 != *count {
                    *seen = (*count, now);
                }
                *rooted || now.duration_since(seen.1) >= quiet
            })
            .map(|(id, _)| id)
            .collect()
    }
}

/// The rows no trace answers, and those whose trace is not complete (when `complete` is
/// known).
fn missing_rows(
    joined: &Join,
    traces: &[MappedTrace],
    complete: Option<&HashSet<String>>,
) -> Vec<String> {
    let mut missing: Vec<String> = joined.unmatched_rows.iter().map(|u| u.id.clone()).collect();
    if let Some(complete) = complete {
        missing.extend(
            joined
                .matched
                .iter()
                .filter(|(_, i)| !complete.contains(&traces[*i].trace_id))
                .map(|(id, _)| id.clone()),
        );
    }
    missing
}

/// Up to ten ids, quoted.
fn listed(ids: &[String]) -> String {
    let mut shown: Vec<String> = ids.iter().take(10).map(|id| format!("`{id}`")).collect();
    if ids.len() > shown.len() {
        shown.push(format!("and {} more", ids.len() - 10));
    }
    shown.join(", ")
}

/// The failure of rows whose trace did not arrive: which, and what to check.
fn no_trace(
    system: &TracesSystem,
    addr: SocketAddr,
    missing: &[String],
    rows: usize,
    joined: &Join,
    requests: usize,
) -> String {
    let mut message = format!(
        "no trace arrived within {:.1} s for {} of {rows} rows: {}\n{requests} export requests arrived, holding {} matched traces",
        system.timeout_ms as f64 / 1000.0,
        missing.len(),
        listed(missing),
        joined.matched_traces
    );
    if !joined.unmatched_traces.is_empty() {
        let _ = std::fmt::Write::write_fmt(
            &mut message,
            format_args!(
                " and {} traces matching no row (the first: trace {}: {})",
                joined.unmatched_traces.len(),
                joined.unmatched_traces[0].id,
                joined.unmatched_traces[0].why
            ),
        );
    }
    let join = match system.join_attribute {
        Some(key) => format!("the row's id as the attribute `{key}` on its root span"),
        None => "the row's question as its root span's `input.value` (or give `join_attribute = \"KEY\"` with the row's id on that attribute)".to_owned(),
    };
    let _ = std::fmt::Write::write_fmt(
        &mut message,
        format_args!(
            "\ncheck that the system builds its OTLP exporter from {ENDPOINT_ENV} (set to http://{addr}) after the harness starts, not from a fixed endpoint; \
             that its spans end and are exported before the timeout (the batch processor sends every {BSP_DELAY_ENV} ms; `force_flush` the provider, or raise `trace_timeout_ms`); \
             and that each trace carries {join}"
        ),
    );
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One export request: a trace `trace` with a child RETRIEVER span and, with `root`, its
    /// CHAIN root asking `question` with `query.id` = `id`.
    fn request(trace: char, root: bool, question: &str, id: &str) -> String {
        let trace_id: String = std::iter::repeat_n(trace, 32).collect();
        let child = format!(
            r#"{{"traceId":"{trace_id}","spanId":"00000000000000b2","parentSpanId":"00000000000000a1","name":"retrieve","attributes":[{{"key":"openinference.span.kind","value":{{"stringValue":"RETRIEVER"}}}}]}}"#
        );
        let mut spans = vec![child];
        if root {
            spans.push(format!(
                r#"{{"traceId":"{trace_id}","spanId":"00000000000000a1","name":"query","attributes":[{{"key":"openinference.span.kind","value":{{"stringValue":"CHAIN"}}}},{{"key":"input.value","value":{{"stringValue":"{question}"}}}},{{"key":"query.id","value":{{"stringValue":"{id}"}}}}]}}"#
            ));
        }
        format!(
            r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{}]}}]}}]}}"#,
            spans.join(",")
        )
    }

    fn system(join_attribute: Option<&'static str>) -> TracesSystem {
        TracesSystem {
            call: |_, _| Box::pin(async {}),
            file: "golden/traces.jsonl",
            join_attribute,
            retrievals: "last",
            timeout_ms: 1500,
        }
    }

    /// What the harness would report over `text` for `rows`: the missing rows, and the
    /// message when there are some.
    fn verdict(
        text: &str,
        rows: &[(&str, &str)],
        join: Option<&'static str>,
    ) -> (Vec<String>, String) {
        let label = Utf8PathBuf::from("received");
        let options = Options {
            join_attribute: join.map(str::to_owned),
            retrievals: RetrievalRule::Last,
        };
        let traces = traces::read_str(text, label.clone(), &options).unwrap();
        let joined = traces::join(&traces, rows, join);
        let complete = Arrivals::default().complete(text, &label, Instant::now(), quiet());
        let missing = missing_rows(&joined, &traces, Some(&complete));
        let addr = ([127, 0, 0, 1], 4318).into();
        let message = no_trace(
            &system(join),
            addr,
            &missing,
            rows.len(),
            &joined,
            text.lines().count(),
        );
        (missing, message)
    }

    #[test]
    fn a_row_waits_for_its_root_span_and_is_named_with_what_to_check_while_it_lacks_it() {
        let rows = [("q1", "When?"), ("q2", "Where?")];
        let child_only = request('a', false, "", "");
        let (missing, message) = verdict(&format!("{child_only}\n"), &rows, Some("query.id"));
        assert_eq!(missing, ["q1", "q2"]);
        assert!(
            message.starts_with("no trace arrived within 1.5 s for 2 of 2 rows: `q1`, `q2`\n1 export requests arrived, holding 0 matched traces"),
            "{message}"
        );
        assert!(
            message.contains("OTEL_EXPORTER_OTLP_ENDPOINT (set to http://127.0.0.1:4318)"),
            "{message}"
        );
        assert!(
            message.contains("the row's id as the attribute `query.id` on its root span"),
            "{message}"
        );
        // The root of q1's trace arrives in a later request: q1 is complete, q2 still missing.
        let text = format!("{child_only}\n{}\n", request('a', true, "When?", "q1"));
        assert_eq!(verdict(&text, &rows, Some("query.id")).0, ["q2"]);
    }

    /// Posts a request the receiver refuses (a compressed body) to the process's receiver.
    fn export_compressed(_question: String, _id: String) -> super::super::private::BoxFuture<()> {
        Box::pin(async {
            use std::io::{Read as _, Write as _};
            let Some(Ok((addr, _))) = receiver_cell().get() else {
                return;
            };
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            write!(
                stream,
                "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Encoding: zstd\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
            )
            .unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
        })
    }

    /// A case over the example questions, whose system is given to [`run`] apart.
    fn spec(name: &'static str) -> super::super::private::CaseSpec {
        super::super::private::CaseSpec {
            name,
            manifest_dir: env!("CARGO_MANIFEST_DIR"),
            source: file!(),
            line: line!(),
            dataset: "examples/data/questions.jsonl",
            corpus: None,
            glob: None,
            k: 3,
            tolerance: 0.01,
            mode: super::super::private::Mode::Standard,
            per_query: true,
            ignore: false,
            thresholds: &[],
            levels: super::super::private::Levels::BOTH,
            judge: None,
            criteria: &[],
            embedder: None,
            langsmith_experiment: None,
            concurrency: Some(1),
            agreement: None,
            build: super::super::private::Build::Factory(|| Box::pin(async { Default::default() })),
        }
    }

    #[test]
    fn a_system_whose_exports_are_refused_is_told_why_when_its_time_is_up() {
        test_receiver();
        let spec = spec("refused");
        let system = TracesSystem {
            call: export_compressed,
            timeout_ms: 200,
            ..system(None)
        };
        let rows = vec![
            ("q1".to_owned(), "When?".to_owned()),
            ("q2".to_owned(), "Where?".to_owned()),
        ];
        let pairs: Vec<(&str, &str)> = rows.iter().map(|(i, q)| (i.as_str(), q.as_str())).collect();
        let options = Options::default();
        let Err(message) = run(&spec, &system, &rows, &pairs, &options) else {
            panic!("no trace arrived, and the run passed")
        };
        assert!(message.starts_with("no trace arrived within 0.2 s for 2 of 2 rows: `q1`, `q2`\n0 export requests arrived"), "{message}");
        assert!(
            message.ends_with("2 export requests were refused, the last answered 415 Unsupported Media Type: {\"error\":\"`Content-Encoding: zstd` is not read: send the body uncompressed or gzip-compressed\"}"),
            "{message}"
        );
    }

    /// Starts the process's receiver for the tests that run the harness's wait.
    fn test_receiver() {
        receiver_cell().get_or_init(|| {
            traces::receiver::listen(([127, 0, 0, 1], 0).into(), super::super::runtime().handle())
                .map_err(|e| e.to_string())
        });
    }

    /// `request`'s trace with its top span the child of a caller's span, which is not in the
    /// trace (a parent propagated through `traceparent`).
    fn remote_parented(trace: char, question: &str, id: &str) -> String {
        request(trace, true, question, id).replace(
            r#""spanId":"00000000000000a1","name""#,
            r#""spanId":"00000000000000a1","parentSpanId":"00000000000000ff","name""#,
        )
    }

    #[test]
    fn a_trace_whose_top_span_has_a_remote_parent_is_complete_once_no_span_arrives() {
        let label = Utf8PathBuf::from("received");
        let (t0, quiet) = (Instant::now(), Duration::from_millis(400));
        let at = |ms| t0 + Duration::from_millis(ms);
        let whole = remote_parented('c', "When?", "q1");
        assert!(
            whole.contains(r#""parentSpanId":"00000000000000ff""#),
            "{whole}"
        );
        let child_only = request('c', false, "", "");
        // The child arrives first, its parent unknown: the trace may yet grow.
        let mut arrivals = Arrivals::default();
        let text = format!("{child_only}\n");
        assert!(arrivals.complete(&text, &label, at(0), quiet).is_empty());
        assert!(arrivals.complete(&text, &label, at(300), quiet).is_empty());
        // Its top span arrives: the quiet period starts again.
        let text = format!("{child_only}\n{whole}\n");
        assert!(arrivals.complete(&text, &label, at(300), quiet).is_empty());
        assert!(arrivals.complete(&text, &label, at(600), quiet).is_empty());
        let complete = arrivals.complete(&text, &label, at(700), quiet);
        assert_eq!(complete, HashSet::from(["c".repeat(32)]));
        // A parentless root completes its trace at once.
        let rooted = format!("{}\n", request('a', true, "Where?", "q2"));
        let complete = Arrivals::default().complete(&rooted, &label, at(0), quiet);
        assert_eq!(complete, HashSet::from(["a".repeat(32)]));
        // The top span is the trace's root for the mapping: its question and join attribute.
        let options = Options {
            join_attribute: Some("query.id".into()),
            retrievals: RetrievalRule::Last,
        };
        let traces = traces::read_str(&text, label, &options).unwrap();
        assert_eq!(traces.len(), 1);
        assert_eq!(traces[0].question.as_deref(), Some("When?"));
        assert_eq!(traces[0].join_value.as_deref(), Some("q1"));
    }

    /// Posts a trace whose top span has a remote parent, as a service called with a
    /// `traceparent` exports it, to the process's receiver.
    fn export_remote_parented(
        question: String,
        id: String,
    ) -> super::super::private::BoxFuture<()> {
        Box::pin(async move {
            use std::io::{Read as _, Write as _};
            let Some(Ok((addr, _))) = receiver_cell().get() else {
                return;
            };
            let trace = if id == "q1" { 'd' } else { 'e' };
            let body = remote_parented(trace, &question, &id);
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            write!(
                stream,
                "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        })
    }

    #[test]
    fn a_system_called_with_a_remote_parent_has_its_traces_scored_before_the_timeout() {
        test_receiver();
        let system = TracesSystem {
            call: export_remote_parented,
            timeout_ms: 10_000,
            ..system(Some("query.id"))
        };
        let rows = vec![
            ("q1".to_owned(), "When?".to_owned()),
            ("q2".to_owned(), "Where?".to_owned()),
        ];
        let pairs: Vec<(&str, &str)> = rows.iter().map(|(i, q)| (i.as_str(), q.as_str())).collect();
        let options = Options {
            join_attribute: Some("query.id".into()),
            retrievals: RetrievalRule::Last,
        };
        let started = Instant::now();
        let (_, traces, joined, missing) =
            run(&spec("remote"), &system, &rows, &pairs, &options).unwrap();
        assert!(missing.is_empty(), "{missing:?}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(joined.matched.len(), 2);
        assert_eq!(traces.len(), 2);
    }

    /// Exports the trace of row `q1` alone.
    fn export_q1_only(question: String, id: String) -> super::super::private::BoxFuture<()> {
        if id == "q1" {
            export_remote_parented(question, id)
        } else {
            Box::pin(async {})
        }
    }

    #[test]
    fn a_row_without_a_trace_fails_alone_and_the_others_are_answered() {
        test_receiver();
        let system = TracesSystem {
            call: export_q1_only,
            timeout_ms: 1000,
            ..system(Some("query.id"))
        };
        let rows = vec![
            ("q1".to_owned(), "When?".to_owned()),
            ("q2".to_owned(), "Where?".to_owned()),
        ];
        let pairs: Vec<(&str, &str)> = rows.iter().map(|(i, q)| (i.as_str(), q.as_str())).collect();
        let options = Options {
            join_attribute: Some("query.id".into()),
            retrievals: RetrievalRule::Last,
        };
        let (_, _, joined, missing) =
            run(&spec("one_missing"), &system, &rows, &pairs, &options).unwrap();
        assert_eq!(joined.matched.len(), 1);
        let [(id, why)] = &missing[..] else {
            panic!("{missing:?}")
        };
        assert_eq!(id, "q2");
        assert!(
            why.starts_with("row `q2` has no trace, so it was not scored (the case's other rows were)\nno trace arrived within 1.0 s for 1 of 2 rows: `q2`\n"),
            "{why}"
        );
        assert!(
            why.contains("the attribute `query.id` on its root span"),
            "{why}"
        );
        // No row with a trace: the case fails as a whole, as before.
        assert_eq!(
            each_row(vec!["q1".into(), "q2".into()], 2, "none arrived"),
            Err("none arrived".to_owned())
        );
    }

    #[test]
    fn a_wrong_join_attribute_leaves_the_rows_missing_and_says_why_the_traces_match_none() {
        let rows = [("q1", "When exactly?")];
        let text = format!("{}\n", request('b', true, "When?", "q1"));
        let (missing, message) = verdict(&text, &rows, Some("query.key"));
        assert_eq!(missing, ["q1"]);
        assert!(
            message.contains("and 1 traces matching no row (the first: trace bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb: no row asks its question `When?`)"),
            "{message}"
        );
        // The right attribute matches it, whatever its question.
        assert!(verdict(&text, &rows, Some("query.id")).0.is_empty());
    }
}
