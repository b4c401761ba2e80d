//! The `rag-eval` command-line tool: chunk documents, score retrieval output and answers,
//! evaluate retrievers over a corpus, compare, report and serve runs, and make datasets.
//!
//! Errors are one clear message on stderr and exit code 1; usage errors exit with 2; an
//! evaluation whose LangSmith upload failed after its result was printed exits with 3. Not a
//! public API: the binary `src/bin/rag-eval.rs` calls [`main`].

/// `eprintln!` that never panics: see [`output`] for what a failed write does.
macro_rules! note {
    ($($arg:tt)*) => {
        $crate::cli::output::stderr_line(format_args!($($arg)*))
    };
}

mod align;
mod answering;
mod chunk;
mod collect;
mod compare;
mod dataset;
mod dry_run;
mod eval;
mod eval_conversations;
mod gate;
mod generate;
mod judging;
mod labels;
mod langsmith;
mod log;
mod output;
mod report;
mod runs;
mod score;
mod serve;
mod traces;
mod trec_eval;

use crate::corpus::Corpus;
use crate::metrics::{self, SpanMode};
use anyhow::Result;
use camino::Utf8PathBuf;
use clap::builder::PossibleValue;
use clap::{Args, Parser, Subcommand, ValueEnum};
use output::{is_broken_pipe, Output};
use std::io::Write as _;
use std::process::ExitCode;

/// The runtime the HTTP clients of the commands run on (reqwest needs Tokio).
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    crate::runtime::shared().map_err(anyhow::Error::msg)
}

/// `context` with the cache `text` names (none for `off`): `eval` and `score --answers` open
/// their caches alike.
fn with_cache(
    context: crate::components::Context,
    text: &str,
) -> Result<crate::components::Context> {
    let cache = crate::components::open_cache(text)?;
    Ok(match cache.mode() {
        crate::cache::CacheMode::Off => context,
        _ => context.with_cache(std::sync::Arc::new(cache)),
    })
}

#[derive(Parser)]
#[command(
    name = "rag-eval",
    version,
    about = "Evaluate a RAG system's retrieval and answers, and track and compare its runs: \
             chunk documents, score retrieval output and answers, evaluate retrievers over a \
             corpus, compare and report runs, serve the run store, and make and check datasets."
)]
struct Cli {
    /// Log what the library does on stderr: `-v` retried requests and other warnings, `-vv`
    /// debugging detail too.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Split documents into chunks and print them as JSONL (one chunk a line, char offsets).
    Chunk(chunk::ChunkArgs),
    /// Score retrieval output or answers against a dataset, a TREC run against qrels, agent
    /// conversations, or RAGChecker's checked claims.
    Score(score::ScoreArgs),
    /// Work with datasets.
    #[command(subcommand)]
    Dataset(dataset::DatasetCommand),
    /// Retrieve every query of a dataset over a corpus and score it; several `--chunker`
    /// values compare chunkers on the same ground truth.
    #[command(after_help = crate::spec::help())]
    Eval(eval::EvalArgs),
    /// Write a synthetic dataset with a language model on an OpenAI-compatible server:
    /// questions about each document with their ground truth. Interrupted runs continue where
    /// they stopped when rerun with the same output.
    #[command(subcommand)]
    Generate(generate::GenerateCommand),
    /// Compare 2–10 runs (files from `eval --json`, `score --json` or `runs export`, or
    /// stored runs) with the first: per metric the difference with a bootstrap interval, a
    /// paired test corrected across metrics × runs, wins/ties/losses, the queries that changed
    /// most, per difficulty.
    Compare(compare::CompareArgs),
    /// How a run's figures agree with people's labels: per labelled metric accuracy, Cohen's
    /// κ and the confusion matrix (pass/fail labels) or Spearman's ρ, Kendall's τ-b and the
    /// mean absolute error (numeric labels), with bootstrap intervals, the judge-corrected
    /// mean, and the queries where they disagree most.
    Align(align::AlignArgs),
    /// The stored runs (every `eval` and `score` records one): list, show, delete, export,
    /// import, and pull from LangSmith.
    Runs(runs::RunsArgs),
    /// Render runs as one self-contained HTML page (charts, per-query table with the ground
    /// truth and the retrieved text), Markdown or JUnit XML.
    Report(report::ReportArgs),
    /// Gate over the run group that shards of a run wrote into the run store: every query
    /// present once, every bar and the golden snapshot over the merged results.
    Gate(gate::GateArgs),
    /// Serve the stored runs read-only over HTTP on 127.0.0.1: `GET /runs`, `GET /runs/{id}`,
    /// `POST /compare` and HTML reports.
    Serve(serve::ServeArgs),
    /// trec_eval 10.0, byte for byte: its command line (`-q -m all_trec -c -M100 …`), its
    /// output and its exit codes; `rag-eval trec_eval -h` lists the options and measures.
    #[command(name = "trec_eval", alias = "trec-eval")]
    TrecEval(trec_eval::TrecEvalArgs),
    /// Read OpenTelemetry traces (OTLP JSON or protobuf) in the OpenInference, OTel GenAI or
    /// TruLens conventions; `score --traces` scores them.
    #[command(subcommand)]
    Traces(traces::TracesCommand),
    /// Receive OpenTelemetry traces over OTLP/HTTP (protobuf or JSON, plain or gzip-compressed,
    /// `POST /v1/traces`) on a loopback address and append each request to a file as one line
    /// of OTLP JSON, the file `score --traces` reads.
    Collect(collect::CollectArgs),
}

