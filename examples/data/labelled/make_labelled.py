#!/usr/bin/env python3
"""Builds a faithfulness set whose labels are known by construction, over the bundled corpus.

For every question of ../questions.jsonl:

* the contexts are the paragraphs (text between blank lines) of the corpus that hold the
  question's relevant spans, with their character offsets;
* the *supported* answer (`<id>-s`, label 1) is the relevant spans' sentences stitched
  together: every word of it stands in a context;
* the *altered* answer (`<id>-a`, label 0) is the same answer with one sentence changed so that
  no context holds it: its first number is changed (4.18 → 5.18), or, for an answer without a
  number, one name is swapped (zstd → gzip). The script checks that the changed sentence is in
  no context and nowhere in the corpus.

Both rows keep the question, its relevant spans and a reference answer (the relevant spans'
text), so `rag-eval score --answers` scores them like any answers file. The labels file holds
`{"id": …, "labels": {"faithfulness": 0 | 1}}` per answer.

Usage (standard library only, deterministic):
    python3 make_labelled.py           # rewrite dataset.jsonl, answers.jsonl, labels.jsonl
    python3 make_labelled.py --check   # fail if they are not up to date
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
CORPUS = DATA / "corpus"
QUESTIONS = DATA / "questions.jsonl"

# Name swaps for the answers without a number: (question id, text in the answer, replacement).
SWAPS = {
    "q0011": ("zstd", "gzip"),
    "q0013": ("Chihiro Matsumoto", "Kenji Sato"),
    "q0016": ("docker logs larkspur", "docker inspect larkspur"),
    "q0024": ("--include-audit", "--with-audit"),
    "q0031": ("accountId", "tenantId"),
    "q0033": ("OpenID Connect provider", "LDAP directory"),
    "q0034": ("last rule set", "default rule set"),
    "q0037": ("archived", "renamed"),
    "q0039": ("tenfold", "twofold"),
    "q0040": ("bootstrap_file", "seed_file"),
}


def squash(text: str) -> str:
    """Whitespace runs as one space: a span's line breaks do not belong in an answer."""
    return " ".join(text.split())


def paragraph(doc: str, start: int, end: int) -> tuple[int, int]:
    """The blank-line-delimited paragraph around [start, end)."""
    before = doc.rfind("\n\n", 0, start)
    after = doc.find("\n\n", end)
    return (0 if before < 0 else before + 2, len(doc) if after < 0 else after)


def alter(qid: str, text: str) -> str | None:
    """`text` with its first number changed (its first digit + 1, 9 → 0), or a name swapped."""
    if qid in SWAPS:
        old, new = SWAPS[qid]
        return text.replace(old, new, 1) if old in text else None
    m = re.search(r"\d", text)
    if m is None:
        return None
    digit = str((int(m.group()) + 1) % 10)
    return text[: m.start()] + digit + text[m.end() :]


def build() -> tuple[list[dict], list[dict], list[dict]]:
    docs = {
        p.relative_to(CORPUS).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(CORPUS.rglob("*.md"))
    }
    corpus_text = [squash(t) for t in docs.values()]
    rows, answers, labels = [], [], []
    for line in QUESTIONS.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        spans = q["outputs"]["relevant_spans"]
        contexts = []
        for s in spans:
            doc = docs[s["doc_id"]]
            assert doc[s["start"] : s["end"]] == s["text"], (q["id"], s)
            a, b = paragraph(doc, s["start"], s["end"])
            context = {"doc_id": s["doc_id"], "start": a, "end": b, "text": doc[a:b]}
            if context not in contexts:
                contexts.append(context)
        sentences = [squash(s["text"]) for s in spans]
        variants = [("s", sentences, 1)]
        for i, sentence in enumerate(sentences):
            changed = alter(q["id"], sentence)
            if changed is None:
                continue
            held = [squash(c["text"]) for c in contexts] + corpus_text
            assert changed != sentence and not any(changed in t for t in held), (q["id"], changed)
            variants.append(("a", sentences[:i] + [changed] + sentences[i + 1 :], 0))
            break
        for suffix, answer, label in variants:
            qid = f"{q['id']}-{suffix}"
            outputs = dict(q["outputs"], reference_answer=" ".join(sentences))
            rows.append({"id": qid, "inputs": q["inputs"], "outputs": outputs, "metadata": q["metadata"]})
            answers.append({"id": qid, "answer": " ".join(answer), "contexts": contexts})
            labels.append({"id": qid, "labels": {"faithfulness": label}})
    return rows, answers, labels


def main() -> None:
    files = dict(zip(("dataset.jsonl", "answers.jsonl", "labels.jsonl"), build()))
    stale = []
    for name, lines in files.items():
        text = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)
        path = HERE / name
        if "--check" in sys.argv[1:]:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        sys.exit(f"not up to date: {', '.join(stale)} (run make_labelled.py)")
    supported = sum(1 for x in files["labels.jsonl"] if x["labels"]["faithfulness"] == 1)
    print(f"{len(files['answers.jsonl'])} answers: {supported} supported, "
          f"{len(files['answers.jsonl']) - supported} altered")


if __name__ == "__main__":
    main()
