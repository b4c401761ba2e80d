//! The REST calls, on the crate's [`HttpClient`]: the endpoints and payloads of LangSmith's
//! API as the official Python SDK uses them (paths relative to the endpoint, e.g.
//! `https://api.smith.langchain.com/datasets`).

use super::ids::{is_uuid, Timestamp};
use crate::error::{Error, LangSmithError, Result};
use crate::http::{AuthHeader, HttpClient, HttpConfig};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// LangSmith's hosted API, used when `LANGSMITH_ENDPOINT` is unset.
pub const DEFAULT_ENDPOINT: &str = "https://api.smith.langchain.com";
/// The environment variable holding the API key (sent as `x-api-key`).
pub const API_KEY_ENV: &str = "LANGSMITH_API_KEY";
/// The environment variable naming the endpoint.
pub const ENDPOINT_ENV: &str = "LANGSMITH_ENDPOINT";

/// Examples the server returns per page at most.
const PAGE: usize = 100;

/// The default of [`LangSmith::with_max_rows`]: 250,000 items in one listing.
pub const DEFAULT_MAX_ROWS: usize = 250_000;

/// A client of LangSmith's REST API. Cheap to clone.
///
/// ```no_run
/// # async fn f() -> rag_eval::Result<()> {
/// let langsmith = rag_eval::langsmith::LangSmith::from_env()?;
/// for d in langsmith.list_datasets().await? {
///     println!("{} {}", d.id, d.name);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LangSmith {
    http: HttpClient,
    /// Most items one listing reads (see [`LangSmith::with_max_rows`]).
    max_rows: usize,
}

/// A dataset as the server describes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct RemoteDataset {
    /// Its UUID.
    pub id: String,
    /// Its name, unique in the workspace.
    pub name: String,
    /// Its description.
    #[serde(default)]
    pub description: Option<String>,
    /// Number of examples, when the server counts them.
    #[serde(default)]
    pub example_count: Option<u64>,
    /// Dataset-level metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// An example as the server returns it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct RemoteExample {
    /// Its UUID.
    pub id: String,
    /// The dataset it belongs to.
    #[serde(default)]
    pub dataset_id: Option<String>,
    /// Its inputs.
    #[serde(default)]
    pub inputs: Option<Map<String, Value>>,
    /// Its reference outputs.
    #[serde(default)]
    pub outputs: Option<Map<String, Value>>,
    /// Its metadata.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// An example to create or the new content of one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewExample {
    /// Its UUID (chosen by the client, so a repeated upload is recognised).
    pub id: String,
    /// Inputs (`{"query": …}`).
    pub inputs: Map<String, Value>,
    /// Reference outputs (`{"relevant_spans": …}` or `{"relevant_chunk_ids": …}`, …).
    pub outputs: Map<String, Value>,
    /// Metadata.
    pub metadata: Map<String, Value>,
}

/// An experiment (a "tracer session" in the API) as the server describes it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct Session {
    /// Its UUID.
    pub id: String,
    /// Its name.
    #[serde(default)]
    pub name: Option<String>,
    /// The dataset its runs were made on.
    #[serde(default)]
    pub reference_dataset_id: Option<String>,
    /// `{"metadata": …}` and the like.
    #[serde(default)]
    pub extra: Option<Map<String, Value>>,
    /// When it was closed, if it was.
    #[serde(default)]
    pub end_time: Option<String>,
}

/// A run to create: the payload of `POST /runs/batch`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewRun {
    /// Its UUID.
    pub id: String,
    /// The root run of its trace (itself for a root run).
    pub trace_id: String,
    /// Start time and id of every run from the root down to this one (see
    /// [`ids::root_dotted_order`](super::ids::root_dotted_order)).
    pub dotted_order: String,
    /// What ran.
    pub name: String,
    /// `chain`, `retriever`, `llm`, …
    pub run_type: String,
    /// RFC 3339.
    pub start_time: String,
    /// RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<String>,
    /// Inputs.
    pub inputs: Value,
    /// Outputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Value>,
    /// The experiment.
    pub session_id: String,
    /// The dataset example the run answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference_example_id: Option<String>,
    /// `{"metadata": …}`.
    pub extra: Value,
}

/// A feedback to create: one score under a key, on a run or (without `run_id`) on a whole
/// experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewFeedback {
    /// Its UUID.
    pub id: String,
    /// The run scored; `None` for experiment-level (summary) feedback.
    pub run_id: Option<String>,
    /// The run's trace.
    pub trace_id: Option<String>,
    /// The experiment, for summary feedback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The metric's name, e.g. `span_recall@5`.
    pub key: String,
    /// The figure.
    pub score: Option<f64>,
    /// A note shown with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// `{"type": "model", "metadata": …}`: who scored.
    pub feedback_source: Value,
    /// Anything else worth keeping (a standard deviation, a count).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra: Option<Value>,
}

