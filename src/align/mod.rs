//! Whether a run's figures agree with people: [`Labels`] per query and metric, [`Alignment`]
//! per labelled metric, and the judge-corrected means of [`corrected_means`].
//!
//! Labels are read from a labels file, one JSON line per query,
//! `{"id": "q1", "labels": {"faithfulness": 1}}`, or from a dataset whose rows carry
//! `outputs.labels`. A value is a number in [0, 1] (the scale of every metric's figures; a 1–5
//! grade is refused, not taken as it is), `true`/`false` or `"pass"`/`"fail"` (1 and 0). They
//! are put into the run ([`RunResult::labels`]) under the run's name of the metric, so any
//! per-query metric can be labelled, judged or not. A line may also carry `notes`, an object of
//! metric names to a person's text (`rag-eval serve --labels` writes them); the statistics
//! leave them out. And it may carry `statements`, an object of metric names to a person's
//! verdicts on the judge's statements ([`StatementLabel`]: faithfulness's statements of the
//! answer, context recall's of the reference), `{"text": …, "supported": true}` each. A metric
//! with statement verdicts and no label of its own is labelled by them: the share of statements
//! marked supported, the judge's own formula applied to the person's verdicts. Verdicts on the
//! claims judge's claims are kept under the keys of [`CLAIM_CHECKS`]; they label no metric, and
//! [`Labels::claim_agreement`] counts how many agree with the judge's.
//!
//! Per metric, labels that are all 0 or 1 are *binary*: the figure is binarised at a threshold
//! (`figure ≥ threshold` passes) and compared by accuracy, Cohen's κ and the confusion matrix.
//! Other labels are *numeric*: Spearman's ρ, Kendall's τ-b and the mean absolute error. Each
//! statistic has a seeded percentile bootstrap interval over the labelled queries.
//!
//! ```
//! use rag_eval::align::{AlignOptions, Alignment, Labels};
//! use rag_eval::metrics::{Figures, QueryResult, ResultLevel, RunResult};
//!
//! let query = |id: &str, v: f64| QueryResult {
//!     id: id.into(),
//!     metrics: Figures(vec![("faithfulness".into(), v)]),
//!     ..QueryResult::default()
//! };
//! let mut run = RunResult::from_queries(
//!     ResultLevel::Token,
//!     vec!["faithfulness".into()],
//!     vec![query("a", 1.0), query("b", 0.2), query("c", 0.9), query("d", 0.6)],
//! );
//! let labels = Labels::parse(
//!     "{\"id\":\"a\",\"labels\":{\"faithfulness\":1}}\n\
//!      {\"id\":\"b\",\"labels\":{\"faithfulness\":\"fail\"}}\n\
//!      {\"id\":\"c\",\"labels\":{\"faithfulness\":true}}\n\
//!      {\"id\":\"d\",\"labels\":{\"faithfulness\":0}}",
//!     "labels.jsonl".into(),
//! )?;
//! labels.apply(&mut run);
//! let alignment = Alignment::new(&run, &AlignOptions::default(), None);
//! let f = &alignment.metrics[0];
//! assert_eq!(f.pairs, 4);
//! assert_eq!(f.accuracy.as_ref().unwrap().value, 0.75); // d: 0.6 ≥ 0.5 passes, the person fails it
//! assert_eq!(f.kappa.as_ref().unwrap().value, 0.5);
//! # Ok::<(), rag_eval::Error>(())
//! ```

use crate::answers::Answers;
use crate::error::{Error, Result};
use crate::metrics::{Figures, JudgeDetails, QueryResult, RunResult};
use crate::stats::{
    bootstrap_statistic, cohen_kappa, corrected_mean, kendall_tau_b, spearman_rho, CorrectedMean,
    DEFAULT_RESAMPLES,
};
use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// People's labels by query id: each a metric name and its value, with notes and statement
/// verdicts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Labels {
    by_id: BTreeMap<String, Figures>,
    notes: BTreeMap<String, BTreeMap<String, String>>,
    statements: BTreeMap<String, BTreeMap<String, Vec<StatementLabel>>>,
}

/// A person's verdict on one of a judge's statements: supported by the contexts or not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementLabel {
    /// The statement, as the judge wrote it.
    pub text: String,
    /// Whether the contexts support it (faithfulness), or it can be attributed to them
    /// (context recall).
    pub supported: bool,
}

/// The statements a judge gave for `metric` in `query` and its verdict on each (faithfulness:
/// supported, as counted; context recall: attributed), from the first sample with a score;
/// `None` when that judge gives no statements. A key of [`CLAIM_CHECKS`] gives the claims
/// judge's claims and verdicts of that check.
pub fn judged_statements(query: &QueryResult, metric: &str) -> Option<Vec<StatementLabel>> {
    if CLAIM_CHECKS.contains(&metric) {
        return judged_claims(query, metric);
    }
    let sample = query
        .judges
        .iter()
        .filter(|j| j.metric == metric)
        .flat_map(|j| &j.samples)
        .find(|s| s.score.is_some())?;
    let label = |text: &str, supported: bool| StatementLabel {
        text: text.to_owned(),
        supported,
    };
    match &sample.details {
        JudgeDetails::Faithfulness { statements } => Some(
            statements
                .iter()
                .map(|s| label(&s.text, s.supported))
                .collect(),
        ),
        JudgeDetails::ContextRecall { statements } => Some(
            statements
                .iter()
                .map(|s| label(&s.text, s.attributed))
                .collect(),
        ),
        _ => None,
    }
}

/// The keys of a person's verdicts on the claims judge's claims in a labels file's
/// `statements`, by RAGChecker's names of the checks: the answer's claims against the reference
/// answer, and the reference answer's claims against the answer. `supported` is the verdict
/// `Entailment`. They label no metric (no share is taken of them): `align` counts how many of
/// them agree with the judge's ([`ClaimAgreement`]).
pub const CLAIM_CHECKS: [&str; 2] = ["claims.answer2response", "claims.response2answer"];

