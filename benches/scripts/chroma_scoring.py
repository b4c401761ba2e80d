#!/usr/bin/env python3
"""Chroma-mode token-level scoring, transcribed from chunking_evaluation's algorithm.

chunking_evaluation (the code behind Chroma's report "Evaluating Chunking Strategies for
Retrieval") scores each question with Python loops over lists of (start, end) ranges: per
retrieved chunk of the question's corpus and per reference, it intersects the two ranges
(touching ranges give an empty intersection and still count as meeting), removes the
intersection from the list of unused reference ranges, and merges it into the list of covered
ranges. Recall, precision and IoU then divide the covered length by the plain sums of the
reference lengths, of the retrieved lengths, and of the retrieved lengths plus the unused
reference lengths; PrecisionΩ walks every chunk of the chunker's output instead and divides by
the merged union of the meeting chunks and the unused references. A zero denominator scores 0.

This file is written from those rules and keeps that algorithmic shape (the cost being
compared), with stdlib only. Two uses:

  chroma_scoring.py fixture DATA OUT
      builds a deterministic retrieval over the chunking-eval-general set in DATA and writes it,
      with every question's four figures and their means and population standard deviations, to
      the JSON file OUT (the fixture tests/fixtures/chroma/ checks the Rust side against).

  chroma_scoring.py bench DATA RETRIEVAL [--reps N]
      scores the retrieval stored in the fixture RETRIEVAL, N times, and prints one JSON line
      with the median wall time of a full scoring pass (all four metrics, every question).

The retrieval: every corpus is cut into fixed windows of CHUNK_SIZE characters starting every
CHUNK_SIZE - CHUNK_OVERLAP characters (the last window ends at the corpus' end); each question
gets K distinct windows drawn by a SplitMix64 generator seeded with SEED + question index: in
each draw, with probability 4/10 a window meeting one of its references, with 2/10 a window at
most three places away from its first such window (near misses, touching or overlapping ones),
and otherwise a uniformly random window of a uniformly random corpus.
"""

import argparse
import csv
import json
import math
import statistics
import sys
import time
from pathlib import Path

CHUNK_SIZE = 400
CHUNK_OVERLAP = 100
K = 5
SEED = 20240601
MASK64 = (1 << 64) - 1


# --- range arithmetic on (start, end) tuples ------------------------------------------------

def range_total(ranges):
    """Sum of lengths, overlaps counted as often as they occur."""
    return sum(end - start for start, end in ranges)


def merge_ranges(ranges):
    """Union of ranges: sorted by start, overlapping or touching neighbours joined."""
    if not ranges:
        return []
    ordered = sorted(ranges, key=lambda r: r[0])
    merged = [ordered[0]]
    for start, end in ordered[1:]:
        last_start, last_end = merged[-1]
        if start <= last_end:
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


def meet(a, b):
    """The common part of two ranges, or None; touching ranges give an empty range."""
    start = max(a[0], b[0])
    end = min(a[1], b[1])
    if start <= end:
        return (start, end)
    return None


def subtract(ranges, cut):
    """Every range of the list with the part inside `cut` removed."""
    cut_start, cut_end = cut
    kept = []
    for start, end in ranges:
        if end < cut_start or start > cut_end:
            kept.append((start, end))
            continue
        if start < cut_start:
            kept.append((start, cut_start))
        if end > cut_end:
            kept.append((cut_end, end))
    return kept


# --- the scoring loops ----------------------------------------------------------------------

def omega_scores(questions, chunk_metadatas):
    """PrecisionΩ of every question against the whole chunker output."""
    scores = []
    for question in questions:
        references = question["references"]
        corpus_id = question["corpus_id"]
        covered = []
        chunk_cover = []
        unused = [(r["start_index"], r["end_index"]) for r in references]
        for meta in chunk_metadatas:
            if meta["corpus_id"] != corpus_id:
                continue
            chunk = (meta["start_index"], meta["end_index"])
            for ref in references:
                common = meet(chunk, (int(ref["start_index"]), int(ref["end_index"])))
                if common is not None:
                    unused = subtract(unused, common)
                    covered = merge_ranges([common] + covered)
                    chunk_cover = merge_ranges([chunk] + chunk_cover)
        denominator = merge_ranges(chunk_cover + unused)
        if covered and range_total(denominator):
            scores.append(range_total(covered) / range_total(denominator))
        else:
            scores.append(0.0)
    return scores


