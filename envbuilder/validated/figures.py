"""The numbers a record keeps from its report, computed one way for writing and for re-verifying.

Why one function for both: `validated verify` recomputes these from the report and compares them
with the record's; if writing and checking rounded differently, every honest record would fail.
"""

from __future__ import annotations

import hashlib
import json

from envbuilder.smoke.profile import SmokeProfile
from envbuilder.smoke.report import Report
from envbuilder.validated.model import HEADLINE, LevelFigures, Workload

DECIMALS = 3


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), DECIMALS)


def figures(report: Report) -> tuple[LevelFigures, ...]:
    out = []
    for level in sorted(report.levels, key=lambda lv: lv.concurrency):
        values = {name: _round(level.summary[name].mean) if name in level.summary else None for name in HEADLINE}
        out.append(LevelFigures(concurrency=level.concurrency, requests=sum(r.requests for r in level.runs),
                                failed=sum(r.failed for r in level.runs), **values))
    return tuple(out)


def profile_sha256(profile: SmokeProfile) -> str:
    canonical = json.dumps(profile.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def workload(report: Report) -> Workload:
    profile = report.workload.profile
    return Workload(profile_sha256=profile_sha256(profile), api=profile.api, prompt_tokens=profile.prompt_tokens,
                    max_tokens=profile.max_tokens, concurrency=tuple(profile.concurrency),
                    requests_per_level=profile.requests_per_level, repeats=profile.repeats)


def is_partial(report: Report) -> bool:
    """A report cut short (interrupted, a level missing) is never a pass, whatever it says."""
    if getattr(report, "partial", False) or getattr(report, "interrupted", False):
        return True
    if getattr(report, "status", None) in ("partial", "interrupted", "aborted"):
        return True
    ran = {lv.concurrency for lv in report.levels}
    return not report.levels or ran != set(report.workload.profile.concurrency)
