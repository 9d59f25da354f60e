"""One shared HTTP client with retries: keep-alive connections, one TLS context, backoff.

Name lookups on the index sometimes stall for seconds, and a TLS handshake costs a round trip
or two, so every request goes through one httpx.Client whose pool holds a connection per
worker. Transient failures (connection errors, timeouts, 5xx, 429) are retried with exponential
backoff; when the retries are spent the user gets envbuilder's Unreachable (exit 3) with the URL
and what to do, never an httpx traceback.

httpx's timeouts bound each network read, not a request: a server that sends its headers and then
a byte every few seconds never trips them, and one that accepts and never answers costs a read
timeout per attempt. So every request (all its attempts together) has a total deadline, and the
client has a run budget shared by all its requests; past either, the request ends in Unreachable
naming what it waited for. A read that is already in flight may overrun the deadline by at most
one read timeout, which is itself capped by the deadline.
"""

from __future__ import annotations

import base64
import hashlib
import netrc
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from envbuilder import __version__
from envbuilder.diskspace import disk_full_is_unreachable
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


class _DeadlinePassed(Exception):
    """The request's deadline or the run's budget passed while waiting for `waiting_for`."""

    def __init__(self, waiting_for: str):
        super().__init__(waiting_for)
        self.waiting_for = waiting_for


#: Seconds one request may take, all attempts together (ENVBUILDER_HTTP_DEADLINE overrides).
DEFAULT_DEADLINE = 120.0
#: A download also gets a second per this many bytes of its size (a 900 MB wheel at 1 MB/s).
DOWNLOAD_RATE_FLOOR = 1 << 20


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

    `max_connections` is the number of requests in flight (the client's workers); `timeout` bounds
    each network read, `deadline` each request (all attempts), `budget` (None: none) all requests
    of this client together.
    """

    def __init__(
        self,
        max_connections: int = 16,
        retries: int = 4,
        backoff: float = 0.5,
        timeout: float = 30.0,
        client: httpx.Client | None = None,
        deadline: float = DEFAULT_DEADLINE,
        budget: float | None = None,
        auth: httpx.Auth | None = None,
    ):
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self.deadline = deadline
        self.budget = budget
        self._budget_end = time.monotonic() + budget if budget is not None else float("inf")
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
            auth=auth,
        )

    def close(self) -> None:
        self.client.close()

    # -- deadlines ----------------------------------------------------------------------
    def _timeout(self, end: float) -> httpx.Timeout:
        """Per-read timeouts no longer than what is left of the deadline (at least a little)."""
        left = max(end - time.monotonic(), 0.05)
        return httpx.Timeout(min(self.timeout, left), connect=min(self.timeout, 15.0, left), pool=left)

    @staticmethod
    def _check_clock(end: float, waiting_for: str) -> None:
        if time.monotonic() >= end:
            raise _DeadlinePassed(waiting_for)

    def _read(self, response: httpx.Response, end: float, raw: bool = False) -> Iterator[bytes]:
        """The body's chunks, checking the deadline between reads (a trickling server cannot stall)."""
        received = 0
        # no chunk_size: httpx would buffer until it has that many bytes, hiding a trickle
        chunks = response.iter_raw() if raw else response.iter_bytes()
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                return
            except httpx.TimeoutException:
                self._check_clock(end, f"the body ({received} bytes received)")
                raise
            received += len(chunk)
            self.stats.add(received=len(chunk))
            yield chunk
            self._check_clock(end, f"the rest of the body ({received} bytes received)")

    # -- the one retry loop -------------------------------------------------------------
    def retrying(self, url: str, attempt: Callable[[float], T], deadline: float | None = None) -> T:
        """Run `attempt(end)` until it succeeds; transient failures back off, then Unreachable.

        `end` is the monotonic time by which the request (all attempts) must be done: the
        request's deadline or the run's budget, whichever comes first.
        """
        began = time.monotonic()
        request_end = began + (self.deadline if deadline is None else deadline)
        end = min(request_end, self._budget_end)
        last: Exception | None = None
        attempts = 0
        try:
            for n in range(self.retries + 1):
                if n:
                    self.stats.add(retries=1)
                    delay = min(self.backoff * (2 ** (n - 1)), 10.0) * (0.75 + random.random() / 2)
                    if time.monotonic() + delay >= end:  # no time for another attempt
                        raise _DeadlinePassed(_waiting_for(last))
                    time.sleep(delay)
                self._check_clock(end, "a free connection" if n == 0 else _waiting_for(last))
                attempts += 1
                try:
                    return attempt(end)
                except (httpx.TransportError, _RetryableStatus) as exc:
                    last = exc
                    if isinstance(exc, httpx.TimeoutException):
                        self._check_clock(end, _waiting_for(exc))
        except _DeadlinePassed as exc:
            raise self._gave_up(url, began, end == self._budget_end, exc.waiting_for) from None
        raise Unreachable(
            f"cannot fetch {redact(url)} after {attempts} attempts ({_describe(last)}): {RECOVERY_HINT}"
        )

    def _gave_up(self, url: str, began: float, budget: bool, waiting_for: str) -> Unreachable:
        waited = time.monotonic() - began
        if budget:
            rule = f"the run's index budget ({self.budget:g} s, ENVBUILDER_INDEX_BUDGET) is spent"
        else:
            rule = f"its deadline ({self.deadline:g} s a request, ENVBUILDER_HTTP_DEADLINE) passed"
        return Unreachable(
            f"gave up on {redact(url)} after {waited:.1f} s waiting for {waiting_for}: {rule}; "
            f"the index is answering too slowly or not at all: {RECOVERY_HINT}"
        )

    def get(self, url: str, headers: dict[str, str] | None = None, ok: tuple[int, ...] = (200,),
            method: str = "GET") -> httpx.Response:
        """GET (or HEAD) with the body read; statuses outside `ok` (not retryable) raise Unreachable."""

        def attempt(end: float) -> httpx.Response:
            with self.client.stream(method, url, headers=headers, timeout=self._timeout(end)) as response:
                self.stats.add(requests=1)
                # what response.read() does, with the deadline checked between chunks
                response._content = b"".join(self._read(response, end))  # noqa: SLF001
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

        def attempt(deadline: float) -> tuple[bytes, int, int]:
            with self.client.stream("GET", url, headers={"Range": spec, **IDENTITY},
                                    timeout=self._timeout(deadline)) as response:
                self.stats.add(requests=1)
                if response.status_code in RETRY_STATUS:
                    raise _RetryableStatus(response.status_code)
                if response.status_code != 206:  # 200, 416, 501...: a download answers for itself
                    raise RangeNotSupported(url)
                match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
                if not match or match.group(3) == "*":
                    raise RangeNotSupported(url)
                body = b"".join(self._read(response, deadline, raw=True))
            return body, int(match.group(1)), int(match.group(3))

        return self.retrying(url, attempt)

    def download(self, url: str, dest: Path, sha256: str | None, size: int | None = None) -> str:
        """Stream `url` into `dest` (a temp path the caller renames), verifying; returns sha256.

        Its deadline grows with the published size (a second per MiB on top of the usual one).
        A full disk is Unreachable naming the folder and the space needed (see envbuilder.diskspace).
        """

        def attempt(end: float) -> str:
            digest = hashlib.sha256()
            began = time.monotonic()
            with self.client.stream("GET", url, headers=IDENTITY, timeout=self._timeout(end)) as response:
                self.stats.add(requests=1)
                _check_status(response, (200,))
                length = response.headers.get("Content-Length", "")
                if size is None and length.isdigit():  # no published size (PEP 503 HTML): the server's
                    end = min(max(end, began + self.deadline + int(length) / DOWNLOAD_RATE_FLOOR), self._budget_end)
                with disk_full_is_unreachable(dest.parent, size or (int(length) if length.isdigit() else None)), \
                        open(dest, "wb") as out:
                    for chunk in self._read(response, end, raw=True):
                        digest.update(chunk)
                        out.write(chunk)
            actual = digest.hexdigest()
            if sha256 is not None and actual != sha256:
                raise HashMismatch(
                    f"{redact(url)}: downloaded bytes have sha256 {actual}, the index published {sha256}; "
                    "the index or a proxy served a different file: retry later or report it to the index"
                )
            if size is not None and dest.stat().st_size != size:
                raise HashMismatch(f"{redact(url)}: downloaded {dest.stat().st_size} bytes, the index said {size}")
            return actual

        return self.retrying(url, attempt, self.deadline + (size or 0) / DOWNLOAD_RATE_FLOOR)


def _waiting_for(exc: Exception | None) -> str:
    if isinstance(exc, httpx.ConnectTimeout | httpx.ConnectError):
        return "a connection"
    if isinstance(exc, httpx.PoolTimeout):
        return "a free connection"
    if isinstance(exc, httpx.ReadTimeout):
        return "an answer"
    return "an answer"


def _check_status(response: httpx.Response, ok: tuple[int, ...]) -> None:
    status = response.status_code
    if status in ok:
        return
    if status in RETRY_STATUS:
        raise _RetryableStatus(status)
    hint = " (credentials needed? put them in the index URL: https://USER:TOKEN@host/simple)" if status in (401, 403) else ""
    raise Unreachable(f"{redact(str(response.request.url))} answered HTTP {status}{hint}: {RECOVERY_HINT}")


def strip_credentials(url: str) -> str:
    """The URL without any user or password: what may be written to a file, a key or an image.

    Installers find the credentials again where the user keeps them (PIP_INDEX_URL, netrc, keyring).
    """
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _netloc(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2].lower()}"


