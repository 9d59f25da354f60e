"""The matrix contract (schema 1): what a target wants, as strict pydantic models.

Every model forbids unknown keys so a typo (`overide: true`) is an error with a suggestion,
not a silently ignored line. Field names follow design.md; where a section belongs to another
module (serve, smoke profiles) that module owns the model and this one only places it.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from pydantic import Field, field_validator, model_validator

from envbuilder.knowledge import BinaryFact, BinaryRecipe, KnownIssue
from envbuilder.model import StrictModel
from envbuilder.serve.profile import ServeProfile
from envbuilder.smoke.profile import SmokeProfile, check_metric

ARCH_RE = re.compile(r"^sm_(\d+)([af]?)$")
SHA_RE = re.compile(r"^[0-9a-f]{40}$")
DIGEST_RE = re.compile(r"@sha256:[0-9a-f]{64}$")


class Gpu(StrictModel):
    name: str
    arch: str
    count: int = Field(ge=1)
    memory_gib: float = Field(gt=0)

    @field_validator("arch")
    @classmethod
    def _arch(cls, value: str) -> str:
        if not ARCH_RE.match(value):
            raise ValueError(f"GPU arch must look like sm_120 or sm_90a, not {value!r}")
        return value


class Driver(StrictModel):
    min: str

    @field_validator("min")
    @classmethod
    def _version(cls, value: str) -> str:
        _parse_version(value)
        return value


class Hardware(StrictModel):
    gpu: Gpu | None = None
    driver: Driver | None = None


class Platform(StrictModel):
    """The *target* environment: markers and wheel tags come from here, never from the host."""

    os: Literal["linux"] = "linux"
    machine: Literal["x86_64", "aarch64"] = "x86_64"
    libc: str = Field(pattern=r"^glibc_\d+\.\d+$")
    python: str = Field(pattern=r"^3\.\d+$")

    @property
    def glibc(self) -> tuple[int, int]:
        major, minor = self.libc.removeprefix("glibc_").split(".")
        return int(major), int(minor)


class Toolchain(StrictModel):
    cuda: str | None = Field(default=None, pattern=r"^\d+\.\d+$")
    base_image: str
    runtime_image: str | None = None
    apt: tuple[str, ...] = ()

    @property
    def base_image_pinned(self) -> bool:
        return bool(DIGEST_RE.search(self.base_image))


#: PEP 508 names: a name becomes a URL path segment and a cache folder, so nothing else passes.
PACKAGE_NAME_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rpartition("@")[2]))


class Index(StrictModel):
    """A named index. `pypi` with no url means the user's configured default index."""

    url: str | None = None
    url_env: str | None = None
    default: bool = False

    @field_validator("url")
    @classmethod
    def _no_credentials(cls, value: str | None) -> str | None:
        """A matrix is committed and copied into images: credentials go in `url_env`'s variable."""
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"{_redacted(value)!r} is not an http(s) URL")
            if parts.username is not None or parts.password is not None:
                raise ValueError(
                    f"{_redacted(value)!r} carries credentials; a matrix is committed and copied into "
                    "images: name an environment variable that holds the URL in `url_env` instead"
                )
        return value


