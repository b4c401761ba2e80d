//! A JSON-over-HTTP client for the remote providers: bounded concurrency, timeouts, retries
//! with exponential backoff and full jitter, `Retry-After` honoured, and API keys that never
//! reach `Debug` output, logs or errors.
//!
//! Transient failures are retried: 408, 429 and 5xx answers (except 501 and 505, and a 5xx
//! whose body says the request does not fit the model's context, as llama-server's "Context
//! size has been exceeded" does), timeouts, connections cut short, and 2xx answers whose body
//! ends before its JSON does (cut short on the way). Other answers fail at once, a 2xx whose
//! complete body is not the JSON expected among them (the error quotes it), and so
//! does a server that cannot be reached at all: a refused connection, a host name that does
//! not resolve or a failed TLS handshake is named (`cannot connect (connection refused): …`)
//! within seconds rather than after minutes of retries. After the
//! last try the error names the endpoint (without credentials), the status and an excerpt of the
//! body. A retry is sent alone: it waits until no other request of the client is in flight,
//! and the others wait for it. Every retry is logged (a `tracing` warning naming the endpoint, the attempt, the wait
//! and the reason).
//!
//! The number of requests in flight adapts to the server, never above
//! [`HttpConfig::concurrency`] and never below one: it halves when the server shows signs of
//! overload (a 429 or 503, a timeout, or an answer more than four times slower than the median
//! of the recent ones) and grows back by one request per round of answers in good time
//! (additive increase, multiplicative decrease). With retries sent alone, a struggling server
//! (a local one above all) gets less work after a failure, never more.
//! [`HttpClient::in_flight_limit`] tells the current number.
//!
//! The timeout is a test of the server's liveness, not a deadline for each request: a request
//! times out when the server has answered nothing at all (to it or to any other request of the
//! client and its clones) for [`HttpConfig::timeout`] and then does not answer a check either.
//! A local server with one slot works through the requests in flight one after the other, so
//! the last of them waits for all the others; as long as answers keep coming it is slow, not
//! dead, and sending its work again would only lengthen the queue (a server that sees the
//! client give up drops the work done so far, and the retry starts it again). A server with several slots shares its processor among the
//! requests in flight and answers none of them for a while; when `timeout` passes without any
//! answer, the client asks the server something cheap (`GET` of the base URL, where any HTTP
//! answer will do) and keeps waiting if it answers. A request still times out after
//! `timeout` × `concurrency` in any case: with at most `concurrency` requests of the client in
//! flight, a server taking at most `timeout` for each alone has answered all of them by then,
//! whether it takes them in turn or together.
//!
//! Three limits hold whatever the server does. A call (all its attempts and the waits between
//! them) ends after [`HttpConfig::deadline`], 10 minutes by default, even when a server answers
//! its liveness checks and never the request itself. An answer body longer than
//! [`HttpConfig::max_response_bytes`] (64 MiB by default) fails the call without a retry; the
//! body is read piece by piece, so one that never ends is dropped at the limit. And the bodies
//! read at once by all the clients of the process hold at most a [`ResponseBudget`] (256 MiB
//! by default, [`RESPONSE_MEMORY_ENV`] sets it): a body that would pass it fails its call
//! without a retry. A `Retry-After` longer than [`HttpConfig::max_retry_after`] (or too long to
//! represent) fails a call at once too.
//!
//! A configured secret goes to its own origin only. A redirect to another origin (scheme, host
//! or port) is not followed by a client that sends an API key or configured headers: the call
//! fails at once naming where the server pointed. Without them, redirects are followed (ten at
//! most), and errors and [`HttpClient::redirected_to`] name the URL that answered.
//!
//! Requests work from any executor: inside a Tokio runtime they run on it; elsewhere (for
//! example under `pollster::block_on`) they run on a small runtime of the client's own.
//!
//! ```no_run
//! use rag_eval::http::{HttpClient, HttpConfig};
//! use std::time::Duration;
//!
//! # async fn f() -> rag_eval::Result<()> {
//! let client = HttpClient::new(
//!     HttpConfig::new("https://api.example.com/v1")
//!         .with_api_key_env("EXAMPLE_API_KEY")
//!         .with_timeout(Duration::from_secs(20)),
//! )?;
//! let models: serde_json::Value = client.get_json("/models").await?;
//! # Ok(()) }
//! ```

use crate::error::{Error, Result, SettingError};
pub(crate) use crate::redact::redact_url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode, Url};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Semaphore;
use tokio::time::Instant;

mod budget;
mod window;

pub use budget::{ResponseBudget, DEFAULT_RESPONSE_MEMORY, RESPONSE_MEMORY_ENV};

/// Redirects followed at most in one request.
const MAX_REDIRECTS: usize = 10;

/// How an API key is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthHeader {
    /// `Authorization: Bearer <key>` (OpenAI, Cohere and most compatible servers).
    Bearer,
    /// `<name>: <key>`, e.g. `api-key` for Azure OpenAI.
    Header(String),
}

/// An API key. `Debug` shows only whether it is empty.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_empty() {
            "ApiKey(<empty>)"
        } else {
            "ApiKey(<redacted>)"
        })
    }
}

/// Settings of an [`HttpClient`].
///
/// Build with [`HttpConfig::new`] and the `with_*` methods (or set the fields).
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Prefix of every request path, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// How long a request waits while the server answers nothing (neither it nor any other
    /// request of the client); also the limit for connecting. An attempt never waits more
    /// than `timeout` × `concurrency` (see the [module docs](self)).
    pub timeout: Duration,
    /// Tries after the first one for transient failures.
    pub max_retries: u32,
    /// Most requests in flight at once, across all clones of the client (at least 1); fewer
    /// while the server shows signs of overload (see the [module docs](self)).
    pub concurrency: usize,
    /// Environment variable holding the API key, read once by [`HttpClient::new`]. Unset or
    /// empty means no key is sent (local servers need none).
    pub api_key_env: Option<String>,
    /// A key given directly; takes precedence over `api_key_env`.
    pub api_key: Option<ApiKey>,
    /// How the key is sent.
    pub auth_header: AuthHeader,
    /// Extra headers sent with every request. Values are not shown by `Debug`.
    pub headers: Vec<(String, String)>,
    /// Upper bound of the first backoff; each retry doubles it, up to `max_backoff`. The wait
    /// is drawn uniformly below the bound ("full jitter").
    pub initial_backoff: Duration,
    /// Largest backoff bound.
    pub max_backoff: Duration,
    /// Longest `Retry-After` the client waits for; a server asking for more (or for a wait too
    /// long to represent) fails the request at once rather than stalling a run.
    pub max_retry_after: Duration,
    /// Longest one call may take in all, from its first send: every attempt, the waits between
    /// them and the checks of a silent server included. When it passes the call fails at once,
    /// not retried. `None`: no limit beyond each attempt's own (see [`HttpConfig::timeout`]).
    pub deadline: Option<Duration>,
    /// Largest answer body read, in bytes. A longer answer (announced or sent) fails the call
    /// at once, not retried: reading stops at the limit, so an endless body costs no more.
    pub max_response_bytes: usize,
    /// The bytes of answer bodies held at once that the client shares with others: `None`,
    /// the process's ([`ResponseBudget::process`], [`RESPONSE_MEMORY_ENV`]).
    pub response_budget: Option<Arc<ResponseBudget>>,
}

