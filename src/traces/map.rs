//! The mappings of the three conventions, joining traces with a dataset's rows, and what
//! they become: answers lines and conversations.

use super::otlp::Span;
use super::{Options, RetrievalRule};
use crate::answers::TextContext;
use crate::conversation::{Conversation, Role, ToolCall, Turn};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};

/// The conventions a trace's spans follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Convention {
    /// OpenInference (`openinference.span.kind`): Arize Phoenix, LlamaIndex, LangChain.
    #[serde(rename = "openinference")]
    OpenInference,
    /// The OpenTelemetry GenAI conventions (`gen_ai.operation.name`).
    GenAi,
    /// TruLens (`ai.observability.span_type`).
    #[serde(rename = "trulens")]
    TruLens,
}

/// What a span does, in any convention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// A call of a language model.
    Llm,
    /// A retrieval of documents.
    Retriever,
    /// A reranking of documents.
    Reranker,
    /// A tool's execution.
    Tool,
    /// Anything else the convention names (chain, agent, embedding, record root, …).
    Other,
}

/// One retrieved document, as a trace gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Document {
    /// Its rank in its list, from 1.
    pub rank: usize,
    /// Its id, when the trace gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Its text, when the trace gives it (OTel GenAI's documents may carry only id and score).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The retriever's or reranker's score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Its metadata (OpenInference's `document.metadata`, parsed when it is JSON).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// One retriever span (or a reranker's output) and its documents.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Retrieval {
    /// The span's name.
    pub span: String,
    /// Retriever or reranker.
    pub kind: SpanKind,
    /// The query it was asked, when the span says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The documents, best first.
    pub documents: Vec<Document>,
}

/// One reranker span: the documents it was given and those it returned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rerank {
    /// The span's name.
    pub span: String,
    /// The query it reranked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// The documents it was given, in their order.
    pub input: Vec<Document>,
    /// The documents it returned, best first.
    pub output: Vec<Document>,
}

/// One message of the answering LLM call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    /// `system`, `user`, `assistant`, `tool`, … as the trace says.
    pub role: String,
    /// Its text.
    pub content: String,
    /// The tools it asks to call.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

/// A tool call of a trace, with its result when the trace records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TracedToolCall {
    /// The call.
    #[serde(flatten)]
    pub call: ToolCall,
    /// What the tool returned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

/// What a trace says, the mapping made visible: one line of `rag-eval traces inspect --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MappedTrace {
    /// The trace id (32 hex digits).
    pub trace_id: String,
    /// The first line of the file holding one of its spans.
    pub line: usize,
    /// The earliest start of its spans, in nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// How many spans it has.
    pub spans: usize,
    /// The conventions its spans follow (none: no span is mapped).
    pub conventions: Vec<Convention>,
    /// The root span's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// The question asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The answer given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The value of the join attribute, when one is configured and the trace has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub join_value: Option<String>,
    /// The session (OpenInference's `session.id`, GenAI's `gen_ai.conversation.id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The documents the answer was written from under the retrieval rule, best first,
    /// ranked from 1.
    pub documents: Vec<Document>,
    /// Every retriever span and reranker output, in start order.
    pub retrievals: Vec<Retrieval>,
    /// Every reranker span, in start order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reranks: Vec<Rerank>,
    /// The answering LLM call's input and output messages.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Message>,
    /// The tool calls, in order: the tool spans', or the LLM's requests when there is no
    /// tool span.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<TracedToolCall>,
    /// What the mapping had to decide or leave out, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

const OI_KIND: &str = "openinference.span.kind";
const GENAI_OP: &str = "gen_ai.operation.name";
const TRULENS_TYPE: &str = "ai.observability.span_type";

/// A span's convention and kind, when it follows one.
fn classify(s: &Span) -> Option<(Convention, SpanKind)> {
    if let Some(k) = s.attributes.get(OI_KIND).and_then(Value::as_str) {
        let kind = match k.to_ascii_uppercase().as_str() {
            "LLM" => SpanKind::Llm,
            "RETRIEVER" => SpanKind::Retriever,
            "RERANKER" => SpanKind::Reranker,
            "TOOL" => SpanKind::Tool,
            _ => SpanKind::Other,
        };
        return Some((Convention::OpenInference, kind));
    }
    if let Some(op) = s.attributes.get(GENAI_OP).and_then(Value::as_str) {
        let kind = match op {
            "chat" | "text_completion" | "generate_content" => SpanKind::Llm,
            "retrieval" => SpanKind::Retriever,
            "execute_tool" => SpanKind::Tool,
            _ => SpanKind::Other,
        };
        return Some((Convention::GenAi, kind));
    }
    if let Some(t) = s.attributes.get(TRULENS_TYPE).and_then(Value::as_str) {
        let kind = match t {
            "generation" => SpanKind::Llm,
            "retrieval" => SpanKind::Retriever,
            "reranking" => SpanKind::Reranker,
            "tool_invocation" | "tool" => SpanKind::Tool,
            _ => SpanKind::Other,
        };
        return Some((Convention::TruLens, kind));
    }
    None
}

