//! `--labels FILE` of `score`, `eval` and `align`: people's labels put into a run.

use crate::align::Labels;
use crate::metrics::RunResult;
use anyhow::Result;
use camino::Utf8Path;

/// Reads the labels at `path` into `run`, with a note naming the labelled queries the run does
/// not have; returns the labels (with their claim verdicts, which label no metric).
pub(super) fn apply(path: &Utf8Path, run: &mut RunResult) -> Result<Labels> {
    let labels = Labels::load(path)?;
    let unknown = labels.apply(run);
    if !unknown.is_empty() {
        let shown: Vec<String> = unknown
            .iter()
            .take(5)
            .map(|s| crate::escape::terminal(s))
            .collect();
        note!(
            "{} labelled quer{} of `{path}` are not in the run and are left out ({}{})",
            unknown.len(),
            if unknown.len() == 1 { "y" } else { "ies" },
            shown.join(", "),
            if unknown.len() > 5 { ", …" } else { "" }
        );
    }
    Ok(labels)
}
