//! Reading OTLP JSON: one `ExportTraceServiceRequest` a line, as the OpenTelemetry
//! Collector's file exporter writes it (`resourceSpans → scopeSpans → spans`, ids in hex,
//! 64-bit integers as strings, attribute values as `AnyValue` unions). [`SpanReader::open`]
//! reads OTLP protobuf files too ([`super::proto`] says which), one message at a time, each
//! turned into the JSON line of the same request.
//!
//! The reader keeps of each span only what the mappings read ([`Span`]): its ids, name,
//! times and the attributes of the three conventions (and the join attribute), never the raw
//! JSON; a line is held only while it is read, and a line longer than
//! [`MAX_LINE_BYTES`] is an error. Every mistake is an error naming the file, the line and
//! the field (`traces.jsonl:3: resourceSpans[0].scopeSpans[0].spans[2].traceId: …`).

use super::proto::{self, Framing};
use crate::error::{Error, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, Read as _};

/// The longest line read: a longer one is an error (a hostile or broken file cannot make the
/// reader hold more than this at once).
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// The attribute prefixes the mappings read; the rest of a span's attributes are dropped as
/// it is read.
const KEPT: &[&str] = &[
    "openinference.",
    "input.",
    "output.",
    "retrieval.",
    "reranker.",
    "llm.input_messages.",
    "llm.output_messages.",
    "tool.",
    "tool_call.",
    "session.id",
    "gen_ai.",
    "ai.observability.",
];

/// One span, with the attributes the mappings read.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// The trace id, 32 lowercase hex digits.
    pub trace_id: String,
    /// The span id, 16 lowercase hex digits.
    pub span_id: String,
    /// The parent span's id, when the span has one.
    pub parent_span_id: Option<String>,
    /// The span's name.
    pub name: String,
    /// Start, in nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// End, in nanoseconds since the Unix epoch.
    pub end_ns: u64,
    /// The kept attributes, by key, their values as JSON (`arrayValue` a list, `kvlistValue`
    /// an object, `intValue` a number).
    pub attributes: BTreeMap<String, Value>,
    /// The line of the file the span was read from (1-based); in a protobuf file, the number
    /// of its message.
    pub line: usize,
}

/// Reads the spans of an OTLP JSON file one line at a time, or of an OTLP protobuf file one
/// message at a time.
pub struct SpanReader<R> {
    reader: R,
    path: Utf8PathBuf,
    /// The line, or the message, read last (1-based).
    line: usize,
    /// The line read last, or the JSON line of the message read last.
    buf: Vec<u8>,
    /// How the messages of a protobuf file are laid out; `None` for JSON.
    framing: Option<Framing>,
    /// In a protobuf file: where the message read last starts, and the next one.
    start: u64,
    offset: u64,
    message: Vec<u8>,
    pending: std::vec::IntoIter<Span>,
    keep_also: Option<String>,
    done: bool,
}

impl SpanReader<std::io::BufReader<std::fs::File>> {
    /// Opens an OTLP JSON or OTLP protobuf file, which one told by its name and its first
    /// byte ([`proto::detect`]).
    pub fn open(path: &Utf8Path) -> Result<Self> {
        let io = |source| Error::Io {
            action: "read",
            path: path.to_owned(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let mut reader = std::io::BufReader::new(file);
        let first = loop {
            match reader.fill_buf() {
                Ok(b) => break b.first().copied(),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io(e)),
            }
        };
        let framing = proto::detect(path, first).map_err(|message| Error::Decode {
            path: path.to_owned(),
            index: 1,
            offset: 0,
            message,
        })?;
        let reader = SpanReader::new(reader, path.to_owned());
        Ok(match framing {
            Some(framing) => reader.protobuf(framing),
            None => reader,
        })
    }
}

impl<R: BufRead> SpanReader<R> {
    /// Reads from `reader`; `path` names it in messages.
    pub fn new(reader: R, path: Utf8PathBuf) -> Self {
        SpanReader {
            reader,
            path,
            line: 0,
            buf: Vec::new(),
            pending: Vec::new().into_iter(),
            keep_also: None,
            done: false,
            framing: None,
            start: 0,
            offset: 0,
            message: Vec::new(),
        }
    }

    /// Reads OTLP protobuf messages laid out as `framing` says, instead of JSON lines.
    pub fn protobuf(mut self, framing: Framing) -> Self {
        self.framing = Some(framing);
        self
    }