/// A value as text: a string as it is, anything else as JSON.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn attr<'a>(s: &'a Span, key: &str) -> Option<&'a Value> {
    s.attributes.get(key).filter(|v| !v.is_null())
}

/// A value that may be JSON written as a string: parsed when it is.
fn json(v: &Value) -> Value {
    match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| v.clone()),
        other => other.clone(),
    }
}

/// The attributes under `prefix.` un-flattened (`prefix.0.document.id` →
/// `[{"document":{"id":…}}]`): every object whose keys are all indices becomes a list in
/// index order (gaps closed, so a hostile index allocates nothing).
fn unflatten(s: &Span, prefix: &str) -> Vec<Value> {
    let dotted = format!("{prefix}.");
    let mut root = Map::new();
    for (key, value) in s.attributes.range(dotted.clone()..) {
        let Some(rest) = key.strip_prefix(&dotted) else {
            break;
        };
        let parts: Vec<&str> = rest.split('.').collect();
        insert(&mut root, &parts, value);
    }
    match listed(Value::Object(root)) {
        Value::Array(items) => items,
        _ => Vec::new(),
    }
}

/// Puts `value` at `path` under `at`; a key that is both a value and a prefix keeps the
/// value.
fn insert(at: &mut Map<String, Value>, path: &[&str], value: &Value) {
    match path {
        [] => {}
        [last] => {
            at.entry(last.to_string()).or_insert_with(|| value.clone());
        }
        [first, rest @ ..] => {
            let next = at
                .entry(first.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = next {
                insert(m, rest, value);
            }
        }
    }
}

/// Objects whose keys are all indices as lists, in index order, all the way down.
fn listed(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            if !m.is_empty() && m.keys().all(|k| k.parse::<u64>().is_ok()) {
                let mut items: Vec<(u64, Value)> = m
                    .into_iter()
                    .map(|(k, v)| (k.parse().unwrap_or(u64::MAX), listed(v)))
                    .collect();
                items.sort_by_key(|(i, _)| *i);
                Value::Array(items.into_iter().map(|(_, v)| v).collect())
            } else {
                Value::Object(m.into_iter().map(|(k, v)| (k, listed(v))).collect())
            }
        }
        other => other,
    }
}

