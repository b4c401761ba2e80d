"""Writes the synthetic TREC files of the `score --qrels --run` end-to-end figure.

    trec_files.py OUT_DIR [--queries 100000] [--results 100] [--judged 10] [--seed 2024]

Writes OUT_DIR/qrels.txt (QUERIES × JUDGED lines, grades 0–3, at least one relevant per query)
and OUT_DIR/run.txt (QUERIES × RESULTS lines, grouped by query; JUDGED / 2 of each query's
judged documents are among its results; scores with three decimals, so ties are common).
The same arguments always give the same bytes. A copy of the run not grouped by query is made
with `shuf` (see benches/README.md).
"""

import argparse
import os
import random


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--queries", type=int, default=100_000)
    p.add_argument("--results", type=int, default=100)
    p.add_argument("--judged", type=int, default=10)
    p.add_argument("--seed", type=int, default=2024)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    retrieved = a.judged // 2
    with open(os.path.join(a.out, "qrels.txt"), "w") as qrels, open(
        os.path.join(a.out, "run.txt"), "w"
    ) as run:
        for q in range(a.queries):
            qid = f"q{q:05d}"
            docs = rng.sample(range(10_000_000), a.judged + a.results - retrieved)
            grades = [rng.choice((0, 0, 0, 0, 1, 1, 1, 2, 2, 3)) for _ in range(a.judged)]
            if not any(grades):
                grades[0] = 1
            qrels.write("".join(f"{qid} 0 d{d} {g}\n" for d, g in zip(docs, grades)))
            results = docs[a.judged - retrieved :]
            rng.shuffle(results)
            scores = sorted((rng.randrange(1000) for _ in results), reverse=True)
            run.write(
                "".join(
                    f"{qid} Q0 d{d} {r + 1} 0.{s:03d} r\n"
                    for r, (d, s) in enumerate(zip(results, scores))
                )
            )


if __name__ == "__main__":
    main()