/// The default of [`HttpConfig::concurrency`]: 8 requests in flight at most.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// The default of [`HttpConfig::deadline`]: 10 minutes.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);

/// The default of [`HttpConfig::max_response_bytes`]: 64 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 << 20;

impl HttpConfig {
    /// Defaults: timeout 60 s, 5 retries, 8 requests in flight, no key, bearer auth, backoff
    /// from 500 ms up to 30 s, `Retry-After` up to 120 s, 10 minutes per call in all
    /// ([`DEFAULT_DEADLINE`]), answers up to 64 MiB ([`DEFAULT_MAX_RESPONSE_BYTES`]).
    pub fn new(base_url: impl Into<String>) -> Self {
        HttpConfig {
            base_url: base_url.into(),
            timeout: Duration::from_secs(60),
            max_retries: 5,
            concurrency: DEFAULT_CONCURRENCY,
            api_key_env: None,
            api_key: None,
            auth_header: AuthHeader::Bearer,
            headers: Vec::new(),
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
            deadline: Some(DEFAULT_DEADLINE),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            response_budget: None,
        }
    }

    /// Sets the timeout (see [`HttpConfig::timeout`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the number of retries after the first try.
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// Sets the number of requests in flight at once.
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// Reads the API key from this environment variable.
    pub fn with_api_key_env(mut self, name: impl Into<String>) -> Self {
        self.api_key_env = Some(name.into());
        self
    }

    /// Uses this API key (instead of an environment variable).
    pub fn with_api_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }

    /// Sends the key this way.
    pub fn with_auth_header(mut self, auth_header: AuthHeader) -> Self {
        self.auth_header = auth_header;
        self
    }

    /// Adds a header sent with every request.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the first and the largest backoff bound.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// Sets the longest `Retry-After` waited for.
    pub fn with_max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// Sets the longest one call may take, retries included (see [`HttpConfig::deadline`]).
    pub fn with_deadline(mut self, deadline: Option<Duration>) -> Self {
        self.deadline = deadline;
        self
    }

    /// Sets the largest answer body read, in bytes (see [`HttpConfig::max_response_bytes`]).
    pub fn with_max_response_bytes(mut self, max: usize) -> Self {
        self.max_response_bytes = max;
        self
    }

    /// Shares `budget` for the answer bodies held at once, instead of the process's.
    pub fn with_response_budget(mut self, budget: Arc<ResponseBudget>) -> Self {
        self.response_budget = Some(budget);
        self
    }

    /// Limits each call to `limit` in all: the [deadline](HttpConfig::deadline) is `limit`,
    /// and a silent server is not waited for longer than it either (the
    /// [timeout](HttpConfig::timeout) is at most `limit`). What the CLI's `--timeout` sets.
    pub fn with_limit(self, limit: Duration) -> Self {
        let idle = self.timeout.min(limit);
        self.with_deadline(Some(limit)).with_timeout(idle)
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpConfig")
            .field("base_url", &redact_url(&self.base_url))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("concurrency", &self.concurrency)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key)
            .field("auth_header", &self.auth_header)
            .field("headers", &header_names)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("max_retry_after", &self.max_retry_after)
            .field("deadline", &self.deadline)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("response_budget", &self.response_budget)
            .finish()
    }
}

/// Counts of an [`HttpClient`] and its clones since creation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HttpStats {
    /// Attempts sent, retries included.
    pub requests: u64,
    /// Attempts after a transient failure.
    pub retries: u64,
    /// Calls that ended in an error.
    pub failures: u64,
}

/// The shared client. Cheap to clone; clones share connections, the concurrency limit and
/// the statistics.
#[derive(Clone)]
pub struct HttpClient {
    inner: Arc<Inner>,
}

struct Inner {
    config: HttpConfig,
    /// The key actually in use (from the config or the environment); kept to scrub it from
    /// error messages should a server echo it back.
    key: Option<ApiKey>,
    client: reqwest::Client,
    permits: Semaphore,
    /// How many of the `permits` may be in flight now (see [`window`]).
    gate: window::Gate,
    liveness: Arc<Liveness>,
    /// The bytes of answer bodies held at once, shared with other clients.
    budget: Arc<ResponseBudget>,
    /// The URL that answered the last request answered after a redirect, without secrets.
    redirected: std::sync::Mutex<Option<String>>,
    requests: AtomicU64,
    retries: AtomicU64,
    failures: AtomicU64,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("config", &self.inner.config)
            .field("key_in_use", &self.inner.key.is_some())
            .field("stats", &self.stats())
            .finish()
    }
}

/// One attempt that did not produce a usable answer.
struct Failure {
    status: Option<StatusCode>,
    message: String,
    transient: bool,
    /// Transient only for a request that shared the server with others of the client: a
    /// context the server's slots share may have been full. Sent alone, it fails for good.
    crowded_only: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn transient(message: String) -> Self {
        Failure {
            status: None,
            message,
            transient: true,
            crowded_only: false,
            retry_after: None,
        }
    }
}

/// What came back from one attempt.
struct Answer {
    status: StatusCode,
    retry_after: Option<Duration>,
    body: Vec<u8>,
    /// The body's bytes in the budget, given back with the answer.
    _held: Option<budget::Held>,
    /// The URL that answered, when a redirect led there (without secrets).
    redirected: Option<String>,
}

/// A base URL the client cannot use, and why.
fn base_url(url: &str, expected: impl Into<String>) -> Error {
    SettingError::new(
        "HTTP client",
        "base url",
        format!("`{}`", redact_url(url)),
        expected,
    )
    .into()
}

/// A header name the client cannot send.
fn header_name(name: &str) -> SettingError {
    SettingError::new(
        "HTTP client",
        "header name",
        format!("`{name}`"),
        "is not a valid header name",
    )
}

