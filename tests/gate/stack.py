"""The shipped blackwell-sm120 stack as a Lock, and small edits of it for the gate's cases.

Uses the committed `locks/blackwell-sm120.lock.toml` when it exists; until then a lock built
from the matrix's pins with the wheel names the index publishes.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import Version

from envbuilder.abi.hook import AbiHook
from envbuilder.knowledge import load_knowledge
from envbuilder.lock.io import dumps, read_lock
from envbuilder.lock.model import Artifact, BuildRecipe, Lock, LockedPackage, Source
from envbuilder.matrix import load_target
from tests.support.dists import BuiltDist, make_sdist, make_wheel
from tests.support.index_server import IndexServer

ROOT = Path(__file__).resolve().parents[2]
TARGET = "blackwell-sm120"
SHIPPED = ROOT / "locks" / f"{TARGET}.lock.toml"
LOCK = f"locks/{TARGET}.lock.toml"  # the head lock's place in a project
TORCH_210 = "torch-2.10.0-3-cp312-cp312-manylinux_2_28_x86_64.whl"

WHEELS = {
    "torch": ("2.9.1", "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl"),
    "triton": ("3.5.1", "triton-3.5.1-cp312-cp312-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"),
    "sgl-kernel": ("0.3.21", "sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl"),
    "sglang": ("0.5.9", "sglang-0.5.9-py3-none-any.whl"),
    "flashinfer-python": ("0.6.3", "flashinfer_python-0.6.3-py3-none-any.whl"),
    "flashinfer-cubin": ("0.6.3", "flashinfer_cubin-0.6.3-py3-none-any.whl"),
    "transformers": ("5.3.0", "transformers-5.3.0-py3-none-any.whl"),
    "tqdm": ("4.67.1", "tqdm-4.67.1-py3-none-any.whl"),
    "einops": ("0.8.1", "einops-0.8.1-py3-none-any.whl"),
    "nvidia-cuda-runtime-cu12": ("12.8.90", "nvidia_cuda_runtime_cu12-12.8.90-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"),
}


def gate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`envbuilder gate ...` in a real process, as CI runs it."""
    return subprocess.run([sys.executable, "-m", "envbuilder", "gate", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def fake_sha(filename: str) -> str:
    return hashlib.sha256(filename.encode()).hexdigest()


def wheel(name: str, version: str, filename: str, **extra) -> LockedPackage:
    return LockedPackage(name=name, version=version, source=Source(index="pypi"),
                         artifacts=(Artifact(filename, fake_sha(filename), 1000),), **extra)


def _synthesized() -> Lock:
    target = load_target(TARGET, root=ROOT)
    spec = target.packages["flash-attn"]
    packages = [wheel(n, v, f) for n, (v, f) in WHEELS.items()]
    packages.append(LockedPackage(
        name="flash-attn", version="2.8.3", source=Source(index="pypi"),
        artifacts=(Artifact("flash_attn-2.8.3.tar.gz", fake_sha("flash_attn-2.8.3.tar.gz"), 8_000_000, "sdist"),),
        dependencies=("einops", "torch"),
        build=BuildRecipe(env=dict(spec.build.env), cuda=target.toolchain.cuda, requires=("torch==2.9.1",),
                          inputs_digest="sha256:" + fake_sha("flash-attn-recipe"))))
    lock = Lock(target=TARGET, matrix_digest=target.digest, knowledge_digest=load_knowledge().digest,
                environment={"python_version": "3.12", "sys_platform": "linux", "platform_machine": "x86_64"},
                toolchain={"cuda": "12.8", "driver-min": target.hardware.driver.min,
                           "base-image": target.toolchain.base_image},
                indexes=("pypi",), packages=tuple(packages))
    return with_recorded_facets(lock)


def recorded_facets(package: LockedPackage, torch: str | None):
    """What the resolver records for a package: the hook's facets."""
    hook = AbiHook(load_target(TARGET, root=ROOT), load_knowledge())
    return hook.package_facets(package, {"torch": torch} if torch else {})


def with_recorded_facets(lock: Lock) -> Lock:
    torch = lock.package("torch")
    version = torch.version if torch else None
    return lock.replace_packages(tuple(replace(p, facets=recorded_facets(p, version)) for p in lock.packages))


def stack_lock() -> Lock:
    return read_lock(SHIPPED) if SHIPPED.exists() else _synthesized()


def with_package(lock: Lock, name: str, version: str, filename: str | None = None, **changes) -> Lock:
    """`lock` with one package replaced (or added): a new version and, by default, its wheel."""
    key = canonicalize_name(name)
    old = lock.package(name)
    if filename is not None:
        new = wheel(name, version, filename, dependencies=old.dependencies if old else ())
    else:
        new = replace(old, version=version)
    new = replace(new, **changes)
    rest = tuple(p for p in lock.packages if canonicalize_name(p.name) != key)
    return lock.replace_packages(rest + (new,))


def real_dist(name: str, filename: str) -> BuiltDist:
    """A real wheel or sdist with exactly this file name (tags and build number taken from it)."""
    if filename.endswith(".whl"):
        parts = filename.removesuffix(".whl").split("-")
        build = parts[2] if len(parts) == 6 else None
        dist = make_wheel(name, parts[1], tags="-".join(parts[-3:]), build=build)
    else:
        version = filename.removesuffix(".tar.gz").removesuffix(".zip").rsplit("-", 1)[1]
        dist = make_sdist(name, version, fmt="zip" if filename.endswith(".zip") else "tar.gz")
    assert dist.filename == filename, (dist.filename, filename)
    return dist


def publish(server: IndexServer, lock: Lock, base: Lock | None = None) -> Lock:
    """`lock` with every file the base does not lock made real: built, served by `server`, and
    recorded with its real sha256 and size (what a re-lock against that index writes)."""
    before = (*base.packages, *base.build_packages) if base else ()
    known = {(a.filename, a.sha256, a.size) for p in before for a in p.artifacts}

    def made_real(package):
        artifacts = []
        for artifact in package.artifacts:
            if (artifact.filename, artifact.sha256, artifact.size) not in known:
                dist = real_dist(package.name, artifact.filename)
                server.add(dist, project=package.name)
                artifact = replace(artifact, sha256=dist.sha256, size=dist.size)
            artifacts.append(artifact)
        return replace(package, artifacts=tuple(artifacts))
    tools = tuple(made_real(p) for p in lock.build_packages)  # the build tools' wheels too
    return relocked(replace(lock.replace_packages(tuple(made_real(p) for p in lock.packages)), build_packages=tools))


def relocked(lock: Lock) -> Lock:
    """Source builds' inputs digests as a re-lock records them (their inputs' hashes may have moved)."""
    from envbuilder.gate.checks.recipes import derived_digest

    shipped = (ROOT / "matrices" / f"{lock.target}.yaml").exists()
    target = load_target(lock.target if shipped else TARGET, root=ROOT)
    return lock.replace_packages(tuple(
        replace(p, build=replace(p.build, inputs_digest=derived_digest(lock, p, target))) if p.build else p
        for p in lock.packages))


def tqdm_bump(lock: Lock) -> Lock:
    """A pure-Python patch bump: what should pass."""
    v = Version(lock.package("tqdm").version)
    new = f"{v.major}.{v.minor}.{v.micro + 1}"
    return with_package(lock, "tqdm", new, f"tqdm-{new}-py3-none-any.whl")


def torch_bump(lock: Lock) -> Lock:
    """torch 2.10.0 as a re-lock writes it: flash-attn's source build follows, sgl-kernel is kept."""
    fa = lock.package("flash-attn")
    bumped = with_package(lock, "torch", "2.10.0", TORCH_210)
    rebuilt = replace(fa, build=replace(fa.build, requires=("torch==2.10.0",)))
    return relocked(with_package(bumped, "flash-attn", fa.version, facets=recorded_facets(rebuilt, "2.10.0"),
                                 build=rebuilt.build))


def write(lock: Lock, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(lock), encoding="utf-8")
    return path


def committed(project: Path, base: Lock, head: Lock | None = None):
    """A git repository (branch main) holding `project`'s matrices and `base` as its lock; `head`
    then written to the working tree, as a PR leaves it before `gate --base-ref main`."""
    from tests.support.gitrepo import make_git_repo

    files = {str(p.relative_to(project)): p.read_text() for p in (project / "matrices").rglob("*") if p.is_file()}
    repo = make_git_repo(project, [{LOCK: write(base, project / LOCK).read_text(), **files}])
    if head is not None:
        write(head, project / LOCK)
    return repo
