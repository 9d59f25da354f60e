"""Run a GitHub Actions workflow's `run:` steps here, as the runner would, so the workflow a user copies is tested.

Each step runs in the shell GitHub uses (`bash -e` by default; `shell: bash` adds `--noprofile
--norc -o pipefail`) with the job's and the step's `env:`, after `${{ ... }}` expressions are
replaced by the values the test gives (an expression the test does not give fails the test).
The test's own interpreter's scripts come first on PATH, so `envbuilder` is the one under test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from ruamel.yaml import YAML


def load_workflow(path: Path) -> dict:
    return YAML(typ="safe", pure=True).load(path.read_text())


def step(flow: dict, job: str, step_id: str) -> dict:
    return next(s for s in flow["jobs"][job]["steps"] if s.get("id") == step_id)


def expand(value: str, expressions: Mapping[str, str]) -> str:
    """`${{ expr }}` replaced by `expressions[expr]`; an expression not given is an AssertionError."""
    def one(match: re.Match) -> str:
        assert match.group(1) in expressions, f"unsupported expression {match.group(0)!r} in {value!r}"
        return expressions[match.group(1)]
    return re.sub(r"\$\{\{\s*(.+?)\s*\}\}", one, value)


def run_step(flow: dict, job: str, step_id: str, cwd: Path, expressions: Mapping[str, str],
             env: Mapping[str, str] | None = None, path_first: Path | None = None) -> subprocess.CompletedProcess:
    """One `run:` step; `env` adds what the runner sets (GITHUB_STEP_SUMMARY, RUNNER_TEMP), `path_first`
    a folder of stand-ins (a `gh`) put before everything on PATH."""
    the_step = step(flow, job, step_id)
    declared = {**flow["jobs"][job].get("env", {}), **the_step.get("env", {})}
    path = os.pathsep.join(str(p) for p in (path_first, Path(sys.executable).parent) if p is not None)
    full = {**os.environ, **{k: expand(str(v), expressions) for k, v in declared.items()}, **(env or {}),
            "PATH": f"{path}{os.pathsep}{os.environ.get('PATH', '')}"}
    full.pop("ENVBUILDER_ROOT", None)
    shell = ["bash", "--noprofile", "--norc", "-eo", "pipefail"] if the_step.get("shell") == "bash" else ["bash", "-e"]
    return subprocess.run([*shell, "-c", the_step["run"]], cwd=cwd, env=full, capture_output=True, text=True,
                          timeout=300)
