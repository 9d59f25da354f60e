"""What an export lists: the same choice for every format, so the three files never disagree.

Every locked package is listed with the files the target may install. A source build lists only
its sdist, because its recipe says "build from this sdist" and a wheel of another build would not
be the locked one. `skip_source_builds` leaves source builds out (an image builds each in its own
stage and installs the rest from the export); the exports then name what they left out, so a
package never disappears silently.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName, canonicalize_name

from envbuilder.errors import BadInput
from envbuilder.lock.model import Artifact, Lock, LockedPackage


@dataclass(frozen=True)
class Entry:
    """One package as the exports list it."""

    package: LockedPackage
    artifacts: tuple[Artifact, ...]

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.package.name)

    @property
    def version(self) -> str:
        return self.package.version

    @property
    def is_git(self) -> bool:
        return self.package.source.git is not None

    @property
    def is_source_build(self) -> bool:
        return self.package.build is not None

    @property
    def wheels(self) -> tuple[Artifact, ...]:
        return tuple(a for a in self.artifacts if a.kind == "wheel")

    @property
    def sdist(self) -> Artifact | None:
        return next((a for a in self.artifacts if a.kind == "sdist"), None)

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"

    def dependency_names(self) -> list[NormalizedName]:
        """Names of the packages this one depends on."""
        return sorted(self.dependency_specs())

    def dependency_specs(self) -> dict[NormalizedName, str]:
        """Dependency name -> specifier ('*' when unconstrained), as the lock records them."""
        out: dict[NormalizedName, str] = {}
        for text in self.package.dependencies:
            name, spec = _split_requirement(text)
            out[name] = ",".join(filter(None, (out.get(name, "").strip("*"), spec))) or "*"
        return dict(sorted(out.items()))


@dataclass(frozen=True)
class Selection:
    lock: Lock
    entries: tuple[Entry, ...]
    skipped: tuple[Entry, ...] = ()

    @property
    def names(self) -> set[NormalizedName]:
        return {e.name for e in self.entries}


def _split_requirement(text: str) -> tuple[NormalizedName, str]:
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return canonicalize_name(text.split()[0]), ""
    return canonicalize_name(requirement.name), str(requirement.specifier)


def _entry(lock_origin: str, package: LockedPackage) -> Entry:
    if package.source.git is not None:
        if not package.source.commit:
            raise BadInput(f"{lock_origin}: package {package.name!r}: key 'source.commit' is missing "
                           "(a git source must be locked to a full commit)")
        return Entry(package, ())
    artifacts = tuple(sorted(package.artifacts))
    if package.build is not None:
        artifacts = tuple(a for a in artifacts if a.kind == "sdist")
    if not artifacts:
        what = "an sdist to build from" if package.build is not None else "artifacts"
        raise BadInput(f"{lock_origin}: package {package.name!r}: key 'artifacts': the lock has no {what}; "
                       "re-run `envbuilder lock`")
    unhashed = [a.filename for a in artifacts if not a.sha256]
    if unhashed:
        raise BadInput(f"{lock_origin}: package {package.name!r}: key 'artifacts': no sha256 for "
                       f"{', '.join(unhashed)}; an export cannot pin what the lock did not hash")
    return Entry(package, artifacts)


def select(lock: Lock, *, skip_source_builds: bool = False, origin: str = "<lock>") -> Selection:
    """The packages an export lists, sorted by normalised name."""
    entries = sorted((_entry(origin, p) for p in lock.packages), key=lambda e: e.name)
    kept = tuple(e for e in entries if not (skip_source_builds and e.is_source_build))
    skipped = tuple(e for e in entries if skip_source_builds and e.is_source_build)
    return Selection(lock, kept, skipped)
