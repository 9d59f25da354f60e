"""An sdist's dependencies read from the source itself, the way pip and uv find them.

Three routes, cheapest first:

1. PEP 643: PKG-INFO at Metadata-Version 2.2+ is authoritative for every field not marked Dynamic.
2. PEP 621: a static `[project]` table in the sdist's pyproject.toml whose `dependencies` (and
   `optional-dependencies`) are not listed in `dynamic` says what a build would say.
3. The build backend's `prepare_metadata_for_build_wheel` (PEP 517), run in an isolated build
   environment whose requirements come from the same index. This runs the project's build code, as
   `pip install` does; the markers it writes are kept, so they are evaluated later for the target,
   but a setup.py that branches on the running Python answers for the Python at hand: the route
   records that Python so the lock can say when it differs from the target's.

The result is one core-metadata text plus where it came from (`origin`); the index client caches it
by the sdist's sha256, so each sdist is read (or built) once.
"""

from __future__ import annotations

import hashlib
import tarfile
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from email.message import Message
from pathlib import Path, PurePosixPath
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbuilder.errors import BadInput
from envbuilder.index.backend import BUILD_PYTHON, BuildEnvInstaller, backend_metadata, check_described
from envbuilder.index.distmeta import MetadataNotFound, read_sdist_pkg_info
from envbuilder.index.models import CoreMetadata



@dataclass(frozen=True)
class SourceMetadata:
    """Core metadata text and its route: "pkg-info", "pyproject" or "backend" (built with `python`)."""

    text: str
    origin: str
    python: str | None = None


def cache_key(sdist_sha256: str) -> str:
    """The metadata-cache key of an sdist's source metadata (apart from raw PKG-INFO entries)."""
    return hashlib.sha256(f"source-metadata-v1:{sdist_sha256}".encode()).hexdigest()


def is_static_pkg_info(meta: CoreMetadata) -> bool:
    """PEP 643: Metadata-Version 2.2+ and Requires-Dist not Dynamic."""
    parts = (meta.metadata_version or "1.0").split(".")
    try:
        new_enough = (int(parts[0]), int(parts[1]) if len(parts) > 1 else 0) >= (2, 2)
    except ValueError:
        new_enough = False
    return new_enough and "requires-dist" not in meta.dynamic


def core_metadata_text(name: str, version: str, requires_dist: list[str], requires_python: str | None,
                       extras: list[str]) -> str:
    """A Metadata-Version 2.2 text with only what resolution reads (no Dynamic: it is final)."""
    msg = Message()
    msg["Metadata-Version"] = "2.2"
    msg["Name"] = name
    msg["Version"] = version
    if requires_python:
        msg["Requires-Python"] = requires_python
    for extra in extras:
        msg["Provides-Extra"] = extra
    for req in requires_dist:
        msg["Requires-Dist"] = req
    return msg.as_string()


def pep621_metadata(pyproject: bytes, name: str, version: str, where: str) -> str | None:
    """Core metadata from a static `[project]` table; None when its dependencies are dynamic.

    `version` is the one the artifact states (an sdist's file name, a git source's matrix pin): a
    dynamic version does not make the dependencies dynamic.
    """
    try:
        data = tomllib.loads(pyproject.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"{where}: pyproject.toml is not valid TOML: {exc}") from None
    project = data.get("project")
    if not isinstance(project, dict):
        return None
    dynamic = project.get("dynamic", [])
    if not isinstance(dynamic, list) or {"dependencies", "optional-dependencies"} & set(dynamic):
        return None
    declared = project.get("name")
    if not isinstance(declared, str) or canonicalize_name(declared) != canonicalize_name(name):
        raise BadInput(f"{where}: pyproject.toml [project] name is {declared!r}, expected {name!r}")
    requires = requirement_list(project.get("dependencies", []), where, "dependencies")
    optional = project.get("optional-dependencies", {})
    if not isinstance(optional, dict):
        raise BadInput(f"{where}: pyproject.toml [project] optional-dependencies is not a table")
    extras = []
    for extra, reqs in optional.items():
        extra_name = canonicalize_name(str(extra))
        extras.append(extra_name)
        for req in requirement_list(reqs, where, f"optional-dependencies.{extra}"):
            parsed = Requirement(req)
            marker = f"({parsed.marker}) and " if parsed.marker else ""
            parsed.marker = None
            requires.append(f'{parsed}; {marker}extra == "{extra_name}"')
    python = project.get("requires-python")
    if python is not None and not isinstance(python, str):
        raise BadInput(f"{where}: pyproject.toml [project] requires-python is not a string")
    return core_metadata_text(declared, version, requires, python, extras)