def retrieval_scores(questions, retrievals):
    """(recall, precision, iou) of every question for its retrieved chunk metadatas."""
    out = []
    for question, retrieved in zip(questions, retrievals):
        references = question["references"]
        corpus_id = question["corpus_id"]
        covered = []
        chunk_cover = []
        unused = [(r["start_index"], r["end_index"]) for r in references]
        for meta in retrieved:
            if meta["corpus_id"] != corpus_id:
                continue
            chunk = (meta["start_index"], meta["end_index"])
            for ref in references:
                common = meet(chunk, (int(ref["start_index"]), int(ref["end_index"])))
                if common is not None:
                    unused = subtract(unused, common)
                    covered = merge_ranges([common] + covered)
                    # The reference keeps this union here too (unused by these three
                    # figures); kept so that the cost compared is the same.
                    chunk_cover = merge_ranges([chunk] + chunk_cover)
        hit = range_total(covered)
        truth_total = range_total([(r["start_index"], r["end_index"]) for r in references])
        retrieved_total = range_total([(m["start_index"], m["end_index"]) for m in retrieved])
        iou_total = retrieved_total + range_total(unused)
        out.append((
            hit / truth_total if truth_total else 0.0,
            hit / retrieved_total if retrieved_total else 0.0,
            hit / iou_total if iou_total else 0.0,
        ))
    return out


def score_all(questions, chunk_metadatas, retrievals):
    omega = omega_scores(questions, chunk_metadatas)
    rest = retrieval_scores(questions, retrievals)
    return [
        {"recall": r, "precision": p, "iou": i, "precision_omega": o}
        for (r, p, i), o in zip(rest, omega)
    ]


# --- data, chunks and the generated retrieval -----------------------------------------------

def load(data):
    data = Path(data)
    with open(data / "questions_df.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    questions = [
        {"corpus_id": row["corpus_id"], "references": json.loads(row["references"])}
        for row in rows
    ]
    corpora = sorted({q["corpus_id"] for q in questions})
    lengths = {}
    for c in corpora:
        with open(data / "corpora" / f"{c}.md", encoding="utf-8") as f:
            lengths[c] = len(f.read())
    return questions, corpora, lengths


def windows(length):
    step = CHUNK_SIZE - CHUNK_OVERLAP
    out = []
    start = 0
    while True:
        end = min(start + CHUNK_SIZE, length)
        out.append((start, end))
        if end >= length:
            return out
        start += step


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n):
        return self.next() % n


def generate_retrieval(questions, corpora, chunks):
    """K distinct (corpus_id, window index) pairs per question (see the module docs)."""
    picks_all = []
    for index, question in enumerate(questions):
        rng = SplitMix64(SEED + index)
        own = question["corpus_id"]
        refs = [(r["start_index"], r["end_index"]) for r in question["references"]]
        hits = [
            j for j, w in enumerate(chunks[own]) if any(meet(w, r) is not None for r in refs)
        ]
        picks = []
        while len(picks) < K:
            roll = rng.below(10)
            if roll < 4 and hits:
                pick = (own, hits[rng.below(len(hits))])
            elif roll < 6:
                base = hits[0] if hits else 0
                j = base + rng.below(7) - 3
                pick = (own, min(max(j, 0), len(chunks[own]) - 1))
            else:
                other = corpora[rng.below(len(corpora))]
                pick = (other, rng.below(len(chunks[other])))
            if pick not in picks:
                picks.append(pick)
        picks_all.append(picks)
    return picks_all


