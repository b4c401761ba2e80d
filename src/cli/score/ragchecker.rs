//! `score --ragchecker IN.json`: RAGChecker's claim-level metrics computed from the check
//! matrices already in a RAGChecker results file, without a judge, and written back in
//! RAGChecker's own output format (`--ragchecker-out`) so that its readers read ours unchanged.

use super::super::output::Output;
use crate::metrics::claims::{self, claim_metrics, ClaimChecks, ClaimMetrics, Verdict};
use anyhow::{anyhow, bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use clap::Args;
use serde_json::{json, Map, Value};

/// The flags of `score --ragchecker`.
#[derive(Args, Default)]
pub(in crate::cli) struct RagcheckerArgs {
    /// RAGChecker results JSON (`{"results":[{query_id, …, answer2response, response2answer,
    /// retrieved2response, retrieved2answer}]}`): its claim-level metrics computed from the
    /// checks in the file, without a judge; a figure with nothing to judge is missing.
    #[arg(
        long,
        value_name = "IN.json",
        conflicts_with_all = ["k", "measures", "label", "dry_run", "no_record"]
    )]
    pub ragchecker: Option<Utf8PathBuf>,
    /// Write the results back in RAGChecker's output format: each result's `metrics`, and
    /// `metrics.overall_metrics`, `retriever_metrics`, `generator_metrics` as percentages.
    #[arg(long, value_name = "OUT.json", requires = "ragchecker")]
    pub ragchecker_out: Option<Utf8PathBuf>,
}

/// The four check fields, each required.
const CHECKS: [&str; 4] = [
    "answer2response",
    "response2answer",
    "retrieved2response",
    "retrieved2answer",
];

/// Scores the file `input`, prints the means and writes RAGChecker's output when asked.
pub(super) fn run(
    a: &RagcheckerArgs,
    input: &Utf8Path,
    json: bool,
    out: &mut Output,
) -> Result<()> {
    if let Some(path) = &a.ragchecker_out {
        // The input is the record of the checks: a run never replaces it.
        if let (Ok(i), Ok(o)) = (std::fs::canonicalize(input), std::fs::canonicalize(path)) {
            if i == o {
                bail!("--ragchecker-out `{path}` is the input file: give another path (the input is never written over)");
            }
        }
    }
    let text = std::fs::read_to_string(input).map_err(|e| crate::Error::io("read", input, e))?;
    let mut doc: Value = serde_json::from_str(crate::fs::strip_bom(&text))
        .with_context(|| format!("`{input}` is not JSON"))?;
    let results = doc
        .get_mut("results")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| {
            anyhow!("`{input}` has no `results` list (RAGChecker's format: {{\"results\": […]}})")
        })?;
    let mut scored = Vec::with_capacity(results.len());
    for (i, result) in results.iter_mut().enumerate() {
        let m = read_checks(result)
            .map(|c| claim_metrics(&c))
            .map_err(|e| anyhow!("`{input}`: results[{i}]{}: {e}", query_id(result)))?;
        let per_query: Map<String, Value> = claims::NAMES
            .iter()
            .zip(m.values())
            .map(|((_, theirs, _), v)| (theirs.to_string(), json!(v)))
            .collect();
        if let Some(o) = result.as_object_mut() {
            o.insert("metrics".into(), Value::Object(per_query));
        }
        scored.push(m);
    }
    let summary = summarize(&scored);
    let mut groups = Map::new();
    for ((_, theirs, group), s) in claims::NAMES.iter().zip(&summary) {
        let entry = groups
            .entry(group.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(g) = entry.as_object_mut() {
            g.insert(theirs.to_string(), json!(s.mean.map(claims::percent)));
        }
    }
    if let Some(o) = doc.as_object_mut() {
        o.insert("metrics".into(), Value::Object(groups));
    }
    if let Some(path) = &a.ragchecker_out {
        let mut bytes = serde_json::to_vec_pretty(&doc)?;
        bytes.push(b'\n');
        crate::fs::write_atomic(path, &bytes)?;
    }
    if json {
        let metrics: Map<String, Value> = summary
            .iter()
            .map(|s| {
                let v = json!({"mean": s.mean, "scored": s.scored, "missing": s.missing,
                    "ragchecker": s.theirs});
                (s.ours.to_string(), v)
            })
            .collect();
        out.json_line(&json!({"input": input, "queries": scored.len(), "metrics": metrics}))?;
    } else {
        out.text(&table(input, scored.len(), &summary))?;
    }
    Ok(())
}

