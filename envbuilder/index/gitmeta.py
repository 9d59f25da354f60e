"""A git source's commit verified, and its version and dependencies read from that commit's own tree.

The bare partial clone (envbuilder.index.git) holds commits and trees; reading
`<subdirectory>/pyproject.toml` fetches that one blob, never a checkout. The `[project]` table is
read as for an sdist (PEP 621, envbuilder.index.sourcemeta); a matrix `metadata:` override wins
over it. When the repository is out of reach and the matrix's override gives both `version` and
`requires_dist`, the lock goes on with it and records no tree (the commit is then unverified);
otherwise the source cannot be read, which is an Unreachable (exit 3). A commit the repository
does not have is a CommitNotFound (exit 2) naming URL and commit.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from envbuilder.errors import BadInput, Unreachable
from envbuilder.index.git import GitCommit, GitSources
from envbuilder.index.models import CoreMetadata
from envbuilder.index.sourcemeta import pep621_metadata
from envbuilder.matrix.schema import StaticMetadata


@dataclass(frozen=True)
class GitSource:
    """The verified commit (None when out of reach and overridden) and the metadata used."""

    commit: GitCommit | None
    metadata: CoreMetadata
    origin: str  # "matrix" or "pyproject"


def read_git_source(sources: GitSources, name: str, url: str, rev: str, subdirectory: str | None,
                    override: StaticMetadata | None) -> GitSource:
    """Each field the override gives wins (`version`, `requires_dist`); the rest comes from the tree."""
    deps_given = override is not None and "requires_dist" in override.model_fields_set
    try:
        commit = sources.verify(url, rev, subdirectory)
    except Unreachable:
        if override is None or override.version is None or not deps_given:
            raise
        meta = CoreMetadata(name, override.version, tuple(override.requires_dist), override.requires_python)
        return GitSource(None, meta, "matrix")
    version = override.version if override is not None and override.version else None
    if version is None:
        version = _source_version(sources, name, url, rev, subdirectory)
    if deps_given:
        assert override is not None
        meta = CoreMetadata(name, version, tuple(override.requires_dist), override.requires_python)
        return GitSource(commit, meta, "matrix")
    return GitSource(commit, source_metadata(sources, name, url, rev, subdirectory, version), "pyproject")


def _where(url: str, rev: str, subdirectory: str | None) -> str:
    return f"{url} at {rev}" + (f" ({subdirectory}/pyproject.toml)" if subdirectory else " (pyproject.toml)")


def _pyproject(sources: GitSources, url: str, rev: str, subdirectory: str | None) -> bytes:
    path = f"{subdirectory.strip('/')}/pyproject.toml" if subdirectory else "pyproject.toml"
    data = sources.read_file(url, rev, path)
    if data is None:
        raise BadInput(f"{url} at {rev} has no {path}: give `metadata:` (version, requires_dist) in the matrix")
    return data


def _source_version(sources: GitSources, name: str, url: str, rev: str, subdirectory: str | None) -> str:
    data = _pyproject(sources, url, rev, subdirectory)
    try:
        project = tomllib.loads(data.decode("utf-8")).get("project", {})
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"{_where(url, rev, subdirectory)}: not valid TOML: {exc}") from None
    version = project.get("version") if isinstance(project, dict) else None
    if not isinstance(version, str):
        raise BadInput(f"{_where(url, rev, subdirectory)}: the version of {name} is dynamic (set by its build "
                       "backend); give it in the matrix: `metadata: {version: '...'}`")
    return version


def source_metadata(sources: GitSources, name: str, url: str, rev: str, subdirectory: str | None,
                    version: str) -> CoreMetadata:
    """The commit's static `[project]` table as core metadata; BadInput when it is dynamic."""
    data = _pyproject(sources, url, rev, subdirectory)
    where = _where(url, rev, subdirectory)
    text = pep621_metadata(data, name, version, where)
    if text is None:
        raise BadInput(f"{where}: the dependencies of {name} are dynamic (computed by its build backend); "
                       "give them in the matrix: `metadata: {requires_dist: [...]}`")
    return CoreMetadata.parse(text)
