"""The gate's validated line: does the head lock have a passing record that checks out, and did the base?

Why records and not the matrix's prose: a prose entry names no report, so nothing can check it;
it is listed as unverifiable. A record counts when its report is beside it and re-verifies.

Why records a change adds are findings: a pull request can add a record as easily as a lock; its
report re-verifies (the numbers are the report's), but where it ran is the author's word. Such a
record counts, and a warning asks a reviewer to look, so it is never trusted silently. With
`--base-ref` the base's records are the ones at that ref; with `--base FILE` there is no history,
so every record in the project is treated as already reviewed.
"""

from __future__ import annotations

from envbuilder.gate.model import GateFinding, Validation
from envbuilder.validated.check import Checked
from envbuilder.validated.evidence import Evidence


def _where(c: Checked) -> str:
    r = c.record
    return f"{r.date}: {r.headline()} on {r.host.describe()} ({c.stored.name})"


def _finding(rule: str, severity: str, why: str, file: str | None) -> GateFinding:
    return GateFinding(package="*", rule=rule, severity=severity, why=why, new=True, file=file)


def judge_validated(target: str, head_digest: str | None, base_digest: str | None, head: Evidence | None,
                    base: Evidence | None, *, require: bool, head_file: str | None
                    ) -> tuple[Validation, list[GateFinding]]:
    head = head or Evidence(target)
    known = {(c.stored.name, c.stored.sha256) for c in base.checked} if base is not None else None
    added = [c for c in head.checked if known is not None and (c.stored.name, c.stored.sha256) not in known]
    passing = head.passing(head_digest)
    base_passing = (base or head).passing(base_digest) if base_digest else []
    findings: list[GateFinding] = []
    folder = f"matrices/{target}.validated"
    for c in added:
        severity = "warning" if c.status in ("verified", "failed-run", "imported") else "error"
        findings.append(_finding("record-added", severity,
                                 f"this change adds record {c.stored.name} ({c.status}: {c.detail or 'report re-verifies'})"
                                 "; the report's figures are checked, where it ran is the author's word: review it",
                                 f"{folder}/{c.stored.name}"))
    lost = bool(base_passing) and not passing and head_digest != base_digest
    if lost:
        findings.append(_finding("validated-lost", "error" if require else "warning",
                                 f"the change leaves validated lock {base_digest[:19]} (passing on "
                                 f"{base_passing[0].record.host.describe()}) for lock {(head_digest or '')[:19]}, "
                                 "which no passing record vouches for", head_file))
    elif require and not passing:
        findings.append(_finding("not-validated", "error",
                                 f"--require-validated: no verified passing record for lock {(head_digest or '')[:19]}; "
                                 f"run `envbuilder serve {target} --smoke --record` on the target hardware and "
                                 f"commit {folder}/", head_file))
    added_names = {c.stored.name for c in added}
    entries = [f"passing: {_where(c)}" + (" [added by this change]" if c.stored.name in added_names else "")
               for c in passing]
    entries += [f"failed run of this lock: {_where(c)}" for c in head.failed(head_digest)]
    entries += [f"imported, unverifiable, not counted: {c.record.date}: {c.record.headline()} ({c.stored.name})"
                for c in head.imported]
    entries += [f"matrix prose, unverifiable, not counted: {p}" for p in head.prose]
    entries += [f"not evidence: {c.line()}" for c in head.problems]
    if passing:
        hardware = sorted({c.record.host.describe() for c in passing})
        note = f"{len(passing)} verified passing record(s) for the head lock, on {'; '.join(hardware)}"
    else:
        note = "no verified passing record for the head lock"
    if base_digest and base_digest != head_digest:
        note += "; the base lock was validated" if base_passing else "; the base lock was not validated either"
    return Validation(head=bool(passing), base=bool(base_passing), entries=tuple(entries), note=note), findings
