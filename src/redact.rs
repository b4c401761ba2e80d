//! Secrets out of URLs before they are shown: in messages, names, specs and run records.
//!
//! The text is redacted as text, before any parser sees it, so a URL the parser rejects (a
//! password holding `/`, `?` or `@`, a malformed host) is redacted as well as a valid one.

/// Words that mark a query parameter's value as secret (`api_key`, `token`, `password`, …).
const SECRET_PARAMETERS: [&str; 6] = ["key", "token", "secret", "sig", "password", "auth"];

/// What replaces a secret query value (`<redacted>`, percent-encoded as a URL holds it).
const REDACTED_VALUE: &str = "%3Credacted%3E";

/// `url` without its password and the values of query parameters that look like secrets:
/// `postgres://u:s3cret@h/db?password=x` → `postgres://u:***@h/db?password=%3Credacted%3E`.
/// Credentials that are only a user name are hidden whole, as a token often stands there
/// alone (`https://ghp_…@github.com/…` → `https://***@github.com/…`).
/// Text that is not a URL keeps what it has, with the same query redaction. When the end of
/// the credentials is ambiguous, the last `@` ends them: more is hidden, never less.
///
/// `https://h/v1?api-version=1&api_key=sk-1` → `https://h/v1?api-version=1&api_key=%3Credacted%3E`.
pub fn redact_url(url: &str) -> String {
    let (prefix, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(prefix);
    let rest = match (prefix.is_empty(), rest.rfind('@')) {
        (false, Some(at)) => {
            let userinfo = &rest[..at];
            match userinfo.split_once(':') {
                Some((user, _)) => {
                    out.push_str(user);
                    out.push_str(":***@");
                }
                None => out.push_str("***@"),
            }
            &rest[at + 1..]
        }
        _ => rest,
    };
    match rest.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            let (query, fragment) = match query.split_once('#') {
                Some((q, f)) => (q, Some(f)),
                None => (query, None),
            };
            for (i, pair) in query.split('&').enumerate() {
                if i > 0 {
                    out.push('&');
                }
                match pair.split_once('=') {
                    Some((name, _)) if is_secret(name) => {
                        out.push_str(name);
                        out.push('=');
                        out.push_str(REDACTED_VALUE);
                    }
                    _ => out.push_str(pair),
                }
            }
            if let Some(f) = fragment {
                out.push('#');
                out.push_str(f);
            }
        }
        None => out.push_str(rest),
    }
    out
}

fn is_secret(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_PARAMETERS.iter().any(|s| lower.contains(s))
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn passwords_and_secret_parameters_never_show() {
        for (url, shown) in [
            (
                "postgres://u:s3cret@h:5432/db?sslmode=disable",
                "postgres://u:***@h:5432/db?sslmode=disable",
            ),
            ("postgres://u@h/db", "postgres://***@h/db"),
            // A token given as the user name.
            (
                "http://ghp_T0KEN1234@127.0.0.1:9/v1",
                "http://***@127.0.0.1:9/v1",
            ),
            ("postgres://h", "postgres://h"),
            ("runs.sqlite", "runs.sqlite"),
            // What URL parsers reject or misread: a `/`, `?` or `@` in the password.
            ("postgres://u:pa/ss@h/db", "postgres://u:***@h/db"),
            ("postgres://u:a?b@c@h/db", "postgres://u:***@h/db"),
            ("http://u:p@[not a host/x", "http://u:***@[not a host/x"),
            (
                "postgres://u@h/db?sslmode=require&password=s3cret",
                "postgres://***@h/db?sslmode=require&password=%3Credacted%3E",
            ),
            (
                "https://user:pw@example.com/v1/x?api-version=2024-02-01&api_key=sk-1&sig=abc",
                "https://user:***@example.com/v1/x?api-version=2024-02-01&api_key=%3Credacted%3E&sig=%3Credacted%3E",
            ),
            (
                "http://127.0.0.1:8080/v1/embeddings",
                "http://127.0.0.1:8080/v1/embeddings",
            ),
            ("not a url?key=sk-1", "not a url?key=%3Credacted%3E"),
            (
                "/openai/deployments/d/embeddings?api-version=2024-02-01&code=x&key=y",
                "/openai/deployments/d/embeddings?api-version=2024-02-01&code=x&key=%3Credacted%3E",
            ),
            ("/embeddings", "/embeddings"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }
}