/// The claims judge's claims of `query` checked as `key` (one of [`CLAIM_CHECKS`]) with its
/// verdict on each (`supported`: `Entailment`), from the first sample with a score.
fn judged_claims(query: &QueryResult, key: &str) -> Option<Vec<StatementLabel>> {
    let sample = query
        .judges
        .iter()
        .filter(|j| j.metric == crate::metrics::claims::JUDGE)
        .flat_map(|j| &j.samples)
        .find(|s| s.score.is_some())?;
    let JudgeDetails::Claims {
        response_claims,
        reference_claims,
        answer2response,
        response2answer,
        ..
    } = &sample.details
    else {
        return None;
    };
    let (claims, checks) = match key {
        k if k == CLAIM_CHECKS[0] => (response_claims, answer2response),
        k if k == CLAIM_CHECKS[1] => (reference_claims, response2answer),
        _ => return None,
    };
    Some(
        claims
            .iter()
            .zip(checks)
            .map(|(text, c)| StatementLabel {
                text: text.clone(),
                supported: c.verdict == crate::metrics::claims::Verdict::Entailment,
            })
            .collect(),
    )
}

/// The share of `statements` marked supported; `None` without any.
fn supported_share(statements: &[StatementLabel]) -> Option<f64> {
    (!statements.is_empty())
        .then(|| statements.iter().filter(|s| s.supported).count() as f64 / statements.len() as f64)
}

impl Labels {
    /// Reads a labels file or a dataset with `outputs.labels`; errors name file:line.
    pub fn load(path: impl AsRef<Utf8Path>) -> Result<Labels> {
        let path = path.as_ref();
        Labels::parse(&crate::corpus::read_utf8(path)?, path.to_owned())
    }

