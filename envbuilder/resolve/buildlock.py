"""The lock's build tools: each source build's PEP 517 requirements resolved and recorded by hash.

For every source build that produces a wheel, the request is its declared
`[build-system].requires` (read from the sdist or the git commit, envbuilder.index.buildsystem;
the matrix's `metadata: {build_requires: [...]}` wins, and is what a git commit out of reach
needs), plus, for a no-isolation build (one with ABI inputs), `NO_ISOLATION_TOOLS`. The ABI inputs
and their import closure come from the runtime lock (fixed, not re-resolved). The result goes in
the recipe (`[package.build] tools = ["setuptools==80.9.0", ...]`) and each tool's wheels with
their hashes in the lock's `[[build-package]]` section, so the build stage installs nothing
unpinned.

Dynamic requirements (the backend's `get_requires_for_build_wheel`) are not asked here: that
runs the project's build code, which for a torch extension imports torch at metadata time.
Modern setuptools adds nothing there for a wheel (it stopped adding `wheel` in 70.1), and the
build stage runs pip with `--no-build-isolation`, so a missing one fails the build naming it
instead of being fetched unpinned. Binary products (a cmake target) install no Python tools.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.utils import canonicalize_name

from envbuilder.errors import Unreachable
from envbuilder.index.buildsystem import build_system_requires
from envbuilder.index.client import IndexClient
from envbuilder.index.git import GitSources
from envbuilder.index.sourcemeta import read_member
from envbuilder.lock.closure import dependency_name, import_closure
from envbuilder.lock.model import Artifact, BuildPackage, IndexSource, Lock, LockedPackage
from envbuilder.matrix import Target
from envbuilder.resolve.buildreqs import BuildRequest, resolve_build_env
from envbuilder.resolve.candidates import Candidate
from envbuilder.resolve.prefetch import PrefetchingFinder
from envbuilder.resolve.resolver import Resolution

#: What a no-isolation torch-extension build imports beside its ABI inputs: setuptools and ninja
#: (torch.utils.cpp_extension), wheel, packaging and psutil (flash-attn's setup.py and its kin).
NO_ISOLATION_TOOLS = ("setuptools", "wheel", "packaging", "ninja", "psutil")

ToolPins = dict[str, dict[str, str]]  # source-built package -> {tool name: version}


def preferred_tools(previous: Lock | None, moving: frozenset[str] = frozenset(), upgrade: bool = False) -> ToolPins:
    """The last lock's tool versions per build, kept on re-lock unless upgraded (as runtime pins are)."""
    if previous is None or upgrade:
        return {}
    moving = frozenset(canonicalize_name(n) for n in moving)
    out: ToolPins = {}
    for pkg in previous.packages:
        if pkg.build is not None and pkg.build.tools:
            pins = (t.partition("==") for t in pkg.build.tools)
            out[pkg.name] = {name: version for name, _, version in pins if name not in moving}
    return out


def lock_build_tools(lock: Lock, resolution: Resolution, client: IndexClient,
                     preferred: ToolPins | None = None) -> Lock:
    """`lock` with every wheel build's tools resolved, pinned in its recipe and hashed in the lock."""
    target = resolution.target
    entries: dict[str, BuildPackage] = {}
    packages = []
    for pkg in lock.packages:
        if pkg.build is None or _binary_product(target, pkg):
            packages.append(pkg)
            continue
        request = build_request(pkg, lock, resolution, client, (preferred or {}).get(pkg.name, {}))
        tools = resolve_build_env(request, target.platform, lambda t: PrefetchingFinder(client, t))
        for candidate in tools:
            entries.setdefault(_pin(candidate), _build_package(candidate, client))
        packages.append(replace(pkg, build=replace(pkg.build, tools=tuple(sorted(map(_pin, tools))))))
    return replace(lock, packages=tuple(packages), build_packages=tuple(entries[k] for k in sorted(entries)))


def build_request(pkg: LockedPackage, lock: Lock, resolution: Resolution, client: IndexClient,
                  preferred: dict[str, str]) -> BuildRequest:
    """What one build environment asks for, and what the runtime lock fixes in it."""
    assert pkg.build is not None
    inputs = import_closure(lock, [dependency_name(r) for r in pkg.build.requires])
    requires = declared_requires(pkg, resolution, client)
    if inputs:
        requires += NO_ISOLATION_TOOLS
    fixed = {p.name: (p.version, p.source.index or "pypi") for p in inputs}
    return BuildRequest(f"{pkg.name} {pkg.version}'s build environment", requires, fixed, preferred)


def declared_requires(pkg: LockedPackage, resolution: Resolution, client: IndexClient) -> tuple[str, ...]:
    """`[build-system].requires` of the source: the matrix's override, else the sdist or the commit."""
    spec = resolution.target.spec(pkg.name)
    override = spec.metadata.build_requires if spec is not None and spec.metadata is not None else None
    if override is not None:
        return tuple(override)
    if pkg.source.git is not None:
        return build_system_requires(_git_pyproject(pkg, client), f"{pkg.source.git} at {pkg.source.commit}")
    candidate = resolution.pins[canonicalize_name(pkg.name)]
    sdist = candidate.file
    assert sdist is not None and sdist.kind == "sdist"
    return build_system_requires(read_member(client.download(sdist), sdist.filename, "pyproject.toml"),
                                 sdist.filename)


def _git_pyproject(pkg: LockedPackage, client: IndexClient) -> bytes | None:
    source = pkg.source
    assert source.git is not None and source.commit is not None
    if source.tree is None:  # the commit was not verified: its repository is out of reach
        raise Unreachable(f"{pkg.name}: {source.git} is out of reach, so its build requirements cannot be read "
                          "from the commit; give them in the matrix (`metadata: {build_requires: [...]}`, "
                          "the commit's pyproject.toml [build-system] requires)")
    path = f"{source.subdirectory}/pyproject.toml" if source.subdirectory else "pyproject.toml"
    return GitSources(client.cache, offline=client.offline).read_file(source.git, source.commit, path)


def _binary_product(target: Target, pkg: LockedPackage) -> bool:
    spec = target.matrix.spec(pkg.name)
    return spec is not None and spec.build is not None and spec.build.target is not None


def _pin(candidate: Candidate) -> str:
    return f"{candidate.name}=={candidate.version}"


def _build_package(candidate: Candidate, client: IndexClient) -> BuildPackage:
    artifacts = tuple(Artifact(f.filename, f.sha256 or "", f.size if f.size is not None else client.size(f), "wheel")
                      for f in candidate.files)
    return BuildPackage(str(candidate.name), str(candidate.version), IndexSource(candidate.index or "pypi"), artifacts)
