"""The render/build/bake commands as a user runs them (a subprocess, exit codes, no traceback)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path


def run(project: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envbuilder", *args], capture_output=True, text=True,
                          cwd=cwd or project, env={**os.environ, "ENVBUILDER_ROOT": str(project)})


def test_dry_run_prints_plan_and_whole_dockerfile_with_target_option(project: Path) -> None:
    result = run(project, "build", "--target", "blackwell-sm120", "--dry-run")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert re.search(r"^base\s+nvidia/cuda:12\.8\.1-cudnn-devel-ubuntu24\.04@sha256:[0-9a-f]{64}$", out, re.M)
    assert "CUDA_HOME=/usr/local/cuda-12.8" in out
    stages = re.findall(r"^FROM \S+ AS (\S+)$", out, re.M)
    assert stages[:4] == ["base", "build-flash-attn", "tool", "installer"] and stages[-2:] == ["python", "runtime"]
    layers = stages[4:-2]
    assert layers and [s.split("-")[1] for s in layers] == [str(i) for i in range(1, len(layers) + 1)]
    assert any(s.endswith("-source-built") for s in layers)
    assert 'CMD ["envbuilder", "serve", "blackwell-sm120"]' in out
    assert re.search(rf"^layers +{len(layers)} venv layers", out, re.M)
    positional = run(project, "build", "blackwell-sm120", "--dry-run")
    assert positional.stdout == out


def test_dry_run_is_the_same_whatever_the_host_says(project: Path) -> None:
    a = run(project, "build", "blackwell-sm120", "--dry-run")
    env = {**os.environ, "ENVBUILDER_ROOT": str(project), "PIP_INDEX_URL": "https://mirror.example.com/simple",
           "PATH": "/nonexistent", "HOME": str(project)}
    b = subprocess.run([sys.executable, "-m", "envbuilder", "build", "blackwell-sm120", "--dry-run"],
                       capture_output=True, text=True, env=env, cwd="/")
    assert b.returncode == 0, b.stderr
    assert a.stdout == b.stdout and "mirror.example" not in b.stdout


def test_unknown_target_and_conflicting_targets_exit_2(project: Path) -> None:
    unknown = run(project, "build", "nope-sm0", "--dry-run")
    assert unknown.returncode == 2 and "unknown target" in unknown.stderr
    both = run(project, "render", "cpu-llamacpp", "--target", "blackwell-sm120")
    assert both.returncode == 2 and "two targets" in both.stderr
    assert "Traceback" not in unknown.stderr + both.stderr


def test_render_writes_a_context(project: Path, tmp_path: Path) -> None:
    result = run(project, "render", "cpu-llamacpp", "-o", str(tmp_path / "ctx"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ctx" / "Dockerfile").is_file()
    assert (tmp_path / "ctx" / "requirements" / "build-llama-cpp-python" / "source.json").is_file()


def test_bake_has_one_target_per_locked_target_and_no_host_facts(project: Path, tmp_path: Path) -> None:
    bake = tmp_path / "docker-bake.json"
    result = run(project, "bake", "-o", str(bake), "--contexts", str(tmp_path / "ctx"))
    assert result.returncode == 0, result.stderr
    doc = json.loads(bake.read_text())
    assert set(doc["target"]) == {"blackwell-sm120", "cpu-llamacpp"} == set(doc["group"]["default"]["targets"])
    cpu = doc["target"]["cpu-llamacpp"]
    assert cpu["context"] == "ctx/cpu-llamacpp" and cpu["target"] == "runtime"
    assert "INDEX_URL" not in cpu["args"] and cpu["labels"]["io.envbuilder.target"] == "cpu-llamacpp"
    assert cpu["secret"] == ["id=index_url,env=INDEX_URL"]  # a secret, never a build arg (kept in history)
    assert cpu["cache-to"] == ["type=local,dest=.buildx-cache/cpu-llamacpp,mode=max"]
    assert str(tmp_path) not in bake.read_text()
