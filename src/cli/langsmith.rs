//! `rag-eval dataset push|pull` and the LangSmith upload of `rag-eval eval`.

use super::output::Output;
use super::CorpusArgs;
use crate::dataset::{self, AnyDataset};
use crate::eval::EvaluationResult;
use crate::langsmith::{self, Experiment, LangSmith};
use crate::runs::RunRecord;
use anyhow::{bail, Context, Result};
use camino::Utf8PathBuf;
use clap::Args;

/// Exit code of `rag-eval eval` when the evaluation succeeded (its output is printed in
/// full) but the LangSmith upload failed.
pub(super) const UPLOAD_FAILED: u8 = 3;

/// An upload failure after a complete local result: `main` exits with [`UPLOAD_FAILED`].
#[derive(Debug)]
pub(super) struct UploadFailed(pub(super) String);

impl std::fmt::Display for UploadFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UploadFailed {}

#[derive(Args)]
pub(super) struct PushArgs {
    /// The dataset JSONL (token- or chunk-level).
    file: Utf8PathBuf,
    /// The LangSmith dataset: created if absent; pushing to it again updates changed examples
    /// and creates missing ones.
    #[arg(long)]
    name: String,
    /// A description for a dataset that is created.
    #[arg(long)]
    description: Option<String>,
    #[command(flatten)]
    timeout: super::TimeoutArgs,
}

#[derive(Args)]
pub(super) struct PullArgs {
    /// The LangSmith dataset.
    name: String,
    /// Where to write the JSONL (atomically).
    #[arg(short = 'o', long)]
    output: Utf8PathBuf,
    /// The corpus the dataset is checked against after the pull.
    #[command(flatten)]
    corpus: CorpusArgs,
    #[command(flatten)]
    timeout: super::TimeoutArgs,
    #[command(flatten)]
    max_rows: MaxRowsArgs,
}

/// `--max-rows`, shared by the commands that read LangSmith's listings.
#[derive(Args, Clone, Copy)]
pub(super) struct MaxRowsArgs {
    /// Most items one LangSmith listing may hold (a dataset's examples, an experiment's runs,
    /// the feedback on them); a server that lists more fails the command, so pages that never
    /// end cannot run or fill the memory for ever
    #[arg(
        long,
        value_name = "N",
        default_value_t = langsmith::DEFAULT_MAX_ROWS as u64,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    max_rows: u64,
}

impl MaxRowsArgs {
    fn apply(self, client: LangSmith) -> LangSmith {
        client.with_max_rows(usize::try_from(self.max_rows).unwrap_or(usize::MAX))
    }
}

/// `--langsmith-*` options of `rag-eval eval`.
#[derive(Args)]
pub(super) struct ExperimentArgs {
    /// Upload the run as a LangSmith experiment of this name: one run per query with its
    /// retrieved chunks, feedback per query and metric. A failed upload exits with code 3
    /// after the result is printed; the same command continues it.
    #[arg(long, value_name = "NAME")]
    langsmith_experiment: Option<String>,
    /// The LangSmith dataset (see `dataset push`) the experiment's runs are linked to.
    #[arg(long, value_name = "NAME", requires = "langsmith_experiment")]
    langsmith_dataset: Option<String>,
    /// Where the upload records what LangSmith acknowledged (default
    /// `target/rag-eval-langsmith/NAME.jsonl`).
    #[arg(long, value_name = "FILE", requires = "langsmith_experiment")]
    langsmith_journal: Option<Utf8PathBuf>,
}

fn client(timeout: super::TimeoutArgs) -> Result<LangSmith> {
    let client = LangSmith::new(timeout.apply(LangSmith::config_from_env()))
        .context("cannot set up the LangSmith client")?;
    let hosted =
        client.http().config().base_url.trim_end_matches('/') == langsmith::DEFAULT_ENDPOINT;
    if hosted && !client.http().has_api_key() {
        bail!(
            "{} is not set; LangSmith's hosted API needs a key ({} names another server)",
            langsmith::API_KEY_ENV,
            langsmith::ENDPOINT_ENV
        );
    }
    Ok(client)
}

pub(super) fn push(a: PushArgs) -> Result<()> {
    let d = dataset::load(&a.file)?;
    let client = client(a.timeout)?;
    let report = pollster::block_on(langsmith::push(
        &client,
        &a.name,
        &d,
        a.description.as_deref(),
    ))
    .with_context(|| format!("cannot push `{}` to LangSmith dataset `{}`", a.file, a.name))?;
    note!(
        "{} LangSmith dataset `{}` ({}) at {}: {} examples created, {} updated, {} unchanged",
        if report.created {
            "created"
        } else {
            "pushed to"
        },
        a.name,
        report.dataset_id,
        client.endpoint(),
        report.examples_created,
        report.examples_updated,
        report.examples_unchanged
    );
    if !report.remote_only.is_empty() {
        note!(
            "note: {} examples in LangSmith are not in `{}` and were left alone (first: {})",
            report.remote_only.len(),
            a.file,
            report.remote_only[..report.remote_only.len().min(5)].join(", ")
        );
    }
    Ok(())
}

