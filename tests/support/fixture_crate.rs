//! Fixture crates that use rag-eval as a downstream crate does, built in the target directory of
//! the macros' UI tests (`target/tests/trybuild`) with the flags and target of trybuild's
//! checks, so that the proc macros and build scripts both compile are built once, and rag-eval
//! and its dependencies once for all the fixtures. It is not the directory of the build running
//! the test, so a fixture never waits on that build's lock.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The target directory trybuild uses for this workspace.
pub fn shared_target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the temporary folder is inside the target folder")
        .join("tests/trybuild")
}

/// The compiler flags of every build in the shared target directory: the flags trybuild gives
/// the UI files, and no debug information (nothing debugs these crates, and it is most of their
/// size on disk).
const FLAGS: [&str; 8] = [
    "--cfg",
    "trybuild",
    "--verbose",
    "-A",
    "dead_code",
    "--diagnostic-width=140",
    "-C",
    "debuginfo=0",
];

/// Sets [`FLAGS`] for every build trybuild starts from this process. trybuild checks the
/// dependencies with one set of flags and the UI files with another (it adds a diagnostic
/// width), so each dependency would be checked twice; `CARGO_ENCODED_RUSTFLAGS` overrides both
/// sets. Call it before the first `TestCases` is made, from the only test of its binary that
/// touches the environment.
#[allow(dead_code)] // the fixtures' binaries set the flags on their commands
pub fn set_trybuild_flags() {
    std::env::set_var("CARGO_ENCODED_RUSTFLAGS", FLAGS.join("\x1f"));
}

/// The `[dev-dependencies]` lines of the harness, answers and traces fixtures: rag-eval from
/// this repository with the features they use between them (the repository's own cases split
/// Markdown; the answering cases record and replay, store runs and call OpenAI-compatible
/// servers and services; the traces case listens for spans) and the crates their tests name.
/// One set of features for all, so rag-eval is compiled once for every fixture.
#[allow(dead_code)] // the shards fixture needs `postgres` and builds apart
pub fn dev_dependencies() -> String {
    format!(
        r#"rag-eval = {{ path = {:?}, features = ["markdown", "cache", "runs", "langsmith", "openai", "service", "traces"] }}
async-trait = "0.1"
serde_json = "1""#,
        env!("CARGO_MANIFEST_DIR")
    )
}

/// The host's target triple: trybuild passes `--target` explicitly, and so must a fixture for
/// its artifacts to be the same.
pub fn host() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().expect("rustc runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_owned()
}

/// Copies the folder `from` to `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs `cargo ARGS` offline in the fixture at `root` ([`command`]) and returns its exit code
/// and its standard output and error.
pub fn cargo(root: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let out = command(root, args, env).output().expect("cargo runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// The command `cargo ARGS`, offline in the fixture at `root`. The outer run's CI, insta,
/// backtrace, rag-eval and LangSmith variables are cleared, so each scenario sets exactly what
/// it tests through `env`.
pub fn command(root: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    // `--offline` goes with cargo's own options, before any `--` for the test binary.
    let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    // trybuild's flags ([`FLAGS`]), so that what both compile (proc macros, build scripts) is
    // reused; a trybuild with other flags only costs a second build, never a failure.
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(&args[..split])
        .arg("--offline")
        .args(["--target", &host()])
        .args(&args[split..])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", shared_target())
        .env("CARGO_ENCODED_RUSTFLAGS", FLAGS.join("\x1f"))
        .env("CARGO_INCREMENTAL", "0");
    for var in [
        "RUSTFLAGS",
        "RUST_BACKTRACE",
        "CI",
        "TF_BUILD",
        "NEXTEST_RUN_ID",
        "INSTA_OUTPUT",
        "INSTA_UPDATE",
        "INSTA_FORCE_PASS",
        "RAG_EVAL_CACHE",
        "RAG_EVAL_CACHE_PATH",
        "RAG_EVAL_TRACES",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_BSP_SCHEDULE_DELAY",
        "RAG_EVAL_RUNS",
        "RAG_EVAL_RUN_GROUP",
        "RAG_EVAL_SHARD",
        "RAG_EVAL_HARNESS_CACHE",
        "GITHUB_RUN_ID",
        "CI_PIPELINE_ID",
        "LANGSMITH_API_KEY",
        "LANGSMITH_ENDPOINT",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// A name part unique to one fixture's folder `dir`. Fixtures share one target folder, and
/// cargo names a path package's artifacts independently of where it sits, so two fixtures
/// built at once under one package name overwrite each other's test binaries (each with the
/// other's folder compiled in).
#[allow(dead_code)] // not every fixture's binary names a package
pub fn package_suffix(dir: &Path) -> String {
    dir.file_name()
        .unwrap()
        .to_string_lossy()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase()
}
