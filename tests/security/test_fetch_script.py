"""The build stages' stdlib fetch script uses credentials from the index URL against a real index
that demands them, and sends them to the index's host only."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.authindex import AuthIndex, pypiserver_problem
from tests.support.dists import make_sdist

FETCH = Path(__file__).resolve().parents[2] / "envbuilder" / "build" / "fetch.py"


@pytest.fixture
def sdist_index(tmp_path: Path):
    require_tool("pypiserver", pypiserver_problem() is None, pypiserver_problem() or "")
    folder = tmp_path / "packages"
    folder.mkdir()
    dist = make_sdist("demo", "1.0")
    (folder / dist.filename).write_bytes(dist.data)
    with AuthIndex(folder) as index:
        yield index, dist


def test_fetch_uses_the_index_credentials_and_never_prints_them(sdist_index, tmp_path: Path):
    index, dist = sdist_index
    source = tmp_path / "source.json"
    source.write_text(f'{{"name": "demo", "filename": "{dist.filename}", "sha256": "{dist.sha256}"}}')
    env = {"PIP_INDEX_URL": index.url, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, str(FETCH), str(source), str(tmp_path / "dist")], capture_output=True,
                          text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert hashlib.sha256((tmp_path / "dist" / dist.filename).read_bytes()).hexdigest() == dist.sha256
    assert not [f for f in index.forms() if f in done.stdout + done.stderr]
    no_auth = subprocess.run([sys.executable, str(FETCH), str(source), str(tmp_path / "d2")], capture_output=True,
                             text=True, env={**env, "PIP_INDEX_URL": index.bare_url}, timeout=60)
    assert no_auth.returncode != 0 and "401" in no_auth.stderr  # the index really demands them
