//! `rag-eval serve`: a read-only HTTP API over a [run store](crate::runs::RunStore), on the
//! loopback interface only, with a page for labelling a run's answers (written to a labels
//! file, never to the store).
//!
//! | request | answer |
//! |---|---|
//! | `GET /runs` | every run's summary, oldest first (the objects `rag-eval runs list --json` prints, as an array) |
//! | `GET /runs/{id}` | the run record (as `rag-eval runs show --json`); `{id}` may be a unique prefix or `latest` |
//! | `POST /compare` `{"run_ids": [...]}` | 2 to 10 runs compared, the first the baseline: the [`Comparison`] JSON `rag-eval compare --json` prints for the same runs |
//! | `GET /` | an HTML page listing the runs |
//! | `GET /runs/{id}/report` | the run's HTML report |
//! | `GET /report?run_ids=A,B,…` | the HTML report of several runs |
//! | `GET`, `POST /runs/{id}/label?q=N` | the [labelling page](label) of a run's query `N`, when the server was given a [`LabelFile`] (`rag-eval serve --labels FILE`) |
//!
//! `POST /compare` takes the options of `rag-eval compare`, each optional with the command's
//! default: `test` (`fisher`, `student`), `correction` (`none`, `bonferroni`, `holm`),
//! `alpha` (checked as the command checks `--alpha`; it marks nothing in the JSON), `seed`,
//! `permutations` (at most 1,000,000), `resamples` (at most 100,000) and
//! `allow_different_datasets`. Runs are labelled as the command labels stored runs (their label
//! and id). A comparison whose client hangs up before the answer stops within a moment instead
//! of finishing for nobody.
//!
//! Errors are JSON, `{"error": "…"}`, with a status code: 400 for a bad request (not JSON, too
//! few or too many runs, an ambiguous id, an id or query that is not UTF-8 once decoded, an
//! option out of range, runs that cannot be compared), 403 for a `Host` other than
//! `localhost`, `127.0.0.1` or `[::1]` (any port: a page of another site whose name was made to
//! point at this machine, DNS rebinding, cannot read the runs), 404 for a run the store does not
//! hold, 500 when the store fails. Errors never name the store's path or URL; the server's
//! standard error does. Store calls run on Tokio's blocking threads, so a slow store never
//! stalls the server, and a client has [`HEADER_READ_TIMEOUT`] to send a request's headers
//! (or the next request's, on a connection kept open) and then [`BODY_READ_TIMEOUT`] to send
//! its body (at most [`MAX_BODY`]) before its connection is closed: a request whose body is
//! late is answered 408 (413 for one too large) and its connection closed.

use crate::compare::{CompareOptions, Comparison, PairedTest};
use crate::error::Error;
use crate::report::Report;
use crate::runs::{RunRecord, RunStore};
use crate::stats::Correction;
use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{FromRef, Path, RawQuery, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub mod label;
pub use label::LabelFile;

/// How long a client may take to send a request's headers, or to start the next request on a
/// connection kept open, before the connection is closed: half-sent requests hold nothing for
/// long.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a client may take to send a request's whole body once its headers are in: a body
/// sent a byte at a time holds nothing for long.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest request body read, in bytes (a comparison's ids, a labelling form).
pub const MAX_BODY: usize = 2 * 1024 * 1024;

/// The most runs one comparison takes.
pub const MAX_COMPARED: usize = crate::compare::MAX_RUNS;

type Store = Arc<dyn RunStore>;

/// What the routes share: the store, and the labels file when labelling is on.
#[derive(Clone)]
struct AppState {
    store: Store,
    labelling: label::Labelling,
}

impl FromRef<AppState> for Store {
    fn from_ref(state: &AppState) -> Store {
        Arc::clone(&state.store)
    }
}

impl FromRef<AppState> for label::Labelling {
    fn from_ref(state: &AppState) -> label::Labelling {
        state.labelling.clone()
    }
}

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
        // The store's path or URL stays on the server: a client learns what failed, not where
        // the files are.
        match e {
            Error::NoSuchRun { id, .. } => ApiError(
                StatusCode::NOT_FOUND,
                format!("the run store has no run `{id}`"),
            ),
            // An id that is the start of several: the request must say more.
            Error::RunStore { message, .. } if message.contains("give more characters") => {
                ApiError(StatusCode::BAD_REQUEST, message)
            }
            Error::RunStore { message, location } => {
                to_stderr(&format!("run store `{location}`: {message}"));
                ApiError(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("the run store failed: {message}"),
                )
            }
            e => ApiError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
    }
}

