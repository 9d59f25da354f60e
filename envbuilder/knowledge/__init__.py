"""The shipped knowledge base: sourced facts the resolver, the ABI rules and doctor query.

Facts live in YAML beside this file, each with a `source:`; this module only types and queries
them. A matrix may add facts for its target (`knowledge:` overlay); those are consulted first.
Build-only facts (binary recipes, a package's build env knobs, envbuilder.knowledge.recipes) are read
when an image is planned and are left out of the digest a lock records: changing one changes the
Dockerfile, never the lock.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import resources
from typing import Literal

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version
from pydantic import Field
from ruamel.yaml import YAML

from envbuilder.knowledge.recipes import BinaryRecipe, BuildEnv
from envbuilder.model import StrictModel

FILES = ("cuda.yaml", "arches.yaml", "binaries.yaml", "issues.yaml", "recipes.yaml")
#: Facts a lock does not depend on (see the module docstring): excluded from `Knowledge.digest`.
BUILD_ONLY = {"binary_recipes": True, "binaries": {"__all__": {"build_env"}}}


class Toolkit(StrictModel):
    cuda: str
    min_driver: str
    source: str


class CompatFloor(StrictModel):
    cuda_major: int
    min_driver: str
    source: str


class MinorVersionCompat(StrictModel):
    source: str
    floors: tuple[CompatFloor, ...]


class Arch(StrictModel):
    arch: str
    first_cuda: str
    products: str = ""
    source: str | None = None


class Facets(StrictModel):
    """torch major.minor / CUDA / C++11 ABI; `from-version` and `from-build` are resolved later."""

    torch: str | None = None
    cuda: str | None = None
    cxx11_abi: bool | Literal["from-build"] | None = None


class BinaryFact(StrictModel):
    package: str
    versions: str
    local: str | None = None
    provides: Facets | None = None
    requires: Facets | None = None
    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    build_archs: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    arch_env: str | None = None  # the build env variable that narrows build_archs (a source build)
    build_env: BuildEnv | None = None  # build-only: forced knobs, the cxx11 flag, how arch_env spells an arch
    source: str

    def matches(self, package: str, version: str) -> bool:
        return canonicalize_name(package) == canonicalize_name(self.package) and \
            Version(version) in SpecifierSet(self.versions)


class WheelNameConvention(StrictModel):
    pattern: str
    example: str
    source: str


class Condition(StrictModel):
    arch_major: int | None = None
    arch: str | None = None
    model: str | None = None


class Fix(StrictModel):
    version: str | None = None
    pr: str | None = None
    repo: str | None = None
    commit: str | None = None


class KnownIssue(StrictModel):
    id: str
    package: str
    affected: str
    when: Condition = Condition()
    severity: Literal["error", "warning"]
    summary: str
    fix: Fix = Fix()
    source: str

    def affects(self, package: str, version: str) -> bool:
        return canonicalize_name(package) == canonicalize_name(self.package) and \
            Version(version) in SpecifierSet(self.affected, prereleases=True)


class AbiProvider(StrictModel):
    """The package whose C++ ABI consumers link against (torch): data, not a name in code."""

    package: str
    source: str


class Knowledge(StrictModel):
    abi_provider: AbiProvider
    toolkits: tuple[Toolkit, ...]
    minor_version_compat: MinorVersionCompat
    arches: tuple[Arch, ...]
    binaries: tuple[BinaryFact, ...]
    wheel_name_conventions: tuple[WheelNameConvention, ...]
    known_issues: tuple[KnownIssue, ...]
    binary_recipes: tuple[BinaryRecipe, ...] = ()

    @property
    def digest(self) -> str:
        facts = self.model_dump(mode="json", exclude=BUILD_ONLY)
        canonical = json.dumps(facts, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()

    def min_driver(self, cuda: str) -> Version | None:
        """The driver a toolkit release needs natively (same major.minor row)."""
        wanted = Version(cuda).release[:2]
        for row in self.toolkits:
            if Version(row.cuda).release[:2] == wanted:
                return Version(row.min_driver)
        return None

    def compat_floor(self, cuda: str) -> Version | None:
        """The lowest driver that runs SASS built with this CUDA major (minor-version compatibility)."""
        major = Version(cuda).major
        for floor in self.minor_version_compat.floors:
            if floor.cuda_major == major:
                return Version(floor.min_driver)
        return None

    def first_cuda(self, arch: str) -> Version | None:
        for row in self.arches:
            if row.arch == arch:
                return Version(row.first_cuda)
        return None

    def binary(self, package: str, version: str) -> BinaryFact | None:
        return next((b for b in self.binaries if b.matches(package, version)), None)

    def binary_recipe(self, name: str) -> BinaryRecipe | None:
        """The recipe `build.target: NAME` selects (a matrix's own first, so it can replace a shipped one)."""
        return next((r for r in self.binary_recipes if r.name == name), None)

    def issues_for(self, package: str, version: str) -> list[KnownIssue]:
        return [i for i in self.known_issues if i.affects(package, version)]

    def with_overlay(self, overlay: dict | None) -> "Knowledge":
        """Matrix-provided facts first, so a target can refine a shipped fact."""
        if not overlay:
            return self
        data = self.model_dump(mode="json")
        for key in ("binaries", "known_issues", "binary_recipes"):
            data[key] = list(overlay.get(key, ())) + data[key]
        return Knowledge.model_validate(data)


@lru_cache(maxsize=1)
def load_knowledge() -> Knowledge:
    data: dict = {}
    for name in FILES:
        text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
        part = YAML(typ="safe", pure=True).load(text)
        part.pop("source", None)
        if name == "cuda.yaml":
            part["minor_version_compat"] = part.pop("minor_version_compat")
        data.update(part)
    return Knowledge.model_validate(data)
