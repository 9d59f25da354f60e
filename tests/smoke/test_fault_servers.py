"""Faults no real server makes on demand: each gives a clear error, an exit code and a report that counts it."""

import json
import subprocess
import sys

import pytest
from faulty_server import FaultyServer


def smoke(url, tmp_path, *extra):
    cmd = [sys.executable, "-m", "envbuilder", "smoke", "--endpoint", url, "--concurrency", "1,4",
           "--requests", "6", "--warmup", "1", "--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html"),
           *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, json.loads((tmp_path / "r.json").read_text())


@pytest.mark.parametrize("mode, kind", [("die", "protocol"), ("malformed", "malformed")])
def test_broken_streams_are_counted_failures(mode, kind, tmp_path):
    with FaultyServer(mode) as server:
        proc, report = smoke(server.url, tmp_path)
    assert proc.returncode == 1
    assert f"6 of 6 requests failed ({kind} x6)" in proc.stdout
    assert not report["passed"]
    for level in report["levels"]:
        run = level["runs"][0]
        assert run["failed"] == 6 and run["succeeded"] == 0 and run["errors"] == {kind: 6}
        assert run["ttft_ms"]["n"] == 0  # failures never enter latency statistics
    assert "FAILED" in (tmp_path / "r.html").read_text()


def test_server_that_stays_503_times_out_with_exit_3(tmp_path):
    with FaultyServer("stay503") as server:
        proc, report = smoke(server.url, tmp_path, "--ready-timeout", "2")
    assert proc.returncode == 3
    assert "not ready after 2 s (last: HTTP 503 on /health)" in proc.stderr
    assert report["passed"] is False and report["levels"] == []
    assert "HTTP 503" in report["verdict"][0]