class StaticMetadata(StrictModel):
    """Metadata given in the matrix so resolving never has to build (uv's dependency-metadata)."""

    version: str | None = None
    requires_dist: tuple[str, ...] = ()
    requires_python: str | None = None
    # the source's `[build-system].requires`, for a source that cannot be read (a git commit out of reach)
    build_requires: tuple[str, ...] | None = None

    @field_validator("build_requires")
    @classmethod
    def _pep508(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        for text in value or ():
            try:
                Requirement(text)
            except InvalidRequirement as exc:
                raise ValueError(f"not a PEP 508 requirement: {text!r} ({exc})") from None
        return value


class Build(StrictModel):
    # sdist: always build from source; wheel: only prebuilt wheels; any: a wheel whose ABI facets
    # fit, else the source build (the resolver backtracks to it).
    from_: Literal["sdist", "wheel", "any"] = Field(default="wheel", alias="from")
    env: dict[str, str] = Field(default_factory=dict)
    apt: tuple[str, ...] = ()
    target: str | None = None


class PackageSpec(StrictModel):
    version: str = ""
    index: str | None = None
    override: bool = False
    extras: tuple[str, ...] = ()
    marker: str | None = None
    build: Build | None = None
    metadata: StaticMetadata | None = None
    git: str | None = None
    rev: str | None = None
    subdirectory: str | None = None
    prebuilt: str | None = None
    note: str | None = None

    @field_validator("version")
    @classmethod
    def _specifier(cls, value: str) -> str:
        try:
            SpecifierSet(value)
        except InvalidSpecifier as exc:
            raise ValueError(f"not a version specifier: {value!r} (e.g. '==2.9.1' or '>=5.2')") from exc
        return value

    @model_validator(mode="after")
    def _git(self) -> "PackageSpec":
        if self.git is not None:
            if urlsplit(self.git).scheme not in ("https", "http", "ssh", "git", "file"):  # as a lock may name
                raise ValueError(f"{_redacted(self.git)!r} is not a git URL (https://, ssh://, git:// or file://)")
            if "@" in urlsplit(self.git).netloc:
                raise ValueError(f"{_redacted(self.git)!r} carries credentials; the URL is copied into the lock and "
                                 "the image: keep them in ~/.netrc or a git credential helper")
            if not self.rev or not SHA_RE.match(self.rev):
                raise ValueError("a git source needs `rev:` as a full 40-hex commit SHA (a branch or tag moves)")
        elif self.rev is not None or self.subdirectory is not None:
            raise ValueError("`rev`/`subdirectory` only apply with `git:`")
        return self

    @property
    def from_sdist(self) -> bool:
        return self.build is not None and self.build.from_ == "sdist"


class Measured(StrictModel):
    """One figure a validated configuration measured: `metric` (as in the smoke report) at a concurrency."""

    metric: str
    at: int = Field(ge=1)
    value: float = Field(ge=0, allow_inf_nan=False)

    _metric = field_validator("metric")(classmethod(lambda cls, v: check_metric(v)))


class Layers(StrictModel):
    """How the image splits the venv into layers (envbuilder.build.layers computes the default)."""

    max: int = Field(default=7, ge=1, le=32)
    assign: dict[str, Literal["native-libraries", "native-core", "native-consumers", "binaries",
                              "source-built", "pure", "application"]] = Field(default_factory=dict)


class Validated(StrictModel):
    """A configuration that ran on real hardware: what it measured, and with which profile (flags)."""

    date: str
    result: str
    by: str
    lock: str | None = None
    profile: str | None = Field(default=None, description="the server flags and workload it was measured with")
    measured: tuple[Measured, ...] = ()


class KnowledgeOverlay(StrictModel):
    """Facts a matrix adds for its own target; merged over the shipped knowledge base."""

    known_issues: tuple[KnownIssue, ...] = ()
    binaries: tuple[BinaryFact, ...] = ()
    binary_recipes: tuple[BinaryRecipe, ...] = ()  # `build.target: NAME` looks here first


def _parse_version(value: str) -> Version:
    try:
        return Version(value)
    except InvalidVersion as exc:
        raise ValueError(f"not a version: {value!r}") from exc


def _package_table(value: object) -> object:
    return {"version": value} if isinstance(value, str) else value


class Matrix(StrictModel):
    """One target's matrix after `extends:` has been merged."""

    schema_: Literal[1] = Field(alias="schema")
    target: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = ""
    extends: str | None = None
    hardware: Hardware = Hardware()
    platform: Platform
    toolchain: Toolchain
    indexes: dict[str, Index] = Field(default_factory=lambda: {"pypi": Index(default=True)})
    packages: dict[str, PackageSpec]
    knowledge: KnowledgeOverlay | None = None
    serve: ServeProfile | None = None
    smoke: SmokeProfile | None = None
    validated: tuple[Validated, ...] = ()
    layers: Layers = Layers()

    @field_validator("packages", mode="before")
    @classmethod
    def _tables(cls, value: object) -> object:
        if isinstance(value, dict):
            return {name: _package_table(spec) for name, spec in value.items()}
        return value

    @field_validator("packages")
    @classmethod
    def _names(cls, value: dict[str, PackageSpec]) -> dict[str, PackageSpec]:
        seen: dict[str, str] = {}
        for name in value:
            if not PACKAGE_NAME_RE.fullmatch(name):
                raise ValueError(f"{name!r} is not a package name (letters, digits, '.', '_' and '-' only)")
            key = canonicalize_name(name)
            if key in seen:
                raise ValueError(f"{name!r} and {seen[key]!r} name the same package")
            seen[key] = name
        return value

    @model_validator(mode="after")
    def _index_refs(self) -> "Matrix":
        for name, spec in self.packages.items():
            if spec.index is not None and spec.index not in self.indexes:
                raise ValueError(f"package {name!r} names index {spec.index!r}, which `indexes:` does not define")
        return self

    def spec(self, name: str) -> PackageSpec | None:
        key = canonicalize_name(name)
        for pkg, spec in self.packages.items():
            if canonicalize_name(pkg) == key:
                return spec
        return None