/// Writes `line` to the server's standard error, whatever the logging: an answer that says
/// "the server's standard error says why" must find it there.
fn to_stderr(line: &str) {
    use std::io::Write as _;
    // One write per line, so lines of several requests do not interleave.
    let _ = std::io::stderr()
        .lock()
        .write_all(format!("rag-eval serve: {line}\n").as_bytes());
}

/// A path segment that is not UTF-8 once decoded (`/runs/%FF`).
fn bad_path(e: PathRejection) -> ApiError {
    ApiError(
        StatusCode::BAD_REQUEST,
        format!("the path is not a run id: {}", e.body_text()),
    )
}

/// Refuses requests whose `Host` is not a loopback name.
async fn loopback_hosts_only(request: Request, next: Next) -> Response {
    if crate::loopback::is_for_loopback_host(&request) {
        return next.run(request).await;
    }
    ApiError(
        StatusCode::FORBIDDEN,
        "this server answers only requests whose Host is localhost, 127.0.0.1 or [::1]".into(),
    )
    .into_response()
}

/// Reads a request's whole body within [`BODY_READ_TIMEOUT`] before the routes see it: hyper
/// bounds the time to send headers, not a body trickled a byte at a time. A late body is
/// answered 408 and a body over [`MAX_BODY`] 413, each closing the connection (the rest of
/// the body is never read).
async fn body_in_time(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let refused = match tokio::time::timeout(BODY_READ_TIMEOUT, read_body(body)).await {
        Ok(Ok(bytes)) => {
            return next
                .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
        Ok(Err(refused)) => refused,
        Err(_) => ApiError(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request's body was not sent within {} s",
                BODY_READ_TIMEOUT.as_secs()
            ),
        ),
    };
    let mut response = refused.into_response();
    response.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    response
}

/// `body`'s bytes, at most [`MAX_BODY`] of them.
async fn read_body(body: axum::body::Body) -> Result<Vec<u8>, ApiError> {
    use futures_util::StreamExt as _;
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError(
                StatusCode::BAD_REQUEST,
                format!("the request's body could not be read: {e}"),
            )
        })?;
        if bytes.len() + chunk.len() > MAX_BODY {
            return Err(ApiError(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request's body is larger than {MAX_BODY} bytes"),
            ));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
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

/// The API's routes over `store`; with `labels`, the labelling page too, saving to that file.
pub fn router(store: Arc<dyn RunStore>, labels: Option<Arc<LabelFile>>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/runs", get(list))
        .route("/runs/{id}", get(show))
        .route("/runs/{id}/report", get(run_report))
        .route("/runs/{id}/label", get(label::page).post(label::save))
        .route("/report", get(report))
        .route("/compare", post(compare))
        .fallback(|| async {
            ApiError(
                StatusCode::NOT_FOUND,
                "no such endpoint; see GET /runs, GET /runs/{id}, POST /compare".into(),
            )
        })
        .with_state(AppState {
            store,
            labelling: label::Labelling(labels),
        })
}

/// Serves `store` on 127.0.0.1 at `port` (0: any free port) until the process ends, with the
/// labelling page when `labels` is given; `ready` is called with the bound address first. Only
/// requests whose `Host` is a loopback name are answered, and a client has
/// [`HEADER_READ_TIMEOUT`] to send its request's headers and [`BODY_READ_TIMEOUT`] its body.
pub async fn serve(
    store: Arc<dyn RunStore>,
    port: u16,
    labels: Option<Arc<LabelFile>>,
    ready: impl FnOnce(SocketAddr),
) -> crate::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Listen {
            addr: addr.to_string(),
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| Error::Listen {
        addr: addr.to_string(),
        source,
    })?;
    ready(bound);
    let app = router(store, labels)
        .layer(axum::middleware::from_fn(body_in_time))
        .layer(axum::middleware::from_fn(loopback_hosts_only));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    loop {
        let socket = match listener.accept().await {
            Ok((socket, _)) => socket,
            // Out of file descriptors, a connection reset before it was taken: wait a
            // moment rather than stop serving.
            Err(e) => {
                tracing::warn!("the server on {bound} could not accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let connection =
            http.serve_connection(TokioIo::new(socket), TowerToHyperService::new(app.clone()));
        tokio::spawn(async move {
            // A client that hangs up or is too slow ends its own connection only.
            let _ = connection.await;
        });
    }
}

async fn list(State(store): State<Store>) -> Result<Response, ApiError> {
    let runs = with_store(&store, |s| s.list()).await?;
    Ok(Json(runs).into_response())
}

async fn show(
    State(store): State<Store>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let Path(id) = id.map_err(bad_path)?;
    let record = with_store(&store, move |s| s.load(&id)).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        record.to_json(),
    )
        .into_response())
}

/// The body of `POST /compare`: the runs and `rag-eval compare`'s options.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CompareRequest {
    run_ids: Vec<String>,
    #[serde(default)]
    test: PairedTest,
    #[serde(default)]
    correction: Correction,
    #[serde(default = "default_alpha")]
    alpha: f64,
    seed: Option<u64>,
    permutations: Option<usize>,
    resamples: Option<usize>,
    #[serde(default)]
    allow_different_datasets: bool,
}

