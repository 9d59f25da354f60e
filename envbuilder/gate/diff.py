"""What changed between two locks of one target, package by package.

Why classify: a reviewer reads "sgl-kernel kept, torch minor upgrade, binary" and knows where
to look; the verdict itself comes from the rules, never from the size of a bump.
"""

from __future__ import annotations

from typing import Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbuilder.lock.model import Lock, LockedPackage
from envbuilder.model import StrictModel

Kind = Literal["added", "removed", "upgraded", "downgraded", "rebuilt"]
Level = Literal["major", "minor", "patch"]


class Change(StrictModel):
    """One package's change; `rebuilt` is the same version from other bytes, source or recipe."""

    package: str
    kind: Kind
    base: str | None = None
    head: str | None = None
    level: Level | None = None
    binary: bool

    @property
    def summary(self) -> str:
        versions = {"added": f"{self.head}", "removed": f"{self.base}"}.get(self.kind, f"{self.base} -> {self.head}")
        level = f" {self.level}" if self.level else ""
        return f"{self.package} {self.kind}{level} ({versions}, {'binary' if self.binary else 'pure-Python'})"


def level_of(base: str, head: str) -> Level | None:
    """major / minor / patch by the first release component that differs (patch covers post/local)."""
    try:
        old, new = Version(base), Version(head)
    except InvalidVersion:
        return None
    width = max(len(old.release), len(new.release), 3)
    a = old.release + (0,) * (width - len(old.release))
    b = new.release + (0,) * (width - len(new.release))
    if a[0] != b[0]:
        return "major"
    if a[1] != b[1]:
        return "minor"
    return "patch"


def _direction(base: str, head: str) -> Kind:
    try:
        return "upgraded" if Version(head) > Version(base) else "downgraded"
    except InvalidVersion:
        return "upgraded" if head > base else "downgraded"


def _same_bytes(a: LockedPackage, b: LockedPackage) -> bool:
    return (a.source, sorted(a.artifacts), a.build) == (b.source, sorted(b.artifacts), b.build)


def diff_locks(base: Lock | None, head: Lock | None) -> list[Change]:
    """Changes from `base` to `head` (either may be None: a target added or removed), by name."""
    old = {canonicalize_name(p.name): p for p in (base.packages if base else ())}
    new = {canonicalize_name(p.name): p for p in (head.packages if head else ())}
    changes = []
    for key in sorted(old.keys() | new.keys()):
        a, b = old.get(key), new.get(key)
        if a is None:
            changes.append(Change(package=b.name, kind="added", head=b.version, binary=b.is_binary))
        elif b is None:
            changes.append(Change(package=a.name, kind="removed", base=a.version, binary=a.is_binary))
        elif a.version != b.version:
            changes.append(Change(package=b.name, kind=_direction(a.version, b.version), base=a.version,
                                  head=b.version, level=level_of(a.version, b.version),
                                  binary=a.is_binary or b.is_binary))
        elif not _same_bytes(a, b):
            changes.append(Change(package=b.name, kind="rebuilt", base=a.version, head=b.version,
                                  binary=a.is_binary or b.is_binary))
        if a is not None and b is not None:
            changes += _tool_changes(a, b)
    return changes


def _tools(pkg: LockedPackage) -> dict[str, str]:
    return dict(t.partition("==")[::2] for t in (pkg.build.tools if pkg.build else ()))


def _tool_changes(a: LockedPackage, b: LockedPackage) -> list[Change]:
    """A source build's locked build tools that moved: they go into the built product, so they are shown."""
    old, new = _tools(a), _tools(b)
    out = []
    for tool in sorted(old.keys() | new.keys()):
        before, after = old.get(tool), new.get(tool)
        if before == after:
            continue
        label = f"{tool} (build tool of {b.name})"
        if before is None or after is None:
            kind: Kind = "added" if before is None else "removed"
            out.append(Change(package=label, kind=kind, base=before, head=after, binary=False))
        else:
            out.append(Change(package=label, kind=_direction(before, after), base=before, head=after,
                              level=level_of(before, after), binary=False))
    return out
