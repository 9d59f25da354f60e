"""`lock --check` checks content, not form: a lock edited as an attacker would (through
`envbuilder.lock.io`, digest recomputed, every value well-formed) is still exit 1, because the check
re-resolves the matrix offline from the cache and compares key for key; `--online` also asks the
index for every artifact (unreachable: exit 3). A real local index serves real wheels."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from envbuilder.lock import io
from envbuilder.lock.model import Lock


def tamper(project, edit: Callable[[dict], None]) -> str:
    """Edit the lock's canonical table and write it back with envbuilder.lock.io (digest consistent)."""
    path = project.lock_path("app")
    data = io.read_lock(path).to_dict()
    edit(data)
    text = io.dumps(Lock.from_dict(data))
    path.write_text(text, encoding="utf-8")
    io.loads(text)  # still valid in form: only the content check can tell
    return text


def package(data: dict, name: str) -> dict:
    return next(p for p in data["package"] if p["name"] == name)


def zero_hash(data: dict) -> None:
    package(data, "lib")["artifacts"][0]["sha256"] = "0" * 64


def test_a_current_lock_passes_offline_without_the_index(locked, default_index):
    default_index.stop()
    result = locked.run("lock", "--check", "app")
    assert result.rc == 0 and "match their matrices (re-resolved offline)" in result.err, result.text


def test_zeroed_sha256_is_exit_1_with_both_hashes(locked, default_index):
    real = locked.read_lock("app").package("lib").artifacts[0].sha256
    text = tamper(locked, zero_hash)
    default_index.stop()
    result = locked.run("lock", "--check", "app")
    assert result.rc == 1, result.text
    assert "package lib, artifact lib-2.0-py3-none-any.whl, sha256" in result.err
    assert "0" * 64 in result.err and real in result.err
    assert locked.lock_path("app").read_text(encoding="utf-8") == text  # a check never rewrites


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["package"].remove(package(d, "util")),
     "package util 1.0: the matrix resolves to it, the lock lacks it"),
    (lambda d: package(d, "lib")["artifacts"][0].update(size=1),
     "package lib, artifact lib-2.0-py3-none-any.whl, size: lock has 1"),
    (lambda d: package(d, "app").update(dependencies=["lib>=1"]),
     "package app, dependencies: lock has ['lib>=1'], the matrix resolves to ['lib>=1', 'util']"),
    (lambda d: d["toolchain"].update({"source-date-epoch": 1}),
     "toolchain.source-date-epoch: lock has 1"),
])
def test_content_edits_are_exit_1_naming_the_difference(locked, edit, expected):
    tamper(locked, edit)
    result = locked.run("lock", "--check", "app")
    assert result.rc == 1 and expected in result.err, result.text


def test_online_asks_the_index_for_every_artifact(locked, default_index):
    result = locked.run("lock", "--check", "--online", "app")
    assert result.rc == 0 and "every artifact confirmed by its index" in result.err, result.text
    real = locked.read_lock("app").package("lib").artifacts[0].sha256
    tamper(locked, zero_hash)
    result = locked.run("lock", "--check", "--online", "app")
    assert result.rc == 1, result.text
    assert f"lock has sha256 {'0' * 64}, index 'pypi' has {real}" in result.err


def downgrade_lib_keeping_its_bytes(data: dict) -> None:
    lib = package(data, "lib")
    lib.update(version="1.0", artifacts=[{**lib["artifacts"][0], "file": "lib-1.0-py3-none-any.whl"}])


def test_a_pin_the_cache_never_saw_needs_online_and_then_fails_on_content(locked):
    """lib 1.0 is a valid pin (app asks lib>=1) and stays preferred, but its file is lib 2.0's bytes."""
    tamper(locked, downgrade_lib_keeping_its_bytes)
    offline = locked.run("lock", "--check", "app")
    assert offline.rc == 3 and "metadata: lib-1.0-py3-none-any.whl" in offline.err, offline.text
    online = locked.run("lock", "--check", "--online", "app")
    assert online.rc == 1, online.text
    assert "package lib, artifact lib-1.0-py3-none-any.whl, sha256: lock has" in online.err
    assert "package lib, dependencies: lock has ['util>=1'], the matrix resolves to nothing" in online.err


def test_online_with_the_index_down_is_exit_3(locked, default_index):
    default_index.stop()
    result = locked.run("lock", "--check", "--online", "app")
    assert result.rc == 3 and "Traceback" not in result.text, result.text


def test_offline_without_a_cache_is_exit_3_saying_what_to_do(locked, _isolated_envbuilder_cache: Path):
    shutil.rmtree(_isolated_envbuilder_cache)
    result = locked.run("lock", "--check", "app")
    assert result.rc == 3 and "--check --online" in result.err, result.text


def test_online_needs_check(locked):
    assert locked.run("lock", "--online", "app").rc == 2
