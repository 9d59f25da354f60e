"""What every gate check is given: the two sides, the knowledge that judges them, the options.

Why one context and a list of checks: each check (ABI rules, knowledge changes, artifact hashes,
the index, toolchain and recipe changes, and checks added later such as binary linkage) reads the
same pair and returns findings; the service only runs them and sums up. A new check is one
function appended to `envbuilder.gate.checks.CHECKERS`.

Why the base's knowledge: knowledge decides what is an error. A pull request that brings its own
facts (a matrix `knowledge:` saying a kernel works with a newer torch) would otherwise approve
itself; the head is judged with the shipped knowledge plus the *base* matrix's overlay, and what
the PR adds or changes is reported for a reviewer (`knowledge-changed`), never applied.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from envbuilder.abi.hook import Inspector, cached_inspector
from envbuilder.gate.model import GateFinding
from envbuilder.gate.sources import Pair, Side
from envbuilder.knowledge import Knowledge, load_knowledge


@dataclass(frozen=True)
class GateOptions:
    strict: bool = False
    inspector: Inspector | None = cached_inspector
    ancestry: Callable | None = None
    offline: bool = False  # new artifacts are checked against cached index pages only (misses: exit 3)
    require_validated: bool = False  # no verified passing smoke record for the head lock rejects
    link: bool = False  # link both locks from their binaries even when the head records no linkage


def overlay_of(side: Side | None) -> Any:
    """A side's matrix `knowledge:` overlay (None when the side or its matrix is absent)."""
    target = side.target if side is not None else None
    return getattr(target, "knowledge", None) if target is not None else None


@dataclass
class GateContext:
    """One target's pair as the checks see it; `head` is never None here (removals are not checked)."""

    pair: Pair
    options: GateOptions

    @property
    def base(self) -> Side | None:
        return self.pair.base

    @property
    def head(self) -> Side:
        assert self.pair.head is not None
        return self.pair.head

    @cached_property
    def knowledge(self) -> Knowledge:
        """Shipped knowledge plus the base matrix's overlay: what judges both sides."""
        overlay = overlay_of(self.base)
        shipped = load_knowledge()
        return shipped.with_overlay(overlay.model_dump(mode="json")) if overlay is not None else shipped

    def finding(self, package: str, rule: str, severity: str, why: str, *, line: int | None = None,
                file: str | None = None, reference: str | None = None) -> GateFinding:
        """A finding a check introduces itself (always new: it describes a change or the head alone)."""
        return GateFinding(package=package, rule=rule, severity=severity, why=why, reference=reference,
                           new=True, file=file or self.head.path, line=line)

    def package_line(self, package: str) -> int | None:
        """The line of `name = "<package>"` in the head lock, so an annotation lands on that package."""
        if package == "*":
            return None
        return line_matching(self.head.text, r'name\s*=\s*"' + re.escape(package) + r'"')

    def key_line(self, key: str, value: str | None = None) -> int | None:
        """The line of `key = ...` (or `key = "value"`) in the head lock."""
        tail = r'"' + re.escape(value) + r'"' if value is not None else r"\S"
        return line_matching(self.head.text, re.escape(key) + r"\s*=\s*" + tail)


def line_matching(text: str, pattern: str) -> int | None:
    """1-based number of the first line that starts with `pattern` (leading blanks ignored)."""
    compiled = re.compile(pattern, re.IGNORECASE)
    for number, line in enumerate(text.splitlines(), start=1):
        if compiled.match(line.strip()):
            return number
    return None


Checker = Callable[[GateContext], Iterable[GateFinding]]