fn as_score(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn ranked(mut docs: Vec<Document>) -> Vec<Document> {
    for (i, d) in docs.iter_mut().enumerate() {
        d.rank = i + 1;
    }
    docs
}

/// OpenInference documents: `[{"document":{"id","content","score","metadata"}}]`.
fn oi_documents(items: Vec<Value>) -> Vec<Document> {
    ranked(
        items
            .into_iter()
            .map(|item| {
                let d = item.get("document").cloned().unwrap_or(Value::Null);
                Document {
                    rank: 0,
                    id: d.get("id").and_then(text),
                    text: d.get("content").and_then(text),
                    score: as_score(d.get("score")),
                    metadata: d.get("metadata").map(json),
                }
            })
            .collect(),
    )
}

/// OTel GenAI's `gen_ai.retrieval.documents`: a list of objects with `id` and `score`
/// (structured, or as a JSON string), the text under `content` or `text` when recorded.
fn genai_documents(v: &Value) -> Vec<Document> {
    let Value::Array(items) = json(v) else {
        return Vec::new();
    };
    ranked(
        items
            .iter()
            .map(|d| Document {
                rank: 0,
                id: d.get("id").and_then(text),
                text: ["content", "text", "page_content"]
                    .iter()
                    .find_map(|k| d.get(*k).and_then(text)),
                score: as_score(d.get("score")),
                metadata: d.get("metadata").cloned(),
            })
            .collect(),
    )
}

/// TruLens' `retrieved_contexts`: a list of texts (a lone string is one context).
fn trulens_documents(v: &Value) -> Vec<Document> {
    let texts: Vec<String> = match json(v) {
        Value::Array(items) => items.iter().filter_map(text).collect(),
        Value::String(s) => vec![s],
        _ => Vec::new(),
    };
    ranked(
        texts
            .into_iter()
            .map(|t| Document {
                rank: 0,
                id: None,
                text: Some(t),
                score: None,
                metadata: None,
            })
            .collect(),
    )
}

/// The text of an `input.value`: JSON input (`input.mime_type` `application/json`, as
/// LangChain writes it) gives its `input`, `query` or `question` field.
fn oi_value(s: &Span, key: &str) -> Option<String> {
    let v = attr(s, &format!("{key}.value"))?;
    let is_json =
        attr(s, &format!("{key}.mime_type")).and_then(Value::as_str) == Some("application/json");
    if is_json {
        if let Value::Object(m) = json(v) {
            if let Some(t) = ["input", "query", "question", "output", "answer"]
                .iter()
                .find_map(|k| m.get(*k).and_then(Value::as_str))
            {
                return Some(t.to_owned());
            }
        }
    }
    text(v)
}

fn query_of(s: &Span) -> Option<String> {
    [
        "gen_ai.retrieval.query.text",
        "ai.observability.retrieval.query_text",
        "reranker.query",
    ]
    .iter()
    .find_map(|k| attr(s, k).and_then(text))
    .or_else(|| oi_value(s, "input"))
}

fn retrieval(s: &Span, c: Convention) -> Retrieval {
    let documents = match c {
        Convention::OpenInference => oi_documents(unflatten(s, "retrieval.documents")),
        Convention::GenAi => attr(s, "gen_ai.retrieval.documents")
            .map(genai_documents)
            .unwrap_or_default(),
        Convention::TruLens => attr(s, "ai.observability.retrieval.retrieved_contexts")
            .map(trulens_documents)
            .unwrap_or_default(),
    };
    Retrieval {
        span: s.name.clone(),
        kind: SpanKind::Retriever,
        query: query_of(s),
        documents,
    }
}

/// OpenInference messages: `[{"message":{"role","content","tool_calls":[{"tool_call":{"id","function":{"name","arguments"}}}]}}]`.
fn oi_messages(items: Vec<Value>) -> Vec<Message> {
    items
        .into_iter()
        .map(|item| {
            let m = item.get("message").cloned().unwrap_or(Value::Null);
            let calls = m
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(|calls| {
                    calls
                        .iter()
                        .filter_map(|c| {
                            let c = c.get("tool_call")?;
                            let f = c.get("function")?;
                            let name = f.get("name").and_then(text)?;
                            let args = f.get("arguments").map(json).unwrap_or(Value::Null);
                            let mut call = ToolCall::new(name, args);
                            call.id = c.get("id").and_then(text);
                            Some(call)
                        })
                        .collect()
                })
                .unwrap_or_default();
            Message {
                role: m.get("role").and_then(text).unwrap_or_default(),
                content: m.get("content").and_then(text).unwrap_or_default(),
                tool_calls: calls,
            }
        })
        .collect()
}

/// OTel GenAI messages: `[{"role","parts":[{"type":"text","content"},{"type":"tool_call","id","name","arguments"}]}]`.
fn genai_messages(v: &Value) -> Vec<Message> {
    let Value::Array(items) = json(v) else {
        return Vec::new();
    };
    items
        .iter()
        .map(|m| {
            let parts = m
                .get("parts")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let content: Vec<String> = parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("content").and_then(text))
                .collect();
            let tool_calls = parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("tool_call"))
                .filter_map(|p| {
                    let name = p.get("name").and_then(text)?;
                    let mut call =
                        ToolCall::new(name, p.get("arguments").map(json).unwrap_or(Value::Null));
                    call.id = p.get("id").and_then(text);
                    Some(call)
                })
                .collect();
            Message {
                role: m.get("role").and_then(text).unwrap_or_default(),
                content: content.join("\n"),
                tool_calls,
            }
        })
        .collect()
}

/// The input and output messages of an LLM span.
fn messages(s: &Span) -> (Vec<Message>, Vec<Message>) {
    let input = oi_messages(unflatten(s, "llm.input_messages"));
    let output = oi_messages(unflatten(s, "llm.output_messages"));
    if !input.is_empty() || !output.is_empty() {
        return (input, output);
    }
    (
        attr(s, "gen_ai.input.messages")
            .map(genai_messages)
            .unwrap_or_default(),
        attr(s, "gen_ai.output.messages")
            .map(genai_messages)
            .unwrap_or_default(),
    )
}

fn tool_call(s: &Span) -> TracedToolCall {
    let name = [
        "tool.name",
        "gen_ai.tool.name",
        "ai.observability.call.function",
    ]
    .iter()
    .find_map(|k| attr(s, k).and_then(text))
    .unwrap_or_else(|| s.name.clone());
    let args = ["tool.parameters", "gen_ai.tool.call.arguments"]
        .iter()
        .find_map(|k| attr(s, k).map(json))
        .unwrap_or_else(|| {
            // TruLens records each keyword argument as an attribute of its own.
            let prefix = "ai.observability.call.kwargs.";
            Value::Object(
                s.attributes
                    .iter()
                    .filter_map(|(k, v)| Some((k.strip_prefix(prefix)?.to_owned(), v.clone())))
                    .collect(),
            )
        });
    let mut call = ToolCall::new(name, args);
    call.id = ["tool_call.id", "gen_ai.tool.call.id"]
        .iter()
        .find_map(|k| attr(s, k).and_then(text));
    let result = ["gen_ai.tool.call.result", "ai.observability.call.return"]
        .iter()
        .find_map(|k| attr(s, k).and_then(text))
        .or_else(|| oi_value(s, "output"));
    TracedToolCall { call, result }
}

