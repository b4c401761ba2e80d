#!/usr/bin/env bash
# `rag-eval score --qrels --run` end to end against pytrec_eval (and trec_eval's C binary when
# TREC_EVAL points at one), interleaved round by round, each under `/usr/bin/time -v`.
#
#   benches/scripts/trec_e2e.sh [ROUNDS]      (default 5)
#
# Needs target/release/rag-eval (`cargo build --release --features cli`) and the venv of
# setup.sh; writes the synthetic files with trec_files.py to target/trec-files once, plus a
# copy of the run not grouped by query (shuffled with a fixed random source).
# Prints one line per side and round: wall seconds and peak resident memory (kB).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
dir=target/trec-files
py=benches/scripts/.venv/bin/python
if [ ! -f "$dir/run.txt" ]; then
  python3 benches/scripts/trec_files.py "$dir"
fi
if [ ! -f "$dir/run-shuffled.txt" ]; then
  shuf --random-source=<(openssl enc -aes-256-ctr -pass pass:2024 -nosalt </dev/zero 2>/dev/null) \
    "$dir/run.txt" >"$dir/run-shuffled.txt"
fi
measure() { # name, command...
  local name=$1 log
  shift
  log=$(mktemp)
  /usr/bin/time -v "$@" >"$log.out" 2>"$log"
  awk -v n="$name" '/Elapsed \(wall clock\)/ {t=$NF} /Maximum resident/ {m=$NF}
    END {split(t, p, ":"); s = (length(p) == 3) ? p[1]*3600 + p[2]*60 + p[3] : p[1]*60 + p[2];
         printf "%s %.2f s %d kB\n", n, s, m}' "$log"
  rm -f "$log" "$log.out"
}
uptime
for r in $(seq "$rounds"); do
  measure ours target/release/rag-eval score --qrels "$dir/qrels.txt" --run "$dir/run.txt" --json --no-record
  measure pytrec_eval "$py" benches/scripts/pytrec_eval_files.py "$dir/qrels.txt" "$dir/run.txt"
  measure ours-shuffled target/release/rag-eval score --qrels "$dir/qrels.txt" --run "$dir/run-shuffled.txt" --json --no-record
  measure pytrec_eval-shuffled "$py" benches/scripts/pytrec_eval_files.py "$dir/qrels.txt" "$dir/run-shuffled.txt"
  if [ -n "${TREC_EVAL:-}" ]; then
    measure trec_eval "$TREC_EVAL" -q -m P -m recall -m ndcg_cut -m recip_rank -m map "$dir/qrels.txt" "$dir/run.txt"
  fi
done
uptime
