"""The gate: judge a head lock against a base lock with facets recomputed, never trusted.

Why only *new* findings decide: a PR that bumps tqdm must not be blocked by a warning that was
already on main (flashinfer's SM12x crash), and an error already on main (a known issue added to
the knowledge base after the lock was made) is surfaced as a warning rather than blocking every
unrelated PR. A new error rejects; a new warning, or an old error, warns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from envbuilder.abi.hook import AbiHook, Inspector, cached_inspector
from envbuilder.abi.rules import Finding
from envbuilder.gate.diff import diff_locks
from envbuilder.gate.model import GateFinding, GateResult, TargetResult, Validation, Verdict, worst
from envbuilder.gate.sources import Pair, Side, pair_of_files, pairs_at_ref, repo_root
from envbuilder.knowledge import Knowledge, load_knowledge


@dataclass(frozen=True)
class GateOptions:
    strict: bool = False
    inspector: Inspector | None = cached_inspector
    ancestry: Callable | None = None


def gate_files(base: Path, head: Path | None = None, root: Path | None = None,
               options: GateOptions = GateOptions()) -> GateResult:
    return judge([pair_of_files(base, head, root)], options)


def gate_ref(ref: str, cwd: Path | None = None, options: GateOptions = GateOptions()) -> GateResult:
    root = repo_root(cwd or Path.cwd())
    return judge(pairs_at_ref(root, ref), options)


def judge(pairs: list[Pair], options: GateOptions) -> GateResult:
    results = tuple(_judge_pair(pair, options) for pair in pairs)
    counts = {"targets": len(results)}
    for result in results:
        for finding in result.findings:
            key = f"{finding.severity}s" + ("" if finding.new else "_existing")
            counts[key] = counts.get(key, 0) + 1
        counts["changes"] = counts.get("changes", 0) + len(result.changes)
    return GateResult(verdict=worst(r.verdict for r in results), strict=options.strict,
                      targets=results, counts=counts)


def _knowledge(side: Side) -> Knowledge:
    overlay = getattr(side.target, "knowledge", None) if side.target is not None else None
    base = load_knowledge()
    return base.with_overlay(overlay.model_dump(mode="json")) if overlay is not None else base


def _findings(side: Side, options: GateOptions) -> list[Finding]:
    hook = AbiHook(side.target, _knowledge(side), inspector=options.inspector,
                   ancestry=options.ancestry, toolchain=side.lock.toolchain)
    return hook.check(side.lock)


def _judge_pair(pair: Pair, options: GateOptions) -> TargetResult:
    changes = tuple(diff_locks(pair.base.lock if pair.base else None, pair.head.lock if pair.head else None))
    if pair.head is None:
        return TargetResult(target=pair.name, base=pair.base.path, head=None,
                            base_digest=pair.base.lock.digest, verdict="pass", changes=changes)
    base_keys = {f.key for f in _findings(pair.base, options)} if pair.base else set()
    head = pair.head
    findings = tuple(GateFinding.of(f, f.key not in base_keys, head.path, _line_of(head.text, f.package))
                     for f in _findings(head, options))
    return TargetResult(
        target=pair.name, base=pair.base.path if pair.base else None, head=head.path,
        base_digest=pair.base.lock.digest if pair.base else None, head_digest=head.lock.digest,
        verdict=_verdict(findings),
        changes=changes, findings=findings, validated=_validation(pair),
    )


def _verdict(findings: tuple[GateFinding, ...]) -> Verdict:
    if any(f.severity == "error" and f.new for f in findings):
        return "reject"
    if any((f.severity == "warning" and f.new) or f.severity == "error" for f in findings):
        return "warn"
    return "pass"


def _line_of(text: str, package: str) -> int | None:
    """The line of `name = "<package>"` in the lock, so an annotation lands on that package."""
    if package == "*":
        return None
    pattern = re.compile(r'^name\s*=\s*"' + re.escape(package) + r'"\s*$', re.IGNORECASE)
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line.strip()):
            return number
    return None


def _matches(entry_lock: str | None, digest: str | None) -> bool:
    if not entry_lock or not digest:
        return False
    wanted = entry_lock.removeprefix("sha256:").lower()
    return len(wanted) >= 12 and digest.removeprefix("sha256:").startswith(wanted)


def _validation(pair: Pair) -> Validation | None:
    target = pair.head.target if pair.head else None
    entries = tuple(getattr(target, "validated", ()) or ()) if target is not None else ()
    head_digest = pair.head.lock.digest if pair.head else None
    base_digest = pair.base.lock.digest if pair.base else None
    head_ok = [e for e in entries if _matches(e.lock, head_digest)]
    base_ok = any(_matches(e.lock, base_digest) for e in entries)
    described = tuple(f"{e.date}: {e.result} ({e.by})" for e in (head_ok or entries))
    if head_ok:
        note = "the head lock is a validated combination"
    elif not entries:
        note = "the matrix has no `validated:` entries"
    elif not any(e.lock for e in entries):
        note = "not validated: the matrix's `validated:` entries name no lock digest to match"
    else:
        note = "not validated: no `validated:` entry names this lock's digest" + \
               (" (the base lock was validated)" if base_ok else "")
    return Validation(head=bool(head_ok), base=base_ok, entries=described, note=note)
