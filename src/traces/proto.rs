//! Reading OTLP protobuf: an `ExportTraceServiceRequest` as OTLP/HTTP sends it by default
//! (`application/x-protobuf`) and as the OpenTelemetry Collector's `file` exporter writes it
//! with `format: proto` (each message preceded by its length in 4 bytes, big-endian).
//!
//! A message is decoded with prost into the OTLP trace messages below and written as the
//! OTLP JSON of the same request ([`json_line`]): ids in hex, 64-bit integers as strings,
//! `bytesValue` in base64, fields at their default value left out, as the OTLP/HTTP JSON
//! exporters write it. The JSON reader ([`super::otlp`]) then reads that line, so a protobuf
//! request gives exactly the spans, and the errors, of its JSON form; the receiver appends
//! the same line to its file, so a collected file is OTLP JSON whatever the exporter sent.
//!
//! The messages and their field numbers are those of `opentelemetry-proto`'s
//! `opentelemetry/proto/collector/trace/v1/trace_service.proto`, `trace/v1/trace.proto`,
//! `common/v1/common.proto` and `resource/v1/resource.proto`; every field of the trace
//! messages is kept (the written line loses nothing a JSON exporter would have sent). prost
//! refuses a message nested deeper than 100 and the JSON reader a line nested deeper than
//! 128, so no input can make the decoding or the conversion recurse without bound.

use super::otlp::MAX_LINE_BYTES;
use base64::Engine as _;
use camino::Utf8Path;
use prost::Message as _;
use serde_json::{Map, Value};

/// How the messages of a protobuf file are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Each message preceded by its length, 4 bytes big-endian: the Collector's `file`
    /// exporter with `format: proto`.
    LengthPrefixed,
    /// The whole file is one message: an OTLP/HTTP request's body, what protobuf's
    /// `SerializeToString` writes.
    Bare,
}

/// Whether a file is OTLP protobuf, from its name and its first byte (`None` when it is
/// empty): `Ok(None)` for OTLP JSON.
///
/// The rule: a first byte from `0x00` to `0x04` is a length prefix (no text starts with one,
/// and a message of at most 64 MiB has such a prefix), whatever the name; a file named
/// `*.pb` or `*.binpb` is protobuf, one bare message when its first byte is `0x0a` (the tag
/// of `resource_spans`), and no JSON is read under those names; any other file is JSON.
pub fn detect(path: &Utf8Path, first: Option<u8>) -> Result<Option<Framing>, String> {
    let named = matches!(path.extension(), Some("pb" | "binpb"));
    match first {
        Some(0x00..=0x04) => Ok(Some(Framing::LengthPrefixed)),
        Some(0x0a) if named => Ok(Some(Framing::Bare)),
        None if named => Ok(Some(Framing::LengthPrefixed)),
        Some(b) if named => Err(format!(
            "starts with byte {b:#04x}, which begins neither a 4-byte length prefix nor an \
             ExportTraceServiceRequest: not OTLP protobuf (a `.pb` or `.binpb` file is read as \
             protobuf)"
        )),
        _ => Ok(None),
    }
}

/// The OTLP JSON line of a protobuf `ExportTraceServiceRequest`, or what is wrong with it
/// (prost's message names the field path of a decoding error; an id of the wrong length is
/// named as the JSON reader names fields, `resourceSpans[0].scopeSpans[0].spans[2].traceId`).
pub fn json_line(message: &[u8]) -> Result<String, String> {
    let request = ExportTraceServiceRequest::decode(message)
        .map_err(|e| format!("not an OTLP protobuf ExportTraceServiceRequest: {e}"))?;
    Ok(request_json(request)?.to_string())
}

/// [`json_line`] for a request the receiver appends to its file: also refused when its JSON
/// is longer than a line the JSON reader reads ([`MAX_LINE_BYTES`]).
pub fn request_line(body: &[u8]) -> Result<String, String> {
    let line = json_line(body)?;
    if line.len() > MAX_LINE_BYTES {
        return Err(format!(
            "the request is {} bytes as OTLP JSON, more than the {} MiB a line of the file may hold: \
             send smaller batches",
            line.len(),
            MAX_LINE_BYTES >> 20
        ));
    }
    Ok(line)
}

