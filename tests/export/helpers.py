"""Helpers for the export tests: locks from real dists, fresh venvs, real installers, spec checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from envbuilder.lock.model import Artifact, BuildRecipe, Lock, LockedPackage, Source
from tests.conftest import require_tool
from tests.support.dists import BuiltDist

ENVIRONMENT_311 = {"python": "3.11", "os": "linux", "machine": "x86_64", "libc": "glibc_2.36",
                   "marker": "sys_platform == 'linux' and platform_machine == 'x86_64' and python_version == '3.11'",
                   "platform-tag": "manylinux_2_36_x86_64"}
HOST_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"


def environment_for(python: str) -> dict[str, str]:
    env = dict(ENVIRONMENT_311, python=python)
    env["marker"] = env["marker"].replace("'3.11'", f"'{python}'")
    return env


def artifact(dist: BuiltDist) -> Artifact:
    kind = "wheel" if dist.filename.endswith(".whl") else "sdist"
    return Artifact(dist.filename, dist.sha256, dist.size, kind)


def package(name: str, version: str, dists: Iterable[BuiltDist] = (), deps: Iterable[str] = (),
            build: BuildRecipe | None = None, git: tuple[str, str, str | None] | None = None,
            marker: str | None = None) -> LockedPackage:
    source = Source(git=git[0], commit=git[1], subdirectory=git[2]) if git else Source(index="pypi")
    return LockedPackage(name, version, source, tuple(artifact(d) for d in dists), tuple(deps),
                         requested=None, marker=marker, build=build)


def make_lock(packages: Iterable[LockedPackage], target: str = "demo", python: str = HOST_PYTHON) -> Lock:
    return Lock(target=target, matrix_digest="sha256:" + "1" * 64, knowledge_digest="sha256:" + "2" * 64,
                environment=environment_for(python), toolchain={"base-image": "debian:bookworm-slim", "base-image-pinned": False},
                indexes=("pypi",), packages=tuple(packages))


# -- installers ---------------------------------------------------------------------------------

def clean_env(index_url: str | None = None, **extra: str) -> dict[str, str]:
    """The environment an installer runs in: none of this machine's pip/uv configuration leaks in."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "UV_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", UV_NO_CONFIG="1")
    for var in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        if os.environ.get(var):
            env[var] = os.environ[var]
    if index_url:
        env.update(PIP_INDEX_URL=index_url, UV_DEFAULT_INDEX=index_url)
    env.update(extra)
    return env


def run(cmd: list[str], env: Mapping[str, str], cwd: Path | None = None,
        timeout: int = 1200) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=dict(env), cwd=cwd, capture_output=True, text=True, timeout=timeout)


def must(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"{' '.join(proc.args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def uv() -> str:
    found = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    require_tool("uv", found, "pip install uv into the venv (.ci/parts/40-export.sh does)")
    return found


def _works(python: str, version: str) -> bool:
    probe = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True)
    return probe.returncode == 0 and probe.stdout.strip() == version


def python_for(version: str) -> str | None:
    """An interpreter for `version`: this one, one on PATH that runs (pyenv shims may not), or pyenv's."""
    if version == HOST_PYTHON:
        return sys.executable
    candidates = [shutil.which(f"python{version}")]
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(str(p) for p in Path(root).glob(f"versions/{version}*/bin/python{version}"))
    return next((c for c in candidates if c and _works(c, version)), None)


def make_venv(path: Path, python: str = sys.executable) -> Path:
    """A fresh, empty venv (no pip: installers drive it from outside); returns its python."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True)
    return path / "bin" / "python"


def pip(venv_python: Path, pip_python: str = sys.executable) -> list[str]:
    """A real pip (the one in `pip_python`'s environment) installing into `venv_python`'s venv."""
    return [pip_python, "-m", "pip", "--python", str(venv_python)]


def installed(venv_python: Path) -> dict[str, str]:
    """Normalised name -> version of every distribution in the venv, read by the venv itself."""
    code = ("import json, importlib.metadata as m, re; print(json.dumps({re.sub(r'[-_.]+', '-', "
            "d.metadata['Name']).lower(): d.version for d in m.distributions()}))")
    out = subprocess.run([str(venv_python), "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def locked_versions(lock: Lock) -> dict[str, str]:
    from packaging.utils import canonicalize_name

    return {canonicalize_name(p.name): p.version for p in lock.packages}


# -- a buildable source tree with an in-tree, stdlib-only PEP 517 backend ------------------------

_BACKEND = '''\
"""A stdlib-only PEP 517 backend: builds offline, and records the build environment it saw."""
import base64, hashlib, io, os, zipfile

NAME, VERSION, MODULE = {name!r}, {version!r}, {module!r}


def _record(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{{path}},sha256={{digest}},{{len(data)}}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    info = f"{{MODULE}}-{{VERSION}}.dist-info"
    members = {{
        f"{{MODULE}}/__init__.py": f"BUILT_WITH = {{os.environ.get('DEMO_BUILD_FLAG', '')!r}}\\n".encode(),
        f"{{info}}/METADATA": f"Metadata-Version: 2.1\\nName: {{NAME}}\\nVersion: {{VERSION}}\\n".encode(),
        f"{{info}}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: test-backend\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    }}
    record = [_record(p, d) for p, d in members.items()] + [f"{{info}}/RECORD,,"]
    members[f"{{info}}/RECORD"] = ("\\n".join(record) + "\\n").encode()
    filename = f"{{MODULE}}-{{VERSION}}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w") as zf:
        for path, data in members.items():
            zf.writestr(path, data)
    return filename
'''


def source_tree(name: str, version: str) -> dict[str, bytes]:
    """Files of a project that any installer can build with no network (no build requirements)."""
    module = name.replace("-", "_")
    pyproject = (f'[build-system]\nrequires = []\nbuild-backend = "test_backend"\nbackend-path = ["."]\n\n'
                 f'[project]\nname = "{name}"\nversion = "{version}"\n')
    return {"pyproject.toml": pyproject.encode(),
            "test_backend.py": _BACKEND.format(name=name, version=version, module=module).encode()}
