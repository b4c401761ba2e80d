#!/usr/bin/env python3
"""The ragas side of the judges benchmark (benches/judges.rs).

Judges the answers of benches/fixtures/judges/answers.jsonl with ragas 0.4.3's `faithfulness`
and `answer_relevancy` (ResponseRelevancy, `strictness` questions) through `ragas.evaluate`,
with LangChain's OpenAI clients pointed at an OpenAI-compatible server for both the LLM and the
embeddings, `RunConfig(max_workers=C)`. Prints one JSON line: the seconds `evaluate` took and
the failures (metric values that came back NaN, exceptions ragas logged, by type).

Run with the venv of benches/scripts/ragas_setup.sh:

    .venv-ragas/bin/python ragas_judges.py --answers ../fixtures/judges/answers.jsonl \
        --llm-url http://127.0.0.1:8080/v1 --embed-url http://127.0.0.1:8081/v1 \
        --model smollm2 --concurrency 2
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import re
import sys
import time
import warnings
from collections import Counter


class Failures(logging.Handler):
    """Counts the exceptions ragas logs for failed jobs (it returns NaN for them)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.kinds: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "Exception raised in Job" in message:
            m = re.search(r"Job\[\d+\]: (\w+)", message)
            self.kinds[m.group(1) if m else "unknown"] += 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", required=True)
    ap.add_argument("--llm-url", required=True)
    ap.add_argument("--embed-url", required=True)
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--strictness", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=1024, help="longest judge answer")
    ap.add_argument("--limit", type=int, default=None, help="judge the first N answers only")
    args = ap.parse_args()

    warnings.filterwarnings("ignore")
    failures = Failures()
    logging.getLogger("ragas").addHandler(failures)

    from langchain_openai import ChatOpenAI, OpenAIEmbeddings
    from ragas import EvaluationDataset, RunConfig, SingleTurnSample, evaluate
    from ragas.embeddings import LangchainEmbeddingsWrapper
    from ragas.llms import LangchainLLMWrapper
    from ragas.metrics import answer_relevancy, faithfulness

    rows = [json.loads(line) for line in open(args.answers, encoding="utf-8") if line.strip()]
    rows = rows[: args.limit]
    dataset = EvaluationDataset(
        samples=[
            SingleTurnSample(
                user_input=r["question"],
                response=r["answer"],
                retrieved_contexts=[c["text"] for c in r["contexts"]],
            )
            for r in rows
        ]
    )
    llm = LangchainLLMWrapper(
        ChatOpenAI(
            model=args.model,
            base_url=args.llm_url,
            api_key="no-key",
            max_tokens=args.max_tokens,
        )
    )
    # check_embedding_ctx_length=False: send the texts as they are (the default tokenizes them
    # with tiktoken's cl100k first, which a local model does not use).
    embeddings = LangchainEmbeddingsWrapper(
        OpenAIEmbeddings(
            model=args.model,
            base_url=args.embed_url,
            api_key="no-key",
            check_embedding_ctx_length=False,
        )
    )
    answer_relevancy.strictness = args.strictness
    # A job timeout far above any request's time on a loaded machine: a slow server is not a
    # judging failure. Everything else is ragas' default.
    run_config = RunConfig(max_workers=args.concurrency, timeout=3600)

    started = time.perf_counter()
    result = evaluate(
        dataset,
        metrics=[faithfulness, answer_relevancy],
        llm=llm,
        embeddings=embeddings,
        run_config=run_config,
        raise_exceptions=False,
        show_progress=False,
    )
    seconds = time.perf_counter() - started

    df = result.to_pandas()
    summary = {}
    for name in ("faithfulness", "answer_relevancy"):
        values = [float(v) for v in df[name]]
        scored = [v for v in values if not math.isnan(v)]
        summary[name] = {
            "scored": len(scored),
            "nan": len(values) - len(scored),
            "mean": round(sum(scored) / len(scored), 4) if scored else None,
        }
    summary["exceptions"] = dict(failures.kinds)
    print(json.dumps({"seconds": seconds, "answers": len(rows), "failures": summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
