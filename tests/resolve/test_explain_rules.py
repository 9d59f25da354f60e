"""`explain` lists only the knowledge rules that can apply to the target (its arch, its model)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def explain(root: Path, target: str, package: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "envbuilder", "explain", target, package], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "ENVBUILDER_ROOT": str(root)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_rules_for_another_arch_or_model_are_not_listed(tmp_path):
    (tmp_path / "matrices").mkdir()
    (tmp_path / "locks").mkdir()
    text = (ROOT / "matrices" / "hopper-sm90.yaml").read_text().replace("zai-org/GLM-5-FP8", "Qwen/Qwen3-32B")
    (tmp_path / "matrices" / "hopper-sm90.yaml").write_text(text)
    shutil.copy(ROOT / "locks" / "hopper-sm90.lock.toml", tmp_path / "locks")
    for package in ("sglang", "transformers", "flashinfer-python"):
        out = explain(tmp_path, "hopper-sm90", package)
        assert "glm5" not in out and "sm120" not in out and "sm12x" not in out, out


def test_rules_for_this_arch_and_model_are_listed():
    out = explain(ROOT, "blackwell-sm120", "sglang")
    assert "rule sglang-sm120-shared-memory" in out and "rule glm5-needs-sglang-0.5.9" in out
    assert "rule sglang-sm120-shared-memory" not in explain(ROOT, "hopper-sm90", "sglang")
