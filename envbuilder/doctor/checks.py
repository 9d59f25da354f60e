"""Judge host facts against a target (and its lock): one Check per question, each with its fix.

Why the lock's binaries are judged through envbuilder.abi.rules: the host's driver and GPU arch
play the role the matrix's `driver.min` and `gpu.arch` play for `lock` and `gate`, so doctor
says "sgl-kernel has no code for sm_90" in exactly the words the gate would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from envbuilder.abi import rules
from envbuilder.abi.facets import GpuArch
from envbuilder.abi.rules import DriverVersion, Subject, TargetFacts
from envbuilder.build.memory import GIB, GIB_PER_CXX_JOB, REFERENCE_THREADS, gib_per_job, max_cxx_jobs, max_jobs
from envbuilder.doctor.model import Check, DriverFacts, Gpu, HostFacts
from envbuilder.knowledge import Knowledge
from envbuilder.lock.model import Facets, LockedPackage, Source

#: Reported memory is a little under the marketing size (96 GB boards show 95.6 GiB): allow 3 %.
MEMORY_TOLERANCE = 0.97


@dataclass(frozen=True)
class Context:
    """Everything a check may consult; target, lock subjects and alternatives may be absent."""

    host: HostFacts
    knowledge: Knowledge
    target: Any = None  # envbuilder.matrix.Target
    subjects: tuple[Subject, ...] = ()
    lock_label: str | None = None
    other_targets: dict[str, str] | None = None  # name -> gpu arch, for "pick another target"

    @property
    def gpu_spec(self):
        hardware = getattr(self.target, "hardware", None)
        return getattr(hardware, "gpu", None)

    @property
    def gpu_target(self) -> bool:
        """No target (judge the GPUs generically), or one that names a GPU or a CUDA toolkit."""
        if self.target is None:
            return True
        return self.gpu_spec is not None or bool(getattr(getattr(self.target, "toolchain", None), "cuda", None))

    @property
    def driver_min(self) -> str | None:
        hardware = getattr(self.target, "hardware", None)
        driver = getattr(hardware, "driver", None)
        return getattr(driver, "min", None)


def _version(text: str | None) -> Version | None:
    try:
        return DriverVersion(text) if text else None
    except InvalidVersion:
        return None


# ------------------------------------------------------------------------------------ driver

def driver_version(ctx: Context) -> Check:
    driver = ctx.host.driver
    needed = f">= {ctx.driver_min}" if ctx.driver_min else "an NVIDIA driver"
    if driver.version is None:
        said = "; ".join(driver.errors) or "no source answered"
        return Check(id="driver.version", status="fail", found=f"no NVIDIA driver ({said})", needed=needed,
                     fix=f"install the NVIDIA driver{' ' + needed if ctx.driver_min else ''} and load it "
                         "(sudo modprobe nvidia); check with nvidia-smi")
    found = f"{driver.version} (via {driver.source})"
    minimum = _version(ctx.driver_min)
    if minimum is not None and _version(driver.version) < minimum:
        return Check(id="driver.version", status="fail", found=found, needed=needed,
                     fix=f"upgrade the NVIDIA driver to {ctx.driver_min} or newer")
    return Check(id="driver.version", status="pass", found=found, needed=needed)


def driver_module(ctx: Context) -> Check:
    driver = ctx.host.driver
    needed = "nvidia and nvidia_uvm kernel modules loaded"
    load_fix = ("sudo modprobe nvidia && sudo modprobe nvidia_uvm; to load them at boot: "
                "printf 'nvidia\\nnvidia_uvm\\n' | sudo tee /etc/modules-load.d/nvidia.conf")
    if driver.module_loaded is False:
        return Check(id="driver.module", status="fail", found="the nvidia kernel module is not loaded",
                     needed=needed, fix=load_fix + " (after a reboot it may not load by itself)")
    if driver.module_loaded is None:
        answered = driver.version is not None and driver.source != "/proc/driver/nvidia/version"
        found = "cannot list kernel modules (no /proc/modules)"
        if answered:
            return Check(id="driver.module", status="pass", found=f"{found}; the driver answered via {driver.source}",
                         needed=needed)
        return Check(id="driver.module", status="warn", found=found, needed=needed, fix=load_fix)
    if driver.uvm_loaded is False:
        return Check(id="driver.module", status="warn", found="nvidia loaded, nvidia_uvm not loaded", needed=needed,
                     fix="sudo modprobe nvidia_uvm (CUDA needs it; containers cannot load it themselves)")
    return Check(id="driver.module", status="pass", found="nvidia and nvidia_uvm loaded", needed=needed)


def driver_persistence(ctx: Context) -> Check | None:
    gpus = ctx.host.driver.gpus
    known = [g for g in gpus if g.persistence is not None]
    if not known:
        return None
    off = [str(g.index) for g in known if not g.persistence]
    if off:
        return Check(id="driver.persistence", status="warn", found=f"persistence mode off on GPU {', '.join(off)}",
                     needed="persistence mode on (no driver re-initialisation at every process start)",
                     fix="sudo nvidia-smi -pm 1, or enable the nvidia-persistenced service")
    return Check(id="driver.persistence", status="pass", found="persistence mode on for every GPU",
                 needed="persistence mode on")


def _host_facts(ctx: Context, gpu: Gpu | None) -> TargetFacts:
    toolkit = getattr(getattr(ctx.target, "toolchain", None), "cuda", None)
    return TargetFacts(name="this host", arch=GpuArch.parse(gpu.arch) if gpu and gpu.arch else None,
                       driver_min=_version(ctx.host.driver.version), toolkit=toolkit)


def _findings_check(check_id: str, findings: list, passed: str, needed: str, fix: str) -> Check:
    errors = [f for f in findings if f.severity == "error"]
    warnings = [f for f in findings if f.severity == "warning"]
    if errors or warnings:
        worst = errors or warnings
        found = "; ".join(f.why for f in worst[:4]) + (f" (+{len(worst) - 4} more)" if len(worst) > 4 else "")
        return Check(id=check_id, status="fail" if errors else "warn", found=found, needed=needed, fix=fix)
    return Check(id=check_id, status="pass", found=passed, needed=needed)


def driver_lock_cuda(ctx: Context) -> Check | None:
    """The host driver against the CUDA of every binary in the lock (or the target's toolkit)."""
    if ctx.host.driver.version is None:
        return None
    host = _host_facts(ctx, None)
    cudas = sorted({s.facets.cuda for s in ctx.subjects if s.facets and s.facets.cuda}, key=Version)
    if not ctx.subjects:
        toolkit = getattr(getattr(ctx.target, "toolchain", None), "cuda", None)
        if not toolkit:
            return None
        stub = Subject(LockedPackage(name="toolchain", version=toolkit, source=Source()),
                       Facets(cuda=toolkit, evidence="knowledge"))
        findings, cudas, what = rules.driver_cuda(stub, host, ctx.knowledge), [toolkit], "the target's toolkit"
    else:
        findings = [f for s in ctx.subjects for f in rules.driver_cuda(s, host, ctx.knowledge)]
        what = f"every CUDA binary in {ctx.lock_label}"
    newest = cudas[-1] if cudas else None
    native = rules.toolkit_driver(ctx.knowledge, newest) if newest and "." in newest else None
    return _findings_check(
        "driver.lock-cuda", findings,
        passed=f"driver {ctx.host.driver.version} runs CUDA {', '.join(cudas) or 'none'}: {what}",
        needed=f"a driver for CUDA {', '.join(cudas)}" + (f" (>= {native} natively)" if native else ""),
        fix=f"upgrade the driver to {native} or newer" if native else "upgrade the NVIDIA driver")


# ------------------------------------------------------------------------------------ GPUs

def _no_gpus(check_id: str, driver: DriverFacts, needed: str) -> Check:
    why = "no NVIDIA GPU visible" if driver.version else "no NVIDIA driver, so no GPU visible"
    source = f" ({driver.source} lists none)" if driver.gpus_source else ""
    return Check(id=check_id, status="fail", found=why + source, needed=needed,
                 fix="check `nvidia-smi -L`; install and load the NVIDIA driver")


def gpu_count(ctx: Context) -> Check:
    spec = ctx.gpu_spec
    gpus = ctx.host.driver.gpus
    needed = f"{spec.count} x {spec.name}" if spec else "at least one NVIDIA GPU"
    if not gpus:
        return _no_gpus("gpu.count", ctx.host.driver, needed)
    found = f"{len(gpus)} GPU{'s' if len(gpus) > 1 else ''}: " + ", ".join(sorted({g.name for g in gpus}))
    if spec and len(gpus) < spec.count:
        return Check(id="gpu.count", status="fail", found=found, needed=needed,
                     fix=f"run on a host with {spec.count} GPUs, or lower the target's tensor parallel size and "
                         "hardware.gpu.count")
    return Check(id="gpu.count", status="pass", found=found, needed=needed)


def gpu_model(ctx: Context) -> Check | None:
    spec = ctx.gpu_spec
    if spec is None or not ctx.host.driver.gpus:
        return None
    others = sorted({g.name for g in ctx.host.driver.gpus if g.name != spec.name})
    if others:
        return Check(id="gpu.model", status="warn", found=", ".join(others), needed=spec.name,
                     fix="a different model may work if arch and memory match (checked below); "
                         "the target was validated on " + spec.name)
    return Check(id="gpu.model", status="pass", found=spec.name, needed=spec.name)


def _describe(gpu: Gpu) -> str:
    inferred = ", inferred from the product name" if gpu.cc_source != "driver" else ""
    return f"GPU {gpu.index} ({gpu.name}) is {gpu.arch} (compute capability {gpu.compute_capability}{inferred})"


def gpu_arch(ctx: Context) -> Check:
    spec = ctx.gpu_spec
    gpus = ctx.host.driver.gpus
    needed = f"{spec.arch} ({spec.name})" if spec else "a CUDA GPU"
    if not gpus:
        return _no_gpus("gpu.arch", ctx.host.driver, needed)
    unknown = [g for g in gpus if g.arch is None]
    if unknown:
        return Check(id="gpu.arch", status="fail" if spec else "warn",
                     found=f"compute capability unknown for GPU {', '.join(str(g.index) for g in unknown)}",
                     needed=needed, fix="save `nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap "
                                        "--format=csv` (driver >= 510) instead")
    if spec is None:
        return Check(id="gpu.arch", status="pass", found="; ".join(_describe(g) for g in gpus), needed=needed)
    wanted = GpuArch.parse(spec.arch).plain
    wrong = [g for g in gpus if GpuArch.parse(g.arch).plain != wanted]
    if wrong:
        return Check(id="gpu.arch", status="fail",
                     found="; ".join(_describe(g) for g in wrong[:2]) + (f" (+{len(wrong) - 2} more)" if len(wrong) > 2 else ""),
                     needed=f"{ctx.target.name} needs {wanted.sass} ({spec.name})",
                     fix=_arch_fix(ctx, wrong[0], spec))
    return Check(id="gpu.arch", status="pass", found=f"every GPU is {wanted.sass}", needed=needed)


def _arch_fix(ctx: Context, gpu: Gpu, spec) -> str:
    fit = sorted(n for n, a in (ctx.other_targets or {}).items()
                 if GpuArch.parse(a).plain == GpuArch.parse(gpu.arch).plain)
    alternative = f"; for {gpu.arch} use target {', '.join(fit)}" if fit else \
        f"; or write a matrix for {gpu.arch} (hardware.gpu.arch: {gpu.arch})"
    return f"run {ctx.target.name} on {spec.arch} GPUs{alternative}"


def gpu_memory(ctx: Context) -> Check | None:
    spec = ctx.gpu_spec
    gpus = [g for g in ctx.host.driver.gpus if g.memory_gib is not None]
    if spec is None or not gpus:
        return None
    small = [g for g in gpus if g.memory_gib < spec.memory_gib * MEMORY_TOLERANCE]
    sizes = ", ".join(sorted({f"{g.memory_gib:.1f} GiB" for g in gpus}))
    needed = f">= {spec.memory_gib:g} GiB per GPU"
    if small:
        return Check(id="gpu.memory", status="fail",
                     found=f"GPU {', '.join(str(g.index) for g in small)}: {small[0].memory_gib:.1f} GiB",
                     needed=needed, fix="the model and KV cache are sized for the target's memory: use larger GPUs "
                                        "or lower serve.args' memory fraction and context length")
    return Check(id="gpu.memory", status="pass", found=sizes, needed=needed)


def gpu_uniform(ctx: Context) -> Check | None:
    gpus = ctx.host.driver.gpus
    if len(gpus) < 2:
        return None
    kinds = {(g.name, g.compute_capability, g.memory_mib) for g in gpus}
    if len(kinds) > 1:
        return Check(id="gpu.uniform", status="warn", found=f"{len(kinds)} different GPU kinds",
                     needed="every GPU the same (tensor parallel runs at the pace of the slowest)",
                     fix="set CUDA_VISIBLE_DEVICES to GPUs of one kind")
    return Check(id="gpu.uniform", status="pass", found=f"{len(gpus)} x {gpus[0].name}", needed="every GPU the same")


def gpu_lock_coverage(ctx: Context) -> Check | None:
    """Each CUDA binary in the lock carries SASS (or JIT-able PTX) for this host's GPU."""
    gpus = [g for g in ctx.host.driver.gpus if g.arch]
    if not ctx.subjects or not gpus:
        return None
    host = _host_facts(ctx, gpus[0])
    findings = [f for s in ctx.subjects for f in rules.arch_coverage(s, host, ctx.knowledge)
                if f.severity != "info"]
    with_archs = [s for s in ctx.subjects if s.facets and (s.facets.sass or s.facets.ptx)]
    return _findings_check(
        "gpu.lock-coverage", findings,
        passed=f"{len(with_archs)} CUDA binaries in {ctx.lock_label} carry code for {gpus[0].arch}",
        needed=f"SASS or PTX for {gpus[0].arch} in every CUDA binary",
        fix=f"lock for this GPU's arch ({gpus[0].arch}): pick or write a matching target")


# ------------------------------------------------------------------------------------ toolkit

def _needed_cuda(ctx: Context) -> tuple[str | None, str]:
    torch = next((s for s in ctx.subjects if s.package.name == rules.PROVIDER), None)
    if torch and torch.facets and torch.facets.cuda:
        return torch.facets.cuda, f"torch {torch.package.version} is built with CUDA {torch.facets.cuda}"
    toolkit = getattr(getattr(ctx.target, "toolchain", None), "cuda", None)
    return toolkit, f"the target's toolchain.cuda is {toolkit}" if toolkit else ""


def toolkit_build(ctx: Context) -> Check | None:
    facts = ctx.host.toolkit
    if facts is None:
        return None
    cuda, why = _needed_cuda(ctx)
    build = facts.build_toolkit
    installed = ", ".join(f"{t.path} ({t.version or '?'})" for t in facts.installed) or "none in /usr/local"
    needed = f"CUDA {cuda} for extension builds ({why})" if cuda else "a CUDA toolkit for extension builds"
    if build is None or build.version is None:
        what = "no CUDA toolkit found" if build is None else f"{build.path} has no readable version"
        return Check(id="toolkit.build", status="warn", found=f"{what}; installed: {installed}", needed=needed,
                     fix="builds then run only inside the image (its base carries the toolkit); for host builds "
                         f"install CUDA {cuda or ''} and export CUDA_HOME".replace("  ", " "))
    found = f"{build.path} is CUDA {build.version} ({facts.build_toolkit_reason}); installed: {installed}"
    if not cuda:
        return Check(id="toolkit.build", status="pass", found=found, needed=needed)
    mine, theirs = Version(build.version), Version(cuda)
    if mine.release[:2] == theirs.release[:2]:
        return Check(id="toolkit.build", status="pass", found=found, needed=needed)
    status = "fail" if mine.major != theirs.major else "warn"
    return Check(id="toolkit.build", status=status, found=found, needed=needed, fix=_toolkit_fix(ctx, cuda, status))


def _toolkit_fix(ctx: Context, cuda: str, status: str) -> str:
    match = next((t for t in ctx.host.toolkit.installed
                  if t.version and Version(t.version).release[:2] == Version(cuda).release[:2]), None)
    effect = ("torch.utils.cpp_extension refuses a different CUDA major" if status == "fail"
              else "a minor mismatch only warns, but builds are not what the lock describes")
    if match:
        return f"export CUDA_HOME={match.path} PATH={match.path}/bin:$PATH ({effect})"
    major, minor = Version(cuda).release[:2]
    return (f"install CUDA {cuda} (apt install cuda-toolkit-{major}-{minor}) and export "
            f"CUDA_HOME=/usr/local/cuda-{cuda} ({effect})")


def host_torch(ctx: Context) -> Check | None:
    facts = ctx.host.toolkit
    torch = next((s for s in ctx.subjects if s.package.name == rules.PROVIDER), None)
    if facts is None or facts.torch_version is None or torch is None:
        return None
    found = f"torch {facts.torch_version} (CUDA {facts.torch_cuda or 'none'}) in this Python"
    needed = f"torch {torch.package.version} as locked" + (f" (CUDA {torch.facets.cuda})" if torch.facets and torch.facets.cuda else "")
    if Version(facts.torch_version).public != Version(torch.package.version).public:
        return Check(id="host.torch", status="warn", found=found, needed=needed,
                     fix="the image installs the locked torch; this Python's torch only matters for host builds")
    return Check(id="host.torch", status="pass", found=found, needed=needed)


# ------------------------------------------------------------------------------------ python

def python_version(ctx: Context) -> Check | None:
    """The target's Python on the host: the image brings its own; host installs of an export need it."""
    facts = ctx.host.python
    wanted = getattr(getattr(ctx.target, "platform", None), "python", None)
    if facts is None or wanted is None:
        return None
    needed = f"Python {wanted} (platform.python) to install an export on this host; the image brings its own"
    running = ".".join(facts.running.split(".")[:2])
    paths = dict(facts.on_path)
    found = f"envbuilder runs on Python {facts.running}" + (
        f"; on PATH: {', '.join(f'python{v}' for v, _ in facts.on_path)}" if facts.on_path else "")
    if running == wanted or wanted in paths:
        return Check(id="python.version", status="pass", found=found, needed=needed)
    return Check(id="python.version", status="warn", found=found, needed=needed,
                 fix=f"only host installs need it: install Python {wanted} (uv python install {wanted}, or "
                     f"apt install python{wanted}); images, serve and smoke work without it")


# ------------------------------------------------------------------------------------ capacity

@dataclass(frozen=True)
class RecipeCost:
    """What one source build of the target costs the builder per parallel compile job."""

    package: str
    how: str  # "nvcc, NVCC_THREADS=4" or "C/C++, cmake target llama-server"
    gib_per_job: float
    nvcc: bool

    def __str__(self) -> str:
        return f"{self.package} ({self.how}): {self.gib_per_job:g} GiB per job"


def recipe_costs(ctx: Context) -> list[RecipeCost]:
    """The target's own source builds; CUDA extensions when the target has a toolkit, else C/C++."""
    packages = getattr(getattr(ctx.target, "matrix", None), "packages", None) or {}
    cuda = bool(getattr(getattr(ctx.target, "toolchain", None), "cuda", None))
    costs = []
    for name, spec in sorted(packages.items()):
        if not spec.from_sdist:
            continue
        if cuda and not spec.build.target:
            value = spec.build.env.get("NVCC_THREADS", "")
            threads = int(value) if value.isdigit() else REFERENCE_THREADS
            costs.append(RecipeCost(name, f"nvcc, NVCC_THREADS={threads}", gib_per_job(threads), nvcc=True))
        else:
            how = f"C/C++, cmake target {spec.build.target}" if spec.build.target else "C/C++"
            costs.append(RecipeCost(name, how, GIB_PER_CXX_JOB, nvcc=False))
    return costs


def _jobs(cost: RecipeCost, memory_gib: float, cores: int) -> int:
    mem = int(memory_gib * GIB)
    return max_jobs(mem, cores, int(cost.how.rsplit("=", 1)[1])) if cost.nvcc else max_cxx_jobs(mem, cores)


def build_capacity(ctx: Context) -> Check | None:
    cap = ctx.host.capacity
    if cap is None or cap.memory_gib is None:
        return None
    facts = f"{cap.cores} cores, {cap.memory_gib:g} GiB memory, {cap.swap_gib or 0:g} GiB swap"
    costs = recipe_costs(ctx)
    if not costs:
        if ctx.target is not None:
            return Check(id="build.capacity", status="pass", found=facts,
                         needed=f"nothing: {ctx.target.name} has no source builds")
        jobs = max_jobs(int(cap.memory_gib * GIB), cap.cores)
        return Check(id="build.capacity", status="pass", found=f"{facts}: MAX_JOBS={jobs} for nvcc builds",
                     needed=f"{gib_per_job(REFERENCE_THREADS):g} GiB per nvcc job at NVCC_THREADS={REFERENCE_THREADS}, "
                            f"{GIB_PER_CXX_JOB:g} GiB per C/C++ job")
    jobs = {c.package: _jobs(c, cap.memory_gib, cap.cores) for c in costs}
    found = f"{facts}: " + ", ".join(f"MAX_JOBS={jobs[c.package]} for {c.package}" for c in costs)
    needed = "; ".join(str(c) for c in costs)
    too_big = [c for c in costs if cap.memory_gib < c.gib_per_job]
    if too_big:
        return Check(id="build.capacity", status="fail", found=found, needed=needed,
                     fix=f"{', '.join(c.package for c in too_big)} cannot build here: build on a larger builder "
                         "(docker buildx, a remote BuildKit)"
                         + (" or lower NVCC_THREADS" if any(c.nvcc for c in too_big) else ""))
    if cap.max_jobs_env and cap.max_jobs_env.isdigit():
        over = [c for c in costs if int(cap.max_jobs_env) > jobs[c.package]]
        if over:
            return Check(id="build.capacity", status="warn", found=f"{found}; but MAX_JOBS={cap.max_jobs_env} is set",
                         needed=needed, fix=f"unset MAX_JOBS or set it to {min(jobs[c.package] for c in over)}: "
                                            f"{', '.join(c.package for c in over)} would start more jobs than memory "
                                            "allows and get OOM-killed")
    slow = [c for c in costs if c.nvcc and jobs[c.package] == 1]
    if slow:
        return Check(id="build.capacity", status="warn", found=found, needed=needed,
                     fix=f"{', '.join(c.package for c in slow)} will build one nvcc job at a time (hours); "
                         "use a builder with more memory and cores")
    return Check(id="build.capacity", status="pass", found=found, needed=needed)


# ------------------------------------------------------------------------------------ containers

def container_checks(ctx: Context) -> list[Check]:
    """Docker and BuildKit for every target; the NVIDIA runtime only where the target runs on GPUs."""
    facts = ctx.host.container
    if facts is None:
        return []
    checks = []
    if facts.engine:
        checks.append(Check(id="container.docker", status="pass", found=f"docker engine {facts.engine}",
                            needed="a docker engine (build, serve and smoke run the image)"))
    else:
        checks.append(Check(id="container.docker", status="fail", found=f"no docker engine ({facts.engine_error})",
                            needed="a docker engine (build, serve and smoke run the image)",
                            fix="install docker and start it (systemctl start docker), or set DOCKER_HOST"))
    if facts.buildkit:
        checks.append(Check(id="container.buildkit", status="pass", found=facts.buildkit, needed="a BuildKit build"))
    else:
        checks.append(Check(id="container.buildkit", status="warn", found=facts.buildkit_error or "none",
                            needed="a BuildKit build", fix="install the buildx plugin (or build on a remote builder)"))
    if ctx.gpu_target:
        checks.append(_nvidia_runtime(facts, bool(ctx.host.driver.gpus)))
    return checks


def _nvidia_runtime(facts, has_gpus: bool) -> Check:
    needed = "GPU containers: the nvidia runtime or a CDI spec for nvidia.com/gpu"
    found_parts = []
    if "nvidia" in facts.runtimes:
        found_parts.append("runtime nvidia" + (" (default)" if facts.default_runtime == "nvidia" else ""))
    found_parts += [f"CDI {spec}" for spec in facts.cdi_specs]
    if found_parts:
        return Check(id="container.nvidia-runtime", status="pass", found=", ".join(found_parts), needed=needed)
    fix = ("install nvidia-container-toolkit, then `sudo nvidia-ctk runtime configure --runtime=docker` and restart "
           "docker (or `sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`)")
    if not facts.engine:
        return Check(id="container.nvidia-runtime", status="warn", found="no CDI spec; engine runtimes unknown (no engine)",
                     needed=needed, fix=fix)
    return Check(id="container.nvidia-runtime", status="fail" if has_gpus else "warn",
                 found=f"runtimes: {', '.join(facts.runtimes) or 'none'}; no CDI spec", needed=needed, fix=fix)


# ------------------------------------------------------------------------------------ all

def all_checks(ctx: Context, live: bool) -> list[Check]:
    """Live hosts get every check; a saved nvidia-smi output only the driver and GPU ones.

    A CPU target (no `hardware.gpu`, no `toolchain.cuda`) is judged on what it needs: Python,
    docker and the capacity for its own source builds; no driver, GPU or toolkit checks.
    """
    checks: list[Check | None] = []
    if ctx.gpu_target:
        checks.append(driver_version(ctx))
        if live:
            checks.append(driver_module(ctx))
        checks += [driver_persistence(ctx), driver_lock_cuda(ctx), gpu_count(ctx), gpu_model(ctx), gpu_arch(ctx),
                   gpu_memory(ctx), gpu_uniform(ctx), gpu_lock_coverage(ctx)]
    if live:
        if ctx.gpu_target:
            checks += [toolkit_build(ctx), host_torch(ctx)]
        checks += [python_version(ctx), build_capacity(ctx), *container_checks(ctx)]
    return [c for c in checks if c is not None]