/// `--mode`: the library's span mode, with `chroma` accepted as the older name of
/// `chunking_evaluation`.
impl ValueEnum for SpanMode {
    fn value_variants<'a>() -> &'a [Self] {
        &[SpanMode::Standard, SpanMode::ChunkingEvaluation]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            SpanMode::Standard => {
                PossibleValue::new("standard").help("Merged spans: every character counted once")
            }
            SpanMode::ChunkingEvaluation => PossibleValue::new("chunking_evaluation")
                .alias("chroma")
                .help("chunking_evaluation's figures (unmerged precision, touching ranges meet); also `chroma`"),
        })
    }
}

#[derive(Args)]
struct CorpusArgs {
    /// The corpus folder.
    #[arg(long)]
    corpus: Utf8PathBuf,
    /// Which files of the corpus folder to read.
    #[arg(long, default_value = crate::corpus::DEFAULT_GLOB)]
    glob: String,
}

/// The longest `--timeout`: a day.
const MAX_TIMEOUT_SECS: u64 = 86_400;

/// `--timeout`, shared by the commands that call a server (a language model, LangSmith).
#[derive(Args, Clone, Copy)]
struct TimeoutArgs {
    /// Seconds one request to a server (language model, LangSmith, a RAG service, and the
    /// embedders, rerankers and stores of specs) may take in all, its retries and the waits
    /// between them included; then the command fails naming the request (1 to 86400).
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 600,
        value_parser = clap::value_parser!(u64).range(1..=MAX_TIMEOUT_SECS)
    )]
    timeout: u64,
}

impl TimeoutArgs {
    /// The limit of one request.
    fn limit(self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout)
    }

    /// `config` with the deadline set, and a server's silence not waited for longer than it.
    fn apply(self, config: crate::http::HttpConfig) -> crate::http::HttpConfig {
        config.with_limit(self.limit())
    }
}

impl CorpusArgs {
    fn load(&self) -> Result<Corpus> {
        Ok(Corpus::from_folder(&self.corpus, Some(&self.glob))?)
    }
}

