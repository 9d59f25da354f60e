"""Temp files of atomic writes: the user's umask on what they become, and stale ones swept.

`tempfile.mkstemp` creates 0600 files; renamed into place they would make every lock, export and
cache entry private whatever the user's umask says, so the writers give them 0666 & ~umask, as
`open()` would. A run killed between write and rename leaves its temp file behind; the next write
into the same folder deletes those older than STALE_SECONDS (a live write lasts milliseconds, a
live download minutes, so an hour-old temp file belongs to no one).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

STALE_SECONDS = 3600.0


def current_umask() -> int:
    """The process umask, read without changing it (Linux: /proc/self/status; else set and restore)."""
    with contextlib.suppress(OSError, ValueError):
        match = re.search(r"^Umask:\s*([0-7]+)", Path("/proc/self/status").read_text(), re.M)
        if match:
            return int(match.group(1), 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def polite_mode(fd: int) -> None:
    """Give a freshly made temp file the mode `open()` would have given it (0666 & ~umask)."""
    os.fchmod(fd, 0o666 & ~current_umask())


def sweep(directory: Path, pattern: str, age: float = STALE_SECONDS) -> int:
    """Delete files matching `pattern` in `directory` older than `age` seconds; returns how many."""
    cutoff = time.time() - age
    removed = 0
    for path in Path(directory).glob(pattern):
        with contextlib.suppress(OSError):
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
    return removed
