"""Round trip against the real index: export -> install into a fresh venv -> `envbuilder verify`.

The CPU target installs from every format with the installers that read it, building
llama-cpp-python from its locked sdist with the lock's recipe environment (the honest path: the
lock says "built from this sdist"). The installers' own caches keep the built wheel, so the
compile happens once per installer, not once per format. A GPU target's pure-Python subset
installs on its own Python (3.12) the same way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from envbuilder.lock import lock_path, read_lock, write_lock
from envbuilder.matrix import project_root
from tests.conftest import require_tool
from tests.export.helpers import clean_env, make_venv, must, python_for, run, uv

pytestmark = pytest.mark.network

ROOT = project_root(Path(__file__).parent)
CPU = "cpu-llamacpp"
GPU = "blackwell-sm120"
FILE_NAMES = {"requirements": "requirements.{}.txt", "pylock": "pylock.{}.toml", "conda-lock": "conda-lock.{}.yml"}


def _lock(name: str) -> Path:
    path = lock_path(ROOT, name)
    if not path.exists():
        pytest.skip(f"{path.relative_to(ROOT)} is not committed yet")
    return path


def envbuilder(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envbuilder", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


CACHE_ENV = "ENVBUILDER_TEST_INSTALLER_CACHE"


@pytest.fixture(scope="session")
def installer_cache(tmp_path_factory) -> Path:
    """pip's and uv's caches for this session (or $ENVBUILDER_TEST_INSTALLER_CACHE to keep them):
    each installer then compiles llama-cpp-python once, not once per format."""
    return Path(os.environ.get(CACHE_ENV) or tmp_path_factory.mktemp("installer-cache"))


def installer_env(lock_file: Path, cache: Path) -> dict[str, str]:
    """The user's index and CA bundle, none of this machine's other pip config; recipe env for builds."""
    from envbuilder.index.config import ca_bundle, default_index_url

    extra = {k: v for p in read_lock(lock_file).packages if p.build for k, v in p.build.env.items()}
    extra.update(PIP_CACHE_DIR=str(cache / "pip"), UV_CACHE_DIR=str(cache / "uv"))
    bundle = ca_bundle()
    if bundle is not None:
        extra.update(SSL_CERT_FILE=str(bundle), PIP_CERT=str(bundle))
    return clean_env(default_index_url(), **extra)


@pytest.fixture(scope="session")
def pip26(tmp_path_factory, installer_cache) -> str:
    """An interpreter whose pip reads pylock.toml (pip >= 26.1); it installs into other venvs via --python."""
    tool = make_venv(tmp_path_factory.mktemp("pip26") / "venv")
    must(run([uv(), "pip", "install", "--python", str(tool), "pip>=26.1"], installer_env(_lock(CPU), installer_cache)))
    return str(tool)


def pip_lines(conda_lock_file: Path, out: Path) -> Path:
    """`conda-lock install` gives pip the `# pip` lines of conda-lock's explicit render: so do we."""
    from tests.export.test_condalock import pip_lines as lines

    out.write_text("\n".join(lines(conda_lock_file)) + "\n")
    return out


def install(fmt: str, installer: str, exported: Path, venv_python: Path, pip_python: str, env: dict) -> None:
    pip = [pip_python, "-m", "pip", "--python", str(venv_python), "install"]
    uvpip = [uv(), "pip", "install", "--python", str(venv_python)]
    commands = {
        ("requirements", "pip"): [*pip, "--require-hashes", "--no-deps", "-r", str(exported)],
        ("requirements", "uv"): [*uvpip, "--require-hashes", "-r", str(exported)],
        # pip (26.x, experimental) still resolves dependencies from a pylock file; a lock needs none
        ("pylock", "pip"): [*pip, "--no-deps", "-r", str(exported)],
        ("pylock", "uv"): [*uvpip, "-r", str(exported)],
    }
    if fmt == "conda-lock":
        exported = pip_lines(exported, exported.with_suffix(".pip.txt"))
        commands[(fmt, "pip")] = [*pip, "--no-deps", "-r", str(exported)]
    must(run(commands[(fmt, installer)], env, timeout=3600))


def export_and_install(fmt: str, installer: str, lock_file: Path, name: str, python: str, pip26: str,
                       cache: Path, tmp_path: Path) -> Path:
    """`envbuilder export` the lock, install the file into a fresh venv; returns the venv."""
    exported = tmp_path / FILE_NAMES[fmt].format(name)
    proc = envbuilder("export", "--lock", str(lock_file), "--format", fmt, "-o", str(exported))
    assert proc.returncode == 0, proc.stderr
    venv = tmp_path / "venv"
    install(fmt, installer, exported, make_venv(venv, python), pip26, installer_env(lock_file, cache))
    return venv


def verify(lock_file: Path, venv: Path) -> None:
    verified = envbuilder("verify", "--lock", str(lock_file), "--venv", str(venv))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "verify: OK" in verified.stdout


# Each format once, with the installer that reads it, compiling llama-cpp-python once per installer:
# pip reuses its requirements build for conda-lock's URL lines (its pylock path would build again,
# so pip's pylock reader is exercised on the GPU subset below); uv installs the pylock. uv reading a
# hashed requirements file is covered offline (tests/export/test_requirements.py).
@pytest.mark.timeout(3600)  # a cold llama-cpp-python compile alone took 13-39 min on 2 shared cores
@pytest.mark.parametrize("fmt, installer", [("requirements", "pip"), ("conda-lock", "pip"), ("pylock", "uv")])
def test_cpu_target_installs_from_each_export_and_verifies(fmt, installer, pip26, installer_cache, tmp_path):
    python = python_for("3.11")
    require_tool("a Python 3.11 interpreter (the cpu-llamacpp target's)", python, "on PATH or under pyenv")
    venv = export_and_install(fmt, installer, _lock(CPU), CPU, python, pip26, installer_cache, tmp_path)
    # the source build is a working llama.cpp binding, not just a name in site-packages
    must(subprocess.run([str(venv / "bin" / "python"), "-c", "import llama_cpp; llama_cpp.llama_backend_init()"],
                        capture_output=True, text=True))
    verify(_lock(CPU), venv)


def pure_python_subset(lock_file: Path, out: Path) -> Path:
    """The GPU lock's packages that are py3-none-any wheels only: installable on any x86_64 box."""
    lock = read_lock(lock_file)
    pure = tuple(p for p in lock.packages if p.build is None and p.source.git is None and p.artifacts
                 and all(a.filename.endswith("-none-any.whl") for a in p.artifacts))
    assert len(pure) >= 20, "the GPU target should have a substantial pure-Python part"
    # No source build is kept, so no build tool either: the lock refuses a tool no recipe lists.
    write_lock(replace(lock, packages=pure, build_packages=()), out)
    return out


@pytest.mark.timeout(1800)  # pip fetches 100 wheels one by one: 281-409 s seen
@pytest.mark.parametrize("fmt, installer", [("pylock", "uv"), ("pylock", "pip")])
def test_gpu_target_pure_python_subset_installs_and_verifies(fmt, installer, pip26, installer_cache, tmp_path):
    python = python_for("3.12")
    require_tool("a Python 3.12 interpreter (the GPU target's)", python, "on PATH or under pyenv")
    subset = pure_python_subset(_lock(GPU), tmp_path / "locks" / f"{GPU}.lock.toml")
    verify(subset, export_and_install(fmt, installer, subset, GPU, python, pip26, installer_cache, tmp_path))
