"""Linkage summaries on disk, keyed by the wheel's sha256, kept forever and verified on every read.

Why verified: a summary decides whether a lock passes. Each file stores the summary's JSON
(zlib-compressed) after a header line with the wheel's sha256 and the sha256 of the compressed
payload; a file whose name, header or payload digest disagree is deleted and recomputed, never
believed. Writes are atomic (temp file + rename), so parallel CI jobs share the directory.

Where: `$ENVBUILDER_CACHE_DIR/linkage/<2 hex>/<sha256>.json.z`, else the platform's user cache.
"""

from __future__ import annotations

import hashlib
import os
import re
import zlib
from pathlib import Path

import orjson
from pydantic import ValidationError

from envbuilder.abi.cache import cache_dir as _inspect_dir
from envbuilder.abi.linkage import SCHEMA, ElfLinkage, WheelLinkage

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_MAGIC = b"envbuilder-linkage"


def cache_dir() -> Path:
    return _inspect_dir().parent / "linkage"


def entry_path(sha256: str) -> Path:
    digest = sha256.lower()
    if not _SHA256.match(digest):
        raise ValueError(f"not a sha256: {sha256!r}")
    return cache_dir() / digest[:2] / f"{digest}.json.z"


def encode(summary: WheelLinkage) -> bytes:
    payload = zlib.compress(summary.model_dump_json(exclude_defaults=True).encode(), 6)
    header = b"%s %d %s %s\n" % (_MAGIC, SCHEMA, summary.sha256.encode(), hashlib.sha256(payload).hexdigest().encode())
    return header + payload


def decode(data: bytes, sha256: str) -> WheelLinkage | None:
    """The summary in `data` if its header names this wheel and its payload digest matches."""
    header, _, payload = data.partition(b"\n")
    parts = header.split(b" ")
    if len(parts) != 4 or parts[0] != _MAGIC or parts[1] != str(SCHEMA).encode():
        return None
    if parts[2].decode(errors="replace") != sha256.lower():
        return None
    if hashlib.sha256(payload).hexdigest().encode() != parts[3]:
        return None
    try:
        summary = _construct(orjson.loads(zlib.decompress(payload)))
    except (zlib.error, ValidationError, orjson.JSONDecodeError, ValueError, TypeError, KeyError):
        return None
    return summary if summary.sha256 == sha256.lower() else None


def _construct(data: dict) -> WheelLinkage:
    """Build the models without re-validating every field: the payload digest was just verified and
    only this module writes these files (validation of 100,000 imports costs a second per closure)."""
    elfs = tuple(ElfLinkage.model_construct(**{k: tuple(v) if isinstance(v, list) else v for k, v in e.items()})
                 for e in data.pop("elfs", ()))
    return WheelLinkage.model_construct(**data, elfs=elfs)


def load(sha256: str) -> WheelLinkage | None:
    path = entry_path(sha256)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        return None
    summary = decode(data, sha256)
    if summary is None:
        path.unlink(missing_ok=True)
    return summary


def store(summary: WheelLinkage) -> Path:
    path = entry_path(summary.sha256)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{id(summary)}.tmp")
    tmp.write_bytes(encode(summary))
    os.replace(tmp, path)
    return path
