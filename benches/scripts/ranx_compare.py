"""The peer of `cargo bench --bench compare`: ranx's `compare` on the same runs.

    python benches/scripts/ranx_compare.py data DIR     # writes DIR/run1.json … run5.json
    python benches/scripts/ranx_compare.py bench DIR    # times ranx on the same data

`data` builds synthetic qrels and five runs (10,000 queries, seeded), scores ten metrics per
query with ranx and writes each run in the `rag-eval score --json` shape, so `rag-eval compare`
and the Rust bench read exactly the figures ranx compares. `bench` times:

- ranx's `compare` (Fisher's randomization test, 10,000 permutations) in a fresh process whose
  Numba cache was emptied first: the first call pays the compilation;
- the same call again, warm;
- warm, `fisher_randomization_test` alone on the comparisons `rag-eval compare` makes
  (each run against the first, every metric): the same work as ours. ranx's `compare` tests
  every ordered pair of runs (20 pairs for 5 runs), five times the comparisons.

Prints one JSON object of seconds on stdout.
"""

import glob
import json
import os
import sys
import time

import numpy as np

QUERIES = 10_000
RUNS = 5
PERMUTATIONS = 10_000
METRICS = [
    "hits@10",
    "hit_rate@10",
    "precision@10",
    "recall@10",
    "f1@10",
    "r-precision",
    "mrr@10",
    "map@10",
    "ndcg@10",
    "ndcg_burges@10",
]


def build(seed=7):
    from ranx import Qrels, Run

    rng = np.random.default_rng(seed)
    qrels = {}
    runs = [dict() for _ in range(RUNS)]
    for q in range(QUERIES):
        qid = f"q{q:05d}"
        relevant = rng.choice(100, size=int(rng.integers(1, 6)), replace=False)
        qrels[qid] = {f"d{d}": int(rng.integers(1, 3)) for d in relevant}
        for r in range(RUNS):
            # Run r sees relevance a little more clearly than run r - 1.
            noise = rng.normal(size=100)
            signal = np.zeros(100)
            signal[relevant] = 0.6 + 0.1 * r
            scores = signal + noise
            top = np.argsort(-scores)[:20]
            runs[r][qid] = {f"d{d}": float(scores[d]) for d in top}
    return Qrels(qrels), [Run(run, name=f"run{r + 1}") for r, run in enumerate(runs)]


def data(out):
    from ranx import evaluate

    os.makedirs(out, exist_ok=True)
    qrels, runs = build()
    for run in runs:
        scores = evaluate(qrels, run, METRICS, return_mean=False)
        qids = list(qrels.keys())
        per_query = [
            {"id": qid, "metrics": {m: float(scores[m][i]) for m in METRICS}}
            for i, qid in enumerate(qids)
        ]
        result = {
            "level": "trec",
            "queries": len(qids),
            "metrics": {m: float(np.mean(scores[m])) for m in METRICS},
            "std": {m: float(np.std(scores[m])) for m in METRICS},
            "per_query": per_query,
            "dataset_hash": "synthetic10000q",
        }
        with open(os.path.join(out, f"{run.name}.json"), "w") as f:
            json.dump(result, f)


def clear_numba_cache():
    import ranx

    root = os.path.dirname(ranx.__file__)
    for pattern in ("**/*.nbi", "**/*.nbc"):
        for path in glob.glob(os.path.join(root, pattern), recursive=True):
            os.remove(path)


def bench(out):
    """Times ranx. `RANX_COMPARE_PERMUTATIONS` (default 10,000) sets the permutations of the two
    `compare` calls only: at 10,000 they take ~13 minutes each on a quiet core, and a Fisher
    test's time grows linearly with its permutations. The same-work timing always uses 10,000."""
    compare_permutations = int(os.environ.get("RANX_COMPARE_PERMUTATIONS", PERMUTATIONS))
    clear_numba_cache()
    from ranx import compare
    from ranx.statistical_tests import fisher_randomization_test

    qrels, runs = build()
    figures = {"compare_permutations": compare_permutations}
    for label in ("first_call", "warm_call"):
        start = time.perf_counter()
        compare(qrels, runs, METRICS, stat_test="fisher", n_permutations=compare_permutations)
        figures[label] = time.perf_counter() - start

    per_run = []
    for r in range(RUNS):
        with open(os.path.join(out, f"run{r + 1}.json")) as f:
            rows = json.load(f)["per_query"]
        per_run.append({m: np.array([q["metrics"][m] for q in rows]) for m in METRICS})
    start = time.perf_counter()
    p_values = {}
    for r in range(1, RUNS):
        for m in METRICS:
            p, _ = fisher_randomization_test(per_run[0][m], per_run[r][m], PERMUTATIONS, 0.01, 42)
            p_values[f"run{r + 1}:{m}"] = float(p)
    figures["warm_same_comparisons"] = time.perf_counter() - start
    figures["p_values"] = p_values
    print(json.dumps(figures))


if __name__ == "__main__":
    {"data": data, "bench": bench}[sys.argv[1]](sys.argv[2])
