"""The JSON report: one typed document per smoke run, documented in docs/smoke.md.

The same models are read back for `--baseline`, so an old report that no longer parses is a clear
input error rather than a silent comparison of missing numbers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from envbuilder.errors import BadInput
from envbuilder.model import StrictModel
from envbuilder.smoke.profile import SmokeProfile

SCHEMA = "envbuilder.smoke/1"


class Dist(StrictModel):
    """A latency distribution in milliseconds; `quantiles` are p0..p100 in steps of 1 (for plots)."""

    n: int = 0
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    min: float | None = None
    max: float | None = None
    quantiles: list[float] = Field(default_factory=list)


class LevelRun(StrictModel):
    """One run of one concurrency level."""

    concurrency: int
    request_rate: float | None = None
    run: int = 1
    requests: int
    succeeded: int
    failed: int
    duration_s: float
    prompt_tokens: int
    output_tokens: int
    output_tokens_estimated: int = Field(description="successful requests whose output count was not reported")
    itl_estimated: bool = Field(description="some chunk carried several tokens and per-chunk counts were spread")
    max_concurrent: int = Field(description="most requests in flight at once during the run")
    request_s: float
    output_tok_s: float
    total_tok_s: float
    goodput_req_s: float | None = None
    error_rate: float
    ttft_ms: Dist
    itl_ms: Dist
    tpot_ms: Dist
    e2e_ms: Dist
    chunk_gap_ms: Dist
    errors: dict[str, int] = Field(default_factory=dict)
    error_examples: list[str] = Field(default_factory=list)

    def metric(self, name: str) -> float | None:
        if hasattr(self, name) and not isinstance(getattr(self, name), Dist):
            return getattr(self, name)
        base, _, stat = name.rpartition("_")
        return getattr(getattr(self, base), stat)


class MetricSummary(StrictModel):
    mean: float | None
    stdev: float | None
    n: int
    values: list[float | None]


class Level(StrictModel):
    concurrency: int
    request_rate: float | None = None
    runs: list[LevelRun]
    summary: dict[str, MetricSummary]


class BoundResult(StrictModel):
    """A bound on one metric at one level, the value this run measured, and a line for people."""

    metric: str
    at: int
    min: float | None = None
    max: float | None = None
    value: float | None
    message: str


class ThresholdResult(BoundResult):
    passed: bool


class GoalResult(BoundResult):
    """A user's target beside this run and the evidence; never part of `passed`."""

    met: bool
    validated: bool = Field(description="some validated configuration measured a figure that meets it")


class Comparison(StrictModel):
    concurrency: int
    metric: str
    baseline_mean: float | None
    baseline_stdev: float | None
    baseline_n: int
    current_mean: float | None
    current_stdev: float | None
    current_n: int
    change_pct: float | None
    regressed: bool
    note: str = ""


class BaselineResult(StrictModel):
    path: str
    tolerance_pct: float
    noise_sigmas: float
    comparisons: list[Comparison]
    regressed: bool


class Workload(StrictModel):
    profile: SmokeProfile
    prompt_words: int | None = None  # None: the run never reached the server
    prompt_tokens_calibrated: bool = False
    calibration_probes: int = 0
    dropped_fields: list[str] = Field(default_factory=list)
    warmup_failed: int = 0


class Report(StrictModel):
    schema_: str = Field(default=SCHEMA, alias="schema")
    created: str
    tool: dict[str, str]
    target: str | None = None
    endpoint: str
    api: str
    model: str
    server: dict[str, Any]
    environment: dict[str, Any]
    workload: Workload
    formulas: dict[str, str]
    levels: list[Level]
    thresholds: list[ThresholdResult]
    goals: list[GoalResult] = Field(default_factory=list, description="the user's targets: reported, never failing")
    baseline: BaselineResult | None = None
    passed: bool
    verdict: list[str] = Field(description="one line per reason the run failed; empty when it passed")
    partial: bool = Field(default=False, description="cut short (Ctrl-C, a failure, a level deadline): holds "
                          "only the levels that finished, never passes, and never counts as evidence")
    partial_reason: str | None = None


def write_text_atomic(path: Path, text: str) -> None:
    """Reports are written like locks: whole or not at all, with the user's umask; a full disk is exit 3."""
    from envbuilder.lock.io import write_atomic

    write_atomic(path, text)


def write_report(report: Report, path: Path) -> None:
    write_text_atomic(path, report.model_dump_json(by_alias=True, indent=2) + "\n")


def read_report(path: Path) -> Report:
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the baseline report: {exc.strerror}") from None
    except ValueError as exc:
        raise BadInput(f"{path}: line {getattr(exc, 'lineno', '?')}: not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise BadInput(f"{path}: key 'schema': expected {SCHEMA!r}; is this an envbuilder smoke report?")
    try:
        return Report.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise BadInput(f"{path}: key {key!r}: {first['msg']}") from None
