"""Locks for the build tests, made here from the lock model (the shipped matrices, fake hashes).

Render only reads the lock, so a hand-made lock exercises every decision without a resolver or an
index; the docker tests use a real lock instead (they download what it names).
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from envbuilder.lock import write_lock
from envbuilder.lock.model import Artifact, BuildRecipe, Facets, Lock, LockedPackage, Source

REPO = Path(__file__).resolve().parents[2]


def fake_sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def wheel_pkg(name: str, version: str, deps: tuple[str, ...] = (), tag: str = "py3-none-any",
              facets: Facets | None = None) -> LockedPackage:
    filename = f"{name.replace('-', '_')}-{version}-{tag}.whl"
    return LockedPackage(name, version, Source(index="pypi"), (Artifact(filename, fake_sha(filename), 1000),),
                         dependencies=deps, facets=facets)


def sdist_pkg(name: str, version: str, recipe: BuildRecipe, deps: tuple[str, ...] = (),
              facets: Facets | None = None) -> LockedPackage:
    filename = f"{name.replace('-', '_')}-{version}.tar.gz"
    return LockedPackage(name, version, Source(index="pypi"), (Artifact(filename, fake_sha(filename), 5000, "sdist"),),
                         dependencies=deps, requested=f"=={version}", build=recipe, facets=facets)


def blackwell_lock() -> Lock:
    torch_facets = Facets(torch="2.9", cuda="12.8", cxx11_abi=True, python_abi="cp312",
                          sass=("sm_80", "sm_90", "sm_100", "sm_120"), evidence="knowledge")
    cp312 = "cp312-cp312-manylinux_2_28_x86_64"
    packages = (
        wheel_pkg("torch", "2.9.1", ("nvidia-cublas-cu12==12.8.4.1", "typing-extensions>=4.10.0", "triton==3.5.1"),
                  cp312, torch_facets),
        wheel_pkg("nvidia-cublas-cu12", "12.8.4.1", (), "py3-none-manylinux_2_27_x86_64"),
        wheel_pkg("triton", "3.5.1", (), cp312),
        wheel_pkg("typing-extensions", "4.15.0"),
        wheel_pkg("einops", "0.8.1"),
        wheel_pkg("transformers", "5.3.0", ("typing-extensions",)),
        wheel_pkg("sglang", "0.5.9", ("torch==2.9.1", "transformers")),
        wheel_pkg("sgl-kernel", "0.3.21", ("torch",), "cp310-abi3-manylinux2014_x86_64",
                  Facets(torch="2.9", cuda="12.9", cxx11_abi=True, sass=("sm_90a", "sm_100a", "sm_120a"))),
        wheel_pkg("flashinfer-python", "0.6.3", ("torch",)),
        wheel_pkg("setuptools", "80.9.0"),
        sdist_pkg("flash-attn", "2.8.3",
                  BuildRecipe({"FLASH_ATTENTION_FORCE_BUILD": "TRUE", "FLASH_ATTN_CUDA_ARCHS": "120",
                               "NVCC_THREADS": "4"}, "12.8", ("torch==2.9.1",), "sha256:" + fake_sha("fa")),
                  ("einops", "torch"), Facets(torch="2.9", cuda="12.8", cxx11_abi=True, sass=("sm_120",))),
    )
    return Lock(
        target="blackwell-sm120", matrix_digest="sha256:" + fake_sha("m"), knowledge_digest="sha256:" + fake_sha("k"),
        environment={"python": "3.12", "os": "linux", "machine": "x86_64", "libc": "glibc_2.39"},
        toolchain={"base-image": "nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04@sha256:"
                                 "24c8e3581ea6330038b0d374920721983312627f8adbfcf390bdb4b399d280ed",
                   "base-image-pinned": True, "cuda": "12.8", "gpu-arch": "sm_120", "source-date-epoch": 1771000000},
        indexes=("pypi",), packages=packages)


def cpu_lock() -> Lock:
    recipe = BuildRecipe({"CMAKE_ARGS": "-DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF"}, None, (),
                         "sha256:" + fake_sha("llama"))
    packages = (
        sdist_pkg("llama-cpp-python", "0.3.36", recipe, ("numpy>=1.20.0", "diskcache>=5.6.1")),
        wheel_pkg("numpy", "2.4.6", (), "cp311-cp311-manylinux_2_28_x86_64"),
        wheel_pkg("diskcache", "5.6.3"),
        wheel_pkg("gguf", "0.17.1", ("numpy>=1.17", "tqdm>=4.27")),
        wheel_pkg("tqdm", "4.67.1"),
    )
    return Lock(
        target="cpu-llamacpp", matrix_digest="sha256:" + fake_sha("m2"), knowledge_digest="sha256:" + fake_sha("k"),
        environment={"python": "3.11", "os": "linux", "machine": "x86_64", "libc": "glibc_2.36"},
        toolchain={"base-image": "debian:bookworm-slim", "base-image-pinned": False, "source-date-epoch": 1771000000},
        indexes=("pypi",), packages=packages)


def bump(lock: Lock, name: str, version: str) -> Lock:
    """The same lock with one package at another version (and new fake hashes)."""
    out = []
    for pkg in lock.packages:
        if pkg.name == name:
            arts = tuple(replace(a, filename=a.filename.replace(pkg.version, version),
                                 sha256=fake_sha(a.filename.replace(pkg.version, version))) for a in pkg.artifacts)
            pkg = replace(pkg, version=version, artifacts=arts)
        out.append(pkg)
    return lock.replace_packages(tuple(out))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project root with the shipped matrices and the hand-made locks."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "matrices", root / "matrices")
    write_lock(blackwell_lock(), root / "locks" / "blackwell-sm120.lock.toml")
    write_lock(cpu_lock(), root / "locks" / "cpu-llamacpp.lock.toml")
    monkeypatch.setenv("ENVBUILDER_ROOT", str(root))
    return root
