"""The locked packages a set of packages needs to import, read from the lock alone.

A no-isolation source build installs its ABI inputs (torch) and everything they import (torch's
nvidia-* libraries load when setup.py imports torch); the build stage installs that closure, and
the build-requirements resolver keeps it fixed while it resolves the build tools around it.
"""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbuilder.lock.model import Lock, LockedPackage


def dependency_name(text: str) -> str:
    """The project a lock's dependency string names (`torch==2.9.1`, `nvidia-nccl-cu12; ...`)."""
    try:
        return Requirement(text).name
    except InvalidRequirement:
        return text.split(";")[0].split()[0]


def import_closure(lock: Lock, roots: list[str]) -> tuple[LockedPackage, ...]:
    """`roots` and their locked dependencies, transitively, by name; source builds left out."""
    found: dict[str, LockedPackage] = {}
    todo = list(roots)
    while todo:
        pkg = lock.package(todo.pop())
        if pkg is None or canonicalize_name(pkg.name) in found or pkg.build is not None:
            continue
        found[canonicalize_name(pkg.name)] = pkg
        todo += [dependency_name(d) for d in pkg.dependencies]
    return tuple(found[name] for name in sorted(found))