    /// Parses labels JSONL (`path` names the input in messages): a line is
    /// `{"id", "labels": {…}, "notes": {…}, "statements": {…}}` (notes and statements optional)
    /// or a dataset row `{"id", "outputs": {"labels": {…}}}`; rows with neither labels nor
    /// statements are skipped; an id labelled twice is an error.
    pub fn parse(text: &str, path: Utf8PathBuf) -> Result<Labels> {
        let mut by_id: BTreeMap<String, Figures> = BTreeMap::new();
        let mut notes: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        let mut statements: BTreeMap<String, BTreeMap<String, Vec<StatementLabel>>> =
            BTreeMap::new();
        for (i, line) in crate::fs::strip_bom(text).lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let err = |message: String| Error::Parse {
                path: path.clone(),
                line: i + 1,
                message,
            };
            let row: Value =
                serde_json::from_str(line).map_err(|e| err(format!("not JSON: {e}")))?;
            let id = match row.get("id") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Number(n)) => n.to_string(),
                _ => return Err(err("no `id` (a string)".into())),
            };
            let empty = Value::Object(serde_json::Map::new());
            let labels = row
                .get("labels")
                .or_else(|| row.get("outputs").and_then(|o| o.get("labels")))
                .or_else(|| row.get("statements").map(|_| &empty));
            let Some(labels) = labels else { continue };
            if let Some(given) = row.get("notes") {
                let texts: Option<BTreeMap<String, String>> = given.as_object().and_then(|m| {
                    m.iter()
                        .map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                });
                let texts = texts.ok_or_else(|| {
                    err(format!(
                        "query `{id}`: `notes` is not an object of metric names to text"
                    ))
                })?;
                notes.insert(id.clone(), texts);
            }
            if let Some(given) = row.get("statements") {
                let verdicts = serde_json::from_value(given.clone()).map_err(|e| {
                    err(format!(
                        "query `{id}`: `statements` is not an object of metric names to lists of {{\"text\", \"supported\"}} ({e})"
                    ))
                })?;
                statements.insert(id.clone(), verdicts);
            }
            let Value::Object(map) = labels else {
                return Err(err(format!(
                    "query `{id}`: `labels` is not an object of metric names to values"
                )));
            };
            let mut figures = Vec::new();
            for (metric, value) in map {
                let v = match value {
                    Value::Null => continue,
                    Value::Bool(b) => f64::from(u8::from(*b)),
                    Value::Number(n) => n.as_f64().filter(|v| v.is_finite()).ok_or_else(|| {
                        err(format!("query `{id}`: label `{metric}` is not a finite number"))
                    })?,
                    Value::String(s) if s == "pass" => 1.0,
                    Value::String(s) if s == "fail" => 0.0,
                    other => {
                        return Err(err(format!(
                            "query `{id}`: label `{metric}` is {other}; a label is a number, true/false or \"pass\"/\"fail\""
                        )))
                    }
                };
                // Every metric's figures, judged or not, are in [0, 1]: a label on another
                // scale (a 1–5 grade) would be compared and corrected as if it were a figure.
                if !(0.0..=1.0).contains(&v) {
                    return Err(err(format!(
                        "query `{id}`: label `{metric}` is {v}, outside [0, 1], the scale of every metric's figures; write a grade on another scale onto it (1–5: (grade − 1) / 4)"
                    )));
                }
                figures.push((metric.clone(), v));
            }
            if by_id.insert(id.clone(), Figures(figures)).is_some() {
                return Err(err(format!("query `{id}` is labelled again")));
            }
        }
        Ok(Labels {
            by_id,
            notes,
            statements,
        })
    }

    /// The labels of query `id`, by metric, as given (not those its statement verdicts imply).
    pub fn get(&self, id: &str) -> Option<&Figures> {
        self.by_id.get(id)
    }

    /// Query `id`'s label of `metric`: the one given, else the share of its statement verdicts
    /// marked supported.
    pub fn label(&self, id: &str, metric: &str) -> Option<f64> {
        self.get(id)
            .and_then(|f| f.get(metric))
            .or_else(|| supported_share(self.statements(id, metric)?))
    }

    /// A person's verdicts on the judge's statements of `metric` in query `id`.
    pub fn statements(&self, id: &str, metric: &str) -> Option<&[StatementLabel]> {
        self.statements.get(id)?.get(metric).map(Vec::as_slice)
    }

    /// Whether query `id` has any label, given or implied by statement verdicts.
    pub fn is_labelled(&self, id: &str) -> bool {
        self.get(id).is_some_and(|f| !f.0.is_empty())
            || self
                .statements
                .get(id)
                .is_some_and(|m| m.values().any(|v| !v.is_empty()))
    }

    /// The note on query `id`'s label of `metric`.
    pub fn note(&self, id: &str, metric: &str) -> Option<&str> {
        self.notes.get(id)?.get(metric).map(String::as_str)
    }

    /// Sets (or, with `None`, removes) query `id`'s label of `metric` and its note; a query
    /// left with neither is dropped.
    pub fn set(&mut self, id: &str, metric: &str, value: Option<f64>, note: Option<String>) {
        let figures = self.by_id.entry(id.to_owned()).or_default();
        figures.0.retain(|(n, _)| n != metric);
        if let Some(v) = value {
            figures.0.push((metric.to_owned(), v));
        }
        put(&mut self.notes, id, metric, note);
        self.prune(id);
    }

    /// Sets (or, with `None`, removes) a person's verdicts on the judge's statements of
    /// `metric` in query `id`; a query left with no label, note or verdict is dropped.
    pub fn set_statements(
        &mut self,
        id: &str,
        metric: &str,
        verdicts: Option<Vec<StatementLabel>>,
    ) {
        self.by_id.entry(id.to_owned()).or_default();
        put(&mut self.statements, id, metric, verdicts);
        self.prune(id);
    }

    fn prune(&mut self, id: &str) {
        if self.by_id.get(id).is_some_and(|f| f.0.is_empty())
            && !self.notes.contains_key(id)
            && !self.statements.contains_key(id)
        {
            self.by_id.remove(id);
        }
    }

    /// The labels as a labels file (what [`Labels::parse`] reads back): one line per query,
    /// `{"id", "labels", "notes", "statements"}`, by id.
    pub fn to_jsonl(&self) -> String {
        let mut s = String::new();
        for (id, figures) in &self.by_id {
            let labels: serde_json::Map<String, Value> = figures
                .0
                .iter()
                .map(|(n, v)| (n.clone(), Value::from(*v)))
                .collect();
            let mut line = serde_json::json!({ "id": id, "labels": labels });
            if let Some(texts) = self.notes.get(id) {
                line["notes"] = serde_json::json!(texts);
            }
            if let Some(verdicts) = self.statements.get(id) {
                line["statements"] = serde_json::json!(verdicts);
            }
            s.push_str(&line.to_string());
            s.push('\n');
        }
        s
    }

    /// How the person's claim verdicts ([`CLAIM_CHECKS`]) agree with the claims judge's in
    /// `run`: each saved verdict on a claim of the query's first scored claims sample, when the
    /// saved claims are the judge's (same texts, same order; verdicts saved for another
    /// judging are left out). `None` when no claim verdict applies.
    pub fn claim_agreement(&self, run: &RunResult) -> Option<ClaimAgreement> {
        let mut counts = ClaimAgreement::default();
        for q in &run.per_query {
            let mut counted = false;
            for key in CLAIM_CHECKS {
                let (Some(person), Some(judge)) =
                    (self.statements(&q.id, key), judged_claims(q, key))
                else {
                    continue;
                };
                let same = person.len() == judge.len()
                    && person.iter().zip(&judge).all(|(p, j)| p.text == j.text);
                if !same || person.is_empty() {
                    continue;
                }
                counted = true;
                counts.claims += person.len();
                counts.agreed += person
                    .iter()
                    .zip(&judge)
                    .filter(|(p, j)| p.supported == j.supported)
                    .count();
            }
            counts.queries += usize::from(counted);
        }
        (counts.claims > 0).then(|| ClaimAgreement {
            share: counts.agreed as f64 / counts.claims as f64,
            ..counts
        })
    }

    /// Number of labelled queries.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no query is labelled.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Puts the labels into `run` ([`RunResult::labels`]), over any it had for the same query
    /// and metric, each under the run's name of its metric (`span_recall` names
    /// `span_recall@5`); a metric the run lacks keeps its name. A metric labelled only by
    /// statement verdicts gets the share marked supported ([`Labels::label`]). Returns the ids
    /// of labels for queries the run does not have (left out).
    pub fn apply(&self, run: &mut RunResult) -> Vec<String> {
        let mut unknown = Vec::new();
        for id in self.by_id.keys().filter(|id| self.is_labelled(id)) {
            if !run.per_query.iter().any(|q| &q.id == id) {
                unknown.push(id.clone());
                continue;
            }
            let mut figures = self.by_id[id].clone();
            for metric in self.statements.get(id).into_iter().flat_map(|m| m.keys()) {
                if figures.get(metric).is_none() && !CLAIM_CHECKS.contains(&metric.as_str()) {
                    if let Some(share) = self.label(id, metric) {
                        figures.0.push((metric.clone(), share));
                    }
                }
            }
            // A query with claim verdicts only has no label to put in.
            if figures.0.is_empty() {
                continue;
            }
            let names: Vec<String> = figures
                .names()
                .map(|n| match run.metric_index(n) {
                    Some(i) => run.metrics.0[i].0.clone(),
                    None => n.to_owned(),
                })
                .collect();
            let held = run.labels.entry(id.clone()).or_default();
            for (name, value) in names.into_iter().zip(figures.values()) {
                match held.0.iter_mut().find(|(n, _)| *n == name) {
                    Some(slot) => slot.1 = value,
                    None => held.0.push((name, value)),
                }
            }
        }
        unknown
    }
}

/// Where one set of labels cannot serve every run of `runs` (label, run): a label judges one
/// output of a query (its answer, the answer's contexts and the retrieved passages), so it
/// carries over to another run only where that run's output is the same. The first labelled
/// query whose output differs between two runs, or that a run kept no output of, in words;
/// `None` when the labels apply to every run. Queries a run does not have are passed over.
pub fn carry_over_problem(labels: &Labels, runs: &[(&str, &RunResult)]) -> Option<String> {
    for id in labels
        .by_id
        .iter()
        .filter(|(_, f)| !f.0.is_empty())
        .map(|(id, _)| id)
    {
        let mut first: Option<(&str, &crate::metrics::QueryResult)> = None;
        for (label, run) in runs {
            let Some(q) = run.per_query.iter().find(|q| &q.id == id) else {
                continue;
            };
            if q.answer.is_none() && q.contexts.is_none() && q.retrieved.is_none() {
                return Some(format!(
                    "run `{label}` kept no output of query `{id}` (no answer, contexts or retrieved passages), so its label cannot be known to be of that run's output"
                ));
            }
            let Some((first_label, f)) = first else {
                first = Some((label, q));
                continue;
            };
            let part = if q.answer != f.answer {
                "answer"
            } else if q.contexts != f.contexts {
                "contexts"
            } else if q.retrieved != f.retrieved {
                "retrieved passages"
            } else {
                continue;
            };
            return Some(format!(
                "query `{id}` has another {part} in run `{label}` than in `{first_label}`, so one label cannot be of both"
            ));
        }
    }
    None
}

