//! A case gated by traces as a downstream crate runs it: a fixture crate whose service
//! (`tests/fixtures/traces_service/`) is instrumented with the OpenTelemetry Rust SDK and
//! exports OTLP/HTTP JSON to the receiver the harness starts, run through `cargo test` —
//! passing its gate and recording its traces, failing it with a worse retriever, replaying the
//! recording without the service, and failing clearly when no trace arrives.
//!
//! Built in the target directory the macros' UI tests and the other fixtures use, with their
//! flags and features, so that rag-eval and its dependencies are built once for all.

#[path = "support/fixture_crate.rs"]
mod fixture_crate;

use fixture_crate::{cargo, copy_dir};
use std::path::Path;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// The OpenTelemetry crates as the service depends on them: the versions and features of this
/// repository's dev-dependencies, so the fixture builds offline from its lock file.
const OTEL: &str = r#"opentelemetry = { version = "0.33", default-features = false, features = ["trace"] }
opentelemetry_sdk = { version = "0.33", default-features = false, features = ["trace"] }
opentelemetry-otlp = { version = "0.33", default-features = false, features = ["trace", "http-json", "http-proto", "reqwest-blocking-client"] }"#;

fn fixture(root: &Path) {
    copy_dir(&Path::new(REPO).join("tests/fixtures/traces_service"), root);
    // One package name per fixture folder: fixtures share a target folder (see
    // tests/answers_fixture.rs).
    let unique = fixture_crate::package_suffix(root.parent().unwrap());
    std::fs::write(
        root.join("Cargo.toml"),
        format!(
            r#"[package]
name = "fx-traces-{unique}"
version = "0.1.0"
edition = "2021"
autotests = false

[lib]
name = "traces_service"

[workspace]

[dependencies]
{OTEL}

[dev-dependencies]
{dev}

[[test]]
name = "gate"
harness = false
"#,
            dev = fixture_crate::dev_dependencies()
        ),
    )
    .unwrap();
    std::fs::copy(Path::new(REPO).join("Cargo.lock"), root.join("Cargo.lock")).unwrap();
}

fn gate(root: &Path, env: &[(&str, &str)]) -> (i32, String) {
    cargo(root, &["test", "--test", "gate"], env)
}

