"""The serve tests reuse the smoke tests' server helpers and tiny-model generators."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "smoke"))