def requirement_list(value: Any, where: str, key: str, table: str = "project") -> list[str]:
    """A pyproject.toml list of PEP 508 strings (`[table] key`), checked; BadInput naming it otherwise."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadInput(f"{where}: pyproject.toml [{table}] {key} is not a list of strings")
    for text in value:
        try:
            Requirement(text)
        except InvalidRequirement as exc:
            raise BadInput(f"{where}: pyproject.toml [{table}] {key}: invalid requirement {text!r}: {exc}") from None
    return list(value)



def sdist_metadata(path: Path, project: str, filename: str, version: str, index_url: str | None,
                   installer: BuildEnvInstaller | None = None) -> SourceMetadata:
    """The sdist's metadata by the first route that answers (module docstring)."""
    pkg_info = read_sdist_pkg_info(path, project, filename)
    try:
        meta = CoreMetadata.parse(pkg_info)
    except ValueError:
        meta = None
    if meta is not None and is_static_pkg_info(meta):
        return SourceMetadata(pkg_info.decode("utf-8", "replace"), "pkg-info")
    pyproject = read_member(path, filename, "pyproject.toml")
    if pyproject is not None:
        text = pep621_metadata(pyproject, project, version, filename)
        if text is not None:
            return SourceMetadata(text, "pyproject")
    built = sdist_backend_metadata(path, filename, index_url, installer)
    check_described(built, project, filename)
    return SourceMetadata(built, "backend", BUILD_PYTHON)


def read_member(path: Path, filename: str, name: str) -> bytes | None:
    """`<top>/<name>` from the sdist, None if absent."""
    try:
        if filename.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                hits = [n for n in zf.namelist() if len(PurePosixPath(n).parts) == 2 and n.endswith("/" + name)]
                return zf.read(hits[0]) if len(hits) == 1 else None
        with tarfile.open(path, "r:*") as tf:
            hits = [m for m in tf.getmembers() if len(PurePosixPath(m.name).parts) == 2
                    and m.name.endswith("/" + name) and m.isfile()]
            handle = tf.extractfile(hits[0]) if len(hits) == 1 else None
            return handle.read() if handle is not None else None
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as exc:
        raise MetadataNotFound(f"{filename}: cannot read the sdist: {exc}") from exc


def sdist_backend_metadata(path: Path, filename: str, index_url: str | None,
                           installer: BuildEnvInstaller | None = None) -> str:
    """Unpack the sdist and ask its build backend (envbuilder.index.backend)."""
    with tempfile.TemporaryDirectory(prefix="envbuilder-sdist-") as tmp:
        return backend_metadata(_extract(path, filename, Path(tmp) / "src"), filename, index_url,
                                installer=installer)


def _extract(path: Path, filename: str, dest: Path) -> Path:
    """Unpack safely (no links out, no absolute paths); returns the single top directory."""
    dest.mkdir(parents=True)
    try:
        if filename.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                for name in zf.namelist():
                    if name.startswith("/") or ".." in PurePosixPath(name).parts:
                        raise MetadataNotFound(f"{filename}: member {name!r} leaves the archive")
                zf.extractall(dest)
        else:
            with tarfile.open(path, "r:*") as tf:
                tf.extractall(dest, filter="data")
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError) as exc:
        raise MetadataNotFound(f"{filename}: cannot unpack the sdist: {exc}") from exc
    tops = [p for p in dest.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise MetadataNotFound(f"{filename}: expected one top directory, found {len(tops)}")
    return tops[0]
