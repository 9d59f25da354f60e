"""Why a locked package has its version: the paths from the matrix, each dependent's ask,
overrides, and the knowledge rules that looked at it. Reads only the lock and the matrix."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envbuilder.abi.rules import TargetFacts, condition_holds
from envbuilder.errors import BadInput
from envbuilder.knowledge import Knowledge
from envbuilder.lock.model import Lock, LockedPackage
from envbuilder.matrix import Target

MAX_PATHS = 5


@dataclass(frozen=True)
class Explanation:
    package: LockedPackage
    requested: str | None
    override: bool
    wanted_by: list[tuple[str, str]]  # (dependent "name version", its specifier)
    overridden: list[str]
    paths: list[list[str]]
    rules: list[str]


def explain(target: Target, lock: Lock, knowledge: Knowledge, name: str) -> Explanation:
    pkg = lock.package(name)
    if pkg is None:
        raise BadInput(f"{name!r} is not in the {lock.target} lock ({len(lock.packages)} packages)")
    spec = target.spec(pkg.name)
    return Explanation(
        package=pkg,
        requested=spec.version if spec is not None else None,
        override=bool(spec and spec.override),
        wanted_by=_wanted_by(lock, pkg.name),
        overridden=list(pkg.overridden),
        paths=_paths(lock, target, pkg.name),
        rules=_rules(knowledge, pkg, TargetFacts.of(target, lock.toolchain)),
    )


def _dep_name(text: str) -> str:
    return canonicalize_name(Requirement(text).name)


def _wanted_by(lock: Lock, name: str) -> list[tuple[str, str]]:
    out = []
    for p in lock.packages:
        for dep in p.dependencies:
            req = Requirement(dep)
            if canonicalize_name(req.name) == name:
                out.append((f"{p.name} {p.version}", str(req.specifier) or "any version"))
    return sorted(out)


def _paths(lock: Lock, target: Target, name: str) -> list[list[str]]:
    """Shortest paths from the matrix's own packages to `name`, breadth first."""
    children = {p.name: [_dep_name(d) for d in p.dependencies] for p in lock.packages}
    roots = [canonicalize_name(n) for n in target.packages]
    queue = deque([[r] for r in roots if r in children])
    paths, seen = [], set()
    while queue and len(paths) < MAX_PATHS:
        path = queue.popleft()
        if path[-1] == name:
            paths.append(path)
            continue
        for child in children.get(path[-1], []):
            if child not in path and (path[-1], child) not in seen:
                seen.add((path[-1], child))
                queue.append([*path, child])
    return paths


def _rules(knowledge: Knowledge, pkg: LockedPackage, facts: TargetFacts) -> list[str]:
    """The package's known issues that can apply here: a rule for another arch or model is not listed."""
    lines = []
    for issue in knowledge.known_issues:
        if canonicalize_name(issue.package) != canonicalize_name(pkg.name) or not condition_holds(issue, facts):
            continue
        state = "AFFECTED" if issue.affects(pkg.name, pkg.version) else "clear"
        lines.append(f"{issue.id} ({issue.severity}, {issue.affected}): {state} — {issue.summary} [{issue.source}]")
    fact = knowledge.binary(pkg.name, pkg.version)
    if fact is not None:
        lines.append(f"ABI facts ({fact.versions}): {fact.source}")
    return lines
