"""The build context's files (requirements, lock copy, image manifest, envbuilder's own source).

Each stage COPYs only the files it needs, so a stage's cache key is exactly its inputs: a build
stage sees its sdist pin and its ABI inputs' pins, never the whole lock. Every file is a pure
function of the lock, the matrix and this envbuilder, so rendering twice gives the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import tomli_w
from packaging.requirements import Requirement

import envbuilder
from envbuilder.build import fetch
from envbuilder.build.plan import BuildPlan, SourceBuild
from envbuilder.errors import BadInput
from envbuilder.quoting import requirements_text
from envbuilder.lock import dumps
from envbuilder.lock.model import Artifact, BuildPackage, Lock, LockedPackage

INDENT = "    "
_SKIP_DIRS = {"__pycache__"}
_SKIP_SUFFIXES = (".pyc", ".pyo")


def pin_lines(pkg: LockedPackage | BuildPackage, artifacts: Iterable[Artifact]) -> list[str]:
    """`name==version` with one --hash per artifact: the installer takes only these bytes."""
    hashes = [f"{INDENT}--hash=sha256:{a.sha256}" for a in sorted(artifacts)]
    head = requirements_text(f"{pkg.name}=={pkg.version}" + (f" ; {pkg.marker}" if pkg.marker else ""))
    body = [head, *hashes]
    return [*(line + " \\" for line in body[:-1]), body[-1]]


def source_line(pkg: LockedPackage) -> list[str]:
    """What the build stage fetches: the sdist by hash, or the git commit (its own content address)."""
    src = pkg.source
    if src.git is not None:
        url = f"git+{src.git}@{src.commit}" + (f"#subdirectory={src.subdirectory}" if src.subdirectory else "")
        return [requirements_text(f"{pkg.name} @ {url}")]
    return pin_lines(pkg, [a for a in pkg.artifacts if a.kind == "sdist"])


def _text(lines: Iterable[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def venv_requirements(lock: Lock, origin: str) -> bytes:
    """The locked venv minus source builds, via the shared requirements export."""
    from envbuilder.export import requirements, selection

    return requirements.render(selection.select(lock, skip_source_builds=True, origin=origin), origin).encode()


def layer_files(plan: BuildPlan) -> dict[str, bytes]:
    """One hashed requirements file per venv layer, naming only that layer's packages and nothing
    lock-wide (no digest, no date): its bytes change only when its own packages do, so BuildKit
    keeps the layer cached across every other bump."""
    files = {}
    for layer in plan.layers:
        pins = plan.layer_index_packages(layer)
        if pins:
            lines = [f"# {layer.name}: installed with --no-deps --require-hashes; do not edit"]
            lines += [line for p in pins for line in pin_lines(p, p.artifacts)]
            files[f"requirements/layers/{layer.name}.txt"] = _text(lines)
    return files


def _fetch_files(build: SourceBuild) -> dict[str, bytes]:
    """A binary build fetches its sdist by hash with a stdlib script (see envbuilder.build.fetch)."""
    sdist = build.sdist
    if sdist is None:
        raise BadInput(f"lock: package {build.package.name!r}: a binary build needs an sdist artifact; re-run `envbuilder lock`")
    source = {"name": build.package.name, "filename": sdist.filename, "sha256": sdist.sha256}
    return {"source.json": (json.dumps(source, indent=2, sort_keys=True) + "\n").encode(),
            "fetch.py": Path(fetch.__file__).read_bytes()}


def stage_files(build: SourceBuild) -> dict[str, bytes]:
    base = f"requirements/{build.stage}"
    if build.product == "binary":
        return {f"{base}/{name}": data for name, data in _fetch_files(build).items()}
    files = {f"{base}/source.txt": _text(source_line(build.package))}
    if build.inputs or build.tools:
        lines = [line for p in (*build.inputs, *build.tools) for line in pin_lines(p, p.artifacts)]
        files[f"{base}/inputs.txt"] = _text(lines)
    return files


def _tool_dependencies() -> list[str]:
    """envbuilder's runtime requirements (extras left out) as its installed metadata states them."""
    out = []
    for text in metadata.requires("envbuilder") or []:
        req = Requirement(text)
        if req.marker is not None and "extra" in str(req.marker):
            continue
        out.append(str(req))
    return sorted(out, key=str.lower)


#: envbuilder's data files (knowledge YAML and its subfolders, like the system manifests): a superset
#: of pyproject.toml's package-data, so the image's copy never lacks one the checkout has.
TOOL_PACKAGE_DATA = ["knowledge/*.yaml", "knowledge/*/*.yaml", "py.typed"]


def _tool_pyproject(deps: list[str]) -> bytes:
    """A minimal pyproject for installing envbuilder from the copied source (works for a wheel
    install of envbuilder too, which has no pyproject of its own to copy)."""
    doc = {
        "build-system": {"requires": ["setuptools>=69"], "build-backend": "setuptools.build_meta"},
        "project": {"name": "envbuilder", "version": envbuilder.__version__, "requires-python": ">=3.11",
                    "dependencies": deps, "scripts": {"envbuilder": "envbuilder.cli:main"}},
        "tool": {"setuptools": {"packages": {"find": {"include": ["envbuilder*"]}},
                                "package-data": {"envbuilder": TOOL_PACKAGE_DATA}}},
    }
    return tomli_w.dumps(doc).encode()


def tool_files() -> dict[str, bytes]:
    """envbuilder itself, for its own venv in the image (never the locked one)."""
    root = Path(envbuilder.__file__).resolve().parent
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root.parent)
        if path.is_dir() or _SKIP_DIRS & set(rel.parts) or path.suffix in _SKIP_SUFFIXES:
            continue
        files[f"tool/{rel.as_posix()}"] = path.read_bytes()
    deps = _tool_dependencies()
    files["tool/pyproject.toml"] = _tool_pyproject(deps)
    files["tool-requirements.txt"] = _text([*deps, "setuptools>=70.1"])
    return files


def context_files(plan: BuildPlan, dockerfile: str, matrices: dict[str, bytes]) -> dict[str, bytes]:
    """Every file of the build context, by relative path."""
    files: dict[str, bytes] = {"Dockerfile": dockerfile.encode()}
    files["requirements/venv.txt"] = venv_requirements(plan.lock, f"locks/{plan.target}.lock.toml")
    files.update(layer_files(plan))
    for build in plan.builds:
        files.update(stage_files(build))
    files["image/image.json"] = (json.dumps(plan.manifest(), indent=2, sort_keys=True) + "\n").encode()
    files[f"image/project/locks/{plan.target}.lock.toml"] = dumps(plan.lock).encode()
    for name, data in sorted(matrices.items()):
        files[f"image/project/matrices/{name}"] = data
    files.update(tool_files())
    return files
