"""Smoke keeps what it measured: a level deadline, a failure or Ctrl-C writes the finished levels to
JSON and HTML marked partial; a partial report never passes and cannot be a baseline."""

import json
import signal
import subprocess
import sys
import time

from faulty_server import FaultyServer


LEVEL_ONE = 6  # requests until the concurrency-1 level is done: 1 calibration + --warmup 1 + --requests 4


def _cmd(url, tmp_path, *extra):
    return [sys.executable, "-m", "envbuilder", "smoke", "--endpoint", url, "--concurrency", "1,4",
            "--requests", "4", "--warmup", "1", "--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html"),
            *extra]


def _check_partial(tmp_path, reason: str) -> dict:
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["partial"] is True and reason in report["partial_reason"]
    assert report["passed"] is False and report["verdict"][0].startswith("partial: ")
    assert [lv["concurrency"] for lv in report["levels"]] == [1]  # the finished level, measured
    assert report["levels"][0]["runs"][0]["succeeded"] == 4
    html = (tmp_path / "r.html").read_text()
    assert "PARTIAL" in html and "no evidence" in html
    return report


def test_a_level_deadline_keeps_the_finished_levels(tmp_path):
    with FaultyServer("stall_after", answered=LEVEL_ONE) as server:
        began = time.monotonic()
        proc = subprocess.run(_cmd(server.url, tmp_path, "--level-deadline", "2"), capture_output=True, text=True,
                              timeout=120)
    assert time.monotonic() - began < 60
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "concurrency 4 did not finish within its deadline of 2 s" in proc.stderr
    _check_partial(tmp_path, "deadline")


def test_ctrl_c_writes_a_partial_report(tmp_path):
    with FaultyServer("stall_after", answered=LEVEL_ONE) as server:
        proc = subprocess.Popen(_cmd(server.url, tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert server.stalled.wait(60), "the sweep never reached the second level"
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    _check_partial(tmp_path, "interrupted")


def test_request_timeout_bounds_each_request(tmp_path):
    with FaultyServer("stall") as server:
        cmd = [sys.executable, "-m", "envbuilder", "smoke", "--endpoint", server.url, "--concurrency", "1",
               "--requests", "2", "--warmup", "0", "--request-timeout", "0.5", "--json", str(tmp_path / "r.json")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (1, 3) and "Traceback" not in proc.stderr, proc.stderr
    assert "timeout" in (proc.stdout + proc.stderr).lower()


def test_a_partial_report_cannot_be_a_baseline(tmp_path):
    with FaultyServer("stall_after", answered=LEVEL_ONE) as server:
        first = subprocess.run(_cmd(server.url, tmp_path, "--level-deadline", "2"), capture_output=True, timeout=120)
        assert first.returncode == 1 and json.loads((tmp_path / "r.json").read_text())["partial"] is True
        (tmp_path / "base.json").write_bytes((tmp_path / "r.json").read_bytes())
        proc = subprocess.run(_cmd(server.url, tmp_path, "--baseline", str(tmp_path / "base.json")),
                              capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "partial" in proc.stderr and "cannot be a baseline" in proc.stderr
