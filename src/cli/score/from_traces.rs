//! `rag-eval score --traces`: OpenTelemetry traces turned into the answers that
//! `score --answers` scores, so both give the same figures for the same run.

use super::ScoreArgs;
use crate::answers::Answers;
use crate::corpus::Corpus;
use crate::dataset::AnyDataset;
use crate::traces::{self, Join, MappedTrace, Options, Unmatched};
use anyhow::{bail, Context as _, Result};
use camino::Utf8Path;

/// The traces of `path`, mapped as the options say.
pub(super) fn read(a: &ScoreArgs, path: &Utf8Path) -> Result<Vec<MappedTrace>> {
    let options = Options {
        join_attribute: a.join_attribute.clone(),
        retrievals: a.retrievals,
    };
    let traces = traces::read(path, &options)?;
    if traces.is_empty() {
        bail!("`{path}` holds no span");
    }
    Ok(traces)
}

/// The traces matched with the dataset's rows, as answers (each document's id kept when it
/// names a document of `corpus`), and the match, whose unmatched traces and rows are named.
pub(super) fn answers(
    traces: &[MappedTrace],
    a: &ScoreArgs,
    path: &Utf8Path,
    dataset: &AnyDataset,
    corpus: Option<&Corpus>,
) -> Result<(Answers, Join)> {
    let (rows, source): (Vec<(&str, &str)>, &str) = match dataset {
        AnyDataset::Token(d) => (
            d.examples()
                .iter()
                .map(|e| (e.id.as_str(), e.query.as_str()))
                .collect(),
            d.source(),
        ),
        AnyDataset::Chunk(d) => (
            d.examples()
                .iter()
                .map(|e| (e.id.as_str(), e.query.as_str()))
                .collect(),
            d.source(),
        ),
    };
    let joined = traces::join(traces, &rows, a.join_attribute.as_deref());
    note!(
        "{} of {} traces of `{path}` matched rows of `{source}` ({})",
        joined.matched_traces,
        traces.len(),
        match &a.join_attribute {
            Some(key) => format!("by `{key}`, else by the question's text"),
            None => "by the question's text".to_owned(),
        }
    );
    if !joined.unmatched_traces.is_empty() {
        note!(
            "warning: {} left out:\n{}",
            if joined.unmatched_traces.len() == 1 {
                "1 trace matches no row and is".to_owned()
            } else {
                format!(
                    "{} traces match no row and are",
                    joined.unmatched_traces.len()
                )
            },
            listed(&joined.unmatched_traces, Some(path))
        );
    }
    if !joined.unmatched_rows.is_empty() {
        note!(
            "{} row{} of `{source}` no trace answers: {}",
            joined.unmatched_rows.len(),
            if joined.unmatched_rows.len() == 1 {
                ""
            } else {
                "s"
            },
            listed(&joined.unmatched_rows, None)
        );
    }
    if joined.matched.is_empty() {
        bail!(
            "no trace of `{path}` matches a row of `{source}`: give --join-attribute KEY if the system puts the row's id on its spans"
        );
    }
    let is_document = |id: &str| corpus.is_some_and(|c| c.get(id).is_some());
    let jsonl = traces::answers_jsonl(traces, &joined, &is_document);
    let answers = Answers::parse(&jsonl, path.to_owned())
        .with_context(|| format!("the answers of the traces of `{path}`"))?;
    Ok((answers, joined))
}

/// Up to ten of `items`: a trace as `file:line: id: why`, a row as its id.
fn listed(items: &[Unmatched], path: Option<&Utf8Path>) -> String {
    let mut shown: Vec<String> = items
        .iter()
        .take(10)
        .map(|u| match path {
            Some(p) => format!("{p}:{}: trace {}: {}", u.line, u.id, u.why),
            None => format!("`{}`", u.id),
        })
        .collect();
    if items.len() > shown.len() {
        shown.push("…".to_owned());
    }
    shown.join(if path.is_some() { "\n" } else { ", " })
}
