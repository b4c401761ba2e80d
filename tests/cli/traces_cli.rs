//! `rag-eval score --traces` and `rag-eval traces inspect`: traces written by the OpenTelemetry
//! Python SDK in three conventions (tests/fixtures/traces/README.md), scored exactly as the
//! same run written as an answers file.

use crate::cli_support::{fails, ok, run_in, s, write};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/traces")
        .join(name)
}

fn score(input: &str, file: &Path, extra: &[&str]) -> Value {
    let (dataset, corpus) = (fixture("dataset.jsonl"), fixture("corpus"));
    let mut args = vec![
        "score",
        "--dataset",
        s(&dataset),
        "--corpus",
        s(&corpus),
        input,
        s(file),
        "-k",
        "3",
        "--allow-missing",
        "--embedder",
        "hashing",
        "--json",
    ];
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(&args)).unwrap()
}

#[test]
fn traces_of_each_convention_score_as_the_same_run_written_as_answers() {
    for convention in ["openinference", "genai", "trulens"] {
        let traces = fixture(&format!("{convention}.jsonl"));
        let answers = fixture(&format!("answers.{convention}.jsonl"));
        for join in [&["--join-attribute", "query.id"][..], &[]] {
            let mut from_traces = score("--traces", &traces, join);
            let from_answers = score("--answers", &answers, &[]);
            let joined = from_traces
                .as_object_mut()
                .unwrap()
                .remove("traces")
                .unwrap();
            assert_eq!(from_traces, from_answers, "{convention} {join:?}");
            // Every figure is there: retrieval on the documents located in the corpus, and
            // the answer metrics.
            assert_eq!(from_answers["metrics"]["span_recall@3"], 1.0);
            assert!(from_answers["metrics"]["answer_similarity"].is_number());
            assert_eq!(
                from_answers["contexts_located"],
                serde_json::json!({"exact": 4, "normalized": 1, "unlocated": 0})
            );
            assert_eq!(
                joined,
                serde_json::json!({
                    "matched_traces": 3,
                    "unmatched_traces": [],
                    "unmatched_rows": [{"id": "q4", "why": "no trace"}]
                }),
                "{convention}"
            );
        }
    }
}

#[test]
fn the_retrieval_rule_changes_what_is_scored() {
    let traces = fixture("genai.jsonl");
    let last = score("--traces", &traces, &[]);
    let all = score("--traces", &traces, &["--retrievals", "all"]);
    // q1 and q2's first retrieval found the wrong document first: with `all` it ranks first.
    assert_eq!(last["per_query"][0]["metrics"]["mrr"], 1.0);
    assert_eq!(all["per_query"][0]["metrics"]["mrr"], 0.5);
}

#[test]
fn unmatched_traces_are_named_with_their_line_and_a_run_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    // q1's trace again, then a trace whose question no row asks.
    let oi = std::fs::read_to_string(fixture("openinference.jsonl")).unwrap();
    let first = oi.lines().next().unwrap();
    let other = first
        .replace("When does Larkspur ship?", "Where is the office?")
        .replace(
            "0000abc0000000000000000100000001",
            "0000abc0000000000000000100000099",
        );
    let file = write(dir.path(), "t.jsonl", &format!("{oi}{other}\n"));
    let (dataset, corpus) = (fixture("dataset.jsonl"), fixture("corpus"));
    let store = dir.path().join("runs.sqlite");
    let (code, out, err) = run_in(
        dir.path(),
        &store,
        &[
            "score",
            "--dataset",
            s(&dataset),
            "--corpus",
            s(&corpus),
            "--traces",
            s(&file),
            "--allow-missing",
            "--json",
            "--label",
            "traced",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("3 of 4 traces of") && err.contains("by the question's text"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "warning: 1 trace matches no row and is left out:\n{}:4: trace 0000abc0000000000000000100000099: no row asks its question `Where is the office?`",
            s(&file)
        )),
        "{err}"
    );
    assert!(
        err.contains("1 row of") && err.contains("no trace answers: `q4`"),
        "{err}"
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["traces"]["unmatched_traces"][0]["line"], 4);
    // Recorded as an answers run is, with the traces file as its input.
    let (code, shown, err) = run_in(dir.path(), &store, &["runs", "show", "latest", "--json"]);
    assert_eq!(code, 0, "{err}");
    let run: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(run["origin"], "score");
    assert_eq!(run["label"], "traced");
    assert_eq!(run["config"]["extra"]["traces"], s(&file));
    // Without --allow-missing, q4 is missing as an answers file's row would be.
    let (code, _, err) = run_in(
        dir.path(),
        "off",
        &[
            "score",
            "--dataset",
            s(&dataset),
            "--traces",
            s(&file),
            "--corpus",
            s(&corpus),
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("error: 1 of 4 dataset queries have no line"),
        "{err}"
    );
}