    /// Keeps the attribute `key` too (a join attribute outside the conventions).
    pub fn keeping(mut self, key: Option<&str>) -> Self {
        self.keep_also = key.map(str::to_owned);
        self
    }

    fn err(&self, message: String) -> Error {
        match self.framing {
            None => Error::Parse {
                path: self.path.clone(),
                line: self.line,
                message,
            },
            Some(_) => Error::Decode {
                path: self.path.clone(),
                index: self.line,
                offset: self.start,
                message,
            },
        }
    }

    fn io_err(&self, source: std::io::Error) -> Error {
        Error::Io {
            action: "read",
            path: self.path.clone(),
            source,
        }
    }

    /// Reads bytes into `message` until it holds `len` or the file ends; how many were read.
    fn read_up_to(&mut self, len: u64) -> Result<usize> {
        let before = self.message.len();
        let mut taken = (&mut self.reader).take(len);
        loop {
            match taken.read_to_end(&mut self.message) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io_err(e)),
            }
        }
        let read = self.message.len() - before;
        self.offset += read as u64;
        Ok(read)
    }

    /// Reads the next protobuf message and puts its JSON line in `buf`; false at the end.
    /// At most [`MAX_LINE_BYTES`] of a message are read, whatever its prefix says.
    fn next_message(&mut self, framing: Framing) -> Result<bool> {
        self.message.clear();
        self.line += 1;
        self.start = self.offset;
        match framing {
            Framing::LengthPrefixed => {
                let got = self.read_up_to(4)?;
                if got == 0 {
                    return Ok(false);
                }
                if got < 4 {
                    return Err(self.err(format!(
                        "the file ends {got} bytes into the message's 4-byte length prefix: truncated"
                    )));
                }
                let m = &self.message;
                let len = u32::from_be_bytes([m[0], m[1], m[2], m[3]]) as usize;
                if len > MAX_LINE_BYTES {
                    return Err(self.err(format!(
                        "the length prefix says {len} bytes, more than the {} MiB a message may \
                         have: not a length-prefixed OTLP protobuf file, or a message too long",
                        MAX_LINE_BYTES >> 20
                    )));
                }
                self.message.clear();
                let got = self.read_up_to(len as u64)?;
                if got < len {
                    return Err(self.err(format!(
                        "the message is {len} bytes but the file ends after {got}: truncated"
                    )));
                }
            }
            Framing::Bare => {
                if self.start > 0 {
                    return Ok(false);
                }
                let got = self.read_up_to(MAX_LINE_BYTES as u64 + 1)?;
                if got == 0 {
                    return Ok(false);
                }
                if got > MAX_LINE_BYTES {
                    return Err(self.err(format!(
                        "the file is one message longer than {} MiB: write it length-prefixed, \
                         as the Collector's file exporter does, in smaller messages",
                        MAX_LINE_BYTES >> 20
                    )));
                }
            }
        }
        let line = proto::json_line(&self.message).map_err(|m| self.err(m))?;
        self.message.clear();
        self.buf = line.into_bytes();
        Ok(true)
    }

    /// Reads the next line into `buf`, at most [`MAX_LINE_BYTES`]; false at the end.
    fn next_line(&mut self) -> Result<bool> {
        self.buf.clear();
        self.line += 1;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(Error::Io {
                        action: "read",
                        path: self.path.clone(),
                        source,
                    })
                }
            };
            if available.is_empty() {
                return Ok(!self.buf.is_empty());
            }
            let (take, end) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (available.len(), false),
            };
            if self.buf.len() + take > MAX_LINE_BYTES + 1 {
                return Err(self.err(format!(
                    "the line is longer than {} MiB: not one OTLP JSON request a line",
                    MAX_LINE_BYTES >> 20
                )));
            }
            self.buf.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if end {
                return Ok(true);
            }
        }
    }

    fn read_request(&mut self) -> Result<Vec<Span>> {
        let mut text: &[u8] = &self.buf;
        if self.line == 1 {
            text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
        }
        let value: Value = serde_json::from_slice(text).map_err(|e| {
            self.err(match self.framing {
                None => format!("{e} (each line is one OTLP JSON ExportTraceServiceRequest)"),
                // The line was written from a decoded message: only its depth can be refused.
                Some(_) => format!("its OTLP JSON nests too deep to be read: {e}"),
            })
        })?;
        let keep_also = self.keep_also.as_deref();
        spans_of(value, self.line, keep_also).map_err(|m| self.err(m))
    }
}