/// One figure over the file: its mean over the queries that have it.
struct Summary {
    ours: &'static str,
    theirs: &'static str,
    mean: Option<f64>,
    scored: usize,
    missing: usize,
}

fn summarize(scored: &[ClaimMetrics]) -> Vec<Summary> {
    claims::NAMES
        .iter()
        .enumerate()
        .map(|(k, (ours, theirs, _))| {
            let values: Vec<f64> = scored.iter().filter_map(|m| m.values()[k]).collect();
            Summary {
                ours,
                theirs,
                mean: claims::numpy_mean(&values),
                scored: values.len(),
                missing: scored.len() - values.len(),
            }
        })
        .collect()
}

fn table(input: &Utf8Path, queries: usize, summary: &[Summary]) -> String {
    let mut s = format!("RAGChecker checks of `{input}`: {queries} queries\n");
    s.push_str(&format!(
        "{:<32}  {:>8}  {:>6}  {:>7}  ragchecker\n",
        "metric", "mean", "scored", "missing"
    ));
    for m in summary {
        let mean = m.mean.map_or("missing".into(), |v| format!("{v:.4}"));
        s.push_str(&format!(
            "{:<32}  {mean:>8}  {:>6}  {:>7}  {}\n",
            m.ours, m.scored, m.missing, m.theirs
        ));
    }
    s
}

/// ` (query_id X)` for an error message, when the result has one.
fn query_id(result: &Value) -> String {
    match result.get("query_id") {
        Some(Value::String(s)) => format!(" (query_id `{s}`)"),
        Some(Value::Number(n)) => format!(" (query_id {n})"),
        _ => String::new(),
    }
}

/// The checks of one result, or what is wrong with them.
fn read_checks(result: &Value) -> Result<ClaimChecks, String> {
    let o = result.as_object().ok_or("is not an object")?;
    for field in ["query_id", "query", "gt_answer", "response"] {
        if o.get(field).is_none_or(Value::is_null) {
            return Err(format!("has no `{field}`"));
        }
    }
    let chunks = match o.get("retrieved_context") {
        Some(Value::Array(docs)) => {
            for (j, d) in docs.iter().enumerate() {
                if !d.get("text").is_some_and(Value::is_string) {
                    return Err(format!("`retrieved_context`[{j}] has no `text` string"));
                }
            }
            docs.len()
        }
        _ => return Err("has no `retrieved_context` list".into()),
    };
    for field in CHECKS {
        if o.get(field).is_none_or(Value::is_null) {
            return Err(format!(
                "has no `{field}`: judging claims needs a judge, which `score --ragchecker` \
                 does not have yet; give results with all four checks ({})",
                CHECKS.join(", ")
            ));
        }
    }
    let row = |field: &str, v: &Value, at: &str| -> Result<Vec<Verdict>, String> {
        let list = v
            .as_array()
            .ok_or_else(|| format!("`{field}`{at} is not a list of verdicts"))?;
        list.iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().and_then(Verdict::parse).ok_or_else(|| {
                    format!(
                        "`{field}`{at}[{i}] is {v}, not a verdict \
                         (\"Entailment\", \"Neutral\" or \"Contradiction\")"
                    )
                })
            })
            .collect()
    };
    let matrix = |field: &str| -> Result<Vec<Vec<Verdict>>, String> {
        let rows = o[field]
            .as_array()
            .ok_or_else(|| format!("`{field}` is not a list of lists of verdicts"))?;
        rows.iter()
            .enumerate()
            .map(|(i, r)| row(field, r, &format!("[{i}]")))
            .collect()
    };
    let answer2response = row("answer2response", &o["answer2response"], "")?;
    let response2answer = row("response2answer", &o["response2answer"], "")?;
    for (claims, checks, n) in [
        ("response_claims", "answer2response", answer2response.len()),
        ("gt_answer_claims", "response2answer", response2answer.len()),
    ] {
        match o.get(claims) {
            None | Some(Value::Null) => {}
            Some(Value::Array(c)) if c.len() == n => {}
            Some(Value::Array(c)) => {
                return Err(format!(
                    "`{claims}` has {} claims but `{checks}` {n} verdicts",
                    c.len()
                ))
            }
            Some(_) => return Err(format!("`{claims}` is not a list")),
        }
    }
    ClaimChecks::new(
        answer2response,
        response2answer,
        matrix("retrieved2response")?,
        matrix("retrieved2answer")?,
        chunks,
    )
    .map_err(|e| e.to_string())
}