impl LangSmith {
    /// The HTTP settings from the environment: `LANGSMITH_ENDPOINT` (default
    /// [`DEFAULT_ENDPOINT`]) and the key from `LANGSMITH_API_KEY` as `x-api-key`. Adjust them
    /// (timeouts, retries) and pass them to [`LangSmith::new`].
    pub fn config_from_env() -> HttpConfig {
        let endpoint = std::env::var(ENDPOINT_ENV)
            .ok()
            .map(|e| e.trim().to_owned())
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
        HttpConfig::new(endpoint)
            .with_api_key_env(API_KEY_ENV)
            .with_auth_header(AuthHeader::Header("x-api-key".to_owned()))
            // The hosted API allows a handful of requests at once per key.
            .with_concurrency(4)
    }

    /// A client configured from the environment ([`LangSmith::config_from_env`]).
    pub fn from_env() -> Result<Self> {
        LangSmith::new(LangSmith::config_from_env())
    }

    /// A client with these HTTP settings.
    pub fn new(config: HttpConfig) -> Result<Self> {
        Ok(LangSmith {
            http: HttpClient::new(config)?,
            max_rows: DEFAULT_MAX_ROWS,
        })
    }

    /// Reads at most `max` items in one listing (the datasets, a dataset's examples, an
    /// experiment's runs, the feedback on them), [`DEFAULT_MAX_ROWS`] by default; a listing
    /// that would hold more is an error naming the limit. A server that hands out a new cursor
    /// or page for ever, or pages of items without ids, so ends instead of filling the memory.
    pub fn with_max_rows(mut self, max: usize) -> Self {
        self.max_rows = max.max(1);
        self
    }

    /// The most items one listing reads.
    pub fn max_rows(&self) -> usize {
        self.max_rows
    }

    /// The underlying HTTP client (its statistics count retries).
    pub fn http(&self) -> &HttpClient {
        &self.http
    }

    /// The endpoint, for messages.
    pub fn endpoint(&self) -> String {
        crate::http::redact_url(&self.http.config().base_url)
    }

    // --- datasets ---

    /// Creates a key-value dataset.
    pub async fn create_dataset(
        &self,
        name: &str,
        description: Option<&str>,
        metadata: Map<String, Value>,
    ) -> Result<RemoteDataset> {
        tracing::debug!(name, "langsmith: creating dataset");
        let mut body = serde_json::json!({
            "name": name,
            "data_type": "kv",
            "extra": {"metadata": metadata},
        });
        if let Some(d) = description {
            body["description"] = Value::from(d);
        }
        self.http.post_json("/datasets", &body).await
    }

    /// The dataset with this exact name, if there is one.
    pub async fn find_dataset(&self, name: &str) -> Result<Option<RemoteDataset>> {
        let found: Vec<RemoteDataset> = self
            .http
            .get_json(&path_with("/datasets", &[("name", name), ("limit", "1")]))
            .await?;
        Ok(found.into_iter().find(|d| d.name == name))
    }

    /// Every dataset of the workspace.
    pub async fn list_datasets(&self) -> Result<Vec<RemoteDataset>> {
        self.paginated("/datasets", &[], 0).await
    }

    /// Deletes a dataset and its examples.
    pub async fn delete_dataset(&self, id: &str) -> Result<()> {
        tracing::debug!(id, "langsmith: deleting dataset");
        self.http
            .delete(&format!("/datasets/{}", uuid_segment(id)?))
            .await
    }

    // --- examples ---

    /// Creates examples in one request (`POST /examples/bulk`); returns their ids.
    pub async fn create_examples(
        &self,
        dataset_id: &str,
        examples: &[NewExample],
    ) -> Result<Vec<String>> {
        tracing::debug!(
            dataset_id,
            examples = examples.len(),
            "langsmith: creating examples"
        );
        let body: Vec<Value> = examples
            .iter()
            .map(|e| {
                let mut v = serde_json::to_value(e).unwrap_or(Value::Null);
                v["dataset_id"] = Value::from(dataset_id);
                v
            })
            .collect();
        let created: Vec<RemoteExample> = self.http.post_json("/examples/bulk", &body).await?;
        Ok(created.into_iter().map(|e| e.id).collect())
    }

    /// Every example of a dataset, page by page, in the server's order.
    pub async fn list_examples(&self, dataset_id: &str) -> Result<Vec<RemoteExample>> {
        self.paginated("/examples", &[("dataset", dataset_id)], 0)
            .await
    }

    /// Replaces the inputs, outputs and metadata of an example.
    pub async fn update_example(&self, dataset_id: &str, example: &NewExample) -> Result<()> {
        tracing::debug!(id = example.id, "langsmith: updating example");
        let mut body = serde_json::to_value(example).unwrap_or(Value::Null);
        body["dataset_id"] = Value::from(dataset_id);
        let _: Value = self
            .http
            .patch_json(&format!("/examples/{}", uuid_segment(&example.id)?), &body)
            .await?;
        Ok(())
    }

