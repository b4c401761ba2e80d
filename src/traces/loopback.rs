//! Loopback only: the receiver answers requests whose `Host` names this machine, so a page
//! of another site whose name was made to point at this machine (DNS rebinding) cannot post
//! spans to it.

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

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

/// Refuses requests whose `Host` is not a loopback name, 403.
pub(super) async fn loopback_hosts_only(request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    match host {
        Some(h) if is_loopback_host(h) => next.run(request).await,
        _ => (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::json!({
                "error": "this receiver answers only requests whose Host is localhost, 127.0.0.1 or [::1]"
            })
            .to_string(),
        )
            .into_response(),
    }
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
}
