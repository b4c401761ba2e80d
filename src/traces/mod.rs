//! Traces: what an instrumented RAG system's OpenTelemetry spans say it did — the question,
//! the documents it retrieved (ranked, with scores), what a reranker made of them, the LLM's
//! messages, the tools it called, the answer and the session — read from OTLP JSON
//! ([`otlp`]) or OTLP protobuf ([`proto`]) in any of three conventions: OpenInference, the OpenTelemetry GenAI
//! conventions and TruLens' (`docs/reference/traces.md` lists every attribute read).
//!
//! [`read`] groups the spans of a file by trace and maps each trace ([`MappedTrace`], what
//! `rag-eval traces inspect` prints); [`join`] matches traces with a dataset's rows, by an
//! attribute or by the question's text; [`answers_jsonl`] writes the matched traces as an
//! answers file, which is how `rag-eval score --traces` scores them exactly as
//! `score --answers` scores a file; [`conversations`] turns a session's traces into a
//! [`Conversation`](crate::conversation::Conversation).
//!
//! Memory: a trace is complete only when the file ends (spans of one trace may arrive in any
//! request, in any order), so every trace is held until then, but only as the mapped
//! fields of its spans ([`otlp::Span`]), never the raw JSON, and one line at a time.
//!
//! ```
//! use rag_eval::traces::{read_str, Options};
//! let line = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[
//!   {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"query",
//!    "startTimeUnixNano":"1","endTimeUnixNano":"9","attributes":[
//!     {"key":"openinference.span.kind","value":{"stringValue":"CHAIN"}},
//!     {"key":"input.value","value":{"stringValue":"When does Larkspur ship?"}},
//!     {"key":"output.value","value":{"stringValue":"In May."}}]},
//!   {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00f067aa0ba902b7",
//!    "parentSpanId":"b7ad6b7169203331","name":"retrieve","startTimeUnixNano":"2","attributes":[
//!     {"key":"openinference.span.kind","value":{"stringValue":"RETRIEVER"}},
//!     {"key":"retrieval.documents.0.document.content","value":{"stringValue":"ships in May"}},
//!     {"key":"retrieval.documents.0.document.score","value":{"doubleValue":0.9}}]}]}]}]}"#
//!     .replace('\n', "");
//! let traces = read_str(&line, "t.jsonl".into(), &Options::default())?;
//! let t = &traces[0];
//! assert_eq!(t.question.as_deref(), Some("When does Larkspur ship?"));
//! assert_eq!(t.answer.as_deref(), Some("In May."));
//! assert_eq!(t.documents[0].text.as_deref(), Some("ships in May"));
//! assert_eq!((t.documents[0].rank, t.documents[0].score), (1, Some(0.9)));
//! # Ok::<(), rag_eval::Error>(())
//! ```

pub mod collect;
mod map;
pub mod otlp;
pub mod proto;
pub mod receiver;

pub use map::{
    answers_jsonl, conversations, join, Convention, Document, Join, MappedTrace, Message, Rerank,
    Retrieval, SpanKind, TracedToolCall, Unmatched,
};

use crate::error::Result;
use camino::{Utf8Path, Utf8PathBuf};
use otlp::{Span, SpanReader};
use std::collections::HashMap;

/// Which retriever spans give a trace's retrieved documents when it has several.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalRule {
    /// The last retriever or reranker span that starts before the answering LLM span (the
    /// last LLM span of the trace), or the last one when there is no LLM span: what the
    /// answer was written from. A reranker's output counts as a retrieval.
    #[default]
    Last,
    /// Every retriever span's documents, in start order, the same document (same id and
    /// text) kept once, where it first appears; rerankers are not counted.
    All,
}

impl std::str::FromStr for RetrievalRule {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "last" => Ok(RetrievalRule::Last),
            "all" => Ok(RetrievalRule::All),
            other => Err(format!("unknown retrieval rule `{other}` (last, all)")),
        }
    }
}

/// How traces are read and mapped.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The attribute that names the dataset row a trace answers (e.g. `query.id`), read on the
    /// root span first, then on the earliest span that has it.
    pub join_attribute: Option<String>,
    /// Which retriever spans give the documents.
    pub retrievals: RetrievalRule,
}

/// Reads an OTLP JSON or protobuf file and maps every trace in it, ordered by start time.
pub fn read(path: &Utf8Path, options: &Options) -> Result<Vec<MappedTrace>> {
    let reader = SpanReader::open(path)?.keeping(options.join_attribute.as_deref());
    group(reader, options)
}

/// [`read`] over text; `path` names it in messages.
pub fn read_str(text: &str, path: Utf8PathBuf, options: &Options) -> Result<Vec<MappedTrace>> {
    let reader = SpanReader::new(text.as_bytes(), path).keeping(options.join_attribute.as_deref());
    group(reader, options)
}

fn group(spans: impl Iterator<Item = Result<Span>>, options: &Options) -> Result<Vec<MappedTrace>> {
    let mut by_trace: HashMap<String, Vec<Span>> = HashMap::new();
    for span in spans {
        let span = span?;
        by_trace
            .entry(span.trace_id.clone())
            .or_default()
            .push(span);
    }
    let mut traces: Vec<MappedTrace> = by_trace
        .into_values()
        .map(|spans| map::map(spans, options))
        .collect();
    traces
        .sort_by(|a, b| (a.start_ns, a.line, &a.trace_id).cmp(&(b.start_ns, b.line, &b.trace_id)));
    Ok(traces)
}
