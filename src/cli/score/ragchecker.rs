//! `score --ragchecker IN.json`: RAGChecker's claim-level metrics computed from the check
//! matrices already in a RAGChecker results file, without a judge (or, for results without
//! checks, with the claims judge of `--judge-model`), and written back in RAGChecker's own
//! output format (`--ragchecker-out`) so that its readers read ours unchanged.

use super::super::output::Output;
use super::ScoreArgs;
use crate::chunk::{PositionAwareChunk, RetrievedChunk};
use crate::generator::RagAnswer;
use crate::judge::{
    judge_all, Claims, JudgeConfig, JudgeDetails, JudgeInput, JudgeStatus, JudgeSummary,
};
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
    /// checks in the file, without a judge; results without the four checks are judged by the
    /// claims judge of --judge-model. A figure with nothing to judge is missing.
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
pub(super) fn run(score: &ScoreArgs, input: &Utf8Path, out: &mut Output) -> Result<()> {
    let (a, json) = (&score.ragchecker, score.json);
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
    // Results without their four checks are judged, when a judge is given.
    let mut unchecked = Vec::new();
    for (i, result) in results.iter().enumerate() {
        let at = |e: String| anyhow!("`{input}`: results[{i}]{}: {e}", query_id(result));
        if let Some(field) = read_question(result).map_err(at)? {
            if score.judge.judge_model.is_none() {
                return Err(at(format!(
                    "has no `{field}`: judging claims needs a judge: give --judge-model (and \
                     --judge-url for a local server), or results with all four checks ({})",
                    CHECKS.join(", ")
                )));
            }
            unchecked.push(i);
        }
    }
    let mut summary_of_judge = None;
    let mut unjudged = std::collections::HashSet::new();
    if let (Some(model), false) = (&score.judge.judge_model, unchecked.is_empty()) {
        let (summary, judged) = judge(score, model, results, &unchecked)?;
        unjudged = unchecked
            .into_iter()
            .filter(|i| !judged.contains(i))
            .collect();
        summary_of_judge = Some(summary);
    }
    let mut scored = Vec::with_capacity(results.len());
    for (i, result) in results.iter_mut().enumerate() {
        // A result the judge could not check has every figure missing.
        let m = if unjudged.contains(&i) {
            ClaimMetrics::default()
        } else {
            read_checks(result)
                .map(|c| claim_metrics(&c))
                .map_err(|e| anyhow!("`{input}`: results[{i}]{}: {e}", query_id(result)))?
        };
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
    if let Some(summary) = &summary_of_judge {
        for line in summary.usage_lines().lines() {
            note!("{line}");
        }
    }
    let gate = summary_of_judge
        .as_ref()
        .and_then(|s| s.gate_failure("--max-invalid-share"));
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
    match gate {
        Some(failure) => bail!("{failure}"),
        None => Ok(()),
    }
}

/// Judges the results `unchecked` with the claims judge of `model` and writes their claims
/// and checks into them, as RAGChecker's checker does. The judge's summary, and the results
/// it checked (the others, `undetermined`, `invalid` or `error`, keep no checks).
fn judge(
    score: &ScoreArgs,
    model: &str,
    results: &mut [Value],
    unchecked: &[usize],
) -> Result<(JudgeSummary, Vec<usize>)> {
    let j = &score.judge;
    if j.judge_samples > 1 {
        bail!("--judge-samples {}: RAGChecker's format holds one set of checks per result; judge them once", j.judge_samples);
    }
    if !j.criteria.is_empty() || j.judges.iter().any(|n| n.trim() != claims::JUDGE) {
        bail!("--ragchecker judges claims only: --judges and --criteria do not apply");
    }
    let context = match &score.cache {
        None => crate::components::Context::new(),
        Some(text) => crate::cli::with_cache(crate::components::Context::new(), text)?,
    }
    .with_limit(score.timeout.limit());
    let url = j
        .judge_url
        .as_deref()
        .unwrap_or(crate::http::OPENAI_BASE_URL);
    let (llm, http) = crate::cli::answering::client(
        model,
        url,
        &score.api_key_env,
        context.cache(),
        score.timeout,
        j.concurrency,
        true,
    )?;
    let text = |v: &Value, field: &str| {
        v.get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let owned: Vec<(String, String, RagAnswer, String)> = unchecked
        .iter()
        .map(|&i| {
            let r = &results[i];
            let id = match r.get("query_id") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => format!("results[{i}]"),
            };
            let contexts = r["retrieved_context"]
                .as_array()
                .map(|docs| {
                    docs.iter()
                        .enumerate()
                        .map(|(j, d)| {
                            let body = text(d, "text");
                            let doc = match text(d, "doc_id") {
                                id if id.is_empty() => format!("retrieved_context[{j}]"),
                                id => id,
                            };
                            let end = body.chars().count();
                            RetrievedChunk::new(PositionAwareChunk::new(doc, 0, end, body), 0.0)
                        })
                        .collect()
                })
                .unwrap_or_default();
            let answer = RagAnswer {
                answer: text(r, "response"),
                contexts,
            };
            (id, text(r, "query"), answer, text(r, "gt_answer"))
        })
        .collect();
    let inputs: Vec<JudgeInput<'_>> = owned
        .iter()
        .map(|(id, question, answer, reference)| JudgeInput {
            query_id: id,
            question,
            answer,
            reference: Some(reference),
        })
        .collect();
    let config = JudgeConfig {
        max_invalid_share: j.max_invalid_share,
        concurrency: j.concurrency,
        ..JudgeConfig::default()
    };
    let judge = Claims::new(llm);
    let mut run = crate::cli::runtime()?.block_on(judge_all(&judge, &inputs, &config));
    run.summary.retries = http.stats().retries;
    let mut judged = Vec::new();
    for (&i, judgement) in unchecked.iter().zip(&run.judgements) {
        let Some(sample) = judgement
            .samples
            .iter()
            .find(|s| s.status == JudgeStatus::Ok)
        else {
            continue;
        };
        if let (
            JudgeDetails::Claims {
                response_claims,
                reference_claims,
                answer2response,
                response2answer,
                retrieved2response,
                retrieved2answer,
                ..
            },
            Some(o),
        ) = (&sample.details, results[i].as_object_mut())
        {
            let row = |r: &[crate::metrics::ClaimCheck]| {
                json!(r.iter().map(|c| c.verdict).collect::<Vec<_>>())
            };
            let matrix = |m: &[Vec<crate::metrics::ClaimCheck>]| {
                Value::Array(m.iter().map(|r| row(r)).collect())
            };
            o.insert("response_claims".into(), json!(response_claims));
            o.insert("gt_answer_claims".into(), json!(reference_claims));
            o.insert("answer2response".into(), row(answer2response));
            o.insert("response2answer".into(), row(response2answer));
            o.insert("retrieved2response".into(), matrix(retrieved2response));
            o.insert("retrieved2answer".into(), matrix(retrieved2answer));
            judged.push(i);
        }
    }
    Ok((run.summary, judged))
}

/// Checks what a judge reads of a result (its question, answers and chunks); the first of
/// the four checks it lacks, if any.
fn read_question(result: &Value) -> Result<Option<&'static str>, String> {
    let o = result.as_object().ok_or("is not an object")?;
    for field in ["query_id", "query", "gt_answer", "response"] {
        if o.get(field).is_none_or(Value::is_null) {
            return Err(format!("has no `{field}`"));
        }
    }
    match o.get("retrieved_context") {
        Some(Value::Array(docs)) => {
            for (j, d) in docs.iter().enumerate() {
                if !d.get("text").is_some_and(Value::is_string) {
                    return Err(format!("`retrieved_context`[{j}] has no `text` string"));
                }
            }
        }
        _ => return Err("has no `retrieved_context` list".into()),
    }
    Ok(CHECKS
        .into_iter()
        .find(|field| o.get(*field).is_none_or(Value::is_null)))
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
    if let Some(field) = read_question(result)? {
        return Err(format!("has no `{field}`"));
    }
    let chunks = o["retrieved_context"].as_array().map_or(0, Vec::len);
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
