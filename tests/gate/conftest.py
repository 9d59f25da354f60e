"""`tests.` helpers importable from here, and a project directory with the shipped matrices."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))


@pytest.fixture(autouse=True)
def _no_real_index(monkeypatch):
    """The gate asks the index about new files: here it is never the machine's real index. Tests
    that need one take `published` (a local index server with real files); others get a port that
    refuses connections, so a forgotten file shows as exit 3, not as a silent network call."""
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ENVBUILDER_HTTP_RETRIES", "1")
    monkeypatch.setenv("ENVBUILDER_HTTP_BACKOFF", "0.01")


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A user's project: the shipped matrices and an empty locks/; an isolated envbuilder cache."""
    root = tmp_path / "project"
    shutil.copytree(_ROOT / "matrices", root / "matrices")
    (root / "locks").mkdir()
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVBUILDER_ROOT", raising=False)
    return root


@pytest.fixture
def published(default_index):
    """A head lock made real: every file the base (default: the shipped lock) does not lock is built
    and served by the test's index, the user's default index here, and recorded with its real hash,
    as a re-lock against that index would write it. `published(lock, None)`: every file."""
    from tests.gate.stack import publish, stack_lock

    shipped = stack_lock()
    return lambda lock, base=shipped: publish(default_index, lock, base)


@pytest.fixture
def gate_in_process(capsys, monkeypatch):
    """The CLI entry point in this process (imports paid once), as `tests.gate.stack.gate` runs it."""
    from envbuilder.cli import main

    def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        try:
            main(["gate", *args])
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
        out = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out.out, out.err)

    return run
