//! Peak memory of reading a large OTLP JSON trace file: writes a file of `TRACE_BENCH_MB`
//! megabytes (default 1024) of OpenInference traces shaped as LlamaIndex writes them (a
//! query span, an embedding span with its 1,536-float vector, a retriever with 10 documents,
//! a reranker keeping 3, an LLM span with its messages, and the attributes rag-eval does not
//! read), reads it with `rag_eval::traces::read`, and prints the time, the traces and the
//! process's peak resident memory (`VmHWM`). Under `cargo test --benches` it reads a 4 MB
//! file as a smoke test. `benches/README.md` has the recorded figures.

use camino::Utf8PathBuf;
use std::io::Write;
use std::time::Instant;

fn doc(i: usize, q: usize) -> String {
    format!(
        "Document {i} for query {q}: {}",
        "Larkspur keeps flags in one place and evaluates them near the application. ".repeat(5)
    )
}

fn kv(key: &str, value: &str) -> String {
    format!(
        r#"{{"key":"{key}","value":{{"stringValue":{}}}}}"#,
        serde_json::to_string(value).unwrap()
    )
}

fn span(
    trace: &str,
    id: u64,
    parent: Option<u64>,
    start: u64,
    name: &str,
    attrs: &[String],
) -> String {
    format!(
        r#"{{"traceId":"{trace}","spanId":"{id:016x}","parentSpanId":"{}","name":"{name}","kind":"SPAN_KIND_INTERNAL","startTimeUnixNano":"{start}","endTimeUnixNano":"{}","attributes":[{}],"status":{{}}}}"#,
        parent.map(|p| format!("{p:016x}")).unwrap_or_default(),
        start + 1000,
        attrs.join(",")
    )
}

