//! The labelling page of `rag-eval serve --labels FILE`: a run's queries one at a time, with
//! what the judges said, and a form that records a person's label per metric into the labels
//! file `rag-eval align --labels` reads.
//!
//! | request | answer |
//! |---|---|
//! | `GET /runs/{id}/label?q=N` | query `N` (0-based; default 0) of the run: question, answer, references, contexts, each judged metric's figure and the judge's samples (statements with verdicts, reasons and evidence; a criteria judge's verdict and reason; …) and the saved labels |
//! | `POST /runs/{id}/label?q=N` | an HTML form (`application/x-www-form-urlencoded`): per metric `label.<metric>` = `pass`, `fail`, a verdict of its criteria judge's scale, `score` or empty (no label), `score.<metric>` (a number in [0, 1], when `score`), `note.<metric>` (optional text), and for a judge with statements `verdict.<metric>.<i>` = `supported` or `unsupported` for each statement `i` (0-based; all or none); `go` = `next` (default), `prev` or `stay`. The labels are saved, then `303 See Other` to the query `go` names |
//!
//! A pass is written as 1, a fail as 0 and a score as given, on the [0, 1] scale the run's
//! figures use. A criteria judge whose run kept its scale is labelled on that scale instead of
//! pass/fail: a `label.<metric>` that is one of its verdicts is that verdict's score (a 1–5
//! judge's 4 is 0.75). The labelled metrics are those a judge
//! scored in the run, or every metric of a run without judges.
//!
//! A conversation run's page shows each conversation as the report's transcript (its turns,
//! tool calls with their arguments, each turn's contexts, verdicts and figures) and labels the
//! conversation's figures (goal accuracy pass or fail, a score), keyed by conversation id as
//! a query's are by query id.
//!
//! The statements of faithfulness (and context recall) in the judge's first scored sample are
//! shown with the judge's verdict and the person's, which starts as the judge's and may be
//! flipped. The person's verdicts are saved (under `statements` in the labels file) when the
//! metric is given a label or any verdict differs from the judge's; with no label of its own
//! the metric is then labelled by them, the share of statements marked supported
//! ([`Labels::label`]).
//!
//! Each save rewrites the whole labels file atomically, so a crash leaves the previous save or
//! this one; labels the file held when the server started (for this run or any other) are kept,
//! and a reopened page shows them. One server at a time labels into a file: it holds a lock on
//! `FILE.lock` beside it while it runs, and a second server on the same file is refused (each
//! would rewrite the file without the other's labels).

use super::{form_decode, with_store, ApiError, Store};
use crate::align::{judged_statements, Labels, StatementLabel};
use crate::escape::html as esc;
use crate::metrics::{JudgeDetails, JudgeSample, QueryResult, ResultLevel, RunResult};
use crate::report::transcript;
use crate::runs::RunRecord;
use axum::body::Bytes;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use camino::{Utf8Path, Utf8PathBuf};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

/// The labels file a labelling server writes: its labels, read when the server starts and
/// rewritten atomically on every save.
#[derive(Debug)]
pub struct LabelFile {
    path: Utf8PathBuf,
    labels: Mutex<Labels>,
    /// `FILE.lock`, locked while the file is open: the lock ends with the process.
    _lock: std::fs::File,
}

