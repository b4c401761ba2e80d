#!/usr/bin/env bash
# The cost of rag-eval to a team that gates retrieval in `cargo test`: a new crate with the
# guides' dependency line (`rag-eval = { path = … }` under [dev-dependencies]) and one
# `#[rag_eval]` case, built cold with `cargo test --no-run --timings`, once per source tree
# given, the trees taking turns round by round so that both see the same load.
#
#   benches/scripts/downstream_build.sh ROUNDS LABEL=DIR [LABEL=DIR ...]
#
# e.g. before/after a change, from a worktree of the base commit:
#   git worktree add /tmp/before HEAD~1
#   benches/scripts/downstream_build.sh 3 before=/tmp/before after=.
#
# Prints one line per build (label, wall seconds, CPU seconds, crates compiled, size of the
# target folder, load average at its start) and the medians per label. The registry must already hold the crates (run once with network);
# nothing else is shared between builds: each has a fresh target folder.
set -euo pipefail
rounds="${1:?usage: $0 ROUNDS LABEL=DIR [LABEL=DIR ...]}"
shift
[ "$#" -ge 1 ] || { echo "usage: $0 ROUNDS LABEL=DIR [LABEL=DIR ...]" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CARGO_TERM_COLOR=never

gate_crate() {
    local dir="$1" source="$2"
    mkdir -p "$dir/tests" "$dir/src" "$dir/golden/datasets"
    cat >"$dir/Cargo.toml" <<EOF
[package]
name = "handbook"
version = "0.1.0"
edition = "2021"

[dev-dependencies]
rag-eval = { path = "$source" }

[[test]]
name = "rag"
harness = false
EOF
    : >"$dir/src/lib.rs"
    cp -r "$source/examples/data/corpus" "$dir/docs"
    cp "$source/examples/data/questions.jsonl" "$dir/golden/datasets/handbook.jsonl"
    cp "$source/Cargo.lock" "$dir/Cargo.lock"
    cat >"$dir/tests/rag.rs" <<'EOF'
use rag_eval::prelude::*;

#[rag_eval(dataset = "golden/datasets/handbook.jsonl", corpus = "docs", k = 5,
           min_span_recall = 0.5)]
fn recursive_400() -> Bm25Retriever {
    Bm25Retriever::new(RecursiveCharacterChunker::new(400, 0))
}

rag_eval::main!(recursive_400);
EOF
}

declare -A seconds cpus
for round in $(seq 1 "$rounds"); do
    for side in "$@"; do
        label="${side%%=*}"
        source="$(cd "${side#*=}" && pwd)"
        dir="$work/$label-$round"
        gate_crate "$dir" "$source"
        load="$(cut -d' ' -f1 /proc/loadavg)"
        # Wall time, and the CPU time of every process of the build (user + system), which a
        # busy machine stretches far less than the wall time.
        TIMEFORMAT='%R %U %S'
        { time (cd "$dir" && CARGO_TARGET_DIR="$dir/target" cargo test --offline --no-run \
            --timings >"$dir/build.log" 2>&1) || { cat "$dir/build.log"; exit 1; }; } \
            2>"$dir/time.txt"
        read -r took user system <"$dir/time.txt"
        cpu=$(echo "$user + $system" | bc)
        crates=$(grep -c '^ *Compiling ' "$dir/build.log" || true)
        size=$(du -sm "$dir/target" | cut -f1)
        printf '%s\tround %s\t%.1f s\tcpu %.1f s\t%s crates\t%s MB\tload %s\n' \
            "$label" "$round" "$took" "$cpu" "$crates" "$size" "$load"
        seconds[$label]+="$took "
        cpus[$label]+="$cpu "
        mkdir -p "${TIMINGS_DIR:-$work}/$label-$round"
        cp "$dir"/target/cargo-timings/cargo-timing.html "${TIMINGS_DIR:-$work}/$label-$round/" \
            2>/dev/null || true
        rm -rf "$dir/target"
    done
done
for side in "$@"; do
    label="${side%%=*}"
    median=$(echo "${seconds[$label]}" | tr ' ' '\n' | grep . | sort -n |
        awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}')
    cpu=$(echo "${cpus[$label]}" | tr ' ' '\n' | grep . | sort -n |
        awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}')
    printf 'median %s: %.1f s wall (%s), %.1f s cpu\n' "$label" "$median" "${seconds[$label]% }" "$cpu"
done
