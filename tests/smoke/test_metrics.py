"""Metric formulas on hand-made request timelines, thresholds, and the noise-aware baseline check."""

import pytest

from envbuilder.smoke.baseline import compare_metric
from envbuilder.smoke.metrics import level_run, percentile, summarize
from envbuilder.smoke.profile import Regression, SmokeProfile, Slo, Threshold
from envbuilder.smoke.records import RequestResult
from envbuilder.smoke.report import Level, MetricSummary
from envbuilder.smoke.thresholds import check_thresholds


def req(t0, times, tokens, end, prompt=10):
    return RequestResult(ok=True, t_send=t0, t_end=end, content_times=times, chunk_tokens=tokens,
                         output_tokens=int(sum(tokens)), prompt_tokens=prompt, tokens_reported=True,
                         chunk_tokens_exact=True)


def test_formulas():
    # first chunk at 0.1 s, then a 2-token chunk after 0.2 s and a 1-token chunk after 0.1 s; stream ends at 0.5 s
    r = req(0.0, [0.1, 0.3, 0.4], [1, 2, 1], 0.5)
    bad = RequestResult(ok=False, t_send=0.0, t_end=2.0, error_kind="protocol", error="x")
    run = level_run([r, bad], concurrency=2, request_rate=None, run=1, slo=Slo(ttft_ms=150), default_prompt_tokens=0)
    assert run.ttft_ms.p50 == pytest.approx(100)
    assert run.itl_ms.n == 3 and run.itl_ms.max == pytest.approx(100)  # 0.2 s / 2 tokens twice, then 0.1 s
    assert run.chunk_gap_ms.n == 2 and run.chunk_gap_ms.max == pytest.approx(200)
    assert run.tpot_ms.p50 == pytest.approx((500 - 100) / 3)
    assert run.e2e_ms.p50 == pytest.approx(500)  # the failed request is not in latency stats
    assert run.duration_s == pytest.approx(2.0) and run.output_tok_s == pytest.approx(2.0)
    assert run.total_tok_s == pytest.approx(7.0) and run.error_rate == 0.5 and run.errors == {"protocol": 1}
    assert run.goodput_req_s == pytest.approx(0.5) and run.max_concurrent == 2


def test_percentile_matches_linear_interpolation():
    assert percentile([1, 2, 3, 4], 50) == 2.5 and percentile([1, 2, 3, 4], 100) == 4


def _level(c, values):
    runs = [level_run([req(0, [0.1, 0.2], [1, 1], v)], concurrency=c, request_rate=None, run=i, slo=None,
                      default_prompt_tokens=0) for i, v in enumerate(values)]
    return Level(concurrency=c, runs=runs, summary=summarize(runs))


def test_thresholds_at_levels():
    levels = [_level(1, [1.0]), _level(8, [0.5])]
    res = check_thresholds([Threshold(metric="output_tok_s", at="max", min=3.0),
                            Threshold(metric="output_tok_s", at=1, min=3.0),
                            Threshold(metric="e2e_ms_p50", at=64, max=1.0)], levels)
    assert [r.passed for r in res] == [True, False, False]
    assert "no concurrency level 64" in res[2].message


def summary(values):
    import statistics
    return MetricSummary(mean=statistics.fmean(values), stdev=statistics.stdev(values) if len(values) > 1 else None,
                         n=len(values), values=values)


def test_baseline_needs_change_beyond_tolerance_and_noise():
    policy = Regression(tolerance_pct=5, noise_sigmas=2)
    noisy = compare_metric(1, "total_tok_s", summary([100, 130, 70]), summary([90, 60, 120]), policy)
    assert not noisy.regressed and "noise" in noisy.note
    clear = compare_metric(1, "total_tok_s", summary([100, 101, 99]), summary([80, 81, 79]), policy)
    assert clear.regressed
    faster_latency = compare_metric(1, "ttft_ms_p50", summary([100, 101, 99]), summary([80, 81, 79]), policy)
    assert not faster_latency.regressed
    single = compare_metric(1, "total_tok_s", summary([100]), summary([94]), policy)
    assert single.regressed and "tolerance only" in single.note


def test_profile_rejects_typos_and_bad_levels():
    with pytest.raises(ValueError, match="Extra inputs"):
        SmokeProfile(concurency=[1])
    with pytest.raises(ValueError, match="duplicate"):
        SmokeProfile(concurrency=[1, 1])
    with pytest.raises(ValueError, match="unknown metric"):
        Threshold(metric="tok_s", min=1)
