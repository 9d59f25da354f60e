"""A lean HTTP/1.1 streaming client on asyncio.Protocol for the benchmark's hot path (http:// only).

Why not httpx here: through httpcore, h11 and anyio each streamed chunk costs tens of microseconds
of Python, and httpcore's pool scans every connection per request (quadratic at 1024 streams),
which put the client's ceiling near the rates it must measure. Here a network read costs one
`data_received` call: the chunked framing is decoded in place and the payload appended with its
arrival time; nothing wakes the request coroutine until the response is complete. httpx still does
everything else (readiness, model lists, https endpoints).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

_CLOCK = time.perf_counter


class WireError(Exception):
    """The connection failed or the response broke HTTP/1.1 framing; `kind` is the failure class."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(slots=True)
class WireResponse:
    status: int
    headers: dict[str, str]
    reads: list[tuple[float, bytes]] = field(default_factory=list)


class _Connection(asyncio.Protocol):
    """One keep-alive connection; one response at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._reset()

    def _reset(self) -> None:
        loop = asyncio.get_running_loop()
        self.head = loop.create_future()
        self.done = loop.create_future()
        self.buf = b""
        self.in_body = False
        self.status = 0
        self.headers: dict[str, str] = {}
        self.reads: list[tuple[float, bytes]] = []
        self.framing = "close"
        self.left = 0  # bytes left: of the body (length) or of the current chunk (chunked)
        self.chunk_crlf = False
        self.trailers = False
        self.keep_alive = True

    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        self.closed = True
        if self.in_body and self.framing == "close" and not self.done.done():
            self.done.set_result(None)
            return
        error = WireError("protocol", "connection closed by the server mid-response" if self.head.done()
                          else "connection closed by the server before any response")
        for fut in (self.head, self.done):
            if not fut.done():
                fut.set_exception(error)
                fut.exception()  # mark retrieved: a caller may await only one of them

    def data_received(self, data: bytes) -> None:
        t = _CLOCK()
        if not self.in_body:
            self.buf += data
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            data, head = self.buf[end + 4:], self.buf[:end]
            self.buf = b""
            try:
                self._parse_head(head)
            except (ValueError, IndexError):
                self._fail("protocol", f"malformed HTTP response head: {head[:80]!r}")
                return
            self.in_body = True
            self.head.set_result(None)
            if not data:
                self._check_complete()
                return
        try:
            payload = self._decode(data) if self.framing == "chunked" else self._plain(data)
        except ValueError as exc:
            self._fail("protocol", f"bad chunked encoding: {exc}")
            return
        if payload:
            self.reads.append((t, payload))
        self._check_complete()

    def _parse_head(self, head: bytes) -> None:
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split(" ", 2)[1])
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            self.framing = "chunked"
        elif "content-length" in self.headers:
            self.framing, self.left = "length", int(self.headers["content-length"])
        self.keep_alive = self.headers.get("connection", "").lower() != "close" and self.framing != "close"

    def _plain(self, data: bytes) -> bytes:
        if self.framing == "length":
            data = data[: self.left]
            self.left -= len(data)
        return data

    def _decode(self, data: bytes) -> bytes:
        """Strip chunked framing from `data` (plus any partial framing kept from the last read)."""
        buf = self.buf + data if self.buf else data
        self.buf = b""
        out = []
        pos, n = 0, len(buf)
        while pos < n:
            if self.left:
                take = buf[pos:pos + self.left]
                out.append(take)
                self.left -= len(take)
                pos += len(take)
                if not self.left:
                    self.chunk_crlf = True
                continue
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                self.buf = buf[pos:]
                break
            line = buf[pos:eol]
            pos = eol + 2
            if self.chunk_crlf:  # the CRLF closing the previous chunk's data
                if line:
                    raise ValueError(f"expected CRLF after chunk data, got {line[:20]!r}")
                self.chunk_crlf = False
            elif self.trailers:
                if not line:
                    self.framing = "done"
                    return b"".join(out)
            else:
                size = int(line.split(b";", 1)[0], 16)
                if size == 0:
                    self.trailers = True
                else:
                    self.left = size
        return b"".join(out)

    def _check_complete(self) -> None:
        if self.done.done():
            return
        if self.framing == "done" or (self.framing == "length" and self.left == 0):
            self.done.set_result(None)

    def _fail(self, kind: str, message: str) -> None:
        self.keep_alive = False
        for fut in (self.head, self.done):
            if not fut.done():
                fut.set_exception(WireError(kind, message))
                fut.exception()
        if self.transport:
            self.transport.close()


class WirePool:
    """Keep-alive connections to one host:port; at most as many as requests in flight."""

    def __init__(self, host: str, port: int, connect_timeout: float) -> None:
        self.host, self.port, self.connect_timeout = host, port, connect_timeout
        self._idle: list[_Connection] = []
        self._all: set[_Connection] = set()

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, conn = await loop.create_connection(_Connection, self.host, self.port)
        except TimeoutError:
            raise WireError("connect", f"cannot connect to {self.host}:{self.port} within "
                                       f"{self.connect_timeout:g} s") from None
        except OSError as exc:
            raise WireError("connect", f"cannot connect to {self.host}:{self.port}: {exc.strerror or exc}") from None
        self._all.add(conn)
        return conn

    async def post(self, path: str, body: bytes, headers: dict[str, str]) -> WireResponse:
        """POST and read the whole response, timestamping every read of its body."""
        head = (f"POST {path} HTTP/1.1\r\nhost: {self.host}:{self.port}\r\ncontent-length: {len(body)}\r\n"
                + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode("latin-1")
        while self._idle:
            conn = self._idle.pop()
            if conn.closed:
                self._all.discard(conn)
                continue
            try:
                return await self._exchange(conn, head + body)
            except WireError as exc:
                if conn.head.done() and not conn.head.exception():
                    raise
                # An idle keep-alive connection the server had closed: retry on a fresh one.
                del exc
        return await self._exchange(await self._connect(), head + body)

    async def _exchange(self, conn: _Connection, request: bytes) -> WireResponse:
        conn._reset()
        try:
            conn.transport.write(request)
            await conn.done
        except BaseException:
            conn.keep_alive = False
            raise
        finally:
            if conn.keep_alive and conn.done.done() and not conn.done.exception() and not conn.closed:
                self._idle.append(conn)
            else:
                self._all.discard(conn)
                conn.transport.close()
        return WireResponse(conn.status, conn.headers, conn.reads)

    def close(self) -> None:
        for conn in self._all:
            if conn.transport:
                conn.transport.close()
        self._all.clear()
        self._idle.clear()
