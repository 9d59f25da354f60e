"""Noise-aware regression check of a run against a baseline report.

Two single numbers from two runs differ by noise alone; a change only counts as a regression when
it is worse than the baseline by more than the tolerance AND by more than `noise_sigmas` standard
errors of the difference of the two means (Welch), so repeats make the check sharper, and a noisy
metric needs a bigger change to fail.
"""

from __future__ import annotations

import math

from envbuilder.smoke.profile import Regression, lower_is_better
from envbuilder.smoke.report import BaselineResult, Comparison, Level, MetricSummary


def _standard_error(a: MetricSummary, b: MetricSummary) -> float | None:
    if a.stdev is None or b.stdev is None:
        return None
    return math.sqrt(a.stdev**2 / a.n + b.stdev**2 / b.n)


def compare_metric(concurrency: int, metric: str, base: MetricSummary, cur: MetricSummary,
                   policy: Regression) -> Comparison:
    common = {"concurrency": concurrency, "metric": metric, "baseline_mean": base.mean,
              "baseline_stdev": base.stdev, "baseline_n": base.n, "current_mean": cur.mean,
              "current_stdev": cur.stdev, "current_n": cur.n}
    if base.mean is None or cur.mean is None:
        return Comparison(**common, change_pct=None, regressed=False, note="missing on one side")
    change = cur.mean - base.mean
    pct = 100 * change / abs(base.mean) if base.mean else None
    worse = change if lower_is_better(metric) else -change
    beyond_tolerance = worse > policy.tolerance_pct / 100 * abs(base.mean)
    se = _standard_error(base, cur)
    beyond_noise = se is None or worse > policy.noise_sigmas * se
    note = "" if se is not None else "one run on a side: tolerance only"
    if beyond_tolerance and not beyond_noise:
        note = f"worse but within noise ({policy.noise_sigmas:g} x SE {se:.4g})"
    return Comparison(**common, change_pct=pct, regressed=beyond_tolerance and beyond_noise, note=note)


def compare(current: list[Level], baseline: list[Level], policy: Regression, path: str) -> BaselineResult:
    base_by_c = {lv.concurrency: lv for lv in baseline}
    rows = [compare_metric(lv.concurrency, m, base_by_c[lv.concurrency].summary[m], lv.summary[m], policy)
            for lv in current if lv.concurrency in base_by_c for m in policy.metrics]
    return BaselineResult(path=path, tolerance_pct=policy.tolerance_pct, noise_sigmas=policy.noise_sigmas,
                          comparisons=rows, regressed=any(r.regressed for r in rows))
