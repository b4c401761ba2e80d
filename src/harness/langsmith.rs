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
    // Without the `answers` feature no case answers: there are none to upload.
    #[cfg(not(feature = "answers"))]
    let answers = std::collections::HashMap::new();
    #[cfg(feature = "answers")]
    let answers = case
        .answers()?
        .map(|a| {
            a.queries
                .iter()
                .map(|(id, e)| (id.clone(), e.answer.clone()))
                .collect()
        })
        .unwrap_or_default();
    let journal = journal_path(case, name)?;
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

/// The upload's journal, `golden/langsmith/<experiment>.jsonl` beside the case's snapshots:
/// a later `cargo test` continues an interrupted upload there and sends nothing twice.
fn journal_path(case: &Case, name: &str) -> Result<Utf8PathBuf, String> {
    let default = Experiment::default_journal(name);
    let file = default.file_name().unwrap_or("experiment.jsonl");
    let dir = Utf8PathBuf::try_from(case.golden_dir().join("langsmith"))
        .map_err(|e| format!("the golden folder's path is not UTF-8: {e}"))?;
    Ok(dir.join(file))
}
