"""The matrix's `smoke:` block: the workload, the pass/fail thresholds, SLOs and the regression policy.

Kept import-light (pydantic only) because the matrix schema imports it. Metric names here are the
ones the JSON report uses (see docs/smoke.md), so a threshold names exactly what a reader
finds in the report.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from envbuilder.model import StrictModel

Api = Literal["completions", "chat", "generate"]

#: Throughput-like metrics of one concurrency level (higher is better, except error_rate).
RATE_METRICS = ("total_tok_s", "output_tok_s", "request_s", "goodput_req_s", "error_rate")
#: Latency distributions (milliseconds) and the statistics the report keeps for each.
LATENCY_METRICS = ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms")
LATENCY_STATS = ("mean", "p50", "p90", "p99")
METRICS = RATE_METRICS + tuple(f"{m}_{s}" for m in LATENCY_METRICS for s in LATENCY_STATS)


def lower_is_better(metric: str) -> bool:
    """Latencies and the error rate improve downwards; throughputs upwards."""
    return metric == "error_rate" or metric.startswith(LATENCY_METRICS)


def check_metric(name: str) -> str:
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; one of: {', '.join(METRICS)}")
    return name


class Bound(StrictModel):
    """A bound on a metric at one concurrency level (`max`/`min`: the top/bottom level of the sweep)."""

    metric: str
    at: int | Literal["max", "min"] = "max"
    min: float | None = None
    max: float | None = None

    _metric = field_validator("metric")(classmethod(lambda cls, v: check_metric(v)))

    @model_validator(mode="after")
    def _one_bound(self) -> Bound:
        if self.min is None and self.max is None and not getattr(self, "validated", False):
            raise ValueError("needs `min`, `max` or both")
        return self

    def level(self, concurrency: list[int]) -> int | None:
        """The concurrency this bound is about, in a sweep over `concurrency`."""
        if self.at == "max":
            return max(concurrency, default=None)
        if self.at == "min":
            return min(concurrency, default=None)
        return self.at


class Threshold(Bound):
    """One pass/fail bound. `validated: true` computes it from what a validated configuration measured.

    Why computed: a hand-typed gate drifts from its evidence (blackwell-sm120 once required 10 output
    tok/s from one stream while the known-good state measured ~8). The bound is the validated figure
    at `at` minus the profile's `noise_margin_pct` (plus, for latencies and error rates).
    """

    validated: bool = False
    source: str | None = Field(default=None, description="set by envbuilder: the evidence a computed bound came from")

    @model_validator(mode="after")
    def _validated_bound(self) -> Threshold:
        if self.validated and (self.min is not None or self.max is not None):
            raise ValueError("a `validated: true` threshold computes its bound from the validated figure: drop min/max")
        if self.validated and not isinstance(self.at, int):
            raise ValueError("a `validated: true` threshold needs `at:` a concurrency level (figures are measured at one)")
        return self


class Goal(Bound):
    """What the user wants to reach, not what was shown: reported beside the thresholds, never fails a run."""

    note: str | None = None


class Slo(StrictModel):
    """Per-request service-level objectives; a request meeting all that are set counts as goodput."""

    ttft_ms: float | None = Field(default=None, gt=0)
    tpot_ms: float | None = Field(default=None, gt=0)
    e2e_ms: float | None = Field(default=None, gt=0)


class Regression(StrictModel):
    """How `--baseline` decides a regression without being fooled by run-to-run noise.

    A metric regresses when its mean over repeats is worse than the baseline's mean by more than
    both `tolerance_pct` of the baseline and `noise_sigmas` times the two runs' combined standard
    error. With one repeat on each side only the tolerance applies.
    """

    tolerance_pct: float = Field(default=5.0, ge=0)
    noise_sigmas: float = Field(default=2.0, ge=0)
    metrics: list[str] = Field(default_factory=lambda: ["total_tok_s", "output_tok_s", "ttft_ms_p50", "tpot_ms_p50"])

    _metrics = field_validator("metrics")(classmethod(lambda cls, v: [check_metric(m) for m in v]))


class SmokeProfile(StrictModel):
    """A streaming benchmark workload: deterministic prompts, a concurrency sweep, repeats, bounds."""

    api: Api = "completions"
    model: str | None = Field(default=None, description="request `model`; default: the serve profile's / /v1/models")
    prompt_tokens: int = Field(default=128, ge=1, description="prompt length in the server's own tokens")
    max_tokens: int = Field(default=128, ge=1)
    ignore_eos: bool = Field(default=True, description="sent where the server accepts it (dropped after a 422)")
    temperature: float = Field(default=0.0, ge=0)
    stream_usage: bool = Field(default=True, description="ask for the usage chunk (stream_options.include_usage)")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="merged into every request body")
    warmup_requests: int = Field(default=2, ge=0)
    concurrency: list[int] = Field(default_factory=lambda: [1, 8, 64])
    request_rate: float | None = Field(
        default=None, gt=0, description="Poisson arrivals (req/s) capped by the concurrency; none: closed loop"
    )
    requests_per_level: int | None = Field(
        default=None, ge=1, description="requests per concurrency level; default max(16, 2 x concurrency)"
    )
    repeats: int = Field(default=1, ge=1, description="runs of each level; >1 makes baselines noise-aware")
    seed: int = 0
    request_timeout_s: float = Field(default=600.0, gt=0, description="whole-request deadline (--request-timeout)")
    connect_timeout_s: float = Field(default=10.0, gt=0)
    thresholds: list[Threshold] = Field(default_factory=list)
    noise_margin_pct: float = Field(
        default=20.0, ge=0, lt=100, description="how far a `validated: true` gate sits below the validated figure")
    goals: list[Goal] = Field(default_factory=list, description="the user's targets: reported, never fail the run")
    slo: Slo | None = None
    regression: Regression = Field(default_factory=Regression)

    @field_validator("concurrency")
    @classmethod
    def _levels(cls, value: list[int]) -> list[int]:
        if not value:
            raise ValueError("needs at least one concurrency level")
        if any(c < 1 for c in value):
            raise ValueError(f"concurrency levels must be >= 1: {value}")
        if len(set(value)) != len(value):
            raise ValueError(f"duplicate concurrency levels: {value}")
        return sorted(value)

    def requests_for(self, concurrency: int) -> int:
        """Enough requests that every stream is replaced at least once, so the level reaches steady state."""
        return self.requests_per_level or max(16, 2 * concurrency)
