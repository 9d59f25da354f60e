"""`envbuilder lock cpu-llamacpp` against the user's real default index: `pytest -m network`."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from envbuilder.errors import Unreachable
from envbuilder.index import IndexClient, default_index_url
from tests.conftest import require_tool
from tests.resolve.project import Project, wide_consoles

pytestmark = pytest.mark.network
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def live_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> Project:
    try:
        with IndexClient(retries=1) as client:
            client.files("pip")
    except Unreachable as exc:
        require_tool("the default package index", False, f"unreachable from here: {exc}")
    root = tmp_path / "project"
    (root / "matrices").mkdir(parents=True)
    shutil.copy(REPO / "matrices" / "cpu-llamacpp.yaml", root / "matrices")
    monkeypatch.setenv("ENVBUILDER_ROOT", str(root))
    wide_consoles(monkeypatch)
    return Project(root, capsys)


def test_lock_cpu_llamacpp_against_the_live_index(live_project: Project):
    result = live_project.run("lock", "cpu-llamacpp")
    assert result.rc == 0, result.text
    lock = live_project.read_lock("cpu-llamacpp")
    llama = lock.package("llama-cpp-python")
    assert llama.version == "0.3.36"
    (sdist,) = llama.artifacts
    assert sdist.kind == "sdist" and sdist.filename == "llama_cpp_python-0.3.36.tar.gz"
    # no hand-copied `metadata:` in the matrix: the sdist's pyproject.toml [project] table says it
    assert llama.metadata_from == "pyproject"
    assert set(llama.dependencies) == {"diskcache>=5.6.1", "jinja2>=2.11.3", "numpy>=1.20.0", "typing-extensions>=4.5.0"}
    assert llama.build is not None and llama.build.inputs_digest.startswith("sha256:")
    assert "CMAKE_ARGS" in llama.build.env
    assert {"numpy", "jinja2", "diskcache", "typing-extensions", "gguf"} <= {p.name for p in lock.packages}
    for package in lock.packages:
        assert package.artifacts, package.name
        for artifact in package.artifacts:
            assert len(artifact.sha256) == 64 and int(artifact.sha256, 16) >= 0, artifact
            assert artifact.size and artifact.size > 0, artifact
    text = live_project.lock_path("cpu-llamacpp").read_text()
    assert urlsplit(default_index_url()).netloc not in text  # no index host in the lock
    first = live_project.lock_bytes("cpu-llamacpp")
    assert live_project.run("lock", "--refresh", "cpu-llamacpp").rc == 0
    assert live_project.lock_bytes("cpu-llamacpp") == first
    assert live_project.run("lock", "--check", "cpu-llamacpp").rc == 0
