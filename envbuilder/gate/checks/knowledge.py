"""Knowledge a pull request adds, changes or removes in its matrix: listed, never applied.

The head is judged with the base's knowledge (`GateContext.knowledge`), so a matrix that says
"sgl-kernel 0.3.21 works with torch 2.10, source: trust me" cannot make a rejection disappear.
Each such fact is a `knowledge-changed` warning (`--strict` rejects) quoting the fact and its
source, so a reviewer decides whether it is true; once merged, it is the base's knowledge.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from packaging.utils import canonicalize_name

from envbuilder.gate.context import GateContext, overlay_of
from envbuilder.knowledge import BinaryFact, KnownIssue

RULE = "knowledge-changed"


def _binary_key(fact: BinaryFact) -> tuple[str, ...]:
    return "binaries", canonicalize_name(fact.package), fact.versions, fact.local or ""


def _issue_key(issue: KnownIssue) -> tuple[str, ...]:
    return "known_issues", issue.id


def _facts(overlay: Any) -> dict[tuple[str, ...], BinaryFact | KnownIssue]:
    if overlay is None:
        return {}
    facts: dict[tuple[str, ...], BinaryFact | KnownIssue] = {_binary_key(b): b for b in overlay.binaries}
    facts.update({_issue_key(i): i for i in overlay.known_issues})
    return facts


def describe(fact: BinaryFact | KnownIssue) -> str:
    """One line a reviewer can judge: what the fact claims and where it says it comes from."""
    if isinstance(fact, KnownIssue):
        claim = f"known issue {fact.id!r}: {fact.package} {fact.affected} is {fact.severity} ({fact.summary})"
    else:
        parts = [f"{side} {facets.model_dump(exclude_none=True)}"
                 for side, facets in (("requires", fact.requires), ("provides", fact.provides)) if facets]
        parts += [f"sass {list(fact.sass)}"] if fact.sass else []
        claim = f"binary fact: {fact.package} {fact.versions}" + (f" ({', '.join(parts)})" if parts else "")
    return f"{claim}; source: {fact.source!r}"


def check_knowledge(ctx: GateContext) -> Iterator[Any]:
    before, after = _facts(overlay_of(ctx.base)), _facts(overlay_of(ctx.head))
    file = _matrix_file(ctx)
    not_applied = "not applied: the head is judged with the base's knowledge; a reviewer must check the source"
    for key in sorted(after.keys() | before.keys()):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        fact = new if new is not None else old
        if old is None:
            why = f"the change adds {describe(new)}; {not_applied}"
        elif new is None:
            why = f"the change removes {describe(old)}; not applied: the base's knowledge still judges the head"
        else:
            why = f"the change replaces {describe(old)} with {describe(new)}; {not_applied}"
        yield ctx.finding(fact.package, RULE, "warning", why, file=file, line=None)


def _matrix_file(ctx: GateContext) -> str | None:
    return ctx.head.matrix_path
