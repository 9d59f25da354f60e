"""How a git source's own metadata differs from the matrix's `metadata:` override at a commit.

The override wins at lock time (envbuilder.index.gitmeta), so a bump that keeps it would silently
lock the old hand-copied requirements against new code. The difference is printed and put in the
PR body: a reviewer sees what the source now declares and updates (or drops) the override.
"""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbuilder.bump.model import MetadataDifference
from envbuilder.errors import BadInput
from envbuilder.index.git import GitSources
from envbuilder.index.gitmeta import read_git_source
from envbuilder.index.models import CoreMetadata
from envbuilder.matrix.schema import PackageSpec, StaticMetadata


def _key(requirement: str) -> str:
    """A requirement in one spelling: canonical name, sorted extras, normalised specifier and marker."""
    try:
        req = Requirement(requirement)
    except InvalidRequirement:
        return requirement.strip()
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    marker = f"; {req.marker}" if req.marker else ""
    return f"{canonicalize_name(req.name)}{extras}{req.specifier}{marker}"


def _base(requirements: tuple[str, ...]) -> set[str]:
    """Requirements outside any extra: the ones an install without extras gets, as the override lists."""
    return {_key(r) for r in requirements if not _in_extra(r)}


def _in_extra(requirement: str) -> bool:
    try:
        marker = Requirement(requirement).marker
    except InvalidRequirement:
        return False
    return marker is not None and "extra" in str(marker)


def _source(sources: GitSources, name: str, spec: PackageSpec, rev: str) -> tuple[CoreMetadata, bool]:
    """What the source declares, and whether its version is its own (False: dynamic, the override's used)."""
    assert spec.git is not None and spec.metadata is not None
    try:
        return read_git_source(sources, name, spec.git, rev, spec.subdirectory, None).metadata, True
    except BadInput:
        if not spec.metadata.version:
            raise
        only_version = StaticMetadata(version=spec.metadata.version)
        return read_git_source(sources, name, spec.git, rev, spec.subdirectory, only_version).metadata, False


def metadata_difference(sources: GitSources, name: str, spec: PackageSpec, rev: str) -> MetadataDifference | None:
    """None without an override; otherwise what the source at `rev` says that the override does not."""
    override = spec.metadata
    if override is None:
        return None
    try:
        source, own_version = _source(sources, name, spec, rev)
    except BadInput as exc:
        return MetadataDifference(unreadable=str(exc))
    fields = []
    if not own_version:
        fields.append(f"version: dynamic in the source (its build backend sets it); the override's {override.version} "
                      "is locked")
    elif override.version and source.version != override.version:
        fields.append(f"version: source {source.version}, override {override.version}")
    if override.requires_python and source.requires_python != override.requires_python:
        fields.append(f"requires-python: source {source.requires_python}, override {override.requires_python}")
    if "requires_dist" not in override.model_fields_set:
        return MetadataDifference(fields=tuple(fields))
    theirs, ours = _base(source.requires_dist), _base(override.requires_dist)
    return MetadataDifference(tuple(sorted(theirs - ours)), tuple(sorted(ours - theirs)), tuple(fields))
