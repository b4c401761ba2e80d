//! Loopback only: the local servers (`rag-eval serve`, the trace receiver of `rag-eval
//! collect` and of `#[rag_eval(traces = …)]` cases) listen on this machine's loopback
//! interface and answer only requests whose `Host` names it, so a page of another site whose
//! name was made to point at this machine (DNS rebinding) cannot reach them.

/// Whether `host` (a `Host` header) names this machine's loopback interface: `localhost`,
/// `127.0.0.1` or `[::1]`, with any port.
pub(crate) fn is_loopback_host(host: &str) -> bool {
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

/// Whether `request`'s `Host` (or, without one, its URI's authority) is a loopback name
/// ([`is_loopback_host`]): what the servers' middleware checks before any route runs.
pub(crate) fn is_for_loopback_host(request: &axum::extract::Request) -> bool {
    request
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()))
        .is_some_and(is_loopback_host)
}

/// Binds `addr` for `what` (named in the error), refused unless it is a loopback address;
/// the listener is non-blocking, ready for Tokio's `TcpListener::from_std`.
#[cfg(feature = "traces")]
pub(crate) fn bind(addr: std::net::SocketAddr, what: &str) -> crate::Result<std::net::TcpListener> {
    let listen_error = |source| crate::error::Error::Listen {
        addr: addr.to_string(),
        source,
    };
    if !addr.ip().is_loopback() {
        return Err(listen_error(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{what} listens on a loopback address only (127.0.0.1 or ::1)"),
        )));
    }
    let listener = std::net::TcpListener::bind(addr).map_err(listen_error)?;
    listener.set_nonblocking(true).map_err(listen_error)?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_with_any_port_and_nothing_else() {
        for ok in [
            "localhost",
            "LocalHost:80",
            "LOCALHOST:4318",
            "127.0.0.1",
            "127.0.0.1:8321",
            "[::1]",
            "[::1]:9",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "localhost.evil",
            "127.0.0.1.nip.io",
            "10.0.0.1:4318",
            "[::2]:1",
            "",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[cfg(feature = "traces")]
    #[test]
    fn only_a_loopback_address_is_bound_and_the_refusal_names_the_server() {
        let err = bind("0.0.0.0:0".parse().unwrap(), "the collector").unwrap_err();
        assert!(
            err.to_string()
                .contains("the collector listens on a loopback address only"),
            "{err}"
        );
        let listener = bind("127.0.0.1:0".parse().unwrap(), "the collector").unwrap();
        assert!(listener.local_addr().unwrap().ip().is_loopback());
    }
}