impl HttpClient {
    /// A client for `config`; reads the API key from `config.api_key_env` unless
    /// `config.api_key` is set.
    ///
    /// Fails when the base URL or a header is malformed, or the key variable is not Unicode.
    pub fn new(mut config: HttpConfig) -> Result<Self> {
        let base = Url::parse(&config.base_url)
            .map_err(|e| base_url(&config.base_url, format!("is not a valid url ({e})")))?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(base_url(
                &config.base_url,
                "must start with http:// or https://",
            ));
        }
        if !base.username().is_empty() || base.password().is_some() {
            // The HTTP stack would send them as Basic authentication in place of the API key,
            // and every name, spec and record of the component would have to hide them.
            return Err(base_url(
                &config.base_url,
                "carries a user name or password: rag-eval does not send them (they would \
                 replace the API key); leave them out and give the key through its environment \
                 variable (`api_key_env`)",
            ));
        }
        config.concurrency = config.concurrency.max(1);
        let key = match (&config.api_key, &config.api_key_env) {
            (Some(key), _) => Some(key.clone()),
            (None, Some(var)) => match std::env::var(var) {
                Ok(v) if !v.trim().is_empty() => Some(ApiKey(v.trim().to_owned())),
                Ok(_) | Err(std::env::VarError::NotPresent) => None,
                Err(std::env::VarError::NotUnicode(_)) => {
                    return Err(Error::Env {
                        var: var.clone(),
                        message: "the API key is not valid Unicode".into(),
                    })
                }
            },
            (None, None) => None,
        }
        .filter(|k| !k.0.is_empty());

        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| header_name(name))?;
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                SettingError::new(
                    "HTTP client",
                    format!("header `{name}`"),
                    "a value not shown",
                    "has characters not allowed in a header",
                )
            })?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        if let Some(key) = &key {
            let (name, value) = match &config.auth_header {
                AuthHeader::Bearer => (reqwest::header::AUTHORIZATION, format!("Bearer {}", key.0)),
                AuthHeader::Header(name) => (
                    HeaderName::from_bytes(name.as_bytes()).map_err(|_| header_name(name))?,
                    key.0.clone(),
                ),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                SettingError::new(
                    "HTTP client",
                    "API key",
                    "a key not shown",
                    "has characters not allowed in an HTTP header",
                )
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let budget = match &config.response_budget {
            Some(budget) => Arc::clone(budget),
            None => ResponseBudget::process()?,
        };
        // A redirect to another origin (scheme, host or port) would take the key and the
        // configured headers there: the HTTP stack drops `Authorization` on a change of host,
        // but not `x-api-key`, `api-key` or a service's own headers, nor anything on a change
        // from https to http. Such a redirect is not followed (see `attempt_once`).
        let guarded = key.is_some() || !config.headers.is_empty();
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() > MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            let elsewhere = attempt
                .previous()
                .first()
                .is_some_and(|first| first.origin() != attempt.url().origin());
            if guarded && elsewhere {
                attempt.stop()
            } else {
                attempt.follow()
            }
        });
        let client = reqwest::Client::builder()
            .redirect(policy)
            .default_headers(headers)
            .user_agent(concat!("rag-eval/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(config.timeout)
            .build()
            .map_err(|e| Error::Http {
                endpoint: redact_url(&config.base_url),
                status: None,
                message: format!("cannot set up the HTTP client: {e}"),
            })?;
        let permits = Semaphore::new(config.concurrency);
        Ok(HttpClient {
            inner: Arc::new(Inner {
                key,
                client,
                permits,
                gate: window::Gate::new(config.concurrency),
                liveness: Arc::new(Liveness::new()),
                budget,
                redirected: std::sync::Mutex::new(None),
                requests: AtomicU64::new(0),
                retries: AtomicU64::new(0),
                failures: AtomicU64::new(0),
                config,
            }),
        })
    }

    /// The settings (`Debug` redacts the key).
    pub fn config(&self) -> &HttpConfig {
        &self.inner.config
    }

    /// Requests the client lets in flight now: [`HttpConfig::concurrency`] at most, fewer
    /// while the server shows signs of overload (see the [module docs](self)).
    pub fn in_flight_limit(&self) -> usize {
        self.inner.gate.limit()
    }

    /// Whether an API key is sent.
    pub fn has_api_key(&self) -> bool {
        self.inner.key.is_some()
    }

    /// The URL (without secrets) that answered the last request answered after a redirect,
    /// if any was: where the answers come from when it is not the URL configured.
    pub fn redirected_to(&self) -> Option<String> {
        self.inner
            .redirected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Counts so far.
    pub fn stats(&self) -> HttpStats {
        HttpStats {
            requests: self.inner.requests.load(Ordering::Relaxed),
            retries: self.inner.retries.load(Ordering::Relaxed),
            failures: self.inner.failures.load(Ordering::Relaxed),
        }
    }

    /// POSTs `body` as JSON to `path` (relative to the base URL) and parses the JSON answer.
    pub async fn post_json<B: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<R> {
        let body = serde_json::to_vec(body).map_err(|e| Error::Http {
            endpoint: self.endpoint(&Method::POST, path),
            status: None,
            message: format!("cannot encode the request body: {e}"),
        })?;
        self.execute(Method::POST, path, Some(body), decode_json)
            .await
    }

    /// PATCHes `body` as JSON to `path` (relative to the base URL) and parses the JSON answer.
    pub async fn patch_json<B: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<R> {
        let body = serde_json::to_vec(body).map_err(|e| Error::Http {
            endpoint: self.endpoint(&Method::PATCH, path),
            status: None,
            message: format!("cannot encode the request body: {e}"),
        })?;
        self.execute(Method::PATCH, path, Some(body), decode_json)
            .await
    }

    /// GETs `path` (relative to the base URL) and parses the JSON answer.
    pub async fn get_json<R: DeserializeOwned>(&self, path: &str) -> Result<R> {
        self.execute(Method::GET, path, None, decode_json).await
    }

    /// DELETEs `path` (relative to the base URL); any 2xx answer is success.
    pub async fn delete(&self, path: &str) -> Result<()> {
        self.execute(Method::DELETE, path, None, |_| Ok(())).await
    }

    fn url(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            return path.to_owned();
        }
        let base = self.inner.config.base_url.trim_end_matches('/');
        if path.is_empty() {
            base.to_owned()
        } else {
            format!("{base}/{}", path.trim_start_matches('/'))
        }
    }

    /// `METHOD url` of a request to `path`, without secrets, for error messages.
    pub(crate) fn endpoint(&self, method: &Method, path: &str) -> String {
        format!("{method} {}", redact_url(&self.url(path)))
    }

    /// Runs attempts until one gives an answer `decode` accepts, a failure is not transient,
    /// or the retries are spent.
    async fn execute<T>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        decode: impl Fn(&[u8]) -> std::result::Result<T, serde_json::Error>,
    ) -> Result<T> {
        let inner = &self.inner;
        let url = self.url(path);
        let endpoint = self.endpoint(&method, path);
        let attempts = inner.config.max_retries.saturating_add(1);
        let mut attempt = 0u32;
        // Set once the first attempt may go: time spent waiting for a place among the client's
        // requests in flight is the client's queue, not the server's.
        let mut until: Option<Instant> = None;
        loop {
            attempt += 1;
            let outcome = {
                // A retry goes alone: it waits until no other request of the client is in
                // flight and holds the others back until it is answered, so a server that
                // failed under load (a timeout, a 5xx such as a shared context running out,
                // a 429) sees less of it, never the same work on top. The semaphore is fair,
                // so later requests cannot overtake it.
                let permits = if attempt == 1 {
                    1
                } else {
                    u32::try_from(inner.config.concurrency).unwrap_or(u32::MAX)
                };
                let _permit =
                    inner
                        .permits
                        .acquire_many(permits)
                        .await
                        .map_err(|_| Error::Http {
                            endpoint: endpoint.clone(),
                            status: None,
                            message: "the client was shut down".to_owned(),
                        })?;
                let slot = inner.gate.enter().await;
                // Whether other requests of the client hold the server too (see
                // `Failure::crowded_only`): at the send, or when the answer came.
                let others = || {
                    inner.permits.available_permits() + (permits as usize)
                        < inner.config.concurrency
                };
                let mut crowded = others();
                if attempt == 1 {
                    until = inner
                        .config
                        .deadline
                        .and_then(|d| Instant::now().checked_add(d));
                }
                inner.requests.fetch_add(1, Ordering::Relaxed);
                let request = inner
                    .client
                    .request(method.clone(), &url)
                    .header(reqwest::header::ACCEPT, "application/json");
                let request = match &body {
                    Some(b) => request
                        .header(reqwest::header::CONTENT_TYPE, "application/json")
                        .body(b.clone()),
                    None => request,
                };
                // Beyond a century a limit means "none", and sums of instants stay representable.
                const LONGEST: Duration = Duration::from_secs(1 << 32);
                let limits = Limits {
                    idle: inner.config.timeout.min(LONGEST),
                    total: inner
                        .config
                        .timeout
                        .saturating_mul(u32::try_from(inner.config.concurrency).unwrap_or(u32::MAX))
                        .min(LONGEST),
                };
                let liveness = Arc::clone(&inner.liveness);
                let probe = Probe {
                    client: inner.client.clone(),
                    url: inner.config.base_url.clone(),
                };
                let read = Reading {
                    max_bytes: inner.config.max_response_bytes,
                    budget: Arc::clone(&inner.budget),
                    url: Url::parse(&url).ok(),
                };
                let deadline = inner.config.deadline;
                let outcome = on_runtime(async move {
                    let exchange = attempt_once(request, limits, &liveness, probe, read);
                    match until {
                        Some(until) => tokio::time::timeout_at(until, exchange)
                            .await
                            .unwrap_or_else(|_| Err(past_deadline(deadline))),
                        None => exchange.await,
                    }
                })
                .await
                .and_then(|answer| answer)
                .and_then(|answer| {
                    if let Some(to) = &answer.redirected {
                        tracing::debug!(endpoint = %endpoint, "answered by {to} after a redirect");
                        *inner.redirected.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(to.clone());
                    }
                    judge(answer, &decode)
                });
                crowded |= others();
                let sign = load_sign(&outcome, slot.elapsed(), inner.config.timeout);
                slot.leave(sign);
                outcome.map_err(|failure| (failure, crowded))
            };
            let (mut failure, crowded) = match outcome {
                Ok(value) => return Ok(value),
                Err(failure) => failure,
            };
            // A request too long for the model's context fails the same way every time. One
            // that shared the server with others may have met a context full of theirs, and
            // its retry goes alone (a retry is never crowded): alone, it fails for good.
            if failure.crowded_only && !crowded {
                failure.transient = false;
                failure.message.push_str(
                    " (not retried: the server says the request does not fit the model's \
                     context, and no other request shared the server with it)",
                );
            }
            let give_up = |failure: Failure, note: String| {
                inner.failures.fetch_add(1, Ordering::Relaxed);
                Err(self.error(&endpoint, failure, note))
            };
            if !failure.transient {
                let note = if attempt > 1 {
                    format!(" (attempt {attempt})")
                } else {
                    String::new()
                };
                return give_up(failure, note);
            }
            if attempt >= attempts {
                return give_up(failure, format!(" (gave up after {attempt} attempts)"));
            }
            let wait = match failure.retry_after {
                Some(wait) if wait > inner.config.max_retry_after => {
                    let asked = if wait == Duration::MAX {
                        "longer than can be represented".to_owned()
                    } else {
                        format!("{wait:?}")
                    };
                    let note = format!(
                        " (the server asked to retry after {asked}, more than the {:?} allowed)",
                        inner.config.max_retry_after
                    );
                    return give_up(failure, note);
                }
                Some(wait) => wait,
                None => self.backoff(attempt),
            };
            if until.is_some_and(|until| {
                Instant::now()
                    .checked_add(wait)
                    .is_none_or(|then| then >= until)
            }) {
                let note = format!(
                    " (attempt {attempt}; the next would start after the deadline of {:?} for \
                     the whole call)",
                    inner.config.deadline.unwrap_or_default()
                );
                return give_up(failure, note);
            }
            tracing::warn!(
                endpoint = %endpoint,
                status = failure.status.map(|s| s.as_u16()),
                attempt,
                wait_ms = wait.as_millis() as u64,
                "retrying after a transient failure: {}",
                self.scrub(&failure.message)
            );
            inner.retries.fetch_add(1, Ordering::Relaxed);
            // Built inside the future: a Tokio timer cannot even be created outside a runtime.
            on_runtime(async move { tokio::time::sleep(wait).await })
                .await
                .ok();
        }
    }

    /// Full jitter: uniform in `[0, min(max_backoff, initial_backoff * 2^(attempt-1))]`.
    fn backoff(&self, attempt: u32) -> Duration {
        let config = &self.inner.config;
        let factor = 1u32
            .checked_shl(attempt.saturating_sub(1))
            .unwrap_or(u32::MAX);
        let bound = config
            .initial_backoff
            .saturating_mul(factor)
            .min(config.max_backoff);
        let nanos = u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }

    fn error(&self, endpoint: &str, failure: Failure, note: String) -> Error {
        Error::Http {
            endpoint: endpoint.to_owned(),
            status: failure.status.map(|s| s.as_u16()),
            message: self.scrub(&format!("{}{note}", failure.message)),
        }
    }

    /// Replaces the key, should it appear in text a server sent back.
    fn scrub(&self, text: &str) -> String {
        let text = match &self.inner.key {
            Some(key) if !key.0.is_empty() => text.replace(key.0.as_str(), "<redacted>"),
            _ => text.to_owned(),
        };
        scrub_credentials(&text)
    }
}