/// Sets `map[id][key]` to `value`, or removes it with `None` (and `id`'s entry when empty).
fn put<T>(map: &mut BTreeMap<String, BTreeMap<String, T>>, id: &str, key: &str, value: Option<T>) {
    let entry = map.entry(id.to_owned()).or_default();
    match value {
        Some(v) => entry.insert(key.to_owned(), v),
        None => entry.remove(key),
    };
    if entry.is_empty() {
        map.remove(id);
    }
}

/// The (figure, label) pairs of `metric` in `run`, with their query's position.
fn pairs(run: &RunResult, metric: &str) -> Vec<(usize, f64, f64)> {
    run.per_query
        .iter()
        .enumerate()
        .filter_map(|(i, q)| {
            let label = run.labels.get(&q.id)?.get(metric)?;
            Some((i, q.metrics.get(metric)?, label))
        })
        .collect()
}

/// The labelled metrics of `run`, in the run's metric order, then the others by name.
fn labelled_metrics(run: &RunResult) -> Vec<String> {
    let mut names: Vec<String> = run
        .metrics
        .names()
        .filter(|n| run.labels.values().any(|l| l.get(n).is_some()))
        .map(str::to_owned)
        .collect();
    let mut others: Vec<String> = run
        .labels
        .values()
        .flat_map(|l| l.names())
        .filter(|n| !names.iter().any(|m| m == n))
        .map(str::to_owned)
        .collect();
    others.sort();
    others.dedup();
    names.extend(others);
    names
}

/// Checks that every metric `run`'s labels name is one of the run's: a label of a metric the
/// run lacks (a misspelt name, another k, a judge that did not run) pairs with no figure, and
/// an alignment over no pairs would read as "undefined" rather than as the mistake it is. The
/// error names the metrics lacking and the run's.
pub fn check_labelled_metrics(run: &RunResult) -> Result<()> {
    let known: Vec<&str> = run.metrics.names().collect();
    let lacking: Vec<String> = labelled_metrics(run)
        .into_iter()
        .filter(|m| !known.contains(&m.as_str()))
        .collect();
    if lacking.is_empty() {
        return Ok(());
    }
    Err(Error::Unknown {
        what: if lacking.len() == 1 {
            "labelled metric"
        } else {
            "labelled metrics"
        },
        given: lacking.join("`, `"),
        known: if known.is_empty() {
            "the run has no metric".to_owned()
        } else {
            format!("the run's metrics are {}", known.join(", "))
        },
    })
}

/// A metric's judge-corrected mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrectedFigure {
    /// The metric, as the run names it.
    pub metric: String,
    /// Its raw mean over the queries with a figure.
    pub raw: f64,
    /// The corrected mean and its interval.
    #[serde(flatten)]
    pub corrected: CorrectedMean,
}

/// The judge-corrected mean ([`corrected_mean`]) of every metric of `run` with at least two
/// labelled queries, in the run's metric order.
pub fn corrected_means(run: &RunResult) -> Vec<CorrectedFigure> {
    run.metrics
        .names()
        .filter_map(|metric| {
            let judged: Vec<f64> = run
                .per_query
                .iter()
                .filter_map(|q| q.metrics.get(metric))
                .collect();
            let labelled: Vec<(f64, f64)> = pairs(run, metric)
                .into_iter()
                .map(|(_, f, y)| (f, y))
                .collect();
            Some(CorrectedFigure {
                metric: metric.to_owned(),
                raw: run.metrics.get(metric)?,
                corrected: corrected_mean(&judged, &labelled)?,
            })
        })
        .collect()
}

/// [`corrected_means`] as text, one line per metric beside its raw mean; empty without any.
/// Metric names are escaped for a terminal.
pub fn corrected_text(run: &RunResult) -> String {
    let corrected = corrected_means(run);
    if corrected.is_empty() {
        return String::new();
    }
    let mut s = String::from("judge-corrected means (prediction-powered, 95% interval):\n");
    for CorrectedFigure {
        metric,
        raw,
        corrected: c,
    } in corrected
    {
        s.push_str(&format!(
            "  {:<24} raw {raw:.4}  corrected {:.4} [{:.4}, {:.4}]  {} of {} queries labelled\n",
            crate::escape::terminal(&metric),
            c.mean,
            c.low,
            c.high,
            c.labelled,
            c.judged
        ));
    }
    s
}

/// How an alignment is computed.
#[derive(Debug, Clone, PartialEq)]
pub struct AlignOptions {
    /// A figure at least this passes, when the labels are binary.
    pub threshold: f64,
    /// Bootstrap resamples of each interval.
    pub resamples: usize,
    /// Seed of the resamples.
    pub seed: u64,
    /// How many of the queries where figure and label differ most are listed.
    pub shown: usize,
}

impl Default for AlignOptions {
    /// Threshold 0.5, 10,000 resamples, seed 42, 5 queries shown.
    fn default() -> Self {
        AlignOptions {
            threshold: 0.5,
            resamples: DEFAULT_RESAMPLES,
            seed: 42,
            shown: 5,
        }
    }
}

/// A statistic with its 95% bootstrap interval (`None` when no resample defines it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The statistic over the labelled queries.
    pub value: f64,
    /// The percentile bootstrap interval.
    pub interval: Option<[f64; 2]>,
}

/// What a metric's labels are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LabelKind {
    /// Every label is 0 or 1: pass/fail.
    Binary,
    /// Any other numbers.
    Numeric,
}

/// A query where figure and label differ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disagreement {
    /// The query id.
    pub id: String,
    /// The question, when the run has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The answer: the answers file's when one was given, else the run's (runs that scored
    /// answers keep them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The judge's reasons for its figure ([`JudgeDetails::reason`](crate::metrics::JudgeDetails::reason) of the query's first
    /// scored sample), when the run kept them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The run's figure.
    pub figure: f64,
    /// The person's label.
    pub label: f64,
}