#[test]
fn broken_trace_files_fail_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let oi = std::fs::read_to_string(fixture("openinference.jsonl")).unwrap();
    let (dataset, corpus) = (fixture("dataset.jsonl"), fixture("corpus"));
    let first = oi.lines().next().unwrap();
    for (name, text, expected) in [
        (
            "truncated.jsonl",
            format!("{first}\n{}", &first[..first.len() / 3]),
            "truncated.jsonl:2: EOF while parsing".to_owned(),
        ),
        (
            "base64.jsonl",
            first.replacen("\"spanId\":\"0000000100000003\"", "\"spanId\":\"AAAAAQAAAAM=\"", 1),
            "base64.jsonl:1: resourceSpans[0].scopeSpans[0].spans[0].spanId: `AAAAAQAAAAM=` is not 16 hex digits".to_owned(),
        ),
        (
            "empty.jsonl",
            "\n".to_owned(),
            "holds no span".to_owned(),
        ),
    ] {
        let file = write(dir.path(), name, &text);
        let args = [
            "score",
            "--dataset",
            s(&dataset),
            "--corpus",
            s(&corpus),
            "--traces",
            s(&file),
        ];
        let err = fails(&args);
        assert!(err.contains(&expected), "{name}: {err}");
        if name != "empty.jsonl" {
            let err = fails(&["traces", "inspect", s(&file)]);
            assert!(err.contains(&expected), "{name}: {err}");
        }
    }
}

#[test]
fn traces_inspect_shows_the_mapping() {
    let file = fixture("openinference.jsonl");
    let text = ok(&[
        "traces",
        "inspect",
        s(&file),
        "--join-attribute",
        "query.id",
    ]);
    assert!(
        text.starts_with("trace 0000abc0000000000000000100000001 (line 1, 5 spans, openinference)\n  root: query\n  join: q1\n  session: s1\n  question: When does Larkspur ship?\n  answer: Larkspur ships in May.\n  documents: 2\n    1. [larkspur.md] (0.91) Larkspur 3.4 ships in May.\n"),
        "{text}"
    );
    assert!(
        text.contains("  tool call clock({\"tz\":\"UTC\"}) → 17:02\n"),
        "{text}"
    );
    assert!(text.contains("\n3 traces in "), "{text}");
    // The JSON contract: one object a trace, its keys in the order of `MappedTrace`.
    let json = ok(&["traces", "inspect", s(&file), "--json"]);
    assert!(
        json.starts_with("{\"trace_id\":\"0000abc0000000000000000100000001\",\"line\":1,\"start_ns\":1760000000001000000,\"spans\":5,\"conventions\":[\"openinference\"],\"root\":\"query\",\"question\":\"When does Larkspur ship?\",\"answer\":\"Larkspur ships in May.\",\"session_id\":\"s1\",\"documents\":["),
        "{json}"
    );
    let lines: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let keys: Vec<&str> = lines[2]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "answer",
            "conventions",
            "documents",
            "line",
            "messages",
            "notes",
            "question",
            "reranks",
            "retrievals",
            "root",
            "session_id",
            "spans",
            "start_ns",
            "tool_calls",
            "trace_id"
        ]
    );
    assert_eq!(
        lines[0]["documents"][1],
        serde_json::json!({"rank": 2, "id": "chunk-7", "text": "needs rust 1.80", "score": 0.42, "metadata": {"source": "chunk-7"}})
    );
    assert_eq!(lines[2]["tool_calls"][0]["name"], "clock");
    assert_eq!(lines[2]["tool_calls"][0]["result"], "17:02");
}

