//! The receiver in memory: what a `#[rag_eval(traces = …)]` case's harness listens with
//! ([`collect`](super::collect) has the rules every request is held to).

pub use super::collect::Received;
use super::collect::{router, Sink};
use crate::error::Error;
use std::net::SocketAddr;

/// Receives OTLP/HTTP JSON traces on `addr` (a loopback address; port 0 takes a free one)
/// into memory, served on `runtime` until the process ends: the bound address (the endpoint
/// to give a system as `OTEL_EXPORTER_OTLP_ENDPOINT`, `http://ADDR`) and the requests as
/// they arrive. The address is bound before this returns, so a system told it may send at
/// once.
pub fn listen(
    addr: SocketAddr,
    runtime: &tokio::runtime::Handle,
) -> crate::Result<(SocketAddr, Received)> {
    let listen_error = |source| Error::Listen {
        addr: addr.to_string(),
        source,
    };
    let listener = crate::loopback::bind(addr, "the receiver")?;
    let bound = listener.local_addr().map_err(listen_error)?;
    let received = Received::default();
    let app = router(Sink::Memory(received.clone()));
    runtime.spawn(async move {
        let served = match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => axum::serve(listener, app).await,
            Err(e) => Err(e),
        };
        if let Err(e) = served {
            eprintln!("error: the trace receiver on {bound} stopped: {e}");
        }
    });
    Ok((bound, received))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn a_request_received_in_memory_is_one_line_of_the_text_since() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (addr, received) = listen("127.0.0.1:0".parse().unwrap(), runtime.handle()).unwrap();
        assert!(received.is_empty());
        // Written compactly, as the receiver writes a request (its keys in order).
        let body = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"q","spanId":"b7ad6b7169203331","traceId":"0af7651916cd43dd8448eb211c80319c"}]}]}]}"#;
        let post = |body: &str, host: &str| {
            use std::io::Read as _;
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            write!(
                stream,
                "POST /v1/traces HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
            answer
        };
        assert!(post(body, "127.0.0.1").starts_with("HTTP/1.1 200"));
        assert!(post("{", "127.0.0.1").starts_with("HTTP/1.1 400"));
        assert!(post(body, "example.com").starts_with("HTTP/1.1 403"));
        assert_eq!(received.len(), 1);
        // The refusals are counted, the last one's answer kept; the 403 is the middleware's.
        let (count, last) = received.refused();
        assert_eq!(count, 1);
        assert!(last
            .unwrap()
            .starts_with("400 Bad Request: {\"error\":\"not JSON"));
        assert_eq!(received.since(0), format!("{body}\n"));
        assert_eq!(received.since(1), "");
        assert!(listen("0.0.0.0:0".parse().unwrap(), runtime.handle()).is_err());
    }

    /// `data` gzip-compressed.
    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn a_gzip_body_is_read_as_the_plain_one_and_a_bomb_or_a_broken_one_writes_nothing() {
        use crate::traces::otlp::MAX_LINE_BYTES;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let (addr, received) = listen("127.0.0.1:0".parse().unwrap(), runtime.handle()).unwrap();
        let post = |body: &[u8], content_type: &str, encoding: &str| {
            use std::io::Read as _;
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            write!(
                stream,
                "POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\nContent-Encoding: {encoding}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .unwrap();
            stream.write_all(body).unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
            answer
        };
        let json = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"q","spanId":"b7ad6b7169203331","traceId":"0af7651916cd43dd8448eb211c80319c"}]}]}]}"#;
        let answer = post(&gzip(json.as_bytes()), "application/json", "gzip");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        // The encoding's name is read in any case. (Protobuf bodies, compressed by the SDK's
        // own exporter, are tested with `rag-eval collect`.)
        let answer = post(&gzip(json.as_bytes()), "application/json", "GZIP");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert_eq!(received.since(0), format!("{json}\n{json}\n"));

        // A body that decompresses past the limit (a gzip bomb: 100 MiB of zeros in about
        // 100 KiB) is refused as too large, as a body that large would be.
        let bomb = {
            let mut encoder =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            let zeros = vec![0; 1 << 20];
            for _ in 0..100 {
                encoder.write_all(&zeros).unwrap();
            }
            encoder.finish().unwrap()
        };
        assert!(bomb.len() < MAX_LINE_BYTES / 100, "{}", bomb.len());
        let answer = post(&bomb, "application/json", "gzip");
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        assert!(
            answer.contains(&format!(
                "the gzip body decompresses to more than {MAX_LINE_BYTES} bytes"
            )),
            "{answer}"
        );
        // Not gzip: the decoder's message.
        let answer = post(b"{\"resourceSpans\":[]}", "application/json", "gzip");
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(
            answer.contains("the gzip body cannot be decompressed: invalid gzip header"),
            "{answer}"
        );
        // Cut short: the decoder's message too.
        let whole = gzip(json.as_bytes());
        let answer = post(&whole[..whole.len() - 12], "application/json", "gzip");
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(
            answer.contains("the gzip body cannot be decompressed"),
            "{answer}"
        );
        // Another encoding is named.
        let answer = post(json.as_bytes(), "application/json", "zstd");
        assert!(answer.starts_with("HTTP/1.1 415"), "{answer}");
        assert!(
            answer.contains("`Content-Encoding: zstd` is not read"),
            "{answer}"
        );
        assert_eq!(received.len(), 2);
        assert_eq!(received.refused().0, 4);
    }
}
