"""Turns a Resolution into a Lock: artifacts by hash, sources by name or commit, build recipes."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from envbuilder import knowledge as kb
from envbuilder.lock.model import Artifact, BuildRecipe, Lock, LockedPackage, Source
from envbuilder.lock.recipe import inputs_digest
from envbuilder.matrix import Target
from envbuilder.resolve.candidates import Candidate
from envbuilder.resolve.environment import TargetEnvironment
from envbuilder.resolve.hooks import ResolverHook
from envbuilder.resolve.resolver import Resolution


def build_lock(resolution: Resolution, knowledge: kb.Knowledge, hook: ResolverHook,
               sizes: dict[str, int] | None = None) -> tuple[Lock, list]:
    """The lock (with accepted warnings recorded in it) and every finding of the ABI rules.

    `sizes` fills in file sizes (by sha256) the index did not publish."""
    target = resolution.target
    packages = tuple(_package(resolution, c, knowledge, hook, sizes or {}) for c in resolution.pins.values())
    lock = Lock(
        target=target.name,
        matrix_digest=target.digest,
        knowledge_digest=knowledge.digest,
        environment=environment(target),
        toolchain=toolchain(target, resolution),
        indexes=tuple(sorted(target.indexes)),
        packages=packages,
    )
    findings = hook.check(lock)
    warnings = tuple(sorted({str(f) for f in findings if f.severity == "warning"}))
    return (replace(lock, findings=warnings) if warnings else lock), findings


def environment(target: Target) -> dict[str, str]:
    env = TargetEnvironment(target.platform)
    m = env.markers
    marker = (f"sys_platform == '{m['sys_platform']}' and platform_machine == '{m['platform_machine']}' "
              f"and python_version == '{m['python_version']}'")
    return {"python": target.platform.python, "os": target.platform.os, "machine": target.platform.machine,
            "libc": target.platform.libc, "marker": marker, "platform-tag": env.platform_tags[0]}


def toolchain(target: Target, resolution: Resolution) -> dict[str, object]:
    tc = target.toolchain
    out: dict[str, object] = {"base-image": tc.base_image, "base-image-pinned": tc.base_image_pinned,
                              "source-date-epoch": _epoch(resolution)}
    if tc.cuda:
        out["cuda"] = tc.cuda
    if tc.runtime_image:
        out["runtime-image"] = tc.runtime_image
    hw = target.hardware
    if hw.gpu is not None:
        out.update({"gpu-arch": hw.gpu.arch, "gpu-count": hw.gpu.count})
    if hw.driver is not None:
        out["driver-min"] = hw.driver.min
    return out


def _epoch(resolution: Resolution) -> int:
    """The newest upload among locked artifacts: fixed for a lock, so images get fixed timestamps."""
    times = [f.upload_time for c in resolution.pins.values() for f in c.files if f.upload_time]
    if not times:
        return 0
    return int(max(datetime.fromisoformat(t.replace("Z", "+00:00")) for t in times).timestamp())


def _package(resolution: Resolution, candidate: Candidate, knowledge: kb.Knowledge,
             hook: ResolverHook, sizes: dict[str, int]) -> LockedPackage:
    spec = resolution.target.spec(candidate.name)
    deps = _dependencies(resolution, candidate)
    recipe = _recipe(resolution, candidate, knowledge) if candidate.kind != "wheel" else None
    return LockedPackage(
        name=str(candidate.name),
        version=str(candidate.version),
        source=_source(candidate),
        artifacts=tuple(Artifact(f.filename, f.sha256 or "", f.size if f.size is not None else sizes.get(f.sha256 or ""),
                                 f.kind) for f in candidate.files),
        dependencies=deps,
        requested=(spec.version or "*") if spec is not None else None,
        build=recipe,
        facets=hook.facets(str(candidate.name), str(candidate.version), candidate.filename,
                           recipe.env if recipe else None, build_requires=recipe.requires if recipe else (),
                           build_cuda=recipe.cuda if recipe else None,
                           sha256=candidate.file.sha256 if candidate.file else None),
        overridden=_overridden(resolution, candidate),
        **_metadata_origin(resolution, candidate),
    )


def _metadata_origin(resolution: Resolution, candidate: Candidate) -> dict[str, str]:
    """Where a source's dependencies came from; the backend's Python when it is not the target's."""
    if candidate.kind == "wheel" or (candidate.name, candidate.version) not in resolution.origins:
        return {}
    origin, python = resolution.origins[(candidate.name, candidate.version)]
    out = {"metadata_from": origin}
    if python is not None and python != resolution.target.platform.python:
        out["metadata_python"] = python
    return out


def _overridden(resolution: Resolution, candidate: Candidate) -> tuple[str, ...]:
    asks = {f"{r.why}: {r.name}{r.overridden_from or ''}" for reqs in resolution.edges.values() for r in reqs
            if r.name == candidate.name and r.overridden_from is not None}
    return tuple(sorted(asks))


def _source(candidate: Candidate) -> Source:
    if candidate.kind == "git":
        return Source(git=candidate.git_url, commit=candidate.git_commit, subdirectory=candidate.subdirectory,
                      tree=candidate.git_tree)
    return Source(index=candidate.index)


def _dependencies(resolution: Resolution, candidate: Candidate) -> tuple[str, ...]:
    """Each dependency as `name<specifier>` for this target, extras' dependencies included."""
    keys = [k for k in resolution.edges if k == candidate.key or k.startswith(f"{candidate.key}[")]
    deps = {str(r) for k in keys for r in resolution.edges[k] if r.name != candidate.name}
    return tuple(sorted(deps))


def _recipe(resolution: Resolution, candidate: Candidate, knowledge: kb.Knowledge) -> BuildRecipe:
    """A source build's inputs: only what its ABI depends on, hashed like a derivation."""
    spec = resolution.target.spec(candidate.name)
    build = spec.build if spec is not None else None
    env = dict(build.env) if build is not None else {}
    providers = {b.package for b in knowledge.binaries if b.provides is not None}
    dep_names = {r.name for r in resolution.edges.get(candidate.key, [])}
    requires = tuple(sorted(f"{n}=={resolution.pins[n].version}" for n in dep_names
                            if n in providers and n in resolution.pins))
    digest = inputs_digest(
        source=[f.sha256 for f in candidate.files] or [candidate.git_url, candidate.git_commit],
        env=env, cuda=resolution.target.toolchain.cuda, requires=requires,
        requires_artifacts=(f.sha256 or "" for r in requires for f in resolution.pins[r.split("==")[0]].files),
        apt=build.apt if build is not None else (), target=build.target if build else None,
        gpu_arch=resolution.target.hardware.gpu.arch if resolution.target.hardware.gpu else None)
    return BuildRecipe(env=env, cuda=resolution.target.toolchain.cuda, requires=requires, inputs_digest=digest)
