//! The `langsmith_experiment = "NAME"` case option: the case's runs and feedback uploaded as a
//! LangSmith experiment once its figures are known.

use super::case::Case;
use crate::langsmith::{Experiment, LangSmith, API_KEY_ENV};
use camino::Utf8PathBuf;

/// Uploads `case`'s evaluation as the experiment `name`, resuming from its journal; without
/// `LANGSMITH_API_KEY`, says so on one line and uploads nothing.
pub(super) fn upload(case: &Case, name: &str) -> Result<(), String> {
    if std::env::var(API_KEY_ENV).map_or(true, |k| k.trim().is_empty()) {
        println!(
            "NOTE {}: {API_KEY_ENV} is not set; the LangSmith experiment `{name}` was not uploaded",
            case.spec.name
        );
        return Ok(());
    }
    let evaluation = case.evaluation()?;
    let answers = case
        .answers()?
        .map(|a| {
            a.queries
                .iter()
                .map(|(id, e)| (id.clone(), e.answer.clone()))
                .collect()
        })
        .unwrap_or_default();
    let journal = journal_path(name);
    let experiment = Experiment::new(name)
        .description(format!(
            "#[rag_eval] case `{}` over {}",
            case.spec.name, case.spec.dataset
        ))
        .metadata("case", case.spec.name)
        .journal(journal.clone())
        .answers(answers);
    let failed = |e: crate::Error| {
        format!(
            "case `{}`: uploading the LangSmith experiment `{name}` failed (the local results are complete; run the tests again to continue the upload from {journal}): {e}",
            case.spec.name
        )
    };
    let client = LangSmith::from_env().map_err(failed)?;
    let report = super::runtime()
        .block_on(experiment.upload(&client, &evaluation))
        .map_err(failed)?;
    println!(
        "LANGSMITH {}: experiment `{name}`: {} runs and {} feedback sent, {} already there",
        case.spec.name, report.runs_sent, report.feedback_sent, report.already_acknowledged
    );
    Ok(())
}

/// The upload's journal under the target directory (`<target>/<profile>/rag-eval-langsmith/`),
/// beside the test binary, so that a later `cargo test` continues it and sends nothing twice.
fn journal_path(name: &str) -> Utf8PathBuf {
    let default = Experiment::default_journal(name);
    let profile = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.to_path_buf()))
        .and_then(|dir| Utf8PathBuf::try_from(dir).ok());
    match (profile, default.file_name()) {
        (Some(dir), Some(file)) => dir.join("rag-eval-langsmith").join(file),
        _ => default,
    }
}
