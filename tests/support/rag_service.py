#!/usr/bin/env python3
"""A small RAG service over a folder of Markdown documents, for rag-eval's tests and guide.

It is the kind of service a team runs: POST /ask with {"id": ..., "query": ...} answers
{"answer": ..., "sources": [...]}, the sources being the paragraphs it retrieved, as its vector
store keeps them: text without offsets. Retrieval is word overlap between the question and each
paragraph; the answer is the sentence of the best paragraphs that shares most words with the
question. Standard library only.

The sources come in the shapes such services send: the best one as {"content", "path"}, the
second as plain text with its whitespace collapsed (found by rag-eval ignoring whitespace), the
third as {"content"} without a document, and for questions whose id ends in 7 a fourth that is
in no document (judged, not span-scored).

/offsets answers the same sources by their character offsets alone ({"path", "start", "end"},
no text), as a service that keeps offsets does; /offsets-outside gives the best one an end past
its document's.

Other paths misbehave on purpose: /slow answers after --delay seconds, /fail answers 500,
/malformed answers JSON without an answer, /broken answers text that is not JSON.

Usage:
    python3 rag_service.py --corpus examples/data/corpus [--port 8000] [--quality poor]

It prints "listening on http://127.0.0.1:PORT" once ready (--port 0 picks a free port).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

WORD = re.compile(r"\w+")
STOP = set(
    "a an and are as at be by can do does for from how i if in is it its of on or the to "
    "what when which who why with".split()
)


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if w not in STOP}


def load(folder: Path) -> list[tuple[str, str]]:
    """Every paragraph of every document, as (document id, text)."""
    paragraphs = []
    for path in sorted(folder.rglob("*.md")):
        doc_id = path.relative_to(folder).as_posix()
        for block in path.read_text(encoding="utf-8").split("\n\n"):
            block = block.strip("\n")
            if block.strip():
                paragraphs.append((doc_id, block))
    return paragraphs


def retrieve(paragraphs, query: str, k: int = 3):
    q = words(query)
    scored = sorted(
        ((len(q & words(text)), i) for i, (_, text) in enumerate(paragraphs)),
        key=lambda s: (-s[0], s[1]),
    )
    return [paragraphs[i] for _, i in scored[:k]]


def answer_from(hits, query: str) -> str:
    q = words(query)
    sentences = [
        s.strip()
        for _, text in hits
        for s in re.split(r"(?<=[.!?])\s+|\n", text)
        if s.strip()
    ]
    if not sentences:
        return "I do not know."
    return max(sentences, key=lambda s: len(q & words(s)))


def sources(hits, query_id: str):
    out = []
    for rank, (doc_id, text) in enumerate(hits):
        if rank == 0:
            out.append({"content": text, "path": doc_id})
        elif rank == 1:
            out.append(" ".join(text.split()))
        else:
            out.append({"content": text})
    if query_id.endswith("7"):
        out.append({"content": "Larkspur is configured with a YAML file named larkspur.yml."})
    return out


def offsets(hits, documents, outside: bool):
    """The sources by document and character offsets, without their text."""
    out = []
    for rank, (doc_id, text) in enumerate(hits):
        start = documents[doc_id].find(text)
        end = start + len(text)
        if outside and rank == 0:
            end = len(documents[doc_id]) + 10
        out.append({"path": doc_id, "start": start, "end": end})
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", required=True, type=Path)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--quality", choices=["good", "poor"], default="good")
    p.add_argument("--delay", type=float, default=5.0)
    args = p.parse_args()
    paragraphs = load(args.corpus)
    documents = {
        path.relative_to(args.corpus).as_posix(): path.read_text(encoding="utf-8")
        for path in args.corpus.rglob("*.md")
    }

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_):
            pass

        def reply(self, status: int, body: bytes, kind: str = "application/json"):
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
                query, query_id = request["query"], str(request.get("id", ""))
            except (ValueError, KeyError, TypeError):
                return self.reply(400, b'{"error": "send {\\"id\\": ..., \\"query\\": ...}"}')
            if self.path == "/fail":
                return self.reply(500, b'{"error": "the model server is down"}')
            if self.path == "/broken":
                return self.reply(200, b"<html>Bad gateway</html>", "text/html")
            if self.path == "/slow":
                time.sleep(args.delay)
            hits = retrieve(paragraphs, query)
            if self.path == "/malformed":
                return self.reply(200, json.dumps({"text": answer_from(hits, query)}).encode())
            if self.path not in ("/ask", "/slow", "/offsets", "/offsets-outside"):
                return self.reply(404, b'{"error": "POST /ask"}')
            answer = answer_from(hits, query) if args.quality == "good" else "I do not know."
            body = {"answer": answer, "sources": sources(hits, query_id)}
            if self.path.startswith("/offsets"):
                outside = self.path == "/offsets-outside"
                body["sources"] = offsets(hits, documents, outside)
            self.reply(200, json.dumps(body, ensure_ascii=False).encode())

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            # A client that gave up (a timeout) closes the connection: nothing to report.
            if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                super().handle_error(request, client_address)

    server = Server(("127.0.0.1", args.port), Handler)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