/// `text` with the credentials of an echoed `Authorization` header (`Basic …`, `Bearer …`)
/// replaced: a server may quote a request's header back, whichever key it carried.
fn scrub_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let found = ["Basic ", "Bearer ", "basic ", "bearer "]
            .iter()
            .filter_map(|scheme| rest.find(scheme).map(|i| (i, scheme.len())))
            .min();
        let Some((i, len)) = found else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..i + len]);
        let after = &rest[i + len..];
        let end = after
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';'))
            .unwrap_or(after.len());
        if end > 0 {
            out.push_str("<redacted>");
        }
        rest = &after[end..];
    }
}

fn decode_json<T: DeserializeOwned>(body: &[u8]) -> std::result::Result<T, serde_json::Error> {
    // An empty answer reads as `null`, so `()` and `Option<_>` accept it.
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"null"
    } else {
        body
    };
    serde_json::from_slice(body)
}

/// Words of a 5xx answer's body that say the request itself cannot be served: the prompt is
/// longer than the model's context (llama-server's "Context size has been exceeded", vLLM's
/// and OpenAI's "maximum context length"). Sent again, it fails again.
const HOPELESS: [&str; 5] = [
    "context size has been exceeded",
    "exceeds the available context size",
    "maximum context length",
    "context_length_exceeded",
    "input is too large to process",
];

