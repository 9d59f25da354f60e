"""In-process stand-ins for index faults a real index server cannot be made to show.

- `Trickle`: answers 200 with a Content-Length, then sends one byte every `interval` seconds.
- `BlackHole`: accepts connections and never answers (nor closes).
- `StaticPages`: serves fixed bodies by path (hostile simple-API pages), with a content type.

Each is a context manager: `with BlackHole() as url: ...` gives "http://127.0.0.1:PORT".
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Listener:
    """A listening socket on 127.0.0.1 and a thread that hands each connection to `serve`."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.stopped = threading.Event()
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        self.sock.settimeout(0.1)
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn: socket.socket) -> None:  # the black hole: hold it, say nothing
        self.stopped.wait()

    def __enter__(self) -> str:
        self.thread.start()
        return self.url

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(2)
        for conn in self.conns:
            with contextlib.suppress(OSError):
                conn.close()
        self.sock.close()


class BlackHole(_Listener):
    """Accepts and never answers."""


class Trickle(_Listener):
    """Sends the status line and headers at once, then one body byte every `interval` seconds."""

    def __init__(self, interval: float = 0.5, length: int = 10_000) -> None:
        super().__init__()
        self.interval, self.length = interval, length

    def serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/vnd.pypi.simple.v1+json\r\n"
                         + f"Content-Length: {self.length}\r\n\r\n".encode())
            for _ in range(self.length):
                if self.stopped.wait(self.interval):
                    return
                conn.sendall(b" ")


@contextlib.contextmanager
def static_pages(pages: dict[str, tuple[str, bytes]]) -> Iterator[str]:
    """Serve `pages` (path -> (content type, body)); yields the root URL. Unknown paths: 404."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet tests
            pass

        def do_GET(self) -> None:
            content_type, body = pages.get(self.path, ("text/plain", b""))
            self.send_response(200 if self.path in pages else 404)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def wait_until(predicate, timeout: float = 5.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return False
