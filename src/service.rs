//! The system under test as a black box over HTTP: a RAG service of any make, asked each
//! question and read for its answer and the contexts it answered from.
//!
//! [`HttpRag`] is built from a spec (`http:url=…`, see [`crate::spec`] and
//! `docs/reference/commands.md`): it POSTs `{"id": …, "query": …}` (or the `body` template with
//! `{id}` and `{query}` placeholders in its strings) to `url`, and reads the answer and the
//! contexts from the JSON response with JSON pointers (`answer`, default `/answer`; `contexts`,
//! default `/contexts`). Each context is a string (the retrieved text) or an object whose text,
//! document, offsets and score are read from the fields named by `text`, `doc_id`, `start`,
//! `end` and `score` (defaults the same names). Contexts without offsets are placed in the
//! corpus by [`answers::place`](crate::answers::place); contexts given by a document and
//! offsets alone, without text, take their text from the corpus ([`HttpRag::ask_answers`]).
//!
//! Requests use the crate's [`HttpClient`] (retries of transient failures, at most
//! `concurrency` in flight, no redirect to another origin with the `headers`); `timeout` bounds
//! each question in all, its retries included. Headers are read from environment variables the
//! spec names (`headers=X-Api-Key:SERVICE_KEY`), so a spec never holds a secret. With a
//! [`Cache`], each response is recorded under the URL and the request body, and a replaying
//! cache answers without the service: a CI run evaluates the recorded answers offline.
//!
//! ```
//! use rag_eval::service::HttpRag;
//! let rag = HttpRag::from_spec("http:url=http://127.0.0.1:8000/ask,answer=/output/text")?;
//! assert_eq!(
//!     rag.spec(),
//!     "http:url=http://127.0.0.1:8000/ask,answer=/output/text,contexts=/contexts,text=text,\
//!      doc_id=doc_id,start=start,end=end,score=score,concurrency=4,timeout=60,retries=2"
//! );
//! # Ok::<(), rag_eval::Error>(())
//! ```

use crate::answers::{kind, Answers, Placement};
use crate::cache::Cache;
use crate::corpus::Corpus;
use crate::error::{Error, Fault, Result};
use crate::generator::RagAnswer;
use crate::http::{HttpClient, HttpConfig};
use crate::spec::{Kind, Spec};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// The name the cache records responses under.
pub(crate) const PROVIDER: &str = "http-rag";

/// A RAG service evaluated over HTTP. See the [module docs](self).
#[derive(Debug, Clone)]
pub struct HttpRag {
    client: HttpClient,
    url: String,
    body: Option<Value>,
    answer: String,
    contexts: String,
    fields: Fields,
    spec: String,
    cache: Option<Arc<Cache>>,
}

/// The field names of a context object.
#[derive(Debug, Clone)]
struct Fields {
    text: String,
    doc_id: String,
    start: String,
    end: String,
    score: String,
}

/// What the service gave for one query, in the answers file's form.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceAnswer {
    /// The query id.
    pub id: String,
    /// One line of an answers file: `{"id","answer","contexts":[…]}`, contexts with `text` and,
    /// where the service gave them, `doc_id`, `start`, `end` and `score`; a context given by
    /// its offsets alone has no `text` yet ([`HttpRag::ask_answers`] reads it from the corpus).
    pub line: Value,
}

impl HttpRag {
    /// Builds the service client a spec such as `http:url=http://127.0.0.1:8000/ask` names.
    ///
    /// Its `timeout` bounds each question in all, its retries and the waits between them
    /// included: the call fails naming the deadline when it passes.
    pub fn from_spec(text: &str) -> Result<Self> {
        Self::from_spec_within(text, None)
    }

    /// [`HttpRag::from_spec`], each question bounded by `limit` too when it is shorter than
    /// the spec's `timeout` (the CLI's `--timeout`).
    pub(crate) fn from_spec_within(text: &str, limit: Option<Duration>) -> Result<Self> {
        let spec = Spec::parse(Kind::Rag, text)?;
        Self::from_parsed(&spec, limit).map_err(|f| f.in_spec(Kind::Rag.as_str(), text).into())
    }