/// One HTTP/1.1 request on a fresh connection: the status and the body.
fn http(addr: &str, method: &str, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    s.write_all(body).unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Kills the collector when the test ends, however it ends.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `rag-eval collect` on a free loopback port, writing to `out`: the process and its address.
fn collector(out: &Path) -> (Running, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rag-eval"))
        .args(["collect", "--listen", "127.0.0.1:0", "--out", s(out)])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let running = Running(child);
    let mut first = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .strip_prefix("listening on http://")
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    (running, addr)
}

#[test]
fn collect_receives_otlp_json_and_writes_what_score_reads() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("received.jsonl");
    let (running, addr) = collector(&out);
    // The SDK's requests, one a question, each pretty-printed as a client may send it.
    let fixture_file = fixture("openinference.jsonl");
    for line in std::fs::read_to_string(&fixture_file).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let pretty = serde_json::to_string_pretty(&v).unwrap();
        let (status, body) = http(
            &addr,
            "POST",
            "/v1/traces",
            "application/json",
            pretty.as_bytes(),
        );
        assert_eq!((status, body.as_str()), (200, "{}"));
    }
    // Refused, and nothing written: a truncated protobuf request, a broken request, another
    // path.
    let (status, body) = http(
        &addr,
        "POST",
        "/v1/traces",
        "application/x-protobuf",
        b"\x0a\x05\x12",
    );
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("not an OTLP protobuf ExportTraceServiceRequest"),
        "{body}"
    );
    let (status, body) = http(
        &addr,
        "POST",
        "/v1/traces",
        "application/json",
        br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz","spanId":"0000000000000001"}]}]}]}"#,
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("request:1: resourceSpans[0].scopeSpans[0].spans[0].traceId: `xyz` is not 32 hex digits"), "{body}");
    let (status, _) = http(&addr, "GET", "/", "text/plain", b"");
    assert_eq!(status, 404);
    drop(running);
    let received = std::fs::read_to_string(&out).unwrap();
    assert_eq!(received.lines().count(), 3);
    // What the collector wrote reads as the SDK's file does, and scores the same.
    let inspect = |f: &Path| ok(&["traces", "inspect", s(f), "--json"]);
    assert_eq!(inspect(&out), inspect(&fixture_file));
    assert_eq!(
        score("--traces", &out, &[]),
        score("--traces", &fixture_file, &[])
    );
}

/// The Rust SDK's exporter sends to the receiver what a service's spans say; `score` over the
/// traces received gives the figures of the same run written as an answers file.
#[test]
fn traces_the_rust_sdk_exports_to_the_receiver_score_as_the_same_run_written_as_answers() {
    use opentelemetry::trace::{Span as _, TraceContextExt as _, Tracer as _, TracerProvider as _};
    use opentelemetry::{Context, KeyValue};
    use opentelemetry_otlp::{Protocol, WithExportConfig as _};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("received.jsonl");
    let (running, addr) = collector(&out);
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(format!("http://{addr}/v1/traces"))
        .with_protocol(Protocol::HttpJson)
        .build()
        .unwrap();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_simple_exporter(exporter)
        .build();
    let tracer = provider.tracer("traces-cli-test");
    let questions: std::collections::HashMap<String, String> =
        std::fs::read_to_string(fixture("dataset.jsonl"))
            .unwrap()
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                (s_of(&v["id"]), s_of(&v["inputs"]["query"]))
            })
            .collect();
    let answers = fixture("answers.openinference.jsonl");
    // One trace a line of the answers file, as the service that answered would record it.
    for line in std::fs::read_to_string(&answers).unwrap().lines() {
        let a: Value = serde_json::from_str(line).unwrap();
        let id = s_of(&a["id"]);
        let root = tracer
            .span_builder("query")
            .with_attributes([
                KeyValue::new("openinference.span.kind", "CHAIN"),
                KeyValue::new("input.value", questions[&id].clone()),
                KeyValue::new("query.id", id.clone()),
            ])
            .start(&tracer);
        let cx = Context::current_with_span(root);
        let mut retrieval = tracer.start_with_context("retrieve", &cx);
        retrieval.set_attribute(KeyValue::new("openinference.span.kind", "RETRIEVER"));
        for (i, c) in a["contexts"].as_array().unwrap().iter().enumerate() {
            let key = |field: &str| format!("retrieval.documents.{i}.document.{field}");
            retrieval.set_attribute(KeyValue::new(key("content"), s_of(&c["text"])));
            retrieval.set_attribute(KeyValue::new(key("score"), c["score"].as_f64().unwrap()));
            if let Some(doc) = c["doc_id"].as_str() {
                retrieval.set_attribute(KeyValue::new(key("id"), doc.to_owned()));
            }
        }
        retrieval.end();
        cx.span()
            .set_attribute(KeyValue::new("output.value", s_of(&a["answer"])));
        cx.span().end();
    }
    provider.shutdown().unwrap();
    drop(running);
    let received = std::fs::read_to_string(&out).unwrap();
    assert!(received.lines().count() >= 3, "{received}");
    for join in [&["--join-attribute", "query.id"][..], &[]] {
        let mut from_traces = score("--traces", &out, join);
        let joined = from_traces
            .as_object_mut()
            .unwrap()
            .remove("traces")
            .unwrap();
        assert_eq!(joined["matched_traces"], 3, "{joined}");
        assert_eq!(from_traces, score("--answers", &answers, &[]), "{join:?}");
    }
}

