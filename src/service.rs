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
//! In a conversation ([`HttpRag::next_turn`], `rag-eval eval --rag … --conversations`) the
//! service is asked for the next assistant turn. The body template then carries the
//! conversation: a string that is exactly `"{messages}"` becomes the JSON list of the turns so
//! far, `"{new_messages}"` the turns since the service last spoke (the new user message, or
//! the tool results it asked for), `{session_id}` the conversation's id and `{query}` the
//! last user message; without a `body`, `{"id": "{session_id}", "messages": "{messages}"}`
//! is sent. A turn of the list is `{"role", "content"}`, with `tool_calls` (`{id, name,
//! args}`) for an assistant turn that called tools and `tool_call_id` for a tool's result. The
//! response's `tool_calls` (JSON pointer, default `/tool_calls`) are the calls of the turn:
//! objects with `name` and `args` (an object, or a JSON string under `arguments`, or both
//! inside `function` as OpenAI writes them), an optional `id`, and a `result` when the service
//! ran the tool itself. Asked a single question, `{messages}` is that one user turn and
//! `{session_id}` the query's id.
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
//!     "http:url=http://127.0.0.1:8000/ask,answer=/output/text,contexts=/contexts,tool_calls=/tool_calls,\
//!      text=text,doc_id=doc_id,start=start,end=end,score=score,concurrency=4,timeout=60,retries=2"
//! );
//! # Ok::<(), rag_eval::Error>(())
//! ```

