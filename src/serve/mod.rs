//! `rag-eval serve`: a read-only HTTP API over a [run store](crate::runs::RunStore), on the
//! loopback interface only.
//!
//! | request | answer |
//! |---|---|
//! | `GET /runs` | every run's summary, oldest first (the objects `rag-eval runs list --json` prints, as an array) |
//! | `GET /runs/{id}` | the run record (as `rag-eval runs show --json`); `{id}` may be a unique prefix or `latest` |
//! | `POST /compare` `{"run_ids": [...]}` | 2 to 10 runs compared, the first the baseline |
//! | `GET /` | an HTML page listing the runs |
//! | `GET /runs/{id}/report` | the run's HTML report |
//! | `GET /report?run_ids=A,B,…` | the HTML report of several runs |
//!
//! Errors are JSON, `{"error": "…"}`, with a status code: 400 for a bad request (not JSON, too
//! few or too many runs, an ambiguous id), 404 for a run the store does not hold, 500 when the
//! store fails. Store calls run on Tokio's blocking threads, so a slow store never stalls the
//! server.

use crate::error::Error;
use crate::report::Report;
use crate::runs::{RunRecord, RunStore};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

/// The most runs one comparison takes.
pub const MAX_COMPARED: usize = 10;

type Store = Arc<dyn RunStore>;

/// An error answered as JSON with its status.
#[derive(Debug)]
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        let status = match &e {
            Error::NoSuchRun { .. } => StatusCode::NOT_FOUND,
            // An id that is the start of several: the request must say more.
            Error::RunStore { message, .. } if message.contains("give more characters") => {
                StatusCode::BAD_REQUEST
            }
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(status, e.to_string())
    }
}

/// Runs `f` with the store on a blocking thread.
async fn with_store<T: Send + 'static>(
    store: &Store,
    f: impl FnOnce(&dyn RunStore) -> crate::Result<T> + Send + 'static,
) -> Result<T, ApiError> {
    let store = Arc::clone(store);
    tokio::task::spawn_blocking(move || f(&*store))
        .await
        .map_err(|e| {
            ApiError(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the store call failed: {e}"),
            )
        })?
        .map_err(ApiError::from)
}

/// The API's routes over `store`.
pub fn router(store: Arc<dyn RunStore>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/runs", get(list))
        .route("/runs/{id}", get(show))
        .route("/runs/{id}/report", get(run_report))
        .route("/report", get(report))
        .route("/compare", post(compare))
        .fallback(|| async {
            ApiError(
                StatusCode::NOT_FOUND,
                "no such endpoint; see GET /runs, GET /runs/{id}, POST /compare".into(),
            )
        })
        .with_state(store)
}