/// Whether a server error's `body` says the request can never succeed (see [`HOPELESS`]).
fn hopeless(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body).to_lowercase();
    HOPELESS.iter().any(|words| text.contains(words))
}

/// Sorts an answer into success or a (transient or final) failure.
///
/// A 2xx body that is not the JSON expected fails at once: a server that answers a request
/// so answers it again. Only a body that ends before its JSON does is retried, as a body cut
/// short on the way (a proxy, a dropped connection) is.
fn judge<T>(
    answer: Answer,
    decode: &impl Fn(&[u8]) -> std::result::Result<T, serde_json::Error>,
) -> std::result::Result<T, Failure> {
    let status = answer.status;
    let by = match &answer.redirected {
        Some(to) => format!(" (answered by {to} after a redirect)"),
        None => String::new(),
    };
    if status.is_success() {
        return decode(&answer.body).map_err(|e| {
            let what = if e.is_eof() {
                format!("the answer ends before its JSON does, cut short ({e})")
            } else if e.is_data() {
                format!("the answer is not the JSON expected ({e}); not retried")
            } else {
                format!("invalid JSON in the answer ({e}); not retried")
            };
            Failure {
                status: Some(status),
                message: format!("{status}: {what}: {}{by}", excerpt(&answer.body)),
                transient: e.is_eof(),
                crowded_only: false,
                retry_after: answer.retry_after,
            }
        });
    }
    let transient = matches!(status.as_u16(), 408 | 429)
        || (status.is_server_error()
            && !matches!(
                status,
                StatusCode::NOT_IMPLEMENTED | StatusCode::HTTP_VERSION_NOT_SUPPORTED
            ));
    Err(Failure {
        status: Some(status),
        message: format!("{status}: {}{by}", excerpt(&answer.body)),
        transient,
        crowded_only: status.is_server_error() && hopeless(&answer.body),
        retry_after: answer.retry_after,
    })
}

/// What an attempt that took `elapsed` shows of the server's load: a 429 or 503, or no answer
/// for the whole `timeout`, is overload; any other answer tells how long answers take.
fn load_sign<T>(
    outcome: &std::result::Result<T, Failure>,
    elapsed: Duration,
    timeout: Duration,
) -> window::Sign {
    match outcome {
        Ok(_) => window::Sign::Answered(elapsed),
        Err(f) => match f.status {
            Some(StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE) => {
                window::Sign::Overloaded
            }
            Some(_) => window::Sign::Answered(elapsed),
            None if f.transient && elapsed >= timeout => window::Sign::Overloaded,
            None => window::Sign::Neutral,
        },
    }
}

/// When the server last answered anything, shared by a client and its clones.
struct Liveness {
    /// Nanoseconds from `start` to the end of the last complete answer; 0 before any.
    last_answer: AtomicU64,
    start: Instant,
}

impl Liveness {
    fn new() -> Self {
        Liveness {
            last_answer: AtomicU64::new(0),
            start: Instant::now(),
        }
    }

    fn answered(&self) {
        let nanos = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_answer.fetch_max(nanos, Ordering::Relaxed);
    }

    fn last_answer(&self) -> Instant {
        self.start + Duration::from_nanos(self.last_answer.load(Ordering::Relaxed))
    }
}

/// How long an attempt may wait: `idle` without any answer from the server, `total` at most.
#[derive(Clone, Copy)]
struct Limits {
    idle: Duration,
    total: Duration,
}

/// A cheap question that tells a busy server from a hung one: any HTTP answer to `GET url`
/// (the base URL; a 404 will do) shows it is alive.
struct Probe {
    client: reqwest::Client,
    url: String,
}

impl Probe {
    /// Longest wait for the answer to the probe.
    const LIMIT: Duration = Duration::from_secs(5);

    async fn alive(&self, limit: Duration) -> bool {
        let ask = self.client.get(&self.url).send();
        matches!(tokio::time::timeout(limit, ask).await, Ok(Ok(_)))
    }
}

/// How an answer's body is read: at most `max_bytes`, each piece counted in `budget`, and
/// `url` the request's, to tell when a redirect led elsewhere.
struct Reading {
    max_bytes: usize,
    budget: Arc<ResponseBudget>,
    url: Option<Url>,
}

/// A redirect left unfollowed by the client's policy: to another origin, with the key or
/// configured headers that would go along.
fn unfollowed(status: StatusCode, from: &Url, headers: &HeaderMap) -> Failure {
    let location = headers
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|l| from.join(l).ok());
    let message = match location {
        Some(to) if to.origin() != from.origin() => format!(
            "{status}: the server redirects to {}, another origin; rag-eval does not follow a \
             redirect to another origin with an API key or configured headers, as they would \
             go there too (if that server is to be trusted with them, give its URL instead)",
            redact_url(to.as_str())
        ),
        _ => format!("{status}: a redirect that cannot be followed"),
    };
    Failure {
        status: Some(status),
        message,
        transient: false,
        crowded_only: false,
        retry_after: None,
    }
}