/// One request: one trace of six spans.
fn request(q: usize) -> String {
    let trace = format!("{:032x}", q as u128 + 1);
    let base = q as u64 * 10 + 1;
    let t0 = 1_760_000_000_000_000_000 + q as u64 * 1_000_000;
    let question = format!("What does Larkspur do with flag {q}?");
    let mut spans = Vec::new();
    spans.push(span(
        &trace,
        base,
        None,
        t0,
        "query",
        &[
            kv("openinference.span.kind", "CHAIN"),
            kv("input.value", &question),
            kv("output.value", "It evaluates it near the application."),
            kv("session.id", &format!("s{}", q / 4)),
            kv("query.id", &format!("q{q}")),
        ],
    ));
    let vector: Vec<String> = (0..1536)
        .map(|i| {
            format!(
                "{{\"doubleValue\":{:.6}}}",
                ((i * 7 + q) % 1000) as f64 / 1000.0 - 0.5
            )
        })
        .collect();
    spans.push(span(&trace, base + 1, Some(base), t0 + 1, "embedding", &[
        kv("openinference.span.kind", "EMBEDDING"),
        kv("embedding.model_name", "text-embedding-3-small"),
        kv("embedding.embeddings.0.embedding.text", &question),
        format!(r#"{{"key":"embedding.embeddings.0.embedding.vector","value":{{"arrayValue":{{"values":[{}]}}}}}}"#, vector.join(",")),
    ]));
    let mut retriever = vec![
        kv("openinference.span.kind", "RETRIEVER"),
        kv("input.value", &question),
    ];
    for i in 0..10 {
        retriever.push(kv(
            &format!("retrieval.documents.{i}.document.id"),
            &format!("chunk-{i}"),
        ));
        retriever.push(kv(
            &format!("retrieval.documents.{i}.document.content"),
            &doc(i, q),
        ));
        retriever.push(format!(
            r#"{{"key":"retrieval.documents.{i}.document.score","value":{{"doubleValue":0.{i}5}}}}"#
        ));
        retriever.push(kv(
            &format!("retrieval.documents.{i}.document.metadata"),
            r#"{"file_path":"/srv/docs/guide.md","page":3}"#,
        ));
    }
    spans.push(span(
        &trace,
        base + 2,
        Some(base),
        t0 + 2,
        "retrieve",
        &retriever,
    ));
    let mut rerank = vec![
        kv("openinference.span.kind", "RERANKER"),
        kv("reranker.query", &question),
        kv("reranker.model_name", "cross-encoder"),
    ];
    for i in 0..3 {
        rerank.push(kv(
            &format!("reranker.output_documents.{i}.document.id"),
            &format!("chunk-{i}"),
        ));
        rerank.push(kv(
            &format!("reranker.output_documents.{i}.document.content"),
            &doc(i, q),
        ));
    }
    spans.push(span(
        &trace,
        base + 3,
        Some(base),
        t0 + 3,
        "rerank",
        &rerank,
    ));
    let prompt = format!(
        "Context:\n{}\n{}\n{}\nQuestion: {question}",
        doc(0, q),
        doc(1, q),
        doc(2, q)
    );
    spans.push(span(
        &trace,
        base + 4,
        Some(base),
        t0 + 4,
        "llm",
        &[
            kv("openinference.span.kind", "LLM"),
            kv("llm.model_name", "gpt-4o"),
            kv(
                "llm.prompt_template.template",
                "Context:\n{context}\nQuestion: {question}",
            ),
            kv("llm.input_messages.0.message.role", "user"),
            kv("llm.input_messages.0.message.content", &prompt),
            kv("llm.output_messages.0.message.role", "assistant"),
            kv(
                "llm.output_messages.0.message.content",
                "It evaluates it near the application.",
            ),
            kv(
                "llm.invocation_parameters",
                r#"{"temperature":0.0,"max_tokens":512}"#,
            ),
            format!(
                r#"{{"key":"llm.token_count.prompt","value":{{"intValue":"{}"}}}}"#,
                900 + q % 100
            ),
        ],
    ));
    spans.push(span(
        &trace,
        base + 5,
        Some(base),
        t0 + 5,
        "synthesize",
        &[
            kv("openinference.span.kind", "CHAIN"),
            kv("input.value", &question),
        ],
    ));
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{},{},{}]}},"scopeSpans":[{{"scope":{{"name":"openinference.instrumentation.llama_index","version":"4.3.0"}},"spans":[{}]}}]}}]}}"#,
        kv("service.name", "larkspur-rag"),
        kv("telemetry.sdk.language", "python"),
        kv("telemetry.sdk.version", "1.45.2"),
        spans.join(",")
    )
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let measured = std::env::args().any(|a| a == "--bench");
    let mb: u64 = match measured {
        true => std::env::var("TRACE_BENCH_MB")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1024),
        false => 4,
    };
    let dir = tempfile::tempdir().unwrap();
    let path = Utf8PathBuf::from_path_buf(dir.path().join("traces.jsonl")).unwrap();
    let started = Instant::now();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let (mut written, mut q) = (0u64, 0usize);
    while written < mb << 20 {
        let line = request(q);
        out.write_all(line.as_bytes()).unwrap();
        out.write_all(b"\n").unwrap();
        written += line.len() as u64 + 1;
        q += 1;
    }
    out.flush().unwrap();
    drop(out);
    let wrote = started.elapsed();
    let before = peak_rss_kib();
    let started = Instant::now();
    let options = rag_eval::traces::Options {
        join_attribute: Some("query.id".into()),
        ..Default::default()
    };
    let traces = rag_eval::traces::read(&path, &options).unwrap();
    let read = started.elapsed();
    assert_eq!(traces.len(), q);
    assert_eq!(traces[0].documents.len(), 3);
    let documents: usize = traces.iter().map(|t| t.documents.len()).sum();
    println!(
        "wrote {:.1} MiB ({q} traces, {} spans) in {:.1} s; read it in {:.1} s ({:.0} MiB/s), {documents} documents",
        written as f64 / 1048576.0,
        q * 6,
        wrote.as_secs_f64(),
        read.as_secs_f64(),
        written as f64 / 1048576.0 / read.as_secs_f64()
    );
    match (before, peak_rss_kib()) {
        (Some(b), Some(p)) => println!(
            "peak RSS: {:.1} MiB after writing, {:.1} MiB after reading ({:.1}% of the file)",
            b as f64 / 1024.0,
            p as f64 / 1024.0,
            p as f64 * 1024.0 / written as f64 * 100.0
        ),
        _ => println!("peak RSS: not available (no /proc/self/status)"),
    }
}