/// Maps one trace's spans.
pub(super) fn map(mut spans: Vec<Span>, options: &Options) -> MappedTrace {
    spans.sort_by(|a, b| (a.start_ns, a.line, &a.span_id).cmp(&(b.start_ns, b.line, &b.span_id)));
    let mut notes = Vec::new();
    // An exporter that retried sends a span twice: the first copy is kept.
    let before = spans.len();
    let mut seen = std::collections::HashSet::new();
    spans.retain(|s| seen.insert(s.span_id.clone()));
    if spans.len() < before {
        notes.push(format!(
            "{} span(s) repeated: the first copy kept",
            before - spans.len()
        ));
    }
    let ids: std::collections::HashSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    let root = spans
        .iter()
        .find(|s| s.parent_span_id.as_deref().is_none_or(|p| !ids.contains(p)));
    let classified: Vec<Option<(Convention, SpanKind)>> = spans.iter().map(classify).collect();
    let mut conventions: Vec<Convention> = classified.iter().flatten().map(|(c, _)| *c).collect();
    conventions.sort();
    conventions.dedup();

    let llm = spans
        .iter()
        .zip(&classified)
        .rev()
        .find(|(_, c)| matches!(c, Some((_, SpanKind::Llm))))
        .map(|(s, _)| s);
    let mut retrievals = Vec::new();
    let mut reranks = Vec::new();
    // Each retrieval with its span's start, for the rule.
    let mut starts = Vec::new();
    let mut tool_calls = Vec::new();
    for (s, c) in spans.iter().zip(&classified) {
        match c {
            Some((c, SpanKind::Retriever)) => {
                retrievals.push(retrieval(s, *c));
                starts.push(s.start_ns);
            }
            Some((_, SpanKind::Reranker)) => {
                let r = Rerank {
                    span: s.name.clone(),
                    query: query_of(s),
                    input: oi_documents(unflatten(s, "reranker.input_documents")),
                    output: oi_documents(unflatten(s, "reranker.output_documents")),
                };
                retrievals.push(Retrieval {
                    span: r.span.clone(),
                    kind: SpanKind::Reranker,
                    query: r.query.clone(),
                    documents: r.output.clone(),
                });
                starts.push(s.start_ns);
                reranks.push(r);
            }
            Some((_, SpanKind::Tool)) => tool_calls.push(tool_call(s)),
            _ => {}
        }
    }
    let documents = match options.retrievals {
        RetrievalRule::Last => {
            let before_llm = |i: &usize| llm.is_none_or(|l| starts[*i] <= l.start_ns);
            let chosen = (0..retrievals.len()).rev().find(before_llm);
            if retrievals.len() > 1 {
                notes.push(format!(
                    "{} retriever/reranker spans: the documents are those of `{}`, the last before the answering LLM span",
                    retrievals.len(),
                    chosen.map_or("none", |i| retrievals[i].span.as_str())
                ));
            }
            chosen
                .map(|i| retrievals[i].documents.clone())
                .unwrap_or_default()
        }
        RetrievalRule::All => {
            let mut seen = std::collections::HashSet::new();
            let docs: Vec<Document> = retrievals
                .iter()
                .filter(|r| r.kind == SpanKind::Retriever)
                .flat_map(|r| r.documents.iter())
                .filter(|d| seen.insert((d.id.clone(), d.text.clone())))
                .cloned()
                .collect();
            ranked(docs)
        }
    };
    let (input, output) = llm.map(messages).unwrap_or_default();
    if tool_calls.is_empty() {
        // No tool span: the calls the LLM asked for, in every LLM span.
        for (s, c) in spans.iter().zip(&classified) {
            if matches!(c, Some((_, SpanKind::Llm))) {
                let (_, out) = messages(s);
                tool_calls.extend(
                    out.into_iter()
                        .flat_map(|m| m.tool_calls)
                        .map(|call| TracedToolCall { call, result: None }),
                );
            }
        }
    }
    let on_any = |key: &str| -> Option<String> {
        root.and_then(|r| attr(r, key))
            .or_else(|| spans.iter().find_map(|s| attr(s, key)))
            .and_then(text)
    };
    let chosen_query = retrievals
        .iter()
        .rev()
        .find(|r| !r.documents.is_empty() && r.query.is_some())
        .and_then(|r| r.query.clone());
    let question = on_any("ai.observability.record_root.input")
        .or_else(|| root.and_then(|r| oi_value(r, "input")))
        .or(chosen_query)
        .or_else(|| {
            input
                .iter()
                .rev()
                .find(|m| m.role == "user")
                .map(|m| m.content.clone())
        });
    let answer = on_any("ai.observability.record_root.output")
        .or_else(|| root.and_then(|r| oi_value(r, "output")))
        .or_else(|| {
            output
                .iter()
                .rev()
                .find(|m| m.role == "assistant" && !m.content.is_empty())
                .map(|m| m.content.clone())
        })
        .or_else(|| llm.and_then(|l| oi_value(l, "output")));
    let without_text = documents.iter().filter(|d| d.text.is_none()).count();
    if without_text > 0 {
        notes.push(format!(
            "{without_text} document(s) without text: named, not scored"
        ));
    }
    let mut messages = input;
    messages.extend(output);
    MappedTrace {
        trace_id: spans
            .first()
            .map(|s| s.trace_id.clone())
            .unwrap_or_default(),
        line: spans.iter().map(|s| s.line).min().unwrap_or(0),
        start_ns: spans.first().map_or(0, |s| s.start_ns),
        spans: spans.len(),
        conventions,
        root: root.map(|r| r.name.clone()),
        question,
        answer,
        join_value: options.join_attribute.as_deref().and_then(on_any),
        session_id: on_any("session.id").or_else(|| on_any("gen_ai.conversation.id")),
        documents,
        retrievals,
        reranks,
        messages,
        tool_calls,
        notes,
    }
}

