"""Where records live and how they are read and written.

Layout (documented in docs/validated.md): `matrices/<target>.validated/` holds one record per run,
`<UTC date>-<first 12 hex of the report's sha256>.toml`, and beside it the report it vouches for,
`<same name>.report.json`. One file per record means two labs that pool evidence in one
repository never edit the same file, so git merges them without conflicts; the name comes from
the content, so the same run always gives the same name and bytes.

Reading is defensive: only regular files directly in the folder (no symlinks, which a pull
request could aim anywhere), bounded sizes, and a record that does not parse is reported as a
broken record rather than raised, so one bad file cannot hide the others.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import tomli_w
from pydantic import ValidationError

from envbuilder.lock.io import write_atomic
from envbuilder.validated.model import Record

SUFFIX = ".validated"
RECORD_EXT = ".toml"
REPORT_EXT = ".report.json"
MAX_RECORD_BYTES = 256 * 1024
MAX_REPORT_BYTES = 64 * 1024 * 1024
HEADER = ("# envbuilder validated record: written by `envbuilder serve --smoke --record` or\n"
          "# `envbuilder validated import`; do not edit (its report's sha256 would no longer match).\n")
_NAME = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._-]{0,150}\.toml$")


def records_dir(root: Path, target: str) -> Path:
    return Path(root) / "matrices" / f"{target}{SUFFIX}"


def report_path(record_path: Path) -> Path:
    """The report of a record: derived from the record's own file name, never from its content."""
    return record_path.with_name(record_path.name.removesuffix(RECORD_EXT) + REPORT_EXT)


def _strip_none(value):
    if isinstance(value, dict):
        kept = {k: _strip_none(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None and v not in ((), [], {})}
    if isinstance(value, (list, tuple)):
        return [_strip_none(v) for v in value]
    return value


def dumps(record: Record) -> str:
    """Deterministic TOML: field order from the model, no nulls (TOML has none), no timestamps added."""
    return HEADER + tomli_w.dumps(_strip_none(record.model_dump(mode="json")))


def _stamp(date: str) -> str:
    """'2026-12-01T04:12:33+00:00' -> '20261201T041233Z'; '2026-02' -> '2026-02'."""
    if "T" not in date:
        return date
    return re.sub(r"[-:]", "", date[:19]) + "Z"


def file_name(record: Record, report_sha256: str | None = None) -> str:
    if report_sha256:
        return f"{_stamp(record.date)}-{report_sha256[:12]}{RECORD_EXT}"
    content = hashlib.sha256(dumps(record).encode()).hexdigest()
    return f"{_stamp(record.date)}-{record.kind}-{content[:12]}{RECORD_EXT}"


def write_record(directory: Path, record: Record, report_bytes: bytes | None = None) -> Path:
    """Write the report first, then the record: a record on disk always has its report beside it."""
    path = Path(directory) / file_name(record, record.report.sha256 if record.report else None)
    if report_bytes is not None:
        _shared(report_path(path), report_bytes.decode("utf-8"))  # JSON: utf-8, round-trips exactly
    _shared(path, dumps(record))
    return path


def _shared(path: Path, text: str) -> None:
    """Atomic write, then the permissions of any file the user creates (the temp file was 0600)."""
    import os

    write_atomic(path, text)
    umask = os.umask(0)
    os.umask(umask)
    path.chmod(0o666 & ~umask)


@dataclass(frozen=True)
class Stored:
    """One record file as found: parsed, or the reason it could not be."""

    path: Path
    record: Record | None
    error: str | None = None
    sha256: str = ""  # of the record file's bytes: tells a changed record from an unchanged one

    @property
    def name(self) -> str:
        return self.path.name


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def read_bounded(path: Path, limit: int) -> bytes:
    """Read a regular file of at most `limit` bytes; ValueError otherwise (symlinks included)."""
    if path.is_symlink():
        raise ValueError("is a symbolic link (records and reports must be plain files)")
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"larger than {limit} bytes")
    return data


def parse(data: bytes, origin: str) -> Record:
    """A record from bytes; ValueError with a message naming the key on anything wrong."""
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{origin}: not a TOML record: {exc}") from None
    try:
        return Record.model_validate(table)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise ValueError(f"{origin}: key {key!r}: {first['msg']}") from None


def load(path: Path) -> Stored:
    try:
        data = read_bounded(path, MAX_RECORD_BYTES)
    except (OSError, ValueError) as exc:
        return Stored(path, None, f"{path.name}: {getattr(exc, 'strerror', None) or exc}")
    digest = hashlib.sha256(data).hexdigest()
    try:
        return Stored(path, parse(data, path.name), sha256=digest)
    except ValueError as exc:
        return Stored(path, None, str(exc), digest)


def load_dir(directory: Path, target: str | None = None) -> list[Stored]:
    """Every record file in `directory` (sorted by name); records for another target are broken ones."""
    directory = Path(directory)
    if not directory.is_dir() or directory.is_symlink():
        return []
    found = []
    for path in sorted(directory.iterdir()):
        if not path.name.endswith(RECORD_EXT):
            continue
        if not _NAME.match(path.name) or not _regular(path):
            found.append(Stored(path, None, f"{path.name}: not a plain record file"))
            continue
        stored = load(path)
        if stored.record is not None and target is not None and stored.record.target != target:
            stored = Stored(path, None, f"{path.name}: key 'target': {stored.record.target!r} is in the folder "
                                        f"of {target!r}", stored.sha256)
        found.append(stored)
    return found


def load_target(root: Path, target: str) -> list[Stored]:
    return load_dir(records_dir(root, target), target)