/// Serves `store` on 127.0.0.1 at `port` (0: any free port) until the process ends; `ready`
/// is called with the bound address first.
pub async fn serve(
    store: Arc<dyn RunStore>,
    port: u16,
    ready: impl FnOnce(SocketAddr),
) -> crate::Result<()> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Config(format!("cannot listen on {addr}: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| Error::Config(format!("cannot listen on {addr}: {e}")))?;
    ready(bound);
    axum::serve(listener, router(store))
        .await
        .map_err(|e| Error::Config(format!("the server on {bound} stopped: {e}")))
}

async fn list(State(store): State<Store>) -> Result<Response, ApiError> {
    let runs = with_store(&store, |s| s.list()).await?;
    Ok(Json(runs).into_response())
}

async fn show(State(store): State<Store>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let record = with_store(&store, move |s| s.load(&id)).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        record.to_json(),
    )
        .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompareRequest {
    run_ids: Vec<String>,
}

/// The records `ids` name, in order: 2 to [`MAX_COMPARED`] of them.
async fn load_many(store: &Store, ids: Vec<String>) -> Result<Vec<RunRecord>, ApiError> {
    if ids.len() < 2 || ids.len() > MAX_COMPARED {
        return Err(ApiError(
            StatusCode::BAD_REQUEST,
            format!(
                "a comparison takes 2 to {MAX_COMPARED} runs; {} given",
                ids.len()
            ),
        ));
    }
    with_store(store, move |s| ids.iter().map(|id| s.load(id)).collect()).await
}

async fn compare(
    State(store): State<Store>,
    body: Result<Json<CompareRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(request) = body.map_err(|e| {
        ApiError(
            StatusCode::BAD_REQUEST,
            format!(
                "the body must be {{\"run_ids\": [\"…\", …]}}: {}",
                e.body_text()
            ),
        )
    })?;
    let records = load_many(&store, request.run_ids).await?;
    let comparison =
        comparison(&records).map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
    Ok(Json(comparison).into_response())
}

fn html_report(records: &[RunRecord]) -> Result<Html<String>, ApiError> {
    let runs = records
        .iter()
        .map(|r| (crate::report::record_label(r), r.result.clone()))
        .collect();
    let report = Report::new(runs).map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
    Ok(Html(report.html()))
}

async fn run_report(
    State(store): State<Store>,
    Path(id): Path<String>,
) -> Result<Html<String>, ApiError> {
    let record = with_store(&store, move |s| s.load(&id)).await?;
    html_report(&[record])
}

async fn report(
    State(store): State<Store>,
    RawQuery(query): RawQuery,
) -> Result<Html<String>, ApiError> {
    let ids: Vec<String> = query
        .as_deref()
        .unwrap_or_default()
        .split('&')
        .find_map(|kv| kv.strip_prefix("run_ids="))
        .unwrap_or_default()
        .split([',', '+'])
        .filter(|s| !s.is_empty())
        .map(|s| s.replace("%2C", ","))
        .collect();
    if ids.len() == 1 {
        let id = ids[0].clone();
        let record = with_store(&store, move |s| s.load(&id)).await?;
        return html_report(&[record]);
    }
    let records = load_many(&store, ids).await?;
    html_report(&records)
}

async fn index(State(store): State<Store>) -> Result<Html<String>, ApiError> {
    use crate::report::escape_html as esc;
    let runs = with_store(&store, |s| s.list()).await?;
    let mut page = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rag-eval runs</title><style>body{font:14px system-ui,sans-serif;margin:20px}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}</style></head><body><h1>rag-eval runs</h1>");
    page.push_str("<p>Each run's report: its id. Several runs: <code>/report?run_ids=A,B</code>.</p><table><thead><tr><th>id</th><th>created</th><th>origin</th><th>label</th><th>dataset</th><th>retriever</th><th>queries</th></tr></thead><tbody>");
    for r in runs.iter().rev() {
        page.push_str(&format!(
            "<tr><td><a href=\"/runs/{id}/report\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
            esc(&r.created),
            esc(&r.origin),
            esc(r.label.as_deref().unwrap_or("")),
            esc(&r.dataset),
            esc(r.retriever.as_deref().unwrap_or("")),
            r.queries,
            id = esc(r.id.as_str()),
        ));
    }
    page.push_str("</tbody></table></body></html>\n");
    Ok(Html(page))
}

/// Each metric's mean and standard deviation per run and, for every run after the first, the
/// mean difference from it over the queries both scored with its 95% interval (normal
/// approximation).
fn comparison(records: &[RunRecord]) -> crate::Result<serde_json::Value> {
    let runs: Vec<(String, crate::metrics::RunResult)> = records
        .iter()
        .map(|r| (r.id.as_str().to_owned(), r.result.clone()))
        .collect();
    let report = Report::new(runs)?;
    let base = &report.runs()[0].1;
    let metrics: Vec<serde_json::Value> = report
        .metric_names()
        .iter()
        .map(|name| {
            let per_run: Vec<serde_json::Value> = report
                .runs()
                .iter()
                .enumerate()
                .map(|(i, (id, r))| {
                    let mut o = json!({
                        "run": id,
                        "mean": r.metrics.get(name),
                        "std": r.std.get(name),
                    });
                    if i > 0 {
                        let pairs = crate::report::pairs(base, r, name);
                        let (d, ci) = crate::report::paired_difference(&pairs);
                        o["queries_paired"] = json!(pairs.len());
                        o["difference"] = json!(d);
                        o["interval"] = json!(ci.map(|c| [c.lo, c.hi]));
                    }
                    o
                })
                .collect();
            json!({ "metric": name, "runs": per_run })
        })
        .collect();
    Ok(json!({
        "baseline": records[0].id.as_str(),
        "runs": records.iter().map(|r| json!({
            "id": r.id.as_str(),
            "label": r.label,
            "dataset_hash": r.result.dataset_hash,
            "queries": r.result.queries,
        })).collect::<Vec<_>>(),
        "metrics": metrics,
    }))
}
