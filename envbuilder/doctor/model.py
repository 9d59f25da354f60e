"""What doctor found on a host and what it concluded, as typed values (the `--json` schema).

Why facts and checks are separate: probes only read (NVML, nvidia-smi, /proc, nvcc, docker) and
checks only judge, so every check can be tested from recorded inputs of real machines, and a
saved `nvidia-smi` output from a host we cannot reach is judged by the very same code.
"""

from __future__ import annotations

from typing import Literal

from envbuilder.model import StrictModel

Status = Literal["pass", "warn", "fail"]


class Check(StrictModel):
    id: str
    status: Status
    found: str
    needed: str = ""
    fix: str = ""


class Gpu(StrictModel):
    index: int
    name: str
    memory_mib: int | None = None
    compute_capability: str | None = None  # "9.0"
    cc_source: str = "driver"  # driver | product name
    persistence: bool | None = None

    @property
    def arch(self) -> str | None:
        if not self.compute_capability:
            return None
        major, minor = self.compute_capability.split(".")
        return f"sm_{major}{minor}"

    @property
    def memory_gib(self) -> float | None:
        return self.memory_mib / 1024 if self.memory_mib is not None else None


class DriverFacts(StrictModel):
    """The NVIDIA driver as seen from user space and from the kernel."""

    version: str | None = None
    cuda: str | None = None  # highest CUDA the driver supports ("13.0")
    source: str | None = None  # nvml | nvidia-smi | nvidia-smi -q | /proc/driver/nvidia/version | file
    gpus: tuple[Gpu, ...] = ()
    gpus_source: str | None = None
    module_loaded: bool | None = None  # None: cannot tell (no /proc/modules, as in gVisor)
    uvm_loaded: bool | None = None
    errors: tuple[str, ...] = ()  # what each source said when it failed


class Toolkit(StrictModel):
    path: str
    version: str | None = None  # "12.8" or "12.8.93"


class ToolkitFacts(StrictModel):
    installed: tuple[Toolkit, ...] = ()
    nvcc_on_path: Toolkit | None = None
    cuda_home: str | None = None
    build_toolkit: Toolkit | None = None  # what torch.utils.cpp_extension would use
    build_toolkit_reason: str = ""
    torch_version: str | None = None  # torch installed where doctor runs
    torch_cuda: str | None = None


class CapacityFacts(StrictModel):
    cores: int
    memory_gib: float | None = None
    swap_gib: float | None = None
    max_jobs_env: str | None = None


class ContainerFacts(StrictModel):
    engine: str | None = None  # "20.10.24 (API 1.41)"
    engine_error: str | None = None
    buildkit: str | None = None  # "docker buildx build (/usr/bin/docker)"
    buildkit_error: str | None = None
    runtimes: tuple[str, ...] = ()
    default_runtime: str | None = None
    cdi_specs: tuple[str, ...] = ()


class PythonFacts(StrictModel):
    running: str  # the interpreter running envbuilder, "3.11.2"
    on_path: tuple[tuple[str, str], ...] = ()  # ("3.12", "/usr/bin/python3.12") for each python3.N on PATH


class HostFacts(StrictModel):
    driver: DriverFacts
    python: PythonFacts | None = None
    toolkit: ToolkitFacts | None = None
    capacity: CapacityFacts | None = None
    container: ContainerFacts | None = None
    image_manifest: str | None = None


class DoctorReport(StrictModel):
    target: str | None
    host: HostFacts
    checks: tuple[Check, ...]

    @property
    def verdict(self) -> Status:
        statuses = {c.status for c in self.checks}
        return "fail" if "fail" in statuses else "warn" if "warn" in statuses else "pass"

    def to_json(self) -> dict:
        return {"target": self.target, "verdict": self.verdict,
                "checks": [c.model_dump() for c in self.checks], "host": self.host.model_dump(mode="json")}
