"""The HTML report: one self-contained page (inline CSS and SVG, no network) that opens offline.

Plots: throughput vs concurrency, latency percentiles vs concurrency, and TTFT / ITL distributions
(as CDFs drawn from the report's p0..p100 quantiles). Tables repeat every number the plots show,
plus thresholds, the baseline comparison, the formulas and where the run happened.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2

from envbuilder.smoke.report import Level, Report
from envbuilder.smoke.svg import Series, line_chart

_TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{% if r.partial %}PARTIAL {% endif %}smoke report: {{ r.model }}{% if r.target %} ({{ r.target }}){% endif %}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1340px;color:#222;padding:0 16px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
.verdict{display:inline-block;padding:4px 10px;border-radius:4px;color:#fff;font-weight:600}
.pass{background:#2ca02c} .fail{background:#d62728}
table{border-collapse:collapse;margin:6px 0} th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f4} td.l,th.l{text-align:left} .plots{display:flex;flex-wrap:wrap;gap:12px}
svg.plot{border:1px solid #eee;background:#fff} svg text{font-size:11px;fill:#333} svg .title{font-size:13px;font-weight:600}
svg .grid{stroke:#eee} svg .axis{stroke:#888} .muted{color:#777} code{background:#f4f4f4;padding:0 3px}
ul.reasons li{color:#d62728}
</style></head><body>
<h1>{% if r.partial %}PARTIAL {% endif %}Smoke report: {{ r.model }}</h1>
{% if r.partial %}<p class="partial"><span class="verdict fail">PARTIAL</span> cut short: {{ r.partial_reason }}.
 Only the levels that finished are shown; a partial report never passes and is no evidence that this combination works.</p>{% endif %}
<p><span class="verdict {{ 'pass' if r.passed else 'fail' }}">{{ 'PASSED' if r.passed else 'FAILED' }}</span>
 {{ r.api }} at <code>{{ r.endpoint }}</code>{% if r.target %}, target <b>{{ r.target }}</b>{% endif %},
 {{ r.created }}, envbuilder {{ r.tool.version }}</p>
{% if r.verdict %}<ul class="reasons">{% for line in r.verdict %}<li>{{ line }}</li>{% endfor %}</ul>{% endif %}

<h2>Results</h2>
<table><tr><th>concurrency</th><th>runs</th><th>ok / sent</th><th>req/s</th><th>output tok/s</th><th>total tok/s</th>
<th>TTFT p50</th><th>TTFT p99</th><th>ITL p50</th><th>ITL p99</th><th>TPOT p50</th><th>e2e p50</th><th>e2e p99</th><th>goodput req/s</th></tr>
{% for lv in r.levels %}<tr><td>{{ lv.concurrency }}</td><td>{{ lv.runs|length }}</td>
<td>{{ lv.runs|sum(attribute='succeeded') }} / {{ lv.runs|sum(attribute='requests') }}</td>
{% for m in ['request_s','output_tok_s','total_tok_s','ttft_ms_p50','ttft_ms_p99','itl_ms_p50','itl_ms_p99','tpot_ms_p50','e2e_ms_p50','e2e_ms_p99','goodput_req_s'] %}
<td>{{ fmt(lv.summary[m]) }}</td>{% endfor %}</tr>{% endfor %}
</table>
<p class="muted">Latencies in milliseconds. With several runs per level: mean ± sample standard deviation over runs.</p>

<h2>Plots</h2>
<div class="plots">{% for svg in plots %}{{ svg|safe }}{% endfor %}</div>

{% if r.thresholds %}<h2>Thresholds</h2>
<table><tr><th class="l">metric</th><th>at concurrency</th><th>min</th><th>max</th><th>value</th><th class="l">result</th></tr>
{% for t in r.thresholds %}<tr><td class="l">{{ t.metric }}</td><td>{{ t.at }}</td><td>{{ num(t.min) }}</td><td>{{ num(t.max) }}</td>
<td>{{ num(t.value) }}</td><td class="l">{{ 'pass' if t.passed else 'FAIL' }}</td></tr>{% endfor %}</table>{% endif %}

{% if r.goals %}<h2>Goals (targets, never failing the run)</h2>
<ul>{% for g in r.goals %}<li>{{ g.message }}</li>{% endfor %}</ul>{% endif %}

{% if r.baseline %}<h2>Baseline comparison</h2>
<p>against <code>{{ r.baseline.path }}</code>: regression = worse by more than {{ r.baseline.tolerance_pct }}% and by more than
{{ r.baseline.noise_sigmas }} standard errors of the difference of means.</p>
<table><tr><th>concurrency</th><th class="l">metric</th><th>baseline</th><th>current</th><th>change</th><th class="l">verdict</th></tr>
{% for c in r.baseline.comparisons %}<tr><td>{{ c.concurrency }}</td><td class="l">{{ c.metric }}</td>
<td>{{ num(c.baseline_mean) }}{% if c.baseline_stdev %} ± {{ num(c.baseline_stdev) }}{% endif %} (n={{ c.baseline_n }})</td>
<td>{{ num(c.current_mean) }}{% if c.current_stdev %} ± {{ num(c.current_stdev) }}{% endif %} (n={{ c.current_n }})</td>
<td>{% if c.change_pct is not none %}{{ '%+.1f'|format(c.change_pct) }}%{% endif %}</td>
<td class="l">{{ 'REGRESSED' if c.regressed else 'ok' }} {{ c.note }}</td></tr>{% endfor %}</table>{% endif %}

<h2>Failures</h2>
{% if failed_total %}<table><tr><th>concurrency</th><th>run</th><th class="l">errors</th><th class="l">examples</th></tr>
{% for lv in r.levels %}{% for run in lv.runs %}{% if run.failed %}<tr><td>{{ lv.concurrency }}</td><td>{{ run.run }}</td>
<td class="l">{% for k, n in run.errors.items() %}{{ k }} × {{ n }} {% endfor %}</td>
<td class="l">{% for e in run.error_examples %}<div>{{ e }}</div>{% endfor %}</td></tr>{% endif %}{% endfor %}{% endfor %}</table>
{% else %}<p>No failed requests.</p>{% endif %}

<h2>Workload</h2>
<table>{% for k, v in workload.items() %}<tr><th class="l">{{ k }}</th><td class="l">{{ v }}</td></tr>{% endfor %}</table>

<h2>Metric definitions</h2>
<table>{% for k, v in r.formulas.items() %}<tr><th class="l">{{ k }}</th><td class="l">{{ v }}</td></tr>{% endfor %}</table>

<h2>Environment and server</h2>
<table>{% for k, v in r.environment.items() %}<tr><th class="l">{{ k }}</th><td class="l">{{ v if v is not none else '—' }}</td></tr>{% endfor %}
<tr><th class="l">server kind</th><td class="l">{{ r.server.get('kind') or '—' }}</td></tr>
<tr><th class="l">served models</th><td class="l">{{ r.server.get('models', [])|join(', ') }}</td></tr>
<tr><th class="l">ready after</th><td class="l">{{ r.server.get('ready_after_s', 'never') }} s</td></tr></table>
{% if r.server.get('info') %}<details><summary>server info</summary><pre>{{ server_info }}</pre></details>{% endif %}
<script>
// Marks the page once the plots have laid out; the browser test reads this attribute.
window.addEventListener("load", function () {
  var n = 0;
  document.querySelectorAll("svg.plot").forEach(function (s) {
    var b = s.getBBox();
    if (b.width > 0 && b.height > 0 && s.querySelector("path.series")) { n += 1; }
  });
  document.documentElement.setAttribute("data-plots-rendered", String(n));
});
</script>
</body></html>
"""


