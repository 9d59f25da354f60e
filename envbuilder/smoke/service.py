"""One smoke run end to end: confirm the server, measure, judge, and return the report.

The verdict fails (exit 1) on a missed threshold, a regression against the baseline, or any failed
request unless the profile bounds `error_rate` itself; every reason is a line in `verdict`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from envbuilder import __version__
from pydantic import ValidationError

from envbuilder.errors import BadInput, EnvbuilderError, Unreachable
from envbuilder.serve.ready import ServerFacts, wait_ready
from envbuilder.smoke import environment
from envbuilder.smoke.baseline import compare
from envbuilder.smoke.client import Session
from envbuilder.smoke.gates import check_goals
from envbuilder.smoke.metrics import FORMULAS, level_run, summarize
from envbuilder.smoke.profile import SmokeProfile
from envbuilder.smoke.report import BaselineResult, Level, Report, ThresholdResult, Workload, read_report
from envbuilder.smoke.prompts import Calibration
from envbuilder.smoke.runner import LevelDeadline, NoProgress, Progress, SweepData, sweep
from envbuilder.smoke.thresholds import check_thresholds


@dataclass(frozen=True)
class Endpoint:
    """Where the server is and how to ask it whether it is ready."""

    base_url: str
    ready_path: str = "/health"
    models_path: str = "/v1/models"
    info_path: str | None = None
    ready_timeout_s: float = 60.0
    model: str | None = None  # request `model` if the profiles do not name one


def _choose_model(profile: SmokeProfile, endpoint: Endpoint, facts: ServerFacts) -> str:
    model = profile.model or endpoint.model or (facts.models[0] if facts.models else None)
    if not model:
        raise Unreachable(f"{endpoint.base_url}{endpoint.models_path} lists no model; pass --model NAME")
    return model


class SmokeInterrupted(Exception):
    """The sweep was cut short; `report` holds the levels that finished (marked partial), `cause`
    is what cut it (KeyboardInterrupt, an EnvbuilderError, a level deadline)."""

    def __init__(self, report: Report, cause: BaseException):
        super().__init__(report.partial_reason)
        self.report, self.cause = report, cause


async def _measure(endpoint: Endpoint, profile: SmokeProfile, model: str, progress: Progress,
                   kept: list[SweepData], dropped: set[str], level_deadline_s: float | None) -> SweepData:
    session = Session(endpoint.base_url, profile, model, max_connections=max(profile.concurrency))
    try:
        return await sweep(session, progress, kept.append, level_deadline_s)
    finally:
        dropped.update(session.dropped)
        await session.aclose()


def _levels(data: SweepData, profile: SmokeProfile) -> list[Level]:
    """One Level per concurrency whose runs all finished (a cut-short sweep has fewer)."""
    default_prompt = data.calibration.measured_tokens or profile.prompt_tokens
    levels = []
    for c in profile.concurrency:
        runs = [level_run(rd.results, concurrency=c, request_rate=profile.request_rate, run=rd.run,
                          slo=profile.slo, default_prompt_tokens=default_prompt)
                for rd in data.runs if rd.concurrency == c]
        if len(runs) < profile.repeats:
            continue
        levels.append(Level(concurrency=c, request_rate=profile.request_rate, runs=runs, summary=summarize(runs)))
    return levels


def _verdict(levels: list[Level], thresholds: list[ThresholdResult], baseline: BaselineResult | None,
             profile: SmokeProfile) -> list[str]:
    reasons = [t.message for t in thresholds if not t.passed]
    if not any(t.metric == "error_rate" for t in profile.thresholds):
        for level in levels:
            errors = sum((Counter(r.errors) for r in level.runs), Counter())
            if errors:
                total = sum(r.requests for r in level.runs)
                kinds = ", ".join(f"{k} x{n}" for k, n in sorted(errors.items()))
                reasons.append(f"concurrency {level.concurrency}: {errors.total()} of {total} requests failed ({kinds})")
    if baseline and baseline.regressed:
        for c in baseline.comparisons:
            if c.regressed:
                reasons.append(f"regression at concurrency {c.concurrency}: {c.metric} {c.baseline_mean:.4g} -> "
                               f"{c.current_mean:.4g} ({c.change_pct:+.1f}%)")
    return reasons


def _header(endpoint: Endpoint, target: str | None, api: str) -> dict:
    return {"created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "tool": {"name": "envbuilder", "version": __version__}, "target": target,
            "endpoint": endpoint.base_url, "api": api, "environment": environment.collect(), "formulas": FORMULAS}


def unready_report(endpoint: Endpoint, profile: SmokeProfile, target: str | None, reason: str) -> Report:
    """The report of a run that never got to send a request: the server was not ready."""
    return Report(**_header(endpoint, target, profile.api), model=profile.model or endpoint.model or "",
                  server={"ready": False}, workload=Workload(profile=profile), levels=[], thresholds=[],
                  passed=False, verdict=[reason])


def run_smoke(endpoint: Endpoint, profile: SmokeProfile, *, target: str | None = None,
              baseline: Path | None = None, facts: ServerFacts | None = None,
              progress: Progress | None = None, server_kind: str | None = None,
              level_deadline_s: float | None = None, figures: list | None = None) -> Report:
    """One smoke run; `figures` (envbuilder.smoke.gates.Figure) is the evidence the profile's goals are judged by."""
    base = read_report(baseline) if baseline else None  # bad input fails before minutes of load
    if base is not None and base.partial:
        raise BadInput(f"{baseline}: key 'partial': a partial report ({base.partial_reason}) cannot be a baseline; "
                       "use a complete run")
    facts = facts or wait_ready(endpoint.base_url, ready_path=endpoint.ready_path, models_path=endpoint.models_path,
                                info_path=endpoint.info_path, deadline_s=endpoint.ready_timeout_s)
    model = _choose_model(profile, endpoint, facts)
    kept: list[SweepData] = []
    dropped: set[str] = set()
    try:
        data = asyncio.run(_measure(endpoint, profile, model, progress or NoProgress(), kept, dropped,
                                    level_deadline_s))
    except (KeyboardInterrupt, EnvbuilderError, LevelDeadline, OSError) as exc:
        reason = _cut_reason(exc)
        data = kept[0] if kept else SweepData(calibration=Calibration(words=0, measured_tokens=None, exact=False, probes=0),
                                                  warmup_failed=0)
        report = _report(endpoint, profile, target, base, baseline, facts, model, data, sorted(dropped),
                         server_kind, partial=reason, figures=figures)
        raise SmokeInterrupted(report, exc) from None
    return _report(endpoint, profile, target, base, baseline, facts, model, data, sorted(dropped), server_kind,
                   figures=figures)


