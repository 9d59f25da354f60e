"""The weekly bump workflow a user copies: it parses, and its `run:` step runs here as written.

An upstream repository (bare, so the step can push to it) holds a project whose matrix takes
httpx from a real local git repository (tests/bump/conftest.py) and its lock; a clone stands for
the runner's checkout. Only `gh` is a stand-in: a script that records its arguments and the PR
body, and says no pull request is open yet.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.bump.conftest import git_spec
from tests.conftest import needs_tool
from tests.support import workflow
from tests.support.gitrepo import GitRepo

pytestmark = [pytest.mark.network, needs_tool("git", shutil.which("git"), "apt-get install git")]
ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "ci" / "envbuilder-bump.yml"
GH_STUB = """#!/bin/bash
# records each call; `gh pr view` finds no open pull request
echo "$*" >> "$GH_LOG"
if [ "$1 $2" = "pr create" ]; then
  while [ $# -gt 0 ]; do [ "$1" = "--body-file" ] && cp "$2" "$GH_LOG.body"; shift; done
fi
[ "$1 $2" != "pr view" ]
"""


def test_workflow_runs_weekly_and_on_demand_with_write_permissions():
    flow = workflow.load_workflow(WORKFLOW)
    assert flow["on"]["schedule"][0]["cron"].split()[4] == "1"  # weekly, on Mondays
    assert "bumps" in flow["on"]["workflow_dispatch"]["inputs"]
    assert flow["permissions"] == {"contents": "write", "pull-requests": "write"}
    steps = flow["jobs"]["bump"]["steps"]
    assert next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))["with"]["fetch-depth"] == 0
    assert [s.get("id") for s in steps if "run" in s] == ["install", "bump"]
    assert "gh pr create" in workflow.step(flow, "bump", "bump")["run"]
    assert "${{" not in workflow.step(flow, "bump", "bump")["run"]  # inputs reach the script as data only


@pytest.fixture
def runner_checkout(project, index_with_httpx_deps, branchy_repo, tmp_path):
    """(checkout, upstream bare repo, httpx work repo, side commit): main holds the matrix and its lock."""
    work, url, side = branchy_repo
    project.write_matrix("wf", {"httpx": git_spec(url, work.commits[0])})
    assert project.run("lock", "wf").rc == 0
    seed = GitRepo(project.root)
    seed.git("init", "-q", "-b", "main")
    seed.commit({"matrices/wf.yaml": (project.root / "matrices/wf.yaml").read_text(),
                 "locks/wf.lock.toml": project.lock_path("wf").read_text()}, message="the project")
    upstream = tmp_path / "upstream.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(project.root), str(upstream)], check=True)
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(upstream), str(checkout)], check=True)
    return checkout, upstream, work, side


def test_the_step_opens_a_pull_request_only_for_a_bump_the_gate_passes(runner_checkout, tmp_path):
    checkout, upstream, work, side = runner_checkout
    stubs, runner_temp = tmp_path / "stubs", tmp_path / "runner-temp"
    stubs.mkdir(), runner_temp.mkdir()
    (stubs / "gh").write_text(GH_STUB)
    (stubs / "gh").chmod(0o755)
    log, summary = tmp_path / "gh.log", tmp_path / "summary.md"
    bumps = (f"wf httpx --branch main\n"
             f"# a comment line\n"
             f"wf httpx --commit {work.commits[0]}\n"          # already there: nothing to bump
             f"wf httpx --branch main --require-fix {side}\n")  # the fix is not on main: refused
    expressions = {"github.event.repository.default_branch": "main", "inputs.bumps": bumps,
                   "secrets.ENVBUILDER_BUMP_TOKEN || github.token": "test-token"}
    env = {"GITHUB_STEP_SUMMARY": str(summary), "RUNNER_TEMP": str(runner_temp), "GH_LOG": str(log)}
    ran = workflow.run_step(workflow.load_workflow(WORKFLOW), "bump", "bump", checkout, expressions, env, stubs)

    assert ran.returncode == 1, ran.stdout + ran.stderr  # the refused bump fails the job, after the others ran
    calls = log.read_text().splitlines()
    creates = [c for c in calls if c.startswith("pr create")]
    assert creates == [f"pr create --base main --head envbuilder/bump-wf-httpx --title envbuilder bump: httpx in wf "
                       f"--body-file {runner_temp}/bump-wf-httpx.md"]
    body = Path(f"{log}.body").read_text()
    assert "depend on sniffio" in body and "| sniffio | added" in body
    pushed = subprocess.run(["git", "--git-dir", str(upstream), "show", "envbuilder/bump-wf-httpx:matrices/wf.yaml"],
                            capture_output=True, text=True, check=True).stdout
    assert work.commits[2] in pushed and work.commits[0] not in pushed
    assert "wf httpx: nothing to bump" in ran.stdout
    assert "::error title=envbuilder bump wf httpx::exit 1" in ran.stdout
    assert "depend on sniffio" in summary.read_text()
