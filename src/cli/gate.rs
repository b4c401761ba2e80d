//! `rag-eval gate`: the final step of a sharded run, gating over the run group its shards
//! wrote into the run store.

use super::output::Output;
use anyhow::{Context, Result};
use camino::Utf8PathBuf;
use clap::Args;

#[derive(Args)]
pub(super) struct GateArgs {
    /// The run group the shards wrote into (default: `RAG_EVAL_RUN_GROUP`, else the CI's run:
    /// `github-$GITHUB_RUN_ID`, `gitlab-$CI_PIPELINE_ID`).
    #[arg(long, value_name = "NAME")]
    group: Option<String>,
    /// Gate only this case (repeatable; default: every case the group holds).
    #[arg(long = "case", value_name = "NAME")]
    cases: Vec<String>,
    /// The folder of the golden snapshots, `<case>.snap`.
    #[arg(long, value_name = "DIR", default_value = "golden")]
    golden: Utf8PathBuf,
    /// The store: a SQLite file, a `postgres://` URL (default: `RAG_EVAL_RUNS`, else
    /// `.rag-eval/runs.sqlite`).
    #[arg(long, value_name = "FILE|URL")]
    store: Option<String>,
    /// One JSON object per case (JSONL: `case`, `queries`, `reported`, `problems`) instead of
    /// sentences.
    #[arg(long)]
    json: bool,
}

/// Gates every case of the group; `Ok(true)` when one fails. Figures that dropped below a
/// golden snapshot are told as a failing summary tells them (the means, the five queries that
/// dropped most, how many more did); with `verbose` (`-v`/`--verbose`), each query's figures
/// that dropped, one a line.
pub(super) fn run(args: GateArgs, verbose: bool, out: &mut Output) -> Result<bool> {
    let group = args
        .group
        .or_else(crate::harness::group_from_env)
        .context("name the run group: --group NAME, or RAG_EVAL_RUN_GROUP")?;
    let choice = match &args.store {
        Some(s) => crate::runs::StoreChoice::parse(Some(s)),
        None => crate::runs::StoreChoice::from_env()?,
    };
    let store = super::runs::open_to_read(&choice)?;
    let verdicts = crate::harness::gate(
        store.as_ref(),
        &group,
        &args.cases,
        args.golden.as_std_path(),
        verbose,
    )?;
    for v in &verdicts {
        if args.json {
            out.json_line(v)?;
            continue;
        }
        let head = format!(
            "{} {}: {} of {} queries reported",
            if v.problems.is_empty() {
                "ok"
            } else {
                "FAILED"
            },
            v.case,
            v.reported,
            v.queries
        );
        out.text(&format!("{head}\n"))?;
        for p in &v.problems {
            out.text(&format!("  {}\n", p.replace('\n', "\n  ")))?;
        }
    }
    Ok(verdicts.iter().any(|v| !v.problems.is_empty()))
}
