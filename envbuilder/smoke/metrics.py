"""Per-level metrics from request results, with the formulas written next to the code that uses them.

Benchmark clients disagree on what ITL and TPOT mean (chunk gaps, or (e2e - TTFT)/(n - 1), or
last-minus-first over n - 1); the report carries `FORMULAS` so a reader never has to guess. Only
successful requests enter latency statistics; failures are counted by kind.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter

from envbuilder.smoke.profile import METRICS, Slo
from envbuilder.smoke.records import RequestResult
from envbuilder.smoke.report import Dist, LevelRun, MetricSummary

FORMULAS = {
    "ttft_ms": "time to first token: first chunk carrying non-empty text arrives - request sent",
    "itl_ms": "inter-token latency, per token: for each content chunk after the first, gap since the previous "
              "content chunk / tokens in that chunk, counted once per token (a chunk of n tokens adds n values)",
    "chunk_gap_ms": "gap between consecutive content chunks, whatever they carry (what vLLM/SGLang call ITL)",
    "tpot_ms": "time per output token: (e2e - ttft) / (output_tokens - 1), requests with >= 2 tokens",
    "e2e_ms": "end-to-end latency: end of stream - request sent",
    "request_s": "successful requests / duration",
    "output_tok_s": "sum of output tokens of successful requests / duration",
    "total_tok_s": "sum of (prompt + output) tokens of successful requests / duration",
    "goodput_req_s": "successful requests meeting every SLO set (ttft, tpot, e2e) / duration",
    "error_rate": "failed requests / requests sent",
    "duration_s": "last stream end - first request sent, over the level's requests",
    "tokens": "server-reported usage (completion_tokens, prompt_tokens); where a server reports none, "
              "output tokens = content chunks and the run says output_tokens_estimated > 0",
    "percentiles": "linear interpolation between closest ranks (numpy's default)",
}


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def dist(values_s: list[float]) -> Dist:
    """Milliseconds from seconds; an empty list gives an empty distribution, not zeros."""
    if not values_s:
        return Dist()
    ms = sorted(v * 1000 for v in values_s)
    q = [round(percentile(ms, p), 4) for p in range(101)]
    return Dist(n=len(ms), mean=statistics.fmean(ms), p50=q[50], p90=percentile(ms, 90),
                p99=percentile(ms, 99), min=ms[0], max=ms[-1], quantiles=q)


def _itl_values(r: RequestResult) -> tuple[list[float], list[float]]:
    per_token, gaps = [], []
    for i in range(1, len(r.content_times)):
        gap = r.content_times[i] - r.content_times[i - 1]
        gaps.append(gap)
        n = r.chunk_tokens[i] if i < len(r.chunk_tokens) else 1.0
        whole = max(int(round(n)), 1)
        per_token.extend([gap / n] * whole if n > 0 else [gap])
    return per_token, gaps


def _meets(r: RequestResult, slo: Slo) -> bool:
    return ((slo.ttft_ms is None or r.ttft * 1000 <= slo.ttft_ms)
            and (slo.tpot_ms is None or (r.tpot or 0.0) * 1000 <= slo.tpot_ms)
            and (slo.e2e_ms is None or r.e2e * 1000 <= slo.e2e_ms))


def max_in_flight(results: list[RequestResult]) -> int:
    edges = sorted([(r.t_send, 1) for r in results] + [(r.t_end, -1) for r in results], key=lambda e: (e[0], e[1]))
    peak = current = 0
    for _, step in edges:
        current += step
        peak = max(peak, current)
    return peak


def level_run(results: list[RequestResult], *, concurrency: int, request_rate: float | None, run: int,
              slo: Slo | None, default_prompt_tokens: int) -> LevelRun:
    ok = [r for r in results if r.ok]
    failed = [r for r in results if not r.ok]
    duration = (max(r.t_end for r in results) - min(r.t_send for r in results)) if results else 0.0
    per = 1 / duration if duration > 0 else 0.0
    itl, gaps = [], []
    for r in ok:
        a, b = _itl_values(r)
        itl += a
        gaps += b
    out_tokens = sum(r.output_tokens for r in ok)
    prompt_tokens = sum(r.prompt_tokens if r.prompt_tokens is not None else default_prompt_tokens for r in ok)
    errors = Counter(r.error_kind or "error" for r in failed)
    examples = list(dict.fromkeys(f"{r.error_kind}: {r.error}" for r in failed))[:3]
    return LevelRun(
        concurrency=concurrency, request_rate=request_rate, run=run, requests=len(results),
        succeeded=len(ok), failed=len(failed), duration_s=duration,
        prompt_tokens=prompt_tokens, output_tokens=out_tokens,
        output_tokens_estimated=sum(1 for r in ok if not r.tokens_reported),
        itl_estimated=any(not r.chunk_tokens_exact for r in ok),
        max_concurrent=max_in_flight(results),
        request_s=len(ok) * per, output_tok_s=out_tokens * per, total_tok_s=(out_tokens + prompt_tokens) * per,
        goodput_req_s=sum(1 for r in ok if _meets(r, slo)) * per if slo else None,
        error_rate=len(failed) / len(results) if results else 0.0,
        ttft_ms=dist([r.ttft for r in ok]), itl_ms=dist(itl),
        tpot_ms=dist([r.tpot for r in ok if r.tpot is not None]),
        e2e_ms=dist([r.e2e for r in ok]), chunk_gap_ms=dist(gaps),
        errors=dict(errors), error_examples=examples,
    )


def summarize(runs: list[LevelRun]) -> dict[str, MetricSummary]:
    """Mean and sample standard deviation of every metric over the repeats of one level."""
    out = {}
    for name in METRICS:
        values = [r.metric(name) for r in runs]
        present = [v for v in values if v is not None and not math.isnan(v)]
        out[name] = MetricSummary(
            mean=statistics.fmean(present) if present else None,
            stdev=statistics.stdev(present) if len(present) > 1 else None,
            n=len(present), values=values)
    return out
