"""The build plan: every decision about an image, made from the lock and the matrix alone.

The Dockerfile template only lays out what this module decided, so tests can check decisions
(which toolkit, which archs, which stage rebuilds when) on plain values, and nothing here may read
the host: the same lock gives the same plan on a laptop, in CI and on the GPU box.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbuilder.build.layers import Layer, plan_layers
from envbuilder.errors import BadInput
from envbuilder.lock.model import Artifact, Lock, LockedPackage
from envbuilder.matrix import Target

VENV = "/opt/venv"
TOOL_VENV = "/opt/envbuilder/tool"
PIP_VENV = "/opt/envbuilder/pip"
IMAGE_HOME = "/opt/envbuilder"
MANIFEST_PATH = f"{IMAGE_HOME}/image.json"
PROJECT_DIR = f"{IMAGE_HOME}/project"
LABEL_PREFIX = "io.envbuilder"

#: PEP 517 tools a no-isolation build needs beside its ABI inputs; hashed when the lock has them.
BUILD_TOOLS = ("setuptools", "wheel", "packaging", "ninja", "psutil")


@dataclass(frozen=True)
class BinaryRecipe:
    """How to build one binary out of a package's sdist (the matrix says `build.target: NAME`).

    llama-cpp-python's own CMakeLists is a scikit-build wrapper for the Python bindings; the server
    is a target of the llama.cpp it vendors, so the build runs cmake on that directory.
    """

    source_dir: str
    cmake_target: str
    output: str
    cmake_defaults: tuple[str, ...]
    runtime_apt: tuple[str, ...] = ()  # shared libraries the binary loads (verify runs it to prove it)


BINARY_RECIPES = {
    "llama-server": BinaryRecipe(
        source_dir="vendor/llama.cpp", cmake_target="llama-server", output="bin/llama-server",
        # GGML_NATIVE=OFF: -march=native would tie the binary to the builder's CPU.
        cmake_defaults=("-DCMAKE_BUILD_TYPE=Release", "-DGGML_NATIVE=OFF", "-DLLAMA_CURL=OFF",
                        "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF"),
        runtime_apt=("libgomp1",),  # ggml's CPU backend uses OpenMP, linked dynamically
    ),
}

#: Per-package CUDA build knobs: forced values and the variable naming archs.
FORCED_ENV = {"flash-attn": {"FLASH_ATTENTION_FORCE_BUILD": "TRUE"}}  # else setup.py downloads a wheel
ARCH_ENV = {"flash-attn": "FLASH_ATTN_CUDA_ARCHS"}


@dataclass(frozen=True)
class SourceBuild:
    """One stage that turns a locked sdist (or git commit) into a wheel or a binary.

    Its inputs are only what the product's ABI depends on: the sdist, the locked ABI providers
    (torch), the toolkit and archs, its env. Bumping any other package leaves this stage cached.
    """

    package: LockedPackage
    stage: str
    product: str  # wheel | binary
    env: tuple[tuple[str, str], ...]
    apt: tuple[str, ...] = ()
    inputs: tuple[LockedPackage, ...] = ()  # ABI inputs installed (hashed) into the build venv
    tools_hashed: tuple[LockedPackage, ...] = ()
    tools_unhashed: tuple[str, ...] = ()
    binary: BinaryRecipe | None = None
    cuda: bool = False

    @property
    def name(self) -> str:
        return canonicalize_name(self.package.name)

    @property
    def is_git(self) -> bool:
        return self.package.source.git is not None

    @property
    def isolated(self) -> bool:
        """No ABI inputs: let the installer build in isolation with the sdist's own backend."""
        return not self.inputs

    @property
    def sdist(self) -> Artifact | None:
        return next((a for a in self.package.artifacts if a.kind == "sdist"), None)