fn default_alpha() -> f64 {
    crate::report::DEFAULT_ALPHA
}

impl CompareRequest {
    fn options(&self) -> Result<CompareOptions, ApiError> {
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return Err(ApiError(
                StatusCode::BAD_REQUEST,
                format!("alpha must be between 0 and 1 (got {})", self.alpha),
            ));
        }
        let d = CompareOptions::default();
        let options = CompareOptions {
            test: self.test,
            correction: self.correction,
            seed: self.seed.unwrap_or(d.seed),
            permutations: self.permutations.unwrap_or(d.permutations),
            resamples: self.resamples.unwrap_or(d.resamples),
            allow_different_datasets: self.allow_different_datasets,
            ..d
        };
        options
            .check()
            .map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
        Ok(options)
    }
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
                "the body must be {{\"run_ids\": [\"…\", …]}} with optional test, correction, \
                 alpha, seed, permutations, resamples and allow_different_datasets: {}",
                e.body_text()
            ),
        )
    })?;
    let options = request.options()?;
    let records = load_many(&store, request.run_ids).await?;
    // Thousands of permutations per metric: off the async threads, and stopped when the
    // client hangs up.
    let comparison = until_dropped(move |stop| {
        let runs = labelled(records);
        let refs: Vec<(&str, &crate::metrics::RunResult)> =
            runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
        Comparison::new_until(&refs, &options, stop)
    })
    .await
    .map_err(|e| {
        ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the comparison failed: {e}"),
        )
    })?
    .map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
    Ok(Json(comparison).into_response())
}

/// Sets its flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs `work` on a blocking thread with a flag that is set once the returned future is
/// dropped (the server drops a request's future when its client hangs up), or has finished.
async fn until_dropped<T: Send + 'static>(
    work: impl FnOnce(&AtomicBool) -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    let stop = Arc::new(AtomicBool::new(false));
    let _guard = StopOnDrop(Arc::clone(&stop));
    tokio::task::spawn_blocking(move || work(&stop)).await
}

/// The records' results labelled as `rag-eval compare` and `report` label stored runs.
fn labelled(records: Vec<RunRecord>) -> Vec<(String, crate::metrics::RunResult)> {
    let mut runs = Vec::with_capacity(records.len());
    for r in records {
        let label = crate::report::record_label(&r);
        crate::report::push_labelled(&mut runs, label, r.into_result());
    }
    runs
}

/// The report's page; its comparison and bootstrap intervals are computed off the async
/// threads.
async fn html_report(records: Vec<RunRecord>) -> Result<Html<String>, ApiError> {
    tokio::task::spawn_blocking(move || {
        let report = Report::new(labelled(records))
            .map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.to_string()))?;
        Ok(Html(report.html()))
    })
    .await
    .map_err(|e| {
        ApiError(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the report failed: {e}"),
        )
    })?
}