fn s_of(v: &Value) -> String {
    v.as_str().unwrap().to_owned()
}

#[test]
fn protobuf_files_score_and_inspect_as_their_json() {
    // The Python SDK's requests, encoded by its protobuf encoder and length-prefixed as the
    // Collector's file exporter writes them (tests/fixtures/traces/README.md).
    let inspect = |f: &Path| ok(&["traces", "inspect", s(f), "--json"]);
    for convention in ["openinference", "genai", "trulens"] {
        let (pb, jsonl) = (
            fixture(&format!("{convention}.pb")),
            fixture(&format!("{convention}.jsonl")),
        );
        assert_eq!(inspect(&pb), inspect(&jsonl), "{convention}");
        for join in [&["--join-attribute", "query.id"][..], &[]] {
            assert_eq!(
                score("--traces", &pb, join),
                score("--traces", &jsonl, join),
                "{convention} {join:?}"
            );
        }
    }
    // Told by content whatever the name; a bare message (an OTLP/HTTP body) by its name.
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(fixture("openinference.pb")).unwrap();
    let renamed = dir.path().join("traces.dat");
    std::fs::write(&renamed, &bytes).unwrap();
    assert_eq!(inspect(&renamed), inspect(&fixture("openinference.jsonl")));
    let len = u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
    let bare = dir.path().join("one.binpb");
    std::fs::write(&bare, &bytes[4..4 + len]).unwrap();
    let first = inspect(&fixture("openinference.jsonl"));
    assert_eq!(
        inspect(&bare),
        first.lines().next().unwrap().to_owned() + "\n"
    );
    // Broken files: the message, where it starts, what is wrong.
    let (dataset, corpus) = (fixture("dataset.jsonl"), fixture("corpus"));
    for (name, content, expected) in [
        (
            "truncated.pb",
            bytes[..bytes.len() - 10].to_vec(),
            "message 3 at byte ",
        ),
        (
            "huge.pb",
            [&bytes[..4 + len], &[0x04, 0, 0, 1]].concat(),
            "huge.pb: message 2 at byte ",
        ),
        (
            "json.pb",
            b"{}".to_vec(),
            "json.pb: message 1 at byte 0: starts with byte 0x7b",
        ),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, content).unwrap();
        let err = fails(&["traces", "inspect", s(&file)]);
        assert!(err.contains(expected), "{name}: {err}");
        let err = fails(&[
            "score",
            "--dataset",
            s(&dataset),
            "--corpus",
            s(&corpus),
            "--traces",
            s(&file),
        ]);
        assert!(err.contains(expected), "{name}: {err}");
    }
}

