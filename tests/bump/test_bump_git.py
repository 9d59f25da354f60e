"""`envbuilder bump` on a git source moving along a real local branch: edit, re-lock, gate, PR body."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.bump.conftest import HTTPX_DEPS, git_spec
from tests.conftest import needs_tool

pytestmark = [pytest.mark.network, needs_tool("git", shutil.which("git"), "apt-get install git")]


def _locked(project, target: str, first: str, url: str, metadata: dict | None = None) -> None:
    project.write_matrix(target, {"httpx": git_spec(url, first, metadata)})
    result = project.run("lock", target)
    assert result.rc == 0, result.text


def test_bump_branch_moves_the_rev_relocks_gates_and_writes_the_body(project, index_with_httpx_deps,
                                                                    branchy_repo, tmp_path):
    work, url, _ = branchy_repo
    first, second, head = work.commits[:3]
    _locked(project, "gb", first, url)
    matrix = project.root / "matrices" / "gb.yaml"
    before = matrix.read_text()
    body = tmp_path / "body.md"

    result = project.run("bump", "gb", "httpx", "--branch", "main", "--body-file", str(body))
    assert result.rc == 0, result.text

    # the matrix: exactly the rev changed, everything else byte for byte
    assert matrix.read_text() == before.replace(first, head)
    httpx = project.read_lock("gb").package("httpx")
    assert httpx.source.commit == head and set(httpx.dependencies) == set(HTTPX_DEPS) | {"sniffio>=1.3"}
    assert project.read_lock("gb").package("sniffio") is not None
    text = body.read_text()
    assert "### Commits (2)" in text
    assert f"`{head[:12]}` docs" in text and f"`{second[:12]}` depend on sniffio" in text
    assert "| sniffio | added" in text  # the gate's change table: the dependency the new commit adds
    assert "envbuilder gate:" in text and "head of branch `main`" in text
    assert f"moved httpx: git {url} {first[:12]} -> {head[:12]} (head of main), 2 commit(s)" in result.err


def test_dry_run_prints_the_move_and_writes_nothing(project, index_with_httpx_deps, branchy_repo):
    work, url, _ = branchy_repo
    _locked(project, "gdry", work.commits[0], url)
    matrix, lock = project.root / "matrices" / "gdry.yaml", project.lock_path("gdry")
    before = (matrix.read_bytes(), lock.read_bytes())
    result = project.run("bump", "gdry", "httpx", "--branch", "main", "--dry-run")
    assert result.rc == 0, result.text
    assert "would move httpx" in result.err and "depend on sniffio" in result.err
    assert (matrix.read_bytes(), lock.read_bytes()) == before
    assert not list(project.root.glob("bump-*.md")) and not list(project.root.parent.glob("bump-*.md"))


def test_require_fix_by_commit_picks_the_branch_head_that_contains_it(project, index_with_httpx_deps, branchy_repo,
                                                                      tmp_path):
    work, url, _ = branchy_repo
    first, second, head = work.commits[:3]
    _locked(project, "gfix", first, url)
    body = tmp_path / "fix.md"
    result = project.run("bump", "gfix", "httpx", "--branch", "main", "--require-fix", second, "--body-file", str(body))
    assert result.rc == 0, result.text
    assert project.read_lock("gfix").package("httpx").source.commit == head
    assert f"contains the required fix `{second[:12]}`" in body.read_text()


def test_require_fix_by_pr_url_finds_the_merge_subject(project, index_with_httpx_deps, branchy_repo):
    work, url, _ = branchy_repo
    _locked(project, "gpr", work.commits[0], url)
    merged = work.commit({"python/FIX.md": "fixed\n"}, message="Fix the transport (#3371)")
    work.commit({"python/README.md": "later\n"}, message="later work")
    work.git("push", "-q", url, "main")
    result = project.run("bump", "gpr", "httpx", "--branch", "main",
                         "--require-fix", "https://github.com/encode/httpx/pull/3371", "--dry-run")
    assert result.rc == 0, result.text
    assert f"contains the required fix {merged[:12]}" in result.err


def test_require_fix_not_on_the_branch_is_refused_and_nothing_changes(project, index_with_httpx_deps, branchy_repo):
    work, url, side = branchy_repo
    _locked(project, "gno", work.commits[0], url)
    matrix = project.root / "matrices" / "gno.yaml"
    before = matrix.read_bytes()
    result = project.run("bump", "gno", "httpx", "--branch", "main", "--require-fix", side)
    assert result.rc == 1, result.text
    assert f"no commit on branch 'main' of {url} contains the fix {side[:12]}" in result.err
    assert matrix.read_bytes() == before and "Traceback" not in result.text
    given = project.run("bump", "gno", "httpx", "--commit", work.commits[1], "--require-fix", side)
    assert given.rc == 1 and f"--commit {work.commits[1][:12]} of {url} does not contain the fix" in given.err
    by_pr = project.run("bump", "gno", "httpx", "--require-fix", "https://github.com/encode/httpx/pull/9999")
    assert by_pr.rc == 1 and "no commit up to" in by_pr.err and "#9999" in by_pr.err


def test_an_absent_commit_is_exit_2_naming_url_and_commit(project, index_with_httpx_deps, branchy_repo):
    work, url, _ = branchy_repo
    _locked(project, "gabs", work.commits[0], url)
    missing = "0123456789abcdef0123456789abcdef01234567"
    for args in (["--commit", missing], ["--branch", "main", "--require-fix", missing]):
        result = project.run("bump", "gabs", "httpx", *args)
        assert result.rc == 2, result.text
        assert url in result.err and missing in result.err and "Traceback" not in result.text
    bad = project.run("bump", "gabs", "httpx", "--branch", "--upload-pack=x")
    assert bad.rc == 2 and "not a plain branch name" in bad.err
    nobranch = project.run("bump", "gabs", "httpx", "--branch", "nope")
    assert nobranch.rc == 2 and "no branch 'nope'" in nobranch.err


def test_a_metadata_override_is_compared_with_the_source(project, index_with_httpx_deps, branchy_repo, tmp_path):
    work, url, _ = branchy_repo
    override = {"version": "0.28.1", "requires_dist": HTTPX_DEPS}
    _locked(project, "gmeta", work.commits[0], url, override)
    body = tmp_path / "meta.md"
    result = project.run("bump", "gmeta", "httpx", "--branch", "main", "--body-file", str(body))
    assert result.rc == 0, result.text
    assert "source adds: sniffio>=1.3" in result.err
    assert "source adds: `sniffio>=1.3`" in body.read_text()
    # the override still wins at lock time: the lock keeps the hand-copied requirements
    assert set(project.read_lock("gmeta").package("httpx").dependencies) == set(HTTPX_DEPS)


def test_a_failed_relock_puts_the_matrix_back(project, index_with_httpx_deps, branchy_repo):
    work, url, _ = branchy_repo
    _locked(project, "groll", work.commits[0], url)
    matrix, lock = project.root / "matrices" / "groll.yaml", project.lock_path("groll")
    before = (matrix.read_bytes(), lock.read_bytes())
    index_with_httpx_deps.projects.pop("sniffio")  # the new commit's dependency is not on the index: no resolution
    result = project.run("bump", "groll", "httpx", "--branch", "main")
    assert result.rc == 1, result.text
    assert (matrix.read_bytes(), lock.read_bytes()) == before


def test_require_fix_by_pr_url_uses_the_knowledge_base_mapping(project, index_with_httpx_deps, branchy_repo):
    """As the fix-ancestry rules do: a known issue's `fix: {pr, commit}` names the merge commit."""
    work, url, _ = branchy_repo
    first, second, head = work.commits[:3]
    pr = "https://github.com/encode/httpx/pull/4242"
    issue = (f"knowledge:\n  known_issues:\n    - {{id: httpx-needs-sniffio, package: httpx, affected: '<0.29', "
             f"severity: warning, summary: needs sniffio, source: '{pr}', fix: {{pr: '{pr}', commit: {second}}}}}\n")
    project.write_matrix("gkb", {"httpx": git_spec(url, first)}, extra=issue)
    assert project.run("lock", "gkb").rc == 0
    result = project.run("bump", "gkb", "httpx", "--branch", "main", "--require-fix", pr, "--dry-run")
    assert result.rc == 0, result.text
    assert f"{first[:12]} -> {head[:12]}" in result.err and f"contains the required fix {second[:12]} ({pr})" in result.err