    // --- experiments ---

    /// Creates an experiment with a client-chosen id, linked to `reference_dataset_id`.
    pub async fn create_session(
        &self,
        id: &str,
        name: &str,
        description: Option<&str>,
        reference_dataset_id: Option<&str>,
        metadata: Map<String, Value>,
        start_time: &Timestamp,
    ) -> Result<Session> {
        tracing::debug!(id, name, "langsmith: creating experiment");
        let mut body = serde_json::json!({
            "id": id,
            "name": name,
            "start_time": start_time.rfc3339(),
            "extra": {"metadata": metadata},
        });
        if let Some(d) = description {
            body["description"] = Value::from(d);
        }
        if let Some(r) = reference_dataset_id {
            body["reference_dataset_id"] = Value::from(r);
        }
        self.http.post_json("/sessions", &body).await
    }

    /// An experiment by id, if it exists.
    pub async fn read_session(&self, id: &str) -> Result<Option<Session>> {
        let path = format!("/sessions/{}", uuid_segment(id)?);
        match self.http.get_json(&path).await {
            Ok(s) => Ok(Some(s)),
            Err(Error::Http {
                status: Some(404), ..
            }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The experiment with this exact name, if there is one.
    pub async fn find_session(&self, name: &str) -> Result<Option<Session>> {
        let found: Vec<Session> = self
            .http
            .get_json(&path_with("/sessions", &[("name", name), ("limit", "1")]))
            .await?;
        Ok(found.into_iter().find(|s| s.name.as_deref() == Some(name)))
    }

    /// Marks an experiment finished.
    pub async fn end_session(&self, id: &str, end_time: &Timestamp) -> Result<()> {
        let _: Value = self
            .http
            .patch_json(
                &format!("/sessions/{}", uuid_segment(id)?),
                &serde_json::json!({"end_time": end_time.rfc3339()}),
            )
            .await?;
        Ok(())
    }

    // --- runs ---

    /// Creates runs and applies updates to others in one request (`POST /runs/batch`). Every
    /// run needs its `trace_id` and `dotted_order`, as the SDK's batch ingestion requires.
    pub async fn batch_runs(&self, post: &[NewRun], patch: &[Value]) -> Result<()> {
        if let Some(r) = post
            .iter()
            .find(|r| r.trace_id.is_empty() || r.dotted_order.is_empty())
        {
            return Err(LangSmithError::Untraced(r.id.to_string()).into());
        }
        tracing::debug!(
            post = post.len(),
            patch = patch.len(),
            "langsmith: sending a batch of runs"
        );
        let _: Value = self
            .http
            .post_json(
                "/runs/batch",
                &serde_json::json!({"post": post, "patch": patch}),
            )
            .await?;
        Ok(())
    }

    /// Updates fields of a run (`end_time`, `outputs`, `error`, …).
    pub async fn patch_run(&self, id: &str, fields: &Value) -> Result<()> {
        let _: Value = self
            .http
            .patch_json(&format!("/runs/{}", uuid_segment(id)?), fields)
            .await?;
        Ok(())
    }

    // --- feedback ---

    /// Creates one feedback.
    pub async fn create_feedback(&self, feedback: &NewFeedback) -> Result<()> {
        let _: Value = self.http.post_json("/feedback", feedback).await?;
        Ok(())
    }

    /// Every run of an experiment (`POST /runs/query`, following its cursors). A cursor
    /// given twice is an error: the server would answer the same pages for ever.
    pub async fn list_runs(&self, session_id: &str) -> Result<Vec<Value>> {
        let mut body = serde_json::json!({"session": [session_id], "limit": PAGE});
        let mut all = Vec::new();
        let mut cursors = std::collections::HashSet::new();
        let mut pages = 0;
        loop {
            let page: Value = self.http.post_json("/runs/query", &body).await?;
            pages += 1;
            if let Some(runs) = page["runs"].as_array() {
                self.room(
                    reqwest::Method::POST,
                    "/runs/query",
                    "runs",
                    all.len() + runs.len(),
                    pages,
                )?;
                all.extend(runs.iter().cloned());
            }
            match page["cursors"]["next"].as_str() {
                Some(next) if !page["runs"].as_array().is_none_or(Vec::is_empty) => {
                    if !cursors.insert(next.to_owned()) {
                        return Err(self.no_progress(
                            reqwest::Method::POST,
                            "/runs/query",
                            format!(
                                "the server gave the next cursor `{}` a second time, after {} \
                                 runs: its pages do not advance",
                                crate::http::excerpt_text(next),
                                all.len()
                            ),
                        ));
                    }
                    body["cursor"] = Value::from(next);
                }
                _ => return Ok(all),
            }
        }
    }

    /// The error of a listing whose pages do not advance.
    fn no_progress(&self, method: reqwest::Method, path: &str, message: String) -> Error {
        Error::Http {
            endpoint: self.http.endpoint(&method, path),
            status: None,
            message,
        }
    }

    /// Fails when a listing would hold `held` items after `pages` pages (of one request),
    /// more than [`LangSmith::max_rows`]: before they are kept.
    fn room(
        &self,
        method: reqwest::Method,
        path: &str,
        what: &str,
        held: usize,
        pages: usize,
    ) -> Result<()> {
        if held <= self.max_rows {
            return Ok(());
        }
        Err(Error::Http {
            endpoint: self.http.endpoint(&method, path),
            status: None,
            message: format!(
                "the server listed more than {} {what} (after {pages} pages), the most one \
                 listing reads (--max-rows); raise the limit if so many are expected",
                self.max_rows
            ),
        })
    }

    /// Every feedback on these runs.
    pub async fn list_feedback(&self, run_ids: &[String]) -> Result<Vec<Value>> {
        let mut all = Vec::new();
        // A few dozen ids per request keep the URL short; the limit is for them all.
        for ids in run_ids.chunks(40) {
            let params: Vec<(&str, &str)> = ids.iter().map(|id| ("run", id.as_str())).collect();
            let more = self
                .paginated::<Value>("/feedback", &params, all.len())
                .await?;
            all.extend(more);
        }
        Ok(all)
    }

    /// Reads a list endpoint with `offset`/`limit` paging until a short page. A full page
    /// whose items (by `id`) were all read before is an error: the server ignores `offset`
    /// and would answer the same page for ever. With the `before` items of the same listing
    /// read already, at most [`LangSmith::max_rows`] in all.
    async fn paginated<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        params: &[(&str, &str)],
        before: usize,
    ) -> Result<Vec<T>> {
        let mut all = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut pages = 0;
        loop {
            let offset = all.len().to_string();
            let limit = PAGE.to_string();
            let mut p = params.to_vec();
            p.push(("offset", &offset));
            p.push(("limit", &limit));
            let page_path = path_with(path, &p);
            let page: Vec<Value> = self.http.get_json(&page_path).await?;
            pages += 1;
            let n = page.len();
            let what = path.trim_start_matches('/');
            self.room(
                reqwest::Method::GET,
                path,
                what,
                before + all.len() + n,
                pages,
            )?;
            let mut fresh = 0;
            for item in page {
                // Items without an id cannot be told apart; they count as new.
                if item["id"]
                    .as_str()
                    .is_none_or(|id| seen.insert(id.to_owned()))
                {
                    fresh += 1;
                }
                all.push(serde_json::from_value(item).map_err(|e| Error::Http {
                    endpoint: self.http.endpoint(&reqwest::Method::GET, &page_path),
                    status: None,
                    message: format!("an item of the answer is not what was expected: {e}"),
                })?);
            }
            if n < PAGE {
                return Ok(all);
            }
            if fresh == 0 {
                return Err(self.no_progress(
                    reqwest::Method::GET,
                    &page_path,
                    format!(
                        "the page at offset {offset} holds only items read before: the server \
                         ignores `offset`, and its pages do not advance"
                    ),
                ));
            }
        }
    }
}

/// Whether an error is the server's "already exists" (409): for a create with a client-chosen
/// id, an earlier attempt whose answer was lost.
pub fn is_conflict(e: &Error) -> bool {
    matches!(
        e,
        Error::Http {
            status: Some(409),
            ..
        }
    )
}

/// An id checked to be a UUID before it goes into a path (a stray `/` or `?` would address
/// another resource).
fn uuid_segment(id: &str) -> Result<&str> {
    if is_uuid(id) {
        Ok(id)
    } else {
        Err(LangSmithError::NotAnId(id.to_string()).into())
    }
}

/// `path?k=v&…` with the values percent-encoded.
fn path_with(path: &str, params: &[(&str, &str)]) -> String {
    let mut url = reqwest::Url::parse("http://x/").expect("a constant URL parses");
    url.query_pairs_mut().extend_pairs(params);
    match url.query() {
        Some(q) if !q.is_empty() => format!("{path}?{q}"),
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(
            path_with("/datasets", &[("name", "a b&c=d/é"), ("limit", "1")]),
            "/datasets?name=a+b%26c%3Dd%2F%C3%A9&limit=1"
        );
        assert_eq!(path_with("/x", &[]), "/x");
    }

    #[test]
    fn only_uuids_go_into_paths() {
        assert!(uuid_segment("../sessions").is_err());
        assert!(uuid_segment("0b6d1c3e-8c1a-4f43-9a5e-3d2f1b0a9c8d").is_ok());
    }
}
