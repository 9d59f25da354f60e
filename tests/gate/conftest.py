"""`tests.` helpers importable from here, and a project directory with the shipped matrices."""

import shutil
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A user's project: the shipped matrices and an empty locks/; an isolated envbuilder cache."""
    root = tmp_path / "project"
    shutil.copytree(_ROOT / "matrices", root / "matrices")
    (root / "locks").mkdir()
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVBUILDER_ROOT", raising=False)
    return root
