#!/usr/bin/env bash
# A new user's first hour, from a fresh clone: the README's set-up commands in the clone, then
# the gate guide's walkthrough (docs/guide/gate.md) in a new crate beside it, with the
# dependency line, the test target and the `tests/rag.rs` exactly as the guide prints them (the
# bundled example data stands in for the user's documents and dataset). Builds share this
# repository's target directory.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
export CARGO_TERM_COLOR=never
unset CI TF_BUILD INSTA_UPDATE INSTA_FORCE_PASS NEXTEST_RUN_ID
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A Markdown block of the clone's FILE: the first ```LANG block after the line matching START,
# unindented by the walkthrough's three spaces.
block() {
    awk -v start="$2" -v lang="$3" '
        index($0, start) { found = 1 }
        found && !inside && $0 ~ "^ *```" lang "$" { inside = 1; next }
        inside && $0 ~ "^ *```$" { exit }
        inside { sub(/^   /, ""); print }
    ' "$1"
}

git clone --quiet "$repo" "$work/rag-eval"
cd "$work/rag-eval"
block README.md "## Set-up" "sh" | grep -q "cargo run --example quickstart"
block README.md "## Set-up" "sh" | sed 's/#.*//' | while read -r command; do
    [ -n "$command" ] || continue
    # FRESH_CLONE_SKIP_SUITE=1 leaves out the full `cargo test` (for a quick local check).
    if [ "${FRESH_CLONE_SKIP_SUITE:-0}" = 1 ] && [ "$command" = "cargo test" ]; then
        echo "skipping: $command"
        continue
    fi
    echo "+ $command"
    $command </dev/null
done

# The walkthrough's crate, beside the clone as the guide's path dependency expects.
guide="$work/rag-eval/docs/guide/gate.md"
cd "$work"
cargo new --quiet --lib handbook
cd handbook
block "$guide" "1. Put your crate beside the clone" "toml" | grep -v '^# Cargo.toml' >>Cargo.toml
grep -q 'rag-eval = { path = "../rag-eval" }' Cargo.toml
cp ../rag-eval/Cargo.lock .
mkdir -p docs golden/datasets tests
cp -r ../rag-eval/examples/data/corpus/. docs/
cp ../rag-eval/examples/data/questions.jsonl golden/datasets/handbook.jsonl
block "$guide" "3. Declare cases in \`tests/rag.rs\`" "rust,ignore" >tests/rag.rs
grep -q 'rag_eval::main!' tests/rag.rs

# Step 4: the first run passes and leaves baselines to accept; accepted, CI passes against them.
out="$(cargo test --test rag 2>&1)" || { echo "$out"; exit 1; }
grep -q "NEW recursive_400: no baseline yet" <<<"$out" || { echo "$out"; exit 1; }
INSTA_UPDATE=always cargo test --test rag >/dev/null 2>&1
ls golden/recursive_400.snap golden/production.snap >/dev/null
CI=true cargo test --test rag
echo "fresh clone: set-up commands and the gate walkthrough pass"
