"""The gate's checks: each reads one target's base and head (`GateContext`) and yields findings.

Order is the order of the report: the rules first (what a reviewer looks for), then what the
change does besides package versions, then the artifacts; the index check runs last because it
is the only one that may need the network. Another check (binary linkage, validated records) is
one more function in CHECKERS.
"""

from __future__ import annotations

from envbuilder.gate.checks.artifacts import check_replaced
from envbuilder.gate.checks.fields import check_fields
from envbuilder.gate.checks.index import check_index
from envbuilder.gate.checks.knowledge import check_knowledge
from envbuilder.gate.checks.linkage import check_linkage
from envbuilder.gate.checks.recipes import check_recipes
from envbuilder.gate.checks.rules import check_rules
from envbuilder.gate.context import Checker

CHECKERS: tuple[Checker, ...] = (check_rules, check_knowledge, check_fields, check_recipes, check_replaced, check_index,
                                 check_linkage)

__all__ = ["CHECKERS"]