/// How one metric agrees with its labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricAlignment {
    /// The metric, as the run names it.
    pub metric: String,
    /// Queries with both a figure and a label.
    pub pairs: usize,
    /// Binary or numeric labels.
    pub labels: LabelKind,
    /// Binary: share of queries where the binarised figure equals the label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accuracy: Option<Estimate>,
    /// Binary: Cohen's κ (`None` when both sides are constant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kappa: Option<Estimate>,
    /// Binary: `[[fail/fail, fail/pass], [pass/fail, pass/pass]]`, rows the label, columns the
    /// binarised figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confusion: Option<[[usize; 2]; 2]>,
    /// Numeric: Spearman's ρ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spearman: Option<Estimate>,
    /// Numeric: Kendall's τ-b.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kendall_tau_b: Option<Estimate>,
    /// Numeric: mean |figure − label|.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_absolute_error: Option<Estimate>,
    /// The judge-corrected mean, when at least two queries are labelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrected: Option<CorrectedMean>,
    /// The queries where figure and label differ most (binary: those that disagree), largest
    /// difference first.
    pub disagreements: Vec<Disagreement>,
}

impl MetricAlignment {
    /// The figure `--min-agreement` gates on: κ for binary labels, Spearman's ρ for numeric
    /// ones (`None` when undefined).
    pub fn agreement(&self) -> Option<f64> {
        match self.labels {
            LabelKind::Binary => self.kappa.as_ref().map(|e| e.value),
            LabelKind::Numeric => self.spearman.as_ref().map(|e| e.value),
        }
    }
}

/// How a person's verdicts on the claims judge's claims agree with the judge's
/// ([`Labels::claim_agreement`]): a claim agrees when both say `Entailment`, or both do not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClaimAgreement {
    /// Claims with a verdict of the person's and of the judge's.
    pub claims: usize,
    /// Claims where the two verdicts are the same.
    pub agreed: usize,
    /// `agreed / claims`.
    pub share: f64,
    /// Queries with at least one such claim.
    pub queries: usize,
}

/// The agreement of every labelled metric of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alignment {
    /// The threshold binary labels were compared at.
    pub threshold: f64,
    /// One per labelled metric.
    pub metrics: Vec<MetricAlignment>,
    /// Claim-level agreement with the claims judge, when claim verdicts were labelled
    /// ([`Labels::claim_agreement`]; [`Alignment::new`] leaves it `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims: Option<ClaimAgreement>,
}

impl Alignment {
    /// The agreement of `run`'s figures with its [labels](RunResult::labels); `answers`, when
    /// given, puts each listed disagreement's answer beside it.
    pub fn new(run: &RunResult, options: &AlignOptions, answers: Option<&Answers>) -> Alignment {
        let metrics = labelled_metrics(run)
            .into_iter()
            .map(|metric| align_metric(run, &metric, options, answers))
            .collect();
        Alignment {
            threshold: options.threshold,
            metrics,
            claims: None,
        }
    }

    /// One line per metric whose agreement is below `min` (or undefined, or without pairs).
    pub fn failures(&self, min: f64) -> Vec<String> {
        self.metrics
            .iter()
            .filter(|m| m.agreement().is_none_or(|a| a < min))
            .map(|m| {
                let what = match m.labels {
                    LabelKind::Binary => "Cohen's κ",
                    LabelKind::Numeric => "Spearman's ρ",
                };
                match m.agreement() {
                    Some(a) => format!(
                        "{}: {what} {a:.4} over {} labelled queries is below the minimum agreement {min}",
                        m.metric, m.pairs
                    ),
                    None => format!(
                        "{}: {what} is undefined over {} labelled queries (below the minimum agreement {min})",
                        m.metric, m.pairs
                    ),
                }
            })
            .collect()
    }

    /// The alignment as text: per metric its statistics, then the disagreements.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let estimate = |name: &str, e: &Option<Estimate>| match e {
            None => format!("  {name:<22} undefined\n"),
            Some(Estimate { value, interval }) => match interval {
                Some([lo, hi]) => format!("  {name:<22} {value:.4}  [{lo:.4}, {hi:.4}]\n"),
                None => format!("  {name:<22} {value:.4}\n"),
            },
        };
        for m in &self.metrics {
            let kind = match m.labels {
                LabelKind::Binary => format!("binary labels, threshold {}", self.threshold),
                LabelKind::Numeric => "numeric labels".to_owned(),
            };
            s.push_str(&format!(
                "{}: {} labelled queries ({kind})\n",
                m.metric, m.pairs
            ));
            match m.labels {
                LabelKind::Binary => {
                    s.push_str(&estimate("accuracy", &m.accuracy));
                    s.push_str(&estimate("Cohen's kappa", &m.kappa));
                    if let Some([[ff, fp], [pf, pp]]) = m.confusion {
                        s.push_str(&format!(
                            "  {:<22} label fail: {ff} fail, {fp} pass; label pass: {pf} fail, {pp} pass\n",
                            "figure binarised"
                        ));
                    }
                }
                LabelKind::Numeric => {
                    s.push_str(&estimate("Spearman's rho", &m.spearman));
                    s.push_str(&estimate("Kendall's tau-b", &m.kendall_tau_b));
                    s.push_str(&estimate("mean absolute error", &m.mean_absolute_error));
                }
            }
            if let Some(c) = &m.corrected {
                s.push_str(&format!(
                    "  {:<22} {:.4}  [{:.4}, {:.4}] (judge-corrected mean over {} queries)\n",
                    "corrected mean", c.mean, c.low, c.high, c.judged
                ));
            }
            for d in &m.disagreements {
                s.push_str(&format!(
                    "  disagrees: {}  figure {:.4}, label {}\n",
                    crate::escape::terminal(&d.id),
                    d.figure,
                    d.label
                ));
                if let Some(q) = &d.question {
                    s.push_str(&format!("    question: {}\n", crate::escape::terminal(q)));
                }
                if let Some(a) = &d.answer {
                    s.push_str(&format!("    answer: {}\n", crate::escape::terminal(a)));
                }
                if let Some(r) = &d.reason {
                    s.push_str(&format!("    judge: {}\n", crate::escape::terminal(r)));
                }
            }
        }
        if let Some(c) = &self.claims {
            s.push_str(&format!(
                "claims: {} of the judge's {} claim verdicts agree with the person's ({:.4}) over {} queries\n",
                c.agreed, c.claims, c.share, c.queries
            ));
        }
        if self.metrics.is_empty() {
            s.push_str("no metric of the run has labels\n");
        }
        s
    }
}