def test_an_unreachable_repository_is_exit_3_and_nothing_changes(project, index_with_httpx_deps, branchy_repo):
    work, url, _ = branchy_repo
    _locked(project, "gdown", work.commits[0], url)
    matrix = project.root / "matrices" / "gdown.yaml"
    before = matrix.read_bytes()
    bare = Path(url.removeprefix("file://"))
    bare.rename(bare.with_name("moved.git"))
    result = project.run("bump", "gdown", "httpx", "--branch", "main")
    assert result.rc == 3, result.text
    assert "cannot fetch branch 'main'" in result.err and "Traceback" not in result.text
    assert matrix.read_bytes() == before


def test_hostile_commit_subjects_are_inert_in_the_body(project, index_with_httpx_deps, branchy_repo, tmp_path):
    """Upstream writes the subjects: none of them may become a link, HTML, a mention or a table cell."""
    work, url, _ = branchy_repo
    _locked(project, "ghost", work.commits[0], url)
    work.commit({"python/X.md": "x\n"}, message="see [this](https://evil.example) <script>x</script> @admin | #1 `x")
    work.git("push", "-q", url, "main")
    body = tmp_path / "hostile.md"
    assert project.run("bump", "ghost", "httpx", "--branch", "main", "--body-file", str(body)).rc == 0
    line = next(li for li in body.read_text().splitlines() if "evil" in li)
    assert "](https://" not in line and "<script>" not in line and " @admin" not in line and " | " not in line
    assert "\\[this\\](https\\://evil\\.example) \\<script\\>" in line


