#!/usr/bin/env bash
# `rag-eval trec_eval -m all_trec` against trec_eval 10.0's C binary on the same files, each
# under `/usr/bin/time -v`, rounds interleaved; checks first that both print the same bytes.
#
#   TREC_EVAL=/path/to/trec_eval benches/scripts/trec_eval_e2e.sh [ROUNDS] [QUERIES RESULTS JUDGED]
#
# Defaults: 3 rounds on 2,000 queries × 1,000 results × 50 judgements. Needs
# target/release/rag-eval (`cargo build --release --features cli`) and the C binary built from
# https://github.com/usnistgov/trec_eval (`make`). Writes the synthetic files with
# trec_files.py to target/trec-eval-files/Q-R-J once. Prints one line per side and round: wall
# seconds and peak resident memory (kB). Set SKIP_C=1 to time only ours (trec_eval's query
# matching is quadratic: at 100,000 queries it runs for a long time).
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-3}
queries=${2:-2000}
results=${3:-1000}
judged=${4:-50}
dir=target/trec-eval-files/$queries-$results-$judged
ours=target/release/rag-eval
if [ ! -f "$dir/run.txt" ]; then
  python3 benches/scripts/trec_files.py "$dir" --queries "$queries" --results "$results" --judged "$judged"
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
if [ -z "${SKIP_C:-}" ]; then
  cmp <("$ours" trec_eval -q -m all_trec "$dir/qrels.txt" "$dir/run.txt") \
    <("${TREC_EVAL:?set TREC_EVAL to trec_eval's binary}" -q -m all_trec "$dir/qrels.txt" "$dir/run.txt")
  echo "same output (-q -m all_trec)"
fi
uptime
for r in $(seq "$rounds"); do
  measure ours "$ours" trec_eval -m all_trec "$dir/qrels.txt" "$dir/run.txt"
  if [ -z "${SKIP_C:-}" ]; then
    measure trec_eval "$TREC_EVAL" -m all_trec "$dir/qrels.txt" "$dir/run.txt"
  fi
done
uptime
