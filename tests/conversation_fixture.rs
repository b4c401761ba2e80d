//! A conversation case as a downstream crate runs it: a fixture crate whose system is a small
//! tool-using agent written in the test (`tests/fixtures/conversation/agent.rs`: a search tool
//! over a tiny corpus, which it runs itself, and a calculator, whose recorded results the
//! harness feeds back), run through `cargo test` with no server. The agent passes its gate
//! against the committed golden snapshot under `CI`; the variant that skips the search tool
//! fails, and its output names the conversation and the bar it missed.
//!
//! Built in the target directory the other fixtures share (`support/fixture_crate.rs`).

#[path = "support/fixture_crate.rs"]
mod fixture_crate;

use fixture_crate::{cargo, copy_dir};
use std::path::Path;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// The fixture crate at `root`: `tests/agent.rs`, its conversations and its golden folder.
fn fixture(root: &Path) {
    copy_dir(&Path::new(REPO).join("tests/fixtures/conversation"), root);
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::rename(root.join("agent.rs"), root.join("tests/agent.rs")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "").unwrap();
    std::fs::copy(Path::new(REPO).join("Cargo.lock"), root.join("Cargo.lock")).unwrap();
    // One package name per fixture folder: fixtures share a target folder (see the answers
    // fixture).
    let unique = fixture_crate::package_suffix(root.parent().unwrap());
    std::fs::write(
        root.join("Cargo.toml"),
        format!(
            r#"[package]
name = "fx-conversation-{unique}"
version = "0.1.0"
edition = "2021"
autotests = false

[workspace]

[dev-dependencies]
{dev}

[[test]]
name = "agent"
harness = false
"#,
            dev = fixture_crate::dev_dependencies()
        ),
    )
    .unwrap();
}

#[test]
fn a_tool_using_agent_passes_its_gate_and_the_agent_skipping_its_tool_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("fx");
    fixture(&root);

    // The agent that searches: every conversation's test and the summary pass, under `CI`,
    // against the committed snapshot (a missing or different one would fail there).
    let (code, out) = cargo(
        &root,
        &[
            "test",
            "--test",
            "agent",
            "--",
            "tool_agent::",
            "--format",
            "pretty",
        ],
        &[("CI", "1")],
    );
    assert_eq!(code, 0, "{out}");
    for test in [
        "tool_agent::larkspur",
        "tool_agent::tides",
        "tool_agent::summary",
    ] {
        let passed = out
            .lines()
            .any(|l| l.starts_with(&format!("test {test} ")) && l.ends_with("... ok"));
        assert!(passed, "{test} passed: {out}");
    }
    assert!(
        !out.contains("NEW tool_agent"),
        "the snapshot was compared: {out}"
    );
    let snap = std::fs::read_to_string(root.join("golden/tool_agent.snap")).unwrap();
    assert!(snap.contains("level: conversation"), "{snap}");
    assert!(
        snap.contains("  larkspur:\n    tool_call_accuracy: 1.0000"),
        "{snap}"
    );
    // The played turn with a reference answer has its answer figures, as a recorded one.
    assert!(snap.contains("\n    token_f1: 0.7273\n"), "{snap}");

    // The agent that answers from memory: each conversation fails on its own bar, named.
    let (code, out) = cargo(
        &root,
        &["test", "--test", "agent", "--", "lazy_agent::"],
        &[],
    );
    assert_ne!(code, 0, "{out}");
    for id in ["larkspur", "tides"] {
        let line = format!("conversation `{id}` of case `lazy_agent` misses its bars");
        assert!(out.contains(&line), "missing {line:?} in {out}");
    }
    assert!(
        out.contains(
            "tool_call_accuracy = 0.0000 is below the bar 1.0000 (min_tool_call_accuracy)"
        ),
        "{out}"
    );
    // What the agent did instead: the calculator alone, then nothing.
    assert!(
        out.contains("tool calls made: calculator({\"expr\":\"3*5\"})"),
        "{out}"
    );
    assert!(out.contains("tool calls made: none"), "{out}");
}
