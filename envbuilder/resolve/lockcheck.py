"""`lock --check`: prove each committed lock is what its matrix resolves to, not just well-formed.

A lock arrives in pull requests, and a valid-looking lock can lie: a zeroed sha256, a version the
resolver never chose, an artifact from another index. So the check re-resolves the matrix (the
lock's pins as preferences, as `envbuilder lock` does) from the local cache, offline, and requires
the result to equal the lock key for key; any difference is printed with both values (exit 1).
With `online`, pages are fetched fresh and every locked artifact is also asked of its index by
name, sha256 and size: an index that cannot be reached is exit 3, never a pass.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from envbuilder.errors import CheckFailed, Unreachable
from envbuilder.index.client import IndexClient
from envbuilder.index.errors import MissingFromCache
from envbuilder.lock import Lock, lock_path, read_lock
from envbuilder.lock.compare import differences
from envbuilder.matrix import Target
from envbuilder.resolve.hooks import default_hook
from envbuilder.resolve.buildlock import preferred_tools
from envbuilder.resolve.locker import (LockOptions, client_for, knowledge_for, preferred_pins, resolve_lock,
                                       stale_reasons)


@dataclass(frozen=True)
class CheckReport:
    target: str
    path: Path
    problems: tuple[str, ...]  # empty: the lock is exactly the matrix's resolution


def check_target(target: Target, root: Path, online: bool = False) -> CheckReport:
    path = lock_path(root, target.name)
    problems = stale_reasons(target, path)  # missing, unreadable (exit 2), another matrix or knowledge
    if problems:
        return CheckReport(target.name, path, tuple(problems))
    lock = read_lock(path)
    knowledge = knowledge_for(target)
    options = {"page_ttl": 0} if online else {}
    with client_for(target, offline=not online, **options) as client:
        try:
            resolved, findings = resolve_lock(target, client, knowledge, default_hook(target, knowledge),
                                              preferred_pins(lock, LockOptions()), link=_has_linkage(lock),
                                              tools=preferred_tools(lock))
        except MissingFromCache as exc:
            raise Unreachable(f"{path}: cannot re-resolve offline to check its content: {exc}; "
                              "or run `envbuilder lock --check --online`") from None
        except CheckFailed as exc:
            return CheckReport(target.name, path, (f"{path}: the matrix no longer resolves: {exc}",))
        problems = [f"{path}: {line}" for line in differences(lock, resolved)]
        problems += [f"{path}: the resolved set breaks a rule: {f}" for f in findings if f.severity == "error"]
        if online:
            problems += [f"{path}: {line}" for line in index_problems(lock, client)]
    return CheckReport(target.name, path, tuple(problems))


def check_targets(targets: Iterable[Target], root: Path, online: bool = False) -> list[CheckReport]:
    return [check_target(t, root, online) for t in targets]


def _has_linkage(lock: Lock) -> bool:
    return any(a.linkage for p in lock.packages for a in p.artifacts)


def index_problems(lock: Lock, client: IndexClient) -> list[str]:
    """Each locked artifact as its index lists it now: present, same sha256, same size."""
    by_index: dict[str, list] = defaultdict(list)
    for package in lock.packages:
        if package.source.index is not None:
            by_index[package.source.index].append(package)
    problems = []
    for index, packages in sorted(by_index.items()):
        pages = client.files_many([p.name for p in packages], index)
        for package in packages:
            listed = {f.filename: f for f in pages.get(package.name, ())}
            for artifact in package.artifacts:
                where = f"package {package.name}, artifact {artifact.filename}"
                found = listed.get(artifact.filename)
                if found is None:
                    problems.append(f"{where}: index {index!r} does not list it")
                elif found.sha256 != artifact.sha256:
                    problems.append(f"{where}: lock has sha256 {artifact.sha256}, index {index!r} has "
                                    f"{found.sha256 or 'no sha256'}")
                elif artifact.size is not None and (size := client.size(found)) != artifact.size:
                    problems.append(f"{where}: lock has size {artifact.size}, index {index!r} has {size}")
    return problems