/// A trace or a row left unmatched, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unmatched {
    /// The trace id, or the row's id.
    pub id: String,
    /// The trace's first line (0 for a row).
    #[serde(skip_serializing_if = "is_zero")]
    pub line: usize,
    /// Why it is unmatched.
    pub why: String,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Traces matched with a dataset's rows.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Join {
    /// The matched pairs: a row's id and the index of its trace, in trace order.
    #[serde(skip)]
    pub matched: Vec<(String, usize)>,
    /// How many traces were matched.
    pub matched_traces: usize,
    /// The traces matching no row.
    pub unmatched_traces: Vec<Unmatched>,
    /// The rows no trace matched.
    pub unmatched_rows: Vec<Unmatched>,
}

/// Matches traces with rows (`(id, question)`): a trace with a join value by that value
/// (the row's id), one without by its question, exactly equal to one row's. A row matched
/// twice keeps its first trace; a question asked by several rows matches none of them.
pub fn join(traces: &[MappedTrace], rows: &[(&str, &str)], attribute: Option<&str>) -> Join {
    let ids: HashMap<&str, ()> = rows.iter().map(|(id, _)| (*id, ())).collect();
    let mut by_text: HashMap<&str, Vec<&str>> = HashMap::new();
    for (id, q) in rows {
        by_text.entry(*q).or_default().push(*id);
    }
    let mut taken: HashMap<String, usize> = HashMap::new();
    let mut j = Join::default();
    for (i, t) in traces.iter().enumerate() {
        let found = match (&t.join_value, &t.question) {
            (Some(v), _) if ids.contains_key(v.as_str()) => Ok(v.clone()),
            (Some(v), _) => Err(format!(
                "`{}` is `{v}`, no row's id",
                attribute.unwrap_or("join attribute")
            )),
            (None, Some(q)) => match by_text.get(q.as_str()).map(Vec::as_slice) {
                Some([id]) => Ok((*id).to_owned()),
                Some(several) => Err(format!(
                    "its question is asked by {} rows ({})",
                    several.len(),
                    several.join(", ")
                )),
                None => Err(format!("no row asks its question `{}`", short(q))),
            },
            (None, None) => Err(match attribute {
                Some(a) => format!("it has no `{a}` attribute and no question"),
                None => "it has no question".to_owned(),
            }),
        };
        let unmatched = |why| Unmatched {
            id: t.trace_id.clone(),
            line: t.line,
            why,
        };
        match found {
            Ok(id) => match taken.get(&id) {
                Some(&first) => j.unmatched_traces.push(unmatched(format!(
                    "row `{id}` is already answered by trace {} (line {})",
                    traces[first].trace_id, traces[first].line
                ))),
                None => {
                    taken.insert(id.clone(), i);
                    j.matched.push((id, i));
                }
            },
            Err(why) => j.unmatched_traces.push(unmatched(why)),
        }
    }
    j.matched_traces = j.matched.len();
    j.unmatched_rows = rows
        .iter()
        .filter(|(id, _)| !taken.contains_key(*id))
        .map(|(id, _)| Unmatched {
            id: (*id).to_owned(),
            line: 0,
            why: "no trace".to_owned(),
        })
        .collect();
    j
}

