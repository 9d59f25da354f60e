"""The on-disk cache: content-addressed, verified on read, atomic, shared between processes.

Layout under the root (platformdirs' user cache dir, or ENVBUILDER_CACHE_DIR):

    files/<sha[:2]>/<sha256>/<filename>   distribution files, by their sha256 (immutable)
    metadata/<sha[:2]>/<sha256>           core metadata, by the sha256 of the file it describes
    sizes/<sha[:2]>/<sha256>              file sizes the index did not publish (PEP 503 HTML)
    pages/<index-key>/<project>           project pages (normalised), by index URL and name
    git/<url-key>.git                     bare repositories of git sources
    locks/                                filelock files

Files and metadata never change for a given hash, so they are kept forever. Every entry is
checked on read (files against their name, the others against a digest sealed into the entry,
and against the key the entry was written for: a sealed entry copied from another project's or
another index's slot is a miss, not a hit); a corrupt entry is deleted and reported as a miss, so
the caller refetches it. Every path is built from validated parts only (a sha256 in hex, a plain
file name, a normalised project name), so nothing an index says can point outside the cache. Writes go to a
temp file in the same directory and are renamed into place, so a reader (in this or another
process) sees the old entry or the new one, never half of one; filelock serialises the fetch
of one entry between processes, so two concurrent runs do not download the same wheel twice.
There is no fsync: a write torn by a crash fails verification on read and is refetched, so
durability would buy nothing but ~5 ms a write.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import platformdirs
from filelock import FileLock

from envbuilder.diskspace import disk_full_is_unreachable
from envbuilder.errors import Unreachable
from envbuilder.tempfiles import STALE_SECONDS, polite_mode, sweep

CACHE_ENV = "ENVBUILDER_CACHE_DIR"
_MAGIC = b"envbuilder-cache-1"


def default_cache_dir() -> Path:
    override = os.environ.get(CACHE_ENV, "").strip()
    return Path(override) if override else Path(platformdirs.user_cache_dir("envbuilder"))


_SHA256 = re.compile(r"[0-9a-f]{64}")
_FILENAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+!~-]{0,250}")
_PROJECT = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,198}[a-z0-9])?")


class UnsafeCacheKey(Unreachable):
    """A hash, file name or project name that cannot name a cache entry (it came from outside)."""


def _checked(kind: str, value: str, pattern: re.Pattern[str]) -> str:
    if not isinstance(value, str) or pattern.fullmatch(value) is None or value in (".", ".."):
        raise UnsafeCacheKey(
            f"refusing {kind} {value!r} as a cache key: it is not a plain {kind} (the index or the "
            "lock gave a value that could point outside the cache); report it to the index or fix the lock"
        )
    return value


def _index_key(index_url: str) -> str:
    """Pages are keyed by the index URL without credentials: a rotated token keeps the cache."""
    parts = urlsplit(index_url)
    bare = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2])) if "@" in parts.netloc else index_url
    return key_of(bare.rstrip("/") + "/")


def key_of(text: str) -> str:
    """A short, filesystem-safe key for URLs (no host ends up in a path)."""
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def seal(payload: bytes, meta: dict[str, object]) -> bytes:
    """Prefix `payload` with a header that holds its sha256, so corruption is detectable."""
    header = json.dumps({"sha256": hashlib.sha256(payload).hexdigest(), **meta}, sort_keys=True)
    return _MAGIC + b" " + header.encode() + b"\n" + payload


def unseal(blob: bytes) -> tuple[bytes, dict[str, object]] | None:
    """The payload and header of a sealed blob, or None if it is damaged in any way."""
    head, sep, payload = blob.partition(b"\n")
    magic, _, header_text = head.partition(b" ")
    if not sep or magic != _MAGIC:
        return None
    try:
        header = json.loads(header_text)
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("sha256") != hashlib.sha256(payload).hexdigest():
        return None
    return payload, header


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file renamed into place; a full disk is exit 3 and leaves no temp file."""
    with disk_full_is_unreachable(path.parent, len(data)):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                polite_mode(out.fileno())
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


STALE_TEMP_SECONDS = 24 * 3600  # a download still running after a day is not one


def _sweep(directory: Path, age: float, pattern: str = "*.part") -> None:
    """Delete partial writes left by killed runs (a live run's temp files are younger)."""
    sweep(directory, pattern, age)


