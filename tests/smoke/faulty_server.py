"""An in-process HTTP server for the faults no real server makes on demand.

Behaviours: `die` (sends a few chunks, then drops the connection mid-stream), `stay503`
(never becomes ready), `malformed` (a data line that is not JSON), `stall` (answers headers, then
nothing, for ever) and `stall_after` (answers the first `answered` requests, stalls every later
one: with `--warmup 1 --requests 4`, answered=6 (one calibration request first) lets the concurrency-1 level finish and no later
level; counted, not timed, so a loaded machine cannot change which level stalls). Everything else is tested
against real llama-server and transformers serve.
"""

from __future__ import annotations

import json
import socket
import threading
import time
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
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.posts += 1  # type: ignore[attr-defined]
            late = self.server.posts > self.server.answered  # type: ignore[attr-defined]
        self._answer(stall=self.mode == "stall" or (self.mode == "stall_after" and late))

    def _answer(self, stall: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

        def send(data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        if stall:
            self.server.stalled.set()  # type: ignore[attr-defined]
            self.server.stopping.wait()  # type: ignore[attr-defined]
            return
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
    def __init__(self, mode: str, answered: int = 0) -> None:
        handler = type("Handler", (_Handler,), {"mode": mode})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.httpd.lock, self.httpd.posts, self.httpd.answered = threading.Lock(), 0, answered  # type: ignore[attr-defined]
        self.httpd.stalled, self.httpd.stopping = threading.Event(), threading.Event()  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FaultyServer:
        self._thread.start()
        return self

    @property
    def stalled(self) -> threading.Event:
        return self.httpd.stalled  # type: ignore[attr-defined]

    def __exit__(self, *exc) -> None:
        self.httpd.stopping.set()  # type: ignore[attr-defined]
        self.httpd.shutdown()
        self.httpd.server_close()