async fn run_report(
    State(store): State<Store>,
    id: Result<Path<String>, PathRejection>,
) -> Result<Html<String>, ApiError> {
    let Path(id) = id.map_err(bad_path)?;
    let record = with_store(&store, move |s| s.load(&id)).await?;
    html_report(vec![record]).await
}

async fn report(
    State(store): State<Store>,
    RawQuery(query): RawQuery,
) -> Result<Html<String>, ApiError> {
    let ids = run_ids(query.as_deref().unwrap_or_default())?;
    if ids.len() == 1 {
        let id = ids[0].clone();
        let record = with_store(&store, move |s| s.load(&id)).await?;
        return html_report(vec![record]).await;
    }
    let records = load_many(&store, ids).await?;
    html_report(records).await
}

/// The ids of every `run_ids` parameter of `query`, each decoded first, then split at commas:
/// `run_ids=A,B`, `run_ids=A%2CB` and `run_ids=A&run_ids=B` all name A and B.
fn run_ids(query: &str) -> Result<Vec<String>, ApiError> {
    let mut ids = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        if form_decode(name)? != "run_ids" {
            continue;
        }
        ids.extend(
            form_decode(value)?
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
    }
    Ok(ids)
}

/// `text` of a query string decoded (`+` is a space, `%XX` a byte), as UTF-8.
fn form_decode(text: &str) -> Result<String, ApiError> {
    let bad = || {
        ApiError(
            StatusCode::BAD_REQUEST,
            format!("the query parameter `{text}` is not UTF-8 once decoded"),
        )
    };
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| bad())
}

async fn index(State(store): State<Store>) -> Result<Html<String>, ApiError> {
    use crate::escape::html as esc;
    let runs = with_store(&store, |s| s.list()).await?;
    let mut page = String::from("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rag-eval runs</title><style>body{font:14px system-ui,sans-serif;margin:20px}table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}</style></head><body><h1>rag-eval runs</h1>");
    page.push_str("<p>Each run's report: its id. Several runs: <code>/report?run_ids=A,B</code>.</p><table><thead><tr><th>id</th><th>created</th><th>origin</th><th>label</th><th>dataset</th><th>system</th><th>queries</th></tr></thead><tbody>");
    for r in runs.iter().rev() {
        page.push_str(&format!(
            "<tr><td><a href=\"/runs/{id}/report\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>",
            esc(&r.created),
            esc(&r.origin),
            esc(r.label.as_deref().unwrap_or("")),
            esc(&r.dataset),
            esc(r.retriever.as_deref().or(r.rag.as_deref()).unwrap_or("")),
            r.queries,
            id = esc(r.id.as_str()),
        ));
    }
    page.push_str("</tbody></table></body></html>\n");
    Ok(Html(page))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn query_values_are_decoded_before_they_are_split() {
        let ids = |q: &str| run_ids(q).map_err(|e| e.1).unwrap();
        assert_eq!(ids("run_ids=A%2CB"), ["A", "B"]);
        assert_eq!(ids("run_ids=A&x=1&run_ids=B,C"), ["A", "B", "C"]);
        assert_eq!(ids("run%5fids=A+,B"), ["A", "B"]);
        assert!(run_ids("run_ids=%FF").is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn work_stops_soon_after_its_caller_goes_away() {
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let work = until_dropped(move |stop: &AtomicBool| {
            let started = Instant::now();
            while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(30) {
                std::thread::sleep(Duration::from_millis(5));
            }
            done_tx.send(stop.load(Ordering::Relaxed)).unwrap();
        });
        // The caller waits 100 ms, then gives up: the future is dropped.
        assert!(tokio::time::timeout(Duration::from_millis(100), work)
            .await
            .is_err());
        let stopped =
            tokio::task::spawn_blocking(move || done_rx.recv_timeout(Duration::from_secs(5)))
                .await
                .unwrap();
        assert_eq!(stopped, Ok(true), "the work went on after its caller left");
    }
}
