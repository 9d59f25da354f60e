from __future__ import annotations

from pathlib import Path

import pytest

from tests.resolve.project import Project, matrix_yaml, wide_consoles


@pytest.fixture
def mproject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> Project:
    """A project with matrices/ only: the loader needs no index."""
    root = tmp_path / "project"
    (root / "matrices").mkdir(parents=True)
    monkeypatch.setenv("ENVBUILDER_ROOT", str(root))
    wide_consoles(monkeypatch)
    return Project(root, capsys)


@pytest.fixture
def good() -> str:
    return matrix_yaml("{name}", {"app": "==1.0"})
