"""Gates computed from evidence, and the user's goals judged beside them.

Why computed: a gate typed by hand drifts from the evidence it cites. A `validated: true`
threshold takes the figure a validated configuration measured at that concurrency and moves it by
the profile's stated noise margin, so the known-good state always passes its own smoke.

Evidence, best first: verified passing runs recorded under `matrices/<target>.validated/`
(envbuilder.validated: a report that re-verifies), then the matrix's `validated:` entries'
`measured:` figures (prose evidence, shown as such in the gate's source line).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from envbuilder.errors import BadInput
from envbuilder.smoke.profile import Bound, Goal, SmokeProfile, Threshold, lower_is_better
from envbuilder.smoke.report import GoalResult, Level

NOT_MET = "target, not met by any validated configuration"


@dataclass(frozen=True)
class Figure:
    """One measured figure and where it is from (for the report's source line)."""

    metric: str
    at: int
    value: float
    source: str


def matrix_figures(target) -> list[Figure]:
    """The `measured:` figures of the matrix's `validated:` entries."""
    out = []
    for i, entry in enumerate(getattr(target, "validated", ()) or ()):
        out += [Figure(m.metric, m.at, m.value, f"validated {entry.date}, matrix validated[{i}]")
                for m in entry.measured]
    return out


def record_figures(root: Path, target) -> list[Figure]:
    """Figures of verified passing runs recorded for the target (newest first)."""
    from envbuilder.validated.evidence import gather

    evidence = gather(root, target.name, target)
    runs = sorted((c.record for c in evidence.checked if c.counts and c.record), key=lambda r: r.date, reverse=True)
    out = []
    for record in runs:
        for level in record.levels:
            for metric, value in level.model_dump(exclude={"concurrency", "requests", "failed"}).items():
                if value is not None:
                    out.append(Figure(metric, level.concurrency, value, f"verified run {record.date}"))
    return out


def validated_figures(root: Path, target) -> list[Figure]:
    return [*record_figures(root, target), *matrix_figures(target)]


def _figure(figures: list[Figure], metric: str, at: int) -> Figure | None:
    return next((f for f in figures if f.metric == metric and f.at == at), None)


def computed(profile: SmokeProfile, figures: list[Figure], where: str = "smoke.thresholds") -> SmokeProfile:
    """The profile with every `validated: true` threshold turned into a bound from its figure."""
    margin = profile.noise_margin_pct / 100
    thresholds = []
    for i, t in enumerate(profile.thresholds):
        if not t.validated:
            thresholds.append(t)
            continue
        figure = _figure(figures, t.metric, t.at)
        if figure is None:
            raise BadInput(f"{where}[{i}]: {t.metric} at concurrency {t.at} is `validated: true`, but no validated "
                           f"configuration measured it: add it to a `validated:` entry's `measured:`, or give min/max")
        lower = lower_is_better(t.metric)
        bound = round(figure.value * (1 + margin if lower else 1 - margin), 3)
        sign = "+" if lower else "-"
        source = f"validated {figure.value:g} {sign} {profile.noise_margin_pct:g}% noise margin ({figure.source})"
        thresholds.append(Threshold(metric=t.metric, at=t.at, source=source,
                                    **({"max": bound} if lower else {"min": bound})))
    return profile.model_copy(update={"thresholds": thresholds})


def for_target(profile: SmokeProfile, target, root: Path) -> SmokeProfile:
    """The target's smoke profile with its gates computed from its evidence."""
    if not any(t.validated for t in profile.thresholds):
        return profile
    return computed(profile, validated_figures(root, target), where=f"{target.source_path}: smoke.thresholds")


def _meets(bound: Bound, value: float | None) -> bool:
    return value is not None and (bound.min is None or value >= bound.min) and (bound.max is None or value <= bound.max)


def _describe(bound: Bound) -> str:
    return " and ".join(b for b in (bound.min is not None and f">= {bound.min:g}",
                                     bound.max is not None and f"<= {bound.max:g}") if b)


def check_goals(goals: list[Goal], levels: list[Level], figures: list[Figure],
                concurrency: list[int]) -> list[GoalResult]:
    """Each goal against this run and against the evidence; informational only."""
    out = []
    for goal in goals:
        at = goal.level(concurrency)
        level = next((lv for lv in levels if lv.concurrency == at), None)
        value = level.summary[goal.metric].mean if level is not None and goal.metric in level.summary else None
        proof = next((f for f in figures if f.metric == goal.metric and f.at == at and _meets(goal, f.value)), None)
        standing = f"met by {proof.source} ({proof.value:g})" if proof else NOT_MET
        shown = "not run" if value is None else f"{value:.4g}, {'met' if _meets(goal, value) else 'not met'}"
        note = f" [{goal.note}]" if goal.note else ""
        out.append(GoalResult(metric=goal.metric, at=at or 0, min=goal.min, max=goal.max, value=value,
                              met=_meets(goal, value), validated=proof is not None,
                              message=f"goal {goal.metric} at concurrency {at} {_describe(goal)}{note}: this run "
                                      f"{shown}; {standing}"))
    return out
