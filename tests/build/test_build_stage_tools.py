"""The shipped locks' source-build stages install nothing unpinned: their ABI inputs and their locked
build tools come from one hashed file, and pip builds without fetching a backend of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envbuilder.build.plan import make_plan
from envbuilder.build.render import render
from envbuilder.lock import read_lock
from envbuilder.matrix import load_target, shipped_targets

REPO = Path(__file__).resolve().parents[2]


def _stages(dockerfile: str) -> dict[str, str]:
    """Each `build-*` stage's text, line continuations joined."""
    found = re.findall(r"^FROM \S+ AS (build-\S+)\n(.*?)(?=^FROM |\Z)", dockerfile, re.S | re.M)
    return {name: body.replace("\\\n", " ") for name, body in found}


@pytest.mark.parametrize("name", shipped_targets(REPO))
def test_shipped_build_stages_install_only_hashed_locked_tools(name: str) -> None:
    lock, target = read_lock(REPO / "locks" / f"{name}.lock.toml"), load_target(name, REPO)
    plan = make_plan(lock, target)
    assert not [n for n in plan.notes if "build tools" in n or "unhashed" in n], plan.notes
    rendered = render(lock, target)
    stages = _stages(rendered.dockerfile)
    for build in plan.wheel_builds:
        assert build.tools and not build.isolated, build.stage  # every wheel build has locked tools
        inputs = rendered.files[f"requirements/{build.stage}/inputs.txt"].decode()
        for tool in build.tools:
            assert f"{tool.name}=={tool.version}" in inputs
            assert all(f"--hash=sha256:{a.sha256}" in inputs for a in tool.artifacts)
        stage = stages[build.stage]
        installs = [line for line in stage.splitlines() if "pip install" in line]
        assert installs and all("--require-hashes" in line and "--no-deps" in line for line in installs), installs
        assert "--no-build-isolation" in next(line for line in stage.splitlines() if "pip wheel" in line)
        assert f"requirements/{build.stage}/tools.txt" not in rendered.files


def test_a_lock_without_tools_says_to_relock(project: Path) -> None:
    """tests/build's hand-made blackwell lock predates locked tools: the plan says so."""
    from envbuilder.build.render import load

    plan = make_plan(*load("blackwell-sm120"))
    assert any("flash-attn: the lock has no build tools" in n and "lock --refresh" in n for n in plan.notes)
