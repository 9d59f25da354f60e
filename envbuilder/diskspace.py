"""A full disk is an environment problem, not a bug: exit 3 naming the folder and the space needed.

A closure's wheels are gigabytes and a cache can fill a disk; ENOSPC (or a quota's EDQUOT) while
writing becomes Unreachable with where it happened, how much was needed if known, and how much is
free, so the user knows what to clean or where to point ENVBUILDER_CACHE_DIR. The writers using
this write to a temp file renamed into place, so nothing half-written is left behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from envbuilder.errors import Unreachable

_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def human(size: float) -> str:
    """1536 -> '1.5 KiB'."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"  # pragma: no cover - the loop always returns


def free_bytes(folder: Path) -> int | None:
    for candidate in (folder, *folder.parents):
        with contextlib.suppress(OSError):
            return shutil.disk_usage(candidate).free
    return None


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in _FULL


def full_error(folder: Path, needed: int | None) -> Unreachable:
    free = free_bytes(folder)
    need = f"about {human(needed)} is needed" if needed else "more space is needed"
    have = f", {human(free)} is free" if free is not None else ""
    return Unreachable(
        f"no space left on the device holding {folder}: {need}{have}; free some space there "
        "(or point ENVBUILDER_CACHE_DIR at a bigger disk) and run again"
    )


@contextlib.contextmanager
def disk_full_is_unreachable(folder: Path, needed: int | None = None) -> Iterator[None]:
    """Turn ENOSPC/EDQUOT raised inside the block into Unreachable (exit 3) naming `folder`."""
    try:
        yield
    except OSError as exc:
        if exc.errno in _FULL:
            raise full_error(Path(os.path.abspath(folder)), needed) from None
        raise
