"""Resolve one target: run resolvelib over the Factory and explain failures in words."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from packaging.utils import NormalizedName
from packaging.version import Version
from resolvelib import BaseReporter, Resolver
from resolvelib.resolvers import ResolutionImpossible, ResolutionTooDeep

from envbuilder.errors import CheckFailed
from envbuilder.matrix import Target
from envbuilder.resolve.candidates import Candidate
from envbuilder.resolve.factory import Factory, Finder
from envbuilder.resolve.hooks import ResolverHook
from envbuilder.resolve.provider import Provider
from envbuilder.resolve.requirements import Req

MAX_ROUNDS = 20000


@dataclass(frozen=True)
class Resolution:
    target: Target
    pins: dict[NormalizedName, Candidate]  # base candidates, one per project
    edges: dict[str, list[Req]]  # pinned candidate key -> its dependency requirements
    rejected: dict[NormalizedName, list[str]]
    origins: dict[tuple[NormalizedName, Version], tuple[str, str | None]] = field(default_factory=dict)


def resolve(target: Target, finder: Finder, hook: ResolverHook,
            preferred: Mapping[str, str] | None = None) -> Resolution:
    factory = Factory(target, finder, hook, preferred)
    resolver = Resolver(Provider(factory), BaseReporter())
    try:
        roots = factory.root_requirements()
        factory.prefetch(roots)  # every root page at once: faster, and offline lists every miss
        result = resolver.resolve(roots, max_rounds=MAX_ROUNDS)
    except ResolutionImpossible as exc:
        raise CheckFailed(explain_conflict(target.name, exc.causes, factory)) from None
    except ResolutionTooDeep:
        raise CheckFailed(f"{target.name}: resolution did not settle within {MAX_ROUNDS} rounds; "
                          "pin more packages in the matrix") from None
    pins = {c.name: c for c in result.mapping.values() if not c.extras}
    # only the pinned candidates' requirements: backtracking tried (and recorded) others
    edges = {key: factory.edges[(key, c.version)] for key, c in result.mapping.items()}
    return Resolution(target, pins, edges, dict(factory.rejected), dict(factory.origins))


def explain_conflict(target: str, causes: list, factory: Factory) -> str:
    """The chain of requirements that cannot all hold, one per line, with why each was asked."""
    by_name: dict[str, list[str]] = {}
    for info in causes:
        req: Req = info.requirement
        by_name.setdefault(str(req.name), []).append(f"{req} (from {_chain(req.why or 'the matrix', factory)})")
    lines = [f"{target}: no set of versions satisfies the matrix and the ABI rules:"]
    for name, wants in sorted(by_name.items()):
        lines.append(f"  {name}:")
        lines.extend(f"    - {w}" for w in dict.fromkeys(wants))
        for reason in factory.rejected.get(name, [])[:5]:  # type: ignore[call-overload]
            lines.append(f"    - rejected {name} {reason}")
    if len(by_name) == 1:
        lines.append("  no published version of it matches all of these")
    return "\n".join(lines)


def _chain(why: str, factory: Factory, limit: int = 8) -> str:
    """'mid 1.0 <- worker 1.0 <- the matrix': who brought each asker in, back to the matrix."""
    asked_by = {r.key: r.why for reqs in factory.edges.values() for r in reqs
                if r.why and r.key != r.why.split(" ")[0]}
    links, seen = [why], set()
    key = why.split(" ")[0]
    while not why.startswith("the matrix") and key not in seen and len(links) < limit:
        seen.add(key)
        if factory.is_direct(key.partition("[")[0]):
            links.append("the matrix")
            break
        if key not in asked_by:
            break
        why = asked_by[key]
        links.append(why)
        key = why.split(" ")[0]
    return " <- ".join(links)