def _fmt(summary) -> str:
    if summary.mean is None:
        return "—"
    text = f"{summary.mean:,.2f}" if abs(summary.mean) < 100 else f"{summary.mean:,.0f}"
    if summary.stdev:
        text += f" ± {summary.stdev:,.2g}"
    return text


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:,.4g}"


def _mean_point(level: Level, metric: str) -> tuple[float, float]:
    value = level.summary[metric].mean
    return (level.concurrency, value if value is not None else float("nan"))


def _stdevs(levels: list[Level], metric: str) -> list[float]:
    return [lv.summary[metric].stdev or 0.0 for lv in levels]


def _cdf(levels: list[Level], dist: str) -> list[Series]:
    out = []
    for lv in levels:
        quantiles = getattr(lv.runs[-1], dist).quantiles if lv.runs else []
        if quantiles:
            out.append(Series(f"c={lv.concurrency}", [(q, float(p)) for p, q in enumerate(quantiles)], markers=False))
    return out


def plots(report: Report) -> list[str]:
    levels = report.levels
    log2 = len(levels) > 1 and max(lv.concurrency for lv in levels) / min(lv.concurrency for lv in levels) >= 8
    tput = [Series(name, [_mean_point(lv, m) for lv in levels], _stdevs(levels, m))
            for name, m in (("output tok/s", "output_tok_s"), ("total tok/s", "total_tok_s"))]
    lat = [Series(f"{label} {stat}", [_mean_point(lv, f"{m}_{stat}") for lv in levels])
           for label, m in (("TTFT", "ttft_ms"), ("TPOT", "tpot_ms")) for stat in ("p50", "p90", "p99")]
    return [
        line_chart(tput, title="Throughput vs concurrency", x_label="concurrency", y_label="tokens / s",
                   log2_x=log2, chart_id="throughput"),
        line_chart(lat, title="Latency percentiles vs concurrency", x_label="concurrency", y_label="ms",
                   log2_x=log2, chart_id="latency"),
        line_chart(_cdf(levels, "ttft_ms"), title="TTFT distribution (CDF, last run)", x_label="TTFT ms",
                   y_label="percentile", chart_id="ttft-cdf"),
        line_chart(_cdf(levels, "itl_ms"), title="ITL distribution (CDF, last run)", x_label="ITL ms per token",
                   y_label="percentile", chart_id="itl-cdf"),
    ]


def render_html(report: Report) -> str:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    w = report.workload
    workload = {**w.profile.model_dump(exclude={"thresholds", "regression"}),
                "prompt words (calibrated)": w.prompt_words,
                "prompt length calibrated to server usage": w.prompt_tokens_calibrated,
                "fields the server rejected (sent without)": ", ".join(w.dropped_fields) or "none",
                "warmup failures": w.warmup_failed}
    return env.from_string(_TEMPLATE).render(
        r=report, plots=plots(report), fmt=_fmt,
        failed_total=sum(run.failed for lv in report.levels for run in lv.runs), num=_num, workload=workload,
        server_info=json.dumps(report.server.get("info"), indent=2, default=str)[:20000])


def write_html(report: Report, path: Path) -> None:
    from envbuilder.smoke.report import write_text_atomic

    write_text_atomic(path, render_html(report))
