"""An in-process HTTP server for the faults no real server makes on demand.

Only three behaviours: `die` (sends a few chunks, then drops the connection mid-stream), `stay503`
(never becomes ready), `malformed` (a data line that is not JSON). Everything else is tested
against real llama-server and transformers serve.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _chunk(text: str, finish: str | None = None) -> bytes:
    body = {"id": "x", "object": "text_completion", "model": "faulty",
            "choices": [{"index": 0, "text": text, "finish_reason": finish}]}
    return f"data: {json.dumps(body)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    mode = "die"

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def _json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.mode == "stay503":
            self._json(503, {"error": "loading model"})
        elif self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": "faulty", "object": "model"}]})
        else:
            self._json(200, {"status": "ok"})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

        def send(data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        for i in range(3):
            send(_chunk(f" tok{i}"))
        if self.mode == "die":
            self.connection.shutdown(socket.SHUT_RDWR)  # no terminating chunk: the peer sees a broken stream
            self.close_connection = True
            return
        if self.mode == "malformed":
            send(b"data: {this is not json\n\n")
        send(_chunk(" end", "length"))
        send(b"data: [DONE]\n\n")
        send(b"")


class FaultyServer:
    def __init__(self, mode: str) -> None:
        handler = type("Handler", (_Handler,), {"mode": mode})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FaultyServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
