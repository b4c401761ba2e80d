//! An OTLP/HTTP receiver for traces (`rag-eval collect`): `POST /v1/traces` with a JSON
//! `ExportTraceServiceRequest`, each request checked as [`traces`](crate::traces) reads it and
//! appended to a file as one line, the file `rag-eval score --traces` and `traces inspect`
//! read.
//!
//! Each request is written with one `write` call on a file opened for appending, under a
//! lock, so lines never interleave and a reader never sees half a request that was answered.
//! A protobuf request (`application/x-protobuf`) is written as the OTLP JSON line of the same
//! request ([`proto::json_line`](crate::traces::proto::json_line)), so the file is one
//! format. A request that cannot be read is answered 400 with the reader's message and
//! nothing is written. A gzip body (`Content-Encoding: gzip`) is decompressed first, bounded
//! after decompression as a body is; other encodings are answered 415. Only
//! loopback addresses are listened on, and only requests whose `Host` is a loopback name are
//! answered.
//!
//! The same receiver keeps requests in memory instead for the harness of a
//! `#[rag_eval(traces = …)]` case ([`receiver::listen`](super::receiver::listen)).

use crate::error::Error;
use crate::traces::otlp::{SpanReader, MAX_LINE_BYTES};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use camino::{Utf8Path, Utf8PathBuf};
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Where requests go: the file they are appended to, or memory.
pub(super) enum Sink {
    File {
        file: Mutex<std::fs::File>,
        path: Utf8PathBuf,
    },
    Memory(Received),
}

impl Sink {
    /// Appends one request's line (with its line break).
    fn append(&self, bytes: &[u8]) -> Result<(), String> {
        match self {
            Sink::File { file, path } => {
                let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
                file.write_all(bytes)
                    .and_then(|()| file.flush())
                    .map_err(|e| format!("cannot append to `{path}`: {e}"))
            }
            Sink::Memory(received) => {
                received
                    .lines()
                    .push(String::from_utf8_lossy(bytes).into_owned());
                Ok(())
            }
        }
    }
}

/// A refusal kept in memory, its answer unchanged: a harness waiting for traces says why
/// the requests it got were refused.
async fn noted(sink: &Sink, refused: Response) -> Response {
    let Sink::Memory(received) = sink else {
        return refused;
    };
    let (parts, body) = refused.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_LINE_BYTES)
        .await
        .unwrap_or_default();
    let mut refusals = received.1.lock().unwrap_or_else(|e| e.into_inner());
    refusals.0 += 1;
    refusals.1 = Some(format!(
        "{}: {}",
        parts.status,
        String::from_utf8_lossy(&bytes)
    ));
    Response::from_parts(parts, axum::body::Body::from(bytes))
}

/// The requests a receiver has taken, each one line of OTLP JSON, in the order they arrived,
/// and how many it refused, with the last refusal's answer.
#[derive(Debug, Clone, Default)]
pub struct Received(Arc<Mutex<Vec<String>>>, Arc<Mutex<(usize, Option<String>)>>);

impl Received {
    fn lines(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many requests were refused so far, and the last one's answer (status and body).
    pub fn refused(&self) -> (usize, Option<String>) {
        self.1.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many requests have arrived so far.
    pub fn len(&self) -> usize {
        self.lines().len()
    }

    /// Whether no request has arrived.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The requests that arrived after the first `from`, each a line ending in a line break:
    /// the text of an OTLP JSON file.
    pub fn since(&self, from: usize) -> String {
        self.lines().iter().skip(from).map(String::as_str).collect()
    }
}

fn refuse(status: StatusCode, message: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::json!({ "error": message }).to_string(),
    )
        .into_response()
}

/// A gzip body decompressed, refused `413` once it would exceed `limit` bytes (a body is
/// bounded after decompression as before it, so a gzip bomb costs at most `limit` bytes) and
/// `400` with the decoder's message when it is not gzip.
fn gunzip(compressed: &[u8], limit: usize) -> Result<Vec<u8>, (StatusCode, String)> {
    use std::io::Read as _;
    // Read in steps rather than `read_to_end`, whose doubling could reserve twice the limit.
    let mut decoder = flate2::read::MultiGzDecoder::new(compressed);
    let mut out = Vec::new();
    let mut step = vec![0; 64 << 10];
    loop {
        let n = decoder.read(&mut step).map_err(|e| {
            (
                StatusCode::BAD_REQUEST,
                format!("the gzip body cannot be decompressed: {e}"),
            )
        })?;
        if n == 0 {
            return Ok(out);
        }
        if out.len() + n > limit {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the gzip body decompresses to more than {limit} bytes"),
            ));
        }
        if out.capacity() < out.len() + n {
            // Doubling, capped at the limit.
            let want = (out.capacity() * 2).max(out.len() + n).min(limit);
            out.reserve_exact(want - out.len());
        }
        out.extend_from_slice(&step[..n]);
    }
}

