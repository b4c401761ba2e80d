"""LangChain's side of `benches/chunking.rs`: times RecursiveCharacterTextSplitter on a corpus.

Chunks every `*.md` file of CORPORA_DIR REPS times in two ways and prints one JSON object with
the medians and all timings in seconds, the number of chunks and of characters:

- `median_s`: `RecursiveCharacterTextSplitter(chunk_size, chunk_overlap, add_start_index=True)
  .create_documents(...)`, chunks with their start offsets, the counterpart of our
  position-aware chunking;
- `split_text_median_s`: `.split_text(...)`, chunk texts only.

Every run's wall time is listed (`times_s`, `split_text_times_s`), and its CPU time of the
thread (`cpu_times_s`, `split_text_cpu_times_s`).

    benches/scripts/.venv/bin/python benches/scripts/langchain_chunking.py \
        CORPORA_DIR --size 400 --overlap 0 --reps 7
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from importlib.metadata import version
from pathlib import Path

from langchain_text_splitters import RecursiveCharacterTextSplitter


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpora")
    ap.add_argument("--size", type=int, default=400)
    ap.add_argument("--overlap", type=int, default=0)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()

    texts = []
    for path in sorted(Path(args.corpora).glob("*.md")):
        with open(path, encoding="utf-8", newline="") as f:
            texts.append(f.read())
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=args.size, chunk_overlap=args.overlap, add_start_index=True
    )

    # Wall time, and the thread's CPU time, which a busy machine inflates less.
    times, split_times, cpu_times, split_cpu_times = [], [], [], []
    chunks = 0
    for _ in range(args.reps):
        t0, c0 = time.perf_counter(), time.thread_time()
        docs = [splitter.create_documents([t]) for t in texts]
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.thread_time() - c0)
        chunks = sum(len(d) for d in docs)
        t0, c0 = time.perf_counter(), time.thread_time()
        split = [splitter.split_text(t) for t in texts]
        split_times.append(time.perf_counter() - t0)
        split_cpu_times.append(time.thread_time() - c0)
        assert sum(len(s) for s in split) == chunks

    print(
        json.dumps(
            {
                "tool": f"langchain-text-splitters {version('langchain-text-splitters')}",
                "median_s": statistics.median(times),
                "times_s": times,
                "split_text_median_s": statistics.median(split_times),
                "split_text_times_s": split_times,
                "cpu_times_s": cpu_times,
                "split_text_cpu_times_s": split_cpu_times,
                "chunks": chunks,
                "chars": sum(len(t) for t in texts),
            }
        )
    )


if __name__ == "__main__":
    main()