class IndexAuth(httpx.Auth):
    """Basic auth for requests to a configured index's scheme://host:port, as pip does.

    Page links are stored without credentials (see simple._clean), so a file on the index's own
    host gets them back here; other hosts (a CDN) never see them. Without credentials in the URL,
    the user's ~/.netrc (NETRC) answers, as it does for pip, uv and curl.
    """

    def __init__(self, index_urls: list[str]):
        self.by_host: dict[str, tuple[str, str]] = {}
        for url in index_urls:
            parts = urlsplit(url)
            if parts.username is not None:
                self.by_host[_netloc(url)] = (unquote(parts.username), unquote(parts.password or ""))

    def auth_flow(self, request: httpx.Request):  # type: ignore[no-untyped-def]
        if "Authorization" not in request.headers:
            found = self.by_host.get(_netloc(str(request.url))) or _netrc_login(request.url.host)
            if found is not None:
                token = base64.b64encode(f"{found[0]}:{found[1]}".encode()).decode()
                request.headers["Authorization"] = f"Basic {token}"
        yield request


def _netrc_login(host: str) -> tuple[str, str] | None:
    path = Path(os.environ.get("NETRC", "") or Path.home() / ".netrc")
    if not path.is_file():
        return None
    try:
        entry = netrc.netrc(path).authenticators(host)
    except (netrc.NetrcParseError, OSError, UnicodeDecodeError):
        return None
    return (entry[0], entry[2] or "") if entry else None


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