use crate::answers::{kind, Answers, Placement};
use crate::cache::Cache;
use crate::conversation::play::AssistantTurn;
use crate::conversation::{Role, ToolCall, Turn};
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
    tool_calls: String,
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
                if !["{query}", "{messages}", "{new_messages}"].iter().any(|p| t.contains(p)) {
                    return Err(Fault::key("body", format!(
                        "`body` has no `{{query}}`, `{{messages}}` or `{{new_messages}}` placeholder: the service would never see the question: `{t}`"
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
        let tool_calls = pointer("tool_calls", "/tool_calls")?;
        let mut printed = Spec::new("http").with("url", url.as_str());
        if let Some(t) = spec.text("body") {
            printed = printed.with("body", t);
        }
        printed = printed
            .with("answer", answer.as_str())
            .with("contexts", contexts.as_str())
            .with("tool_calls", tool_calls.as_str())
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
            tool_calls,
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
            Some(template) => {
                let messages = json!([{"role": "user", "content": query}]);
                fill(
                    template,
                    &Filling {
                        id,
                        query,
                        messages: &messages,
                        new: &messages,
                    },
                )
            }
        }
    }

    /// The request body for the next turn of conversation `session` after `turns`.
    fn conversation_request(&self, session: &str, turns: &[Turn]) -> Value {
        let query = turns
            .iter()
            .rev()
            .find(|t| t.role == Role::User)
            .map_or("", |t| t.content.as_str());
        let last_spoke = turns.iter().rposition(|t| t.role == Role::Assistant);
        let new = &turns[last_spoke.map_or(0, |i| i + 1)..];
        let list = |turns: &[Turn]| Value::Array(turns.iter().map(message).collect());
        let (messages, new) = (list(turns), list(new));
        let filling = Filling {
            id: session,
            query,
            messages: &messages,
            new: &new,
        };
        match &self.body {
            None => json!({"id": session, "messages": messages}),
            Some(template) => fill(template, &filling),
        }
    }

    /// Asks the service for the next assistant turn of conversation `session`, given the
    /// turns so far: its content, its tool calls (with their results when the service ran
    /// them) and its contexts, those given as text placed in `corpus` when there is one.
    pub async fn next_turn(
        &self,
        session: &str,
        turns: &[Turn],
        corpus: Option<&Corpus>,
    ) -> Result<AssistantTurn> {
        let body = self.conversation_request(session, turns);
        let response = self.respond_to(body).await?;
        let at = |message: String| Error::Http {
            endpoint: format!("POST {}", crate::redact::redact_url(&self.url)),
            status: None,
            message: format!(
                "conversation `{session}`, after turn {}: {message}",
                turns.len()
            ),
        };
        let (tool_calls, tool_results) = self.read_tool_calls(&response).map_err(at)?;
        // A turn that only calls tools may say nothing.
        let mut line = match response.pointer(&self.answer) {
            None | Some(Value::Null) if !tool_calls.is_empty() => {
                let contexts = self.read_contexts(&response).map_err(at)?;
                json!({"id": session, "answer": "", "contexts": contexts})
            }
            _ => self.read(session, &response).map_err(at)?,
        };
        self.read_offset_texts(&mut line, corpus).map_err(at)?;
        let source = format!("responses of {}", crate::redact::redact_url(&self.url));
        let mut answers = Answers::parse(&line.to_string(), source.into())?;
        if let Some(corpus) = corpus {
            answers.place_in(corpus);
        }
        let answer = answers.take(session).unwrap_or(RagAnswer {
            answer: String::new(),
            contexts: Vec::new(),
        });
        Ok(AssistantTurn {
            content: answer.answer,
            tool_calls,
            contexts: answer.contexts,
            tool_results,
        })
    }

    /// The response's tool calls, and their results when every call has one (the service
    /// ran its tools); what is wrong with them otherwise.
    fn read_tool_calls(
        &self,
        response: &Value,
    ) -> std::result::Result<(Vec<ToolCall>, Vec<String>), String> {
        let items = match response.pointer(&self.tool_calls) {
            None | Some(Value::Null) => return Ok((Vec::new(), Vec::new())),
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(format!(
                    "`{}` in the response is {}, expected a list of tool calls",
                    self.tool_calls,
                    kind(other)
                ))
            }
        };
        let (mut calls, mut results) = (Vec::new(), Vec::new());
        for (i, item) in items.iter().enumerate() {
            let at = format!("`{}/{i}`", self.tool_calls);
            let o = item
                .as_object()
                .ok_or_else(|| format!("{at} is {}, expected a tool call object", kind(item)))?;
            // OpenAI's shape keeps the name and the arguments inside `function`.
            let inner = o.get("function").and_then(Value::as_object).unwrap_or(o);
            let name = inner
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| format!("{at} has no `name`"))?;
            let args = match (inner.get("args"), inner.get("arguments")) {
                (Some(Value::Object(a)), _) | (None, Some(Value::Object(a))) => a.clone(),
                (None, Some(Value::String(text))) => match serde_json::from_str(text) {
                    Ok(Value::Object(a)) => a,
                    _ => return Err(format!("{at}: `arguments` is not a JSON object: `{text}`")),
                },
                (None, None) => Map::new(),
                (Some(other), _) | (None, Some(other)) => {
                    return Err(format!(
                        "{at}: the arguments are {}, expected an object",
                        kind(other)
                    ))
                }
            };
            let mut call = ToolCall::new(name, Value::Object(args));
            call.id = o.get("id").and_then(Value::as_str).map(str::to_owned);
            calls.push(call);
            match o.get("result") {
                Some(Value::String(r)) => results.push(r.clone()),
                Some(Value::Null) | None => {}
                Some(other) => results.push(other.to_string()),
            }
        }
        if !results.is_empty() && results.len() != calls.len() {
            return Err(format!(
                "{} of the {} tool calls in `{}` have a `result`: give every call its result (the service ran its tools) or none (the recorded results are used)",
                results.len(),
                calls.len(),
                self.tool_calls
            ));
        }
        Ok((calls, results))
    }

    /// Asks the service one question: its response, from the cache when it holds one.
    async fn respond(&self, id: &str, query: &str) -> Result<Value> {
        self.respond_to(self.request(id, query)).await
    }

    /// Sends `body`: the service's response, from the cache when it holds one.
    async fn respond_to(&self, body: Value) -> Result<Value> {
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
        let excerpt = || excerpt(response);
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
        let contexts = self.read_contexts(response)?;
        Ok(json!({"id": id, "answer": answer, "contexts": contexts}))
    }

    /// The response's contexts as an answers line holds them, or what is wrong with them.
    fn read_contexts(&self, response: &Value) -> std::result::Result<Vec<Value>, String> {
        let excerpt = || excerpt(response);
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
        Ok(contexts)
    }
}