    fn from_parsed(spec: &Spec, limit: Option<Duration>) -> std::result::Result<Self, Fault> {
        let url = spec
            .text("url")
            .ok_or_else(|| {
                Fault::key(
                    "url",
                    "`url` is required, e.g. `http:url=http://127.0.0.1:8000/ask`",
                )
            })?
            .to_owned();
        let body = spec
            .text("body")
            .map(|t| {
                let v: Value = serde_json::from_str(t)
                    .map_err(|e| Fault::key("body", format!("`body` is not JSON ({e}): `{t}`")))?;
                if !t.contains("{query}") {
                    return Err(Fault::key("body", format!(
                        "`body` has no `{{query}}` placeholder: the service would never see the question: `{t}`"
                    )));
                }
                Ok(v)
            })
            .transpose()?;
        let pointer = |key: &str, default: &str| -> std::result::Result<String, Fault> {
            let p = spec.text(key).unwrap_or(default);
            if !(p.is_empty() || p.starts_with('/')) {
                return Err(Fault::key(
                    key,
                    format!("`{key}` is a JSON pointer and starts with `/`, e.g. `/{p}`"),
                ));
            }
            Ok(p.to_owned())
        };
        let field = |key: &str| spec.text(key).unwrap_or(key).to_owned();
        let concurrency = spec.whole("concurrency")?.unwrap_or(4);
        if concurrency == 0 {
            return Err(Fault::key(
                "concurrency",
                "`concurrency` must be at least 1",
            ));
        }
        let timeout = spec.whole("timeout")?.unwrap_or(60);
        if timeout == 0 {
            return Err(Fault::key(
                "timeout",
                "`timeout` must be at least 1 (seconds)",
            ));
        }
        let retries = spec.whole("retries")?.unwrap_or(2);
        // The deadline of every other provider: one question, its retries included, takes at
        // most `timeout` (or the caller's shorter limit), and a silent service is not waited
        // for longer either.
        let within = Duration::from_secs(timeout as u64).min(limit.unwrap_or(Duration::MAX));
        let mut config = HttpConfig::new(url.clone())
            .with_concurrency(concurrency)
            .with_max_retries(retries as u32)
            .with_limit(within);
        let headers = spec.text("headers").unwrap_or_default();
        for pair in headers.split(';').filter(|p| !p.trim().is_empty()) {
            let (name, var) = pair.split_once(':').ok_or_else(|| {
                Fault::key(
                    "headers",
                    format!(
                        "`headers` lists `Header-Name:ENV_VAR` pairs separated by `;`, got `{pair}`"
                    ),
                )
            })?;
            let (name, var) = (name.trim(), var.trim());
            let value = std::env::var(var).map_err(|_| {
                Fault::key(
                    "headers",
                    format!("environment variable `{var}` (for header `{name}`) is not set"),
                )
            })?;
            config = config.with_header(name, value);
        }
        let fields = Fields {
            text: field("text"),
            doc_id: field("doc_id"),
            start: field("start"),
            end: field("end"),
            score: field("score"),
        };
        let answer = pointer("answer", "/answer")?;
        let contexts = pointer("contexts", "/contexts")?;
        let mut printed = Spec::new("http").with("url", url.as_str());
        if let Some(t) = spec.text("body") {
            printed = printed.with("body", t);
        }
        printed = printed
            .with("answer", answer.as_str())
            .with("contexts", contexts.as_str())
            .with("text", fields.text.as_str())
            .with("doc_id", fields.doc_id.as_str())
            .with("start", fields.start.as_str())
            .with("end", fields.end.as_str())
            .with("score", fields.score.as_str());
        if !headers.is_empty() {
            printed = printed.with("headers", headers);
        }
        printed = printed
            .with("concurrency", concurrency.to_string())
            .with("timeout", timeout.to_string())
            .with("retries", retries.to_string());
        let client = HttpClient::new(config).map_err(Fault::of)?;
        Ok(HttpRag {
            client,
            url,
            body,
            answer,
            contexts,
            fields,
            spec: printed.to_string(),
            cache: None,
        })
    }

