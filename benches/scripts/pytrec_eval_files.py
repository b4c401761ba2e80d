"""pytrec_eval end to end on TREC files, as its users usually run it: the files read into dicts
with Python's own line splitting, then `RelevanceEvaluator.evaluate`.

    pytrec_eval_files.py QRELS RUN [all]

Measures: trec_eval's `P`, `recall`, `ndcg_cut` (at its default cut-offs), `recip_rank` and
`map`, the set `rag-eval score --qrels --run` reports by default; with `all`, every measure of
pytrec_eval's `supported_measures` (against `rag-eval trec_eval -m all_trec`). Prints the
means as JSON.
"""

import json
import statistics
import sys
from collections import defaultdict

import pytrec_eval


def main():
    qrels_path, run_path = sys.argv[1], sys.argv[2]
    every = sys.argv[3:] == ["all"]
    qrels = defaultdict(dict)
    with open(qrels_path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if parts:
                qrels[parts[0]][parts[2]] = int(parts[3])
    run = defaultdict(dict)
    with open(run_path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if parts:
                run[parts[0]][parts[2]] = float(parts[4])
    measures = (
        set(pytrec_eval.supported_measures)
        if every
        else {"P", "recall", "ndcg_cut", "recip_rank", "map"}
    )
    evaluator = pytrec_eval.RelevanceEvaluator(dict(qrels), measures)
    per_query = evaluator.evaluate(dict(run))
    names = sorted(next(iter(per_query.values())))
    # relstring and runid are strings, not figures.
    names = [n for n in names if isinstance(next(iter(per_query.values()))[n], float)]
    means = {n: statistics.fmean(q[n] for q in per_query.values()) for n in names}
    print(json.dumps({"queries": len(per_query), "means": means}))


if __name__ == "__main__":
    main()
