//! An OTLP/HTTP receiver for traces: `POST /v1/traces` with a JSON
//! `ExportTraceServiceRequest`, each request checked as [`traces`](crate::traces) reads it and
//! kept as one line of OTLP JSON — appended to a file ([`collect`], `rag-eval collect`), the
//! file `rag-eval score --traces` and `traces inspect` read, or held in memory ([`listen`],
//! what a `#[rag_eval(traces = …)]` case's harness scores).
//!
//! Each request is written with one `write` call on a file opened for appending, under a
//! lock, so lines never interleave and a reader never sees half a request that was answered.
//! A request that is not OTLP JSON is answered 400 with the reader's message and nothing is
//! written; protobuf (`application/x-protobuf`) and compressed bodies are answered 415,
//! since they are not read. Only loopback addresses are listened on, and only requests whose
//! `Host` is a loopback name are answered.

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

/// Where received requests go.
enum Sink {
    /// Appended to a file.
    File {
        file: Mutex<std::fs::File>,
        path: Utf8PathBuf,
    },
    /// Kept in memory.
    Memory(Received),
}

/// The requests a receiver has taken, each one line of OTLP JSON, in the order they arrived.
#[derive(Debug, Clone, Default)]
pub struct Received(Arc<Mutex<Vec<String>>>);

impl Received {
    fn lines(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
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
        let lines = self.lines();
        let mut text = String::new();
        for line in lines.iter().skip(from) {
            text.push_str(line);
            text.push('\n');
        }
        text
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

/// The request's body as one line of OTLP JSON, or the answer refusing it.
async fn line_of(headers: &HeaderMap, body: axum::body::Body) -> Result<String, Response> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type.starts_with("application/json") {
        return Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("`{content_type}` is not read: send OTLP JSON (`application/json`; OTEL_EXPORTER_OTLP_PROTOCOL=http/json)"),
        ));
    }
    if let Some(encoding) = headers.get(header::CONTENT_ENCODING) {
        return Err(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!(
                "`Content-Encoding: {}` is not read: send the body uncompressed",
                encoding.to_str().unwrap_or("?")
            ),
        ));
    }
    let bytes = axum::body::to_bytes(body, MAX_LINE_BYTES)
        .await
        .map_err(|e| {
            refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body could not be read whole (at most {MAX_LINE_BYTES} bytes): {e}"),
            )
        })?;
    // One line: a pretty-printed request is written compactly.
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| refuse(StatusCode::BAD_REQUEST, format!("not JSON: {e}")))?;
    let line = value.to_string();
    SpanReader::new(line.as_bytes(), "request".into())
        .try_for_each(|s| s.map(drop))
        .map_err(|e| refuse(StatusCode::BAD_REQUEST, e.to_string()))?;
    Ok(line)
}

async fn receive(State(sink): State<Arc<Sink>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let line = match line_of(&parts.headers, body).await {
        Ok(line) => line,
        Err(refused) => return refused,
    };
    let written = match &*sink {
        Sink::Memory(received) => {
            received.lines().push(line);
            Ok(())
        }
        Sink::File { .. } => {
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            let sink = Arc::clone(&sink);
            tokio::task::spawn_blocking(move || {
                let Sink::File { file, path } = &*sink else {
                    return Ok(());
                };
                let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
                file.write_all(&bytes)
                    .and_then(|()| file.flush())
                    .map_err(|e| format!("cannot append to `{path}`: {e}"))
            })
            .await
            .unwrap_or_else(|e| Err(e.to_string()))
        }
    };
    match written {
        // An ExportTraceServiceResponse with nothing rejected.
        Ok(()) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            "{}",
        )
            .into_response(),
        Err(message) => refuse(StatusCode::INTERNAL_SERVER_ERROR, message),
    }
}

/// Whether `host` (a `Host` header) names this machine's loopback interface: `localhost`,
/// `127.0.0.1` or `[::1]`, with any port.
fn is_loopback_host(host: &str) -> bool {
    let name = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or(host)
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        }
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1" || name == "[::1]"
}

/// Refuses requests whose `Host` is not a loopback name (a page of another site whose name
/// was made to point at this machine cannot post spans).
async fn loopback_hosts_only(request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    match host {
        Some(h) if is_loopback_host(h) => next.run(request).await,
        _ => refuse(
            StatusCode::FORBIDDEN,
            "this receiver answers only requests whose Host is localhost, 127.0.0.1 or [::1]"
                .into(),
        ),
    }
}