#[test]
fn an_instrumented_service_is_gated_by_its_traces_recorded_and_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("fx");
    fixture(&root);
    let recorded = root.join("golden/traces.jsonl");
    assert!(!recorded.exists());

    // (a) The service as it is: its traces arrive, are scored, pass the bars and match the
    // committed snapshot under CI; the traces it sent are recorded.
    let (code, out) = gate(&root, &[("CI", "true")]);
    assert_eq!(code, 0, "the good service passes its gate:\n{out}");
    assert!(out.contains("service::summary"), "{out}");
    assert!(out.contains("4 queries, traces of fn service"), "{out}");
    let text = std::fs::read_to_string(&recorded).expect("the traces are recorded");
    assert!(
        text.lines().all(|l| l.starts_with("{\"resourceSpans\"")),
        "OTLP JSON lines:\n{text}"
    );
    for id in ["q1", "q2", "q3", "q4"] {
        assert!(
            text.contains(&format!("{{\"stringValue\":\"{id}\"}}")),
            "{id}'s trace is recorded:\n{text}"
        );
    }
    // The recording reads as the traces `rag-eval score --traces` and `traces inspect` read.
    let traces = rag_eval::traces::read(
        camino::Utf8Path::from_path(&recorded).unwrap(),
        &rag_eval::traces::Options::default(),
    )
    .unwrap();
    assert_eq!(traces.len(), 4);
    assert!(traces.iter().all(|t| t.documents.len() == 2));

    // (b) A worse retriever: the gate fails, naming the queries and the bar.
    let (code, out) = gate(
        &root,
        &[
            ("CI", "true"),
            ("FX_RETRIEVER", "worse"),
            ("RAG_EVAL_TRACES", "off"),
        ],
    );
    assert_eq!(code, 101, "the worse retriever fails:\n{out}");
    assert!(out.contains("service::summary"), "{out}");
    assert!(out.contains("min_span_recall"), "the bar is named:\n{out}");
    assert!(out.contains("service::q1"), "a query is named:\n{out}");
    // `off`: the recording of (a) is kept.
    assert_eq!(std::fs::read_to_string(&recorded).unwrap(), text);

    // (c) Replay: the recording is scored offline; the service is never called (it panics
    // if it is).
    let (code, out) = gate(
        &root,
        &[
            ("CI", "true"),
            ("RAG_EVAL_CACHE", "replay"),
            ("FX_SYSTEM_PANICS", "1"),
        ],
    );
    assert_eq!(code, 0, "the replay passes without the service:\n{out}");
    assert!(!out.contains("the service was called"), "{out}");

    // A trace with no retrieved document has no retrieval figure, not 0: the bar on it
    // cannot be checked, and says so.
    let (code, out) = gate(
        &root,
        &[("FX_RETRIEVER", "none"), ("RAG_EVAL_TRACES", "off")],
    );
    assert_eq!(code, 101, "{out}");
    assert!(
        out.contains("`span_recall` has a bar but was not computed"),
        "{out}"
    );
    assert!(!out.contains("span_recall@2 = 0.0000"), "{out}");

    // (d) A service that exports nothing: every row is named missing, with what to check;
    // nothing passes, and the recording is not replaced.
    let (code, out) = gate(&root, &[("FX_EXPORT", "none"), ("RAG_EVAL_TRACES", "rw")]);
    assert_eq!(code, 101, "no trace is a failure:\n{out}");
    assert!(
        out.contains("no trace arrived within 5.0 s for 4 of 4 rows: `q1`, `q2`, `q3`, `q4`"),
        "{out}"
    );
    assert!(out.contains("OTEL_EXPORTER_OTLP_ENDPOINT"), "{out}");
    assert_eq!(std::fs::read_to_string(&recorded).unwrap(), text);

    // (e) A service called with a remote parent (its top span the child of a caller's span)
    // that records no trace for `q3`: the other rows are scored and pass their own checks;
    // `q3` fails alone, naming itself and what to check; the summary names the count.
    let (code, out) = gate(
        &root,
        &[
            ("CI", "true"),
            ("FX_PARENT", "remote"),
            ("FX_UNTRACED", "q3"),
            ("RAG_EVAL_TRACES", "off"),
        ],
    );
    assert_eq!(code, 101, "a row without a trace fails:\n{out}");
    assert!(
        out.contains("row `q3` has no trace, so it was not scored (the case's other rows were)\nno trace arrived within 5.0 s for 1 of 4 rows: `q3`"),
        "{out}"
    );
    assert!(
        out.contains("the attribute `query.id` on its root span"),
        "{out}"
    );
    assert!(
        out.contains("1 of 4 rows have no trace and were not scored: `q3`"),
        "{out}"
    );
    assert!(
        out.contains("service: 4 query tests ... 3 ok, 1 FAILED"),
        "{out}"
    );
    for id in ["q1", "q2", "q4"] {
        assert!(!out.contains(&format!("row `{id}` has no trace")), "{out}");
        assert!(
            !out.contains(&format!("    service::{id}\n")),
            "{id} passes:\n{out}"
        );
    }
    // The other rows' figures are over their three traces, each complete without a span
    // that has no parent.
    assert!(out.contains("3 queries, traces of fn service"), "{out}");
    assert!(
        out.contains("1 export requests arrived, holding 3 matched traces"),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(&recorded).unwrap(), text);

    // A replay without its file is an error naming it, not an empty pass.
    std::fs::remove_file(&recorded).unwrap();
    let (code, out) = gate(&root, &[("RAG_EVAL_CACHE", "replay")]);
    assert_eq!(code, 101, "{out}");
    assert!(
        out.contains("replaying traces (RAG_EVAL_CACHE=replay)")
            && out.contains("traces.jsonl` does not exist"),
        "{out}"
    );
}
