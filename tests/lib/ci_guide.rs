//! The CI guide's builds can reach the store it sets up: the `rag-eval` it installs for the
//! gate, and the gate crate's dependency it shows, have the features its run store needs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

fn read(file: &str) -> String {
    std::fs::read_to_string(Path::new(REPO).join(file)).unwrap()
}

/// Cargo.toml's `[features]`: each feature and the features it enables (`dep:` entries left
/// out). One feature a line, as the manifest writes them.
fn features() -> BTreeMap<String, Vec<String>> {
    let manifest = read("Cargo.toml");
    let table = manifest
        .split_once("\n[features]\n")
        .expect("Cargo.toml has [features]")
        .1;
    let table = table.split("\n[").next().unwrap();
    table
        .lines()
        .filter_map(|line| line.split_once(" = ["))
        .map(|(name, list)| {
            let enabled = list
                .trim_end_matches(']')
                .split(',')
                .map(|f| f.trim().trim_matches('"'))
                .filter(|f| !f.is_empty() && !f.starts_with("dep:") && !f.contains('/'))
                .map(str::to_owned)
                .collect();
            (name.trim().to_owned(), enabled)
        })
        .collect()
}

/// `given` with every feature they enable, and the defaults unless `defaults` is false.
fn closure(given: &[String], defaults: bool) -> BTreeSet<String> {
    let table = features();
    let mut todo: Vec<String> = given.to_vec();
    if defaults {
        todo.push("default".into());
    }
    let mut all = BTreeSet::new();
    while let Some(f) = todo.pop() {
        let known = table.get(&f).unwrap_or_else(|| panic!("no feature `{f}`"));
        if all.insert(f) {
            todo.extend(known.iter().cloned());
        }
    }
    all
}

/// The feature the store of a guide needs: `postgres` when it points the jobs at a PostgreSQL
/// URL, else `runs`.
fn store_feature(guide: &str) -> &'static str {
    if guide.contains("postgres://") {
        "postgres"
    } else {
        "runs"
    }
}

/// The `--features` of every `cargo install` the text prints.
fn installs(guide: &str) -> Vec<Vec<String>> {
    let text = guide.replace('\n', " ");
    text.match_indices("cargo install")
        .map(|(at, _)| {
            let rest = &text[at..];
            let command = &rest[..rest.find('`').unwrap_or(rest.len())];
            let words: Vec<&str> = command.split_whitespace().collect();
            let given = words
                .iter()
                .position(|w| *w == "--features")
                .map(|i| words[i + 1])
                .or_else(|| words.iter().find_map(|w| w.strip_prefix("--features=")))
                .unwrap_or_else(|| panic!("`{command}` names no features"));
            given.split(',').map(str::to_owned).collect()
        })
        .collect()
}

#[test]
fn the_ci_guides_gate_command_reads_the_store_the_guide_sets_up() {
    let guide = read("docs/guide/ci.md");
    let needed = store_feature(&guide);
    assert_eq!(needed, "postgres", "the guide shares a PostgreSQL store");
    let installs = installs(&guide);
    assert!(
        !installs.is_empty(),
        "the guide says how to install `rag-eval gate`"
    );
    for features in installs {
        let enabled = closure(&features, true);
        assert!(
            enabled.contains("cli") && enabled.contains(needed),
            "docs/guide/ci.md installs `rag-eval` with --features {} (enabling {enabled:?}), \
             which cannot read the guide's store (feature `{needed}`)",
            features.join(",")
        );
    }
}

#[test]
fn the_ci_guides_dependency_line_has_the_store_feature() {
    let guide = read("docs/guide/ci.md");
    let needed = store_feature(&guide);
    let lines: Vec<&str> = guide
        .lines()
        .filter(|l| l.trim_start().starts_with("rag-eval = {"))
        .collect();
    assert!(!lines.is_empty(), "the guide shows the dependency line");
    for line in lines {
        let list = line
            .split_once("features = [")
            .unwrap_or_else(|| panic!("`{line}` names no features"))
            .1;
        let features: Vec<String> = list[..list.find(']').unwrap()]
            .split(',')
            .map(|f| f.trim().trim_matches('"').to_owned())
            .collect();
        let defaults = !line.contains("default-features = false");
        assert!(
            closure(&features, defaults).contains(needed),
            "`{line}` lacks feature `{needed}`"
        );
    }
}

#[test]
fn the_feature_closure_follows_the_manifest() {
    // `cli` brings `runs` but not `postgres`: the gap the guide's line must close.
    let cli = closure(&["cli".into()], false);
    assert!(cli.contains("runs") && !cli.contains("postgres"), "{cli:?}");
    assert!(closure(&["postgres".into()], false).contains("runs"));
    assert_eq!(
        installs("run `cargo install --path . --features cli` or\n`cargo install --features=a,b`"),
        vec![vec!["cli".to_owned()], vec!["a".to_owned(), "b".to_owned()]]
    );
}