impl LabelFile {
    /// Opens the labels file at `path`: its labels when it exists (errors name file:line), else
    /// a new, empty file, so that a path that cannot be written fails now rather than at the
    /// first save. Each save rewrites the whole file, so a file holding anything a labels file
    /// does not (a dataset's rows, keys of a team's own) is refused rather than cut down.
    /// Another `LabelFile` open on the same file, in this process or another, is an error
    /// naming the file: it holds the lock on `FILE.lock` until it is dropped.
    pub fn open(path: impl AsRef<Utf8Path>) -> crate::Result<LabelFile> {
        let path = path.as_ref().to_owned();
        let lock = lock(&path)?;
        let labels = if path.exists() {
            let text = crate::corpus::read_utf8(&path)?;
            rewritable(&path, &text)?;
            Labels::parse(&text, path.clone())?
        } else {
            crate::fs::write_atomic(&path, b"")?;
            Labels::default()
        };
        Ok(LabelFile {
            path,
            labels: Mutex::new(labels),
            _lock: lock,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Utf8Path {
        &self.path
    }

    fn labels(&self) -> std::sync::MutexGuard<'_, Labels> {
        // A panic while the lock was held left the labels as the last save wrote them.
        self.labels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies `changes` (metric, value, note) and `verdicts` to query `id` and writes the
    /// file; on a failed write the labels stay as they were.
    fn save(&self, id: &str, changes: Vec<Change>, verdicts: Vec<Verdicts>) -> crate::Result<()> {
        let mut held = self.labels();
        let mut next = held.clone();
        for c in changes {
            next.set(id, &c.metric, c.value, c.note);
        }
        for v in verdicts {
            next.set_statements(id, &v.metric, v.verdicts);
        }
        crate::fs::write_atomic(&self.path, next.to_jsonl().as_bytes())?;
        *held = next;
        Ok(())
    }
}

/// `FILE.lock` beside the labels file, created when missing and locked. The labels file itself
/// cannot carry the lock: each save replaces it with a new file.
fn lock(path: &Utf8Path) -> crate::Result<std::fs::File> {
    let lock_path = Utf8PathBuf::from(format!("{path}.lock"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| crate::Error::io("create", lock_path.clone(), e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(crate::Error::File {
            path: path.to_owned(),
            message: format!(
                "`{path}` is being labelled by another server (it holds `{lock_path}`): each would rewrite the file without the other's labels; stop that server or give this one another file"
            ),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(crate::Error::io("lock", lock_path, e)),
    }
}

/// The keys of a line that [`Labels::to_jsonl`] writes back.
const WRITTEN_KEYS: [&str; 4] = ["id", "labels", "notes", "statements"];

/// An error naming the first line of `text` that a save would not write back: a key other than
/// [`WRITTEN_KEYS`], or a row without labels (a dataset row, say). Lines that are not JSON
/// objects are left to [`Labels::parse`], which names them.
fn rewritable(path: &Utf8Path, text: &str) -> crate::Result<()> {
    for (i, line) in crate::fs::strip_bom(text).lines().enumerate() {
        let Ok(serde_json::Value::Object(row)) = serde_json::from_str(line) else {
            continue;
        };
        let lost = row
            .keys()
            .find(|k| !WRITTEN_KEYS.contains(&k.as_str()))
            .map(|k| format!("`{k}`"))
            .or_else(|| {
                (!row.contains_key("labels") && !row.contains_key("statements"))
                    .then(|| "a row without `labels`".to_owned())
            });
        if let Some(lost) = lost {
            return Err(crate::Error::Parse {
                path: path.to_owned(),
                line: i + 1,
                message: format!(
                    "{lost} is not kept by the labelling page, which rewrites the whole file on each save; give `--labels` a file of its own (`align` reads both)"
                ),
            });
        }
    }
    Ok(())
}

/// One metric's label as the form gave it.
struct Change {
    metric: String,
    value: Option<f64>,
    note: Option<String>,
}

/// One metric's statement verdicts as the form gave them: `None` removes saved ones.
struct Verdicts {
    metric: String,
    verdicts: Option<Vec<StatementLabel>>,
}

/// The state of the server's routes: the store, and the labels file when labelling is on.
#[derive(Clone)]
pub(super) struct Labelling(pub(super) Option<Arc<LabelFile>>);

impl Labelling {
    fn file(&self) -> Result<Arc<LabelFile>, ApiError> {
        self.0.clone().ok_or_else(|| {
            ApiError(
                StatusCode::NOT_FOUND,
                "labelling is off: start the server with `rag-eval serve --labels FILE`".into(),
            )
        })
    }
}

fn bad(message: String) -> ApiError {
    ApiError(StatusCode::BAD_REQUEST, message)
}

/// The `q` parameter of `query`: a query's position, 0 when absent.
fn position(query: Option<&str>) -> Result<usize, ApiError> {
    for pair in query.unwrap_or_default().split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if form_decode(name)? == "q" {
            let value = form_decode(value)?;
            return value.parse().map_err(|_| {
                bad(format!(
                    "`q` must be a query's position, a whole number (got `{value}`)"
                ))
            });
        }
    }
    Ok(0)
}

/// The metrics a person labels in `run`: those a judge scored, in the run's order, or every
/// metric when no judge did. A conversation's figure is judged when a judge scored the
/// conversation (goal accuracy) or any of its turns (its faithfulness, the mean of its turns').
fn labelled_metrics(run: &RunResult) -> Vec<String> {
    let judged_in =
        |judges: &[crate::metrics::QueryJudgement], n: &str| judges.iter().any(|j| j.metric == n);
    let judged: Vec<String> = run
        .metrics
        .names()
        .filter(|n| {
            run.per_query
                .iter()
                .any(|q| judged_in(&q.judges, n) || q.turns.iter().any(|t| judged_in(&t.judges, n)))
        })
        .map(str::to_owned)
        .collect();
    if judged.is_empty() {
        run.metrics.names().map(str::to_owned).collect()
    } else {
        judged
    }
}

async fn load(store: &Store, id: String) -> Result<RunRecord, ApiError> {
    with_store(store, move |s| s.load(&id)).await
}

/// The query at `q` of `record`, or a 404 naming how many the run has.
fn query_at(record: &RunRecord, q: usize) -> Result<&QueryResult, ApiError> {
    record.result.per_query.get(q).ok_or_else(|| {
        ApiError(
            StatusCode::NOT_FOUND,
            format!(
                "the run has {} queries; there is no query at position {q} (the first is 0)",
                record.result.per_query.len()
            ),
        )
    })
}

pub(super) async fn page(
    State(store): State<Store>,
    State(labelling): State<Labelling>,
    id: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
) -> Result<Html<String>, ApiError> {
    let Path(id) = id.map_err(super::bad_path)?;
    let file = labelling.file()?;
    let q = position(query.as_deref())?;
    let record = load(&store, id).await?;
    query_at(&record, q)?;
    let labels = file.labels().clone();
    Ok(Html(render(&record, q, &labels, file.path())))
}

pub(super) async fn save(
    State(store): State<Store>,
    State(labelling): State<Labelling>,
    id: Result<Path<String>, PathRejection>,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Result<Response, ApiError> {
    let Path(id) = id.map_err(super::bad_path)?;
    let file = labelling.file()?;
    let q = position(query.as_deref())?;
    let record = load(&store, id).await?;
    let query = query_at(&record, q)?;
    let query_id = query.id.clone();
    let metrics = labelled_metrics(&record.result);
    let form = std::str::from_utf8(&body)
        .map_err(|_| bad("the form is not UTF-8".into()))
        .and_then(parse_form)?;
    let (changes, go) = changes(&form, query, &metrics)?;
    let verdicts = verdicts(&form, query, &metrics, &changes)?;
    tokio::task::spawn_blocking(move || file.save(&query_id, changes, verdicts))
        .await
        .map_err(|e| {
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the save failed: {e}"),
            )
        })?
        .map_err(|e| {
            super::to_stderr(&format!("the labels could not be saved: {e}"));
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the labels could not be written (the server's standard error says why)".into(),
            )
        })?;
    let last = record.result.per_query.len() - 1;
    let to = match go {
        Go::Next => (q + 1).min(last),
        Go::Prev => q.saturating_sub(1),
        Go::Stay => q,
    };
    let location = format!("/runs/{}/label?q={to}", record.id.as_str());
    Ok((StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response())
}

/// The form's fields, decoded, in order.
fn parse_form(body: &str) -> Result<Vec<(String, String)>, ApiError> {
    body.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((form_decode(name)?, form_decode(value)?))
        })
        .collect()
}

/// A bad request unless `metric` is one of the labelled `metrics`.
fn known(metric: &str, metrics: &[String]) -> Result<(), ApiError> {
    if metrics.iter().any(|m| m == metric) {
        Ok(())
    } else {
        Err(bad(format!(
            "`{metric}` is not a metric labelled in this run (they are: {})",
            metrics.join(", ")
        )))
    }
}

/// Where a save goes next.
enum Go {
    Next,
    Prev,
    Stay,
}

/// The verdicts of the scale the criteria judge of `metric` used in `query`, with their scores,
/// when the run kept it.
fn scale(query: &QueryResult, metric: &str) -> Option<Vec<(String, f64)>> {
    query
        .judges
        .iter()
        .filter(|j| j.metric == metric)
        .flat_map(|j| &j.samples)
        .find_map(|s| match &s.details {
            JudgeDetails::Criteria { scale, .. } => scale.clone(),
            _ => None,
        })
}

/// The labels the form sets for `query`: one change per metric it has a `label.<metric>` field
/// for; a label that is a verdict of the metric's criteria scale is that verdict's score.
fn changes(
    form: &[(String, String)],
    query: &QueryResult,
    metrics: &[String],
) -> Result<(Vec<Change>, Go), ApiError> {
    let field = |name: &str| form.iter().find(|(n, _)| n == name).map(|(_, v)| v.trim());
    let go = match field("go").unwrap_or("next") {
        "next" => Go::Next,
        "prev" => Go::Prev,
        "stay" => Go::Stay,
        other => {
            return Err(bad(format!(
                "`go` is `next`, `prev` or `stay` (got `{other}`)"
            )))
        }
    };
    let mut changes = Vec::new();
    for (name, choice) in form {
        let Some(metric) = name.strip_prefix("label.") else {
            continue;
        };
        known(metric, metrics)?;
        let verdict =
            scale(query, metric).and_then(|options| options.into_iter().find(|(v, _)| v == choice));
        let value = match choice.as_str() {
            _ if verdict.is_some() => verdict.map(|(_, score)| score),
            "pass" => Some(1.0),
            "fail" => Some(0.0),
            "" => None,
            "score" => {
                let given = field(&format!("score.{metric}")).unwrap_or_default();
                let v: f64 = given
                    .parse()
                    .map_err(|_| bad(format!("`{metric}`: the score `{given}` is not a number")))?;
                if !(0.0..=1.0).contains(&v) {
                    return Err(bad(format!(
                        "`{metric}`: a score is between 0 and 1 (got {v})"
                    )));
                }
                Some(v)
            }
            other => {
                return Err(bad(format!(
                    "`{metric}`: a label is `pass`, `fail`, `score` or empty (got `{other}`)"
                )))
            }
        };
        let note = field(&format!("note.{metric}"))
            .filter(|n| !n.is_empty())
            .map(str::to_owned);
        changes.push(Change {
            metric: metric.to_owned(),
            value,
            note,
        });
    }
    Ok((changes, go))
}

/// The statement verdicts the form sets: for each metric with `verdict.<metric>.<i>` fields,
/// one per statement of the judge's, the person's verdicts when the metric has a label in
/// `changes` or one differs from the judge's, else `None` (nothing to keep).
fn verdicts(
    form: &[(String, String)],
    query: &QueryResult,
    metrics: &[String],
    changes: &[Change],
) -> Result<Vec<Verdicts>, ApiError> {
    let mut given: Vec<(&str, usize, bool)> = Vec::new();
    for (name, value) in form {
        let Some(rest) = name.strip_prefix("verdict.") else {
            continue;
        };
        let (metric, i) = rest
            .rsplit_once('.')
            .and_then(|(m, i)| Some((m, i.parse::<usize>().ok()?)))
            .ok_or_else(|| {
                bad(format!(
                    "`{name}`: a verdict's field is `verdict.<metric>.<statement number>`"
                ))
            })?;
        let supported = match value.as_str() {
            "supported" => true,
            "unsupported" => false,
            other => {
                return Err(bad(format!(
                    "`{name}`: a verdict is `supported` or `unsupported` (got `{other}`)"
                )))
            }
        };
        known(metric, metrics)?;
        given.push((metric, i, supported));
    }
    let mut out = Vec::new();
    for metric in metrics {
        let mine: Vec<(usize, bool)> = given
            .iter()
            .filter(|(m, ..)| m == metric)
            .map(|&(_, i, v)| (i, v))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let Some(judged) = judged_statements(query, metric) else {
            return Err(bad(format!(
                "`{metric}`: its judge gave no statements for query `{}`",
                query.id
            )));
        };
        let mut person: Vec<Option<bool>> = vec![None; judged.len()];
        for (i, v) in mine {
            let slot = person.get_mut(i).ok_or_else(|| {
                bad(format!(
                    "`{metric}`: the judge gave {} statements; there is no statement {i} (the first is 0)",
                    judged.len()
                ))
            })?;
            *slot = Some(v);
        }
        let mut flipped = false;
        let mut verdicts = Vec::with_capacity(judged.len());
        for (i, (j, p)) in judged.into_iter().zip(person).enumerate() {
            let supported = p.ok_or_else(|| {
                bad(format!(
                    "`{metric}`: a verdict on every statement or none (`verdict.{metric}.{i}` is missing)"
                ))
            })?;
            flipped |= j.supported != supported;
            verdicts.push(StatementLabel { supported, ..j });
        }
        let labelled = changes
            .iter()
            .any(|c| c.metric == *metric && c.value.is_some());
        out.push(Verdicts {
            metric: metric.clone(),
            verdicts: (flipped || labelled).then_some(verdicts),
        });
    }
    Ok(out)
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:20px;max-width:1100px}\
nav a{margin-right:4px}nav .done{background:#d7f0d7}nav .here{outline:2px solid #333}\
.text{white-space:pre-wrap;background:#f6f6f6;padding:6px 8px;border-radius:4px}\
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}\
fieldset{margin:12px 0;border:1px solid #bbb;border-radius:4px}fieldset.current{border:2px solid #2a6ebb}\
.yes{color:#176317}.no{color:#a31515}.saved{font-weight:bold}kbd{border:1px solid #aaa;border-radius:3px;padding:0 3px}\
tr.flipped td{background:#fff1c2}tr.at td:first-child{outline:2px solid #2a6ebb}\
h1,h2{overflow-wrap:anywhere}fieldset{min-width:0}input[type=text],input[type=number]{max-width:100%;box-sizing:border-box}";

/// Keyboard: `p`/`f` mark the current metric pass/fail (the verdict scored 1 or 0 on a criteria
/// judge's scale) and move to the next, `u` clears it,
/// `1`–`9` pick a metric, `j`/`k` pick the current metric's next/previous statement and `x`
/// flips the person's verdict on it, `Enter` or `s` saves and goes on, `←`/`→` move without
/// saving. A flipped statement's row is marked and the count of supported ones follows.
const SCRIPT: &str = r#"(function(){
const form=document.getElementById('labels');
const sets=[...form.querySelectorAll('fieldset')];
let cur=-1,st=0;
const rows=f=>f?[...f.querySelectorAll('tr[data-judge]')].filter(r=>r.querySelector('input')):[];
function at(i){document.querySelectorAll('tr.at').forEach(r=>r.classList.remove('at'));
  const r=rows(sets[cur]);if(r.length){st=Math.max(0,Math.min(i,r.length-1));r[st].classList.add('at');}}
function show(i){sets.forEach((s,j)=>s.classList.toggle('current',j===i));if(i!==cur){cur=i;at(0);}}
function update(f){const r=rows(f);let n=0;r.forEach(x=>{const v=x.querySelector('input:checked').value;
  x.classList.toggle('flipped',v!==x.dataset.judge);if(v==='supported')n++;});
  const c=f.querySelector('.share');if(c)c.textContent=n+' of '+r.length;}
if(sets.length)show(0);
sets.forEach((s,i)=>s.addEventListener('focusin',e=>{show(i);const r=e.target.closest('tr[data-judge]');
  if(r)at(rows(s).indexOf(r));}));
form.addEventListener('change',e=>{if(e.target.name.startsWith('verdict.'))update(e.target.closest('fieldset'));});
function flip(){const r=rows(sets[cur])[st];if(!r)return;r.querySelector('input:not(:checked)').checked=true;update(sets[cur]);}
form.querySelectorAll('input[type=number]').forEach(n=>n.addEventListener('input',()=>{
  const r=n.closest('fieldset').querySelector('input[value=score]');if(r)r.checked=true;}));
function mark(v){const r=sets[cur]&&sets[cur].querySelector(v?'input[data-score="'+v+'"]':'input[name^="label."][value=""]');
  if(r){r.checked=true;if(cur+1<sets.length)show(cur+1);}}
document.addEventListener('keydown',e=>{
  if(e.ctrlKey||e.metaKey||e.altKey)return;
  if(e.target.matches('input[type=text],input[type=number],textarea')){
    if(e.key==='Escape')e.target.blur();return;}
  const link=id=>{const a=document.getElementById(id);if(a)location.href=a.href;};
  if(e.key==='p')mark('1');else if(e.key==='f')mark('0');else if(e.key==='u')mark('');
  else if(e.key>='1'&&e.key<='9'&&+e.key<=sets.length)show(+e.key-1);
  else if(e.key==='j')at(st+1);else if(e.key==='k')at(st-1);else if(e.key==='x')flip();
  else if(e.key==='Enter'||e.key==='s')form.requestSubmit(document.getElementById('save-next'));
  else if(e.key==='ArrowRight')link('next');else if(e.key==='ArrowLeft')link('prev');
  else return;
  e.preventDefault();});
document.body.dataset.ready='yes';
})();"#;

/// The labelling page of query `q` of `record`.
fn render(record: &RunRecord, q: usize, labels: &Labels, path: &Utf8Path) -> String {
    let run = &record.result;
    let query = &run.per_query[q];
    let metrics = labelled_metrics(run);
    let base = format!("/runs/{}/label", esc(record.id.as_str()));
    let total = run.per_query.len();
    let done = run
        .per_query
        .iter()
        .filter(|x| labels.is_labelled(&x.id))
        .count();
    // A conversation run labels conversations, each shown as its transcript.
    let conversations = run.level == ResultLevel::Conversation;
    let mut s = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>label {} · {}</title><style>{STYLE}{}</style></head><body>",
        esc(&query.id),
        esc(&crate::report::record_label(record)),
        if conversations { transcript::style() } else { String::new() },
    );
    let _ = write!(
        s,
        "<h1>Label run <a href=\"/runs/{id}/report\">{label}</a></h1><p>{} {} of {total}; {done} labelled, saved to <code>{}</code>. Keys: <kbd>p</kbd> pass, <kbd>f</kbd> fail, <kbd>u</kbd> no label (then the next metric), <kbd>1</kbd>–<kbd>9</kbd> a metric, <kbd>j</kbd> <kbd>k</kbd> a statement, <kbd>x</kbd> flip its verdict, <kbd>Enter</kbd> save and next, <kbd>←</kbd> <kbd>→</kbd> move.</p><nav>",
        if conversations { "Conversation" } else { "Query" },
        q + 1,
        esc(path.as_str()),
        id = esc(record.id.as_str()),
        label = esc(&crate::report::record_label(record)),
    );
    if q > 0 {
        let _ = write!(
            s,
            "<a id=\"prev\" href=\"{base}?q={}\">← previous</a> ",
            q - 1
        );
    }
    if q + 1 < total {
        let _ = write!(s, "<a id=\"next\" href=\"{base}?q={}\">next →</a> ", q + 1);
    }
    for (i, x) in run.per_query.iter().enumerate() {
        let mut class = Vec::new();
        if labels.is_labelled(&x.id) {
            class.push("done");
        }
        if i == q {
            class.push("here");
        }
        let _ = write!(
            s,
            "<a class=\"{}\" href=\"{base}?q={i}\" title=\"{}\">{}</a>",
            class.join(" "),
            esc(&x.id),
            i + 1
        );
    }
    s.push_str("</nav>");
    let _ = write!(s, "<h2>{}</h2>", esc(&query.id));
    if conversations {
        transcript::figures(&mut s, &query.metrics);
        transcript::turns(&mut s, query, "t");
    }
    section(&mut s, "Question", query.query.as_deref());
    section(&mut s, "Answer", query.answer.as_deref());
    for (i, r) in query.references.iter().enumerate() {
        section(&mut s, &format!("Reference {}", i + 1), Some(r));
    }
    if let Some(contexts) = query.contexts.as_ref().or(query.retrieved.as_ref()) {
        s.push_str("<h3>Contexts</h3><ol>");
        for c in contexts {
            let _ = write!(
                s,
                "<li><code>{}</code> [{}, {})<div class=\"text\">{}</div></li>",
                esc(&c.doc_id),
                c.start,
                c.end,
                esc(c.text.as_deref().unwrap_or(""))
            );
        }
        s.push_str("</ol>");
    }
    let _ = write!(
        s,
        "<form id=\"labels\" method=\"post\" action=\"{base}?q={q}\">"
    );
    let saved = labels.get(&query.id);
    for (i, metric) in metrics.iter().enumerate() {
        let m = esc(metric);
        let value = saved.and_then(|f| f.get(metric));
        let figure = query
            .metrics
            .get(metric)
            .map_or("no figure".to_owned(), |v| format!("figure {v:.4}"));
        let _ = write!(
            s,
            "<fieldset><legend>{} <b>{m}</b>: {figure}{}</legend>",
            i + 1,
            match (value, labels.label(&query.id, metric)) {
                (Some(v), _) => format!(
                    " <span class=\"saved\">· saved label {}</span>",
                    match v {
                        1.0 => "pass".to_owned(),
                        0.0 => "fail".to_owned(),
                        v => v.to_string(),
                    }
                ),
                (None, Some(v)) => format!(
                    " <span class=\"saved\">· labelled {v} by your statement verdicts</span>"
                ),
                (None, None) => String::new(),
            }
        );
        // The person's verdicts on the first scored sample's statements: as saved, when saved
        // for these statements, else the judge's.
        let mine: Option<Vec<bool>> = judged_statements(query, metric).map(|judged| {
            let saved = labels.statements(&query.id, metric).filter(|v| {
                v.len() == judged.len() && v.iter().zip(&judged).all(|(a, b)| a.text == b.text)
            });
            saved
                .unwrap_or(&judged)
                .iter()
                .map(|v| v.supported)
                .collect()
        });
        let mut editable = mine.as_deref();
        for j in query.judges.iter().filter(|j| j.metric == *metric) {
            for sample in &j.samples {
                let edit = if sample.score.is_some() {
                    editable.take().map(|v| (m.as_str(), v))
                } else {
                    None
                };
                judge_sample(&mut s, sample, edit);
            }
        }
        let checked = |on: bool| if on { " checked" } else { "" };
        // The judge's own scale, when the run kept it, else pass and fail; `data-score` is
        // what `p` (1) and `f` (0) look for.
        let options = scale(query, metric)
            .unwrap_or_else(|| vec![("pass".into(), 1.0), ("fail".into(), 0.0)]);
        let chosen = value.and_then(|v| options.iter().position(|o| o.1 == v));
        let is_score = value.is_some() && chosen.is_none();
        for (i, (verdict, score)) in options.iter().enumerate() {
            let text = if matches!(verdict.as_str(), "pass" | "fail") {
                esc(verdict)
            } else {
                format!("{} <small>({score})</small>", esc(verdict))
            };
            let _ = write!(
                s,
                "<label><input type=\"radio\" name=\"label.{m}\" value=\"{}\" data-score=\"{score}\"{}> {text}</label> ",
                esc(verdict),
                checked(chosen == Some(i))
            );
        }
        for (choice, text, on) in [
            ("score", "score", is_score),
            ("", "no label", value.is_none()),
        ] {
            let _ = write!(
                s,
                "<label><input type=\"radio\" name=\"label.{m}\" value=\"{choice}\"{}> {text}</label> ",
                checked(on)
            );
        }
        let _ = write!(
            s,
            "<input type=\"number\" name=\"score.{m}\" min=\"0\" max=\"1\" step=\"any\" placeholder=\"score, 0 to 1\" aria-label=\"score of {m}\" value=\"{}\"> <input type=\"text\" name=\"note.{m}\" size=\"50\" placeholder=\"note\" aria-label=\"note on {m}\" value=\"{}\"></fieldset>",
            if is_score { value.map(|v| v.to_string()).unwrap_or_default() } else { String::new() },
            esc(labels.note(&query.id, metric).unwrap_or("")),
        );
    }
    s.push_str("<button id=\"save-next\" name=\"go\" value=\"next\">Save and next</button> <button name=\"go\" value=\"stay\">Save</button> <button name=\"go\" value=\"prev\">Save and previous</button></form>");
    let _ = writeln!(s, "<script>{SCRIPT}</script></body></html>");
    s
}

/// A heading and its text, when there is any.
fn section(s: &mut String, heading: &str, text: Option<&str>) {
    if let Some(t) = text {
        let _ = write!(s, "<h3>{heading}</h3><div class=\"text\">{}</div>", esc(t));
    }
}

/// How many of the person's verdicts say supported, updated by the page's script.
fn share(s: &mut String, edit: Option<(&str, &[bool])>) {
    if let Some((_, v)) = edit {
        let _ = write!(
            s,
            "<p>Your verdicts: <span class=\"share\">{} of {}</span> statements supported; with no label of its own, the metric is labelled by their share.</p>",
            v.iter().filter(|&&b| b).count(),
            v.len()
        );
    }
}

fn yes_no(on: bool, yes: &str, no: &str) -> String {
    if on {
        format!("<span class=\"yes\">{yes}</span>")
    } else {
        format!("<span class=\"no\">{no}</span>")
    }
}

/// The person's verdict on statement `i` of `metric` (escaped): two radio buttons, `mine`
/// checked.
fn verdict_cell(metric: &str, i: usize, mine: bool) -> String {
    let radio = |value: &str, on: bool| {
        format!(
            "<label><input type=\"radio\" name=\"verdict.{metric}.{i}\" value=\"{value}\"{}> {value}</label>",
            if on { " checked" } else { "" }
        )
    };
    format!(
        "<td class=\"mine\">{} {}</td>",
        radio("supported", mine),
        radio("unsupported", !mine)
    )
}

/// A statement's row: its judge's verdict in `data-judge`, `flipped` when the person's differs.
fn statement_row(judge: bool, mine: Option<bool>) -> String {
    let word = if judge { "supported" } else { "unsupported" };
    let flipped = if mine.is_some_and(|m| m != judge) {
        " class=\"flipped\""
    } else {
        ""
    };
    format!("<tr data-judge=\"{word}\"{flipped}>")
}

/// One judge sample: its status, score and what the judge said; `edit` (the metric, escaped,
/// and the person's verdicts) puts a verdict of the person's beside each statement.
fn judge_sample(s: &mut String, sample: &JudgeSample, edit: Option<(&str, &[bool])>) {
    let mine = |i: usize| edit.and_then(|(_, v)| v.get(i).copied());
    let yours = if edit.is_some() { "<th>yours</th>" } else { "" };
    let cell = |i: usize| match edit {
        Some((metric, v)) => verdict_cell(metric, i, v[i]),
        None => String::new(),
    };
    let _ = write!(
        s,
        "<p>judge sample {}: {}{}{}</p>",
        sample.sample + 1,
        sample.status.as_str(),
        sample
            .score
            .map(|v| format!(", score {v:.4}"))
            .unwrap_or_default(),
        sample
            .message
            .as_deref()
            .map(|m| format!(" ({})", esc(m)))
            .unwrap_or_default(),
    );
    match &sample.details {
        JudgeDetails::None => {}
        JudgeDetails::Faithfulness { statements } => {
            let _ = write!(s, "<table><tr><th>statement</th><th>verdict</th>{yours}<th>reason</th><th>evidence</th></tr>");
            for (i, st) in statements.iter().enumerate() {
                let verdict = if st.unlocated {
                    "<span class=\"no\">evidence not found</span>".to_owned()
                } else {
                    yes_no(st.supported, "supported", "unsupported")
                };
                let _ = write!(
                    s,
                    "{}<td>{}</td><td>{verdict}</td>{}<td>{}</td><td>{}</td></tr>",
                    statement_row(st.supported, mine(i)),
                    esc(&st.text),
                    cell(i),
                    esc(&st.reason),
                    esc(&st.evidence)
                );
            }
            s.push_str("</table>");
            share(s, edit);
        }
        JudgeDetails::AnswerRelevancy {
            questions,
            noncommittal,
        } => {
            let _ = write!(
                s,
                "<table><tr><th>question generated from the answer{}</th><th>cosine</th></tr>",
                if *noncommittal {
                    " (the answer is noncommittal)"
                } else {
                    ""
                }
            );
            for g in questions {
                let _ = write!(
                    s,
                    "<tr><td>{}</td><td>{:.4}</td></tr>",
                    esc(&g.question),
                    g.cosine
                );
            }
            s.push_str("</table>");
        }
        JudgeDetails::ContextPrecision { verdicts } => {
            s.push_str("<table><tr><th>context</th><th>verdict</th><th>reason</th></tr>");
            for v in verdicts {
                let _ = write!(
                    s,
                    "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                    v.context + 1,
                    yes_no(v.useful, "useful", "not useful"),
                    esc(&v.reason)
                );
            }
            s.push_str("</table>");
        }
        JudgeDetails::ContextRecall { statements } => {
            let _ = write!(
                s,
                "<table><tr><th>reference statement</th><th>verdict</th>{yours}<th>reason</th></tr>"
            );
            for (i, a) in statements.iter().enumerate() {
                let _ = write!(
                    s,
                    "{}<td>{}</td><td>{}{}</td>{}<td>{}</td></tr>",
                    statement_row(a.attributed, mine(i)),
                    esc(&a.text),
                    yes_no(a.attributed, "attributed", "not attributed"),
                    a.context
                        .map(|c| format!(" (context {})", c + 1))
                        .unwrap_or_default(),
                    cell(i),
                    esc(&a.reason)
                );
            }
            s.push_str("</table>");
            share(s, edit);
        }
        JudgeDetails::Criteria {
            verdict,
            reason,
            probabilities,
            ..
        } => {
            let _ = write!(s, "<p>verdict <b>{}</b>: {}</p>", esc(verdict), esc(reason));
            if let Some(p) = probabilities {
                let shown: Vec<String> = p
                    .iter()
                    .map(|(v, p)| format!("{} {p:.3}", esc(v)))
                    .collect();
                let _ = write!(s, "<p>verdict probabilities: {}</p>", shown.join(", "));
            }
        }
        JudgeDetails::AnswerMatch { matches, reason } => {
            let _ = write!(
                s,
                "<p>{}: {}</p>",
                yes_no(
                    *matches,
                    "matches the reference",
                    "does not match the reference"
                ),
                esc(reason)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    /// A dataset with `outputs.labels`, or a labels file with keys of a team's own, would be
    /// cut down to labels by the first save: opening it is refused, naming the line, and the
    /// file is untouched; a file the page wrote itself opens.
    #[test]
    fn a_file_a_save_would_cut_down_is_refused_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = Utf8PathBuf::from_path_buf(dir.path().join("l.jsonl")).unwrap();
        let written = "{\"id\":\"q1\",\"labels\":{\"faithfulness\":1.0}}\n";
        for (text, line, said) in [
            (
                "{\"id\":\"q1\",\"input\":\"why?\",\"outputs\":{\"labels\":{\"faithfulness\":1}}}\n",
                1,
                "`input`",
            ),
            (
                "{\"id\":\"q1\",\"labels\":{\"faithfulness\":1},\"annotator\":\"ana\"}\n",
                1,
                "`annotator`",
            ),
            ("{\"id\":\"q1\",\"labels\":{}}\n{\"id\":\"q2\"}\n", 2, "a row without `labels`"),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = LabelFile::open(&path).unwrap_err().to_string();
            assert!(e.contains(&format!("l.jsonl:{line}")), "{e}");
            assert!(e.contains(said) && e.contains("a file of its own"), "{e}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
        std::fs::write(&path, written).unwrap();
        let file = LabelFile::open(&path).unwrap();
        assert_eq!(file.labels().to_jsonl(), written);
    }

    #[test]
    fn one_labels_file_is_open_once_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = Utf8PathBuf::from_path_buf(dir.path().join("l.jsonl")).unwrap();
        let first = LabelFile::open(&path).unwrap();
        let e = LabelFile::open(&path).unwrap_err().to_string();
        assert!(
            e.contains("l.jsonl` is being labelled by another server")
                && e.contains("l.jsonl.lock"),
            "{e}"
        );
        // The first one's saves are its own; once it is closed the file may be opened again.
        first.save("q1", Vec::new(), Vec::new()).unwrap();
        drop(first);
        LabelFile::open(&path).unwrap();
    }

    #[test]
    fn a_form_sets_pass_fail_scores_and_notes_and_refuses_the_rest() {
        let metrics = ["faithfulness".to_owned(), "tone".to_owned()];
        let none = QueryResult::default();
        let (c, go) = changes(
            &form(&[
                ("label.faithfulness", "fail"),
                ("note.faithfulness", " invents a date "),
                ("label.tone", "score"),
                ("score.tone", "0.75"),
                ("go", "stay"),
            ]),
            &none,
            &metrics,
        )
        .unwrap();
        assert!(matches!(go, Go::Stay));
        assert_eq!(
            c.iter()
                .map(|c| (c.metric.as_str(), c.value, c.note.as_deref()))
                .collect::<Vec<_>>(),
            [
                ("faithfulness", Some(0.0), Some("invents a date")),
                ("tone", Some(0.75), None)
            ]
        );
        let err = |pairs: &[(&str, &str)]| changes(&form(pairs), &none, &metrics).err().unwrap().1;
        assert!(err(&[("label.mrr", "pass")]).contains("`mrr` is not a metric labelled"));
        assert!(err(&[("label.tone", "maybe")]).contains("got `maybe`"));
        assert!(err(&[("label.tone", "score"), ("score.tone", "4")]).contains("between 0 and 1"));
        assert!(err(&[("label.tone", "score")]).contains("is not a number"));
        assert!(err(&[("go", "up")]).contains("`go`"));
        assert!(position(Some("q=x")).is_err());
        assert_eq!(position(Some("a=1&q=3")).unwrap(), 3);
    }
}
