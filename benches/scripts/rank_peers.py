"""Python peers of the rank_metrics benchmark: pytrec_eval and ranx on the same TREC files.

    rank_peers.py QRELS RUN [--reps N] [--only pytrec_eval|ranx]
    rank_peers.py QRELS RUN --serve


Reads the files into dicts (not timed), then times each library's evaluation of P@10, R@10,
MRR, nDCG@10 and MAP over every query:

- pytrec_eval: `RelevanceEvaluator.evaluate(run)` with the evaluator built beforehand;
- ranx: `evaluate(qrels, run, metrics)` on `Qrels`/`Run` objects built beforehand; the first
  call compiles with numba and is reported apart, the median is over the calls after it.

With `--serve`, pytrec_eval alone, one evaluation per `go` line read from stdin, so the caller
can interleave its own timings with these: prints `ready` once the evaluator is built, then the
seconds of each evaluation on a line of its own; at the end of stdin, the JSON object below.

Otherwise prints one JSON object on the last line of stdout: per library the median seconds, the
number of timed calls, and the mean of each measure (so the caller can check all sides agree).
"""

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict


def read_qrels(path):
    qrels = defaultdict(dict)
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if parts:
                qrels[parts[0]][parts[2]] = int(parts[3])
    return dict(qrels)


def read_run(path):
    run = defaultdict(dict)
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if parts:
                run[parts[0]][parts[2]] = float(parts[4])
    return dict(run)


def timed(fn, reps):
    times, result = [], None
    for _ in range(reps):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def bench_pytrec_eval(qrels, run, reps):
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"P.10", "recall.10", "ndcg_cut.10", "recip_rank", "map"}
    )
    median, per_query = timed(lambda: evaluator.evaluate(run), reps)
    names = {
        "P_10": "precision@10",
        "recall_10": "recall@10",
        "ndcg_cut_10": "ndcg@10",
        "recip_rank": "mrr",
        "map": "map",
    }
    means = {
        ours: statistics.fmean(q[theirs] for q in per_query.values())
        for theirs, ours in names.items()
    }
    return {"median_s": median, "reps": reps, "queries": len(per_query), "means": means}


def serve_pytrec_eval(qrels, run):
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"P.10", "recall.10", "ndcg_cut.10", "recip_rank", "map"}
    )
    print("ready", flush=True)
    times, per_query = [], None
    for line in sys.stdin:
        if line.strip() != "go":
            continue
        t = time.perf_counter()
        per_query = evaluator.evaluate(run)
        times.append(time.perf_counter() - t)
        print(f"{times[-1]:.6f}", flush=True)
    means = {}
    if per_query:
        names = {
            "P_10": "precision@10",
            "recall_10": "recall@10",
            "ndcg_cut_10": "ndcg@10",
            "recip_rank": "mrr",
            "map": "map",
        }
        means = {
            ours: statistics.fmean(q[theirs] for q in per_query.values())
            for theirs, ours in names.items()
        }
    return {"times_s": times, "means": means}


def bench_ranx(qrels, run, reps):
    import ranx

    t = time.perf_counter()
    r_qrels, r_run = ranx.Qrels(qrels), ranx.Run(run)
    build = time.perf_counter() - t
    metrics = ["precision@10", "recall@10", "mrr", "ndcg@10", "map"]

    def once():
        return ranx.evaluate(r_qrels, r_run, metrics, save_results_in_run=False)

    t = time.perf_counter()
    once()
    first = time.perf_counter() - t
    median, means = timed(once, reps)
    return {
        "median_s": median,
        "reps": reps,
        "first_call_s": first,
        "build_s": build,
        "means": {k: float(v) for k, v in means.items()},
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("qrels")
    p.add_argument("run")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--only", choices=["pytrec_eval", "ranx"])
    p.add_argument("--serve", action="store_true")
    a = p.parse_args()

    t = time.perf_counter()
    qrels, run = read_qrels(a.qrels), read_run(a.run)
    print(f"read {len(run)} run queries in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    if a.serve:
        print(json.dumps({"pytrec_eval": serve_pytrec_eval(qrels, run)}))
        return
    out = {}
    if a.only in (None, "pytrec_eval"):
        out["pytrec_eval"] = bench_pytrec_eval(qrels, run, a.reps)
    if a.only in (None, "ranx"):
        out["ranx"] = bench_ranx(qrels, run, a.reps)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
