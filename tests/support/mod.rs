//! A small HTTP/1.1 server for tests: it runs on its own thread and runtime on 127.0.0.1, hands
//! each request to a handler, and can misbehave on purpose (slow answers, bodies cut short,
//! dropped connections) the way overloaded services and proxies do.
//!
//! [`hostile`] builds on it: one server for the answers real servers will not send.
//!
//! Each connection carries one request and is closed after the answer, which keeps the parser
//! small; clients open a new connection per request.

#![allow(dead_code)]

#[cfg(target_os = "linux")]
pub mod cdp;
pub mod chat;
pub mod hostile;
pub mod rag_service;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A request as received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// Header names in lowercase.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// Called once the whole answer has been written.
pub type OnSent = Box<dyn FnOnce() + Send>;

/// What to answer.
pub enum Reply {
    /// A complete answer.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        on_sent: Option<OnSent>,
    },
    /// Announces `body.len()` bytes, sends half, and closes the connection.
    Truncated { body: Vec<u8> },
    /// Waits, then answers.
    Delayed { delay: Duration, reply: Box<Reply> },
    /// A 200 whose chunked body never ends: pieces of 64 KiB until the client hangs up.
    Endless,
    /// A 200 announcing and sending `len` bytes of JSON-looking filler, written piece by piece
    /// (the server never holds the whole body).
    Filler { len: u64 },
    /// No answer at all: the connection stays open until the client closes it.
    Hang,
}

impl Reply {
    pub fn json(status: u16, body: &serde_json::Value) -> Reply {
        Reply::Full {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
            on_sent: None,
        }
    }

    pub fn raw(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Full {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into(),
            on_sent: None,
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        if let Reply::Full { headers, .. } = &mut self {
            headers.push((name.into(), value.into()));
        }
        self
    }

    pub fn on_sent(mut self, f: impl FnOnce() + Send + 'static) -> Reply {
        if let Reply::Full { on_sent, .. } = &mut self {
            *on_sent = Some(Box::new(f));
        }
        self
    }

    pub fn delayed(self, delay: Duration) -> Reply {
        Reply::Delayed {
            delay,
            reply: Box::new(self),
        }
    }
}

/// A JSON body is a 200 reply with it.
impl From<serde_json::Value> for Reply {
    fn from(body: serde_json::Value) -> Reply {
        Reply::json(200, &body)
    }
}

type Handler = dyn Fn(Request) -> Reply + Send + Sync;

/// The server; stops when dropped.
pub struct TestServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
}

impl TestServer {
    pub fn start(handler: impl Fn(Request) -> Reply + Send + Sync + 'static) -> TestServer {
        let handler: Arc<Handler> = Arc::new(handler);
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let in_flight = Arc::new(AtomicUsize::new(0));
        let max_in_flight = Arc::new(AtomicUsize::new(0));
        let (cur, max) = (Arc::clone(&in_flight), Arc::clone(&max_in_flight));
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("test server runtime");
            runtime.block_on(async move {
                let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let accept = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        let handler = Arc::clone(&handler);
                        let (cur, max) = (Arc::clone(&cur), Arc::clone(&max));
                        tokio::spawn(async move {
                            let now = cur.fetch_add(1, Ordering::SeqCst) + 1;
                            max.fetch_max(now, Ordering::SeqCst);
                            serve(stream, &*handler).await;
                            cur.fetch_sub(1, Ordering::SeqCst);
                        });
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = stop_rx => {}
                }
            });
        });
        let addr = addr_rx.recv().expect("server address");
        TestServer {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
            in_flight,
            max_in_flight,
        }
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Most connections handled at once so far.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(mut stream: TcpStream, handler: &Handler) {
    let Some(request) = read_request(&mut stream).await else {
        let _ = stream
            .write_all(
                b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            )
            .await;
        return;
    };
    let mut reply = handler(request);
    loop {
        match reply {
            Reply::Delayed { delay, reply: next } => {
                tokio::time::sleep(delay).await;
                reply = *next;
            }
            Reply::Full {
                status,
                headers,
                body,
                on_sent,
            } => {
                let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
                for (name, value) in &headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str(&format!(
                    "content-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                ));
                let sent = async {
                    stream.write_all(head.as_bytes()).await?;
                    stream.write_all(&body).await?;
                    stream.flush().await
                };
                if sent.await.is_ok() {
                    if let Some(f) = on_sent {
                        f();
                    }
                }
                let _ = stream.shutdown().await;
                return;
            }
            Reply::Endless => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let piece = vec![b' '; 64 << 10];
                let framed = [
                    format!("{:x}\r\n", piece.len()).into_bytes(),
                    piece,
                    b"\r\n".to_vec(),
                ]
                .concat();
                while stream.write_all(&framed).await.is_ok() {}
                return;
            }
            Reply::Filler { len } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n"
                );
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let piece = vec![b' '; 64 << 10];
                let mut left = len;
                while left > 0 {
                    let n = left.min(piece.len() as u64) as usize;
                    if stream.write_all(&piece[..n]).await.is_err() {
                        return;
                    }
                    left -= n as u64;
                }
                let _ = stream.shutdown().await;
                return;
            }
            Reply::Hang => {
                // Until the client gives up and closes the connection.
                let mut buf = [0u8; 1024];
                while matches!(stream.read(&mut buf).await, Ok(n) if n > 0) {}
                return;
            }
            Reply::Truncated { body } => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&body[..body.len() / 2]).await;
                let _ = stream.flush().await;
                let _ = stream.shutdown().await;
                return;
            }
        }
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buf.len() > 1 << 20 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..head_end]).ok()?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(length);
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}
