"""`envbuilder export` end to end: lock lookup, output, and every error as a message with its exit code."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from envbuilder.lock import write_lock
from envbuilder.export import export
from tests.export.helpers import make_lock, package
from tests.support.dists import make_wheel


def envbuilder(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "envbuilder", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)


@pytest.fixture
def project(tmp_path, index_server):
    """A project with locks/demo.lock.toml (no matrix: the lock alone must be enough to export)."""
    alpha = make_wheel("alpha", "1.0")
    index_server.add(alpha)
    lock = make_lock([package("alpha", "1.0", [alpha])])
    (tmp_path / "matrices").mkdir()
    write_lock(lock, tmp_path / "locks" / "demo.lock.toml")
    return tmp_path, lock


def test_target_reads_its_lock_and_prints_requirements(project):
    root, lock = project
    proc = envbuilder("export", "demo", "--format", "requirements", cwd=root, ENVBUILDER_ROOT=str(root))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == export(lock, "requirements", origin="locks/demo.lock.toml")


def test_lock_file_and_output(project, default_index):
    root, lock = project
    out = root / "pylock.demo.toml"
    proc = envbuilder("export", "--lock", "locks/demo.lock.toml", "--format", "pylock", "-o", str(out), cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in " ".join(proc.stderr.split())
    doc = tomllib.loads(out.read_text())
    assert doc["packages"][0]["wheels"][0]["url"] == default_index.file_url("alpha-1.0-py3-none-any.whl")
    assert doc["tool"]["envbuilder"]["lock"] == "locks/demo.lock.toml"


@pytest.mark.parametrize("args, message", [
    ((), "give a TARGET or --lock FILE"),
    (("demo", "--lock", "locks/demo.lock.toml"), "give a TARGET or --lock FILE"),
    (("nope",), "no such lock file"),
    (("demo", "-o", "locked.toml", "--format", "pylock"), "pylock.<name>.toml"),
])
def test_bad_input_is_a_message_and_exit_2(project, args, message):
    root, _ = project
    fmt = () if "--format" in args else ("--format", "requirements")
    proc = envbuilder("export", *args, *fmt, cwd=root, ENVBUILDER_ROOT=str(root))
    assert proc.returncode == 2, proc.stderr
    assert message in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr


def test_unreachable_index_is_exit_3(project):
    root, _ = project
    proc = envbuilder("export", "demo", "--format", "conda-lock", cwd=root, ENVBUILDER_ROOT=str(root),
                      PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_CONFIG_FILE=os.devnull,
                      ENVBUILDER_HTTP_RETRIES="1", ENVBUILDER_HTTP_BACKOFF="0.01")
    assert proc.returncode == 3, proc.stderr
    assert "Traceback" not in proc.stderr


def test_index_changed_under_the_lock_is_exit_1(project, default_index):
    root, _ = project
    default_index.projects.clear()
    default_index.add(make_wheel("alpha", "1.0", files={"alpha/__init__.py": b"# other bytes\n"}))
    proc = envbuilder("export", "demo", "--format", "pylock", cwd=root, ENVBUILDER_ROOT=str(root))
    assert proc.returncode == 1, proc.stderr
    assert "the file changed on the index" in " ".join(proc.stderr.split())
