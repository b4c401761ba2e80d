#!/usr/bin/env python3
"""Builds questions.jsonl from the questions and answer excerpts listed below.

Each answer is written out as the exact excerpt of its document (line breaks included). The
script finds every excerpt with str.find, insists that it occurs exactly once in its document,
and writes its character offsets (Python str indices, end-exclusive), so no offset is ever typed
by hand. Editing a corpus document therefore only needs a rerun; an excerpt that no longer
matches stops the script with a message naming the question and document.

Usage:
    python3 make_questions.py           # rewrite questions.jsonl
    python3 make_questions.py --check   # fail if questions.jsonl is not up to date
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
OUT = HERE / "questions.jsonl"
DIFFICULTIES = ("factual", "analytical", "inferential", "paraphrased")

# (difficulty, query, [(doc_id, excerpt), ...])
QUESTIONS: list[tuple[str, str, list[tuple[str, str]]]] = [
    # --- factual: the answer is stated in words close to the question ---------------------
    (
        "factual",
        "Which Linux kernel version does a Larkspur host need at minimum?",
        [("guides/installation.md", "A 64-bit Linux host (x86_64 or arm64) with kernel 4.18 or later.")],
    ),
    (
        "factual",
        "Under which UID does the Larkspur container image run?",
        [
            (
                "guides/installation.md",
                "The image runs as the unprivileged user `larkspur` (UID 10001), so a bind-mounted data directory\n"
                "must be writable by that UID.",
            )
        ],
    ),
    (
        "factual",
        "How long is the bootstrap admin token valid after the first start?",
        [("guides/installation.md", "The bootstrap token expires after 24 hours.")],
    ),
    (
        "factual",
        "What is the default value of the server request_timeout option?",
        [
            (
                "reference/configuration.md",
                "| `request_timeout` | `15s` | longest time a REST request may take |",
            )
        ],
    ),
    (
        "factual",
        "What does exit code 3 of the larkspur command mean?",
        [("reference/cli.md", "| 3 | the server could not be reached |")],
    ),
    (
        "factual",
        "What is the minimum Python version for the larkspur-sdk package?",
        [("guides/sdk-usage.md", "| Python | `larkspur-sdk` on PyPI | Python 3.9 |")],
    ),
    (
        "factual",
        "How often do SDKs send evaluation events, and how many events fit in one batch?",
        [
            (
                "guides/sdk-usage.md",
                "When event reporting is on, SDKs count evaluations per flag and variant and send the counts every\n"
                "60 seconds, at most 500 events per batch.",
            )
        ],
    ),
    (
        "factual",
        "What is the default min_samples setting of a guardrail?",
        [
            (
                "guides/rollouts.md",
                "| `min_samples` | `200` | evaluations required before a breach can be declared |",
            )
        ],
    ),
    (
        "factual",
        "Which hash does Larkspur use to store API tokens?",
        [
            (
                "reference/security.md",
                "Larkspur stores only an Argon2id hash of each\n"
                "token, which is why a token is displayed once, when it is created, and never again.",
            )
        ],
    ),
    (
        "factual",
        "What is the minimum TLS protocol version Larkspur accepts?",
        [
            (
                "reference/security.md",
                "The minimum protocol\n"
                "version is TLS 1.2, and TLS 1.3 is preferred when the client supports it.",
            )
        ],
    ),
    (
        "factual",
        "What archive and compression format does a Larkspur backup use?",
        [
            (
                "guides/backup-restore.md",
                "A backup is a tar archive compressed with zstd, with the extension `.lkb`.",
            )
        ],
    ),
    (
        "factual",
        "Which PostgreSQL advisory lock key is used to elect the scheduler leader?",
        [
            (
                "architecture.md",
                "The replicas therefore elect a *scheduler\n"
                "leader* with a PostgreSQL advisory lock (key `74201`).",
            )
        ],
    ),
    (
        "factual",
        "Who made the Japanese translation of the web console?",
        [
            (
                "changelog.md",
                "Japanese translation of the web console by 松本 千尋 (Chihiro Matsumoto).",
            )
        ],
    ),
    (
        "factual",
        "What was the default HTTP port before Larkspur 3.0.0?",
        [
            (
                "changelog.md",
                "The default HTTP port changed from 8080 to 7420, and streaming moved from 8081 to 7421.",
            )
        ],
    ),
    (
        "factual",
        "How much memory does a Larkspur server need, at idle and per flag?",
        [
            (
                "architecture.md",
                "| Memory | about 150 MB at idle, plus roughly 12 KB per flag per environment |",
            )
        ],
    ),
    (
        "factual",
        "How do I read the server logs under systemd or in a container?",
        [
            (
                "troubleshooting.md",
                "Under systemd read them with\n"
                "`journalctl -u larkspur`; in a container, with `docker logs larkspur`.",
            )
        ],
    ),
    # --- analytical: two or three spans, sometimes from different documents -----------------
    (
        "analytical",
        "Which addresses and ports do the REST API, the streaming endpoint and the Prometheus metrics use by default?",
        [
            (
                "reference/configuration.md",
                "| `listen` | `0.0.0.0:7420` | address of the REST API and web console |",
            ),
            (
                "reference/configuration.md",
                "| `grpc_listen` | `0.0.0.0:7421` | address of the streaming endpoint for SDKs and relays |",
            ),
            (
                "reference/configuration.md",
                "| `metrics_listen` | `127.0.0.1:9464` | Prometheus metrics endpoint |",
            ),
        ],
    ),
    (
        "analytical",
        "What is the default lifetime of an API token, what is the maximum, and what happens if I ask the CLI for more?",
        [
            (
                "reference/security.md",
                "A token expires 90 days after creation unless another expiry is requested, and no token can live\n"
                "longer than 365 days.",
            ),
            (
                "reference/cli.md",
                "`--expires` accepts at most `365d`; longer\nvalues are refused with exit code 2.",
            ),
        ],
    ),
    (
        "analytical",
        "How are users assigned to buckets in a percentage rollout, and how is it guaranteed that all SDKs bucket the same way?",
        [
            (
                "guides/rollouts.md",
                "To decide, the SDK concatenates the flag key, the flag's salt and the value of the\n"
                "stickiness attribute, hashes the result with 32-bit MurmurHash3, and maps it onto 100,000\n"
                "buckets.",
            ),
            (
                "architecture.md",
                "Every SDK implements exactly this function and the\n"
                "server's test suite checks all of them against the same table of expected buckets, so bucketing\n"
                "cannot drift between languages.",
            ),
        ],
    ),
    (
        "analytical",
        "Which PostgreSQL versions can Larkspur use, and is PostgreSQL 12 still supported?",
        [
            (
                "guides/installation.md",
                "For highly available setups: PostgreSQL 13 or newer. Versions 13 to 17 are tested in CI.",
            ),
            (
                "changelog.md",
                "Support for PostgreSQL 12. PostgreSQL 13 is now the oldest supported version.",
            ),
        ],
    ),
    (
        "analytical",
        "What are the possible reasons for SDKs getting HTTP 429 responses?",
        [
            (
                "troubleshooting.md",
                "a polling SDK configured with an interval below the server's `sdk.min_poll_interval`, which is\n"
                "  5 seconds unless changed;",
            ),
            (
                "troubleshooting.md",
                "more than 600 REST requests per minute made with one token, usually a script that loops\n"
                "  without pausing.",
            ),
        ],
    ),
    (
        "analytical",
        "How do the permissions of the editor and publisher roles differ?",
        [
            ("reference/security.md", "| editor | yes | yes | no | no |"),
            ("reference/security.md", "| publisher | yes | yes | yes | no |"),
        ],
    ),
    (
        "analytical",
        "How quickly does a flag change reach streaming SDKs compared with SDKs in default polling mode?",
        [
            (
                "architecture.md",
                "In a three-replica deployment on one network, a change reaches streaming SDKs in under\n"
                "2 seconds at the 99th percentile.",
            ),
            (
                "guides/sdk-usage.md",
                "In polling mode the SDK asks for a new rule set every 30 seconds unless told otherwise.",
            ),
        ],
    ),
    (
        "analytical",
        "What does a Larkspur backup leave out, and which of it can be included on request?",
        [
            (
                "guides/backup-restore.md",
                "The audit log is left out by default because it is often larger than everything else put\n"
                "together. Add `--include-audit` to keep it.",
            ),
            (
                "guides/backup-restore.md",
                "The configuration file and TLS keys are **not** part of a backup; keep them in your usual\n"
                "configuration management.",
            ),
        ],
    ),
    # --- inferential: a small step of reasoning on top of the stated facts -------------------
    (
        "inferential",
        "If scheduled backups run every 12 hours and the retention setting is left at its default, how many days of backups are kept?",
        [
            (
                "reference/configuration.md",
                "| `keep` | `14` | number of scheduled backups retained |",
            ),
            (
                "guides/backup-restore.md",
                "Once more than `keep` archives exist, the oldest are deleted;",
            ),
        ],
    ),
    (
        "inferential",
        "What share of traffic does a variant receive if it owns 250 buckets?",
        [
            (
                "glossary.md",
                "**Bucket** — One of the 100,000 slots that a context is hashed into during a percentage rollout.\n"
                "A variant that owns 1,000 buckets receives 1% of the traffic.",
            )
        ],
    ),
    (
        "inferential",
        "Can a backup written by Larkspur 3.4 be restored into a 3.2 server?",
        [
            (
                "guides/backup-restore.md",
                "An archive can be restored into the same version or any later minor version of the same major\n"
                "version; a 3.1 archive restores into 3.4, for example.",
            ),
            (
                "guides/backup-restore.md",
                "Restoring into an\nolder version than the one that wrote the archive is never supported.",
            ),
        ],
    ),
    (
        "inferential",
        "We run Larkspur 2.7. Which versions do we have to pass through to reach 3.4?",
        [
            (
                "guides/installation.md",
                "Minor versions may be skipped, so going straight from 3.1 to 3.4 is fine.",
            ),
            (
                "guides/installation.md",
                "Major\nversions may not: a 2.x installation must first be upgraded to 2.9 and only then to 3.0 or later.",
            ),
        ],
    ),
    (
        "inferential",
        "What happens if I construct a polling client with poll_interval=3?",
        [
            (
                "guides/sdk-usage.md",
                "Intervals\nshorter than 5 seconds are rejected by the server with HTTP 429, so the SDK refuses them at\n"
                "construction time.",
            )
        ],
    ),
    (
        "inferential",
        "A project has 2,000 active flags and 300 archived ones. Can another flag be created without changing the configuration?",
        [
            (
                "reference/configuration.md",
                "| `max_flags_per_project` | `2000` | flags per project, archived flags excluded |",
            )
        ],
    ),
    # --- paraphrased: the question avoids the words the documents use ------------------------
    (
        "paraphrased",
        "How can I make sure everybody at the same customer company gets the same experience during a gradual release?",
        [
            (
                "guides/rollouts.md",
                "Set it to another attribute, such as `accountId`, when all users of one customer account must see\n"
                "the same variant.",
            )
        ],
    ),
    (
        "paraphrased",
        "Someone keeps typing a wrong password — after how many tries are they shut out, and for how long?",
        [
            (
                "reference/security.md",
                "After 5 failed password attempts in a row an account is locked for 15 minutes.",
            ),
            (
                "reference/configuration.md",
                "| `lockout_threshold` | `5` | failed password sign-ins before an account is locked |\n"
                "| `lockout_duration` | `15m` | how long the lock lasts |",
            ),
        ],
    ),
    (
        "paraphrased",
        "Does the software phone home with usage statistics?",
        [
            (
                "troubleshooting.md",
                "No. There is no telemetry. The only outbound connections are the ones you configure: your\n"
                "OpenID Connect provider and your webhooks.",
            )
        ],
    ),
    (
        "paraphrased",
        "Will our apps stop working if the whole toggle service goes down?",
        [
            (
                "architecture.md",
                "Because evaluation happens in the SDKs, a complete Larkspur outage does\n"
                "not stop applications: they keep evaluating with the last rule set they received and only miss\n"
                "changes made during the outage.",
            )
        ],
    ),
    (
        "paraphrased",
        "What is the price of the paid help plan and how many machines does it cover?",
        [
            (
                "overview.md",
                "It costs €1,150 a year and\ncovers up to five server nodes, with answers within one business day.",
            ),
            (
                "troubleshooting.md",
                "Yes — Larkspur Assist is a yearly support contract at €1,150 for ≤ 5 server nodes.",
            ),
        ],
    ),
    (
        "paraphrased",
        "Can I bring back an older snapshot without taking the service offline?",
        [
            (
                "guides/backup-restore.md",
                "Since version 3.3.0 there is also an online restore, `larkspur backup restore --online <file>`,\n"
                "which keeps the server up.",
            )
        ],
    ),
    (
        "paraphrased",
        "What does the client library hand back when code asks about a toggle that was retired?",
        [
            (
                "guides/sdk-usage.md",
                "Every evaluation call takes a fallback. The SDK returns it when:",
            ),
            ("guides/sdk-usage.md", "the flag does not exist or was archived,"),
        ],
    ),
    (
        "paraphrased",
        "If we widen a gradual launch from a tenth to a fifth of users, do the early adopters keep the new behaviour?",
        [
            (
                "guides/rollouts.md",
                "**Monotonic growth.** Raising the `on` share from 10% to 20% only extends the `on` range, so\n"
                "  every user who already had the feature keeps it.",
            )
        ],
    ),
    (
        "paraphrased",
        "How do I get more verbose diagnostic output, and what is the cost of leaving it enabled?",
        [
            (
                "troubleshooting.md",
                'Set\n`telemetry.log_level = "debug"` to see every evaluation request, but do not leave it on in\n'
                "production: it multiplies log volume roughly tenfold.",
            )
        ],
    ),
    (
        "paraphrased",
        "Can switches be evaluated on a machine that has no network path to the central service?",
        [
            (
                "guides/sdk-usage.md",
                "For tests and air-gapped sites, export a rule set with `larkspur flags export --env production >\n"
                'flags.json` and start the SDK with `bootstrap_file="flags.json"`. The SDK then evaluates from the\n'
                "file and never contacts a server.",
            )
        ],
    ),
]


# A reference answer per question: what a good answer says, written from the excerpts above
# (the answer metrics and the judges that compare with a reference read it).
REFERENCE_ANSWERS: dict[str, str] = {
    'q0001': "Linux kernel 4.18 or later, on a 64-bit host (x86_64 or arm64).",
    'q0002': "It runs as the unprivileged user larkspur with UID 10001.",
    'q0003': "The bootstrap token expires after 24 hours.",
    'q0004': "The default request_timeout is 15s.",
    'q0005': "Exit code 3 means the server could not be reached.",
    'q0006': "larkspur-sdk needs Python 3.9 or later.",
    'q0007': "SDKs send evaluation counts every 60 seconds, with at most 500 events per batch.",
    'q0008': "The default min_samples is 200 evaluations.",
    'q0009': "Larkspur stores an Argon2id hash of each API token.",
    'q0010': "TLS 1.2 is the minimum; TLS 1.3 is preferred when the client supports it.",
    'q0011': "A tar archive compressed with zstd, with the extension .lkb.",
    'q0012': "The advisory lock key 74201.",
    'q0013': "Chihiro Matsumoto (松本 千尋).",
    'q0014': "The default HTTP port was 8080; since 3.0.0 it is 7420.",
    'q0015': "About 150 MB at idle, plus roughly 12 KB per flag per environment.",
    'q0016': "Under systemd with journalctl -u larkspur; in a container with docker logs larkspur.",
    'q0017': "The REST API listens on 0.0.0.0:7420, the streaming endpoint on 0.0.0.0:7421 and Prometheus metrics on 127.0.0.1:9464.",
    'q0018': "A token expires after 90 days by default and can live at most 365 days; asking the CLI for more than 365d is refused with exit code 2.",
    'q0019': "The SDK hashes the flag key, the flag's salt and the stickiness attribute's value with 32-bit MurmurHash3 onto 100,000 buckets; every SDK implements the same function and the server's test suite checks them all against one table of expected buckets.",
    'q0020': "PostgreSQL 13 or newer (13 to 17 are tested); PostgreSQL 12 is no longer supported.",
    'q0021': "A polling SDK configured with an interval below sdk.min_poll_interval (5 seconds by default), or more than 600 REST requests per minute made with one token.",
    'q0022': "Both can read flags and change non-production environments; only a publisher can also change production. Neither can manage members and tokens.",
    'q0023': "Streaming SDKs get a change in under 2 seconds at the 99th percentile; polling SDKs ask for a new rule set every 30 seconds by default.",
    'q0024': "A backup leaves out the audit log, the configuration file and the TLS keys; the audit log can be included with --include-audit.",
    'q0025': "Seven days: the default keep is 14 backups, and at two backups a day that is 7 days.",
    'q0026': "0.25% of the traffic, since 1,000 buckets receive 1%.",
    'q0027': "No. An archive restores only into the same or a later minor version of the same major version, never into an older version.",
    'q0028': "Upgrade from 2.7 to 2.9 first, then to 3.4 directly: major versions may not be skipped, minor versions may.",
    'q0029': "The SDK refuses it when the client is constructed, because the server rejects poll intervals shorter than 5 seconds with HTTP 429.",
    'q0030': "No. max_flags_per_project defaults to 2000 and archived flags are excluded, so with 2,000 active flags the project is at the limit.",
    'q0031': "Set the rollout's stickiness attribute to an account attribute such as accountId, so all users of one customer account see the same variant.",
    'q0032': "After 5 failed password attempts in a row the account is locked for 15 minutes.",
    'q0033': "No. There is no telemetry; the only outbound connections are the OpenID Connect provider and webhooks you configure.",
    'q0034': "No. Evaluation happens in the SDKs, which keep evaluating with the last rule set they received; they only miss changes made during the outage.",
    'q0035': "Larkspur Assist costs €1,150 a year and covers up to five server nodes.",
    'q0036': "Yes, since version 3.3.0: larkspur backup restore --online <file> keeps the server up.",
    'q0037': "The SDK returns the fallback value given to the evaluation call when the flag does not exist or was archived.",
    'q0038': "Yes. Raising the on share from 10% to 20% only extends the on range, so every user who already had the feature keeps it.",
    'q0039': "Set telemetry.log_level = \"debug\"; do not leave it on in production, as it multiplies log volume roughly tenfold.",
    'q0040': "Yes. Export a rule set with larkspur flags export and start the SDK with bootstrap_file; it then evaluates from the file and never contacts a server.",
}


def load_corpus() -> dict[str, str]:
    docs = {}
    for path in sorted(CORPUS.rglob("*.md")):
        doc_id = path.relative_to(CORPUS).as_posix()
        # newline="" keeps the text exactly as stored, so offsets match what a Rust reader sees.
        with open(path, encoding="utf-8", newline="") as f:
            docs[doc_id] = f.read()
    return docs


def build(docs: dict[str, str]) -> list[str]:
    lines = []
    for n, (difficulty, query, excerpts) in enumerate(QUESTIONS, start=1):
        qid = f"q{n:04d}"
        if difficulty not in DIFFICULTIES:
            raise SystemExit(f"{qid}: unknown difficulty {difficulty!r}")
        spans = []
        for doc_id, excerpt in excerpts:
            if doc_id not in docs:
                raise SystemExit(f"{qid}: no document {doc_id!r} under {CORPUS.name}/")
            content = docs[doc_id]
            count = content.count(excerpt)
            if count != 1:
                raise SystemExit(f"{qid}: excerpt occurs {count} times in {doc_id}: {excerpt[:60]!r}")
            start = content.find(excerpt)
            end = start + len(excerpt)
            assert content[start:end] == excerpt
            spans.append({"doc_id": doc_id, "start": start, "end": end, "text": excerpt})
        spans.sort(key=lambda s: (s["doc_id"], s["start"]))
        for a, b in zip(spans, spans[1:]):
            if a["doc_id"] == b["doc_id"] and b["start"] < a["end"]:
                raise SystemExit(f"{qid}: overlapping spans in {a['doc_id']}")
        row = {
            "id": qid,
            "inputs": {"query": query},
            "outputs": {"relevant_spans": spans, "reference_answer": REFERENCE_ANSWERS[qid]},
            "metadata": {
                "difficulty": difficulty,
                "source_docs": sorted({s["doc_id"] for s in spans}),
            },
        }
        lines.append(json.dumps(row, ensure_ascii=False, separators=(",", ":")))
    return lines


def main() -> None:
    docs = load_corpus()
    text = "\n".join(build(docs)) + "\n"
    if "--check" in sys.argv[1:]:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            raise SystemExit(f"{OUT.name} is out of date; rerun {Path(__file__).name}")
        print(f"{OUT.name} is up to date")
        return
    tmp = OUT.with_suffix(".jsonl.tmp")
    tmp.write_text(text, encoding="utf-8", newline="")
    tmp.replace(OUT)
    counts = Counter(d for d, _, _ in QUESTIONS)
    print(f"wrote {len(QUESTIONS)} questions to {OUT.name}: " + ", ".join(f"{k} {counts[k]}" for k in DIFFICULTIES))


if __name__ == "__main__":
    main()