def _signature(path: Path) -> tuple[int, int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns, st.st_ino


@dataclass(frozen=True)
class CachedPage:
    body: bytes  # see envbuilder.index.simple.encode_page
    fetched_at: float

    def age(self) -> float:
        return time.time() - self.fetched_at


class Cache:
    """`Cache(root=None)`: root defaults to ENVBUILDER_CACHE_DIR, else the user cache dir."""

    def __init__(self, root: Path | str | None = None):
        self.root = Path(root) if root is not None else default_cache_dir()
        # files hashed in this process, by their stat signature: unchanged files need no rehash
        self._verified: dict[Path, tuple[int, int, int]] = {}
        self._verified_lock = threading.Lock()
        self._swept = False
        self._swept_sealed = False

    def __repr__(self) -> str:
        return f"Cache({str(self.root)!r})"

    # -- locking --------------------------------------------------------------------
    @contextlib.contextmanager
    def locked(self, kind: str, key: str) -> Iterator[None]:
        """An inter-process lock for one entry (also excludes other threads of this process)."""
        path = self.root / "locks" / kind / f"{key}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(path, thread_local=False):
            yield

    # -- sealed entries (pages, metadata) --------------------------------------------
    def _read_sealed(self, path: Path) -> tuple[bytes, dict[str, object]] | None:
        """The entry at `path` if intact and written for this very slot, else None (and dropped)."""
        try:
            blob = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        opened = unseal(blob)
        if opened is None or opened[1].get("key") != self._slot(path):
            self.drop(path)
            return None
        return opened

    def _write_sealed(self, path: Path, payload: bytes, meta: dict[str, object]) -> None:
        self._sweep_metadata_once()
        atomic_write(path, seal(payload, {**meta, "key": self._slot(path)}))

    def _slot(self, path: Path) -> str:
        """The entry's key: its path under the root (bound into the seal, checked on read)."""
        return path.relative_to(self.root).as_posix()

    def _sweep_metadata_once(self) -> None:
        """Sweep day-old `.tmp-*.part` files of killed runs from the sealed-entry folders, once."""
        if self._swept_sealed:
            return
        self._swept_sealed = True
        for kind in ("metadata", "sizes", "pages"):
            top = self.root / kind
            if top.is_dir():
                for folder in (top, *(p for p in top.iterdir() if p.is_dir())):
                    _sweep(folder, STALE_SECONDS, ".tmp-*.part")

    def drop(self, path: Path) -> None:
        """Delete a damaged entry so the next lookup misses and refetches."""
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        with self._verified_lock:
            self._verified.pop(path, None)

    def page_path(self, index_url: str, project: str) -> Path:
        return self.root / "pages" / _index_key(index_url) / _checked("project name", project, _PROJECT)

    def read_page(self, index_url: str, project: str) -> CachedPage | None:
        opened = self._read_sealed(self.page_path(index_url, project))
        if opened is None:
            return None
        payload, header = opened
        fetched_at = header.get("fetched_at", 0.0)
        return CachedPage(payload, float(fetched_at) if isinstance(fetched_at, int | float) else 0.0)

    def write_page(self, index_url: str, project: str, body: bytes) -> None:
        meta = {"fetched_at": time.time(), "index": _index_key(index_url)}
        self._write_sealed(self.page_path(index_url, project), body, meta)

    def metadata_path(self, file_sha256: str) -> Path:
        _checked("sha256", file_sha256, _SHA256)
        return self.root / "metadata" / file_sha256[:2] / file_sha256

    def read_metadata(self, file_sha256: str) -> bytes | None:
        opened = self._read_sealed(self.metadata_path(file_sha256))
        return None if opened is None else opened[0]

    def write_metadata(self, file_sha256: str, data: bytes, source: str) -> None:
        self._write_sealed(self.metadata_path(file_sha256), data, {"source": source})

    def size_path(self, file_sha256: str) -> Path:
        _checked("sha256", file_sha256, _SHA256)
        return self.root / "sizes" / file_sha256[:2] / file_sha256

    def read_size(self, file_sha256: str) -> int | None:
        opened = self._read_sealed(self.size_path(file_sha256))
        try:
            return None if opened is None else int(opened[0])
        except ValueError:
            return None

    def write_size(self, file_sha256: str, size: int) -> None:
        self._write_sealed(self.size_path(file_sha256), str(size).encode(), {})

    # -- files ----------------------------------------------------------------------
    def file_path(self, sha256: str, filename: str) -> Path:
        _checked("sha256", sha256, _SHA256)
        _checked("file name", filename, _FILENAME)
        return self.root / "files" / sha256[:2] / sha256 / filename

    def lookup_file(self, sha256: str, filename: str) -> Path | None:
        """The cached file if present and intact (hashed once per process), else None."""
        path = self.file_path(sha256, filename)
        try:
            signature = _signature(path)
        except FileNotFoundError:
            return None
        with self._verified_lock:
            if self._verified.get(path) == signature:
                return path
        if file_sha256(path) != sha256:
            self.drop(path)
            return None
        with self._verified_lock:
            self._verified[path] = signature
        return path

    def temp_path(self) -> Path:
        """A fresh temp path inside the cache (same filesystem, so the final rename is atomic)."""
        tmp_dir = self.root / "files" / "tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)
        if not self._swept:
            self._swept = True
            _sweep(tmp_dir, STALE_TEMP_SECONDS)
        fd, tmp = tempfile.mkstemp(dir=tmp_dir, prefix="dl-", suffix=".part")
        polite_mode(fd)
        os.close(fd)
        return Path(tmp)

    def commit_file(self, tmp: Path, sha256: str, filename: str) -> Path:
        """Move a verified download into place under its hash."""
        final = self.file_path(sha256, filename)
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, final)
        with self._verified_lock:
            self._verified[final] = _signature(final)
        return final

    # -- git ------------------------------------------------------------------------
    def git_dir(self, url: str) -> Path:
        return self.root / "git" / f"{_index_key(url)}.git"
