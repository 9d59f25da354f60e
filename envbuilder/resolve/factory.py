"""Makes candidates and dependency requirements for the provider, for the target environment.

The split follows pip's resolvelib integration: the provider stays a thin adapter and this
module knows about indexes, overrides, static metadata, yanked files and the ABI hook.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import Callable, Iterator, Mapping, Protocol

from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from envbuilder.errors import BadInput
from envbuilder.index.errors import DynamicMetadata
from envbuilder.index.git import GitSources
from envbuilder.index.gitmeta import read_git_source
from envbuilder.index.models import CoreMetadata, FileInfo
from envbuilder.matrix import Target
from envbuilder.matrix.schema import PackageSpec
from envbuilder.resolve.candidates import Candidate
from envbuilder.resolve.environment import TargetEnvironment
from envbuilder.resolve.hooks import ResolverHook
from envbuilder.resolve.requirements import Req


class Finder(Protocol):
    def files(self, project: str, index: str = "pypi") -> list[FileInfo]: ...

    def metadata(self, file: FileInfo) -> CoreMetadata: ...


def split_key(key: str) -> tuple[NormalizedName, frozenset[str]]:
    name, _, rest = key.partition("[")
    extras = frozenset(e for e in rest.rstrip("]").split(",") if e)
    return canonicalize_name(name), extras


class Factory:
    def __init__(self, target: Target, finder: Finder, hook: ResolverHook,
                 preferred: Mapping[str, str] | None = None):
        self.target = target
        self.env = TargetEnvironment(target.platform)
        self.finder = finder
        self.hook = hook
        self.specs: dict[NormalizedName, PackageSpec] = {
            canonicalize_name(n): s for n, s in target.packages.items()}
        self.preferred = {canonicalize_name(n): Version(v) for n, v in (preferred or {}).items()}
        self.rejected: dict[NormalizedName, list[str]] = defaultdict(list)
        self.no_wheel: dict[tuple[NormalizedName, Version], str] = {}  # why an sdist is the only candidate
        # (candidate key, version) -> its requirements; every candidate tried, not only the pinned
        self.edges: dict[tuple[str, Version], list[Req]] = {}
        # (name, version) -> where a source's dependencies came from: "matrix", "pkg-info", "pyproject",
        # "git-pyproject" or "backend", and the Python a backend ran under
        self.origins: dict[tuple[NormalizedName, Version], tuple[str, str | None]] = {}
        self._git_metadata: dict[NormalizedName, CoreMetadata] = {}
        self._git_candidates: dict[NormalizedName, Candidate] = {}
        self._with_extras: dict[tuple[int, frozenset[str]], Candidate] = {}
        self._python = self.env.markers["python_full_version"]

    # --- requirements ---------------------------------------------------------------------

    def root_requirements(self) -> list[Req]:
        roots = []
        for name, spec in self.specs.items():
            if spec.marker and not self.env.evaluate(Marker(spec.marker)):
                continue
            why = "the matrix" + (" (override)" if spec.override else "")
            roots.append(Req(name, SpecifierSet(spec.version), frozenset(spec.extras), why))
        return roots

    def is_direct(self, name: str) -> bool:
        return canonicalize_name(name) in self.specs

    def dependencies(self, candidate: Candidate) -> list[Req]:
        parent = f"{candidate.key} {candidate.version}"
        deps = [Req(candidate.name, SpecifierSet(f"=={candidate.version}"), why=parent)] if candidate.extras else []
        for text in self._metadata(candidate).requires_dist:
            req = self._parse_dependency(text, candidate)
            if req is not None and req.name != candidate.name:
                deps.append(self._apply_override(req, parent))
        for text, reason in self.hook.extra_requirements(str(candidate.name), str(candidate.version),
                                                         candidate.filename):
            deps.append(Req.parse(text, why=f"{parent}: {reason}"))
        self.edges[(candidate.key, candidate.version)] = deps
        self.prefetch(deps)
        return deps

    def _parse_dependency(self, text: str, candidate: Candidate) -> Req | None:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise BadInput(f"{candidate.name} {candidate.version}: invalid Requires-Dist {text!r}: {exc}") from None
        if not self.env.evaluate(req.marker, candidate.extras):
            return None
        extras = frozenset(canonicalize_name(e) for e in req.extras)
        return Req(canonicalize_name(req.name), req.specifier, extras, f"{candidate.key} {candidate.version}")

    def _apply_override(self, req: Req, parent: str) -> Req:
        """An override replaces what every dependent says about that package (uv's override-dependencies)."""
        spec = self.specs.get(req.name)
        if spec is None or not spec.override:
            return req
        return Req(req.name, SpecifierSet(spec.version), req.extras, parent, overridden_from=str(req.specifier))

    def _metadata(self, candidate: Candidate) -> CoreMetadata:
        spec = self.specs.get(candidate.name)
        if candidate.kind == "git":
            return self._git_metadata[candidate.name]
        if spec is not None and spec.metadata is not None and candidate.kind == "sdist":
            self.origins[(candidate.name, candidate.version)] = ("matrix", None)
            return CoreMetadata(str(candidate.name), str(candidate.version), spec.metadata.requires_dist,
                                spec.metadata.requires_python)
        assert candidate.file is not None
        try:
            meta = self.finder.metadata(candidate.file)
        except DynamicMetadata as exc:
            why = self.no_wheel.get((candidate.name, candidate.version))
            if why is None:
                raise
            raise DynamicMetadata(
                f"{candidate.name} {candidate.version} has no wheel that installs on the target: {why}. "
                f"Its sdist is all that is left, and building it is not the fix: if the target's glibc is newer, "
                f"correct platform.libc; else pin {candidate.name} to a version with a wheel for it. (To build "
                f"it from source anyway: {exc})") from None
        if meta.origin is not None:
            self.origins[(candidate.name, candidate.version)] = (meta.origin, meta.build_python)
        return meta

    def prefetch(self, deps: list[Req]) -> None:
        prefetch = getattr(self.finder, "prefetch", None)
        if prefetch is not None:
            prefetch([(str(d.name), self._index_of(d.name), str(d.specifier)) for d in deps])

    # --- candidates -----------------------------------------------------------------------

    def find(self, key: str, reqs: list[Req], incompatible: set[int]) -> Callable[[], Iterator[Candidate]]:
        """Candidates newest first (the locked version first), built lazily as resolvelib asks."""
        name, extras = split_key(key)
        spec = self.specs.get(name)
        if spec is not None and spec.git is not None:
            git = self._git_candidate(name, spec)
            fits = all(r.specifier.contains(git.version, prereleases=True) for r in reqs)
            return lambda: iter([self._extras(git, extras)] if fits else [])
        allow_yanked = any(r.pinned() for r in reqs)
        versions = self._matching_versions(name, reqs, pre=False) or self._matching_versions(name, reqs, pre=True)
        versions = list(versions)
        preferred = self.preferred.get(name)
        if preferred in versions:
            versions.remove(preferred)
            versions.insert(0, preferred)

        def matches() -> Iterator[Candidate]:
            for version in versions:
                for candidate in self._version_candidates(name, version, allow_yanked):
                    if id(candidate) not in incompatible:
                        yield self._extras(candidate, extras)
        return matches

    def _matching_versions(self, name: NormalizedName, reqs: list[Req], pre: bool) -> list[Version]:
        """Pre-releases only where a specifier names one, or where nothing else matches (PEP 440)."""
        allowed = [self._allowed(name, str(r.specifier), pre) for r in reqs]
        return [v for v in self._versions(name) if all(v in a for a in allowed)]

    @lru_cache(maxsize=None)
    def _allowed(self, name: NormalizedName, specifier: str, pre: bool) -> frozenset[Version]:
        """The versions one requirement admits; cached, since resolvelib asks again and again."""
        spec = SpecifierSet(specifier)
        return frozenset(spec.filter(self._versions(name), prereleases=pre or _names_pre(spec)))

    def _extras(self, candidate: Candidate, extras: frozenset[str]) -> Candidate:
        """One object per (candidate, extras), so resolvelib's incompatibility bookkeeping holds."""
        if not extras:
            return candidate
        key = (id(candidate), extras)
        if key not in self._with_extras:
            self._with_extras[key] = candidate.with_extras(extras)
        return self._with_extras[key]

    def _index_of(self, name: NormalizedName) -> str:
        spec = self.specs.get(name)
        return spec.index if spec is not None and spec.index else "pypi"

    @lru_cache(maxsize=None)
    def _files_by_version(self, name: NormalizedName) -> dict[Version, tuple[FileInfo, ...]]:
        grouped: dict[Version, list[FileInfo]] = defaultdict(list)
        for f in self.finder.files(name, self._index_of(name)):
            if f.version_or_none is not None:  # pre-PEP 440 uploads are never candidates
                grouped[f.version_or_none].append(f)
        return {version: tuple(files) for version, files in grouped.items()}

    @lru_cache(maxsize=None)
    def _versions(self, name: NormalizedName) -> tuple[Version, ...]:
        return tuple(sorted(self._files_by_version(name), reverse=True))

    @lru_cache(maxsize=None)
    def _version_candidates(self, name: NormalizedName, version: Version, allow_yanked: bool) -> tuple[Candidate, ...]:
        spec = self.specs.get(name)
        mode = spec.build.from_ if spec is not None and spec.build is not None else "auto"
        files = [f for f in self._files_by_version(name)[version]
                 if f.valid and (allow_yanked or not f.is_yanked) and _python_ok(f.requires_python, self._python)]
        index = self._index_of(name)
        ranked = sorted((r, f.filename, f) for f in files if f.kind == "wheel"
                        and (r := self.env.wheel_rank(f.tags)) is not None)
        wheels = tuple(f for _, _, f in ranked)
        sdists = [f for f in files if f.kind == "sdist"]
        if sdists and not wheels and mode == "auto" and any(f.kind == "wheel" for f in files):
            self.no_wheel[(name, version)] = self.env.why_no_wheel([f.tags for f in files if f.kind == "wheel"])
        options: list[Candidate] = []
        if wheels and mode in ("wheel", "any", "auto"):
            options.append(Candidate(name, version, "wheel", wheels, index=index))
        if sdists and (mode in ("sdist", "any") or (mode == "auto" and not wheels)):
            options.append(Candidate(name, version, "sdist", (sdists[0],), index=index))
        return tuple(c for c in options if self._admit(c))

    def _admit(self, candidate: Candidate) -> bool:
        reason = self.hook.admissible(str(candidate.name), str(candidate.version), candidate.filename)
        if reason:
            self.rejected[candidate.name].append(f"{candidate.version} ({candidate.kind}): {reason}")
        return reason is None

    def _git_candidate(self, name: NormalizedName, spec: PackageSpec) -> Candidate:
        """The commit verified in the cached partial clone; its metadata from its tree or the override."""
        assert spec.git is not None and spec.rev is not None
        if name in self._git_candidates:
            return self._git_candidates[name]
        client = getattr(self.finder, "client", self.finder)  # the IndexClient behind a PrefetchingFinder
        sources = GitSources(getattr(client, "cache", None), offline=bool(getattr(client, "offline", False)))
        index_url = client.index_url(self._index_of(name)) if hasattr(client, "index_url") else None
        found = read_git_source(sources, str(name), spec.git, spec.rev, spec.subdirectory, spec.metadata, index_url)
        try:
            version = Version(found.metadata.version)
        except InvalidVersion:
            raise BadInput(f"{name}: {spec.git} at {spec.rev} states version {found.metadata.version!r}, "
                           "not a PEP 440 version") from None
        self._git_metadata[name] = found.metadata
        self.origins[(name, version)] = (found.origin, found.python)
        self._git_candidates[name] = Candidate(name, version, "git", git_url=spec.git, git_commit=spec.rev,
                                               subdirectory=spec.subdirectory,
                                               git_tree=found.commit.tree if found.commit else None)
        return self._git_candidates[name]


@lru_cache(maxsize=4096)
def _python_ok(requires_python: str | None, python: str) -> bool:
    if not requires_python:
        return True
    try:
        return SpecifierSet(requires_python).contains(python, prereleases=True)
    except InvalidSpecifier:
        return True  # an unparseable Requires-Python is ignored, as pip does


@lru_cache(maxsize=4096)
def _names_pre(specifier: SpecifierSet) -> bool:
    for s in specifier:
        try:
            if Version(s.version.rstrip(".*")).is_prerelease:
                return True
        except InvalidVersion:
            continue
    return False
