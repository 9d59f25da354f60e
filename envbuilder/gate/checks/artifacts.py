"""Artifact hashes: a file the base already locks must keep its bytes; every other file is new.

A wheel or sdist name carries the package's name and version, so the same file name with another
sha256 (or size) is never a legitimate update: it is "artifact replaced", an error naming both
hashes. Files the base does not lock (or every file, for a target the change adds) are what
`envbuilder.gate.checks.index` asks the index about.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from envbuilder.gate.context import GateContext
from envbuilder.gate.model import GateFinding
from envbuilder.lock.model import Lock


@dataclass(frozen=True)
class LockedFile:
    package: str
    version: str
    index: str | None
    filename: str
    sha256: str
    size: int | None


def files_of(lock: Lock | None) -> list[LockedFile]:
    """Every file the lock pins: the packages' and the build tools' (`[[build-package]]`) alike."""
    if lock is None:
        return []
    return [LockedFile(p.name, p.version, p.source.index, a.filename, a.sha256, a.size)
            for p in (*lock.packages, *lock.build_packages) for a in p.artifacts]


def new_files(ctx: GateContext) -> list[LockedFile]:
    """Head files whose name the base does not lock (a known name with other bytes is `check_replaced`'s)."""
    known = {f.filename for f in files_of(ctx.base.lock if ctx.base else None)}
    return [f for f in files_of(ctx.head.lock) if f.filename not in known]


def check_replaced(ctx: GateContext) -> Iterator[GateFinding]:
    base = {f.filename: f for f in files_of(ctx.base.lock if ctx.base else None)}
    for file in files_of(ctx.head.lock):
        old = base.get(file.filename)
        if old is None or (old.sha256, old.size) == (file.sha256, file.size):
            continue
        what = f"sha256 {old.sha256} on the base, {file.sha256} on the head" if old.sha256 != file.sha256 \
            else f"size {old.size} on the base, {file.size} on the head"
        yield ctx.finding(file.package, "artifact-replaced", "error",
                          f"{file.package} {file.version}: {file.filename} has {what}: the same file "
                          "cannot change its bytes; re-lock from the index, or explain the replacement",
                          line=ctx.key_line("file", file.filename))
