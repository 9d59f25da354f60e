"""Every source build's inputs digest, re-derived from the head lock and matrix, never trusted.

A recipe's `inputs-digest` keys its image build stage (a bump elsewhere must not recompile
flash-attn, and must not reuse a stage built from other inputs): a digest that its recorded
inputs do not give is `build-inputs-mismatch`, an error. The inputs are the source files'
hashes (or git URL and commit), the recipe's env, CUDA and requirements, the required packages'
file hashes in this lock, and the matrix's apt packages, build target and GPU arch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from envbuilder.gate.context import GateContext
from envbuilder.gate.model import GateFinding
from envbuilder.lock.model import Lock, LockedPackage
from envbuilder.lock.recipe import inputs_digest


def derived_digest(lock: Lock, package: LockedPackage, target: Any) -> str | None:
    """What the resolver would record for this recipe; None when a required package is not locked."""
    recipe = package.build
    spec = target.spec(package.name) if target is not None else None
    build = spec.build if spec is not None else None
    required = []
    for pin in recipe.requires:
        provider = lock.package(pin.partition("==")[0])
        if provider is None:
            return None
        required += [a.sha256 for a in provider.artifacts]
    gpu = getattr(getattr(target, "hardware", None), "gpu", None)
    return inputs_digest(
        source=[a.sha256 for a in package.artifacts] or [package.source.git, package.source.commit],
        env=recipe.env, cuda=target.toolchain.cuda, requires=recipe.requires, requires_artifacts=required,
        apt=build.apt if build is not None else (), target=build.target if build is not None else None,
        gpu_arch=gpu.arch if gpu is not None else None)


def check_recipes(ctx: GateContext) -> Iterator[GateFinding]:
    target = ctx.head.target
    if target is None:  # no matrix: apt, target and arch are unknown, nothing to derive from
        return
    for package in ctx.head.lock.packages:
        if package.build is None:
            continue
        derived = derived_digest(ctx.head.lock, package, target)
        if derived is None or derived == package.build.inputs_digest:
            continue
        yield ctx.finding(package.name, "build-inputs-mismatch", "error",
                          f"{package.name} {package.version}: the lock records build inputs digest "
                          f"{package.build.inputs_digest}, its recorded inputs and the matrix give {derived}: "
                          "the recipe was edited or the matrix changed since locking; re-lock",
                          line=ctx.package_line(package.name))