/// Runs the command line of the process and returns its exit code.
pub fn main() -> ExitCode {
    // trec_eval's flags are its own (`-v` is its version, `-h` its help): they never reach clap.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(first) = trec_eval::invoked(&args) {
        return trec_eval::run(&args[first..]);
    }
    let cli = Cli::parse();
    log::init(cli.verbose);
    // The long commands show a progress line on stderr, a terminal's or a CI log's.
    crate::harness::progress::enable();
    let mut out = Output::stdout();
    // `compare --fail-on-regression` and `align --min-agreement` fail without an error.
    let mut code = ExitCode::SUCCESS;
    let result = match cli.command {
        Command::Chunk(a) => chunk::run(a, &mut out),
        Command::Score(a) => score::run(a, &mut out),
        Command::Eval(a) => eval::run(a, &mut out),
        Command::Dataset(c) => dataset::run(c, &mut out),
        Command::Compare(a) => compare::run(a, &mut out).map(|regressed| {
            if regressed {
                code = ExitCode::FAILURE;
            }
        }),
        Command::Align(a) => align::run(a, &mut out).map(|failed| {
            if failed {
                code = ExitCode::FAILURE;
            }
        }),
        Command::Runs(a) => runs::run(a, &mut out),
        Command::Gate(a) => gate::run(a, cli.verbose > 0, &mut out).map(|failed| {
            if failed {
                code = ExitCode::FAILURE;
            }
        }),
        Command::Report(a) => report::run(a, &mut out),
        Command::Serve(a) => serve::run(a),
        Command::TrecEval(a) => return trec_eval::run(&a.args),
        Command::Traces(c) => traces::run(c, &mut out),
        Command::Collect(a) => collect::run(a),
        Command::Generate(c) => match generate::run(c) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
    };
    // Flushed also after a failure: what was printed before it (validate's summary) stays.
    let flushed = out.flush().map_err(anyhow::Error::from);
    let code = match result.and(flushed) {
        Ok(()) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if e.is::<langsmith::UploadFailed>() => {
            note!("error: {}", error_message(&e));
            ExitCode::from(langsmith::UPLOAD_FAILED)
        }
        Err(e) => {
            note!("error: {}", error_message(&e));
            ExitCode::FAILURE
        }
    };
    match output::stderr_failure() {
        Some(e) => {
            // Most likely lost too; the exit code says it in any case.
            let _ = writeln!(
                std::io::stderr(),
                "error: cannot write to standard error: {e}"
            );
            ExitCode::FAILURE
        }
        None => code,
    }
}

/// The error and its causes on one line, each cause once.
///
/// Our errors put their cause in their own message (a library user printing `{e}` sees the OS
/// error) and still return it as `source()` (so it can be inspected): printing the whole chain
/// would repeat it. A cause whose text is already on the line is left out.
fn error_message(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if line.is_empty() {
            line = text;
        } else if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

fn render_table(title: &str, means: &metrics::Figures, stds: &metrics::Figures) -> String {
    format!("{title}\n{}", crate::eval::metric_table(means, stds))
}

/// `run`'s headline and means, each judged mean with how many of the queries it covers
/// ([`metrics::RunResult::coverage`]).
fn render_run_table(run: &metrics::RunResult) -> String {
    let counts: Vec<_> = run.metrics.names().map(|n| run.coverage(n)).collect();
    format!(
        "{}\n{}",
        run.headline(),
        crate::eval::metric_table_counted(&run.metrics, &run.std, &counts)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn each_cause_is_printed_once() {
        let os = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = anyhow::Error::from(crate::Error::io("read", "x.jsonl", os()));
        assert_eq!(error_message(&e), format!("read `x.jsonl`: {}", os()));

        // Context that does not name the cause keeps it; context that does, does not repeat it.
        let e = Err::<(), _>(crate::Error::io("read", "x.jsonl", os()))
            .context("cannot load the dataset")
            .unwrap_err();
        assert_eq!(
            error_message(&e),
            format!("cannot load the dataset: read `x.jsonl`: {}", os())
        );
        let e = Err::<(), _>(os()).context("reading x").unwrap_err();
        assert_eq!(error_message(&e), format!("reading x: {}", os()));

        let nested = crate::Error::Retrieval {
            query: "q1".into(),
            source: Box::new(crate::Error::io("read", "index", os())),
        };
        assert_eq!(
            error_message(&anyhow::Error::from(nested)),
            format!("retrieval failed for query `q1`: read `index`: {}", os())
        );
    }
}
