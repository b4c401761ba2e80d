//! `rag-eval report`: runs rendered as HTML, Markdown or JUnit.

use super::compare::StatsArgs;
use super::output::Output;
use crate::report::{Bar, Bound, Format, Report};
use anyhow::Result;
use camino::Utf8PathBuf;
use clap::{Args, ValueEnum};

#[derive(Args)]
pub(super) struct ReportArgs {
    /// Runs: ids in the run store (a unique prefix, `latest`, `latest~N`), or JSON files
    /// written by `rag-eval eval --json`, `score --json` or `runs export` (a file with several
    /// runs, one per line, brings them all). The first run is the baseline.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<String>,
    /// The store run ids are looked up in: a SQLite file, a `postgres://` URL (default:
    /// `RAG_EVAL_RUNS`, else `.rag-eval/runs.sqlite`).
    #[arg(long, value_name = "FILE|URL")]
    store: Option<String>,
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
    /// Show this metric in the charts, the by-difficulty table and the query table, by
    /// report name (`span_recall@5`) or base name; repeat for several (default: the headline
    /// retrieval metrics and the answer metrics the runs have).
    #[arg(long = "metric", value_name = "METRIC")]
    metrics: Vec<String>,
    /// The report's title.
    #[arg(long, default_value = "rag-eval report")]
    title: String,
    #[command(flatten)]
    stats: StatsArgs,
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
    // A report shows runs of different datasets too, on their shared query ids, and says so.
    let options = a.stats.options(true)?;
    let mut bars = Vec::new();
    for m in &a.min {
        bars.push(Bar::parse_with(m, Bound::Min)?);
    }
    for m in &a.max {
        bars.push(Bar::parse_with(m, Bound::Max)?);
    }
    if let Some(path) = &a.output {
        // The runs given as files must survive the report.
        let files: Vec<&camino::Utf8Path> = a
            .runs
            .iter()
            .map(camino::Utf8Path::new)
            .filter(|p| p.is_file())
            .collect();
        crate::dataset::destination::check_output(path, &files, None)?;
    }
    let runs = super::runs::load(&a.runs, a.store.as_deref())?;
    let format = match a.format {
        ReportFormat::Html => Format::Html,
        ReportFormat::Markdown => Format::Markdown,
        ReportFormat::Junit => Format::Junit,
    };
    let text = Report::new(runs)?
        .with_metrics(&a.metrics)?
        .with_bars(bars)
        .with_title(a.title)
        .with_compare_options(options)
        .with_alpha(a.stats.alpha)
        .render(format);
    match &a.output {
        Some(path) => crate::fs::write_atomic(path, text.as_bytes())?,
        None => out.text(&text)?,
    }
    Ok(())
}
