//! `rag-eval align`: how a run's figures agree with people's labels.

use super::output::Output;
use crate::align::{AlignOptions, Alignment};
use crate::answers::Answers;
use anyhow::{bail, Context, Result};
use camino::Utf8PathBuf;
use clap::Args;

#[derive(Args)]
pub(super) struct AlignArgs {
    /// The run: an id in the run store (a unique prefix, `latest`, `latest~N`), or a JSON file
    /// written by `eval --json`, `score --json` or `runs export` holding one run.
    #[arg(value_name = "RUN")]
    run: String,
    /// The labels: JSONL of `{"id": …, "labels": {"<metric>": value}}`, or a dataset whose rows
    /// carry `outputs.labels`; a value is a number, true/false or "pass"/"fail". Without it,
    /// the labels the run holds.
    #[arg(long, value_name = "FILE")]
    labels: Option<Utf8PathBuf>,
    /// The answers file the run scored: each listed disagreement shows its answer.
    #[arg(long, value_name = "FILE")]
    answers: Option<Utf8PathBuf>,
    /// Binary labels: a figure at least this counts as a pass.
    #[arg(long, default_value_t = 0.5)]
    threshold: f64,
    /// Exit with code 1 when a labelled metric agrees less than this: Cohen's κ for binary
    /// labels, Spearman's ρ for numeric ones (an undefined one fails too).
    #[arg(long, value_name = "MIN")]
    min_agreement: Option<f64>,
    #[command(flatten)]
    resampling: super::compare::ResampleArgs,
    /// How many of the queries where figure and label differ most are listed per metric.
    #[arg(long, default_value_t = 5)]
    show: usize,
    /// The run store run ids are looked up in (default: `RAG_EVAL_RUNS`, else
    /// `.rag-eval/runs.sqlite`).
    #[arg(long, value_name = "FILE|URL")]
    store: Option<String>,
    /// Print the alignment as JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Prints the alignment; returns whether --min-agreement failed.
pub(super) fn run(a: AlignArgs, out: &mut Output) -> Result<bool> {
    if !a.threshold.is_finite() {
        bail!("--threshold must be a number (got {})", a.threshold);
    }
    let mut runs = super::runs::load(std::slice::from_ref(&a.run), a.store.as_deref())?;
    if runs.len() != 1 {
        bail!(
            "`{}` holds {} runs; align takes one (export the one you mean with `rag-eval runs export`)",
            a.run,
            runs.len()
        );
    }
    let (_, mut run) = runs.remove(0);
    let claims = match &a.labels {
        Some(path) => super::labels::apply(path, &mut run)?.claim_agreement(&run),
        None => None,
    };
    if run.labels.is_empty() && claims.is_none() {
        bail!("no query of the run has a label: give --labels FILE");
    }
    crate::align::check_labelled_metrics(&run).with_context(|| match &a.labels {
        Some(path) => format!("the labels of `{path}`"),
        None => format!("the labels run `{}` holds", a.run),
    })?;
    let answers = a.answers.as_ref().map(Answers::load).transpose()?;
    let options = AlignOptions {
        threshold: a.threshold,
        resamples: a.resampling.resamples,
        seed: a.resampling.seed,
        shown: a.show,
    };
    let alignment = Alignment {
        claims,
        ..Alignment::new(&run, &options, answers.as_ref())
    };
    if a.json {
        out.json_line(&alignment)?;
    } else {
        out.text(&alignment.to_text())?;
    }
    if let Some(min) = a.min_agreement {
        let failures = alignment.failures(min);
        if !failures.is_empty() {
            out.flush()?;
            for f in &failures {
                note!("disagreement: {f}");
            }
            return Ok(true);
        }
    }
    Ok(false)
}
