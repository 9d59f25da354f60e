"""The gate: judge a head lock against a base lock with every check in `checks.CHECKERS`.

Why only *new* findings decide: a PR that bumps tqdm must not be blocked by a warning that was
already on main (flashinfer's SM12x crash), and an error already on main (a known issue added to
the knowledge base after the lock was made) is surfaced as a warning rather than blocking every
unrelated PR. A new error rejects; a new warning, or an old error, warns. What a check finds about
the change itself (an artifact replaced, a base image changed, knowledge added) is always new.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from envbuilder.abi.rules import SEVERITY_ORDER
from envbuilder.gate.context import Checker, GateContext, GateOptions
from envbuilder.gate.diff import diff_locks
from envbuilder.gate.model import GateFinding, GateResult, TargetResult, Validation, Verdict, worst
from envbuilder.gate.sources import Pair, pair_of_files, pairs_at_ref, repo_root

__all__ = ["GateOptions", "gate_files", "gate_ref", "judge"]


def gate_files(base: Path, head: Path | None = None, root: Path | None = None,
               options: GateOptions = GateOptions()) -> GateResult:
    return judge([pair_of_files(base, head, root)], options)


def gate_ref(ref: str, cwd: Path | None = None, options: GateOptions = GateOptions()) -> GateResult:
    root = repo_root(cwd or Path.cwd())
    return judge(pairs_at_ref(root, ref), options)


def judge(pairs: list[Pair], options: GateOptions, checkers: Sequence[Checker] | None = None) -> GateResult:
    if checkers is None:
        from envbuilder.gate.checks import CHECKERS

        checkers = CHECKERS
    results = tuple(_judge_pair(pair, options, checkers) for pair in pairs)
    counts = {"targets": len(results)}
    for result in results:
        for finding in result.findings:
            key = f"{finding.severity}s" + ("" if finding.new else "_existing")
            counts[key] = counts.get(key, 0) + 1
        counts["changes"] = counts.get("changes", 0) + len(result.changes)
    return GateResult(verdict=worst(r.verdict for r in results), strict=options.strict,
                      targets=results, counts=counts)


def _judge_pair(pair: Pair, options: GateOptions, checkers: Sequence[Checker]) -> TargetResult:
    changes = tuple(diff_locks(pair.base.lock if pair.base else None, pair.head.lock if pair.head else None))
    if pair.head is None:
        removed = GateFinding(package="*", rule="target-removed", severity="warning",
                              why=f"the change removes the lock of target {pair.name!r}", file=pair.base.path)
        return TargetResult(target=pair.name, base=pair.base.path, head=None, base_digest=pair.base.lock.digest,
                            verdict="warn", changes=changes, findings=(removed,))
    ctx = GateContext(pair, options)
    found = [finding for check in checkers for finding in check(ctx)]
    head = pair.head
    validated, extra = _validation(pair, options)
    findings = tuple(sorted([*found, *extra], key=lambda f: SEVERITY_ORDER[f.severity]))  # errors first, stable
    return TargetResult(
        target=pair.name, base=pair.base.path if pair.base else None, head=head.path,
        base_digest=pair.base.lock.digest if pair.base else None, head_digest=head.lock.digest,
        verdict=_verdict(findings),
        changes=changes, findings=findings, validated=validated,
    )


def _verdict(findings: tuple[GateFinding, ...]) -> Verdict:
    if any(f.severity == "error" and f.new for f in findings):
        return "reject"
    if any((f.severity == "warning" and f.new) or f.severity == "error" for f in findings):
        return "warn"
    return "pass"


def _validation(pair: Pair, options: GateOptions) -> tuple[Validation, list[GateFinding]]:
    """Validated records of the head and base locks (envbuilder.gate.validated), and what they imply."""
    from envbuilder.gate.validated import judge_validated

    base = pair.base
    return judge_validated(pair.name, pair.head.lock.digest, base.lock.digest if base else None,
                           pair.head.evidence, base.evidence if base else None,
                           require=options.require_validated, head_file=pair.head.path)
