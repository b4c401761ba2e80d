//! `rag-eval score --conversations FILE`: the tool calls of each conversation against its
//! reference calls, with the agent metrics of `metrics::tool_calls`.

use crate::cli::output::Output;
use crate::conversation::score::{agent_figures, AGENT_METRICS as NAMES};
use crate::conversation::{Format, Reader};
use crate::metrics::{mean_std, Figures, QueryResult};
use anyhow::Result;
use camino::Utf8Path;
use serde::{Serialize, Serializer};

/// What `score --conversations --json` prints: `score --json`'s shape (`level`, `queries`,
/// `metrics`, `std`, `per_query`), a conversation for a query, with the file's format and,
/// per metric in report order, how many conversations had no figure.
#[derive(Serialize)]
struct Card {
    level: &'static str,
    format: &'static str,
    queries: usize,
    metrics: Figures,
    std: Figures,
    per_query: Vec<QueryResult>,
    #[serde(serialize_with = "in_report_order")]
    missing: Vec<(&'static str, usize)>,
}

/// `missing` as a JSON object whose keys keep `metrics`' order (a map would sort them).
fn in_report_order<S: Serializer>(m: &[(&'static str, usize)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(m.iter().copied())
}

fn format_name(f: Option<Format>) -> &'static str {
    match f {
        Some(Format::RagEval) | None => "rag-eval",
        Some(Format::Ragas) => "ragas",
        Some(Format::Deepeval) => "deepeval",
    }
}

pub(super) fn run(path: &Utf8Path, json: bool, out: &mut Output) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| crate::Error::io("read", path, e))?;
    let mut reader = Reader::new(std::io::BufReader::new(file), path.to_owned());
    let mut per_query = Vec::new();
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); NAMES.len()];
    for c in reader.by_ref() {
        let c = c?;
        let mut metrics = Figures::default();
        for (i, v) in agent_figures(&c).into_iter().enumerate() {
            if let Some(v) = v {
                metrics.0.push((NAMES[i].to_owned(), v));
                values[i].push(v);
            }
        }
        per_query.push(QueryResult {
            id: c.id,
            metrics,
            ..QueryResult::default()
        });
    }
    if per_query.is_empty() {
        anyhow::bail!("`{path}` holds no conversation");
    }
    let n = per_query.len();
    let (mut means, mut stds) = (Figures::default(), Figures::default());
    let mut missing = Vec::new();
    for (name, v) in NAMES.iter().zip(&values) {
        if n > v.len() {
            missing.push((*name, n - v.len()));
        }
        // A metric no conversation has a figure for has no mean (never a 0).
        if !v.is_empty() {
            let (m, s) = mean_std(v);
            means.0.push(((*name).to_owned(), m));
            stds.0.push(((*name).to_owned(), s));
        }
    }
    let card = Card {
        level: "conversation",
        format: format_name(reader.format()),
        queries: n,
        metrics: means,
        std: stds,
        per_query,
        missing,
    };
    if json {
        out.json_line(&card)?;
    } else {
        out.text(&table(&card, &values))?;
    }
    Ok(())
}

/// score's table with the number of conversations each mean is over and the number without
/// a figure.
fn table(card: &Card, values: &[Vec<f64>]) -> String {
    let width = NAMES.iter().map(|n| n.len()).max().unwrap_or(6);
    let mut s = format!(
        "conversations ({}), {} conversations\n{:<width$}  {:>8}  {:>8}  {:>5}  {:>7}\n",
        card.format, card.queries, "metric", "mean", "std", "n", "missing"
    );
    for (name, v) in NAMES.iter().zip(values) {
        let missing = card.queries - v.len();
        match (card.metrics.get(name), card.std.get(name)) {
            (Some(m), Some(sd)) => s.push_str(&format!(
                "{name:<width$}  {m:>8.4}  {sd:>8.4}  {:>5}  {missing:>7}\n",
                v.len()
            )),
            _ => s.push_str(&format!(
                "{name:<width$}  {:>8}  {:>8}  {:>5}  {missing:>7}\n",
                "-", "-", 0
            )),
        }
    }
    s
}
