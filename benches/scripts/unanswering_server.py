"""A RAG service that never answers, for the limits `rag-eval eval --rag` keeps.

    python3 benches/scripts/unanswering_server.py hang PORT     # reads each POST, never answers it
    python3 benches/scripts/unanswering_server.py endless PORT  # answers 200 with a body that never ends

GET answers 200 at once in both modes. Loopback only; stop it with Ctrl-C or kill.
"""

import socketserver
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if MODE == "hang":
            threading.Event().wait()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        piece = b'{"answer":"' + b"x" * 65536
        chunk = b"%x\r\n%s\r\n" % (len(piece), piece)
        try:
            while True:
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass


if __name__ == "__main__":
    MODE = sys.argv[1]
    if MODE not in ("hang", "endless"):
        sys.exit("mode: hang or endless")
    socketserver.TCPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler)
    server.daemon_threads = True
    server.serve_forever()
