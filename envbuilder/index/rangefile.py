"""A read-only, seekable file over HTTP range requests, so zipfile can read a remote wheel.

A wheel's dependencies live in one small member; its zip central directory sits at the end.
Reading the tail, then the member, costs two or three requests instead of the whole file (a
torch wheel is ~900 MB). Reads are served from fetched blocks of at least `block` bytes, and a
read near the end pulls the whole tail block, so zipfile's end-of-central-directory probe,
its central-directory read and the member's local header plus data each cost at most one request.
"""

from __future__ import annotations

import bisect
import io

from envbuilder.index.http import Http

DEFAULT_BLOCK = 64 * 1024
MAX_SEGMENTS = 16  # a long streaming read keeps only its latest blocks (and the tail) in memory


class RangeFile(io.RawIOBase):
    """`RangeFile(http, url, size)`; size=None learns it from the first (suffix) range reply.

    Raises envbuilder.index.errors.RangeNotSupported on first use if the server ignores ranges.
    `requests` and `bytes_fetched` say what it cost.
    """

    def __init__(self, http: Http, url: str, size: int | None = None, block: int = DEFAULT_BLOCK):
        super().__init__()
        self.http, self.url, self.block = http, url, block
        self._size = size
        self._pos = 0
        self._starts: list[int] = []  # sorted starts of fetched segments
        self._segments: dict[int, bytes] = {}
        self.requests = 0
        self.bytes_fetched = 0

    # -- io.RawIOBase ---------------------------------------------------------------
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            pos = offset
        elif whence == io.SEEK_CUR:
            pos = self._pos + offset
        elif whence == io.SEEK_END:
            pos = self.size + offset
        else:
            raise ValueError(f"invalid whence {whence}")
        if pos < 0:
            raise OSError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self._pos + n)
        if end <= self._pos:
            return b""
        data = self._cached(self._pos, end)
        if data is None:
            self._fetch(self._pos, end)
            data = self._cached(self._pos, end)
            assert data is not None
        self._pos = end
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    # -- fetching -------------------------------------------------------------------
    @property
    def size(self) -> int:
        if self._size is None:
            body, offset, total = self.http.get_range(self.url, None, self.block)
            self._size = total
            self._store(offset, body)
            self._count(body)
        return self._size

    def _count(self, body: bytes) -> None:
        self.requests += 1
        self.bytes_fetched += len(body)

    def _fetch(self, start: int, end: int) -> None:
        """Fetch at least [start, end), widened to a block; reads near EOF take the whole tail."""
        size = self.size
        fetch_end = min(size, max(end, start + self.block))
        fetch_start = start
        if fetch_end - fetch_start < self.block:
            fetch_start = max(0, fetch_end - self.block)
        body, offset, _total = self.http.get_range(self.url, fetch_start, fetch_end)
        self._store(offset, body)
        self._count(body)
        if self._cached(start, end) is None:
            raise OSError(f"{self.url}: the server answered bytes {offset}-{offset + len(body)} for {start}-{end}")

    def _store(self, start: int, body: bytes) -> None:
        if start not in self._segments:
            bisect.insort(self._starts, start)
        if len(body) >= len(self._segments.get(start, b"")):
            self._segments.pop(start, None)
            self._segments[start] = body  # dict order = age: the newest last
        if len(self._segments) > MAX_SEGMENTS:
            tail = max(self._starts)
            oldest = next(s for s in self._segments if s != tail)
            del self._segments[oldest]
            self._starts.remove(oldest)

    def _cached(self, start: int, end: int) -> bytes | None:
        """Bytes [start, end) if one fetched segment covers them."""
        i = bisect.bisect_right(self._starts, start)
        for seg_start in reversed(self._starts[:i]):
            seg = self._segments[seg_start]
            if seg_start + len(seg) >= end:
                return seg[start - seg_start : end - seg_start]
        return None
