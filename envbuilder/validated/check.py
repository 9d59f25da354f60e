"""Re-verify records: a record is evidence only when its report is present and says what it says.

For a run record: the report beside it exists, its sha256 and size are the recorded ones, it parses
as a smoke report of the same target, its workload hashes to the recorded profile hash, its figures
recomputed are the recorded figures, its lock digest (when the report carries one) is the
record's, and a `passed` record's report passed and ran every level. Anything else is a finding.
Imported records have no report: they are shown as "imported, unverifiable" and never count.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from envbuilder.smoke.report import SCHEMA, Report
from envbuilder.validated import store
from envbuilder.validated.figures import figures, is_partial, profile_sha256
from envbuilder.validated.model import Record

Status = Literal["verified", "failed-run", "imported", "no-report", "mismatch", "broken"]

#: How each status reads to a person.
MEANING = {
    "verified": "passed, report re-verified",
    "failed-run": "failed run (known-bad), report re-verified",
    "imported": "imported, unverifiable (no report)",
    "no-report": "report missing: not evidence",
    "mismatch": "report does not match the record: not evidence",
    "broken": "unreadable record: not evidence",
}


@dataclass(frozen=True)
class Checked:
    stored: store.Stored
    status: Status
    detail: str = ""

    @property
    def record(self) -> Record | None:
        return self.stored.record

    @property
    def counts(self) -> bool:
        """Only a verified passing run counts as validation."""
        return self.status == "verified"

    @property
    def problem(self) -> bool:
        return self.status in ("no-report", "mismatch", "broken")

    def line(self) -> str:
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.stored.name}: {MEANING[self.status]}{detail}"


def _parse_report(data: bytes) -> Report:
    raw = json.loads(data.decode("utf-8"))
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        raise ValueError(f"not an {SCHEMA} report")
    return Report.model_validate(raw)


def _host_contradiction(record: Record, environment: dict) -> str | None:
    """The report saw the GPUs too (nvidia-smi, when it was there): the record's host must agree."""
    gpus = environment.get("gpus")
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        return None
    host = record.host
    if host.gpu_count is not None and host.gpu_count != len(gpus):
        return f"the record says {host.gpu_count} GPU(s), its report saw {len(gpus)}"
    names = " + ".join(sorted({str(g.get("name")) for g in gpus}))
    if gpus and host.gpu_model and host.gpu_model != names:
        return f"the record says {host.gpu_model!r} GPUs, its report saw {names!r}"
    drivers = {str(g.get("driver_version")) for g in gpus}
    if gpus and host.driver and drivers != {host.driver}:
        return f"the record says driver {host.driver}, its report saw {', '.join(sorted(drivers))}"
    return None


def _compare(record: Record, report: Report) -> str | None:
    """The first way the report contradicts the record, or None."""
    if report.target != record.target:
        return f"report is for target {report.target!r}"
    if record.workload and profile_sha256(report.workload.profile) != record.workload.profile_sha256:
        return "the report's smoke profile hashes differently"
    if figures(report) != record.levels:
        return "the report's figures differ from the record's"
    host = _host_contradiction(record, report.environment or {})
    if host:
        return host
    reported_lock = (report.environment or {}).get("lock_digest")
    if reported_lock and record.lock_digest and reported_lock != record.lock_digest:
        return f"the report ran lock {str(reported_lock)[:19]}, the record names {record.lock_digest[:19]}"
    if record.verdict == "passed" and (not report.passed or is_partial(report)):
        return "the record says passed, its report " + ("is partial" if report.passed else "failed")
    return None


def check(stored: store.Stored) -> Checked:
    record = stored.record
    if record is None:
        return Checked(stored, "broken", stored.error or "")
    if record.kind == "imported":
        return Checked(stored, "imported")
    if record.report is None:
        return Checked(stored, "mismatch", "a run record without a report hash")
    path: Path = store.report_path(stored.path)
    if not path.exists() and not path.is_symlink():
        return Checked(stored, "no-report", f"{path.name} is absent")
    try:
        data = store.read_bounded(path, store.MAX_REPORT_BYTES)
    except (OSError, ValueError) as exc:
        return Checked(stored, "mismatch", f"{path.name}: {getattr(exc, 'strerror', None) or exc}")
    sha = hashlib.sha256(data).hexdigest()
    if sha != record.report.sha256 or len(data) != record.report.size:
        return Checked(stored, "mismatch", f"{path.name} has sha256 {sha[:12]}..., the record says "
                                           f"{record.report.sha256[:12]}...")
    try:
        report = _parse_report(data)
    except (UnicodeDecodeError, ValueError, ValidationError) as exc:
        first = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)[:200]
        return Checked(stored, "mismatch", f"{path.name} is not a readable smoke report ({first})")
    wrong = _compare(record, report)
    if wrong:
        return Checked(stored, "mismatch", wrong)
    return Checked(stored, "verified" if record.verdict == "passed" else "failed-run")
