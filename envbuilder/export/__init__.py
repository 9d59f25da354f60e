"""Exports: the lock in the formats other installers read (requirements, PEP 751, conda-lock).

A lock only envbuilder can read is a lock-in. `export` is the one service the CLI calls; each
format lives in its own module and starts from the same `Selection`, so they never disagree.
Exports need the index (file URLs) and the target environment, so they live beside `gate/` and
`build/`, not in the pure lock model: `lock/` imports nothing from `resolve/` or `index/`.
"""

from __future__ import annotations

from envbuilder.export import pylock, requirements
from envbuilder.export.selection import Selection, select
from envbuilder.export.urls import FileLister, locate
from envbuilder.lock.model import Lock

FORMATS = ("requirements", "pylock", "conda-lock")
#: Formats that carry download URLs and so ask the user's index at export time.
NEEDS_INDEX = frozenset({"pylock", "conda-lock"})

__all__ = ["FORMATS", "NEEDS_INDEX", "Selection", "export", "select"]


def export(
    lock: Lock,
    fmt: str,
    *,
    origin: str = "<lock>",
    skip_source_builds: bool = False,
    client: FileLister | None = None,
    file_name: str | None = None,
) -> str:
    """Render `lock` as `fmt`; formats in NEEDS_INDEX ask `client` (an IndexClient) for URLs."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}")
    selection = select(lock, skip_source_builds=skip_source_builds, origin=origin)
    if fmt == "requirements":
        return requirements.render(selection, origin)
    if client is None:
        raise ValueError(f"the {fmt} export needs an index client")
    located = locate(selection, client)
    if fmt == "pylock":
        return pylock.render(selection, located, origin)
    from envbuilder.export import condalock  # conda-lock is slow to import; only this format needs it

    return condalock.render(selection, located, origin, file_name or "conda-lock.yml")
