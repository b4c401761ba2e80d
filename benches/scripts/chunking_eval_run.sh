#!/usr/bin/env bash
# The whole chunking-eval-general evaluation with BM25 (load five corpora, import 472 questions,
# chunk, index, retrieve, score in Chroma mode, for recursive 400/0 and token 250/125), each run a
# cold process: median wall time and peak memory over N runs (default 5).
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-5}
cargo build -q --release --example chunking_benchmark
bin=target/release/examples/chunking_benchmark
times=()
rss=()
for _ in $(seq "$runs"); do
  out=$( { /usr/bin/time -f "%e %M" "$bin" recursive:size=400,overlap=0 token:size=250,overlap=125 >/dev/null; } 2>&1 | tail -1)
  times+=("${out% *}")
  rss+=("${out#* }")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "runs: $runs; median wall time: $(median "${times[@]}") s; median peak RSS: $(( $(median "${rss[@]}") / 1024 )) MiB"
