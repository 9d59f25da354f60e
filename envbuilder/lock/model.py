"""The lock: a content-addressed, host-free record of one target's resolved closure.

Indexes are named, artifacts are filename + size + sha256, git sources are full commits, so a
lock installs unchanged from any mirror. `to_dict` is the single canonical form: the TOML
writer, the digest and every export start from it.

A lock is untrusted input (it arrives in pull requests), so this module is also its schema: the
type of every field says which values may appear in a lock file, and `LOCK_SCHEMA` (pydantic)
checks a parsed file against those types before anything else sees it. Constructing these
dataclasses in Python does not validate (the resolver and tests build them freely); reading a file
(`envbuilder.lock.io`) and writing one with `envbuilder lock` do. To add a field: declare it here
with one of the constrained types below (its TOML key as `Field(alias=...)` where the two differ)
and emit it in `to_dict`; the reader, the error messages and the fuzz test pick it up.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (InvalidSdistFilename, InvalidWheelFilename, canonicalize_name, parse_sdist_filename,
                             parse_wheel_filename)
from packaging.version import InvalidVersion, Version
from pydantic import AfterValidator, ConfigDict, Field, Strict, TypeAdapter, with_config
from typing_extensions import TypedDict

LOCK_VERSION = 1

# -- constrained value types: the vocabulary of the schema --------------------------------------------

# C0/C1 controls, line/paragraph separators, bidi overrides (trojan-source) and the BOM: none of them
# has a place in a lock, and each could turn one value into several lines of a Dockerfile or a script.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def _no_control(value: str) -> str:
    found = CONTROL.search(value)
    if found:
        raise ValueError(f"contains the control character {found.group()!r} at offset {found.start()}; "
                         "lock values are single-line text")
    return value


def _pattern(regex: str, what: str):
    compiled = re.compile(regex)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{value!r} is not {what}")
        return value
    return AfterValidator(check)


def _parses(parser, errors: tuple[type[Exception], ...], what: str):
    def check(value: str) -> str:
        try:
            parser(value)
        except errors:
            raise ValueError(f"{value!r} is not {what}") from None
        return value
    return AfterValidator(check)


def _canonical_name(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?", value) or canonicalize_name(value) != value:
        raise ValueError(f"{value!r} is not a normalised package name (PEP 503: lowercase, runs of "
                         f"-_. as one '-'; here {canonicalize_name(value)!r})")
    return value


def _pin(value: str) -> str:
    name, sep, version = value.partition("==")
    try:
        if not sep:
            raise ValueError("no '=='")
        _canonical_name(name)
        Version(version)
    except (ValueError, InvalidVersion):
        raise ValueError(f"{value!r} is not a pin 'name==version' (normalised name, PEP 440 version)") from None
    return value


def _trimmed(value: str) -> str:
    if value != value.strip():
        raise ValueError(f"{value!r} has leading or trailing whitespace")
    return value


def _any_specifier(value: str) -> None:
    if value != "*":
        SpecifierSet(value)


def _git_url(value: str) -> str:
    """https/http/ssh/git/file URLs; no user or password in http(s) URLs (a token there is a secret)."""
    if not re.fullmatch(r"[A-Za-z0-9._~:/@%+-]+", value):
        raise ValueError(f"{value!r} is not a git URL (letters, digits and ._~:/@%+- only)")
    parts = urlsplit(value)
    if parts.scheme not in ("https", "http", "ssh", "git", "file") or (parts.scheme != "file" and not parts.hostname):
        raise ValueError(f"{value!r} is not a git URL (https://, ssh://, git:// or file://)")
    if parts.password is not None or (parts.username is not None and parts.scheme != "ssh"):
        raise ValueError("a git URL in a lock carries no credentials (user or password): "
                         "configure them in git's credential helper instead")
    if parts.query or parts.fragment:
        raise ValueError(f"{value!r}: a git URL in a lock has no query or fragment")
    return value


def _relative_dir(value: str) -> str:
    parts = value.split("/")
    if not re.fullmatch(r"[A-Za-z0-9._/+-]+", value) or value.startswith("/") or ".." in parts or "" in parts:
        raise ValueError(f"{value!r} is not a plain relative directory inside the repository")
    return value


def _file_name(value: str) -> str:
    if "/" in value or "\\" in value or value in (".", "..") or ":" in value:
        raise ValueError(f"{value!r} is not a bare file name (no path separators, no URL)")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+!-]*", value):
        raise ValueError(f"{value!r} is not a distribution file name (letters, digits and ._+!- only)")
    return value


Text = Annotated[str, Strict(), AfterValidator(_no_control)]
"""Free single-line text (findings, notes): any printable characters; renderers quote it."""
Trimmed = Annotated[Text, AfterValidator(_trimmed)]
"""Text without leading or trailing whitespace (parsers like packaging's strip it, renderers do not)."""
Name = Annotated[Text, AfterValidator(_canonical_name)]
VersionStr = Annotated[Trimmed, _parses(Version, (InvalidVersion,), "a PEP 440 version")]
Sha256 = Annotated[Text, _pattern(r"[0-9a-f]{64}", "a sha256: 64 lowercase hex digits")]
Digest = Annotated[Text, _pattern(r"sha256:[0-9a-f]{64}", "a digest 'sha256:<64 lowercase hex digits>'")]
IndexName = Annotated[Text, _pattern(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62}[A-Za-z0-9])?",
                                     "an index name (letters, digits, '.', '_', '-')")]
