"""The lock file and the commands around it: determinism, stable re-locks, --check, explain."""

from __future__ import annotations

import re

import pytest

from envbuilder.lock import dumps, loads
from tests.resolve.project import publish


def _versions(project, target: str = "app") -> dict[str, str]:
    return {p.name: p.version for p in project.read_lock(target).packages}


def test_lock_contents(locked):
    text = locked.lock_path("app").read_text()
    lock = loads(text)
    assert dumps(lock) == text  # the reader and writer agree byte for byte
    assert "127.0.0.1" not in text and "http" not in text  # indexes by name, never a host
    assert lock.indexes == ("pypi",) and lock.target == "app"
    for package in lock.packages:
        assert package.source.index == "pypi"
        for artifact in package.artifacts:
            assert len(artifact.sha256) == 64 and artifact.size > 0 and artifact.filename.endswith(".whl")


def test_relock_gives_identical_bytes(locked):
    first = locked.lock_bytes("app")
    result = locked.run("lock", "--refresh", "app")
    assert result.rc == 0 and "unchanged" in result.err, result.text
    assert locked.lock_bytes("app") == first
    locked.lock_path("app").unlink()  # from nothing (the cache is warm, the index asked again)
    assert locked.run("lock", "app").rc == 0
    assert locked.lock_bytes("app") == first


def test_relocks_are_stable_unless_an_upgrade_is_asked(locked, default_index):
    first = locked.lock_bytes("app")
    publish(default_index, "app", "1.1", ["lib>=1", "util"])
    publish(default_index, "lib", "3.0")
    publish(default_index, "util", "1.5")

    result = locked.run("lock", "app")  # a current lock is kept as it is
    assert result.rc == 0 and "current" in result.err and locked.lock_bytes("app") == first, result.text

    publish(default_index, "extra", "1.0")
    locked.write_matrix("app", {"app": ">=1", "extra": ""})  # the matrix changed: resolve again ...
    assert locked.run("lock", "app").rc == 0
    assert _versions(locked) == {"app": "1.0", "lib": "2.0", "util": "1.0", "extra": "1.0"}  # ... keeping pins

    assert locked.run("lock", "--refresh", "app").rc == 0
    assert _versions(locked)["app"] == "1.0"

    assert locked.run("lock", "--upgrade-package", "lib", "app").rc == 0
    assert _versions(locked) == {"app": "1.0", "lib": "3.0", "util": "1.0", "extra": "1.0"}

    assert locked.run("lock", "--upgrade", "app").rc == 0
    assert _versions(locked) == {"app": "1.1", "lib": "3.0", "util": "1.5", "extra": "1.0"}


def test_upgrade_package_accepts_any_spelling_of_the_name(locked, default_index):
    publish(default_index, "util", "1.5")
    assert locked.run("lock", "--upgrade-package", "Util", "app").rc == 0
    assert _versions(locked)["util"] == "1.5"


def test_check(locked, default_index):
    default_index.drop_connections(None)  # --check never needs the index
    result = locked.run("lock", "--check", "app")
    assert result.rc == 0 and "ok 1 lock(s) match their matrices" in result.err, result.text

    path = locked.lock_path("app")
    original = path.read_text()
    path.write_text(re.sub(r"size = (\d+)", lambda m: f"size = {int(m.group(1)) + 1}", original, count=1))
    result = locked.run("lock", "--check")
    assert result.rc == 1 and "edited by hand" in result.err, result.text
    path.write_text(original.replace('version = "2.0"', 'version = "2.1"', 1))
    result = locked.run("lock", "--check")  # the artifact is no longer a file of that version: bad input
    assert result.rc == 2 and "artifacts[0].file" in result.err and "not of lib 2.1" in result.err, result.text
    path.write_text(original)

    locked.write_matrix("app", {"app": ">=1", "lib": "<3"})
    result = locked.run("lock", "--check", "app")
    assert result.rc == 1 and "matrix app.yaml changed since the lock was made" in result.err, result.text

    locked.write_matrix("app", {"app": ">=1"})
    (locked.root / "matrices" / "app.yaml").write_text("# a comment changes no digest\n" +
                                                       (locked.root / "matrices" / "app.yaml").read_text())
    assert locked.run("lock", "--check", "app").rc == 0

    path.unlink()
    result = locked.run("lock", "--check", "app")
    assert result.rc == 1 and "missing (run `envbuilder lock app`)" in result.err


