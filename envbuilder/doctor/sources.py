"""Where probes read from: a filesystem root, an environment, commands on a PATH, NVML.

Why injectable: doctor's value is in judging real machines, and the only way to test that on a
CPU host is to replay what real machines said. Tests point `root` at a directory of recorded
/proc files and `environ["PATH"]` at scripts that print recorded nvidia-smi and nvcc output;
the probes run unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

_TIMEOUT_S = 20


class NvmlUnavailable(Exception):
    """nvidia-ml-py is not importable, or NVML could not initialise (no driver)."""


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str


def nvml_answers() -> dict:
    """Ask NVML (nvidia-ml-py) what `doctor` needs, as plain data a test can record and replay."""
    try:
        import pynvml
    except ImportError as exc:
        raise NvmlUnavailable("nvidia-ml-py is not installed") from exc
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise NvmlUnavailable(f"NVML: {exc}") from exc
    try:
        return _nvml_collect(pynvml)
    except pynvml.NVMLError as exc:
        raise NvmlUnavailable(f"NVML: {exc}") from exc
    finally:
        pynvml.nvmlShutdown()


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvml_collect(nv) -> dict:
    gpus = []
    for index in range(nv.nvmlDeviceGetCount()):
        handle = nv.nvmlDeviceGetHandleByIndex(index)
        major, minor = nv.nvmlDeviceGetCudaComputeCapability(handle)
        try:
            persistence = nv.nvmlDeviceGetPersistenceMode(handle) == nv.NVML_FEATURE_ENABLED
        except nv.NVMLError:
            persistence = None
        gpus.append({
            "index": index,
            "name": _text(nv.nvmlDeviceGetName(handle)),
            "memory_total_bytes": int(nv.nvmlDeviceGetMemoryInfo(handle).total),
            "compute_capability": [int(major), int(minor)],
            "persistence_mode": persistence,
        })
    cuda = nv.nvmlSystemGetCudaDriverVersion()
    return {
        "driver_version": _text(nv.nvmlSystemGetDriverVersion()),
        "cuda_driver_version": int(cuda),
        "gpus": gpus,
    }


@dataclass(frozen=True)
class HostSources:
    """The host as probes see it; the defaults are this machine."""

    root: Path = Path("/")
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    nvml: Callable[[], dict] | None = nvml_answers
    torch_version_file: Path | None = None
    docker: bool = True  # False: skip engine queries (judging a saved nvidia-smi file)

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")

    def read(self, absolute: str) -> str | None:
        try:
            return self.path(absolute).read_text(errors="replace")
        except OSError:
            return None

    def which(self, name: str) -> str | None:
        return shutil.which(name, path=self.environ.get("PATH", ""))

    def run(self, argv: list[str]) -> Ran | None:
        """Run a command found on this host's PATH; None when it is not there at all."""
        exe = argv[0] if os.sep in argv[0] else self.which(argv[0])
        if exe is None or not Path(exe).exists():
            return None
        try:
            done = subprocess.run([exe, *argv[1:]], capture_output=True, text=True, timeout=_TIMEOUT_S,
                                  env=dict(self.environ), errors="replace")
        except subprocess.TimeoutExpired:
            return Ran(124, "", f"{argv[0]} did not answer within {_TIMEOUT_S} s")
        except OSError as exc:
            return Ran(126, "", str(exc))
        return Ran(done.returncode, done.stdout, done.stderr)


def recorded_nvml(path: Path) -> Callable[[], dict]:
    """An NVML source that replays answers saved as JSON (by `nvml_answers`) on another host."""
    def answers() -> dict:
        return json.loads(path.read_text())
    return answers