Commit = Annotated[Text, _pattern(r"[0-9a-f]{40}", "a full git commit id (40 lowercase hex digits)")]
GitUrl = Annotated[Text, AfterValidator(_git_url)]
RelativeDir = Annotated[Text, AfterValidator(_relative_dir)]
FileName = Annotated[Text, AfterValidator(_file_name)]
# Markers and requirements hold quoted strings, but never need the characters a shell or a requirements
# file would interpret ('$', '\\', '`', braces, '|'), so those are refused outright.
_PEP508 = r"[A-Za-z0-9 ._'\"<>=!~(),;*+\[\]@:/%?&#-]+"
Pin = Annotated[Trimmed, AfterValidator(_pin)]
RequirementStr = Annotated[Trimmed, _pattern(_PEP508, "a PEP 508 requirement"),
                           _parses(Requirement, (InvalidRequirement,), "a PEP 508 requirement")]
SpecifierStr = Annotated[Trimmed, _parses(_any_specifier, (InvalidSpecifier,), "a version specifier or '*'")]
MarkerStr = Annotated[Trimmed, _pattern(_PEP508.replace("?&#", ""), "a PEP 508 environment marker"),
                      _parses(Marker, (InvalidMarker,), "a PEP 508 environment marker")]
EnvVarName = Annotated[Text, _pattern(r"[A-Za-z_][A-Za-z0-9_]{0,127}", "an environment variable name")]
CudaVersion = Annotated[Text, _pattern(r"\d{1,3}\.\d{1,3}(?:\.\d{1,3})?", "a CUDA version like 12.8")]
MajorMinor = Annotated[Text, _pattern(r"\d{1,3}\.\d{1,3}", "a major.minor version like 2.9")]
PythonAbi = Annotated[Text, _pattern(r"cp\d{2,3}t?|abi3|none", "a Python ABI tag (cp312, abi3, none)")]
GpuArch = Annotated[Text, _pattern(r"(?:sm|compute)_\d{2,3}[a-z]?", "a GPU arch like sm_120")]
# name[:tag]@sha256:<64 hex>, or name[:tag] when the lock says base-image-pinned = false.
ImageRef = Annotated[Text, _pattern(
    r"(?:[A-Za-z0-9.-]+(?::\d{1,5})?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?",
    "an image reference name[:tag]@sha256:<64 hex> (or name[:tag] with base-image-pinned = false)")]
