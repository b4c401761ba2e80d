#!/usr/bin/env python3
"""A counting proxy in front of an OpenAI-compatible server (standard library only).

Used by benches/judges.rs so that both sides of the judges benchmark (rag-eval and ragas) are
counted by the same code, not by their own accounting. Every request is forwarded unchanged to
the upstream server; per path (e.g. /v1/chat/completions, /v1/embeddings) the proxy counts
requests, answers that were not 2xx, and sums the `usage` tokens of the answers.

llama.cpp's llama-server reports `usage` for the first choice only when a request asks for
n > 1 choices; for the other choices the proxy counts their completion tokens with the upstream
server's own tokenizer (POST /tokenize) and adds them, so an n = 3 request costs what three
answers cost. The prompt is counted once, as OpenAI bills it.

    llm_proxy.py --upstream http://127.0.0.1:8080

prints `listening on PORT` once it accepts connections. GET /__stats returns the counts as
JSON; POST /__reset zeroes them.
"""

from __future__ import annotations

import argparse
import http.server
import json
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

TIMEOUT = 3600


class Counts:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.paths: dict[str, dict[str, int]] = {}

    def add(self, path: str, **fields: int) -> None:
        with self.lock:
            entry = self.paths.setdefault(
                path,
                {
                    "requests": 0,
                    "failed": 0,
                    "inputs": 0,
                    "multi_choice_requests": 0,
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                    "extra_choice_tokens": 0,
                },
            )
            for k, v in fields.items():
                entry[k] += v

    def snapshot(self) -> dict:
        with self.lock:
            return {p: dict(v) for p, v in self.paths.items()}

    def reset(self) -> None:
        with self.lock:
            self.paths.clear()


def tokens_of(upstream: str, text: str) -> int:
    body = json.dumps({"content": text}).encode()
    req = urllib.request.Request(
        upstream + "/tokenize", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
        return len(json.load(r).get("tokens", []))


def make_handler(upstream: str, counts: Counts):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet: the bench prints the counts
            pass

        def reply(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/__stats":
                self.reply(200, json.dumps(counts.snapshot()).encode())
            else:
                self.forward()

        def do_POST(self) -> None:
            if self.path == "/__reset":
                self.read_body()
                counts.reset()
                self.reply(200, b"{}")
            else:
                self.forward()

        def read_body(self) -> bytes:
            length = int(self.headers.get("content-length") or 0)
            return self.rfile.read(length) if length else b""

        def forward(self) -> None:
            body = self.read_body()
            path = urllib.parse.urlsplit(self.path).path
            headers = {
                k: v
                for k, v in self.headers.items()
                if k.lower() in ("content-type", "authorization", "accept")
            }
            req = urllib.request.Request(
                upstream + self.path,
                data=body if self.command == "POST" else None,
                headers=headers,
                method=self.command,
            )
            try:
                with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
                    status, answer = r.status, r.read()
                    ctype = r.headers.get("content-type", "application/json")
            except urllib.error.HTTPError as e:
                status, answer = e.code, e.read()
                ctype = e.headers.get("content-type", "application/json")
            except OSError as e:
                counts.add(path, requests=1, failed=1)
                self.reply(502, json.dumps({"error": f"upstream: {e}"}).encode())
                return
            fields = {"requests": 1, "failed": 0 if 200 <= status < 300 else 1}
            try:
                request = json.loads(body) if body else {}
            except ValueError:
                request = {}
            if isinstance(request, dict):
                inputs = request.get("input")
                if isinstance(inputs, list):
                    fields["inputs"] = len(inputs)
                elif inputs is not None:
                    fields["inputs"] = 1
            try:
                doc = json.loads(answer)
            except ValueError:
                doc = None
            if isinstance(doc, dict) and 200 <= status < 300:
                usage = doc.get("usage") or {}
                fields["prompt_tokens"] = int(usage.get("prompt_tokens") or 0)
                fields["completion_tokens"] = int(usage.get("completion_tokens") or 0)
                choices = doc.get("choices") or []
                if len(choices) > 1:
                    fields["multi_choice_requests"] = 1
                    extra = 0
                    for c in choices[1:]:
                        text = ((c.get("message") or {}).get("content")) or ""
                        extra += tokens_of(upstream, text) if text else 0
                    fields["extra_choice_tokens"] = extra
                    fields["completion_tokens"] += extra
            counts.add(path, **fields)
            self.reply(status, answer, ctype)

    return Handler


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", required=True, help="the server, e.g. http://127.0.0.1:8080")
    ap.add_argument("--port", type=int, default=0, help="port to listen on (default: any free)")
    args = ap.parse_args()
    parts = urllib.parse.urlsplit(args.upstream)
    upstream = f"{parts.scheme}://{parts.netloc}"
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", args.port), make_handler(upstream, Counts())
    )
    server.daemon_threads = True
    print(f"listening on {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
