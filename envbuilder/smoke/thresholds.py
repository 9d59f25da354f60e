"""Pass/fail bounds from the profile, checked against the mean over a level's repeats."""

from __future__ import annotations

from envbuilder.smoke.profile import Threshold
from envbuilder.smoke.report import Level, ThresholdResult


def _level_for(threshold: Threshold, levels: list[Level]) -> Level | None:
    if threshold.at == "max":
        return max(levels, key=lambda lv: lv.concurrency, default=None)
    if threshold.at == "min":
        return min(levels, key=lambda lv: lv.concurrency, default=None)
    return next((lv for lv in levels if lv.concurrency == threshold.at), None)


def check_threshold(threshold: Threshold, levels: list[Level]) -> ThresholdResult:
    level = _level_for(threshold, levels)
    at = level.concurrency if level else (threshold.at if isinstance(threshold.at, int) else 0)
    common = {"metric": threshold.metric, "at": at, "min": threshold.min, "max": threshold.max}
    if level is None:
        return ThresholdResult(**common, value=None, passed=False,
                               message=f"{threshold.metric}: no concurrency level {threshold.at} was run")
    value = level.summary[threshold.metric].mean
    if value is None:
        return ThresholdResult(**common, value=None, passed=False,
                               message=f"{threshold.metric} at concurrency {at}: no value (no successful request)")
    low_ok = threshold.min is None or value >= threshold.min
    high_ok = threshold.max is None or value <= threshold.max
    bound = " and ".join(b for b in (threshold.min is not None and f">= {threshold.min:g}",
                                     threshold.max is not None and f"<= {threshold.max:g}") if b)
    verdict = "ok" if low_ok and high_ok else "FAILED"
    source = f"; {threshold.source}" if threshold.source else ""
    return ThresholdResult(**common, value=value, passed=low_ok and high_ok,
                           message=f"{threshold.metric} at concurrency {at}: {value:.4g} (needs {bound}{source}) {verdict}")


def check_thresholds(thresholds: list[Threshold], levels: list[Level]) -> list[ThresholdResult]:
    return [check_threshold(t, levels) for t in thresholds]