Dotted = Annotated[Text, _pattern(r"\d{1,6}(?:\.\d{1,6}){0,3}", "a dotted version like 590.48.01")]
Token = Annotated[Text, _pattern(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", "a plain token (letters, digits, '_', '.', '-')")]
PositiveInt = Annotated[int, Strict(), Field(gt=0)]
Flag = Annotated[bool, Strict()]

STRICT = ConfigDict(extra="forbid")

# The two free-form tables, as typed dicts: `lock.environment["python"]` stays a dict lookup.
Environment = TypedDict("Environment", {
    "python": MajorMinor, "os": Token, "machine": Token, "libc": Token, "marker": MarkerStr,
    "platform-tag": Token,
}, total=False)
Environment.__pydantic_config__ = STRICT  # type: ignore[attr-defined]

Toolchain = TypedDict("Toolchain", {
    "base-image": ImageRef, "base-image-pinned": Flag, "runtime-image": ImageRef, "cuda": CudaVersion,
    "driver-min": Dotted, "gpu-arch": GpuArch, "gpu-count": PositiveInt,
    "source-date-epoch": Annotated[int, Strict(), Field(ge=0)],
}, total=False)
Toolchain.__pydantic_config__ = STRICT  # type: ignore[attr-defined]


# -- the model ---------------------------------------------------------------------------------------

@with_config(STRICT)
@dataclass(frozen=True, order=True)
class Artifact:
    filename: Annotated[FileName, Field(alias="file")]
    sha256: Sha256
    size: PositiveInt | None = None
    kind: Literal["wheel", "sdist"] = "wheel"
    # digest of the linkage summary computed from this file (envbuilder.abi.linkage); a claim the
    # gate re-derives from the artifact's bytes, never evidence by itself
    linkage: Digest | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.filename, "kind": self.kind, "sha256": self.sha256}
        if self.size is not None:
            out["size"] = self.size
        if self.linkage is not None:
            out["linkage"] = self.linkage
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Artifact":
        return cls(d["file"], d["sha256"], d.get("size"), d.get("kind", "wheel"), d.get("linkage"))

    def name_and_version(self) -> tuple[str, Version]:
        """The project name and version the file name states (raises ValueError for neither form)."""
        try:
            if self.kind == "wheel":
                name, version, _build, _tags = parse_wheel_filename(self.filename)
            else:
                name, version = parse_sdist_filename(self.filename)
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion) as exc:
            raise ValueError(f"{self.filename!r} is not a {self.kind} file name: {exc}") from None
        return str(name), version


@with_config(STRICT)
@dataclass(frozen=True)
class Source:
    """Where a package comes from: a named index, or a git repository at a full commit."""

    index: IndexName | None = None
    git: GitUrl | None = None
    commit: Commit | None = None
    subdirectory: RelativeDir | None = None
    # the commit's root tree, recorded when the commit was verified in the repository at lock time
    tree: Commit | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (("index", self.index), ("git", self.git), ("commit", self.commit),
                                  ("subdirectory", self.subdirectory), ("tree", self.tree)) if v is not None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Source":
        return cls(d.get("index"), d.get("git"), d.get("commit"), d.get("subdirectory"), d.get("tree"))


@with_config(STRICT)
@dataclass(frozen=True)
class Facets:
    """What a binary was built for (or, for a provider like torch, what it offers)."""

    torch: MajorMinor | None = None
    cuda: CudaVersion | None = None
    cxx11_abi: Annotated[Flag | None, Field(alias="cxx11-abi")] = None
    python_abi: Annotated[PythonAbi | None, Field(alias="python-abi")] = None
    sass: tuple[GpuArch, ...] = ()
    ptx: tuple[GpuArch, ...] = ()
    evidence: Literal["binary", "knowledge", "wheel-name", "build"] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in ("torch", "cuda", "cxx11_abi", "python_abi", "evidence"):
            value = getattr(self, key)
            if value is not None:
                out[key.replace("_", "-")] = value
        if self.sass:
            out["sass"] = list(self.sass)
        if self.ptx:
            out["ptx"] = list(self.ptx)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Facets":
        return cls(d.get("torch"), d.get("cuda"), d.get("cxx11-abi"), d.get("python-abi"),
                   tuple(d.get("sass", ())), tuple(d.get("ptx", ())), d.get("evidence"))