@dataclass(frozen=True)
class BuildPlan:
    target: str
    description: str
    lock: Lock
    lock_digest: str
    base_image: str
    base_pinned: bool
    python: str
    apt: tuple[str, ...]
    cuda: str | None
    gpu_arch: str | None
    builds: tuple[SourceBuild, ...]
    serve_command: str | None
    matrix_files: tuple[str, ...]
    notes: tuple[str, ...]
    layers: tuple[Layer, ...] = ()

    @property
    def python_bin(self) -> str:
        return f"python{self.python}"

    @property
    def cuda_home(self) -> str | None:
        """The toolkit whose version is torch's CUDA, by its versioned path: never /usr/local/cuda,
        which points at whatever toolkit a host or base image installed last."""
        return f"/usr/local/cuda-{self.cuda}" if self.cuda else None

    @property
    def source_date_epoch(self) -> int:
        return self.lock.source_date_epoch

    @property
    def wheel_builds(self) -> tuple[SourceBuild, ...]:
        return tuple(b for b in self.builds if b.product == "wheel")

    @property
    def binary_builds(self) -> tuple[SourceBuild, ...]:
        return tuple(b for b in self.builds if b.product == "binary")

    def layer_builds(self, layer: Layer) -> tuple[SourceBuild, ...]:
        """The source-build stages whose wheels this layer installs (mounted, never copied)."""
        names = {canonicalize_name(p.name) for p in layer.packages}
        return tuple(b for b in self.wheel_builds if b.name in names)

    @staticmethod
    def layer_index_packages(layer: Layer) -> tuple[LockedPackage, ...]:
        """The layer's packages installed from the index by hash (everything but source builds)."""
        return tuple(p for p in layer.packages if p.build is None)

    @property
    def runtime_apt(self) -> tuple[str, ...]:
        return tuple(sorted({p for b in self.binary_builds for p in b.binary.runtime_apt}))

    @property
    def lock_file(self) -> str:
        return f"{PROJECT_DIR}/locks/{self.target}.lock.toml"

    def labels(self) -> tuple[tuple[str, str], ...]:
        created = datetime.fromtimestamp(self.source_date_epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        out = [
            ("org.opencontainers.image.title", f"envbuilder {self.target}"),
            ("org.opencontainers.image.description", self.description or self.target),
            ("org.opencontainers.image.created", created),
            ("org.opencontainers.image.version", self.lock_digest.removeprefix("sha256:")[:12]),
            ("org.opencontainers.image.base.name", self.base_image),
            (f"{LABEL_PREFIX}.target", self.target),
            (f"{LABEL_PREFIX}.lock-digest", self.lock_digest),
            (f"{LABEL_PREFIX}.matrix-digest", self.lock.matrix_digest),
        ]
        if self.serve_command:
            out.append((f"{LABEL_PREFIX}.serve", self.serve_command))
        return tuple(out)

    def manifest(self) -> dict:
        """What `envbuilder verify` reads inside the image (image.json)."""
        products = [{"package": b.package.name, "version": b.package.version, "kind": b.product,
                     **({"path": f"/usr/local/bin/{b.binary.cmake_target}"} if b.binary else {})}
                    for b in self.builds]
        return {"schema": 1, "target": self.target, "lock": self.lock_file, "lock-digest": self.lock_digest,
                "venv": VENV, "products": products}


def _arch_number(arch: str) -> str:
    """sm_120 -> '120', sm_90a -> '90': flash-attn's list names SASS families by number."""
    return arch.removeprefix("sm_").rstrip("af")


def _torch_arch(arch: str) -> str:
    """sm_120 -> '12.0', sm_90a -> '9.0a': torch's TORCH_CUDA_ARCH_LIST spelling."""
    digits = arch.removeprefix("sm_")
    suffix = digits[-1] if digits[-1] in "af" else ""
    digits = digits.rstrip("af")
    return f"{digits[:-1]}.{digits[-1]}{suffix}"


def _check_cuda_major(lock: Lock, cuda: str) -> None:
    torch = lock.package("torch")
    torch_cuda = torch.facets.cuda if torch and torch.facets else None
    if torch_cuda and torch_cuda.split(".")[0] != cuda.split(".")[0]:
        raise BadInput(
            f"lock {lock.target}: key 'toolchain.cuda' is {cuda} but torch {torch.version} was built for CUDA "
            f"{torch_cuda}: extension builds need the same CUDA major (torch raises on a mismatch); "
            f"set toolchain.cuda to {torch_cuda} in the matrix and re-lock")


def _cuda_env(pkg: LockedPackage, cuda_home: str, arch: str | None, cxx11: bool | None) -> dict[str, str]:
    env = {"CUDA_HOME": cuda_home, "NVCC_THREADS": "4"}
    name = canonicalize_name(pkg.name)
    if arch:
        env["TORCH_CUDA_ARCH_LIST"] = _torch_arch(arch)
        if name in ARCH_ENV:
            env[ARCH_ENV[name]] = _arch_number(arch)
    if name == "flash-attn" and cxx11:
        env["FLASH_ATTENTION_FORCE_CXX11_ABI"] = "TRUE"
    return env


def _build_env(lock: Lock, pkg: LockedPackage, plan_cuda: str | None, arch: str | None) -> dict[str, str]:
    """Derived knobs first, the lock's recipe env over them, forced knobs last (they are the gotchas)."""
    env: dict[str, str] = {}
    recipe = pkg.build
    if plan_cuda and recipe is not None and recipe.cuda:
        torch = lock.package("torch")
        cxx11 = torch.facets.cxx11_abi if torch and torch.facets else None
        env.update(_cuda_env(pkg, f"/usr/local/cuda-{plan_cuda}", arch, cxx11))
    env.update(recipe.env if recipe else {})
    env.update(FORCED_ENV.get(canonicalize_name(pkg.name), {}))
    return env


def _arch_note(pkg: LockedPackage, env: dict[str, str], arch: str | None) -> list[str]:
    var = ARCH_ENV.get(canonicalize_name(pkg.name))
    if not (var and arch and var in env):
        return []
    wanted = _arch_number(arch)
    if wanted not in env[var].replace(",", ";").split(";"):
        return [f"{pkg.name}: {var}={env[var]} does not include the target arch {arch} ({wanted})"]
    return []


def _source_build(lock: Lock, target: Target, pkg: LockedPackage, cuda: str | None,
                  arch: str | None) -> tuple[SourceBuild, list[str]]:
    spec = target.matrix.spec(pkg.name)
    build = spec.build if spec is not None else None
    env = _build_env(lock, pkg, cuda, arch)
    notes = _arch_note(pkg, env, arch)
    stage = f"build-{canonicalize_name(pkg.name)}"
    if build is not None and build.target:
        recipe = BINARY_RECIPES.get(build.target)
        if recipe is None:
            where = target.origins.get(("packages", pkg.name, "build", "target"), target.source_path)
            raise BadInput(f"{where}: key 'packages.{pkg.name}.build.target': no recipe for {build.target!r} "
                           f"(known: {', '.join(sorted(BINARY_RECIPES))})")
        return SourceBuild(pkg, stage, "binary", tuple(sorted(env.items())), tuple(build.apt),
                           binary=recipe), notes
    inputs = _closure(lock, [_dependency_name(r) for r in (pkg.build.requires if pkg.build else ())])
    hashed, unhashed = _tools(lock, inputs)
    return SourceBuild(pkg, stage, "wheel", tuple(sorted(env.items())), tuple(build.apt) if build else (),
                       inputs=inputs, tools_hashed=hashed, tools_unhashed=unhashed,
                       cuda=bool(cuda and pkg.build and pkg.build.cuda)), notes


def _dependency_name(text: str) -> str:
    try:
        return Requirement(text).name
    except InvalidRequirement:
        return text.split(";")[0].split()[0]


def _closure(lock: Lock, roots: list[str]) -> tuple[LockedPackage, ...]:
    """The ABI providers and everything they need to import (torch needs its nvidia-* libraries
    to load in setup.py), all from the lock, hashed."""
    found: dict[str, LockedPackage] = {}
    todo = list(roots)
    while todo:
        pkg = lock.package(todo.pop())
        if pkg is None or canonicalize_name(pkg.name) in found or pkg.build is not None:
            continue
        found[canonicalize_name(pkg.name)] = pkg
        todo += [_dependency_name(d) for d in pkg.dependencies]
    return tuple(found[name] for name in sorted(found))


def _tools(lock: Lock, inputs: tuple[LockedPackage, ...]) -> tuple[tuple[LockedPackage, ...], tuple[str, ...]]:
    """Build tools for a no-isolation build: the locked copy when the lock has one."""
    if not inputs:
        return (), ()
    have = {canonicalize_name(p.name) for p in inputs}
    hashed = tuple(p for name in BUILD_TOOLS if (p := lock.package(name)) is not None and p.build is None
                   and canonicalize_name(name) not in have)
    have |= {canonicalize_name(p.name) for p in hashed}
    return hashed, tuple(n for n in BUILD_TOOLS if canonicalize_name(n) not in have)


def _serve_command(target: Target) -> str | None:
    if not target.matrix.serve:
        return None
    from envbuilder.serve.command import build_command
    from envbuilder.serve.profile import ServeProfile

    return build_command(ServeProfile.model_validate(target.matrix.serve), environ={}).shell(hide_env=True)


def _python(lock: Lock, target: Target) -> str:
    value = str(lock.environment.get("python") or target.platform.python)
    return ".".join(value.split(".")[:2])


def make_plan(lock: Lock, target: Target, matrix_files: tuple[str, ...] = ()) -> BuildPlan:
    if lock.target != target.name:
        raise BadInput(f"lock is for target {lock.target!r}, matrix is {target.name!r}")
    tc = lock.toolchain
    cuda = tc.get("cuda") or target.toolchain.cuda
    arch = tc.get("gpu-arch") or (target.hardware.gpu.arch if target.hardware.gpu else None)
    if cuda:
        _check_cuda_major(lock, cuda)
    notes: list[str] = list(target.warnings)
    if lock.matrix_digest != target.digest:
        notes.append(f"the lock was made from another version of {target.source_path.name}: "
                     "run `envbuilder lock` to bring it up to date")
    builds = []
    for pkg in sorted(lock.packages, key=lambda p: canonicalize_name(p.name)):
        if pkg.build is None:
            continue
        build, more = _source_build(lock, target, pkg, cuda, arch)
        builds.append(build)
        notes += more
        if build.tools_unhashed:
            notes.append(f"{pkg.name}: build tools not in the lock, installed unhashed: "
                         f"{', '.join(build.tools_unhashed)}")
    if target.toolchain.runtime_image:
        notes.append("toolchain.runtime_image is not used: the final stage keeps the base toolkit "
                     "(FlashInfer JIT-compiles with nvcc at run time)")
    layers = _layers(lock, target, builds)
    return BuildPlan(
        target=target.name, description=target.matrix.description, lock=lock, lock_digest=lock.digest,
        base_image=str(tc.get("base-image") or target.toolchain.base_image),
        base_pinned=bool(tc.get("base-image-pinned", target.toolchain.base_image_pinned)),
        python=_python(lock, target), apt=tuple(target.toolchain.apt), cuda=cuda, gpu_arch=arch,
        builds=tuple(builds), serve_command=_serve_command(target), matrix_files=matrix_files,
        notes=tuple(notes), layers=layers,
    )


def _layers(lock: Lock, target: Target, builds: list[SourceBuild]) -> tuple[Layer, ...]:
    """The venv's packages (index wheels and source-built wheels; binaries live in /usr/local/bin)."""
    settings = target.matrix.layers
    known = {canonicalize_name(p.name) for p in lock.packages}
    for name in settings.assign:
        if canonicalize_name(name) not in known:
            where = target.origins.get(("layers", "assign", name), target.source_path)
            raise BadInput(f"{where}: key 'layers.assign.{name}': {name!r} is not in the lock")
    venv = [p for p in lock.packages if p.build is None]
    venv += [b.package for b in builds if b.product == "wheel"]
    return plan_layers(lock, venv, settings.assign, settings.max)
