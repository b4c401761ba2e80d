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
//! `common/v1/common.proto` and `resource/v1/resource.proto` (open-telemetry/opentelemetry-proto
//! at ac2c4b5); every field of the trace
//! messages is kept (the written line loses nothing a JSON exporter would have sent). prost
//! refuses a message nested deeper than 100 and the JSON reader a line nested deeper than
//! 128, so no input can make the decoding or the conversion recurse without bound.

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

/// `AnyValue.value`: `string_value` (1) to `bytes_value` (7). Its `string_value_strindex` (8)
/// indexes a profile's string table, which traces do not have: skipped as an unknown field.
#[derive(Clone, PartialEq, prost::Oneof)]
enum Kind {
    #[prost(string, tag = "1")]
    String(String),
    #[prost(bool, tag = "2")]
    Bool(bool),
    #[prost(int64, tag = "3")]
    Int(i64),
    #[prost(double, tag = "4")]
    Double(f64),
    #[prost(message, tag = "5")]
    Array(ArrayValue),
    #[prost(message, tag = "6")]
    Kvlist(KeyValueList),
    #[prost(bytes = "vec", tag = "7")]
    Bytes(Vec<u8>),
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
    fn id(
        &mut self,
        key: &str,
        id: Vec<u8>,
        bytes: usize,
        at: &dyn Fn() -> String,
    ) -> Result<(), String> {
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
        Some(Kind::String(s)) => o.put("stringValue", s),
        Some(Kind::Bool(b)) => o.put("boolValue", b),
        Some(Kind::Int(i)) => o.put("intValue", i.to_string()),
        // protobuf's JSON writes the values JSON has no number for as strings.
        Some(Kind::Double(f)) => match serde_json::Number::from_f64(f) {
            Some(n) => o.put("doubleValue", n),
            None if f.is_nan() => o.put("doubleValue", "NaN"),
            None if f > 0.0 => o.put("doubleValue", "Infinity"),
            None => o.put("doubleValue", "-Infinity"),
        },
        Some(Kind::Array(a)) => {
            let mut inner = Obj::default();
            inner.list("values", a.values.into_iter().map(any_value).collect());
            o.put("arrayValue", inner);
        }
        Some(Kind::Kvlist(l)) => {
            let mut inner = Obj::default();
            inner.attributes("values", l.values);
            o.put("kvlistValue", inner);
        }
        Some(Kind::Bytes(b)) => o.put(
            "bytesValue",
            base64::engine::general_purpose::STANDARD.encode(b),
        ),
    }
    o.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traces::otlp::{Span as Read, SpanReader, MAX_LINE_BYTES};

    fn value(kind: Kind) -> Option<AnyValue> {
        Some(AnyValue { value: Some(kind) })
    }

