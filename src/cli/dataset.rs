//! `rag-eval dataset`: import, validate, reanchor (push and pull live with LangSmith).

use super::output::Output;
use super::CorpusArgs;
use crate::corpus::Corpus;
use crate::dataset::stats::DatasetStats;
use crate::dataset::{self, AnyDataset, Shape, ToRow};
use crate::escape::terminal;
use crate::level::{Level, TokenLevel};
use anyhow::{bail, Result};
use camino::Utf8PathBuf;
use clap::{Args, Subcommand, ValueEnum};

#[derive(Subcommand)]
pub(super) enum DatasetCommand {
    /// Convert another tool's dataset into rag-eval's JSONL, checking it against the corpus.
    Import(ImportArgs),
    /// Check a dataset against its corpus and summarise it.
    Validate(ValidateArgs),
    /// Place drifted spans again by finding their recorded text in the corpus.
    Reanchor(ReanchorArgs),
    /// Upload a dataset to LangSmith (`LANGSMITH_API_KEY`, `LANGSMITH_ENDPOINT`).
    Push(super::langsmith::PushArgs),
    /// Download a LangSmith dataset as JSONL and check it against the corpus.
    Pull(super::langsmith::PullArgs),
}

#[derive(Args)]
pub(super) struct ValidateArgs {
    /// The dataset JSONL.
    dataset: Utf8PathBuf,
    #[command(flatten)]
    corpus: CorpusArgs,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub(super) struct ReanchorArgs {
    /// The dataset JSONL (token level).
    dataset: Utf8PathBuf,
    #[command(flatten)]
    corpus: CorpusArgs,
    /// Where to write the result (default: rewrite the dataset in place, atomically).
    #[arg(short = 'o', long)]
    output: Option<Utf8PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum ImportFormat {
    /// chunking_evaluation's questions CSV (question, references, corpus_id).
    ChromaCsv,
}

#[derive(Args)]
pub(super) struct ImportArgs {
    /// Input format.
    #[arg(long, value_enum)]
    from: ImportFormat,
    /// The file to convert.
    input: Utf8PathBuf,
    /// The corpus folder the dataset refers to.
    #[arg(long)]
    corpus: Utf8PathBuf,
    /// Which files of the corpus folder to read.
    #[arg(long, default_value = crate::corpus::DEFAULT_GLOB)]
    glob: String,
    /// Where to write the dataset (written atomically), `-` for standard output. Never the
    /// input, a file inside the corpus, or something that is not a regular file.
    #[arg(short = 'o', long)]
    output: Utf8PathBuf,
}

pub(super) fn run(command: DatasetCommand, out: &mut Output) -> Result<()> {
    match command {
        DatasetCommand::Import(a) => import(a, out),
        DatasetCommand::Validate(a) => validate(a, out),
        DatasetCommand::Reanchor(a) => reanchor(a),
        DatasetCommand::Push(a) => super::langsmith::push(a),
        DatasetCommand::Pull(a) => super::langsmith::pull(a, out),
    }
}

fn import(a: ImportArgs, out: &mut Output) -> Result<()> {
    let to_stdout = a.output.as_str() == "-";
    if !to_stdout {
        // Before the work, so that a long conversion does not end in this refusal.
        dataset::destination::check_output(&a.output, &[&a.input], Some(&a.corpus))?;
    }
    let corpus = Corpus::from_folder(&a.corpus, Some(&a.glob))?;
    let d = match a.from {
        ImportFormat::ChromaCsv => dataset::import::chroma_csv(&a.input, &corpus)?,
    };
    if d.is_empty() {
        bail!(
            "`{}` holds no questions; nothing was imported and `{}` was not written",
            a.input,
            a.output
        );
    }
    if to_stdout {
        for e in d.examples() {
            out.text(&e.to_row())?;
            out.text("\n")?;
        }
        out.flush()?;
    } else {
        d.write(&a.output)?;
    }
    let spans: usize = d.examples().iter().map(|e| e.truth.len()).sum();
    note!(
        "imported {} {}-level queries ({spans} spans over {} documents) into {}",
        d.len(),
        TokenLevel::NAME,
        corpus.len(),
        if to_stdout {
            "standard output"
        } else {
            a.output.as_str()
        }
    );
    Ok(())
}

/// What `validate` prints: the dataset, its figures, and its problems.
#[derive(serde::Serialize)]
struct Summary {
    dataset: String,
    level: &'static str,
    #[serde(flatten)]
    stats: DatasetStats,
    problems: Vec<String>,
}

fn validate(a: ValidateArgs, out: &mut Output) -> Result<()> {
    let corpus = a.corpus.load()?;
    let v = dataset::validate(&a.dataset, &corpus)?;
    // Problems and notes quote the dataset (ids, text, labels): no control character of it
    // reaches the terminal.
    for n in &v.notes {
        note!("note: {}", terminal(n));
    }
    let summary = v.dataset.as_ref().map(|d| Summary {
        dataset: a.dataset.to_string(),
        level: d.level(),
        stats: DatasetStats::of(d),
        problems: v.problems.clone(),
    });
    match &summary {
        Some(summary) if a.json => out.json_line(summary)?,
        // A summary above a failure reads like success: text mode shows one or the other.
        Some(summary) if v.is_valid() => {
            let what = match summary.stats.shape {
                Shape::Qa => "question/answer".to_owned(),
                level => format!("{level}-level"),
            };
            let mut text = format!(
                "{}: {} {what} rows over {} documents of {}\n",
                summary.dataset,
                summary.stats.rows,
                corpus.len(),
                a.corpus.corpus
            );
            let mix: Vec<String> = summary
                .stats
                .difficulty
                .iter()
                .map(|(k, v)| format!("{} {v}", terminal(k)))
                .collect();
            text.push_str(&format!("difficulty: {}\n", mix.join(", ")));
            match summary.stats.shape {
                Shape::Qa => text.push_str(
                    "retrieval truth: none (reference answers only): retrieval metrics are not measured\n",
                ),
                shape => text.push_str(&format!(
                    "{}: {} ({} per row)\n",
                    if shape == Shape::Token { "spans" } else { "chunk ids" },
                    summary.stats.truth_items,
                    summary.stats.truth_per_row
                )),
            }
            if let Some(c) = &summary.stats.span_chars {
                text.push_str(&format!("span length in characters: {c}\n"));
            }
            text.push_str(&format!(
                "reference answers: {} of {} rows\n",
                summary.stats.with_reference_answer, summary.stats.rows
            ));
            if let Some(c) = &summary.stats.chunker {
                text.push_str(&format!("chunker: {}\n", terminal(c)));
            }
            out.text(&text)?;
        }
        _ => {}
    }
    out.flush()?;
    if !v.is_valid() {
        if !a.json {
            for p in &v.problems {
                note!("{}", terminal(p));
            }
        }
        bail!(
            "{} problem{} in {}{}",
            v.problems.len(),
            if v.problems.len() == 1 { "" } else { "s" },
            a.dataset,
            if v.drifted > 0 {
                " (`rag-eval dataset reanchor` can place drifted spans again)"
            } else {
                ""
            }
        );
    }
    Ok(())
}

fn reanchor(a: ReanchorArgs) -> Result<()> {
    let AnyDataset::Token(d) = dataset::load(&a.dataset)? else {
        bail!(
            "`{}` is chunk-level; only character spans can be re-anchored",
            a.dataset
        );
    };
    let corpus = a.corpus.load()?;
    let (fixed, report) = dataset::reanchor::reanchor(&d, &corpus);
    let output = a.output.as_ref().unwrap_or(&a.dataset);
    if !report.moved.is_empty() || a.output.is_some() {
        fixed.write(output)?;
    }
    let whitespace = report
        .moved
        .iter()
        .filter(|m| m.how == dataset::reanchor::Match::Whitespace)
        .count();
    note!(
        "moved {} span{} ({} verbatim, {whitespace} ignoring whitespace){}",
        report.moved.len(),
        if report.moved.len() == 1 { "" } else { "s" },
        report.moved.len() - whitespace,
        if report.moved.is_empty() && a.output.is_none() {
            "; nothing written".to_owned()
        } else {
            format!("; wrote {output}")
        }
    );
    for m in &report.moved {
        note!(
            "  {} span {}: {}..{} -> {}..{} in `{}`",
            m.example_id,
            m.span_index,
            m.from.start,
            m.from.end,
            m.to.start,
            m.to.end,
            m.to.doc
        );
    }
    if !report.unplaced.is_empty() {
        for u in &report.unplaced {
            note!("{u}");
        }
        bail!(
            "{} span{} could not be placed; they are left as they were",
            report.unplaced.len(),
            if report.unplaced.len() == 1 { "" } else { "s" }
        );
    }
    Ok(())
}