impl<R: BufRead> Iterator for SpanReader<R> {
    type Item = Result<Span>;

    fn next(&mut self) -> Option<Result<Span>> {
        loop {
            if let Some(span) = self.pending.next() {
                return Some(Ok(span));
            }
            if self.done {
                return None;
            }
            let next = match self.framing {
                None => self.next_line(),
                Some(framing) => self.next_message(framing),
            };
            match next {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match self.read_request() {
                Ok(spans) => self.pending = spans.into_iter(),
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// What kind of JSON value `v` is, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// An error at a field: its path relative to the value read (`.spans[2].traceId`, empty for
/// the value itself) and what is wrong. Paths are built only when something is wrong, so
/// reading a good file allocates none.
struct Wrong(String, String);

impl Wrong {
    fn new(message: String) -> Wrong {
        Wrong(String::new(), message)
    }

    /// The same error, `prefix` put before its path.
    fn under(mut self, prefix: impl std::fmt::Display) -> Wrong {
        self.0 = format!("{prefix}{}", self.0);
        self
    }

    fn message(self) -> String {
        match self.0.strip_prefix('.') {
            Some(path) => format!("{path}: {}", self.1),
            None if self.0.is_empty() => self.1,
            None => format!("{}: {}", self.0, self.1),
        }
    }
}

type Read<T> = std::result::Result<T, Wrong>;

/// The list under `key` of `obj` (missing or null: empty).
fn list(obj: &mut Map<String, Value>, key: &str) -> Read<Vec<Value>> {
    match obj.remove(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(v)) => Ok(v),
        Some(other) => Err(Wrong::new(format!("is {}, expected a list", kind(&other)))
            .under(format_args!(".{key}"))),
    }
}

fn object(v: Value) -> Read<Map<String, Value>> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(Wrong::new(format!(
            "is {}, expected an object",
            kind(&other)
        ))),
    }
}

/// The spans of one request.
fn spans_of(
    value: Value,
    line: usize,
    keep_also: Option<&str>,
) -> std::result::Result<Vec<Span>, String> {
    let Value::Object(mut request) = value else {
        return Err(format!(
            "is {}, expected an object with `resourceSpans` (an OTLP JSON ExportTraceServiceRequest)",
            kind(&value)
        ));
    };
    // `{}` is an empty export; an object with other fields alone is another kind of file (an
    // answers file, a dataset), which would otherwise read as no trace at all.
    if !request.is_empty()
        && !request.contains_key("resourceSpans")
        && !request.contains_key("resource_spans")
    {
        let fields: Vec<String> = request.keys().take(3).map(|k| format!("`{k}`")).collect();
        return Err(format!(
            "has no `resourceSpans`, only {}{}: not an OTLP JSON ExportTraceServiceRequest",
            fields.join(", "),
            if request.len() > 3 { ", …" } else { "" }
        ));
    }
    let mut spans = Vec::new();
    read_request(&mut request, line, keep_also, &mut spans).map_err(Wrong::message)?;
    Ok(spans)
}

fn read_request(
    request: &mut Map<String, Value>,
    line: usize,
    keep_also: Option<&str>,
    spans: &mut Vec<Span>,
) -> Read<()> {
    let key = match request.contains_key("resource_spans") {
        true => "resource_spans",
        false => "resourceSpans",
    };
    for (ri, rs) in list(request, key)?.into_iter().enumerate() {
        let at = |e: Wrong| e.under(format_args!(".resourceSpans[{ri}]"));
        let mut rs = object(rs).map_err(at)?;
        let key = match rs.contains_key("scope_spans") {
            true => "scope_spans",
            false => "scopeSpans",
        };
        for (si, ss) in list(&mut rs, key).map_err(at)?.into_iter().enumerate() {
            let at = |e: Wrong| at(e.under(format_args!(".scopeSpans[{si}]")));
            let mut ss = object(ss).map_err(at)?;
            for (pi, sp) in list(&mut ss, "spans").map_err(at)?.into_iter().enumerate() {
                let at = |e: Wrong| at(e.under(format_args!(".spans[{pi}]")));
                spans.push(
                    object(sp)
                        .and_then(|sp| span(sp, line, keep_also))
                        .map_err(at)?,
                );
            }
        }
    }
    Ok(())
}

/// A field of a span under its OTLP JSON name or its protobuf name.
fn field(obj: &mut Map<String, Value>, camel: &str, snake: &str) -> Option<Value> {
    obj.remove(camel).or_else(|| obj.remove(snake))
}

fn span(mut obj: Map<String, Value>, line: usize, keep_also: Option<&str>) -> Read<Span> {
    let missing = |name: &str| Wrong::new("missing".into()).under(format_args!(".{name}"));
    let trace_id = hex_id(field(&mut obj, "traceId", "trace_id"), 32, "traceId")?
        .ok_or_else(|| missing("traceId"))?;
    let span_id = hex_id(field(&mut obj, "spanId", "span_id"), 16, "spanId")?
        .ok_or_else(|| missing("spanId"))?;
    let parent_span_id = hex_id(
        field(&mut obj, "parentSpanId", "parent_span_id"),
        16,
        "parentSpanId",
    )?;
    let name = match obj.remove("name") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(
                Wrong::new(format!("is {}, expected a string", kind(&other))).under(".name"),
            )
        }
    };
    let start_ns = nanos(
        field(&mut obj, "startTimeUnixNano", "start_time_unix_nano"),
        "startTimeUnixNano",
    )?;
    let end_ns = nanos(
        field(&mut obj, "endTimeUnixNano", "end_time_unix_nano"),
        "endTimeUnixNano",
    )?;
    let mut attributes = BTreeMap::new();
    for (i, kv) in list(&mut obj, "attributes")?.into_iter().enumerate() {
        let (key, value) = key_value(kv).map_err(|e| e.under(format_args!(".attributes[{i}]")))?;
        let kept = KEPT.iter().any(|p| key.starts_with(p)) || keep_also == Some(key.as_str());
        if kept {
            attributes.insert(key, value);
        }
    }
    Ok(Span {
        trace_id,
        span_id,
        parent_span_id,
        name,
        start_ns,
        end_ns,
        attributes,
        line,
    })
}

