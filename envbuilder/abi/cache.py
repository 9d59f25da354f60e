"""Inspection results cached by artifact hash, forever: an artifact's bytes never change.

Why: a lock's facets are recomputed on every `gate` run; reading a 500 MB wheel again each time
would make the gate minutes instead of milliseconds. Entries are written atomically under a file
lock (parallel workers and CI jobs share the directory) and validated on read; a corrupt or
foreign entry is dropped and recomputed, never trusted.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Callable

from filelock import FileLock
from platformdirs import user_cache_dir
from pydantic import ValidationError

from envbuilder.abi.report import SCHEMA, BinaryReport, CacheRecord, WheelReport

_SAFE_KEY = re.compile(r"^[a-z0-9]+:[0-9a-f]{64}$")


def cache_dir() -> Path:
    """`$ENVBUILDER_CACHE_DIR/inspect`, else the platform's user cache (XDG on Linux)."""
    root = os.environ.get("ENVBUILDER_CACHE_DIR") or user_cache_dir("envbuilder")
    return Path(root) / "inspect"


def _entry_path(key: str) -> Path:
    if not _SAFE_KEY.match(key):
        raise ValueError(f"bad inspection cache key {key!r}")
    kind, digest = key.split(":")
    return cache_dir() / kind / digest[:2] / f"{digest}.json"


def _load(path: Path, key: str) -> CacheRecord | None:
    try:
        record = CacheRecord.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValidationError, ValueError):
        path.unlink(missing_ok=True)
        return None
    if record.format_version != SCHEMA or record.key != key:
        path.unlink(missing_ok=True)
        return None
    return record


def _store(path: Path, record: CacheRecord) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(record.model_dump_json())
    os.replace(tmp, path)


def cached(key: str, kind: str, compute: Callable[[], BinaryReport | WheelReport]):
    """Return the cached report for `key`, or compute, store and return it.

    The lock is per key, so two processes inspecting the same wheel do the work once and
    different wheels proceed in parallel.
    """
    path = _entry_path(key)
    record = _load(path, key)
    if record is not None and getattr(record, kind) is not None:
        return getattr(record, kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        record = _load(path, key)
        if record is not None and getattr(record, kind) is not None:
            return getattr(record, kind)
        report = compute()
        _store(path, CacheRecord(format_version=SCHEMA, key=key, **{kind: report}))
        return report


def sha256_key(digest: str) -> str:
    return f"sha256:{digest.lower()}"


def file_sha256(stream, chunk: int = 1 << 20) -> str:
    """Hash a seekable stream from the start, leaving it at the start."""
    stream.seek(0)
    h = hashlib.sha256()
    while block := stream.read(chunk):
        h.update(block)
    stream.seek(0)
    return h.hexdigest()