#[test]
fn collect_reads_the_rust_sdks_protobuf_export_as_its_json_export() {
    use opentelemetry::trace::{Span as _, TraceContextExt as _, Tracer as _, TracerProvider as _};
    use opentelemetry::{Array, Context, KeyValue};
    use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
    let dir = tempfile::tempdir().unwrap();
    let (pb_out, json_out) = (dir.path().join("pb.jsonl"), dir.path().join("json.jsonl"));
    let (pb, pb_addr) = collector(&pb_out);
    let (json, json_addr) = collector(&json_out);
    let (gz_pb_out, gz_json_out) = (
        dir.path().join("pb.gz.jsonl"),
        dir.path().join("json.gz.jsonl"),
    );
    let (gz_pb, gz_pb_addr) = collector(&gz_pb_out);
    let (gz_json, gz_json_addr) = collector(&gz_json_out);
    let exporter = |protocol, addr: &str, gzip: bool| {
        let builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .with_endpoint(format!("http://{addr}/v1/traces"));
        let builder = if gzip {
            builder.with_compression(opentelemetry_otlp::Compression::Gzip)
        } else {
            builder
        };
        builder.build().unwrap()
    };
    // Each span, as it ends, goes to every exporter: the same span, ids and times, sent in
    // protobuf (the exporter's default) and in JSON, each plain and gzip-compressed (as with
    // OTEL_EXPORTER_OTLP_COMPRESSION=gzip).
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_simple_exporter(exporter(Protocol::HttpBinary, &pb_addr, false))
        .with_simple_exporter(exporter(Protocol::HttpJson, &json_addr, false))
        .with_simple_exporter(exporter(Protocol::HttpBinary, &gz_pb_addr, true))
        .with_simple_exporter(exporter(Protocol::HttpJson, &gz_json_addr, true))
        .build();
    let tracer = provider.tracer("rag");
    let root = tracer.start("query");
    let cx = Context::current_with_span(root);
    cx.span().set_attributes([
        KeyValue::new("openinference.span.kind", "CHAIN"),
        KeyValue::new("input.value", "When does Larkspur ship?"),
        KeyValue::new("output.value", "In May."),
        KeyValue::new("session.id", "s1"),
        KeyValue::new("query.id", "q1"),
    ]);
    let mut retrieve = tracer.start_with_context("retrieve", &cx);
    retrieve.set_attributes([
        KeyValue::new("openinference.span.kind", "RETRIEVER"),
        KeyValue::new("retrieval.documents.0.document.id", "larkspur.md"),
        KeyValue::new(
            "retrieval.documents.0.document.content",
            "Larkspur 3.4 ships in May.",
        ),
        KeyValue::new("retrieval.documents.0.document.score", 0.91),
        KeyValue::new("retrieval.documents.1.document.id", "build.md"),
        KeyValue::new(
            "retrieval.documents.1.document.content",
            "It needs Rust 1.80.",
        ),
        KeyValue::new("retrieval.documents.1.document.score", 0.25),
        KeyValue::new("retrieval.top_k", 2_i64),
        KeyValue::new("retrieval.exact", false),
        KeyValue::new(
            "retrieval.tags",
            opentelemetry::Value::Array(Array::String(vec!["a".into(), "b".into()])),
        ),
    ]);
    retrieve.end();
    let mut llm = tracer.start_with_context("llm", &cx);
    llm.set_attributes([
        KeyValue::new("openinference.span.kind", "LLM"),
        KeyValue::new("llm.input_messages.0.message.role", "user"),
        KeyValue::new(
            "llm.input_messages.0.message.content",
            "When does Larkspur ship?",
        ),
        KeyValue::new("llm.output_messages.0.message.role", "assistant"),
        KeyValue::new("llm.output_messages.0.message.content", "In May."),
    ]);
    llm.end();
    cx.span().end();
    provider.shutdown().unwrap();
    // A protobuf request of the wrong wire type is refused and writes nothing.
    let (status, body) = http(
        &pb_addr,
        "POST",
        "/v1/traces",
        "application/x-protobuf",
        b"\x08\x01",
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("resource_spans: invalid wire type"), "{body}");
    drop((pb, json, gz_pb, gz_json));
    // A compressed request is written as the same line as the plain one.
    let read = |f: &Path| std::fs::read_to_string(f).unwrap();
    assert_eq!(read(&gz_pb_out), read(&pb_out));
    assert_eq!(read(&gz_json_out), read(&json_out));
    let inspect = |f: &Path| ok(&["traces", "inspect", s(f), "--json"]);
    let from_pb = inspect(&pb_out);
    assert_eq!(from_pb, inspect(&json_out));
    let trace: Value = serde_json::from_str(from_pb.trim_end()).unwrap();
    assert_eq!(trace["spans"], 3);
    assert_eq!(trace["question"], "When does Larkspur ship?");
    assert_eq!(trace["answer"], "In May.");
    assert_eq!(trace["session_id"], "s1");
    assert_eq!(trace["documents"][1]["score"], 0.25);
    assert_eq!(
        trace["messages"].as_array().map(Vec::len),
        Some(2),
        "{trace}"
    );
    // Each span was one request, written as one line.
    assert_eq!(std::fs::read_to_string(&pb_out).unwrap().lines().count(), 3);
}