// The OTLP trace messages, with the field numbers of opentelemetry-proto's .proto files.
// Enums are read as their numbers (protobuf enums are open: an unknown value is kept), as OTLP
// JSON writes them.

#[derive(Clone, PartialEq, prost::Message)]
struct ExportTraceServiceRequest {
    #[prost(message, repeated, tag = "1")]
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ResourceSpans {
    #[prost(message, optional, tag = "1")]
    resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    scope_spans: Vec<ScopeSpans>,
    #[prost(string, tag = "3")]
    schema_url: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Resource {
    #[prost(message, repeated, tag = "1")]
    attributes: Vec<KeyValue>,
    #[prost(uint32, tag = "2")]
    dropped_attributes_count: u32,
    #[prost(message, repeated, tag = "3")]
    entity_refs: Vec<EntityRef>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct EntityRef {
    #[prost(string, tag = "1")]
    schema_url: String,
    #[prost(string, tag = "2")]
    r#type: String,
    #[prost(string, repeated, tag = "3")]
    id_keys: Vec<String>,
    #[prost(string, repeated, tag = "4")]
    description_keys: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ScopeSpans {
    #[prost(message, optional, tag = "1")]
    scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    spans: Vec<Span>,
    #[prost(string, tag = "3")]
    schema_url: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct InstrumentationScope {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    version: String,
    #[prost(message, repeated, tag = "3")]
    attributes: Vec<KeyValue>,
    #[prost(uint32, tag = "4")]
    dropped_attributes_count: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Span {
    #[prost(bytes = "vec", tag = "1")]
    trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    span_id: Vec<u8>,
    #[prost(string, tag = "3")]
    trace_state: String,
    #[prost(bytes = "vec", tag = "4")]
    parent_span_id: Vec<u8>,
    #[prost(fixed32, tag = "16")]
    flags: u32,
    #[prost(string, tag = "5")]
    name: String,
    #[prost(int32, tag = "6")]
    kind: i32,
    #[prost(fixed64, tag = "7")]
    start_time_unix_nano: u64,
    #[prost(fixed64, tag = "8")]
    end_time_unix_nano: u64,
    #[prost(message, repeated, tag = "9")]
    attributes: Vec<KeyValue>,
    #[prost(uint32, tag = "10")]
    dropped_attributes_count: u32,
    #[prost(message, repeated, tag = "11")]
    events: Vec<Event>,
    #[prost(uint32, tag = "12")]
    dropped_events_count: u32,
    #[prost(message, repeated, tag = "13")]
    links: Vec<Link>,
    #[prost(uint32, tag = "14")]
    dropped_links_count: u32,
    #[prost(message, optional, tag = "15")]
    status: Option<Status>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Event {
    #[prost(fixed64, tag = "1")]
    time_unix_nano: u64,
    #[prost(string, tag = "2")]
    name: String,
    #[prost(message, repeated, tag = "3")]
    attributes: Vec<KeyValue>,
    #[prost(uint32, tag = "4")]
    dropped_attributes_count: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Link {
    #[prost(bytes = "vec", tag = "1")]
    trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    span_id: Vec<u8>,
    #[prost(string, tag = "3")]
    trace_state: String,
    #[prost(message, repeated, tag = "4")]
    attributes: Vec<KeyValue>,
    #[prost(uint32, tag = "5")]
    dropped_attributes_count: u32,
    #[prost(fixed32, tag = "6")]
    flags: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Status {
    #[prost(string, tag = "2")]
    message: String,
    #[prost(int32, tag = "3")]
    code: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct KeyValue {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(message, optional, tag = "2")]
    value: Option<AnyValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct AnyValue {
    #[prost(oneof = "Kind", tags = "1, 2, 3, 4, 5, 6, 7")]
    value: Option<Kind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Kind {
    #[prost(string, tag = "1")]
    StringValue(String),
    #[prost(bool, tag = "2")]
    BoolValue(bool),
    #[prost(int64, tag = "3")]
    IntValue(i64),
    #[prost(double, tag = "4")]
    DoubleValue(f64),
    #[prost(message, tag = "5")]
    ArrayValue(ArrayValue),
    #[prost(message, tag = "6")]
    KvlistValue(KeyValueList),
    #[prost(bytes = "vec", tag = "7")]
    BytesValue(Vec<u8>),
}

#[derive(Clone, PartialEq, prost::Message)]
struct ArrayValue {
    #[prost(message, repeated, tag = "1")]
    values: Vec<AnyValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct KeyValueList {
    #[prost(message, repeated, tag = "1")]
    values: Vec<KeyValue>,
}

// The conversion to OTLP JSON: protobuf's JSON mapping (lowerCamelCase names, fields at their
// default left out, 64-bit integers as strings, enums as numbers) with OTLP's exception, ids
// in hex.

/// An object of OTLP JSON being written.
#[derive(Default)]
struct Obj(Map<String, Value>);

impl Obj {
    fn put(&mut self, key: &str, value: impl Into<Value>) {
        self.0.insert(key.to_owned(), value.into());
    }
    fn text(&mut self, key: &str, s: String) {
        if !s.is_empty() {
            self.put(key, s);
        }
    }
    fn count(&mut self, key: &str, n: impl Into<i64>) {
        let n = n.into();
        if n != 0 {
            self.put(key, n);
        }
    }
    fn nanos(&mut self, key: &str, n: u64) {
        if n != 0 {
            self.put(key, n.to_string());
        }
    }
    fn list(&mut self, key: &str, values: Vec<Value>) {
        if !values.is_empty() {
            self.put(key, values);
        }
    }
    fn attributes(&mut self, key: &str, kvs: Vec<KeyValue>) {
        self.list(key, kvs.into_iter().map(key_value).collect());
    }
    /// An id in hex; `bytes` long, or empty (none).
    fn id(&mut self, key: &str, id: Vec<u8>, bytes: usize, at: &dyn Fn() -> String) -> Result<(), String> {
        if !id.is_empty() && id.len() != bytes {
            return Err(format!(
                "{}.{key}: is {} bytes, expected {bytes}",
                at(),
                id.len()
            ));
        }
        self.text(key, hex(&id));
        Ok(())
    }
}

impl From<Obj> for Value {
    fn from(o: Obj) -> Value {
        Value::Object(o.0)
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

fn request_json(request: ExportTraceServiceRequest) -> Result<Value, String> {
    let mut resource_spans = Vec::with_capacity(request.resource_spans.len());
    for (ri, rs) in request.resource_spans.into_iter().enumerate() {
        let mut o = Obj::default();
        if let Some(r) = rs.resource {
            let mut resource = Obj::default();
            resource.attributes("attributes", r.attributes);
            resource.count("droppedAttributesCount", r.dropped_attributes_count);
            let refs = r.entity_refs.into_iter().map(|e| {
                let mut o = Obj::default();
                o.text("schemaUrl", e.schema_url);
                o.text("type", e.r#type);
                o.list("idKeys", e.id_keys.into_iter().map(Value::from).collect());
                o.list(
                    "descriptionKeys",
                    e.description_keys.into_iter().map(Value::from).collect(),
                );
                o.into()
            });
            resource.list("entityRefs", refs.collect());
            o.put("resource", resource);
        }
        let mut scope_spans = Vec::with_capacity(rs.scope_spans.len());
        for (si, ss) in rs.scope_spans.into_iter().enumerate() {
            let mut s = Obj::default();
            if let Some(scope) = ss.scope {
                let mut sc = Obj::default();
                sc.text("name", scope.name);
                sc.text("version", scope.version);
                sc.attributes("attributes", scope.attributes);
                sc.count("droppedAttributesCount", scope.dropped_attributes_count);
                s.put("scope", sc);
            }
            let mut spans = Vec::with_capacity(ss.spans.len());
            for (pi, span) in ss.spans.into_iter().enumerate() {
                let at = || format!("resourceSpans[{ri}].scopeSpans[{si}].spans[{pi}]");
                spans.push(span_json(span, &at)?);
            }
            s.list("spans", spans);
            s.text("schemaUrl", ss.schema_url);
            scope_spans.push(s.into());
        }
        o.list("scopeSpans", scope_spans);
        o.text("schemaUrl", rs.schema_url);
        resource_spans.push(o.into());
    }
    let mut o = Obj::default();
    o.list("resourceSpans", resource_spans);
    Ok(o.into())
}

fn span_json(s: Span, at: &dyn Fn() -> String) -> Result<Value, String> {
    let mut o = Obj::default();
    o.id("traceId", s.trace_id, 16, at)?;
    o.id("spanId", s.span_id, 8, at)?;
    o.text("traceState", s.trace_state);
    o.id("parentSpanId", s.parent_span_id, 8, at)?;
    o.count("flags", s.flags);
    o.text("name", s.name);
    o.count("kind", s.kind);
    o.nanos("startTimeUnixNano", s.start_time_unix_nano);
    o.nanos("endTimeUnixNano", s.end_time_unix_nano);
    o.attributes("attributes", s.attributes);
    o.count("droppedAttributesCount", s.dropped_attributes_count);
    let events = s.events.into_iter().map(|e| {
        let mut o = Obj::default();
        o.nanos("timeUnixNano", e.time_unix_nano);
        o.text("name", e.name);
        o.attributes("attributes", e.attributes);
        o.count("droppedAttributesCount", e.dropped_attributes_count);
        o.into()
    });
    o.list("events", events.collect());
    o.count("droppedEventsCount", s.dropped_events_count);
    // Links are not read by the mappings: their ids are written as they are, checked by none.
    let links = s.links.into_iter().map(|l| {
        let mut o = Obj::default();
        o.text("traceId", hex(&l.trace_id));
        o.text("spanId", hex(&l.span_id));
        o.text("traceState", l.trace_state);
        o.attributes("attributes", l.attributes);
        o.count("droppedAttributesCount", l.dropped_attributes_count);
        o.count("flags", l.flags);
        o.into()
    });
    o.list("links", links.collect());
    o.count("droppedLinksCount", s.dropped_links_count);
    if let Some(status) = s.status {
        let mut st = Obj::default();
        st.text("message", status.message);
        st.count("code", status.code);
        o.put("status", st);
    }
    Ok(o.into())
}

fn key_value(kv: KeyValue) -> Value {
    let mut o = Obj::default();
    o.put("key", kv.key);
    if let Some(v) = kv.value {
        o.put("value", any_value(v));
    }
    o.into()
}

/// An `AnyValue` as OTLP JSON. prost's recursion limit bounds its nesting, so this recursion
/// is bounded too.
fn any_value(v: AnyValue) -> Value {
    let mut o = Obj::default();
    match v.value {
        None => {}
        Some(Kind::StringValue(s)) => o.put("stringValue", s),
        Some(Kind::BoolValue(b)) => o.put("boolValue", b),
        Some(Kind::IntValue(i)) => o.put("intValue", i.to_string()),
        // protobuf's JSON writes the values JSON has no number for as strings.
        Some(Kind::DoubleValue(f)) => match serde_json::Number::from_f64(f) {
            Some(n) => o.put("doubleValue", n),
            None if f.is_nan() => o.put("doubleValue", "NaN"),
            None if f > 0.0 => o.put("doubleValue", "Infinity"),
            None => o.put("doubleValue", "-Infinity"),
        },
        Some(Kind::ArrayValue(a)) => {
            let mut inner = Obj::default();
            inner.list("values", a.values.into_iter().map(any_value).collect());
            o.put("arrayValue", inner);
        }
        Some(Kind::KvlistValue(l)) => {
            let mut inner = Obj::default();
            inner.attributes("values", l.values);
            o.put("kvlistValue", inner);
        }
        Some(Kind::BytesValue(b)) => o.put(
            "bytesValue",
            base64::engine::general_purpose::STANDARD.encode(b),
        ),
    }
    o.into()
}
