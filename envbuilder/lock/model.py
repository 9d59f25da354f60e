"""The lock: a content-addressed, host-free record of one target's resolved closure.

Indexes are named, artifacts are filename + size + sha256, git sources are full commits, so a
lock installs unchanged from any mirror. `to_dict` is the single canonical form: the TOML
writer, the digest and every export start from it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

LOCK_VERSION = 1


@dataclass(frozen=True, order=True)
class Artifact:
    filename: str
    sha256: str
    size: int | None = None
    kind: str = "wheel"  # wheel | sdist

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.filename, "kind": self.kind, "sha256": self.sha256}
        if self.size is not None:
            out["size"] = self.size
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Artifact":
        return cls(d["file"], d["sha256"], d.get("size"), d.get("kind", "wheel"))


@dataclass(frozen=True)
class Source:
    """Where a package comes from: a named index, or a git repository at a full commit."""

    index: str | None = None
    git: str | None = None
    commit: str | None = None
    subdirectory: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (("index", self.index), ("git", self.git), ("commit", self.commit),
                                  ("subdirectory", self.subdirectory)) if v is not None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Source":
        return cls(d.get("index"), d.get("git"), d.get("commit"), d.get("subdirectory"))


@dataclass(frozen=True)
class Facets:
    """What a binary was built for (or, for a provider like torch, what it offers)."""

    torch: str | None = None
    cuda: str | None = None
    cxx11_abi: bool | None = None
    python_abi: str | None = None
    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    evidence: str | None = None  # binary | knowledge | wheel-name | build

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


@dataclass(frozen=True)
class BuildRecipe:
    """A source build: its inputs (sdist hash, env, toolkit, build deps) hashed like a derivation."""

    env: dict[str, str] = field(default_factory=dict)
    cuda: str | None = None
    requires: tuple[str, ...] = ()  # name==version of the build environment's ABI inputs
    inputs_digest: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"inputs-digest": self.inputs_digest}
        if self.env:
            out["env"] = dict(sorted(self.env.items()))
        if self.cuda:
            out["cuda"] = self.cuda
        if self.requires:
            out["requires"] = list(self.requires)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BuildRecipe":
        return cls(dict(d.get("env", {})), d.get("cuda"), tuple(d.get("requires", ())), d.get("inputs-digest", ""))


@dataclass(frozen=True)
class LockedPackage:
    name: str
    version: str
    source: Source
    artifacts: tuple[Artifact, ...] = ()
    dependencies: tuple[str, ...] = ()
    requested: str | None = None  # the matrix's own specifier, for direct packages
    marker: str | None = None
    build: BuildRecipe | None = None
    facets: Facets | None = None
    overridden: tuple[str, ...] = ()  # what dependents asked before a matrix override replaced it

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
        )


@dataclass(frozen=True)
class Lock:
    target: str
    matrix_digest: str
    knowledge_digest: str
    environment: dict[str, str]
    toolchain: dict[str, Any]
    indexes: tuple[str, ...]
    packages: tuple[LockedPackage, ...]
    findings: tuple[str, ...] = ()  # warnings the resolver accepted, recorded for review
    version: int = LOCK_VERSION

    def package(self, name: str) -> LockedPackage | None:
        from packaging.utils import canonicalize_name

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
        return cls(
            target=d["target"], matrix_digest=d["matrix-digest"], knowledge_digest=d["knowledge-digest"],
            environment=dict(d.get("environment", {})), toolchain=dict(d.get("toolchain", {})),
            indexes=tuple(d.get("indexes", ())),
            packages=tuple(LockedPackage.from_dict(p) for p in d.get("package", ())),
            findings=tuple(d.get("findings", ())), version=d.get("lock-version", LOCK_VERSION),
        )

    def replace_packages(self, packages: tuple[LockedPackage, ...]) -> "Lock":
        return replace(self, packages=packages)
