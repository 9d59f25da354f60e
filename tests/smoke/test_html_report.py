"""The HTML report opened in real headless Chromium: it renders, shows its plots, logs no errors."""

import os
import re
import shutil
import subprocess
from pathlib import Path

from envbuilder.smoke.baseline import compare
from envbuilder.smoke.html import write_html
from envbuilder.smoke.metrics import FORMULAS, level_run, summarize
from envbuilder.smoke.profile import SmokeProfile, Threshold
from envbuilder.smoke.records import RequestResult
from envbuilder.smoke.report import Level, Report, Workload
from envbuilder.smoke.thresholds import check_thresholds
from tests.conftest import require_tool

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0"]


def chromium() -> str:
    if os.environ.get("ENVBUILDER_CHROMIUM"):
        return os.environ["ENVBUILDER_CHROMIUM"]
    found = shutil.which("chromium")
    require_tool("chromium", found, "apt-get install chromium (.ci/parts/30-llm-servers.sh does)")
    return found


def _requests(c, scale):
    out = []
    for i in range(2 * c):
        t0 = i * 0.01
        times = [t0 + scale * (0.05 + 0.001 * i) + k * scale * 0.01 for k in range(16)]
        out.append(RequestResult(ok=True, t_send=t0, t_end=times[-1] + 0.001, content_times=times,
                                 chunk_tokens=[1.0] * 16, output_tokens=16, prompt_tokens=32, tokens_reported=True,
                                 chunk_tokens_exact=True))
    out.append(RequestResult(ok=False, t_send=0, t_end=0.5, error_kind="protocol", error="connection closed"))
    return out


def report() -> Report:
    profile = SmokeProfile(concurrency=[1, 8, 64], repeats=2, thresholds=[Threshold(metric="total_tok_s", min=1e6)])
    levels = []
    for c in profile.concurrency:
        runs = [level_run(_requests(c, 1 + c / 16 + r / 10), concurrency=c, request_rate=None, run=r + 1, slo=None,
                          default_prompt_tokens=32) for r in range(2)]
        levels.append(Level(concurrency=c, runs=runs, summary=summarize(runs)))
    thresholds = check_thresholds(profile.thresholds, levels)
    return Report(created="2026-11-30T00:00:00+00:00", tool={"name": "envbuilder", "version": "0"}, target="t",
                  endpoint="http://127.0.0.1:1", api="completions", model="tiny <b>&amp;",
                  server={"kind": "llama.cpp", "models": ["tiny"], "info": {"a": 1}, "ready_after_s": 0.1},
                  environment={"gpus": None}, workload=Workload(profile=profile, prompt_words=30),
                  formulas=FORMULAS, levels=levels, thresholds=thresholds,
                  baseline=compare(levels, levels, profile.regression, "base.json"),
                  passed=False, verdict=[t.message for t in thresholds if not t.passed])


def run_chromium(url: str, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([chromium(), *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *extra, url],
                          capture_output=True, text=True, timeout=120)


def test_report_renders_with_plots_and_no_console_errors(tmp_path):
    page = tmp_path / "report.html"
    write_html(report(), page)
    html = page.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "the page must not load anything"
    assert "tiny &lt;b&gt;&amp;amp;" in html  # escaped, never injected
    dom = run_chromium(page.as_uri(), tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-plots-rendered="4"' in dom.stdout
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    assert console == []
    shot = run_chromium(page.as_uri(), tmp_path, f"--screenshot={tmp_path / 'shot.png'}", "--window-size=1400,2400")
    assert shot.returncode == 0
    png = (tmp_path / "shot.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 20_000  # a blank page compresses to a few kB


def test_console_errors_would_be_seen(tmp_path):
    """The check above can fail: a page with a script error shows up in Chromium's console log."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>missing_function();</script></body></html>")
    dom = run_chromium(page.as_uri(), tmp_path, "--dump-dom")
    assert any("Uncaught ReferenceError" in line for line in dom.stderr.splitlines() if "CONSOLE" in line)