/// Sends one request and reads the whole answer, unless the server answers nothing for
/// `limits.idle` (counting from the send, or from the last answer to any request of the
/// client after it) and then does not answer the probe either, or `limits.total` passes.
///
/// A server that shares its processor among the requests in flight (several slots) answers
/// none of them until all are nearly done, so the lack of answers alone does not show that it
/// hangs; the probe does.
async fn attempt_once(
    request: reqwest::RequestBuilder,
    limits: Limits,
    liveness: &Liveness,
    probe: Probe,
    read: Reading,
) -> std::result::Result<Answer, Failure> {
    let max_bytes = read.max_bytes;
    let exchange = async {
        let mut response = request.send().await.map_err(transport_failure)?;
        let status = response.status();
        if status.is_redirection() {
            return Err(unfollowed(status, response.url(), response.headers()));
        }
        let redirected = (read.url.as_ref() != Some(response.url()))
            .then(|| redact_url(response.url().as_str()));
        let retry_after = retry_after(response.headers(), SystemTime::now());
        let too_long = || Failure {
            status: Some(status),
            message: format!(
                "{status}: the answer is longer than the {max_bytes} bytes allowed \
                 (max_response_bytes)"
            ),
            transient: false,
            crowded_only: false,
            retry_after: None,
        };
        if response
            .content_length()
            .is_some_and(|n| n > u64::try_from(max_bytes).unwrap_or(u64::MAX))
        {
            return Err(too_long());
        }
        let mut body = Vec::new();
        let budget = read.budget;
        let mut held = budget::Held::new(Arc::clone(&budget));
        // Piece by piece, so that a body without end stops at the limit, and the bodies read
        // at once stop at the process's budget.
        while let Some(piece) = response.chunk().await.map_err(|e| {
            let mut f = transport_failure(e);
            f.message = format!("{status}: the answer was cut short ({})", f.message);
            f.status = Some(status);
            f.retry_after = retry_after;
            f
        })? {
            if piece.len() > max_bytes - body.len() {
                return Err(too_long());
            }
            if !budget.take(&mut held, piece.len()) {
                return Err(Failure {
                    status: Some(status),
                    message: format!("{status}: {}", budget.exceeded()),
                    transient: false,
                    crowded_only: false,
                    retry_after: None,
                });
            }
            body.extend_from_slice(&piece);
        }
        Ok(Answer {
            status,
            retry_after,
            body,
            _held: Some(held),
            redirected,
        })
    };
    let sent = Instant::now();
    let hard = sent + limits.total;
    let mut exchange = std::pin::pin!(exchange);
    loop {
        let idle_until = sent.max(liveness.last_answer()) + limits.idle;
        if let Ok(result) = tokio::time::timeout_at(idle_until.min(hard), exchange.as_mut()).await {
            if result.is_ok() {
                liveness.answered();
            }
            return result;
        }
        // Another request's answer may have moved the deadline while this one slept.
        let now = Instant::now();
        if now >= hard {
            return Err(Failure::transient(format!(
                "no complete answer within {:?}, although the server kept answering other \
                 requests",
                limits.total
            )));
        }
        if now >= sent.max(liveness.last_answer()) + limits.idle {
            if probe.alive(limits.idle.min(Probe::LIMIT)).await {
                liveness.answered();
                continue;
            }
            return Err(Failure::transient(format!(
                "no complete answer within {:?}, no answer to any other request either, and \
                 no answer to GET {}",
                limits.idle,
                redact_url(&probe.url)
            )));
        }
    }
}

/// The failure of an attempt cut off by the call's deadline: final, since a retry would start
/// after it too.
fn past_deadline(deadline: Option<Duration>) -> Failure {
    Failure {
        status: None,
        message: format!(
            "no complete answer within the deadline of {:?} for the whole call (retries included)",
            deadline.unwrap_or_default()
        ),
        transient: false,
        crowded_only: false,
        retry_after: None,
    }
}

fn transport_failure(e: reqwest::Error) -> Failure {
    // Errors of reqwest's own request building (a malformed URL, say) will not go away, nor
    // will a server that cannot be reached (a refused connection, an unknown host, a failed
    // TLS handshake) within the seconds a retry waits: both fail at once. A connection that
    // times out is retried.
    let unreachable = e.is_connect() && !e.is_timeout();
    let transient = !e.is_builder() && !unreachable;
    let e = e.without_url();
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    let mut refused = false;
    while let Some(s) = source {
        refused |= s
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused);
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    if unreachable {
        message = format!(
            "cannot connect ({}): {message}",
            unreachable_cause(refused, &message)
        );
    }
    Failure {
        status: None,
        message,
        transient,
        crowded_only: false,
        retry_after: None,
    }
}

/// Why a server could not be reached, in a few words, from the chain of errors `message`.
fn unreachable_cause(refused: bool, message: &str) -> &'static str {
    let lower = message.to_lowercase();
    if refused || lower.contains("connection refused") {
        "connection refused"
    } else if lower.contains("dns") || lower.contains("lookup") {
        "DNS lookup failed"
    } else if ["tls", "certificate", "handshake"]
        .iter()
        .any(|w| lower.contains(w))
    {
        "TLS handshake failed"
    } else {
        "connection failed"
    }
}

/// The wait a server asks for: `retry-after-ms` (OpenAI), else `Retry-After` in seconds or as
/// an HTTP date.
fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if let Some(wait) = seconds(ms / 1000.0) {
            return Some(wait);
        }
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return seconds(secs);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A wait of `secs` seconds; none for a negative or NaN number. A wait too long for a
/// [`Duration`] (`1e30`, `inf`) is [`Duration::MAX`]: longer than any wait allowed, so it takes
/// the path of a too-long wait.
fn seconds(secs: f64) -> Option<Duration> {
    if secs.is_nan() || secs < 0.0 {
        return None;
    }
    Some(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
}

/// [`excerpt`] of text a server sent.
pub(crate) fn excerpt_text(text: &str) -> String {
    excerpt(text.as_bytes())
}

/// The first 300 characters of a body, whitespace collapsed, for error messages.
fn excerpt(body: &[u8]) -> String {
    const LIMIT: usize = 300;
    let text = String::from_utf8_lossy(body);
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
            count += 1;
        }
        for c in word.chars() {
            if count == LIMIT {
                out.push('…');
                return out;
            }
            out.push(c);
            count += 1;
        }
    }
    if out.is_empty() {
        "(empty body)".to_owned()
    } else {
        out
    }
}

/// Runs `fut` on the current Tokio runtime, or on the client's own when there is none (the
/// HTTP stack needs Tokio's reactor and timer).
async fn on_runtime<F>(fut: F) -> std::result::Result<F::Output, Failure>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return Ok(fut.await);
    }
    let runtime = crate::runtime::shared().map_err(|message| Failure {
        status: None,
        message,
        transient: false,
        crowded_only: false,
        retry_after: None,
    })?;
    runtime
        .spawn(fut)
        .await
        .map_err(|e| Failure::transient(format!("the request task failed: {e}")))
}

/// OpenAI's public API, the default server of the OpenAI-compatible providers.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

impl HttpConfig {
    /// OpenAI's public API, the key from `OPENAI_API_KEY`.
    #[cfg(feature = "openai")]
    pub(crate) fn openai() -> Self {
        HttpConfig::new(OPENAI_BASE_URL).with_api_key_env("OPENAI_API_KEY")
    }

