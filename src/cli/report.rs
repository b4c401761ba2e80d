//! `rag-eval report`: runs rendered as HTML, Markdown or JUnit.

use super::output::Output;
use crate::report::{load_runs, Bar, Bound, Format, Report};
use anyhow::Result;
use camino::Utf8PathBuf;
use clap::{Args, ValueEnum};

#[derive(Args)]
pub(super) struct ReportArgs {
    /// Runs: JSON files written by `rag-eval eval --json` or `rag-eval score --json` (a file
    /// with several runs, one per line, brings them all). The first run is the baseline.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<Utf8PathBuf>,
    /// Where to write the report (written atomically); standard output without it.
    #[arg(short, long, value_name = "FILE")]
    output: Option<Utf8PathBuf>,
    /// What to write.
    #[arg(long, value_enum, default_value = "html")]
    format: ReportFormat,
    /// A bar every mean and every query is held to, `METRIC=VALUE` (at least VALUE); repeat
    /// for several. JUnit fails the cases that miss it.
    #[arg(long = "min", value_name = "METRIC=VALUE")]
    min: Vec<String>,
    /// A bar from above, `METRIC=VALUE` (at most VALUE).
    #[arg(long = "max", value_name = "METRIC=VALUE")]
    max: Vec<String>,
    /// The report's title.
    #[arg(long, default_value = "rag-eval report")]
    title: String,
}

#[derive(Clone, Copy, ValueEnum)]
enum ReportFormat {
    /// One self-contained HTML page.
    Html,
    /// Markdown tables (a pull-request comment, `$GITHUB_STEP_SUMMARY`).
    Markdown,
    /// JUnit XML, a test case per query and bar.
    Junit,
}

pub(super) fn run(a: ReportArgs, out: &mut Output) -> Result<()> {
    let mut bars = Vec::new();
    for m in &a.min {
        bars.push(Bar::parse_with(m, Bound::Min)?);
    }
    for m in &a.max {
        bars.push(Bar::parse_with(m, Bound::Max)?);
    }
    let mut runs = Vec::new();
    for path in &a.runs {
        for (label, run) in load_runs(path)? {
            // The same file name twice (runs/a/x.json, runs/b/x.json) still needs two names.
            let mut unique = label.clone();
            let mut n = 2;
            while runs.iter().any(|(l, _): &(String, _)| *l == unique) {
                unique = format!("{label} ({n})");
                n += 1;
            }
            runs.push((unique, run));
        }
    }
    let format = match a.format {
        ReportFormat::Html => Format::Html,
        ReportFormat::Markdown => Format::Markdown,
        ReportFormat::Junit => Format::Junit,
    };
    let text = Report::new(runs)?
        .with_bars(bars)
        .with_title(a.title)
        .render(format);
    match &a.output {
        Some(path) => crate::fs::write_atomic(path, text.as_bytes())?,
        None => out.text(&text)?,
    }
    Ok(())
}
