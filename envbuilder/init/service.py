"""`init`: read what the user has, decide the target's platform and GPU, write a matrix `lock` accepts."""

from __future__ import annotations

import platform
import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from envbuilder.errors import BadInput, Unreachable
from envbuilder.init.readers import Found, Pin, read_any
from envbuilder.init.writer import Gpu, Spec, default_base, render, torch_cuda

TARGET_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")
ARCH_RE = re.compile(r"^sm_\d+[af]?$")


@dataclass(frozen=True)
class InitRequest:
    target: str
    sources: tuple[Path, ...]
    python: str | None = None
    libc: str | None = None
    machine: str | None = None
    base_image: str | None = None
    cuda: str | None = None
    gpu_arch: str | None = None
    gpu_name: str | None = None
    gpu_count: int = 1
    gpu_memory_gib: float | None = None
    driver_min: str | None = None
    probe: bool = False
    force: bool = False


@dataclass(frozen=True)
class InitResult:
    path: Path
    pins: tuple[Pin, ...]
    skipped: tuple[str, ...]
    gpu: Gpu | None


def _merge(found: list[Found]) -> Found:
    pins: dict[str, Pin] = {}
    for f in found:
        pins.update({p.name: p for p in f.pins})
    python = next((f.python for f in found if f.python), None)
    return Found(tuple(pins.values()), python, tuple(s for f in found for s in f.skipped))


def probed_gpu() -> tuple[Gpu, str | None]:
    """This host's GPUs through doctor's probe (NVML, nvidia-smi, /proc)."""
    from envbuilder.doctor.nvidia import probe_driver, with_product_arch
    from envbuilder.doctor.service import product_archs
    from envbuilder.doctor.sources import HostSources
    from envbuilder.knowledge import load_knowledge

    driver = with_product_arch(probe_driver(HostSources()), product_archs(load_knowledge()))
    gpus = [g for g in driver.gpus if g.arch]
    if not gpus:
        said = "; ".join(driver.errors) or "no GPU listed"
        raise Unreachable(f"option --probe: no NVIDIA GPU with a known arch on this host ({said}); "
                          "give the target's GPU with --gpu-arch (and --gpu-name, --gpu-count, --gpu-memory-gib)")
    first = gpus[0]
    memory = round(first.memory_gib or 1.0)
    return Gpu(first.name, first.arch, len(gpus), memory), driver.version


def _flag_gpu(request: InitRequest) -> Gpu | None:
    if request.gpu_arch is None:
        if request.gpu_name or request.gpu_memory_gib:
            raise BadInput("option --gpu-arch: needed with --gpu-name / --gpu-memory-gib (e.g. --gpu-arch sm_90)")
        return None
    if not ARCH_RE.match(request.gpu_arch):
        raise BadInput(f"option --gpu-arch: {request.gpu_arch!r} is not an arch like sm_90 or sm_120")
    if not request.gpu_memory_gib or request.gpu_memory_gib <= 0:
        raise BadInput("option --gpu-memory-gib: needed with --gpu-arch (memory of one GPU, e.g. 80)")
    if request.gpu_count < 1:
        raise BadInput("option --gpu-count: at least 1")
    return Gpu(request.gpu_name or f"NVIDIA GPU ({request.gpu_arch})", request.gpu_arch, request.gpu_count,
               request.gpu_memory_gib)


def _check_loads(text: str, target: str) -> None:
    """The written text through the real loader: what `init` writes, `lock` accepts."""
    from envbuilder.matrix.loader import load_matrix

    with tempfile.TemporaryDirectory(prefix="envbuilder-init-") as tmp:
        path = Path(tmp) / f"{target}.yaml"
        path.write_text(text, encoding="utf-8")
        load_matrix(path)


def run_init(request: InitRequest, root: Path) -> InitResult:
    from envbuilder.lock.io import write_atomic

    if not TARGET_RE.match(request.target):
        raise BadInput(f"argument TARGET: {request.target!r}: lower-case letters, digits and '-' (e.g. my-stack)")
    if not request.sources:
        raise BadInput("option --from: name a requirements file, pip freeze output, uv.lock or pylock.toml")
    found = _merge([read_any(p) for p in request.sources])
    if not found.pins:
        raise BadInput(f"option --from: no package found in {', '.join(map(str, request.sources))}")
    gpu, driver = (probed_gpu() if request.probe else (_flag_gpu(request), None))
    cuda = request.cuda or torch_cuda(found.pins)
    python = request.python or found.python or ".".join(platform.python_version_tuple()[:2])
    base, apt, libc = default_base(python, cuda if gpu else None)
    spec = Spec(target=request.target, python=python, libc=request.libc or libc,
                machine=request.machine or platform.machine() or "x86_64", base_image=request.base_image or base,
                apt=apt, gpu=gpu, driver_min=request.driver_min or driver, cuda=cuda,
                source=", ".join(p.name for p in request.sources))
    if spec.machine not in ("x86_64", "aarch64"):
        spec = replace(spec, machine="x86_64")
    text = render(spec, found.pins)
    _check_loads(text, request.target)
    path = root / "matrices" / f"{request.target}.yaml"
    if path.exists() and not request.force:
        raise BadInput(f"{path}: already exists; pick another TARGET or pass --force to replace it")
    write_atomic(path, text)
    return InitResult(path, found.pins, found.skipped, gpu)