    /// Points the configuration at an Azure OpenAI resource (`https://NAME.openai.azure.com`):
    /// the key goes in an `api-key` header, read from `AZURE_OPENAI_API_KEY`. Returns the
    /// request path of `operation` (`embeddings`, `chat/completions`) on `deployment`.
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    pub(crate) fn azure(
        &mut self,
        endpoint: impl Into<String>,
        deployment: &str,
        operation: &str,
        api_version: &str,
    ) -> String {
        self.base_url = endpoint.into();
        self.auth_header = AuthHeader::Header("api-key".to_owned());
        self.api_key_env = Some("AZURE_OPENAI_API_KEY".to_owned());
        format!("/openai/deployments/{deployment}/{operation}?api-version={api_version}")
    }
}

/// The settings every remote provider's builder shares, for a builder with the fields
/// `http: HttpConfig` and `path: String`: base URL, key, request path and HTTP tuning.
#[allow(unused_macros)] // each provider feature uses it; `http` alone does not
macro_rules! endpoint_builder {
    ($builder:ty, $default_path:literal) => {
        impl $builder {
            /// The server's base URL, e.g. `http://localhost:11434/v1` for a local Ollama.
            pub fn base_url(mut self, url: impl Into<String>) -> Self {
                self.http.base_url = url.into();
                self
            }

            /// Reads the key from this environment variable instead.
            pub fn api_key_env(mut self, name: impl Into<String>) -> Self {
                self.http.api_key_env = Some(name.into());
                self
            }

            /// Uses this key (instead of an environment variable).
            pub fn api_key(mut self, key: $crate::http::ApiKey) -> Self {
                self.http.api_key = Some(key);
                self
            }

            #[doc = concat!("The request path under the base URL (default `", $default_path, "`); it may carry a query string.")]
            pub fn path(mut self, path: impl Into<String>) -> Self {
                self.path = path.into();
                self
            }

            /// Adjusts the HTTP settings (timeout, retries, concurrency, headers, backoff).
            pub fn http(
                mut self,
                adjust: impl FnOnce($crate::http::HttpConfig) -> $crate::http::HttpConfig,
            ) -> Self {
                self.http = adjust(self.http);
                self
            }
        }
    };
}
#[allow(unused_imports)] // each provider feature uses it; `http` alone does not
pub(crate) use endpoint_builder;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_milliseconds_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let headers = |pairs: &[(&'static str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(*k, HeaderValue::from_str(v).unwrap());
            }
            h
        };
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")]), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0.25")]), now),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "3"), ("retry-after-ms", "120")]),
                now
            ),
            Some(Duration::from_millis(120)),
            "the finer header wins"
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &date)]), now),
            Some(Duration::from_secs(7))
        );
        let past = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &past)]), now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")]), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn a_wait_too_long_to_represent_is_the_longest_wait_not_a_panic() {
        let now = SystemTime::UNIX_EPOCH;
        let one = |name: &'static str, value: &str| {
            let mut h = HeaderMap::new();
            h.insert(name, HeaderValue::from_str(value).unwrap());
            retry_after(&h, now)
        };
        for (name, value) in [
            ("retry-after", "1e30"),
            ("retry-after", "inf"),
            ("retry-after", "18446744073709551616"),
            ("retry-after-ms", "1e25"),
            ("retry-after-ms", "inf"),
        ] {
            assert_eq!(one(name, value), Some(Duration::MAX), "{name}: {value}");
        }
        assert_eq!(one("retry-after", "NaN"), None);
        assert_eq!(one("retry-after-ms", "-5"), None);
    }

    #[test]
    fn excerpts_collapse_whitespace_and_stop_at_300_characters() {
        assert_eq!(
            excerpt(b"  {\"error\":\n  \"busy\"}  "),
            "{\"error\": \"busy\"}"
        );
        assert_eq!(excerpt(b" \n"), "(empty body)");
        let long = "é".repeat(400);
        let e = excerpt(long.as_bytes());
        assert_eq!(e.chars().count(), 301);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt(&[0xff, b'a']), "\u{fffd}a");
    }

    #[test]
    fn echoed_authorization_headers_are_scrubbed() {
        assert_eq!(
            scrub_credentials(r#"{"error":"bad header Basic dXNlcjpwYXNz, or Bearer sk-1."}"#),
            r#"{"error":"bad header Basic <redacted>, or Bearer <redacted>"}"#
        );
        assert_eq!(
            scrub_credentials("Basic auth only"),
            "Basic <redacted> only"
        );
        assert_eq!(scrub_credentials("no header"), "no header");
    }

    #[test]
    fn credentials_in_the_base_url_are_refused_without_showing_them() {
        for (url, secret) in [
            ("http://user:pa55@127.0.0.1:1/v1", "pa55"),
            // A token alone, as the user name.
            ("http://ghp_T0KEN1234@127.0.0.1:1/v1", "ghp_T0KEN1234"),
        ] {
            let e = HttpClient::new(HttpConfig::new(url))
                .err()
                .unwrap()
                .to_string();
            assert!(
                e.contains("carries a user name or password") && !e.contains(secret),
                "{e}"
            );
            assert!(e.contains("***@127.0.0.1:1/v1"), "{e}");
        }
    }

    #[test]
    fn backoff_stays_under_its_doubling_bound() {
        let client = HttpClient::new(
            HttpConfig::new("http://127.0.0.1:1")
                .with_backoff(Duration::from_millis(10), Duration::from_millis(35)),
        )
        .unwrap();
        for _ in 0..200 {
            assert!(client.backoff(1) <= Duration::from_millis(10));
            assert!(client.backoff(2) <= Duration::from_millis(20));
            assert!(client.backoff(3) <= Duration::from_millis(35));
            assert!(client.backoff(40) <= Duration::from_millis(35));
        }
        // Full jitter spreads the waits: 200 draws are not all at the bound.
        let draws: std::collections::HashSet<Duration> =
            (0..200).map(|_| client.backoff(3)).collect();
        assert!(draws.len() > 100, "{} distinct waits", draws.len());
    }

    /// An answer of `status` with `body`, as read.
    fn answered(status: u16, body: &[u8]) -> Answer {
        Answer {
            status: StatusCode::from_u16(status).unwrap(),
            retry_after: None,
            body: body.to_vec(),
            _held: None,
            redirected: None,
        }
    }

    #[test]
    fn transient_statuses_are_retried_and_others_are_not() {
        let answer = |code: u16| answered(code, b"{\"error\":\"x\"}");
        let decode = |b: &[u8]| decode_json::<serde_json::Value>(b);
        for code in [408, 429, 500, 502, 503, 504, 599] {
            assert!(
                judge(answer(code), &decode).err().unwrap().transient,
                "{code}"
            );
        }
        for code in [400, 401, 403, 404, 422, 501, 505] {
            let f = judge(answer(code), &decode).err().unwrap();
            assert!(!f.transient, "{code}");
            assert!(f.message.contains("{\"error\":\"x\"}"), "{}", f.message);
        }
        // A body that ends before its JSON does was cut short on the way: retried.
        let f = judge(answered(200, b"{\"data\": ["), &decode)
            .err()
            .unwrap();
        assert!(f.transient);
        assert!(f.message.contains("cut short"), "{}", f.message);
        assert!(judge(answered(204, b""), &|b: &[u8]| decode_json::<()>(b)).is_ok());
    }

    #[test]
    fn a_complete_answer_that_is_not_the_json_expected_is_final() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Expected {
            data: Vec<u32>,
        }
        let decode = |b: &[u8]| decode_json::<Expected>(b);
        for (body, said) in [
            (
                &b"<html>Bad gateway</html>"[..],
                "invalid JSON in the answer",
            ),
            (b"{\"data\": \"none\"}", "not the JSON expected"),
            (b"{\"error\": 1}", "not the JSON expected"),
        ] {
            let f = judge(answered(200, body), &decode).err().unwrap();
            assert!(!f.transient, "{}", f.message);
            assert!(f.message.contains(said), "{}", f.message);
            assert!(f.message.contains("not retried"), "{}", f.message);
            // The body's excerpt comes with it.
            let start = String::from_utf8_lossy(&body[..5]).into_owned();
            assert!(f.message.contains(&start), "{}", f.message);
        }
    }

    #[test]
    fn a_server_error_saying_the_request_cannot_fit_is_retried_only_when_crowded() {
        let decode = |b: &[u8]| decode_json::<serde_json::Value>(b);
        for body in [
            // llama-server's, before it answered 400.
            &br#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#[..],
            br#"{"error":{"message":"This model's maximum context length is 4096 tokens."}}"#,
            br#"{"error":{"code":"context_length_exceeded"}}"#,
        ] {
            // Retried only when other requests shared the server (see `execute`).
            let f = judge(answered(500, body), &decode).err().unwrap();
            assert!(f.crowded_only, "{}", f.message);
        }
        let f = judge(answered(500, b"{\"error\":\"out of slots\"}"), &decode)
            .err()
            .unwrap();
        assert!(f.transient && !f.crowded_only, "{}", f.message);
        let f = judge(
            answered(400, b"{\"error\":\"maximum context length\"}"),
            &decode,
        )
        .err()
        .unwrap();
        assert!(!f.transient && !f.crowded_only, "{}", f.message);
    }

    #[test]
    fn keys_come_from_the_environment_and_never_show_in_debug() {
        // A variable name no other test uses, so setting it cannot race with a reader.
        let var = "RAG_EVAL_HTTP_UNIT_TEST_KEY";
        std::env::set_var(var, " sk-unit-secret-123 ");
        let client =
            HttpClient::new(HttpConfig::new("http://127.0.0.1:1/v1").with_api_key_env(var))
                .unwrap();
        assert!(client.has_api_key());
        let debug = format!("{client:?} {:?}", client.config());
        assert!(!debug.contains("sk-unit-secret-123"), "{debug}");
        assert!(debug.contains(var), "{debug}");
        assert_eq!(
            client.scrub("Incorrect API key provided: sk-unit-secret-123."),
            "Incorrect API key provided: <redacted>."
        );
        let unset = HttpClient::new(
            HttpConfig::new("http://127.0.0.1:1").with_api_key_env("RAG_EVAL_HTTP_UNSET_VAR"),
        )
        .unwrap();
        assert!(!unset.has_api_key());
        let with_header = HttpConfig::new("http://127.0.0.1:1")
            .with_header("x-secret", "hidden-value")
            .with_api_key(ApiKey::new("k"));
        let debug = format!("{with_header:?}");
        assert!(
            debug.contains("x-secret") && !debug.contains("hidden-value"),
            "{debug}"
        );
    }

    #[test]
    fn bad_settings_are_configuration_errors() {
        let err = HttpClient::new(HttpConfig::new("ftp://example.com")).unwrap_err();
        assert!(err.to_string().contains("http:// or https://"), "{err}");
        let err = HttpClient::new(HttpConfig::new("no url")).unwrap_err();
        assert!(err.to_string().contains("not a valid url"), "{err}");
        let err =
            HttpClient::new(HttpConfig::new("http://h").with_header("bad name", "v")).unwrap_err();
        assert!(err.to_string().contains("`bad name`"), "{err}");
        let err = HttpClient::new(
            HttpConfig::new("http://h").with_api_key(ApiKey::new("line\nbreak-secret")),
        )
        .unwrap_err();
        assert!(!err.to_string().contains("break-secret"), "{err}");
    }

    #[test]
    fn paths_join_the_base_url_with_one_slash() {
        let client = HttpClient::new(HttpConfig::new("http://127.0.0.1:9/v1/")).unwrap();
        assert_eq!(
            client.url("/embeddings"),
            "http://127.0.0.1:9/v1/embeddings"
        );
        assert_eq!(client.url("embeddings"), "http://127.0.0.1:9/v1/embeddings");
        assert_eq!(client.url(""), "http://127.0.0.1:9/v1");
        assert_eq!(client.url("http://other/x"), "http://other/x");
        assert_eq!(
            client.endpoint(&Method::POST, "/x?api-key=s"),
            "POST http://127.0.0.1:9/v1/x?api-key=%3Credacted%3E"
        );
    }

    #[test]
    fn an_unreachable_server_fails_at_once_naming_the_url_and_the_cause() {
        // Port 1 on loopback refuses connections; `.invalid` never resolves (RFC 2606).
        for (url, cause) in [
            (
                "http://127.0.0.1:1/v1",
                "cannot connect (connection refused)",
            ),
            (
                "http://rag-eval-test.invalid/v1",
                "cannot connect (DNS lookup failed)",
            ),
        ] {
            let client = HttpClient::new(
                HttpConfig::new(url)
                    .with_max_retries(5)
                    .with_backoff(Duration::from_secs(2), Duration::from_secs(2))
                    .with_timeout(Duration::from_secs(5)),
            )
            .unwrap();
            let started = std::time::Instant::now();
            let err =
                pollster::block_on(client.get_json::<serde_json::Value>("/models")).unwrap_err();
            assert!(started.elapsed() < Duration::from_secs(2), "{err}");
            let Error::Http {
                endpoint, status, ..
            } = &err
            else {
                panic!("{err}");
            };
            assert_eq!(endpoint, &format!("GET {url}/models"));
            assert_eq!(*status, None);
            assert!(err.to_string().contains(cause), "{err}");
            assert_eq!(
                client.stats(),
                HttpStats {
                    requests: 1,
                    retries: 0,
                    failures: 1
                },
                "{err}"
            );
        }
    }
}
