"""The ABI and known-issue rules on both locks, with facets recomputed and the base's knowledge.

A finding is *existing* only when the base had the same rule on the same package at the same or
a higher severity: a warning that became an error is new (it is what the change did), and says
so in its text.
"""

from __future__ import annotations

from collections.abc import Iterator

from envbuilder.abi.hook import AbiHook
from envbuilder.abi.rules import SEVERITY_ORDER, Finding
from envbuilder.gate.context import GateContext
from envbuilder.gate.model import GateFinding
from envbuilder.gate.sources import Side


def findings_of(side: Side, ctx: GateContext) -> list[Finding]:
    hook = AbiHook(side.target, ctx.knowledge, inspector=ctx.options.inspector,
                   ancestry=ctx.options.ancestry, toolchain=side.lock.toolchain)
    return hook.check(side.lock)


def _gravity(severity: str) -> int:
    """Higher is worse (SEVERITY_ORDER sorts errors first)."""
    return -SEVERITY_ORDER[severity]


def check_rules(ctx: GateContext) -> Iterator[GateFinding]:
    on_base: dict[tuple[str, str], str] = {}
    for finding in findings_of(ctx.base, ctx) if ctx.base is not None else ():
        worst = on_base.get(finding.key)
        if worst is None or _gravity(finding.severity) > _gravity(worst):
            on_base[finding.key] = finding.severity
    for finding in findings_of(ctx.head, ctx):
        before = on_base.get(finding.key)
        new = before is None or _gravity(finding.severity) > _gravity(before)
        if new and before is not None:
            finding = finding.model_copy(update={"why": f"{finding.why} (was {before} on the base)"})
        yield GateFinding.of(finding, new, ctx.head.path, ctx.package_line(finding.package))