def test_explain_names_paths_overrides_and_the_matrix_ask(project, default_index):
    publish(default_index, "top", "1.0", ["mid>=1"])
    publish(default_index, "mid", "1.0", ["dep==1.0"])
    for version in ("1.0", "2.0"):
        publish(default_index, "dep", version)
    project.write_matrix("why", {"top": "==1.0", "dep": {"version": ">=2", "override": True}})
    assert project.run("lock", "why").rc == 0
    result = project.run("explain", "why", "dep")
    assert result.rc == 0, result.text
    out = result.out
    assert "dep 2.0 in why" in out
    assert "matrix asks: >=2" in out and "override" in out
    assert "overridden mid 1.0: dep==1.0" in out
    assert "wanted by mid 1.0: >=2" in out
    assert "path: matrix -> dep" in out and "path: matrix -> top -> mid -> dep" in out

    result = project.run("explain", "why", "mid")
    assert result.rc == 0 and "path: matrix -> top -> mid" in result.out and "matrix asks" not in result.out

    result = project.run("explain", "why", "absent")
    assert result.rc == 2 and "'absent' is not in the why lock" in result.err


def test_explain_shows_rule_sources(project, default_index):
    publish(default_index, "sglang", "0.5.9")
    # sm_120: the SGLang rules that apply to this arch are listed (rules for other arches are not)
    project.write_matrix("rules", {"sglang": "==0.5.9"},
                         extra="hardware: {gpu: {name: RTX PRO 6000, arch: sm_120, count: 1, memory_gib: 96}}\n")
    assert project.run("lock", "rules").rc == 0
    result = project.run("explain", "rules", "sglang")
    assert result.rc == 0
    rules = [line for line in result.out.splitlines() if line.strip().startswith("rule ")]
    assert rules and all(re.search(r" \[[^\]]+\]$", line) for line in rules), result.out  # each names its source


def test_explain_includes_the_matrix_knowledge_overlay(project, default_index):
    publish(default_index, "pkg", "1.0")
    overlay = ("knowledge:\n  known_issues:\n    - {id: pkg-local-1, package: pkg, affected: '<2', severity: warning,"
               " summary: our own finding, source: 'https://example.invalid/issue/1'}\n")
    path = project.write_matrix("local", {"pkg": "==1.0"})
    path.write_text(path.read_text() + overlay)
    assert project.run("lock", "local").rc == 0
    result = project.run("explain", "local", "pkg")
    assert "rule pkg-local-1 (warning, <2): AFFECTED — our own finding [https://example.invalid/issue/1]" in result.out


def test_lock_repairs_a_lock_it_cannot_read_and_other_commands_exit_2(locked):
    """Not UTF-8: `lock` rewrites it (saying so); every other reader exits 2 naming the file and line."""
    path = locked.lock_path("app")
    good = path.read_bytes()
    path.write_bytes(good.replace(b"lock-version", b"lock-version\xff\xfe", 1))
    for args in (("lock", "app", "--check"), ("export", "app", "--format", "requirements"), ("explain", "app", "lib"),
                 ("build", "app", "--dry-run"), ("gate", "--base", str(path), "--head", str(path))):
        result = locked.run(*args)
        assert result.rc == 2, (args, result.text)
        assert "app.lock.toml" in result.err and "Traceback" not in result.text and "UTF-8" in result.err, args
    repaired = locked.run("lock", "app")
    assert repaired.rc == 0 and "replaced" in repaired.err and "unreadable" in repaired.err, repaired.text
    assert path.read_bytes() == good


def test_lock_files_get_the_umask_and_stale_temp_files_are_swept(locked):
    import os
    import time

    path = locked.lock_path("app")
    stale = path.parent / ".app.lock.toml.k1ll3d.tmp"
    stale.write_text("half")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    fresh = path.parent / ".app.lock.toml.l1v3.tmp"  # another run's write in progress: kept
    fresh.write_text("in flight")
    old = os.umask(0o022)
    try:
        path.unlink()
        assert locked.run("lock", "app").rc == 0
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
    assert not stale.exists() and fresh.exists()