@with_config(STRICT)
@dataclass(frozen=True)
class BuildRecipe:
    """A source build: its inputs (sdist hash, env, toolkit, build deps) hashed like a derivation."""

    env: dict[EnvVarName, Text] = field(default_factory=dict)
    cuda: CudaVersion | None = None
    requires: tuple[Pin, ...] = ()  # name==version of the build environment's ABI inputs
    inputs_digest: Annotated[Digest, Field(alias="inputs-digest")] = ""
    # name==version of its PEP 517 build requirements (and no-isolation tools), each a `build-package`
    # entry of the lock: installed by hash into the build environment, never resolved at build time
    tools: tuple[Pin, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"inputs-digest": self.inputs_digest}
        if self.env:
            out["env"] = dict(sorted(self.env.items()))
        if self.cuda:
            out["cuda"] = self.cuda
        if self.requires:
            out["requires"] = list(self.requires)
        if self.tools:
            out["tools"] = sorted(self.tools)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BuildRecipe":
        return cls(dict(d.get("env", {})), d.get("cuda"), tuple(d.get("requires", ())), d.get("inputs-digest", ""),
                   tuple(d.get("tools", ())))


@with_config(STRICT)
@dataclass(frozen=True)
class LockedPackage:
    name: Name
    version: VersionStr
    source: Source
    artifacts: tuple[Artifact, ...] = ()
    dependencies: tuple[RequirementStr, ...] = ()
    requested: SpecifierStr | None = None  # the matrix's own specifier, for direct packages
    marker: MarkerStr | None = None
    build: BuildRecipe | None = None
    facets: Facets | None = None
    overridden: tuple[Text, ...] = ()  # what dependents asked before a matrix override replaced it
    # a source's dependencies: read from "matrix" (its `metadata:` override), "pkg-info" (PEP 643),
    # "pyproject" (PEP 621) or "backend" (PEP 517 prepare_metadata) -- see envbuilder.index.sourcemeta
    metadata_from: Annotated[Literal["matrix", "pkg-info", "pyproject", "backend"] | None,
                             Field(alias="metadata-from")] = None
    # the Python a build backend ran under to read them, recorded only when it is not the target's
    metadata_python: Annotated[MajorMinor | None, Field(alias="metadata-python")] = None

    @property
    def is_binary(self) -> bool:
        """A package whose wheels carry compiled code (not py3-none-any), or a source build."""
        if self.build is not None:
            return True
        return any(a.kind == "wheel" and not a.filename.endswith("-none-any.whl") for a in self.artifacts)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "version": self.version, "source": self.source.to_dict()}
        for key in ("requested", "marker"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.dependencies:
            out["dependencies"] = sorted(self.dependencies)
        if self.overridden:
            out["overridden"] = sorted(self.overridden)
        if self.metadata_from is not None:
            out["metadata-from"] = self.metadata_from
        if self.metadata_python is not None:
            out["metadata-python"] = self.metadata_python
        if self.build is not None:
            out["build"] = self.build.to_dict()
        if self.facets is not None:
            out["facets"] = self.facets.to_dict()
        out["artifacts"] = [a.to_dict() for a in sorted(self.artifacts)]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "LockedPackage":
        return cls(
            name=d["name"], version=d["version"], source=Source.from_dict(d.get("source", {})),
            artifacts=tuple(Artifact.from_dict(a) for a in d.get("artifacts", ())),
            dependencies=tuple(d.get("dependencies", ())), requested=d.get("requested"),
            marker=d.get("marker"),
            build=BuildRecipe.from_dict(d["build"]) if "build" in d else None,
            facets=Facets.from_dict(d["facets"]) if "facets" in d else None,
            overridden=tuple(d.get("overridden", ())),
            metadata_from=d.get("metadata-from"), metadata_python=d.get("metadata-python"),
        )


@with_config(STRICT)
@dataclass(frozen=True)
class IndexSource:
    """A build package's source: always a named index (the wheels are hashed; no git, no sdist)."""

    index: IndexName

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index}


@with_config(STRICT)
@dataclass(frozen=True)
class BuildPackage:
    """A hashed wheel of a source build's build environment (envbuilder.resolve.buildreqs).

    Resolved apart from the runtime closure (as pip and uv resolve build requirements), so it is a
    section of its own: it never lands in the image's venv, and two builds may need two versions.
    """

    name: Name
    version: VersionStr
    source: IndexSource
    artifacts: tuple[Artifact, ...] = ()

    marker = None  # read by the requirements writers, like LockedPackage.marker: never conditional

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "source": self.source.to_dict(),
                "artifacts": [a.to_dict() for a in sorted(self.artifacts)]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BuildPackage":
        return cls(d["name"], d["version"], IndexSource(d.get("source", {}).get("index", "")),
                   tuple(Artifact.from_dict(a) for a in d.get("artifacts", ())))


