"""Where the numbers came from: host, GPUs and driver when visible, and the envbuilder image and lock.

A benchmark number without its environment cannot be compared later. Inside an envbuilder image
the build sets `ENVBUILDER_IMAGE_DIGEST` / `ENVBUILDER_LOCK_DIGEST` (or `ENVBUILDER_LOCK`, a lock
file path whose sha256 is taken); outside one these are simply absent.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

from envbuilder import __version__


def _gpus() -> list[dict[str, str]] | None:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    query = "name,driver_version,memory.total,compute_cap"
    try:
        out = subprocess.run([smi, f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=15, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    keys = query.split(",")
    return [dict(zip(keys, (f.strip() for f in line.split(",")))) for line in out.splitlines() if line.strip()]


def _lock_digest(environ: dict[str, str]) -> str | None:
    if digest := environ.get("ENVBUILDER_LOCK_DIGEST"):
        return digest
    path = environ.get("ENVBUILDER_LOCK")
    if path and Path(path).is_file():
        return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return None


def collect(environ: dict[str, str] | None = None) -> dict[str, Any]:
    environ = dict(os.environ) if environ is None else environ
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "envbuilder": __version__,
        "image_digest": environ.get("ENVBUILDER_IMAGE_DIGEST"),
        "lock_digest": _lock_digest(environ),
        "gpus": _gpus(),
    }
