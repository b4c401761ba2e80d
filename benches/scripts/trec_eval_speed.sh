#!/usr/bin/env bash
# `rag-eval trec_eval` against trec_eval's C binary and pytrec_eval, in pairs run back to back
# (ours, then the peer), and the table of benches/README.md: medians of wall and CPU time
# (user + system), the median of the pairs' wall ratios, peak memory.
#
#   benches/scripts/trec_eval_speed.sh [PAIRS_C [PAIRS_PY]]     (default 5 and 3)
#
# Needs the C binary at $TREC_EVAL (default /tmp/trec_eval/trec_eval) and pytrec_eval in the
# venv at $PYTREC (default ~/.cache/rag-eval-ci/pytrec_eval); see benches/README.md. Builds the
# bench binary (release; $BENCH names another build of it instead), writes the generated files
# once under target/trec-eval-bench and checks that the C binary prints the same bytes with
# `-q -m all_trec` before timing.
set -euo pipefail
cd "$(dirname "$0")/../.."
pairs_c=${1:-5}
pairs_py=${2:-3}
c=${TREC_EVAL:-/tmp/trec_eval/trec_eval}
py=${PYTREC:-$HOME/.cache/rag-eval-ci/pytrec_eval}/bin/python
target=${CARGO_TARGET_DIR:-target}
if [ -n "${BENCH:-}" ]; then
  bench=$BENCH # another build of the bench, e.g. an older one for a before/after
else
  cargo bench -q --features trec --bench trec_eval --no-run
  bench=$(ls -t "$target"/release/deps/trec_eval-* | grep -v '\.d$' | head -1)
fi
# The files (and, for the first, the byte-for-byte check against the C binary).
TREC_EVAL=$c "$bench" 2000 1000 50 0
"$bench" 100000 100 10 0 >/dev/null
small=target/trec-eval-bench/2000-1000-50
large=target/trec-eval-bench/100000-100-10
five=(-m P -m recall -m ndcg_cut -m recip_rank -m map)
log=$(mktemp)
trap 'rm -f "$log" "$log.t"' EXIT
measure() { # case, side, command...
  local case=$1 side=$2
  shift 2
  /usr/bin/time -o "$log.t" -f '%e %U %S %M' "$@" >/dev/null
  echo "$case $side $(cat "$log.t")" >>"$log"
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$pairs_c"); do
  measure 1 ours "$bench" child -m all_trec $small/qrels.txt $small/run.txt
  measure 1 peer "$c" -m all_trec $small/qrels.txt $small/run.txt
done
for _ in $(seq "$pairs_py"); do
  measure 2 ours "$bench" child "${five[@]}" $large/qrels.txt $large/run.txt
  measure 2 peer "$py" benches/scripts/pytrec_eval_files.py $large/qrels.txt $large/run.txt
  measure 3 ours "$bench" child -m all_trec $large/qrels.txt $large/run.txt
  measure 3 peer "$py" benches/scripts/pytrec_eval_files.py $large/qrels.txt $large/run.txt all
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$log" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    case, side, wall, user, sys_, kb = line.split()
    rows.setdefault(case, {}).setdefault(side, []).append(
        (float(wall), float(user) + float(sys_), int(kb)))
names = {
    "1": ("2,000 × 1,000 × 50, `-m all_trec`", "trec_eval (C)"),
    "2": ("100,000 × 100 × 10, 5 measures", "pytrec_eval"),
    "3": ("100,000 × 100 × 10, `-m all_trec` vs every `supported_measures`", "pytrec_eval"),
}
print("| file | pairs | rag-eval trec_eval (wall, CPU) | peer (wall, CPU) "
      "| wall ratio, median of pairs (range) | CPU ratio | peak memory |")
print("|---|---|---|---|---|---|---|")
med = statistics.median
for case, (label, peer) in names.items():
    o, p = rows[case]["ours"], rows[case]["peer"]
    ratios = sorted(b[0] / a[0] for a, b in zip(o, p))
    print(f"| {label} | {len(o)} | {med(x[0] for x in o):.2f} s, {med(x[1] for x in o):.2f} s "
          f"| {peer} {med(x[0] for x in p):.2f} s, {med(x[1] for x in p):.2f} s "
          f"| **{med(ratios):.1f}×** ({ratios[0]:.1f}–{ratios[-1]:.1f}) "
          f"| {med(x[1] for x in p) / med(x[1] for x in o):.1f}× "
          f"| {max(x[2] for x in o) / 1024:.0f} MiB vs {max(x[2] for x in p) / 1024:.0f} MiB |")
EOF