    /// Records every response in `cache`, and answers from it when it holds one (in
    /// [`CacheMode::Replay`](crate::cache::CacheMode::Replay) only from it).
    pub fn with_cache(mut self, cache: Arc<Cache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The spec that builds this client again, every setting explicit (header names and
    /// their variables, never their values).
    pub fn spec(&self) -> String {
        self.spec.clone()
    }

    /// The service's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The URL (without secrets) that answered the last question answered after a redirect,
    /// if any was: where the answers came from when it is not [`HttpRag::url`]. A redirect to
    /// another origin is never followed when the spec sends `headers`.
    pub fn redirected_to(&self) -> Option<String> {
        self.client.redirected_to()
    }

    /// The request body for one query.
    fn request(&self, id: &str, query: &str) -> Value {
        match &self.body {
            None => json!({"id": id, "query": query}),
            Some(template) => fill(template, id, query),
        }
    }

    /// Asks the service one question: its response, from the cache when it holds one.
    async fn respond(&self, id: &str, query: &str) -> Result<Value> {
        let body = self.request(id, query);
        if let Some(cache) = &self.cache {
            if let Some(hit) = cache.get_response(PROVIDER, &self.url, &(), &body)? {
                return Ok(hit.response);
            }
        }
        let response: Value = self.client.post_json("", &body).await?;
        if let Some(cache) = &self.cache {
            cache.put_response(PROVIDER, &self.url, &(), &body, &response, None)?;
        }
        Ok(response)
    }

    /// The answer to query `id` that the cache holds, read as [`HttpRag::ask`] reads one;
    /// `None` when there is no cache or it lacks the response. Nothing is sent: a dry run
    /// counts what a run would ask the service with it.
    pub fn cached(&self, id: &str, query: &str) -> Result<Option<ServiceAnswer>> {
        let Some(cache) = &self.cache else {
            return Ok(None);
        };
        let hit = match cache.get_response(PROVIDER, &self.url, &(), &self.request(id, query)) {
            Ok(hit) => hit,
            // A replaying cache's miss is an error; here it only means "not cached".
            Err(Error::CacheMiss { .. }) => None,
            Err(e) => return Err(e),
        };
        let Some(hit) = hit else {
            return Ok(None);
        };
        let line = self
            .read(id, &hit.response)
            .map_err(|message| Error::Http {
                endpoint: format!("POST {}", crate::redact::redact_url(&self.url)),
                status: None,
                message: format!("query `{id}` (cached): {message}"),
            })?;
        Ok(Some(ServiceAnswer {
            id: id.to_owned(),
            line,
        }))
    }

    /// Asks the service about query `id` and reads its answer and contexts.
    pub async fn ask(&self, id: &str, query: &str) -> Result<ServiceAnswer> {
        let response = self.respond(id, query).await?;
        let line = self.read(id, &response).map_err(|message| Error::Http {
            endpoint: format!("POST {}", crate::redact::redact_url(&self.url)),
            status: None,
            message: format!("query `{id}`: {message}"),
        })?;
        Ok(ServiceAnswer {
            id: id.to_owned(),
            line,
        })
    }

    /// Asks every query (`(id, query)` pairs), at most `concurrency` at a time, and gives the
    /// answers as [`Answers`] with the contexts given as text placed in `corpus` when there is
    /// one (with their counts). The first failure fails the whole.
    pub async fn ask_all(
        &self,
        queries: &[(String, String)],
        corpus: Option<&Corpus>,
    ) -> Result<(Answers, Option<Placement>)> {
        let mut answers = self.ask_answers(queries, corpus).await?;
        let placed = match corpus {
            Some(corpus) if answers.text_contexts() > 0 => Some(answers.place_in(corpus)),
            _ => None,
        };
        Ok((answers, placed))
    }

    /// Asks every query (`(id, query)` pairs), at most `concurrency` at a time, and gives the
    /// answers as [`Answers`], contexts given as text left as they are (unplaced). A context
    /// the service gave by its offsets alone (`doc_id`, `start`, `end`, no text) gets its text
    /// from `corpus`; one outside its document, of a document the corpus lacks, or without a
    /// corpus is an error naming the query, the context and its offsets. The first failure
    /// fails the whole.
    pub async fn ask_answers(
        &self,
        queries: &[(String, String)],
        corpus: Option<&Corpus>,
    ) -> Result<Answers> {
        self.ask_answers_reporting(queries, corpus, &|| ()).await
    }

    /// [`HttpRag::ask_answers`], calling `done` as each answer comes (for a progress line).
    pub(crate) async fn ask_answers_reporting(
        &self,
        queries: &[(String, String)],
        corpus: Option<&Corpus>,
        done: &(dyn Fn() + Sync),
    ) -> Result<Answers> {
        // The first failure ends the run: the requests still in flight are dropped.
        let asked = futures_util::future::try_join_all(queries.iter().map(|(id, query)| async {
            let answer = self.ask(id, query).await?;
            done();
            Ok::<_, Error>(answer)
        }))
        .await?;
        let mut jsonl = String::new();
        for mut a in asked {
            self.read_offset_texts(&mut a.line, corpus)
                .map_err(|message| Error::Http {
                    endpoint: format!("POST {}", crate::redact::redact_url(&self.url)),
                    status: None,
                    message: format!("query `{}`: {message}", a.id),
                })?;
            jsonl.push_str(&a.line.to_string());
            jsonl.push('\n');
        }
        let source = format!("responses of {}", crate::redact::redact_url(&self.url));
        Answers::parse(&jsonl, source.into())
    }

    /// Gives each context of the answers line `line` that came as offsets alone the text at
    /// those offsets in `corpus`.
    fn read_offset_texts(
        &self,
        line: &mut Value,
        corpus: Option<&Corpus>,
    ) -> std::result::Result<(), String> {
        let Some(contexts) = line.get_mut("contexts").and_then(Value::as_array_mut) else {
            return Ok(());
        };
        for (i, context) in contexts.iter_mut().enumerate() {
            let Some(c) = context.as_object_mut().filter(|c| !c.contains_key("text")) else {
                continue;
            };
            let at = format!("`{}/{i}`", self.contexts);
            let (Some(doc), Some(start), Some(end)) = (
                c.get("doc_id").and_then(Value::as_str),
                c.get("start").and_then(Value::as_u64),
                c.get("end").and_then(Value::as_u64),
            ) else {
                return Err(format!(
                    "{at} has no text, and its `{}`, `{}` and `{}` are not a document and two \
                     character offsets ({})",
                    self.fields.doc_id,
                    self.fields.start,
                    self.fields.end,
                    Value::Object(c.clone())
                ));
            };
            let given = format!("{at} gives `{doc}` {start}..{end} without its text");
            let Some(corpus) = corpus else {
                return Err(format!("{given}, and no corpus was given to read it from"));
            };
            let Some(document) = corpus.get(doc) else {
                return Err(format!("{given}, and the corpus has no document `{doc}`"));
            };
            let text = usize::try_from(start)
                .ok()
                .zip(usize::try_from(end).ok())
                .and_then(|(start, end)| document.slice(start, end))
                .ok_or_else(|| {
                    format!(
                        "{given}, and those offsets are outside `{doc}` ({} characters)",
                        document.char_len()
                    )
                })?;
            c.insert("text".to_owned(), text.into());
        }
        Ok(())
    }

    /// Asks one question and gives the answer with its contexts, those given as text placed in
    /// `corpus` (or left unplaced without one): what an answering `#[rag_eval]` case returns
    /// (`async fn(&str) -> RagAnswer`). A case sees only the question, so the question is
    /// also the `id` sent.
    ///
    /// A context found ignoring case, whitespace or Unicode form keeps the service's text, which
    /// the judges read: the case scores its retrieval on the document's characters at the span
    /// it was found at. A context not found is judged and not span-scored.
    pub async fn answer(&self, query: &str, corpus: Option<&Corpus>) -> Result<RagAnswer> {
        let (mut answers, _) = self
            .ask_all(&[(query.to_owned(), query.to_owned())], corpus)
            .await?;
        let id = query.to_owned();
        Ok(answers
            .take(&id)
            .expect("the answers hold the one question asked"))
    }

    /// The response as an answers line, or what is wrong with it.
    fn read(&self, id: &str, response: &Value) -> std::result::Result<Value, String> {
        let excerpt = || {
            let s = response.to_string();
            let cut: String = s.chars().take(200).collect();
            if cut.len() < s.len() {
                format!("{cut}…")
            } else {
                cut
            }
        };
        let answer = match response.pointer(&self.answer) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(format!(
                    "`{}` in the response is {}, expected the answer text (response: {})",
                    self.answer,
                    kind(other),
                    excerpt()
                ))
            }
            None => {
                return Err(format!(
                    "the response has no `{}` (set `answer=` to the JSON pointer of the answer; response: {})",
                    self.answer,
                    excerpt()
                ))
            }
        };
        let items = match response.pointer(&self.contexts) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.clone(),
            Some(other) => {
                return Err(format!(
                    "`{}` in the response is {}, expected a list of contexts (response: {})",
                    self.contexts,
                    kind(other),
                    excerpt()
                ))
            }
        };
        let f = &self.fields;
        let contexts = items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(text) => Ok(json!({ "text": text })),
                Value::Object(o) => {
                    let mut c = Map::new();
                    for (ours, theirs) in [
                        ("text", &f.text),
                        ("doc_id", &f.doc_id),
                        ("start", &f.start),
                        ("end", &f.end),
                        ("score", &f.score),
                    ] {
                        if let Some(v) = o.get(theirs.as_str()).filter(|v| !v.is_null()) {
                            c.insert(ours.to_owned(), v.clone());
                        }
                    }
                    // Offsets alone: the text is read from the corpus (`read_offset_texts`).
                    let placed = ["doc_id", "start", "end"].iter().all(|k| c.contains_key(*k));
                    if !c.contains_key("text") && !placed {
                        return Err(format!(
                            "`{}/{i}` has no `{}` field (set `text=` to the field holding the context's text)",
                            self.contexts, f.text
                        ));
                    }
                    Ok(Value::Object(c))
                }
                other => Err(format!(
                    "`{}/{i}` is {}, expected the context's text or an object",
                    self.contexts,
                    kind(&other)
                )),
            })
            .collect::<std::result::Result<Vec<Value>, String>>()?;
        Ok(json!({"id": id, "answer": answer, "contexts": contexts}))
    }
}