/// An id in hex of `digits` digits; empty or missing is none (a root span's parent).
fn hex_id(v: Option<Value>, digits: usize, name: &str) -> Read<Option<String>> {
    let wrong = |m: String| Wrong::new(m).under(format_args!(".{name}"));
    let s = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s,
        Some(other) => return Err(wrong(format!("is {}, expected a hex string", kind(&other)))),
    };
    if s.is_empty() {
        return Ok(None);
    }
    if s.len() != digits || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(wrong(format!(
            "`{}` is not {digits} hex digits (OTLP JSON writes ids in hex, not base64)",
            short(&s)
        )));
    }
    Ok(Some(s.to_ascii_lowercase()))
}

/// A time in nanoseconds: a string of digits (OTLP JSON's int64) or a number; missing is 0.
fn nanos(v: Option<Value>, name: &str) -> Read<u64> {
    let wrong = |m: String| Wrong::new(m).under(format_args!(".{name}"));
    match v {
        None | Some(Value::Null) => Ok(0),
        Some(Value::String(s)) => s
            .parse()
            .map_err(|_| wrong(format!("`{}` is not a count of nanoseconds", short(&s)))),
        Some(Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| wrong(format!("{n} is not a count of nanoseconds"))),
        Some(other) => Err(wrong(format!(
            "is {}, expected a string of digits",
            kind(&other)
        ))),
    }
}

fn short(s: &str) -> String {
    let mut shown: String = s.chars().take(40).collect();
    if shown.len() < s.len() {
        shown.push('…');
    }
    shown
}

/// A `KeyValue`: `{"key": …, "value": AnyValue}`.
fn key_value(kv: Value) -> Read<(String, Value)> {
    let mut kv = object(kv)?;
    let key = match kv.remove("key") {
        Some(Value::String(s)) => s,
        None => return Err(Wrong::new("missing".into()).under(".key")),
        Some(other) => {
            return Err(Wrong::new(format!("is {}, expected a string", kind(&other))).under(".key"))
        }
    };
    let value = match kv.remove("value") {
        None | Some(Value::Null) => Value::Null,
        Some(v) => any_value(v).map_err(|e| e.under(".value"))?,
    };
    Ok((key, value))
}

