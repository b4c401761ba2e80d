//! The `rag-eval` command-line tool: chunk documents, score retrieval output, work with
//! datasets, evaluate retrievers over a corpus and generate synthetic datasets.
//!
//! Errors are one clear message on stderr and exit code 1; usage errors exit with 2. Not a
//! public API: the binary `src/bin/rag-eval.rs` calls [`main`].

mod chunk;
mod dataset;
mod eval;
mod generate;
mod output;
mod score;

use crate::corpus::Corpus;
use crate::metrics::{self, SpanMode};
use anyhow::Result;
use camino::Utf8PathBuf;
use clap::builder::PossibleValue;
use clap::{Args, Parser, Subcommand, ValueEnum};
use output::{is_broken_pipe, Output};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "rag-eval",
    version,
    about = "Chunk documents, score retrieval output, work with datasets, evaluate retrievers over a corpus, generate synthetic datasets."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Split documents into chunks and print them as JSONL (one chunk a line, char offsets).
    Chunk(chunk::ChunkArgs),
    /// Score retrieval output against a dataset, or a TREC run against qrels.
    Score(score::ScoreArgs),
    /// Work with datasets.
    #[command(subcommand)]
    Dataset(dataset::DatasetCommand),
    /// Retrieve every query of a dataset over a corpus and score it; several `--chunker`
    /// values compare chunkers on the same ground truth.
    Eval(eval::EvalArgs),
    /// Write a synthetic dataset with a language model on an OpenAI-compatible server:
    /// questions about each document with their ground truth. Interrupted runs continue where
    /// they stopped when rerun with the same output.
    #[command(subcommand)]
    Generate(generate::GenerateCommand),
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

impl CorpusArgs {
    fn load(&self) -> Result<Corpus> {
        Ok(Corpus::from_folder(&self.corpus, Some(&self.glob))?)
    }
}

/// Runs the command line of the process and returns its exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = Output::stdout();
    let result = match cli.command {
        Command::Chunk(a) => chunk::run(a, &mut out),
        Command::Score(a) => score::run(a, &mut out),
        Command::Eval(a) => eval::run(a, &mut out),
        Command::Dataset(c) => dataset::run(c, &mut out),
        Command::Generate(c) => match generate::run(c) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
    };
    // Flushed also after a failure: what was printed before it (validate's summary) stays.
    let flushed = out.flush().map_err(anyhow::Error::from);
    match result.and(flushed) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn render_table(title: &str, means: &metrics::Figures, stds: &metrics::Figures) -> String {
    format!("{title}\n{}", crate::eval::metric_table(means, stds))
}
