"""The CI workflow a user copies: it parses, and its steps run here exactly as written.

A real upstream repository holds `matrices/` and `locks/`; a clone (so `origin/main` exists, as
after `actions/checkout` with fetch-depth 0) gets a PR commit; then the workflow's own `run:`
scripts execute with the variables GitHub would set.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from envbuilder.lock.io import dumps
from envbuilder.matrix import load_target
from tests.gate.stack import ROOT, TARGET, recorded_facets, stack_lock, with_package
from tests.support import workflow
from tests.support.gitrepo import GitRepo, make_git_repo

WORKFLOW = ROOT / "ci" / "envbuilder-gate.yml"
MATRIX = f"matrices/{TARGET}.yaml"
LOCK = f"locks/{TARGET}.lock.toml"


def load_workflow() -> dict:
    return workflow.load_workflow(WORKFLOW)


def test_workflow_parses_and_triggers_on_matrices_and_locks():
    flow = load_workflow()
    assert flow["on"]["pull_request"]["paths"] == ["matrices/**", "locks/**"]
    steps = flow["jobs"]["gate"]["steps"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    ids = [s.get("id") for s in steps if "run" in s]
    assert ids == ["install", "lock-check", "gate"]
    assert "envbuilder lock --check" in _step(flow, "lock-check")["run"]
    assert '--base-ref "$BASE_REF" --format markdown' in _step(flow, "gate")["run"]
    assert flow["jobs"]["gate"]["env"]["BASE_REF"] == "origin/${{ github.base_ref }}"


def _step(flow: dict, step_id: str) -> dict:
    return workflow.step(flow, "gate", step_id)


def _fresh(lock, matrix_path: Path):
    """A lock whose digests match this matrix and knowledge, as `envbuilder lock` writes it."""
    from envbuilder.resolve.locker import knowledge_for

    target = load_target(matrix_path)
    return replace(lock, matrix_digest=target.digest, knowledge_digest=knowledge_for(target).digest)


def run_step(flow: dict, step_id: str, cwd: Path, summary: Path) -> subprocess.CompletedProcess:
    """One `run:` step as the runner executes it, with the job env and `github.base_ref` = main."""
    return workflow.run_step(flow, "gate", step_id, cwd, {"github.base_ref": "main"},
                             env={"GITHUB_STEP_SUMMARY": str(summary)})


@pytest.fixture
def pr_clone(tmp_path, monkeypatch):
    """upstream (main: the shipped matrix and its lock) and a clone checked out on a PR branch."""
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    upstream = tmp_path / "upstream"
    (upstream / "matrices").mkdir(parents=True)
    (upstream / MATRIX).write_text((ROOT / MATRIX).read_text())
    base = _fresh(stack_lock(), upstream / MATRIX)
    make_git_repo(upstream, [{MATRIX: (ROOT / MATRIX).read_text(), LOCK: dumps(base)}])
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(upstream), str(clone)], check=True)
    repo = GitRepo(clone)
    repo.git("checkout", "-q", "-b", "pr")
    return repo, base


def _commit_pr(repo: GitRepo, lock, matrix_text: str | None = None) -> None:
    files = {}
    if matrix_text is not None:
        (repo.path / MATRIX).write_text(matrix_text)
        files[MATRIX] = matrix_text
    files[LOCK] = dumps(_fresh(lock, repo.path / MATRIX))
    repo.commit(files, "PR: bump")


def test_workflow_steps_pass_a_pure_python_patch_bump(pr_clone, published, tmp_path):
    repo, base = pr_clone
    old = base.package("tqdm").version
    major, minor, micro = (old.split(".") + ["0", "0"])[:3]
    new = f"{major}.{minor}.{int(micro) + 1}"
    _commit_pr(repo, published(with_package(base, "tqdm", new, f"tqdm-{new}-py3-none-any.whl")))
    flow, summary = load_workflow(), tmp_path / "summary.md"
    # no lock-check step here: it re-resolves the whole closure (docs/lock.md), and these synthetic
    # locks are not a resolution; test_a_stale_lock_fails_the_lock_check_step runs that step
    gate = run_step(flow, "gate", repo.path, summary)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    text = summary.read_text()
    assert text.startswith("## envbuilder gate: ✅ pass")
    assert f"| tqdm | upgraded patch | {old} | {new} | pure-Python |" in text


def test_workflow_steps_reject_a_torch_bump_that_keeps_sgl_kernel(pr_clone, published, tmp_path):
    repo, base = pr_clone
    fa = base.package("flash-attn")
    head = with_package(base, "torch", "2.10.0", "torch-2.10.0-3-cp312-cp312-manylinux_2_28_x86_64.whl",
                        requested="==2.10.0")
    rebuilt = replace(fa, build=replace(fa.build, requires=("torch==2.10.0",)))
    head = with_package(head, "flash-attn", fa.version, build=rebuilt.build, facets=recorded_facets(rebuilt, "2.10.0"))
    matrix = (repo.path / MATRIX).read_text().replace('torch: "==2.9.1"', 'torch: "==2.10.0"')
    _commit_pr(repo, published(head), matrix)
    flow, summary = load_workflow(), tmp_path / "summary.md"
    gate = run_step(flow, "gate", repo.path, summary)  # (no lock-check step: see the test above)
    assert gate.returncode == 1
    assert re.search(r"^::error file=locks/blackwell-sm120\.lock\.toml,line=\d+,title=abi-torch \(sgl-kernel\)::",
                     gate.stdout, re.M)
    text = summary.read_text()
    assert text.startswith("## envbuilder gate: ❌ reject")
    assert "sgl-kernel 0.3.21 was built against torch 2.9" in text
    (tmp_path / "example-summary.md").write_text(text)


def test_a_stale_lock_fails_the_lock_check_step(pr_clone, tmp_path):
    repo, base = pr_clone
    matrix = (repo.path / MATRIX).read_text().replace('torch: "==2.9.1"', 'torch: "==2.10.0"')
    (repo.path / MATRIX).write_text(matrix)
    repo.commit({MATRIX: matrix}, "PR: matrix changed, lock not regenerated")
    check = run_step(load_workflow(), "lock-check", repo.path, tmp_path / "summary.md")
    assert check.returncode == 1 and "stale" in (check.stdout + check.stderr)