fn short(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// The matched traces as an answers file (`docs/reference/answers.md`'s lines): each row's
/// answer and its documents as contexts given as text, with their score, and with their id
/// as `doc_id` when `is_document` says it names a document of the corpus (then only that
/// document is searched). Documents without text are left out.
pub fn answers_jsonl(
    traces: &[MappedTrace],
    join: &Join,
    is_document: &dyn Fn(&str) -> bool,
) -> String {
    let mut out = String::new();
    for (id, i) in &join.matched {
        let t = &traces[*i];
        let contexts: Vec<Value> = t
            .documents
            .iter()
            .filter_map(|d| {
                let text = d.text.as_ref().filter(|t| !t.trim().is_empty())?;
                let mut c = serde_json::json!({ "text": text });
                if let Some(doc) = d.id.as_deref().filter(|id| is_document(id)) {
                    c["doc_id"] = doc.into();
                }
                if let Some(score) = d.score.filter(|s| s.is_finite()) {
                    c["score"] = score.into();
                }
                Some(c)
            })
            .collect();
        let line = serde_json::json!({
            "id": id,
            "answer": t.answer.as_deref().unwrap_or(""),
            "contexts": contexts,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// The traces of each session as a conversation, in start order: per trace the user's
/// question, an assistant turn per tool call with the tool's result, and the assistant's
/// answer with the documents as contexts given as text. Traces without a session are left
/// out. The conversation's id is the session's; its line, its first trace's.
pub fn conversations(traces: &[MappedTrace]) -> Vec<Conversation> {
    let mut sessions: BTreeMap<(u64, usize, &str), Vec<&MappedTrace>> = BTreeMap::new();
    let mut first: HashMap<&str, (u64, usize, &str)> = HashMap::new();
    for t in traces {
        let Some(s) = t.session_id.as_deref() else {
            continue;
        };
        let key = *first.entry(s).or_insert((t.start_ns, t.line, s));
        sessions.entry(key).or_default().push(t);
    }
    sessions
        .into_iter()
        .map(|((_, line, id), mut ts)| {
            ts.sort_by_key(|t| (t.start_ns, t.line));
            let mut turns = Vec::new();
            for t in ts {
                turns.push(Turn::new(
                    Role::User,
                    t.question.clone().unwrap_or_default(),
                ));
                for c in &t.tool_calls {
                    let mut call = Turn::new(Role::Assistant, "");
                    call.tool_calls.push(c.call.clone());
                    turns.push(call);
                    if let Some(result) = &c.result {
                        let mut tool = Turn::new(Role::Tool, result.clone());
                        tool.tool_call_id.clone_from(&c.call.id);
                        turns.push(tool);
                    }
                }
                let mut answer = Turn::new(Role::Assistant, t.answer.clone().unwrap_or_default());
                for d in &t.documents {
                    let Some(text) = &d.text else { continue };
                    let c = TextContext {
                        text: text.clone(),
                        doc_id: d.id.clone(),
                        score: d.score.map(|s| s as f32),
                    };
                    answer
                        .text_contexts
                        .push((answer.contexts.len(), c.clone()));
                    answer.contexts.push(crate::chunk::RetrievedChunk::new(
                        crate::answers::place::unplaced(&c),
                        c.score.unwrap_or(0.0),
                    ));
                }
                turns.push(answer);
            }
            Conversation {
                id: id.to_owned(),
                line,
                turns,
                reference_tool_calls: None,
                reference_outcome: None,
                reference_topics: Vec::new(),
                max_steps: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traces::read_str;
    use serde_json::json;

    const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";

    fn span(id: u8, parent: Option<u8>, start: u64, attrs: &[(&str, Value)]) -> Span {
        Span {
            trace_id: TRACE.into(),
            span_id: format!("{id:016x}"),
            parent_span_id: parent.map(|p| format!("{p:016x}")),
            name: format!("s{id}"),
            start_ns: start,
            end_ns: start + 1,
            attributes: attrs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
            line: 1,
        }
    }

    fn fixture(name: &str) -> Vec<MappedTrace> {
        let path = format!(
            "{}/tests/fixtures/traces/{name}.jsonl",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let options = Options {
            join_attribute: Some("query.id".into()),
            ..Options::default()
        };
        read_str(&text, path.into(), &options).unwrap()
    }

    #[test]
    fn the_three_conventions_written_by_the_sdk_map_to_the_same_run() {
        for (name, convention) in [
            ("openinference", Convention::OpenInference),
            ("genai", Convention::GenAi),
            ("trulens", Convention::TruLens),
        ] {
            let traces = fixture(name);
            assert_eq!(traces.len(), 3, "{name}");
            let seen: Vec<(Option<&str>, Option<&str>, Vec<&str>)> = traces
                .iter()
                .map(|t| {
                    assert_eq!(t.conventions, [convention], "{name}");
                    (
                        t.question.as_deref(),
                        t.answer.as_deref(),
                        t.documents
                            .iter()
                            .map(|d| d.text.as_deref().unwrap())
                            .collect(),
                    )
                })
                .collect();
            assert_eq!(
                seen,
                [
                    (
                        Some("When does Larkspur ship?"),
                        Some("Larkspur ships in May."),
                        vec!["Larkspur 3.4 ships in May.", "needs rust 1.80"]
                    ),
                    (
                        Some("What does Larkspur need to build?"),
                        Some("It needs Rust 1.80."),
                        vec!["It needs Rust 1.80 or newer", "The office closes at six."]
                    ),
                    (
                        Some("When does the office close?"),
                        Some("At six o'clock."),
                        vec!["The office closes at six."]
                    ),
                ],
                "{name}"
            );
        }
        // OpenInference: ids, scores, ranks and metadata; the reranker's input and output;
        // the join attribute and the session; the tool span's call with its id and result.
        let oi = fixture("openinference");
        let d = &oi[0].documents[1];
        assert_eq!(
            (d.rank, d.id.as_deref(), d.score),
            (2, Some("chunk-7"), Some(0.42))
        );
        assert_eq!(d.metadata, Some(json!({"source": "chunk-7"})));
        assert_eq!(oi[0].reranks[0].input.len(), 3);
        assert_eq!(oi[0].reranks[0].output.len(), 2);
        assert_eq!(oi[0].retrievals.len(), 3);
        assert_eq!(oi[0].join_value.as_deref(), Some("q1"));
        assert_eq!(oi[0].session_id.as_deref(), Some("s1"));
        let roles: Vec<&str> = oi[0].messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant"]);
        let call = &oi[2].tool_calls[0];
        assert_eq!(call.call.name, "clock");
        assert_eq!(call.call.id.as_deref(), Some("call_1"));
        assert_eq!(Value::Object(call.call.args.clone()), json!({"tz": "UTC"}));
        assert_eq!(call.result.as_deref(), Some("17:02"));
        // OTel GenAI: the conversation id, the tool span, ids and scores from the JSON list.
        let genai = fixture("genai");
        assert_eq!(genai[1].session_id.as_deref(), Some("s1"));
        assert_eq!(genai[2].tool_calls[0].result.as_deref(), Some("17:02"));
        assert_eq!(genai[0].documents[0].score, Some(0.91));
        assert_eq!(genai[0].documents[0].id.as_deref(), Some("larkspur.md"));
        // TruLens: texts alone.
        let trulens = fixture("trulens");
        assert_eq!(trulens[0].documents[0].id, None);
        assert_eq!(trulens[0].documents[0].score, None);
    }

    #[test]
    fn indexed_keys_are_unflattened_in_index_order_and_hostile_indices_allocate_nothing() {
        let kind = ("openinference.span.kind", json!("RETRIEVER"));
        let s = span(
            1,
            None,
            1,
            &[
                kind.clone(),
                ("retrieval.documents.10.document.content", json!("ten")),
                ("retrieval.documents.2.document.content", json!("two")),
                ("retrieval.documents.2.document.id", json!(7)),
                (
                    "retrieval.documents.18446744073709551615.document.content",
                    json!("last"),
                ),
            ],
        );
        let t = map(vec![s], &Options::default());
        let texts: Vec<(usize, &str)> = t
            .documents
            .iter()
            .map(|d| (d.rank, d.text.as_deref().unwrap()))
            .collect();
        assert_eq!(texts, [(1, "two"), (2, "ten"), (3, "last")]);
        assert_eq!(t.documents[0].id.as_deref(), Some("7"));
        // An index past u64 is no index: the list is not a list, and nothing is read.
        let s = span(
            1,
            None,
            1,
            &[
                kind,
                ("retrieval.documents.0.document.content", json!("a")),
                (
                    "retrieval.documents.99999999999999999999999.document.content",
                    json!("b"),
                ),
            ],
        );
        assert!(map(vec![s], &Options::default()).documents.is_empty());
    }

    fn retriever(id: u8, start: u64, texts: &[&str]) -> Span {
        let mut attrs = vec![("openinference.span.kind", json!("RETRIEVER"))];
        let keys: Vec<String> = (0..texts.len())
            .map(|i| format!("retrieval.documents.{i}.document.content"))
            .collect();
        for (k, t) in keys.iter().zip(texts) {
            attrs.push((k.as_str(), json!(t)));
        }
        span(id, Some(1), start, &attrs)
    }

    #[test]
    fn the_retrieval_rule_takes_the_last_before_the_answer_or_all_deduplicated() {
        let spans = vec![
            span(1, None, 0, &[]),
            retriever(2, 1, &["a", "b"]),
            retriever(3, 2, &["b", "c"]),
            span(4, Some(1), 3, &[("openinference.span.kind", json!("LLM"))]),
            // After the answer (an agent's later lookup): not what the answer used.
            retriever(5, 4, &["d"]),
        ];
        let texts = |t: &MappedTrace| -> Vec<String> {
            t.documents
                .iter()
                .map(|d| d.text.clone().unwrap())
                .collect()
        };
        let last = map(spans.clone(), &Options::default());
        assert_eq!(texts(&last), ["b", "c"]);
        assert!(last.notes[0].contains("those of `s3`"), "{:?}", last.notes);
        let all = map(
            spans.clone(),
            &Options {
                retrievals: RetrievalRule::All,
                ..Options::default()
            },
        );
        assert_eq!(texts(&all), ["a", "b", "c", "d"]);
        assert_eq!(all.documents[3].rank, 4);
        // No LLM span: the last retrieval of all. Spans out of order are sorted by start.
        let mut no_llm: Vec<Span> = spans.into_iter().filter(|s| s.name != "s4").collect();
        no_llm.reverse();
        assert_eq!(texts(&map(no_llm, &Options::default())), ["d"]);
    }

    fn trace(id: &str, join: Option<&str>, question: Option<&str>) -> MappedTrace {
        MappedTrace {
            trace_id: id.into(),
            line: 1,
            start_ns: 0,
            spans: 1,
            conventions: vec![],
            root: None,
            question: question.map(str::to_owned),
            answer: Some("a".into()),
            join_value: join.map(str::to_owned),
            session_id: None,
            documents: vec![],
            retrievals: vec![],
            reranks: vec![],
            messages: vec![],
            tool_calls: vec![],
            notes: vec![],
        }
    }

    #[test]
    fn joins_by_attribute_then_question_and_names_the_unmatched_on_both_sides() {
        let rows = [
            ("q1", "one?"),
            ("q2", "two?"),
            ("q3", "same?"),
            ("q4", "same?"),
            ("q5", "five?"),
        ];
        let traces = [
            trace("t1", Some("q1"), Some("asked differently")),
            trace("t2", None, Some("two?")),
            trace("t3", Some("q9"), Some("one?")),
            trace("t4", None, Some("same?")),
            trace("t5", None, Some("two?")),
            trace("t6", None, None),
        ];
        let j = join(&traces, &rows, Some("query.id"));
        assert_eq!(j.matched, [("q1".to_owned(), 0), ("q2".to_owned(), 1)]);
        let why: Vec<(&str, &str)> = j
            .unmatched_traces
            .iter()
            .map(|u| (u.id.as_str(), u.why.as_str()))
            .collect();
        assert_eq!(
            why,
            [
                ("t3", "`query.id` is `q9`, no row's id"),
                ("t4", "its question is asked by 2 rows (q3, q4)"),
                ("t5", "row `q2` is already answered by trace t2 (line 1)"),
                ("t6", "it has no `query.id` attribute and no question"),
            ]
        );
        let rows_left: Vec<&str> = j.unmatched_rows.iter().map(|u| u.id.as_str()).collect();
        assert_eq!(rows_left, ["q3", "q4", "q5"]);
        assert_eq!(j.matched_traces, 2);
    }

    #[test]
    fn a_sessions_traces_become_a_conversation_with_its_tool_calls() {
        let conversations = conversations(&fixture("openinference"));
        let ids: Vec<&str> = conversations.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["s1", "s2"]);
        let turns: Vec<(Role, &str)> = conversations[0]
            .turns
            .iter()
            .map(|t| (t.role, t.content.as_str()))
            .collect();
        assert_eq!(
            turns,
            [
                (Role::User, "When does Larkspur ship?"),
                (Role::Assistant, "Larkspur ships in May."),
                (Role::User, "What does Larkspur need to build?"),
                (Role::Assistant, "It needs Rust 1.80."),
            ]
        );
        assert_eq!(conversations[0].turns[1].text_contexts.len(), 2);
        let s2 = &conversations[1];
        let roles: Vec<Role> = s2.turns.iter().map(|t| t.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
        );
        assert_eq!(s2.tool_calls()[0].name, "clock");
        assert_eq!(s2.turns[2].tool_call_id.as_deref(), Some("call_1"));
        assert_eq!(s2.steps(), 2);
    }

    #[test]
    fn answers_lines_keep_corpus_ids_and_scores_and_leave_out_documents_without_text() {
        let mut t = trace("t1", Some("q1"), None);
        t.documents = vec![
            Document {
                rank: 1,
                id: Some("a.md".into()),
                text: Some("x".into()),
                score: Some(0.5),
                metadata: None,
            },
            Document {
                rank: 2,
                id: Some("vec-1".into()),
                text: Some("y".into()),
                score: None,
                metadata: None,
            },
            Document {
                rank: 3,
                id: Some("vec-2".into()),
                text: None,
                score: Some(0.1),
                metadata: None,
            },
        ];
        let traces = [t];
        let j = join(&traces, &[("q1", "?")], Some("query.id"));
        let line = answers_jsonl(&traces, &j, &|id| id == "a.md");
        assert_eq!(
            line,
            "{\"answer\":\"a\",\"contexts\":[{\"doc_id\":\"a.md\",\"score\":0.5,\"text\":\"x\"},{\"text\":\"y\"}],\"id\":\"q1\"}\n"
        );
    }
}
