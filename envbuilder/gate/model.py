"""The gate's result: the stable, documented JSON schema (`schema: 1`) every format renders.

Why one model: text, Markdown, GitHub annotations and JSON are views of the same value, so they
cannot disagree; CI scripts read the JSON and must be able to rely on its keys.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from envbuilder.abi.rules import Finding
from envbuilder.gate.diff import Change
from envbuilder.model import StrictModel

SCHEMA = 1
Verdict = Literal["pass", "warn", "reject"]
VERDICT_ORDER = {"pass": 0, "warn": 1, "reject": 2}


class GateFinding(StrictModel):
    """A rule finding on the head lock; `new` is False when the base lock already had it."""

    package: str
    rule: str
    severity: Literal["error", "warning", "info"]
    why: str
    reference: str | None = None
    new: bool = True
    file: str | None = None
    line: int | None = None

    @classmethod
    def of(cls, finding: Finding, new: bool, file: str | None, line: int | None) -> "GateFinding":
        return cls(**finding.model_dump(), new=new, file=file, line=line)


class Validation(StrictModel):
    """Whether the head combination is one the matrix's `validated:` entries vouch for."""

    head: bool
    base: bool
    entries: tuple[str, ...] = ()
    note: str


class TargetResult(StrictModel):
    target: str
    base: str | None
    head: str | None
    base_digest: str | None = None
    head_digest: str | None = None
    verdict: Verdict
    changes: tuple[Change, ...] = ()
    findings: tuple[GateFinding, ...] = ()
    validated: Validation | None = None


class GateResult(StrictModel):
    schema_: int = Field(SCHEMA, alias="schema")
    verdict: Verdict
    strict: bool = False
    targets: tuple[TargetResult, ...]
    counts: dict[str, int]

    def to_json(self) -> dict:
        return self.model_dump(mode="json", by_alias=True)

    @property
    def exit_code(self) -> int:
        if self.verdict == "reject" or (self.strict and self.verdict == "warn"):
            return 1
        return 0


def worst(verdicts) -> Verdict:
    return max(verdicts, key=VERDICT_ORDER.__getitem__, default="pass")