/// The request's body as one line of OTLP JSON, or the answer refusing it.
async fn line_of(headers: &HeaderMap, body: axum::body::Body) -> Result<String, Response> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let protobuf = content_type.starts_with("application/x-protobuf");
    if !protobuf && !content_type.starts_with("application/json") {
        return Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("`{content_type}` is not read: send OTLP JSON (`application/json`) or protobuf (`application/x-protobuf`)"),
        ));
    }
    let gzip = match headers.get(header::CONTENT_ENCODING) {
        None => false,
        Some(v) if v.as_bytes().eq_ignore_ascii_case(b"gzip") => true,
        Some(v) if v.as_bytes().eq_ignore_ascii_case(b"identity") => false,
        Some(encoding) => {
            return Err(refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                "`Content-Encoding: {}` is not read: send the body uncompressed or gzip-compressed",
                String::from_utf8_lossy(encoding.as_bytes())
            ),
            ))
        }
    };
    let bytes = axum::body::to_bytes(body, MAX_LINE_BYTES)
        .await
        .map_err(|e| {
            refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body could not be read whole (at most {MAX_LINE_BYTES} bytes): {e}"),
            )
        })?;
    let bytes = if gzip {
        gunzip(&bytes, MAX_LINE_BYTES)
            .map_err(|(status, message)| refuse(status, message))?
            .into()
    } else {
        bytes
    };
    // One line: a pretty-printed request is written compactly, a protobuf one as its JSON.
    let line = if protobuf {
        crate::traces::proto::json_line(&bytes).map_err(|e| refuse(StatusCode::BAD_REQUEST, e))?
    } else {
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| refuse(StatusCode::BAD_REQUEST, format!("not JSON: {e}")))?;
        value.to_string()
    };
    SpanReader::new(line.as_bytes(), "request".into())
        .try_for_each(|s| s.map(drop))
        .map_err(|e| refuse(StatusCode::BAD_REQUEST, e.to_string()))?;
    Ok(line)
}

async fn receive(State(sink): State<Arc<Sink>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    // OTLP/HTTP answers in the request's content type: an empty ExportTraceServiceResponse.
    let answer = match parts.headers.get(header::CONTENT_TYPE) {
        Some(v) if v.as_bytes().starts_with(b"application/x-protobuf") => {
            ("application/x-protobuf", "")
        }
        _ => ("application/json", "{}"),
    };
    let line = match line_of(&parts.headers, body).await {
        Ok(line) => line,
        Err(refused) => return noted(&sink, refused).await,
    };
    let mut bytes = line.into_bytes();
    bytes.push(b'\n');
    let written = tokio::task::spawn_blocking(move || sink.append(&bytes))
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
    match written {
        // An ExportTraceServiceResponse with nothing rejected.
        Ok(()) => (StatusCode::OK, [(header::CONTENT_TYPE, answer.0)], answer.1).into_response(),
        Err(message) => refuse(StatusCode::INTERNAL_SERVER_ERROR, message),
    }
}

/// Receives OTLP/HTTP JSON traces on `addr` (a loopback address; port 0 takes a free one)
/// and appends each request to `out` as a line (the file is created when missing), until the
/// process ends; `ready` is called with the bound address first.
pub async fn collect(
    addr: SocketAddr,
    out: &Utf8Path,
    ready: impl FnOnce(SocketAddr),
) -> crate::Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .map_err(|source| Error::Io {
            action: "open for appending",
            path: out.to_owned(),
            source,
        })?;
    let listen_error = |source| Error::Listen {
        addr: addr.to_string(),
        source,
    };
    let listener = crate::loopback::bind(addr, "the collector")?;
    let bound = listener.local_addr().map_err(listen_error)?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(listen_error)?;
    ready(bound);
    let sink = Sink::File {
        file: Mutex::new(file),
        path: out.to_owned(),
    };
    axum::serve(listener, router(sink))
        .await
        .map_err(|source| Error::Listen {
            addr: bound.to_string(),
            source,
        })
}

/// The receiver's routes, each request kept in `sink`.
pub(super) fn router(sink: Sink) -> Router {
    Router::new()
        .route("/v1/traces", post(receive))
        .fallback(|| async {
            refuse(
                StatusCode::NOT_FOUND,
                "no such endpoint; OTLP/HTTP traces go to POST /v1/traces".into(),
            )
        })
        .with_state(Arc::new(sink))
        .layer(axum::middleware::from_fn(loopback_hosts_only))
}

/// Refuses requests whose `Host` is not a loopback name, 403.
async fn loopback_hosts_only(request: Request, next: Next) -> Response {
    if crate::loopback::is_for_loopback_host(&request) {
        return next.run(request).await;
    }
    refuse(
        StatusCode::FORBIDDEN,
        "this receiver answers only requests whose Host is localhost, 127.0.0.1 or [::1]".into(),
    )
}