@with_config(STRICT)
@dataclass(frozen=True)
class Lock:
    target: Token
    matrix_digest: Annotated[Digest, Field(alias="matrix-digest")]
    knowledge_digest: Annotated[Digest, Field(alias="knowledge-digest")]
    environment: Environment
    toolchain: Toolchain
    indexes: tuple[IndexName, ...]
    packages: Annotated[tuple[LockedPackage, ...], Field(alias="package")]
    findings: tuple[Text, ...] = ()  # warnings the resolver accepted, recorded for review
    version: Annotated[Literal[1], Field(alias="lock-version")] = LOCK_VERSION  # io.loads rejects `true` (== 1) first
    build_packages: Annotated[tuple[BuildPackage, ...], Field(alias="build-package")] = ()

    def build_package(self, pin: str) -> BuildPackage | None:
        """The build-package entry a recipe's `tools` pin names."""
        return next((p for p in self.build_packages if p.pin == pin), None)

    def package(self, name: str) -> LockedPackage | None:
        key = canonicalize_name(name)
        return next((p for p in self.packages if canonicalize_name(p.name) == key), None)

    def to_dict(self) -> dict[str, Any]:
        """The canonical form; `digest` is computed over everything else."""
        body: dict[str, Any] = {
            "lock-version": self.version,
            "target": self.target,
            "matrix-digest": self.matrix_digest,
            "knowledge-digest": self.knowledge_digest,
            "environment": dict(sorted(self.environment.items())),
            "toolchain": dict(sorted(self.toolchain.items())),
            "indexes": sorted(self.indexes),
        }
        if self.findings:
            body["findings"] = list(self.findings)
        body["package"] = [p.to_dict() for p in sorted(self.packages, key=lambda p: p.name)]
        if self.build_packages:
            body["build-package"] = [p.to_dict() for p in sorted(self.build_packages, key=lambda p: p.pin)]
        return body

    @property
    def digest(self) -> str:
        canonical = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()

    @property
    def source_date_epoch(self) -> int:
        """A fixed timestamp for image layers, derived from the lock so equal locks give equal epochs."""
        return int(self.toolchain.get("source-date-epoch", 0))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Lock":
        """Trusting construction from the canonical form (tests, tools); files go through `LOCK_SCHEMA`."""
        return cls(
            target=d["target"], matrix_digest=d["matrix-digest"], knowledge_digest=d["knowledge-digest"],
            environment=dict(d.get("environment", {})), toolchain=dict(d.get("toolchain", {})),
            indexes=tuple(d.get("indexes", ())),
            packages=tuple(LockedPackage.from_dict(p) for p in d.get("package", ())),
            findings=tuple(d.get("findings", ())), version=d.get("lock-version", LOCK_VERSION),
            build_packages=tuple(BuildPackage.from_dict(p) for p in d.get("build-package", ())),
        )

    def replace_packages(self, packages: tuple[LockedPackage, ...]) -> "Lock":
        """The lock with other packages; build packages that no recipe lists any more go with them."""
        listed = {t for p in packages if p.build is not None for t in p.build.tools}
        return replace(self, packages=packages, build_packages=tuple(b for b in self.build_packages if b.pin in listed))


LOCK_SCHEMA: TypeAdapter[Lock] = TypeAdapter(Lock)
"""Validates a lock file's parsed table (TOML keys) into a Lock; errors carry the TOML key path."""

Problem = tuple[tuple[str | int, ...], str]