    fn kv(key: &str, v: Option<AnyValue>) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: v,
        }
    }

    fn array(values: Vec<Option<AnyValue>>) -> Kind {
        Kind::Array(ArrayValue {
            values: values.into_iter().map(Option::unwrap_or_default).collect(),
        })
    }

    /// A request of one span with `attributes`, every other field of the trace messages set.
    fn request(attributes: Vec<KeyValue>) -> ExportTraceServiceRequest {
        let span = Span {
            trace_id: (0..16).collect(),
            span_id: vec![0, 0, 0, 0, 0, 0, 0, 0xaa],
            trace_state: "k=v".into(),
            parent_span_id: Vec::new(),
            flags: 0x101,
            name: "q".into(),
            kind: 2,
            start_time_unix_nano: 1_700_000_000_000_000_001,
            end_time_unix_nano: 1_700_000_000_000_000_002,
            attributes,
            dropped_attributes_count: 1,
            events: vec![Event {
                time_unix_nano: 5,
                name: "e".into(),
                attributes: vec![kv("x", value(Kind::Int(1)))],
                dropped_attributes_count: 0,
            }],
            dropped_events_count: 2,
            links: vec![Link {
                trace_id: vec![0xff; 16],
                span_id: vec![1; 8],
                trace_state: String::new(),
                attributes: Vec::new(),
                dropped_attributes_count: 0,
                flags: 1,
            }],
            dropped_links_count: 3,
            status: Some(Status {
                message: "bad".into(),
                code: 2,
            }),
        };
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![kv("service.name", value(Kind::String("s".into())))],
                    dropped_attributes_count: 0,
                    entity_refs: Vec::new(),
                }),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: "x".into(),
                        version: "1".into(),
                        attributes: Vec::new(),
                        dropped_attributes_count: 0,
                    }),
                    spans: vec![span],
                    schema_url: String::new(),
                }],
                schema_url: "https://opentelemetry.io/schemas/1.26.0".into(),
            }],
        }
    }

    /// Messages laid out as the Collector's file exporter writes them.
    fn framed(messages: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for m in messages {
            out.extend_from_slice(&(m.len() as u32).to_be_bytes());
            out.extend_from_slice(m);
        }
        out
    }

    fn read(bytes: &[u8], framing: Framing) -> crate::Result<Vec<Read>> {
        SpanReader::new(bytes, "t.pb".into())
            .protobuf(framing)
            .collect()
    }

    fn err(bytes: &[u8]) -> String {
        read(bytes, Framing::LengthPrefixed)
            .unwrap_err()
            .to_string()
    }

    fn every_kind() -> Vec<KeyValue> {
        vec![
            kv("input.value", value(Kind::String("Why?".into()))),
            kv("http.method", value(Kind::String("GET".into()))),
            kv("gen_ai.b", value(Kind::Bool(false))),
            kv("gen_ai.i", value(Kind::Int(-12))),
            kv("gen_ai.big", value(Kind::Int(i64::MAX))),
            kv("gen_ai.d", value(Kind::Double(0.5))),
            kv("gen_ai.nan", value(Kind::Double(f64::NAN))),
            kv("gen_ai.inf", value(Kind::Double(f64::NEG_INFINITY))),
            kv(
                "gen_ai.a",
                value(array(vec![
                    value(Kind::String("a".into())),
                    value(Kind::Int(1)),
                    value(array(vec![])),
                ])),
            ),
            kv(
                "gen_ai.kv",
                value(Kind::Kvlist(KeyValueList {
                    values: vec![kv("k", value(Kind::Bool(true))), kv("n", None)],
                })),
            ),
            kv("gen_ai.bytes", value(Kind::Bytes(vec![0, 1, 2, 255]))),
            kv("gen_ai.empty", Some(AnyValue { value: None })),
            kv("gen_ai.none", None),
        ]
    }

    #[test]
    fn a_message_reads_as_the_spans_of_its_json_form_and_its_json_keeps_every_field() {
        let message = request(every_kind()).encode_to_vec();
        let json: Value = serde_json::from_str(&json_line(&message).unwrap()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"resourceSpans": [{
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]},
                "scopeSpans": [{"scope": {"name": "x", "version": "1"}, "spans": [{
                    "traceId": "000102030405060708090a0b0c0d0e0f",
                    "spanId": "00000000000000aa",
                    "traceState": "k=v",
                    "flags": 257,
                    "name": "q",
                    "kind": 2,
                    "startTimeUnixNano": "1700000000000000001",
                    "endTimeUnixNano": "1700000000000000002",
                    "attributes": [
                        {"key": "input.value", "value": {"stringValue": "Why?"}},
                        {"key": "http.method", "value": {"stringValue": "GET"}},
                        {"key": "gen_ai.b", "value": {"boolValue": false}},
                        {"key": "gen_ai.i", "value": {"intValue": "-12"}},
                        {"key": "gen_ai.big", "value": {"intValue": "9223372036854775807"}},
                        {"key": "gen_ai.d", "value": {"doubleValue": 0.5}},
                        {"key": "gen_ai.nan", "value": {"doubleValue": "NaN"}},
                        {"key": "gen_ai.inf", "value": {"doubleValue": "-Infinity"}},
                        {"key": "gen_ai.a", "value": {"arrayValue": {"values": [
                            {"stringValue": "a"}, {"intValue": "1"}, {"arrayValue": {}}]}}},
                        {"key": "gen_ai.kv", "value": {"kvlistValue": {"values": [
                            {"key": "k", "value": {"boolValue": true}}, {"key": "n"}]}}},
                        {"key": "gen_ai.bytes", "value": {"bytesValue": "AAEC/w=="}},
                        {"key": "gen_ai.empty", "value": {}},
                        {"key": "gen_ai.none"}
                    ],
                    "droppedAttributesCount": 1,
                    "events": [{"timeUnixNano": "5", "name": "e",
                                "attributes": [{"key": "x", "value": {"intValue": "1"}}]}],
                    "droppedEventsCount": 2,
                    "links": [{"traceId": "ffffffffffffffffffffffffffffffff",
                               "spanId": "0101010101010101", "flags": 1}],
                    "droppedLinksCount": 3,
                    "status": {"message": "bad", "code": 2}
                }]}],
                "schemaUrl": "https://opentelemetry.io/schemas/1.26.0"
            }]})
        );
        // The spans read from the protobuf file are those read from the JSON written by hand.
        let from_proto = read(
            &framed(std::slice::from_ref(&message)),
            Framing::LengthPrefixed,
        )
        .unwrap();
        let from_json: Vec<Read> = SpanReader::new(json.to_string().as_bytes(), "t.jsonl".into())
            .collect::<crate::Result<_>>()
            .unwrap();
        assert_eq!(from_proto, from_json);
        let s = &from_proto[0];
        assert_eq!(s.trace_id, "000102030405060708090a0b0c0d0e0f");
        assert_eq!(s.parent_span_id, None);
        assert_eq!(s.start_ns, 1_700_000_000_000_000_001);
        assert!(!s.attributes.contains_key("http.method"));
        assert_eq!(s.attributes["gen_ai.i"], -12);
        assert_eq!(s.attributes["gen_ai.big"], i64::MAX);
        assert_eq!(s.attributes["gen_ai.nan"], Value::Null);
        assert_eq!(s.attributes["gen_ai.a"], serde_json::json!(["a", 1, []]));
        assert_eq!(
            s.attributes["gen_ai.kv"],
            serde_json::json!({"k": true, "n": null})
        );
        assert_eq!(s.attributes["gen_ai.bytes"], "AAEC/w==");
        // A bare message (an OTLP/HTTP body) reads the same; several framed ones each count.
        assert_eq!(read(&message, Framing::Bare).unwrap(), from_proto);
        let two = read(
            &framed(&[message.clone(), message]),
            Framing::LengthPrefixed,
        )
        .unwrap();
        assert_eq!((two.len(), two[1].line), (2, 2));
        assert!(read(b"", Framing::LengthPrefixed).unwrap().is_empty());
        assert!(read(b"", Framing::Bare).unwrap().is_empty());
    }

    #[test]
    fn broken_truncated_and_hostile_messages_name_the_message_its_offset_and_the_field() {
        let ok = request(vec![kv("input.value", value(Kind::String("x".into())))]).encode_to_vec();
        let good = framed(std::slice::from_ref(&ok));
        let at2 = good.len();
        // Truncated: inside the second length prefix, inside the second message.
        let e = err(&[&good[..], &[0, 0]].concat());
        assert_eq!(
            e,
            format!("t.pb: message 2 at byte {at2}: the file ends 2 bytes into the message's 4-byte length prefix: truncated")
        );
        let e = err(&[&good[..], &good[..good.len() - 3]].concat());
        assert!(
            e.starts_with(&format!("t.pb: message 2 at byte {at2}: the message is {} bytes but the file ends after {}: truncated", ok.len(), ok.len() - 3)),
            "{e}"
        );
        // A huge length prefix is refused before anything is read or allocated.
        let e = err(&[0xff, 0xff, 0xff, 0xff, 1]);
        assert!(
            e.starts_with("t.pb: message 1 at byte 0: the length prefix says 4294967295 bytes, more than the 64 MiB"),
            "{e}"
        );
        // A message cut short inside (its own lengths disagree), a wrong wire type, bad UTF-8.
        let e = err(&framed(&[ok[..ok.len() - 3].to_vec()]));
        assert!(
            e.starts_with("t.pb: message 1 at byte 0: not an OTLP protobuf ExportTraceServiceRequest: failed to decode Protobuf message: "),
            "{e}"
        );
        let e = err(&framed(&[vec![0x08, 0x01]]));
        assert!(e.contains("invalid wire type"), "{e}");
        assert!(
            e.contains("ExportTraceServiceRequest.resource_spans"),
            "{e}"
        );
        let mut bad = request(Vec::new());
        bad.resource_spans[0].scope_spans[0].spans[0].name = "\u{e9}".into();
        let mut bytes = bad.encode_to_vec();
        let at = bytes.iter().position(|&b| b == 0xc3).unwrap();
        bytes[at] = 0xff;
        let e = err(&framed(&[bytes]));
        assert!(e.contains("Span.name"), "{e}");
        // Ids: the wrong length, or none.
        let mut bad = request(Vec::new());
        bad.resource_spans[0].scope_spans[0].spans[0].trace_id = vec![1; 5];
        let e = err(&framed(&[bad.encode_to_vec()]));
        assert_eq!(
            e,
            "t.pb: message 1 at byte 0: resourceSpans[0].scopeSpans[0].spans[0].traceId: is 5 bytes, expected 16"
        );
        bad.resource_spans[0].scope_spans[0].spans[0].trace_id = Vec::new();
        let e = err(&framed(&[bad.encode_to_vec()]));
        assert_eq!(
            e,
            "t.pb: message 1 at byte 0: resourceSpans[0].scopeSpans[0].spans[0].traceId: missing"
        );
        // Nesting: past prost's 100 messages, and past the 128 levels of its OTLP JSON.
        for (depth, expected) in [(60, "recursion limit reached"), (45, "nests too deep")] {
            let mut v = value(Kind::String("x".into()));
            for _ in 0..depth {
                v = value(array(vec![v]));
            }
            let e = err(&framed(&[
                request(vec![kv("input.value", v)]).encode_to_vec()
            ]));
            assert!(e.contains(expected), "{depth}: {e}");
        }
        // The spans before an error are read.
        let spans: Vec<_> = SpanReader::new(&[&good[..], &[0, 0]].concat()[..], "t.pb".into())
            .protobuf(Framing::LengthPrefixed)
            .collect();
        assert_eq!(spans.iter().filter(|s| s.is_ok()).count(), 1);
        assert!(spans[1].is_err());
    }

    #[test]
    fn a_request_whose_json_is_too_long_a_line_is_refused_by_the_receivers_check() {
        // bytesValue grows by a third in base64: a request under the bound in protobuf is
        // over it in JSON, and the JSON reader the receiver checks each line with refuses it
        // (the receiver answers 400 and writes nothing).
        let big = vec![0xfb; MAX_LINE_BYTES / 4 * 3 + 1024];
        let body = request(vec![kv("gen_ai.blob", value(Kind::Bytes(big)))]).encode_to_vec();
        assert!(body.len() < MAX_LINE_BYTES, "{}", body.len());
        let line = json_line(&body).unwrap();
        let e = SpanReader::new(line.as_bytes(), "request".into())
            .collect::<crate::Result<Vec<_>>>()
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("request:1: the line is longer than 64 MiB"),
            "{e}"
        );
    }

    #[test]
    fn the_format_is_told_by_the_first_byte_or_the_name() {
        let d = |name: &str, first| detect(Utf8Path::new(name), first);
        assert_eq!(d("t.jsonl", Some(0)), Ok(Some(Framing::LengthPrefixed)));
        assert_eq!(d("t", Some(4)), Ok(Some(Framing::LengthPrefixed)));
        assert_eq!(d("t.jsonl", Some(b'{')), Ok(None));
        // A JSON lines file may start with an empty line: 0x0a is a bare message by name only.
        assert_eq!(d("t.jsonl", Some(b'\n')), Ok(None));
        assert_eq!(d("t.jsonl", None), Ok(None));
        assert_eq!(d("t.pb", Some(0x0a)), Ok(Some(Framing::Bare)));
        assert_eq!(d("t.binpb", Some(0)), Ok(Some(Framing::LengthPrefixed)));
        assert_eq!(d("t.pb", None), Ok(Some(Framing::LengthPrefixed)));
        let e = d("t.pb", Some(b'{')).unwrap_err();
        assert!(
            e.starts_with("starts with byte 0x7b, which begins neither"),
            "{e}"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)) {
            let _ = json_line(&bytes);
            let _ = read(&bytes, Framing::LengthPrefixed);
            let _ = read(&bytes, Framing::Bare);
        }

        #[test]
        fn a_damaged_message_never_panics(at in 0usize..10_000, byte in proptest::prelude::any::<u8>(), cut in 0usize..10_000) {
            let mut m = request(every_kind()).encode_to_vec();
            let at = at % m.len();
            m[at] = byte;
            m.truncate(m.len() - cut % m.len());
            let _ = read(&framed(&[m.clone()]), Framing::LengthPrefixed);
            let _ = read(&m, Framing::Bare);
        }
    }
}
