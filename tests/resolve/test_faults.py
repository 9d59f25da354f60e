"""Offline mode, a damaged cache, an index that drops connections, two concurrent runs, a SIGKILL."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from envbuilder.index.cache import unseal
from tests.resolve.project import publish
from tests.support.index_server import IndexServer


def _small_index(server: IndexServer) -> None:
    publish(server, "app", "1.0", ["lib>=1", "util"])
    publish(server, "lib", "1.0")
    publish(server, "lib", "2.0", ["util>=1"])
    publish(server, "util", "1.0")


@pytest.fixture
def warm(project, default_index):
    """A project whose `app` target was locked online once: the cache holds what it needs."""
    _small_index(default_index)
    project.write_matrix("app", {"app": "==1.0"})
    result = project.run("lock", "app")
    assert result.rc == 0, result.text
    return project


def test_offline_after_a_warm_run(warm, default_index):
    first = warm.lock_bytes("app")
    warm.lock_path("app").unlink()
    default_index.drop_connections(None)  # the index is gone: only the cache can answer
    default_index.clear_log()
    result = warm.run("lock", "--offline", "app")
    assert result.rc == 0, result.text
    assert warm.lock_bytes("app") == first
    assert default_index.requests() == []


def test_offline_with_an_empty_cache_lists_what_is_missing(warm, default_index, tmp_path, monkeypatch):
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "empty-cache"))
    warm.lock_path("app").unlink()
    result = warm.run("lock", "--offline", "app")
    assert result.rc == 3, result.text
    assert "offline: 1 item(s) are not in the cache:\n  - project page: app (index 'pypi')" in result.err
    assert "run once without --offline" in result.err and "Traceback" not in result.text
    assert not warm.lock_path("app").exists()


def test_offline_lists_exactly_the_new_packages(warm, default_index):
    publish(default_index, "extra-one", "1.0")
    publish(default_index, "extra-two", "1.0")
    warm.write_matrix("app", {"app": "==1.0", "extra-one": "", "extra-two": ">=1"})
    result = warm.run("lock", "--offline", "app")
    assert result.rc == 3, result.text
    listed = [line.strip() for line in result.err.splitlines() if line.strip().startswith("- ")]
    assert set(listed) <= {"- project page: extra-one (index 'pypi')", "- project page: extra-two (index 'pypi')"}
    assert listed, result.err


def test_a_corrupted_cache_entry_is_refetched(warm, default_index):
    first = warm.lock_bytes("app")
    cache = Path(os.environ["ENVBUILDER_CACHE_DIR"])
    entries = sorted((cache / "metadata").rglob("*"))
    entries = [p for p in entries if p.is_file()]
    assert len(entries) == 3  # app, lib 2.0, util
    for entry in entries:
        data = bytearray(entry.read_bytes())
        data[-5] ^= 0xFF  # one flipped bit in the payload: the sealed digest no longer matches
        entry.write_bytes(bytes(data))
    page = next(p for p in (cache / "pages").rglob("lib") if p.is_file())
    page.write_bytes(page.read_bytes()[:20])  # a truncated page
    warm.lock_path("app").unlink()
    default_index.clear_log()
    result = warm.run("lock", "app")
    assert result.rc == 0, result.text
    assert warm.lock_bytes("app") == first
    assert len(default_index.requests(".metadata")) == 3  # each damaged entry fetched again
    assert all(unseal(entry.read_bytes()) is not None for entry in entries)  # rewritten whole


def test_dropped_connections_are_retried(project, default_index):
    _small_index(default_index)
    project.write_matrix("app", {"app": "==1.0"})
    default_index.drop_connections(2)  # ENVBUILDER_HTTP_RETRIES=2: three attempts per request
    result = project.run("lock", "app")
    assert result.rc == 0, result.text
    assert [r.status for r in default_index.requests()[:2]] == [0, 0]
    assert project.read_lock("app").package("app").version == "1.0"


def test_an_index_that_always_drops_is_a_clear_exit_3(project, default_index):
    _small_index(default_index)
    project.write_matrix("app", {"app": "==1.0"})
    default_index.drop_connections(None)
    result = project.run("lock", "app")
    assert result.rc == 3, result.text
    assert f"cannot fetch {default_index.url}/app/ after 3 attempts" in result.err
    assert "--offline" in result.err and "Traceback" not in result.text
    assert not project.lock_path("app").exists()


# --- two processes -----------------------------------------------------------------------------

def test_two_concurrent_lock_runs(project, default_index):
    _small_index(default_index)
    for i in range(12):  # enough work that the two runs overlap
        publish(default_index, f"dep{i}", "1.0", [f"dep{i + 1}"] if i < 11 else [])
    project.write_matrix("app", {"app": "==1.0", "dep0": ""})
    runs = [project.spawn("lock", "app") for _ in range(2)]
    outputs = [run.communicate(timeout=120) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    lock = project.lock_bytes("app")
    assert len(project.read_lock("app").packages) == 15
    assert sorted(p.name for p in project.root.joinpath("locks").iterdir()) == ["app.lock.toml"]
    project.lock_path("app").unlink()
    assert project.run("lock", "--offline", "app").rc == 0  # both filled one cache, consistently
    assert project.lock_bytes("app") == lock


class SlowIndex(IndexServer):
    """A real index that answers every request after `delay` seconds (a stand-in for a slow network)."""

    delay = 0.0

    def _take_drop(self) -> bool:
        time.sleep(self.delay)
        return super()._take_drop()


def test_sigkill_mid_run_leaves_the_old_lock_intact(project, monkeypatch):
    with SlowIndex() as server:
        monkeypatch.setenv("PIP_INDEX_URL", server.url)
        _small_index(server)
        project.write_matrix("app", {"app": "==1.0"})
        assert project.run("lock", "app").rc == 0
        old = project.lock_bytes("app")
        publish(server, "app", "2.0", ["lib>=1"])
        project.write_matrix("app", {"app": ">=1"})
        server.delay = 0.4
        server.clear_log()
        child = project.spawn("lock", "app")
        try:
            deadline = time.monotonic() + 60
            while not server.requests() and time.monotonic() < deadline:  # the child is resolving
                time.sleep(0.05)
            assert server.requests(), "the child never reached the index"
            child.send_signal(signal.SIGKILL)
            child.wait(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
        assert child.returncode == -signal.SIGKILL
        assert project.lock_bytes("app") == old
        server.delay = 0
        result = project.run("lock", "--check", "app")
        assert result.rc == 1 and "changed since the lock was made" in result.err  # old, not half-new