/// The start of `response` for a message: its first 200 characters.
fn excerpt(response: &Value) -> String {
    let s = response.to_string();
    let cut: String = s.chars().take(200).collect();
    if cut.len() < s.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// What a body template's placeholders stand for.
struct Filling<'a> {
    /// `{id}` and `{session_id}`.
    id: &'a str,
    /// `{query}`: the question, the last user message.
    query: &'a str,
    /// `"{messages}"`: the turns so far.
    messages: &'a Value,
    /// `"{new_messages}"`: the turns since the service last spoke.
    new: &'a Value,
}

/// One turn as the service is sent it: `role`, `content`, and an assistant turn's
/// `tool_calls` or a tool turn's `tool_call_id`.
fn message(t: &Turn) -> Value {
    let mut m = json!({"role": t.role.as_str(), "content": t.content});
    if !t.tool_calls.is_empty() {
        m["tool_calls"] = json!(t.tool_calls);
    }
    if let Some(id) = &t.tool_call_id {
        m["tool_call_id"] = json!(id);
    }
    m
}

/// `template` with `{id}`, `{session_id}` and `{query}` replaced in every string (keys
/// included), and a string that is exactly `"{messages}"` or `"{new_messages}"` replaced by
/// the list it names.
fn fill(template: &Value, f: &Filling) -> Value {
    let text = |s: &str| {
        s.replace("{session_id}", f.id)
            .replace("{id}", f.id)
            .replace("{query}", f.query)
    };
    match template {
        Value::String(s) if s == "{messages}" => f.messages.clone(),
        Value::String(s) if s == "{new_messages}" => f.new.clone(),
        Value::String(s) => Value::String(text(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, f)).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (text(k), fill(v, f))).collect()),
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
        assert!(
            e.to_string()
                .contains("no `{query}`, `{messages}` or `{new_messages}` placeholder"),
            "{e}"
        );
        let e = HttpRag::from_spec("http:url=http://h/ask,answer=answer").unwrap_err();
        assert!(
            e.to_string().contains("starts with `/`, e.g. `/answer`"),
            "{e}"
        );
    }

    #[test]
    fn a_conversation_body_carries_the_history_and_tool_calls_are_read_where_the_spec_says() {
        let rag = HttpRag::from_spec(
            r#"http:url=http://127.0.0.1:1/chat,tool_calls=/out/calls,body="{\"s\":\"{session_id}\",\"m\":\"{messages}\",\"q\":\"{query}\"}""#,
        )
        .unwrap();
        assert!(
            rag.spec().contains(",tool_calls=/out/calls,"),
            "{}",
            rag.spec()
        );
        let turns = [
            Turn::new(Role::User, "hi"),
            Turn::new(Role::Assistant, "hello"),
        ];
        assert_eq!(
            rag.conversation_request("c1", &turns[..1]),
            json!({"s": "c1", "m": [{"role": "user", "content": "hi"}], "q": "hi"})
        );
        // Asked a single question, the history is that question.
        assert_eq!(
            rag.request("q1", "why?"),
            json!({"s": "q1", "m": [{"role": "user", "content": "why?"}], "q": "why?"})
        );
        let calls = json!({"out": {"calls": [
            {"id": "a", "name": "search", "args": {"q": "x"}, "result": "found"},
            {"function": {"name": "calc", "arguments": "{\"e\":\"1+1\"}"}, "result": 2}]}});
        let (read, results) = rag.read_tool_calls(&calls).unwrap();
        assert_eq!(
            (
                read[0].id.as_deref(),
                read[0].name.as_str(),
                read[1].name.as_str()
            ),
            (Some("a"), "search", "calc")
        );
        assert_eq!(read[1].args, *json!({"e": "1+1"}).as_object().unwrap());
        assert_eq!(results, ["found", "2"]);
        let half = json!({"out": {"calls": [{"name": "a", "result": "r"}, {"name": "b"}]}});
        let e = rag.read_tool_calls(&half).unwrap_err();
        assert!(
            e.starts_with("1 of the 2 tool calls in `/out/calls` have a `result`"),
            "{e}"
        );
        let e = rag
            .read_tool_calls(&json!({"out": {"calls": [{"name": "a", "arguments": "[1]"}]}}))
            .unwrap_err();
        assert!(
            e.contains("`/out/calls/0`: `arguments` is not a JSON object: `[1]`"),
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
