"""One resolver for PEP 517 build requirements: the lock's source-build stages and the metadata route.

pip and uv resolve a build environment apart from the runtime closure (a build may need
setuptools<70 while the app needs setuptools 80), so each build environment is a resolution of
its own. It runs on the same machinery as the runtime closure (resolvelib over the `Factory`,
the same index, the same wheel ranking for the environment's Python and platform), by resolving a
matrix whose packages are the build requirements. What the build takes from the runtime lock (the
ABI inputs a no-isolation build compiles against, torch and its closure) is `fixed`: pinned to the
lock's version, never re-resolved, and left out of the result. Only wheels are accepted: a build
requirement that would itself be built from source is refused (uv builds those recursively; this
resolver does not: `WheelsOnly`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from envbuilder.errors import BadInput, CheckFailed
from envbuilder.index.models import CoreMetadata, FileInfo
from envbuilder.matrix import Target
from envbuilder.matrix.schema import Matrix, PackageSpec, Platform
from envbuilder.resolve.candidates import Candidate
from envbuilder.resolve.environment import TargetEnvironment
from envbuilder.resolve.factory import Finder
from envbuilder.resolve.hooks import NullHook
from envbuilder.resolve.resolver import resolve


@dataclass(frozen=True)
class BuildRequest:
    """One build environment: what it asks (PEP 508 strings), what the runtime lock fixes."""

    where: str  # names the build in errors ("flash-attn 2.8.3's build environment")
    requires: tuple[str, ...]
    fixed: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # name -> (version, index name)
    preferred: Mapping[str, str] = field(default_factory=dict)  # name -> version kept from the last lock


def resolve_build_env(request: BuildRequest, platform: Platform,
                      finder: Callable[[Target], Finder]) -> tuple[Candidate, ...]:
    """The wheels of the build environment besides the fixed ones, sorted by name.

    `platform` is the Python and machine the build runs on: the target's for an image's build
    stage, the host's for the metadata route (the backend runs with the Python at hand).
    `finder` makes the index finder for the build environment's own matrix."""
    env_target = build_target(request, platform)
    preferred = {**request.preferred, **{n: v for n, (v, _) in request.fixed.items()}}
    try:
        resolution = resolve(env_target, WheelsOnly(finder(env_target)), NullHook(), preferred)
    except CheckFailed as exc:
        told = str(exc).replace("satisfies the matrix and the ABI rules", "satisfies the build requirements")
        raise CheckFailed(f"{told.replace('(from the matrix)', '(a build requirement)')}\n"
                          f"  (build requirements: {', '.join(request.requires)}; installed from wheels "
                          f"only, for Python {platform.python} {platform.machine} {platform.libc})") from None
    fixed = {canonicalize_name(n) for n in request.fixed}
    return tuple(c for name, c in sorted(resolution.pins.items()) if name not in fixed)


class WheelsOnly:
    """A finder that hides sdists: a build requirement is never itself built (no recursion, and no
    build backend run while another one is being set up)."""

    def __init__(self, finder: Finder):
        self.finder = finder

    def files(self, project: str, index: str = "pypi") -> list[FileInfo]:
        return [f for f in self.finder.files(project, index) if f.kind == "wheel"]

    def metadata(self, file: FileInfo) -> CoreMetadata:
        return self.finder.metadata(file)

    def prefetch(self, wanted: list[tuple[str, str, str]]) -> None:
        prefetch = getattr(self.finder, "prefetch", None)
        if prefetch is not None:
            prefetch(wanted)


def build_target(request: BuildRequest, platform: Platform) -> Target:
    """A matrix whose packages are the build requirements, for the build's platform.

    Named after the build (`request.where`), so the resolver's conflict messages say which build
    environment could not be resolved."""
    specs = _root_specs(request, TargetEnvironment(platform))
    for name, (version, index) in request.fixed.items():
        specs[canonicalize_name(name)] = PackageSpec(version=f"=={version}", index=index)
    matrix = Matrix.model_validate({"schema": 1, "target": "build-environment", "platform": platform.model_dump(),
                                    "toolchain": {"base_image": "scratch"}, "packages": {}})
    matrix = matrix.model_copy(update={"packages": specs, "target": request.where})
    return Target(matrix, Path(request.where), {})


def _root_specs(request: BuildRequest, env: TargetEnvironment) -> dict[str, PackageSpec]:
    """Requirements whose markers hold for the build's environment, merged per name."""
    merged: dict[str, tuple[SpecifierSet, frozenset[str]]] = {}
    for text in request.requires:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise BadInput(f"{request.where}: invalid build requirement {text!r}: {exc}") from None
        if req.url or not env.evaluate(req.marker):
            if req.url:
                raise BadInput(f"{request.where}: build requirement {text!r} is a URL; only index packages "
                               "can be locked by hash")
            continue
        name = canonicalize_name(req.name)
        specifier, extras = merged.get(name, (SpecifierSet(), frozenset()))
        merged[name] = (specifier & req.specifier, extras | {canonicalize_name(e) for e in req.extras})
    return {name: PackageSpec(version=str(spec), extras=tuple(sorted(extras)))
            for name, (spec, extras) in merged.items()}
