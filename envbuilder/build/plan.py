"""The build plan: every decision about an image, made from the lock and the matrix alone.

The Dockerfile template only lays out what this module decided, so tests can check decisions
(which toolkit, which archs, which stage rebuilds when) on plain values, and nothing here may read
the host: the same lock gives the same plan on a laptop, in CI and on the GPU box.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from packaging.utils import canonicalize_name

from envbuilder.build import buildenv
from envbuilder.build.layers import Layer, plan_layers
from envbuilder.errors import BadInput
from envbuilder.knowledge import BinaryRecipe, Knowledge
from envbuilder.lock.closure import dependency_name, import_closure
from envbuilder.lock.model import Artifact, BuildPackage, Lock, LockedPackage
from envbuilder.matrix import Target

VENV = "/opt/venv"
TOOL_VENV = "/opt/envbuilder/tool"
PIP_VENV = "/opt/envbuilder/pip"
IMAGE_HOME = "/opt/envbuilder"
MANIFEST_PATH = f"{IMAGE_HOME}/image.json"
PROJECT_DIR = f"{IMAGE_HOME}/project"
LABEL_PREFIX = "io.envbuilder"

@dataclass(frozen=True)
class SourceBuild:
    """One stage that turns a locked sdist (or git commit) into a wheel or a binary.

    Its inputs are only what the product's ABI depends on: the sdist, the locked ABI providers
    (its lock entry's `build.requires`), the toolkit and archs, its env. Bumping any other package
    leaves this stage cached.
    """

    package: LockedPackage
    stage: str
    product: str  # wheel | binary
    env: tuple[tuple[str, str], ...]
    apt: tuple[str, ...] = ()
    inputs: tuple[LockedPackage, ...] = ()  # ABI inputs installed (hashed) into the build venv
    tools: tuple[BuildPackage, ...] = ()  # its locked PEP 517 build requirements, installed by hash
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
        """Only a lock made before build tools were locked: pip fetches the backend itself (unpinned).
        Every other wheel build installs inputs and tools by hash and builds with --no-build-isolation."""
        return not self.inputs and not self.tools

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


def _binary_recipe(target: Target, knowledge: Knowledge, pkg: LockedPackage, name: str) -> BinaryRecipe:
    """The recipe `build.target` names: the matrix's `knowledge.binary_recipes`, then the shipped ones."""
    recipe = knowledge.binary_recipe(name)
    if recipe is None:
        where = target.origins.get(("packages", pkg.name, "build", "target"), target.source_path)
        known = ", ".join(sorted({r.name for r in knowledge.binary_recipes})) or "none"
        raise BadInput(f"{where}: key 'packages.{pkg.name}.build.target': no recipe for {name!r} (known: {known}); "
                       "add one under the matrix's `knowledge: binary_recipes:` (docs/build.md)")
    return recipe


def _source_build(lock: Lock, target: Target, knowledge: Knowledge, pkg: LockedPackage, cuda: str | None,
                  arch: str | None) -> tuple[SourceBuild, list[str]]:
    spec = target.matrix.spec(pkg.name)
    build = spec.build if spec is not None else None
    fact = knowledge.binary(pkg.name, pkg.version)
    env = buildenv.build_env(lock, pkg, fact, cuda, arch)
    notes = buildenv.arch_note(pkg, fact, env, arch)
    stage = f"build-{canonicalize_name(pkg.name)}"
    if build is not None and build.target:
        recipe = _binary_recipe(target, knowledge, pkg, build.target)
        return SourceBuild(pkg, stage, "binary", tuple(sorted(env.items())), tuple(build.apt),
                           binary=recipe), notes
    # the ABI providers and everything they import (torch loads its nvidia-* libraries in setup.py)
    inputs = import_closure(lock, [dependency_name(r) for r in (pkg.build.requires if pkg.build else ())])
    return SourceBuild(pkg, stage, "wheel", tuple(sorted(env.items())), tuple(build.apt) if build else (),
                       inputs=inputs, tools=_tools(lock, pkg),
                       cuda=bool(cuda and pkg.build and pkg.build.cuda)), notes


def _tools(lock: Lock, pkg: LockedPackage) -> tuple[BuildPackage, ...]:
    """The build requirements the lock resolved for this build (envbuilder.resolve.buildlock)."""
    found = []
    for pin in pkg.build.tools if pkg.build else ():
        tool = lock.build_package(pin)
        if tool is None:  # the lock's consistency check refuses this on read; a hand-built Lock may not
            raise BadInput(f"lock {lock.target}: package {pkg.name!r}: build tool {pin!r} has no build-package "
                           "entry; re-run `envbuilder lock`")
        found.append(tool)
    return tuple(found)


def _serve_command(target: Target) -> str | None:
    if not target.matrix.serve:
        return None
    from envbuilder.serve.command import build_command
    from envbuilder.serve.profile import ServeProfile

    return build_command(ServeProfile.model_validate(target.matrix.serve), environ={}).shell(hide_env=True)


def _python(lock: Lock, target: Target) -> str:
    value = str(lock.environment.get("python") or target.platform.python)
    return ".".join(value.split(".")[:2])


def make_plan(lock: Lock, target: Target, matrix_files: tuple[str, ...] = (),
              knowledge: Knowledge | None = None) -> BuildPlan:
    """`knowledge`: the facts recipes come from (default: the shipped ones with the matrix's overlay)."""
    if lock.target != target.name:
        raise BadInput(f"lock is for target {lock.target!r}, matrix is {target.name!r}")
    knowledge = knowledge or target.knowledge_base()
    tc = lock.toolchain
    cuda = tc.get("cuda") or target.toolchain.cuda
    arch = tc.get("gpu-arch") or (target.hardware.gpu.arch if target.hardware.gpu else None)
    if cuda:
        buildenv.check_cuda_major(lock, cuda, buildenv.cuda_providers(lock, knowledge))
    notes: list[str] = list(target.warnings)
    if lock.matrix_digest != target.digest:
        notes.append(f"the lock was made from another version of {target.source_path.name}: "
                     "run `envbuilder lock` to bring it up to date")
    builds = []
    for pkg in sorted(lock.packages, key=lambda p: canonicalize_name(p.name)):
        if pkg.build is None:
            continue
        build, more = _source_build(lock, target, knowledge, pkg, cuda, arch)
        builds.append(build)
        notes += more
        if build.product == "wheel" and not build.tools:
            how = "pip installs its build backend unpinned" if build.isolated else "the build has only its ABI inputs"
            notes.append(f"{pkg.name}: the lock has no build tools for it (locked by an older envbuilder): {how}; "
                         "run `envbuilder lock --refresh` to lock them")
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
