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


def _source(sources: GitSources, name: str, spec: PackageSpec, rev: str, index_url: str | None) -> CoreMetadata:
    """What the source declares at `rev`, by the lock's own route (its pyproject, else its backend).

    The override's `version` is kept: a dynamic version would otherwise need a backend build just
    to be compared, and the lock uses the override's anyway."""
    assert spec.git is not None and spec.metadata is not None
    keep = StaticMetadata(version=spec.metadata.version) if spec.metadata.version else None
    return read_git_source(sources, name, spec.git, rev, spec.subdirectory, keep, index_url).metadata


def metadata_difference(sources: GitSources, name: str, spec: PackageSpec, rev: str,
                        index_url: str | None = None) -> MetadataDifference | None:
    """None without an override; otherwise what the source at `rev` says that the override does not."""
    override = spec.metadata
    if override is None:
        return None
    try:
        source = _source(sources, name, spec, rev, index_url)
    except BadInput as exc:
        return MetadataDifference(unreadable=str(exc))
    fields = []
    if override.requires_python and source.requires_python != override.requires_python:
        fields.append(f"requires-python: source {source.requires_python}, override {override.requires_python}")
    if "requires_dist" not in override.model_fields_set:
        return MetadataDifference(fields=tuple(fields))
    theirs, ours = _base(source.requires_dist), _base(override.requires_dist)
    return MetadataDifference(tuple(sorted(theirs - ours)), tuple(sorted(ours - theirs)), tuple(fields))