def consistency_problems(lock: Lock) -> list[Problem]:
    """Rules across fields that the per-field types cannot say, as (TOML key path, message).

    Run on every lock read from a file, after `LOCK_SCHEMA`; an empty list means consistent.
    """
    problems: list[Problem] = []
    image = lock.toolchain.get("base-image")
    pinned = "@sha256:" in (image or "")
    flag = lock.toolchain.get("base-image-pinned")
    if image is None:
        problems.append((("toolchain", "base-image"), "missing: the lock must name its base image"))
    elif not pinned and flag is not False:
        problems.append((("toolchain", "base-image"),
                         f"{image!r} has no @sha256 digest; an unpinned base image must be explicit: "
                         "base-image-pinned = false"))
    elif pinned and flag is False:
        problems.append((("toolchain", "base-image-pinned"), "is false but the base image carries a digest"))
    runtime = lock.toolchain.get("runtime-image")
    if runtime is not None and "@sha256:" not in runtime and flag is not False:
        problems.append((("toolchain", "runtime-image"), f"{runtime!r} has no @sha256 digest"))
    seen: dict[str, int] = {}
    for i, package in enumerate(lock.packages):
        where = ("package", i)
        if package.name in seen:
            problems.append(((*where, "name"), f"{package.name!r} is locked twice (also package #{seen[package.name] + 1})"))
        seen.setdefault(package.name, i)
        problems += [((*where, "source", *key), message) for key, message in _source_problems(package.source, lock)]
        problems += _artifact_problems(package, where)
    return problems + _build_package_problems(lock)


def _artifact_problems(package: LockedPackage | BuildPackage, where: tuple) -> list[Problem]:
    problems: list[Problem] = []
    for j, artifact in enumerate(package.artifacts):
        try:
            name, version = artifact.name_and_version()
        except ValueError as exc:
            problems.append(((*where, "artifacts", j, "file"), str(exc)))
            continue
        if canonicalize_name(name) != package.name or version != Version(package.version):
            problems.append(((*where, "artifacts", j, "file"),
                             f"{artifact.filename!r} is a file of {name} {version}, not of "
                             f"{package.name} {package.version}"))
    return problems


def _build_package_problems(lock: Lock) -> list[Problem]:
    """Build packages: wheels from a named index, each once, each named by some recipe's `tools`."""
    problems: list[Problem] = []
    wanted = {pin: (i, j) for i, p in enumerate(lock.packages) if p.build is not None
              for j, pin in enumerate(p.build.tools)}
    entries = {p.pin for p in lock.build_packages}
    problems += [(("package", i, "build", "tools", j), f"{pin!r} has no build-package entry with its hashes")
                 for pin, (i, j) in wanted.items() if pin not in entries]
    seen: set[str] = set()
    for i, package in enumerate(lock.build_packages):
        where = ("build-package", i)
        if package.pin in seen:
            problems.append(((*where, "name"), f"{package.pin!r} is a build package twice"))
        seen.add(package.pin)
        if package.source.index not in lock.indexes:
            problems.append(((*where, "source", "index"),
                             f"{package.source.index!r} is not one of the lock's indexes {list(lock.indexes)}"))
        if not package.artifacts or any(a.kind != "wheel" for a in package.artifacts):
            problems.append(((*where, "artifacts"), "a build package is installed from hashed wheels only"))
        problems += _artifact_problems(package, where)
        if package.pin not in wanted:
            problems.append(((*where, "name"), f"{package.pin!r} is no source build's tool (no recipe lists it)"))
    return problems


def _source_problems(source: Source, lock: Lock) -> list[tuple[tuple[str, ...], str]]:
    if source.git is not None:
        if source.index is not None:
            return [(("index",), "a source is an index or a git repository, not both")]
        if source.commit is None:
            return [(("commit",), "missing: a git source needs the full commit id it was locked at")]
        return []
    if source.commit is not None or source.subdirectory is not None or source.tree is not None:
        return [(("git",), "missing: commit/subdirectory/tree only apply to a git source")]
    if source.index is None:
        return [(("index",), "missing: a package comes from a named index or a git repository")]
    if source.index not in lock.indexes:
        return [(("index",), f"{source.index!r} is not one of the lock's indexes {list(lock.indexes)}")]
    return []


def index_problems(lock: Lock, defined: set[str] | frozenset[str]) -> list[Problem]:
    """Index names the lock uses that the matrix (where it is at hand) does not define."""
    return [(("indexes", i), f"{name!r} is not an index the matrix defines ({', '.join(sorted(defined))})")
            for i, name in enumerate(lock.indexes) if name not in defined]