/// An `AnyValue` as JSON. serde_json's own depth limit (128) bounds the nesting, so the
/// recursion here is bounded too.
fn any_value(v: Value) -> Read<Value> {
    let mut obj = object(v)?;
    let Some((name, inner)) = obj.iter_mut().next().map(|(k, v)| (k.clone(), v.take())) else {
        return Ok(Value::Null);
    };
    if obj.len() > 1 {
        return Err(Wrong::new(format!(
            "an AnyValue holds one of its kinds, this one {}",
            obj.len()
        )));
    }
    let wrong = |m: String| Wrong::new(m).under(format_args!(".{name}"));
    let expected = |what: &str, v: &Value| wrong(format!("is {}, expected {what}", kind(v)));
    match name.as_str() {
        "stringValue" | "string_value" | "bytesValue" | "bytes_value" => match inner {
            Value::String(_) => Ok(inner),
            other => Err(expected("a string", &other)),
        },
        "boolValue" | "bool_value" => match inner {
            Value::Bool(_) => Ok(inner),
            other => Err(expected("a boolean", &other)),
        },
        "intValue" | "int_value" => match inner {
            Value::String(s) => s
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| wrong(format!("`{}` is not a 64-bit integer", short(&s)))),
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(Value::Number(n)),
            other => Err(expected("an integer (as a string)", &other)),
        },
        "doubleValue" | "double_value" => match inner {
            Value::Number(_) => Ok(inner),
            // Protobuf's JSON writes NaN and the infinities as strings; they are no score.
            Value::String(s) if matches!(s.as_str(), "NaN" | "Infinity" | "-Infinity") => {
                Ok(Value::Null)
            }
            Value::String(s) => s
                .parse::<f64>()
                .ok()
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
                .ok_or_else(|| wrong(format!("`{}` is not a number", short(&s)))),
            other => Err(expected("a number", &other)),
        },
        "arrayValue" | "array_value" => {
            let mut inner = object(inner).map_err(|e| e.under(format_args!(".{name}")))?;
            let values = list(&mut inner, "values").map_err(|e| e.under(format_args!(".{name}")))?;
            values
                .into_iter()
                .enumerate()
                .map(|(i, v)| any_value(v).map_err(|e| e.under(format_args!(".{name}.values[{i}]"))))
                .collect::<Read<Vec<_>>>()
                .map(Value::Array)
        }
        "kvlistValue" | "kvlist_value" => {
            let mut inner = object(inner).map_err(|e| e.under(format_args!(".{name}")))?;
            let values = list(&mut inner, "values").map_err(|e| e.under(format_args!(".{name}")))?;
            let mut out = Map::new();
            for (i, kv) in values.into_iter().enumerate() {
                let (k, v) =
                    key_value(kv).map_err(|e| e.under(format_args!(".{name}.values[{i}]")))?;
                out.insert(k, v);
            }
            Ok(Value::Object(out))
        }
        other => Err(Wrong::new(format!(
            "unknown AnyValue kind `{}` (expected stringValue, boolValue, intValue, doubleValue, arrayValue, kvlistValue or bytesValue)",
            short(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<Span>> {
        SpanReader::new(text.as_bytes(), "t.jsonl".into()).collect()
    }

    const T: &str = "0123456789abcdef0123456789ABCDEF";

    fn line(attrs: &str) -> String {
        format!(
            r#"{{"resourceSpans":[{{"resource":{{}},"scopeSpans":[{{"scope":{{"name":"x"}},"spans":[{{"traceId":"{T}","spanId":"00000000000000aa","parentSpanId":"","name":"q","startTimeUnixNano":"1700000000000000001","endTimeUnixNano":"1700000000000000002","attributes":[{attrs}]}}]}}]}}]}}"#
        )
    }

    #[test]
    fn reads_spans_with_any_values_and_drops_unmapped_attributes() {
        let attrs = r#"{"key":"input.value","value":{"stringValue":"Why?"}},
            {"key":"http.method","value":{"stringValue":"GET"}},
            {"key":"gen_ai.usage.input_tokens","value":{"intValue":"12"}},
            {"key":"retrieval.documents.0.document.score","value":{"doubleValue":0.5}},
            {"key":"ai.observability.retrieval.retrieved_contexts","value":{"arrayValue":{"values":[{"stringValue":"a"},{"stringValue":"b"}]}}},
            {"key":"gen_ai.x","value":{"kvlistValue":{"values":[{"key":"k","value":{"boolValue":true}}]}}},
            {"key":"gen_ai.empty","value":{}}"#
            .replace('\n', "");
        let spans = read(&format!("\u{feff}{}\n\n", line(&attrs))).unwrap();
        assert_eq!(spans.len(), 1);
        let s = &spans[0];
        assert_eq!(s.trace_id, T.to_ascii_lowercase());
        assert_eq!(s.parent_span_id, None);
        assert_eq!(s.start_ns, 1_700_000_000_000_000_001);
        assert!(!s.attributes.contains_key("http.method"));
        assert_eq!(s.attributes["gen_ai.usage.input_tokens"], 12);
        assert_eq!(s.attributes["retrieval.documents.0.document.score"], 0.5);
        assert_eq!(
            s.attributes["ai.observability.retrieval.retrieved_contexts"],
            serde_json::json!(["a", "b"])
        );
        assert_eq!(s.attributes["gen_ai.x"], serde_json::json!({"k": true}));
        assert_eq!(s.attributes["gen_ai.empty"], Value::Null);
    }

    #[test]
    fn malformed_truncated_and_hostile_lines_name_file_line_and_field() {
        let ok = line("");
        let err = |text: &str| read(text).unwrap_err().to_string();
        // Truncated: the last line cut short.
        let e = err(&format!("{ok}\n{}", &ok[..ok.len() / 2]));
        assert!(e.starts_with("t.jsonl:2: EOF while parsing"), "{e}");
        let e = err("[1]");
        assert!(
            e.starts_with("t.jsonl:1: is a list, expected an object"),
            "{e}"
        );
        let e = err(&ok.replace(T, "AAECAwQFBgcICQoLDA0ODw=="));
        assert!(
            e.starts_with("t.jsonl:1: resourceSpans[0].scopeSpans[0].spans[0].traceId: `AAECAwQFBgcICQoLDA0ODw==` is not 32 hex digits"),
            "{e}"
        );
        let e = err(&ok.replace("\"1700000000000000001\"", "true"));
        assert!(
            e.contains("spans[0].startTimeUnixNano: is a boolean"),
            "{e}"
        );
        let e = err(&line(r#"{"key":"input.value","value":{"intValue":"x1"}}"#));
        assert!(
            e.contains("attributes[0].value.intValue: `x1` is not a 64-bit integer"),
            "{e}"
        );
        let e = err(&line(r#"{"key":"input.value","value":{"fooValue":1}}"#));
        assert!(e.contains("unknown AnyValue kind `fooValue`"), "{e}");
        let e = err(&line(r#"{"key":7,"value":{}}"#));
        assert!(e.contains("attributes[0].key: is a number"), "{e}");
        // Another kind of JSON lines file is refused, naming its fields; an empty export is not.
        let e = err(r#"{"id":"q1","answer":"May.","contexts":[],"x":1}"#);
        assert_eq!(
            e,
            "t.jsonl:1: has no `resourceSpans`, only `answer`, `contexts`, `id`, …: not an OTLP \
             JSON ExportTraceServiceRequest"
        );
        assert!(SpanReader::new(&b"{}\n"[..], "t.jsonl".into())
            .collect::<Result<Vec<_>>>()
            .unwrap()
            .is_empty());
        let e = err(r#"{"resourceSpans":{}}"#);
        assert_eq!(e, "t.jsonl:1: resourceSpans: is an object, expected a list");
        // Deep nesting: serde_json's depth limit, an error and no stack overflow.
        let deep = format!(
            "{}{}",
            "{\"arrayValue\":{\"values\":[".repeat(5000),
            "]}}".repeat(5000)
        );
        let e = err(&line(&format!(r#"{{"key":"input.value","value":{deep}}}"#)));
        assert!(e.starts_with("t.jsonl:1: recursion limit exceeded"), "{e}");
        // Not UTF-8.
        let e = read_bytes(b"{\"resourceSpans\":[\"\xff\"]}");
        assert!(e.starts_with("t.jsonl:1: invalid unicode"), "{e}");
    }

    fn read_bytes(b: &[u8]) -> String {
        SpanReader::new(b, "t.jsonl".into())
            .collect::<Result<Vec<_>>>()
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_line_longer_than_the_bound_is_an_error_not_an_allocation() {
        let ok = line("");
        let mut text = format!("{ok}\n{ok}\n\"");
        text.push_str(&"x".repeat(MAX_LINE_BYTES + 10));
        let e = read(&text).unwrap_err().to_string();
        assert_eq!(
            e,
            "t.jsonl:3: the line is longer than 64 MiB: not one OTLP JSON request a line"
        );
        // The spans before it were read.
        let spans: Vec<Result<Span>> = SpanReader::new(text.as_bytes(), "t.jsonl".into()).collect();
        assert_eq!(spans.iter().filter(|s| s.is_ok()).count(), 2);
    }
}
