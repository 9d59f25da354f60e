"""Shared fixtures (index server, git repos) plus export helpers."""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.support.fixtures import *  # noqa: E402,F403
