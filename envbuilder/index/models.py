"""Typed values the index client hands out: one distribution file, and its core metadata.

FileInfo is built for thousands of files per project page (pydantic-core lists ~15,000), so the
version is read from the filename by a split plus a memoised parse (files share few versions), and
wheel tags are parsed only when asked for: a resolver looks at the tags of few versions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Literal

from packaging.metadata import parse_email
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, parse_tag
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

FileKind = Literal["wheel", "sdist"]
SDIST_SUFFIXES = (".tar.gz", ".zip")
DIST_SUFFIXES = (".whl", *SDIST_SUFFIXES)  # what a page may list that envbuilder uses


@lru_cache(maxsize=1 << 16)
def _parse_version(text: str) -> Version | None:
    """Version parsing is the hot spot of reading pages; most files share a few versions."""
    try:
        return Version(text)
    except InvalidVersion:
        return None


@lru_cache(maxsize=1 << 14)
def _parse_tags(triple: str) -> frozenset[Tag]:
    """Tags of a wheel's "python-abi-platform" field; shared by every version built the same way."""
    try:
        return parse_tag(triple)
    except ValueError:
        return frozenset()


def file_kind(filename: str) -> FileKind | None:
    """wheel, sdist, or None for anything else on a page (eggs, .exe installers, .tar.bz2)."""
    if filename.endswith(".whl"):
        return "wheel"
    if filename.endswith(SDIST_SUFFIXES):
        return "sdist"
    return None


@dataclass(frozen=True)
class FileInfo:
    """One distribution file as an index lists it.

    `core_metadata` is True when the index offers PEP 658/714 metadata; `core_metadata_sha256`
    is its hash when the index gave one. `sha256` is None only for indexes that publish no
    sha256 (then downloads are hashed locally and not verified against the index).
    """

    project: NormalizedName
    filename: str
    url: str
    sha256: str | None
    size: int | None = None
    requires_python: str | None = None
    yanked: str | None = None  # the reason ("" when yanked without one); None = not yanked
    upload_time: str | None = None
    core_metadata: bool = False
    core_metadata_sha256: str | None = None
    index: str = "pypi"

    @property
    def kind(self) -> FileKind:
        kind = file_kind(self.filename)
        assert kind is not None, self.filename  # pages only ever hold wheels and sdists
        return kind

    @property
    def is_yanked(self) -> bool:
        return self.yanked is not None

    @cached_property
    def version_or_none(self) -> Version | None:
        """The version from the filename, None if it is not PEP 440 (old uploads)."""
        name = self.filename
        if name.endswith(".whl"):
            text = name.split("-")[1] if name.count("-") >= 4 else ""
        else:
            text = name.removesuffix(".tar.gz").removesuffix(".zip").rpartition("-")[2]
        return _parse_version(text)

    @property
    def valid(self) -> bool:
        """False for files whose version packaging cannot parse; skip those."""
        return self.version_or_none is not None

    @property
    def version(self) -> Version:
        """The version from the filename; raises ValueError for unparseable names (see `valid`)."""
        version = self.version_or_none
        if version is None:
            raise ValueError(f"cannot parse a version from {self.filename!r}")
        return version

    @property
    def tags(self) -> frozenset[Tag]:
        """The wheel's compatibility tags; empty for sdists and malformed wheel names."""
        if not self.filename.endswith(".whl"):
            return frozenset()
        parts = self.filename[:-4].split("-")
        return _parse_tags("-".join(parts[-3:])) if len(parts) in (5, 6) else frozenset()

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileInfo:
        return cls(**data)


@dataclass(frozen=True)
class CoreMetadata:
    """The parts of a distribution's core metadata a resolver needs."""

    name: str
    version: str
    requires_dist: tuple[str, ...] = ()
    requires_python: str | None = None
    provides_extra: tuple[str, ...] = ()
    metadata_version: str | None = None
    dynamic: tuple[str, ...] = ()
    # for an sdist: the route its dependencies were read by (envbuilder.index.sourcemeta), and the
    # Python a build backend ran under when that route was "backend"
    origin: str | None = None
    build_python: str | None = None

    @property
    def project(self) -> NormalizedName:
        return canonicalize_name(self.name)

    def requirements(self) -> list[Requirement]:
        """Requires-Dist parsed; a malformed entry raises InvalidRequirement naming it."""
        out = []
        for line in self.requires_dist:
            try:
                out.append(Requirement(line))
            except InvalidRequirement as exc:
                raise InvalidRequirement(f"{self.name} {self.version}: bad Requires-Dist {line!r}: {exc}") from exc
        return out

    @classmethod
    def parse(cls, data: bytes | str) -> CoreMetadata:
        """Parse METADATA / PKG-INFO text; lenient, as installers are, about unknown fields."""
        raw, _unparsed = parse_email(data)
        name, version = raw.get("name"), raw.get("version")
        if not name or not version:
            raise ValueError("core metadata without Name or Version")
        return cls(
            name=name,
            version=version,
            requires_dist=tuple(raw.get("requires_dist", ())),
            requires_python=raw.get("requires_python"),
            provides_extra=tuple(raw.get("provides_extra", ())),
            metadata_version=raw.get("metadata_version"),
            dynamic=tuple(d.lower() for d in raw.get("dynamic", ())),
        )