/// The LangSmith experiment `name` as a run record (origin `langsmith`, labelled by the name).
pub(super) fn pull_experiment(
    name: &str,
    timeout: super::TimeoutArgs,
    max_rows: MaxRowsArgs,
) -> Result<RunRecord> {
    let client = max_rows.apply(client(timeout)?);
    let result = pollster::block_on(langsmith::fetch_experiment(&client, name))
        .with_context(|| format!("cannot pull LangSmith experiment `{name}`"))?;
    let dataset = result
        .config
        .as_ref()
        .and_then(|c| c.dataset.clone())
        .unwrap_or_default();
    let mut record = RunRecord::new("langsmith", &dataset, result);
    record.label = Some(name.to_owned());
    Ok(record)
}

pub(super) fn pull(a: PullArgs, out: &mut Output) -> Result<()> {
    crate::dataset::destination::check_output(&a.output, &[], Some(&a.corpus.corpus))?;
    let corpus = a.corpus.load()?;
    let client = a.max_rows.apply(client(a.timeout)?);
    let pulled = pollster::block_on(langsmith::pull(&client, &a.name))
        .with_context(|| format!("cannot pull LangSmith dataset `{}`", a.name))?;
    if pulled.rows == 0 {
        bail!(
            "LangSmith dataset `{}` has no examples; `{}` was not written",
            a.name,
            a.output
        );
    }
    crate::fs::write_atomic(&a.output, pulled.jsonl.as_bytes())?;
    let v = dataset::validate(&a.output, &corpus)?;
    for n in &v.notes {
        note!("note: {n}");
    }
    if !v.is_valid() {
        for p in &v.problems {
            note!("{p}");
        }
        bail!(
            "wrote {} rows of LangSmith dataset `{}` to {}, but they do not validate against {}: {} problem{}",
            pulled.rows,
            a.name,
            a.output,
            a.corpus.corpus,
            v.problems.len(),
            if v.problems.len() == 1 { "" } else { "s" }
        );
    }
    let level = v.dataset.as_ref().map_or("?", AnyDataset::level);
    out.text(&format!(
        "{}: {} {level}-level rows from LangSmith dataset `{}`, valid against {}\n",
        a.output, pulled.rows, a.name, a.corpus.corpus
    ))?;
    Ok(())
}

impl ExperimentArgs {
    /// Checks the settings before the evaluation runs, so a mistake costs no evaluation.
    pub(super) fn check(&self, timeout: super::TimeoutArgs) -> Result<Option<LangSmith>> {
        if self.langsmith_experiment.is_none() {
            return Ok(None);
        }
        Ok(Some(client(timeout)?))
    }

    /// Uploads each result; several (one per chunker) get the chunker's label after the name.
    /// Any failure becomes [`UploadFailed`].
    pub(super) fn upload(
        &self,
        client: &LangSmith,
        results: &[(String, EvaluationResult)],
    ) -> Result<()> {
        let Some(name) = &self.langsmith_experiment else {
            return Ok(());
        };
        for (i, (label, result)) in results.iter().enumerate() {
            let name = if results.len() == 1 {
                name.clone()
            } else {
                format!("{name} [{label}]")
            };
            let mut experiment = Experiment::new(&name);
            if let Some(d) = &self.langsmith_dataset {
                experiment = experiment.dataset(d);
            }
            if let Some(j) = &self.langsmith_journal {
                let j = if results.len() == 1 {
                    j.clone()
                } else {
                    Utf8PathBuf::from(format!("{j}.{i}"))
                };
                experiment = experiment.journal(j);
            }
            match pollster::block_on(experiment.upload(client, result)) {
                Ok(r) => note!(
                    "LangSmith experiment `{name}` ({}) at {}: {} runs and {} feedback sent{}",
                    r.session_id,
                    client.endpoint(),
                    r.runs_sent,
                    r.feedback_sent,
                    if r.already_acknowledged > 0 {
                        format!(", {} already there", r.already_acknowledged)
                    } else {
                        String::new()
                    }
                ),
                Err(e) => {
                    return Err(UploadFailed(format!(
                        "the LangSmith upload of experiment `{name}` failed: {e}; the result above is complete; run the same command again to continue the upload"
                    ))
                    .into())
                }
            }
        }
        Ok(())
    }
}
