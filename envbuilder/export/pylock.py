"""The lock as a PEP 751 `pylock.toml` (read by pip >= 26.1 and uv).

A single-use lock for one target: `environments` and `requires-python` say where it installs,
every package has its files with size and sha256, and the file URLs come from the user's index at
export time (the committed lock has none). What only envbuilder understands -- digests, build
recipes, ABI facets -- goes under `[tool.envbuilder]`, which installers must ignore.
The text is validated by `packaging.pylock` before it is returned, so an invalid file is a bug
here and never reaches an installer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import tomli_w
from packaging.pylock import Pylock, PylockValidationError

from envbuilder import __version__
from envbuilder.export import environment
from envbuilder.export.selection import Entry, Selection
from envbuilder.export.urls import Located
from envbuilder.lock.model import Artifact

CREATED_BY = "envbuilder"
FILE_NAME = re.compile(r"^pylock\.([^.]+)\.toml$")


def valid_file_name(name: str) -> bool:
    """PEP 751: `pylock.toml` or `pylock.<name>.toml` (lowercase prefix and suffix)."""
    return name == "pylock.toml" or bool(FILE_NAME.fullmatch(name))


def _file(artifact: Artifact, located: Located) -> dict[str, Any]:
    out: dict[str, Any] = {"name": artifact.filename, "url": located.url(artifact)}
    if artifact.size is not None:
        out["size"] = artifact.size
    out["hashes"] = {"sha256": artifact.sha256}
    return out


def _vcs(entry: Entry) -> dict[str, Any]:
    source = entry.package.source
    out: dict[str, Any] = {"type": "git", "url": source.git, "commit-id": source.commit}
    if source.subdirectory:
        out["subdirectory"] = source.subdirectory
    return out


def _package_tool(entry: Entry) -> dict[str, Any]:
    package = entry.package
    tool: dict[str, Any] = {}
    if entry.is_git:
        # PEP 751: no `version` for a source tree; keep the locked one where auditors can see it.
        tool["locked-version"] = package.version
    if package.requested:
        tool["requested"] = package.requested
    if package.build is not None:
        tool["build"] = package.build.to_dict()
    if package.facets is not None and package.facets.to_dict():
        tool["facets"] = package.facets.to_dict()
    return {"envbuilder": tool} if tool else {}


def _package(entry: Entry, located: Mapping[str, Located], names: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": entry.name}
    if not entry.is_git:
        out["version"] = entry.version
    if entry.package.marker:
        out["marker"] = entry.package.marker
    deps = [{"name": d} for d in entry.dependency_names() if d in names]
    if deps:
        out["dependencies"] = deps
    if entry.is_git:
        out["vcs"] = _vcs(entry)
    else:
        where = located[entry.name]
        out["index"] = where.index_url
        if entry.sdist is not None:
            out["sdist"] = _file(entry.sdist, where)
        if entry.wheels:
            out["wheels"] = [_file(w, where) for w in entry.wheels]
    tool = _package_tool(entry)
    if tool:
        out["tool"] = tool
    return out


def _tool(selection: Selection, origin: str) -> dict[str, Any]:
    lock = selection.lock
    tool: dict[str, Any] = {
        "version": __version__,
        "target": lock.target,
        "lock": origin,
        "lock-digest": lock.digest,
        "matrix-digest": lock.matrix_digest,
        "knowledge-digest": lock.knowledge_digest,
        "environment": {k: str(v) for k, v in sorted(lock.environment.items())},
    }
    if selection.skipped:
        tool["skipped-source-builds"] = [e.pin for e in selection.skipped]
    return {"envbuilder": tool}


def build(selection: Selection, located: Mapping[str, Located], origin: str = "<lock>") -> dict[str, Any]:
    """The pylock document as a dict, keys in the spec's order."""
    lock = selection.lock
    names = {str(n) for n in selection.names}
    return {
        "lock-version": "1.0",
        "environments": [environment.environment_marker(lock)],
        "requires-python": environment.requires_python(lock),
        "extras": [],
        "dependency-groups": [],
        "created-by": CREATED_BY,
        "packages": [_package(e, located, names) for e in selection.entries],
        "tool": _tool(selection, origin),
    }


def render(selection: Selection, located: Mapping[str, Located], origin: str = "<lock>") -> str:
    document = build(selection, located, origin)
    try:
        Pylock.from_dict(document)
    except PylockValidationError as exc:  # pragma: no cover - a bug in this module, not user input
        raise AssertionError(f"envbuilder wrote an invalid pylock.toml: {exc}") from exc
    return tomli_w.dumps(document)