/// `template` with `{id}` and `{query}` replaced in every string (keys included).
fn fill(template: &Value, id: &str, query: &str) -> Value {
    let text = |s: &str| s.replace("{id}", id).replace("{query}", query);
    match template {
        Value::String(s) => Value::String(text(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, id, query)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (text(k), fill(v, id, query)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_template_is_filled_inside_strings_so_quotes_stay_json() {
        let rag = HttpRag::from_spec(
            r#"http:url=http://127.0.0.1:1/ask,body="{\"input\":{\"question\":\"{query}\",\"tags\":[\"eval\",\"{id}\"]}}""#,
        )
        .unwrap();
        assert_eq!(
            rag.request("q1", r#"say "hi""#),
            json!({"input": {"question": "say \"hi\"", "tags": ["eval", "q1"]}})
        );
        let e = HttpRag::from_spec(r#"http:url=http://h/ask,body="{\"q\":1}""#).unwrap_err();
        assert!(e.to_string().contains("no `{query}` placeholder"), "{e}");
        let e = HttpRag::from_spec("http:url=http://h/ask,answer=answer").unwrap_err();
        assert!(
            e.to_string().contains("starts with `/`, e.g. `/answer`"),
            "{e}"
        );
    }

    #[test]
    fn contexts_are_read_with_the_configured_fields() {
        let rag = HttpRag::from_spec(
            "http:url=http://h/ask,answer=/output/text,contexts=/output/sources,text=page_content,doc_id=source",
        )
        .unwrap();
        let response = json!({"output": {"text": "In May.", "sources": [
            "Larkspur ships in May.",
            {"page_content": "needs Rust", "source": "b.md", "score": 0.4, "other": 1},
            {"page_content": "x", "source": null}
        ]}});
        assert_eq!(
            rag.read("q1", &response).unwrap(),
            json!({"id": "q1", "answer": "In May.", "contexts": [
                {"text": "Larkspur ships in May."},
                {"text": "needs Rust", "doc_id": "b.md", "score": 0.4},
                {"text": "x"}
            ]})
        );
        // No contexts at all: none (retrieval is then not measured).
        assert_eq!(
            rag.read("q1", &json!({"output": {"text": "a"}})).unwrap()["contexts"],
            json!([])
        );
        let e = rag.read("q1", &json!({"answer": "a"})).unwrap_err();
        assert!(e.starts_with("the response has no `/output/text`"), "{e}");
        let e = rag
            .read(
                "q1",
                &json!({"output": {"text": "a", "sources": [{"text": "a"}]}}),
            )
            .unwrap_err();
        assert!(
            e.starts_with("`/output/sources/0` has no `page_content` field"),
            "{e}"
        );
        let e = rag.read("q1", &json!({"output": {"text": 3}})).unwrap_err();
        assert!(
            e.starts_with("`/output/text` in the response is a number"),
            "{e}"
        );
    }

    #[test]
    fn headers_come_from_the_environment_and_the_spec_keeps_only_their_names() {
        // A variable only this test sets.
        std::env::set_var("RAG_EVAL_TEST_SERVICE_KEY", "s3cret");
        let rag =
            HttpRag::from_spec("http:url=http://h/ask,headers=X-Api-Key:RAG_EVAL_TEST_SERVICE_KEY")
                .unwrap();
        assert!(rag
            .spec()
            .contains("headers=X-Api-Key:RAG_EVAL_TEST_SERVICE_KEY"));
        assert!(!rag.spec().contains("s3cret") && !format!("{rag:?}").contains("s3cret"));
        let e =
            HttpRag::from_spec("http:url=http://h/ask,headers=X-Api-Key:RAG_EVAL_TEST_UNSET_VAR")
                .unwrap_err();
        assert!(
            e.to_string()
                .contains("environment variable `RAG_EVAL_TEST_UNSET_VAR` (for header `X-Api-Key`) is not set"),
            "{e}"
        );
    }
}
