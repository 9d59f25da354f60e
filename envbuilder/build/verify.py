"""Verify an image from inside: the venv holds exactly the lock, its extensions import, archs fit.

Runs in envbuilder's own venv and inspects the locked venv from outside it (its site-packages by
path, its interpreter by subprocess), so checking never adds a distribution to what is checked.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from packaging.markers import Marker
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbuilder.abi.facets import GpuArch, coverage
from envbuilder.errors import BadInput
from envbuilder.lock import read_lock
from envbuilder.lock.model import Lock

MANIFEST_ENV = "ENVBUILDER_IMAGE_MANIFEST"

_IMPORT_SCRIPT = """
import importlib, json, sys
out = {}
for name in json.loads(sys.argv[1]):
    try:
        importlib.import_module(name)
        out[name] = None
    except BaseException as exc:
        out[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""
_SUFFIX_SCRIPT = "import importlib.machinery, json; print(json.dumps(importlib.machinery.EXTENSION_SUFFIXES))"


@dataclass(frozen=True)
class Problem:
    kind: str  # missing | extra | version | import | binary | arch
    name: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind:8} {self.name}: {self.detail}"


@dataclass(frozen=True)
class Report:
    target: str
    lock_digest: str
    checked: int
    extensions: int
    problems: tuple[Problem, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {"target": self.target, "lock-digest": self.lock_digest, "ok": self.ok, "checked": self.checked,
                "extensions": self.extensions, "notes": list(self.notes),
                "problems": [{"kind": p.kind, "name": p.name, "detail": p.detail} for p in self.problems]}


@dataclass(frozen=True)
class Subject:
    """What to verify: a lock, a venv, and the products built outside the venv."""

    lock: Lock
    venv: Path
    binary_products: dict[str, str]  # normalised package name -> binary path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def load_subject(manifest: Path | None, lock_file: Path | None, venv: Path | None) -> Subject:
    """From the image manifest (the default inside an image), or from --lock/--venv."""
    manifest = manifest or (Path(os.environ[MANIFEST_ENV]) if os.environ.get(MANIFEST_ENV) else None)
    data: dict = {}
    if manifest is not None:
        try:
            data = json.loads(Path(manifest).read_text())
        except (OSError, ValueError) as exc:
            raise BadInput(f"{manifest}: cannot read the image manifest: {exc}") from None
    lock_path = lock_file or (Path(data["lock"]) if "lock" in data else None)
    venv_path = venv or (Path(data["venv"]) if "venv" in data else None)
    if lock_path is None or venv_path is None:
        raise BadInput("not inside an envbuilder image (no ENVBUILDER_IMAGE_MANIFEST): pass --lock and --venv")
    products = {canonicalize_name(p["package"]): p["path"] for p in data.get("products", ())
                if p.get("kind") == "binary"}
    return Subject(read_lock(lock_path), venv_path, products)


def site_packages(venv: Path) -> list[Path]:
    found = sorted({*venv.glob("lib/python3*/site-packages"), *venv.glob("lib64/python3*/site-packages")})
    if not found:
        raise BadInput(f"{venv}: no site-packages: not a Python venv")
    return found


def installed(venv: Path) -> dict[str, metadata.Distribution]:
    dists = metadata.distributions(path=[str(p) for p in site_packages(venv)])
    return {canonicalize_name(d.metadata["Name"]): d for d in dists}


def _marker_env(python: Path) -> dict[str, str]:
    script = "import json; from packaging.markers import default_environment as d; print(json.dumps(d()))"
    result = subprocess.run([python, "-c", script], capture_output=True, text=True)
    if result.returncode == 0:
        return json.loads(result.stdout)
    from packaging.markers import default_environment

    return dict(default_environment())  # same interpreter in an envbuilder image


def expected(subject: Subject) -> dict[str, str]:
    """name -> version for every locked package the venv must hold here."""
    env = None
    out = {}
    for pkg in subject.lock.packages:
        name = canonicalize_name(pkg.name)
        if name in subject.binary_products:
            continue
        if pkg.marker:
            env = env or _marker_env(subject.python)
            if not Marker(pkg.marker).evaluate(env):
                continue
        out[name] = pkg.version
    return out


def _same_version(a: str, b: str) -> bool:
    try:
        return Version(a) == Version(b)
    except InvalidVersion:
        return a == b


def compare(want: dict[str, str], have: dict[str, str]) -> list[Problem]:
    problems = [Problem("missing", n, f"locked {v}, not installed") for n, v in sorted(want.items()) if n not in have]
    problems += [Problem("extra", n, f"{v} installed, not in the lock") for n, v in sorted(have.items()) if n not in want]
    problems += [Problem("version", n, f"locked {want[n]}, installed {have[n]}") for n in sorted(want)
                 if n in have and not _same_version(want[n], have[n])]
    return problems


def extension_modules(dist: metadata.Distribution, suffixes: list[str]) -> list[str]:
    """Dotted names of the compiled extension modules a distribution installed."""
    out = []
    for file in dist.files or ():
        text = str(file)
        suffix = next((s for s in suffixes if text.endswith(s)), None)
        if suffix is None or ".." in text:
            continue
        parts = text[: -len(suffix)].split("/")
        if all(p.isidentifier() for p in parts) and (suffix != ".so" or _has_init(dist.locate_file(file), parts[-1])):
            out.append(".".join(parts))
    return sorted(out)


def _has_init(path: object, name: str) -> bool:
    """A bare `.so` is a Python extension only if it exports PyInit_<name>; else it is a plain
    shared library (llama_cpp/lib/libllama.so, loaded with ctypes) that `import` cannot load."""
    try:
        with open(str(path), "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return data.find(b"PyInit_" + name.encode() + b"\0") != -1
    except (OSError, ValueError):
        return True  # unreadable: let the import attempt report it


def import_problems(subject: Subject, dists: dict[str, metadata.Distribution]) -> tuple[int, list[Problem]]:
    suffixes = json.loads(subprocess.run([subject.python, "-c", _SUFFIX_SCRIPT], capture_output=True,
                                         text=True, check=True).stdout)
    modules = {m: name for name, d in sorted(dists.items()) for m in extension_modules(d, suffixes)}
    if not modules:
        return 0, []
    result = subprocess.run([subject.python, "-c", _IMPORT_SCRIPT, json.dumps(sorted(modules))],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        return len(modules), [Problem("import", "(interpreter)", result.stderr.strip()[-400:])]
    failed = json.loads(result.stdout)
    return len(modules), [Problem("import", modules[m], f"{m}: {err}") for m, err in sorted(failed.items()) if err]


def binary_problems(subject: Subject) -> list[Problem]:
    problems = []
    for name, path in sorted(subject.binary_products.items()):
        if not os.access(path, os.X_OK):
            problems.append(Problem("binary", name, f"{path} is missing or not executable"))
            continue
        result = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            problems.append(Problem("binary", name, f"`{path} --version` exited {result.returncode}: "
                                                    f"{(result.stderr or result.stdout).strip()[-300:]}"))
    return problems


def gpu_arches() -> list[str] | None:
    """sm_XY of each visible GPU, or None when no NVIDIA driver answers."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    result = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True, text=True)
    if result.returncode != 0:
        return None
    return sorted({"sm_" + line.strip().replace(".", "") for line in result.stdout.splitlines() if line.strip()})


def _covers(arch: str, sass: tuple[str, ...], ptx: tuple[str, ...]) -> bool:
    """The one coverage rule (abi.facets.coverage): the lock and verify must agree on every arch."""
    return coverage(sass, ptx, GpuArch.parse(arch)).covered


def arch_problems(lock: Lock, arches: list[str]) -> list[Problem]:
    problems = []
    for pkg in sorted(lock.packages, key=lambda p: p.name):
        facets = pkg.facets
        if facets is None or not (facets.sass or facets.ptx):
            continue
        for arch in arches:
            if not _covers(arch, facets.sass, facets.ptx):
                problems.append(Problem("arch", pkg.name, f"no SASS or PTX for this GPU's {arch} "
                                                          f"(has {', '.join((*facets.sass, *facets.ptx))})"))
    return problems


def link_problems(subject: Subject) -> tuple[list[Problem], str]:
    """The venv's ELFs linked like `lock --link` links the lock's wheels (same model, installed bytes)."""
    from envbuilder.abi import systems
    from envbuilder.abi.installed import link_installed

    manifest = systems.for_image(str(subject.lock.toolchain.get("base-image", "")))
    if manifest is None:
        return [], "linkage not checked: no system manifest describes the lock's base image"
    report = link_installed(site_packages(subject.venv), manifest.id, str(subject.lock.environment.get("python")))
    problems = [Problem("link", f.package, f.message) for f in report.errors if f.kind != "arch-coverage"]
    binary = sum(1 for p in report.packages.values() if p.evidence == "binary")
    return problems, f"linked {binary} binary distributions against the {manifest.id} manifest"


def verify(subject: Subject) -> Report:
    dists = installed(subject.venv)
    want = expected(subject)
    have = {name: d.version for name, d in dists.items()}
    problems = compare(want, have)
    count, imports = import_problems(subject, {n: d for n, d in dists.items() if n in want})
    problems += imports + binary_problems(subject)
    notes = []
    linked, note = link_problems(subject)
    problems += linked
    notes.append(note)
    arches = gpu_arches()
    if arches is None:
        notes.append("no NVIDIA GPU visible: CUDA arch coverage not checked")
    else:
        problems += arch_problems(subject.lock, arches)
        notes.append(f"GPU archs checked: {', '.join(arches) or 'none'}")
    return Report(subject.lock.target, subject.lock.digest, len(want), count, tuple(problems), tuple(notes))