fn align_metric(
    run: &RunResult,
    metric: &str,
    options: &AlignOptions,
    answers: Option<&Answers>,
) -> MetricAlignment {
    let pairs = pairs(run, metric);
    let figures: Vec<f64> = pairs.iter().map(|p| p.1).collect();
    let labels: Vec<f64> = pairs.iter().map(|p| p.2).collect();
    let kind = if labels.iter().all(|&y| y == 0.0 || y == 1.0) {
        LabelKind::Binary
    } else {
        LabelKind::Numeric
    };
    let n = pairs.len();
    let estimate = |f: &dyn Fn(&[usize]) -> Option<f64>| -> Option<Estimate> {
        let all: Vec<usize> = (0..n).collect();
        let value = f(&all)?;
        let interval = bootstrap_statistic(n, options.resamples, options.seed, 0.95, f)
            .map(|(lo, hi)| [lo, hi]);
        Some(Estimate { value, interval })
    };
    let pick = |values: &[f64], idx: &[usize]| -> Vec<f64> {
        idx.iter().map(|&i| values[i]).collect::<Vec<f64>>()
    };
    let mut m = MetricAlignment {
        metric: metric.to_owned(),
        pairs: n,
        labels: kind,
        accuracy: None,
        kappa: None,
        confusion: None,
        spearman: None,
        kendall_tau_b: None,
        mean_absolute_error: None,
        corrected: corrected_means(run)
            .into_iter()
            .find(|c| c.metric == metric)
            .map(|c| c.corrected),
        disagreements: Vec::new(),
    };
    let passes = |v: f64| usize::from(v >= options.threshold);
    let judged: Vec<usize> = figures.iter().map(|&v| passes(v)).collect();
    let person: Vec<usize> = labels.iter().map(|&y| usize::from(y == 1.0)).collect();
    let mut differing: Vec<usize> = match kind {
        LabelKind::Binary => {
            let accuracy = |idx: &[usize]| {
                (!idx.is_empty()).then(|| {
                    idx.iter().filter(|&&i| judged[i] == person[i]).count() as f64
                        / idx.len() as f64
                })
            };
            m.accuracy = estimate(&accuracy);
            let kappa = |idx: &[usize]| {
                let a: Vec<usize> = idx.iter().map(|&i| judged[i]).collect();
                let b: Vec<usize> = idx.iter().map(|&i| person[i]).collect();
                cohen_kappa(&a, &b)
            };
            m.kappa = estimate(&kappa);
            let mut confusion = [[0; 2]; 2];
            for (j, p) in judged.iter().zip(&person) {
                confusion[*p][*j] += 1;
            }
            m.confusion = Some(confusion);
            (0..n).filter(|&i| judged[i] != person[i]).collect()
        }
        LabelKind::Numeric => {
            m.spearman = estimate(&|idx| spearman_rho(&pick(&figures, idx), &pick(&labels, idx)));
            m.kendall_tau_b =
                estimate(&|idx| kendall_tau_b(&pick(&figures, idx), &pick(&labels, idx)));
            m.mean_absolute_error = estimate(&|idx| {
                (!idx.is_empty()).then(|| {
                    idx.iter()
                        .map(|&i| (figures[i] - labels[i]).abs())
                        .sum::<f64>()
                        / idx.len() as f64
                })
            });
            (0..n).filter(|&i| figures[i] != labels[i]).collect()
        }
    };
    // Largest difference first; ties in input order.
    differing.sort_by(|&a, &b| {
        let gap = |i: usize| (figures[i] - labels[i]).abs();
        gap(b).total_cmp(&gap(a))
    });
    m.disagreements = differing
        .into_iter()
        .take(options.shown)
        .map(|i| {
            let q = &run.per_query[pairs[i].0];
            Disagreement {
                id: q.id.clone(),
                question: q.query.clone(),
                answer: answers
                    .and_then(|a| a.get(&q.id))
                    .map(|a| a.answer.clone())
                    .or_else(|| q.answer.clone()),
                reason: q
                    .judges
                    .iter()
                    .filter(|j| j.metric == metric)
                    .flat_map(|j| &j.samples)
                    .find(|s| s.score.is_some())
                    .and_then(|s| s.details.reason()),
                figure: figures[i],
                label: labels[i],
            }
        })
        .collect();
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{QueryResult, ResultLevel};

    fn run(values: &[(&str, f64)]) -> RunResult {
        RunResult::from_queries(
            ResultLevel::Token,
            vec!["span_recall@5".into()],
            values
                .iter()
                .map(|(id, v)| QueryResult {
                    id: (*id).into(),
                    query: Some(format!("question {id}")),
                    metrics: Figures(vec![("span_recall@5".into(), *v)]),
                    ..QueryResult::default()
                })
                .collect(),
        )
    }

    #[test]
    fn labels_from_a_labels_file_or_a_dataset_and_their_errors() {
        let l = Labels::parse(
            "{\"id\":\"a\",\"labels\":{\"span_recall\":0.5,\"tone\":null}}\n\n\
             {\"id\":\"b\",\"inputs\":{},\"outputs\":{\"labels\":{\"span_recall\":\"pass\"}}}\n\
             {\"id\":\"c\",\"outputs\":{}}",
            "l.jsonl".into(),
        )
        .unwrap();
        assert_eq!(l.len(), 2);
        let mut r = run(&[("a", 0.2), ("b", 1.0)]);
        assert!(l.apply(&mut r).is_empty());
        // `span_recall` is stored under the run's name of the metric; a null label is none.
        assert_eq!(r.labels["a"], Figures(vec![("span_recall@5".into(), 0.5)]));
        assert_eq!(r.labels["b"].get("span_recall@5"), Some(1.0));
        let bad = |text: &str| {
            Labels::parse(text, "l.jsonl".into())
                .unwrap_err()
                .to_string()
        };
        assert!(
            bad("{\"labels\":{}}").contains("l.jsonl:1"),
            "{}",
            bad("{}")
        );
        assert!(bad("{\"id\":\"a\",\"labels\":{\"m\":\"maybe\"}}").contains("label `m`"));
        assert!(bad("{\"id\":\"a\",\"labels\":[1]}").contains("not an object"));
        assert!(bad("{\"id\":\"a\",\"labels\":{},\"notes\":{\"m\":1}}")
            .contains("`notes` is not an object of metric names to text"));
        assert!(
            bad("{\"id\":\"a\",\"labels\":{}}\n{\"id\":\"a\",\"labels\":{}}")
                .contains("l.jsonl:2: query `a` is labelled again")
        );
        let unknown = Labels::parse("{\"id\":\"z\",\"labels\":{\"m\":1}}", "l".into()).unwrap();
        assert_eq!(unknown.apply(&mut r), ["z"]);
    }

    /// A 1–5 grade on a metric whose figures are in [0, 1] is refused where it is written: it
    /// would be corrected as a figure ("corrected 3.55" for a metric bounded by 1).
    #[test]
    fn labels_outside_the_figures_scale_are_refused() {
        let bad = |text: &str| {
            Labels::parse(text, "l.jsonl".into())
                .unwrap_err()
                .to_string()
        };
        let e = bad(
            "{\"id\":\"a\",\"labels\":{\"rouge_l\":1}}\n{\"id\":\"b\",\"labels\":{\"rouge_l\":4}}",
        );
        assert!(
            e.starts_with("l.jsonl:2: query `b`: label `rouge_l` is 4, outside [0, 1]"),
            "{e}"
        );
        assert!(bad("{\"id\":\"a\",\"outputs\":{\"labels\":{\"m\":-0.5}}}")
            .contains("is -0.5, outside [0, 1]"));
        assert!(bad("{\"id\":\"a\",\"labels\":{\"m\":1.0000001}}").contains("outside [0, 1]"));
        // The ends of the scale are labels.
        let ends = Labels::parse(
            "{\"id\":\"a\",\"labels\":{\"m\":0,\"n\":1.0,\"o\":0.25}}",
            "l.jsonl".into(),
        )
        .unwrap();
        assert_eq!(ends.label("a", "n"), Some(1.0));
    }

    #[test]
    fn statement_verdicts_label_a_metric_without_a_label_of_its_own() {
        let text = "{\"id\":\"a\",\"statements\":{\"span_recall@5\":[\
                    {\"text\":\"x\",\"supported\":true},{\"text\":\"y\",\"supported\":false},\
                    {\"text\":\"z\",\"supported\":false}]}}\n\
                    {\"id\":\"b\",\"labels\":{\"span_recall@5\":0},\
                    \"statements\":{\"span_recall@5\":[{\"text\":\"x\",\"supported\":true}]}}\n\
                    {\"id\":\"c\",\"statements\":{\"span_recall@5\":[]}}";
        let l = Labels::parse(text, "l".into()).unwrap();
        assert_eq!(l.label("a", "span_recall@5"), Some(1.0 / 3.0));
        assert_eq!(
            l.label("b", "span_recall@5"),
            Some(0.0),
            "a given label wins"
        );
        assert_eq!(
            l.label("c", "span_recall@5"),
            None,
            "no statements, no share"
        );
        assert_eq!(l.statements("b", "span_recall@5").unwrap()[0].text, "x");
        let mut r = run(&[("a", 0.2), ("b", 1.0), ("c", 0.5)]);
        assert!(l.apply(&mut r).is_empty());
        assert_eq!(r.labels["a"].get("span_recall@5"), Some(1.0 / 3.0));
        assert_eq!(r.labels["b"].get("span_recall@5"), Some(0.0));
        assert!(!r.labels.contains_key("c"));
        // Written back as read; removing the verdicts drops a line left with nothing.
        let mut again = Labels::parse(&l.to_jsonl(), "l".into()).unwrap();
        assert_eq!(again, l);
        again.set_statements("a", "span_recall@5", None);
        assert!(again.get("a").is_none() && again.label("a", "span_recall@5").is_none());
        let err = Labels::parse(
            "{\"id\":\"a\",\"statements\":{\"m\":[{\"text\":\"x\"}]}}",
            "l.jsonl".into(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("l.jsonl:1: query `a`: `statements` is not"),
            "{err}"
        );
    }

    #[test]
    fn the_judged_statements_are_faithfulness_and_context_recall_ones() {
        use crate::metrics::{Attribution, JudgeSample, JudgeStatus, QueryJudgement};
        let judged = |details: JudgeDetails, score: Option<f64>| QueryResult {
            judges: vec![QueryJudgement {
                metric: "m".into(),
                query_id: "a".into(),
                samples: vec![JudgeSample {
                    sample: 0,
                    status: JudgeStatus::Ok,
                    score,
                    details,
                    message: None,
                    kind: None,
                    usage: Default::default(),
                }],
            }],
            ..QueryResult::default()
        };
        let recall = JudgeDetails::ContextRecall {
            statements: vec![Attribution {
                text: "r".into(),
                attributed: false,
                context: None,
                reason: String::new(),
            }],
        };
        assert_eq!(
            judged_statements(&judged(recall.clone(), Some(0.0)), "m"),
            Some(vec![StatementLabel {
                text: "r".into(),
                supported: false
            }])
        );
        assert_eq!(
            judged_statements(&judged(recall, None), "m"),
            None,
            "unscored"
        );
        let criteria = JudgeDetails::AnswerMatch {
            matches: true,
            reason: String::new(),
        };
        assert_eq!(judged_statements(&judged(criteria, Some(1.0)), "m"), None);
    }

    /// Claim verdicts are compared with the claims judge's claim by claim, as Entailment or
    /// not; verdicts saved for other claims are left out, and none labels a metric.
    #[test]
    fn claim_verdicts_agree_with_the_judge_claim_by_claim() {
        use crate::metrics::claims::Verdict::{self, *};
        use crate::metrics::{ClaimCheck, JudgeSample, JudgeStatus, QueryJudgement};
        let judged = |id: &str, response: &[(&str, Verdict)], reference: &[(&str, Verdict)]| {
            let claims = |c: &[(&str, Verdict)]| c.iter().map(|(t, _)| (*t).to_owned()).collect();
            let checks =
                |c: &[(&str, Verdict)]| c.iter().map(|(_, v)| ClaimCheck::of(*v)).collect();
            QueryResult {
                id: id.into(),
                metrics: Figures(vec![("span_recall@5".into(), 1.0)]),
                judges: vec![QueryJudgement {
                    metric: "claims".into(),
                    query_id: id.into(),
                    samples: vec![JudgeSample {
                        sample: 0,
                        status: JudgeStatus::Ok,
                        score: Some(0.5),
                        details: JudgeDetails::Claims {
                            response_claims: claims(response),
                            reference_claims: claims(reference),
                            chunks: 0,
                            answer2response: checks(response),
                            response2answer: checks(reference),
                            retrieved2response: vec![Vec::new(); response.len()],
                            retrieved2answer: vec![Vec::new(); reference.len()],
                        },
                        message: None,
                        kind: None,
                        usage: Default::default(),
                    }],
                }],
                ..QueryResult::default()
            }
        };
        let mut r = RunResult::from_queries(
            ResultLevel::Token,
            vec!["span_recall@5".into()],
            vec![
                judged(
                    "a",
                    &[("x", Entailment), ("y", Neutral), ("z", Contradiction)],
                    &[("r", Entailment)],
                ),
                judged("b", &[("s", Entailment)], &[]),
                judged("c", &[("t", Neutral)], &[]),
            ],
        );
        let l = Labels::parse(
            "{\"id\":\"a\",\"statements\":{\"claims.answer2response\":[\
             {\"text\":\"x\",\"supported\":true},{\"text\":\"y\",\"supported\":true},\
             {\"text\":\"z\",\"supported\":false}],\
             \"claims.response2answer\":[{\"text\":\"r\",\"supported\":false}]}}\n\
             {\"id\":\"b\",\"labels\":{\"span_recall@5\":1},\
             \"statements\":{\"claims.answer2response\":[{\"text\":\"s\",\"supported\":true}]}}\n\
             {\"id\":\"c\",\"statements\":{\"claims.answer2response\":[{\"text\":\"u\",\"supported\":true}]}}",
            "l".into(),
        )
        .unwrap();
        // a: x agrees, y (Neutral, marked entailed) does not, z (Contradiction, marked not)
        // agrees, r (Entailment, marked not) does not; b: s agrees; c: another claim than the
        // judge's, left out. 3 of 5 over 2 queries.
        assert_eq!(
            l.claim_agreement(&r),
            Some(ClaimAgreement {
                claims: 5,
                agreed: 3,
                share: 0.6,
                queries: 2
            })
        );
        assert!(l.apply(&mut r).is_empty());
        assert_eq!(
            r.labels.keys().collect::<Vec<_>>(),
            ["b"],
            "only b's own label"
        );
        check_labelled_metrics(&r).unwrap();
        let a = Alignment {
            claims: l.claim_agreement(&r),
            ..Alignment::new(&r, &AlignOptions::default(), None)
        };
        assert!(a
            .to_text()
            .contains("claims: 3 of the judge's 5 claim verdicts agree with the person's (0.6000) over 2 queries\n"));
        assert_eq!(
            serde_json::to_value(&a).unwrap()["claims"],
            serde_json::json!({"claims": 5, "agreed": 3, "share": 0.6, "queries": 2})
        );
        assert_eq!(Labels::default().claim_agreement(&r), None);
    }

    #[test]
    fn a_label_of_a_metric_the_run_lacks_is_an_error_naming_both() {
        let mut r = run(&[("a", 0.9), ("b", 0.1)]);
        Labels::parse(
            "{\"id\":\"a\",\"labels\":{\"span_recall@5\":1,\"faithfulness\":1}}\n\
             {\"id\":\"b\",\"labels\":{\"faithfulness\":0}}",
            "l".into(),
        )
        .unwrap()
        .apply(&mut r);
        let known: Vec<&str> = r.metrics.names().collect();
        assert_eq!(
            check_labelled_metrics(&r).unwrap_err().to_string(),
            format!(
                "invalid configuration: unknown labelled metric `faithfulness` (the run's \
                 metrics are {})",
                known.join(", ")
            )
        );
        for labels in r.labels.values_mut() {
            labels.0.retain(|(name, _)| name != "faithfulness");
        }
        check_labelled_metrics(&r).unwrap();
    }

    #[test]
    fn numeric_labels_get_rank_correlations_and_the_largest_gaps_first() {
        let mut r = run(&[("a", 0.9), ("b", 0.1), ("c", 0.5), ("d", 0.7)]);
        Labels::parse(
            "{\"id\":\"a\",\"labels\":{\"span_recall@5\":0.8}}\n\
             {\"id\":\"b\",\"labels\":{\"span_recall@5\":0.6}}\n\
             {\"id\":\"c\",\"labels\":{\"span_recall@5\":0.4}}\n\
             {\"id\":\"d\",\"labels\":{\"span_recall@5\":0.7}}",
            "l".into(),
        )
        .unwrap()
        .apply(&mut r);
        let a = Alignment::new(&r, &AlignOptions::default(), None);
        let m = &a.metrics[0];
        assert_eq!((m.pairs, m.labels), (4, LabelKind::Numeric));
        // Ranks: figures 4,1,2,3 vs labels 4,2,1,3: d² sum 2 → ρ = 1 − 6·2/(4·15) = 0.8.
        assert!((m.spearman.as_ref().unwrap().value - 0.8).abs() < 1e-12);
        // 6 pairs, 5 concordant, 1 discordant: τ-b = 4/6.
        assert!((m.kendall_tau_b.as_ref().unwrap().value - 4.0 / 6.0).abs() < 1e-12);
        assert!((m.mean_absolute_error.as_ref().unwrap().value - 0.175).abs() < 1e-12);
        let ids: Vec<&str> = m.disagreements.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["b", "a", "c"]);
        assert_eq!(m.disagreements[0].question.as_deref(), Some("question b"));
        assert!(m.corrected.is_some());
        assert_eq!(a.failures(0.7), Vec::<String>::new());
        assert_eq!(a.failures(0.9).len(), 1);
    }
}
