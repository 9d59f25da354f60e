"""A candidate is one way to install one version: a set of wheels, a source build, or a git commit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from packaging.utils import NormalizedName
from packaging.version import Version

from envbuilder.index.models import FileInfo
from envbuilder.resolve.requirements import identifier

Kind = Literal["wheel", "sdist", "git"]


@dataclass(frozen=True, eq=False)
class Candidate:
    name: NormalizedName
    version: Version
    kind: Kind
    files: tuple[FileInfo, ...] = ()  # wheels the target may install (best first), or the one sdist
    extras: frozenset[str] = frozenset()
    index: str | None = None
    git_url: str | None = None
    git_commit: str | None = None
    subdirectory: str | None = None
    git_tree: str | None = None  # the commit's root tree, when the commit was verified

    @property
    def key(self) -> str:
        return identifier(self.name, self.extras)

    @property
    def file(self) -> FileInfo | None:
        """The artifact whose metadata and ABI facets stand for this candidate."""
        return self.files[0] if self.files else None

    @property
    def filename(self) -> str | None:
        """None for builds from source: they take the facets of their build environment."""
        return self.file.filename if self.kind == "wheel" and self.file else None

    def with_extras(self, extras: frozenset[str]) -> "Candidate":
        return Candidate(self.name, self.version, self.kind, self.files, extras, self.index,
                         self.git_url, self.git_commit, self.subdirectory, self.git_tree)

    def __repr__(self) -> str:
        return f"{self.key} {self.version} ({self.kind})"