def metadatas(chunks, corpora):
    return [
        {"start_index": s, "end_index": e, "corpus_id": c}
        for c in corpora
        for (s, e) in chunks[c]
    ]


def mean_std(values):
    n = len(values)
    mean = sum(values) / n
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / n)


def write_fixture(data, out):
    questions, corpora, lengths = load(data)
    chunks = {c: windows(lengths[c]) for c in corpora}
    picks = generate_retrieval(questions, corpora, chunks)
    retrievals = [
        [
            {"start_index": chunks[c][j][0], "end_index": chunks[c][j][1], "corpus_id": c}
            for c, j in p
        ]
        for p in picks
    ]
    scores = score_all(questions, metadatas(chunks, corpora), retrievals)
    names = ["recall", "precision", "iou", "precision_omega"]
    summary = {}
    for name in names:
        mean, std = mean_std([s[name] for s in scores])
        summary[name] = {"mean": mean, "std": std}
    fixture = {
        "generator": "benches/scripts/chroma_scoring.py fixture",
        "data": "chunking-eval-general",
        "chunk_size": CHUNK_SIZE,
        "chunk_overlap": CHUNK_OVERLAP,
        "k": K,
        "seed": SEED,
        "corpus_chars": {f"{c}.md": lengths[c] for c in corpora},
        "summary": summary,
        "questions": [
            {
                "row": i,
                "doc": f"{questions[i]['corpus_id']}.md",
                "retrieved": [
                    [f"{m['corpus_id']}.md", m["start_index"], m["end_index"]] for m in r
                ],
                **{name: s[name] for name in names},
            }
            for i, (r, s) in enumerate(zip(retrievals, scores))
        ],
    }
    rows = fixture.pop("questions")
    head = json.dumps(fixture, indent=1)[:-2]
    body = ",\n".join("  " + json.dumps(row) for row in rows)
    with open(out, "w", encoding="utf-8") as f:
        f.write(f'{head},\n "questions": [\n{body}\n ]\n}}\n')
    for name in names:
        m = summary[name]
        print(f"{name:16} {100 * m['mean']:6.2f} ± {100 * m['std']:5.2f} %")


def bench(data, retrieval, reps):
    questions, corpora, lengths = load(data)
    with open(retrieval, encoding="utf-8") as f:
        fixture = json.load(f)
    size, overlap = fixture["chunk_size"], fixture["chunk_overlap"]
    if (size, overlap) != (CHUNK_SIZE, CHUNK_OVERLAP):
        sys.exit(f"{retrieval}: chunks {size}/{overlap}, expected {CHUNK_SIZE}/{CHUNK_OVERLAP}")
    chunks = {c: windows(lengths[c]) for c in corpora}
    chunk_metadatas = metadatas(chunks, corpora)
    retrievals = [
        [
            {"start_index": s, "end_index": e, "corpus_id": doc.removesuffix(".md")}
            for doc, s, e in q["retrieved"]
        ]
        for q in fixture["questions"]
    ]
    times = []
    scores = None
    for _ in range(reps):
        t0 = time.perf_counter()
        scores = score_all(questions, chunk_metadatas, retrievals)
        times.append(time.perf_counter() - t0)
    median = statistics.median(times)
    means = {n: mean_std([s[n] for s in scores])[0] for n in scores[0]}
    print(json.dumps({
        "peer": "chroma_scoring.py (chunking_evaluation's algorithm)",
        "queries": len(questions),
        "chunks": len(chunk_metadatas),
        "reps": reps,
        "median_s": median,
        "means": means,
    }))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fixture", help="write the reference fixture")
    f.add_argument("data")
    f.add_argument("out")
    b = sub.add_parser("bench", help="time the scoring of a stored retrieval")
    b.add_argument("data")
    b.add_argument("retrieval")
    b.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    if args.command == "fixture":
        write_fixture(args.data, args.out)
    else:
        bench(args.data, args.retrieval, max(1, args.reps))


if __name__ == "__main__":
    main()