/// Binds `addr`, refusing any address but a loopback one.
fn bind(addr: SocketAddr) -> crate::Result<std::net::TcpListener> {
    let listen_error = |source| Error::Listen {
        addr: addr.to_string(),
        source,
    };
    if !addr.ip().is_loopback() {
        return Err(listen_error(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "the collector listens on a loopback address only (127.0.0.1 or ::1)",
        )));
    }
    let listener = std::net::TcpListener::bind(addr).map_err(listen_error)?;
    listener.set_nonblocking(true).map_err(listen_error)?;
    Ok(listener)
}

/// Serves the receiver's routes on `listener` until the process ends.
async fn serve(listener: std::net::TcpListener, sink: Sink) -> crate::Result<()> {
    let bound = listener
        .local_addr()
        .map_or_else(|_| "?".to_owned(), |a| a.to_string());
    let listen_error = |source| Error::Listen {
        addr: bound.clone(),
        source,
    };
    let listener = tokio::net::TcpListener::from_std(listener).map_err(listen_error)?;
    let app = Router::new()
        .route("/v1/traces", post(receive))
        .fallback(|| async {
            refuse(
                StatusCode::NOT_FOUND,
                "no such endpoint; OTLP/HTTP traces go to POST /v1/traces".into(),
            )
        })
        .with_state(Arc::new(sink))
        .layer(axum::middleware::from_fn(loopback_hosts_only));
    axum::serve(listener, app).await.map_err(listen_error)
}

/// Receives OTLP/HTTP JSON traces on `addr` (a loopback address; port 0 takes a free one)
/// into memory, served on `runtime` until the process ends: the bound address (the endpoint
/// to give a system as `OTEL_EXPORTER_OTLP_ENDPOINT`, `http://ADDR`) and the requests as
/// they arrive. The address is bound before this returns, so a system told it may send at
/// once.
pub fn listen(
    addr: SocketAddr,
    runtime: &tokio::runtime::Handle,
) -> crate::Result<(SocketAddr, Received)> {
    let listener = bind(addr)?;
    let bound = listener.local_addr().map_err(|source| Error::Listen {
        addr: addr.to_string(),
        source,
    })?;
    let received = Received::default();
    let sink = Sink::Memory(received.clone());
    runtime.spawn(async move {
        if let Err(e) = serve(listener, sink).await {
            eprintln!("error: the trace receiver on {bound} stopped: {e}");
        }
    });
    Ok((bound, received))
}

/// Receives OTLP/HTTP JSON traces on `addr` (a loopback address; port 0 takes a free one)
/// and appends each request to `out` as a line (the file is created when missing), until the
/// process ends; `ready` is called with the bound address first.
pub async fn collect(
    addr: SocketAddr,
    out: &Utf8Path,
    ready: impl FnOnce(SocketAddr),
) -> crate::Result<()> {
    let listener = bind(addr)?;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .map_err(|source| Error::Io {
            action: "open for appending",
            path: out.to_owned(),
            source,
        })?;
    let bound = listener.local_addr().map_err(|source| Error::Listen {
        addr: addr.to_string(),
        source,
    })?;
    ready(bound);
    let sink = Sink::File {
        file: Mutex::new(file),
        path: out.to_owned(),
    };
    serve(listener, sink).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_told_apart_from_others() {
        for host in [
            "localhost",
            "LOCALHOST:4318",
            "127.0.0.1",
            "127.0.0.1:80",
            "[::1]:9",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in ["example.com", "127.0.0.1.nip.io", "10.0.0.1:4318", "[::2]"] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }

    #[test]
    fn a_request_received_in_memory_is_one_line_of_the_text_since() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (addr, received) = listen("127.0.0.1:0".parse().unwrap(), runtime.handle()).unwrap();
        assert!(received.is_empty());
        let body = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"q"}]}]}]}"#;
        let post = |body: &str| {
            use std::io::Read as _;
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            write!(
                stream,
                "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
            answer
        };
        assert!(post(body).starts_with("HTTP/1.1 200"));
        assert!(post("{").starts_with("HTTP/1.1 400"));
        assert_eq!(received.len(), 1);
        assert_eq!(received.since(0), format!("{body}\n"));
        assert_eq!(received.since(1), "");
        assert!(listen("0.0.0.0:0".parse().unwrap(), runtime.handle()).is_err());
    }
}
