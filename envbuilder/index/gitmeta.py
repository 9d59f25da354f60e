"""A git source's commit verified, and its version and dependencies read from that commit's own source.

The bare partial clone (envbuilder.index.git) holds commits and trees. Cheapest route first:

1. `<subdirectory>/pyproject.toml` read as one blob (no checkout): a static `[project]` table with
   a static version and dependencies answers, as for an sdist (PEP 621, envbuilder.index.sourcemeta).
2. Otherwise (setup.py / setup.cfg, dynamic dependencies, or a version from setuptools-scm,
   hatch-vcs or a version file) the backend builds the metadata at that commit
   (envbuilder.index.gitbuild), with the Python at hand; the result is cached per commit.

A matrix `metadata:` override wins field by field. When the repository is out of reach and the
override gives both `version` and `requires_dist`, the lock goes on with it and records no tree
(the commit is then unverified); otherwise the source cannot be read, which is an Unreachable
(exit 3). A commit the repository does not have is a CommitNotFound (exit 2) naming URL and commit.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass

from envbuilder.errors import BadInput, Unreachable
from envbuilder.index.git import GitCommit, GitSources
from envbuilder.index.gitbuild import git_backend_metadata
from envbuilder.index.models import CoreMetadata
from envbuilder.index.sourcemeta import pep621_metadata
from envbuilder.matrix.schema import StaticMetadata


@dataclass(frozen=True)
class GitSource:
    """The verified commit (None when out of reach and overridden) and the metadata used.

    `origin` is "matrix", "pyproject" or "backend"; `python` the build Python of the backend route.
    """

    commit: GitCommit | None
    metadata: CoreMetadata
    origin: str
    python: str | None = None


def read_git_source(sources: GitSources, name: str, url: str, rev: str, subdirectory: str | None,
                    override: StaticMetadata | None, index_url: str | None = None) -> GitSource:
    """Each field the override gives wins (`version`, `requires_dist`); the rest comes from the source.

    `index_url` is where the backend route's build requirements come from.
    """
    deps_given = override is not None and "requires_dist" in override.model_fields_set
    version = override.version if override is not None and override.version else None
    try:
        commit = sources.verify(url, rev, subdirectory)
    except Unreachable:
        if override is None or version is None or not deps_given:
            raise
        return GitSource(None, _overridden(name, version, override), "matrix")
    if deps_given and version is not None:
        assert override is not None
        return GitSource(commit, _overridden(name, version, override), "matrix")
    found = _from_source(sources, name, url, rev, subdirectory, version, index_url)
    if deps_given:
        assert override is not None
        return GitSource(commit, _overridden(name, found.metadata.version, override), "matrix")
    return dataclasses.replace(found, commit=commit)


def _overridden(name: str, version: str, override: StaticMetadata) -> CoreMetadata:
    return CoreMetadata(name, version, tuple(override.requires_dist), override.requires_python)


def _from_source(sources: GitSources, name: str, url: str, rev: str, subdirectory: str | None,
                 version: str | None, index_url: str | None) -> GitSource:
    """The static `[project]` table when it answers everything, else the backend at the commit."""
    where = _where(url, rev, subdirectory)
    pyproject = sources.read_file(url, rev, _pyproject_path(subdirectory))
    static_version = version or (_static_version(pyproject, where) if pyproject is not None else None)
    if pyproject is not None and static_version is not None:
        text = pep621_metadata(pyproject, name, static_version, where)
        if text is not None:
            return GitSource(None, CoreMetadata.parse(text), "pyproject")
    built = git_backend_metadata(sources, name, url, rev, subdirectory, index_url)
    meta = CoreMetadata.parse(built.text)
    if version is not None:  # the override's version wins over the backend's
        meta = dataclasses.replace(meta, version=version)
    return GitSource(None, meta, "backend", built.python)


def _where(url: str, rev: str, subdirectory: str | None) -> str:
    return f"{url} at {rev} ({_pyproject_path(subdirectory)})"


def _pyproject_path(subdirectory: str | None) -> str:
    return f"{subdirectory.strip('/')}/pyproject.toml" if subdirectory else "pyproject.toml"


def _static_version(pyproject: bytes, where: str) -> str | None:
    """`[project] version` when the file states it; None when it is dynamic or absent."""
    try:
        project = tomllib.loads(pyproject.decode("utf-8")).get("project", {})
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"{where}: not valid TOML: {exc}") from None
    version = project.get("version") if isinstance(project, dict) else None
    return version if isinstance(version, str) else None