def _cut_reason(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted (Ctrl-C)"
    return str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__


def _report(endpoint: Endpoint, profile: SmokeProfile, target: str | None, base: Report | None,
            baseline: Path | None, facts: ServerFacts, model: str, data: SweepData, dropped: list[str],
            server_kind: str | None, partial: str | None = None, figures: list | None = None) -> Report:
    levels = _levels(data, profile)
    thresholds = check_thresholds(profile.thresholds, levels)
    goals = check_goals(profile.goals, levels, figures or [], profile.concurrency)
    comparison = compare(levels, base.levels, profile.regression, str(baseline)) if base else None
    reasons = _verdict(levels, thresholds, comparison, profile)
    if partial is not None:
        done = ", ".join(str(lv.concurrency) for lv in levels) or "none"
        reasons.insert(0, f"partial: {partial}; finished levels: {done} of "
                          f"{', '.join(map(str, profile.concurrency))}")
    return Report(
        **_header(endpoint, target, profile.api), model=model,
        server={"ready": True, "kind": server_kind, "models": list(facts.models), "models_response": facts.models_raw,
                "info": facts.info, "ready_after_s": round(facts.ready_after_s, 3)},
        workload=Workload(profile=profile, prompt_words=data.calibration.words,
                          prompt_tokens_calibrated=data.calibration.exact,
                          calibration_probes=data.calibration.probes, dropped_fields=dropped,
                          warmup_failed=data.warmup_failed),
        levels=levels, thresholds=thresholds, goals=goals, baseline=comparison, passed=not reasons, verdict=reasons,
        partial=partial is not None, partial_reason=partial,
    )


def with_overrides(profile: SmokeProfile, **overrides) -> SmokeProfile:
    """The profile with command-line values on top, validated like the matrix itself."""
    given = {k: v for k, v in overrides.items() if v is not None}
    try:
        return SmokeProfile.model_validate({**profile.model_dump(), **given})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BadInput(f"option {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
