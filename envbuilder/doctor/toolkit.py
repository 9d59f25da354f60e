"""CUDA toolkits on the host, and the one an extension build would pick.

Why: torch.utils.cpp_extension raises when nvcc's CUDA major differs from torch's, and a host
whose default toolkit is 13.x breaks every cu128 extension build (flash-attn, FlashInfer's JIT)
with an error far from the cause. The pick follows cpp_extension's own order: CUDA_HOME (or
CUDA_PATH), else the nvcc on PATH, else /usr/local/cuda.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from envbuilder.doctor.model import Toolkit, ToolkitFacts
from envbuilder.doctor.sources import HostSources

_NVCC_RELEASE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")
_DIR_VERSION = re.compile(r"cuda-(\d+\.\d+)$")
_TORCH_VERSION = re.compile(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", re.M)
_TORCH_CUDA = re.compile(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", re.M)


def parse_nvcc_version(text: str) -> str | None:
    """`nvcc --version` -> '13.0.88'."""
    match = _NVCC_RELEASE.search(text)
    return match.group(2) if match else None


def _version_json(sources: HostSources, home: str) -> str | None:
    text = sources.read(f"{home.rstrip('/')}/version.json")
    if text is None:
        return None
    try:
        return json.loads(text)["cuda"]["version"]
    except (ValueError, KeyError, TypeError):
        return None


def _toolkit_at(sources: HostSources, home: str) -> Toolkit | None:
    """A toolkit directory's version: version.json, else its nvcc, else its name (cuda-12.8)."""
    if not sources.path(home).is_dir():
        return None
    version = _version_json(sources, home)
    if version is None:
        nvcc = sources.path(home) / "bin" / "nvcc"
        ran = sources.run([str(nvcc), "--version"]) if nvcc.exists() else None
        version = parse_nvcc_version(ran.stdout) if ran and ran.returncode == 0 else None
    if version is None and (match := _DIR_VERSION.search(home)):
        version = match.group(1)
    return Toolkit(path=home, version=version)


def _installed(sources: HostSources) -> tuple[Toolkit, ...]:
    base = sources.path("/usr/local")
    homes = sorted(p.name for p in base.glob("cuda-*") if p.is_dir()) if base.is_dir() else []
    found = (_toolkit_at(sources, f"/usr/local/{name}") for name in homes)
    return tuple(t for t in found if t is not None)


def _nvcc_on_path(sources: HostSources) -> Toolkit | None:
    exe = sources.which("nvcc")
    if exe is None:
        return None
    ran = sources.run([exe, "--version"])
    version = parse_nvcc_version(ran.stdout) if ran and ran.returncode == 0 else None
    return Toolkit(path=str(Path(exe).resolve().parent.parent), version=version)


def _torch(sources: HostSources) -> tuple[str | None, str | None]:
    """torch's version and CUDA from torch/version.py, without importing torch (seconds, GBs)."""
    path = sources.torch_version_file
    if path is None:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            return None, None
        path = Path(list(spec.submodule_search_locations)[0]) / "version.py"
    try:
        text = path.read_text()
    except OSError:
        return None, None
    version, cuda = _TORCH_VERSION.search(text), _TORCH_CUDA.search(text)
    return (version.group(1) if version else None), (cuda.group(1) if cuda else None)


def probe_toolkits(sources: HostSources) -> ToolkitFacts:
    installed = _installed(sources)
    on_path = _nvcc_on_path(sources)
    home = sources.environ.get("CUDA_HOME") or sources.environ.get("CUDA_PATH")
    if home:
        build, reason = _toolkit_at(sources, home) or Toolkit(path=home), "CUDA_HOME"
    elif on_path:
        build, reason = on_path, "nvcc on PATH"
    else:
        build, reason = _toolkit_at(sources, "/usr/local/cuda"), "/usr/local/cuda"
    torch_version, torch_cuda = _torch(sources)
    return ToolkitFacts(installed=installed, nvcc_on_path=on_path, cuda_home=home, build_toolkit=build,
                        build_toolkit_reason=reason if build else "", torch_version=torch_version,
                        torch_cuda=torch_cuda)
