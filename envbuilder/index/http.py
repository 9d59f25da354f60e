"""One shared HTTP client with retries: keep-alive connections, one TLS context, backoff.

Name lookups on the index sometimes stall for seconds, and a TLS handshake costs a round trip
or two, so every request goes through one httpx.Client whose pool holds a connection per
worker. Transient failures (connection errors, timeouts, 5xx, 429) are retried with exponential
backoff; when the retries are spent the user gets envbuilder's Unreachable (exit 3) with the URL
and what to do, never an httpx traceback.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx

from envbuilder import __version__
from envbuilder.errors import Unreachable
from envbuilder.index.config import ssl_context
from envbuilder.index.errors import RECOVERY_HINT, HashMismatch, RangeNotSupported

T = TypeVar("T")
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
# Ask for the bytes as stored: a server that gzips a .tar.gz on the fly would break its hash.
IDENTITY = {"Accept-Encoding": "identity"}


class _RetryableStatus(Exception):
    def __init__(self, status: int):
        super().__init__(f"HTTP {status}")
        self.status = status


@dataclass
class Stats:
    """Counters for benchmarks and tests (bytes are response bodies as received)."""

    requests: int = 0
    bytes_received: int = 0
    retries: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, requests: int = 0, received: int = 0, retries: int = 0) -> None:
        with self._lock:
            self.requests += requests
            self.bytes_received += received
            self.retries += retries


class Http:
    """Retrying GET helpers over one httpx.Client (HTTP/1.1 keep-alive, one TLS context).

    `max_connections` is the number of requests in flight (the client's workers).
    """

    def __init__(
        self,
        max_connections: int = 16,
        retries: int = 4,
        backoff: float = 0.5,
        timeout: float = 30.0,
        client: httpx.Client | None = None,
    ):
        self.retries = retries
        self.backoff = backoff
        self.stats = Stats()
        self.client = client or httpx.Client(
            verify=ssl_context(),
            http1=True,
            http2=False,
            follow_redirects=True,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 15.0)),
            # A pool per host's worth of connections (pages and files are usually on two hosts),
            # kept a minute: every new connection costs a name lookup, and those stall for 5 s
            # now and then on some networks (measured here: 1 lookup in 20).
            limits=httpx.Limits(max_connections=2 * max_connections, max_keepalive_connections=2 * max_connections,
                                keepalive_expiry=60.0),
            headers={"User-Agent": f"envbuilder/{__version__}"},
            trust_env=True,  # HTTPS_PROXY / NO_PROXY as every other tool honours them
        )

    def close(self) -> None:
        self.client.close()

    # -- the one retry loop -------------------------------------------------------------
    def retrying(self, url: str, attempt: Callable[[], T]) -> T:
        """Run `attempt` until it succeeds; transient failures back off, then Unreachable."""
        last: Exception | None = None
        for n in range(self.retries + 1):
            if n:
                self.stats.add(retries=1)
                delay = min(self.backoff * (2 ** (n - 1)), 10.0)
                time.sleep(delay * (0.75 + random.random() / 2))
            try:
                return attempt()
            except (httpx.TransportError, _RetryableStatus) as exc:
                last = exc
        raise Unreachable(
            f"cannot fetch {redact(url)} after {self.retries + 1} attempts ({_describe(last)}): {RECOVERY_HINT}"
        )

    def get(self, url: str, headers: dict[str, str] | None = None, ok: tuple[int, ...] = (200,),
            method: str = "GET") -> httpx.Response:
        """GET (or HEAD) with the body read; statuses outside `ok` (not retryable) raise Unreachable."""

        def attempt() -> httpx.Response:
            response = self.client.request(method, url, headers=headers)
            self.stats.add(requests=1, received=len(response.content))
            _check_status(response, ok)
            return response

        return self.retrying(url, attempt)

    def get_range(self, url: str, start: int | None, end: int) -> tuple[bytes, int, int]:
        """(body, its offset, the file's total size) for bytes [start, end) of `url`.

        start=None asks for the last `end` bytes. The offset comes from the reply's Content-Range,
        so a server that answers with a different range than asked is still read correctly.
        Raises RangeNotSupported when the server ignores or refuses the Range header (any answer
        but 206 that is not worth a retry, or no Content-Range); the body is not read then, so
        nothing big is transferred by accident.
        """
        spec = f"bytes=-{end}" if start is None else f"bytes={start}-{end - 1}"

        def attempt() -> tuple[bytes, int, int]:
            with self.client.stream("GET", url, headers={"Range": spec, **IDENTITY}) as response:
                self.stats.add(requests=1)
                if response.status_code in RETRY_STATUS:
                    raise _RetryableStatus(response.status_code)
                if response.status_code != 206:  # 200, 416, 501...: a download answers for itself
                    raise RangeNotSupported(url)
                match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
                if not match or match.group(3) == "*":
                    raise RangeNotSupported(url)
                body = response.read()
                self.stats.add(received=len(body))
            return body, int(match.group(1)), int(match.group(3))

        return self.retrying(url, attempt)

    def download(self, url: str, dest: Path, sha256: str | None, size: int | None = None) -> str:
        """Stream `url` into `dest` (a temp path the caller renames), verifying; returns sha256."""

        def attempt() -> str:
            digest = hashlib.sha256()
            with self.client.stream("GET", url, headers=IDENTITY) as response:
                self.stats.add(requests=1)
                _check_status(response, (200,))
                with open(dest, "wb") as out:
                    for chunk in response.iter_raw(1 << 20):
                        digest.update(chunk)
                        out.write(chunk)
                        self.stats.add(received=len(chunk))
            actual = digest.hexdigest()
            if sha256 is not None and actual != sha256:
                raise HashMismatch(
                    f"{redact(url)}: downloaded bytes have sha256 {actual}, the index published {sha256}; "
                    "the index or a proxy served a different file: retry later or report it to the index"
                )
            if size is not None and dest.stat().st_size != size:
                raise HashMismatch(f"{redact(url)}: downloaded {dest.stat().st_size} bytes, the index said {size}")
            return actual

        return self.retrying(url, attempt)


def _check_status(response: httpx.Response, ok: tuple[int, ...]) -> None:
    status = response.status_code
    if status in ok:
        return
    if status in RETRY_STATUS:
        raise _RetryableStatus(status)
    hint = " (credentials needed? put them in the index URL: https://USER:TOKEN@host/simple)" if status in (401, 403) else ""
    raise Unreachable(f"{redact(str(response.request.url))} answered HTTP {status}{hint}: {RECOVERY_HINT}")


def redact(url: str) -> str:
    """The URL without its password or token, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None and not (parts.username and "@" in parts.netloc):
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" if parts.password is not None else f"***@{host}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def _describe(exc: Exception | None) -> str:
    if exc is None:
        return "no attempt made"
    text = str(exc) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, _RetryableStatus) else text