def test_offline_uses_the_branch_head_the_last_fetch_recorded(project, index_with_httpx_deps, branchy_repo):
    work, url, _ = branchy_repo
    first, _, head = work.commits[:3]
    _locked(project, "goff", first, url)
    never = project.run("bump", "goff", "httpx", "--branch", "side", "--offline", "--dry-run")
    assert never.rc == 3 and "git branch: side of" in never.err, never.text  # never fetched: says what is missing
    assert project.run("bump", "goff", "httpx", "--branch", "main", "--dry-run").rc == 0  # online: records main's head
    work.commit({"python/LATER.md": "x\n"}, message="after the fetch")
    work.git("push", "-q", url, "main")
    offline = project.run("bump", "goff", "httpx", "--branch", "main", "--offline", "--dry-run")
    assert offline.rc == 0 and f"{first[:12]} -> {head[:12]}" in offline.err, offline.text


def test_a_gate_reject_keeps_the_edits_writes_the_body_and_exits_1(project, index_with_httpx_deps, branchy_repo,
                                                                  tmp_path, monkeypatch):
    """A clean re-lock already obeys every rule, so the real gate rarely rejects right after one; the
    verdict is forced here (a stand-in for a gate-only finding) to check what bump does with it."""
    import envbuilder.bump.service as service

    real = service.gate_change
    monkeypatch.setattr(service, "gate_change", lambda *a: real(*a).model_copy(update={"verdict": "reject"}))
    work, url, _ = branchy_repo
    _locked(project, "grej", work.commits[0], url)
    body = tmp_path / "reject.md"
    result = project.run("bump", "grej", "httpx", "--branch", "main", "--body-file", str(body))
    assert result.rc == 1, result.text
    assert "the gate rejected this bump" in result.err and "do not open a pull request" in result.err
    assert "**The gate rejected this bump: do not merge it as is.**" in body.read_text()
    assert project.read_lock("grej").package("httpx").source.commit == work.commits[2]  # kept for review
