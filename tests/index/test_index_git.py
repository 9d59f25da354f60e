"""Git sources by full commit: verification, subdirectories, ancestry, offline."""

from __future__ import annotations

import shutil

import pytest

from envbuilder.errors import BadInput
from envbuilder.index import Cache, MissingFromCache
from envbuilder.index.git import CommitNotFound, GitSources
from tests.conftest import needs_tool

pytestmark = needs_tool("git", shutil.which("git"), "apt-get install git (.ci/parts/05-git.sh does)")


@pytest.fixture
def repo(make_git_repo):
    repo = make_git_repo("sglang", [{"python/pyproject.toml": "[project]\nname='sglang'\n"}, {"README": "v2\n"}])
    repo.commit({"python/sglang/fix.py": "SM120 = True\n"}, message="the fix")
    repo.branch("side", repo.commits[0])
    repo.checkout("side")
    repo.commit({"side.txt": "unmerged\n"})
    repo.checkout("main")
    return repo


def test_verify_returns_commit_and_trees(repo, index_cache: Cache):
    sources = GitSources(index_cache)
    got = sources.verify(repo.url, repo.commits[2].upper(), subdirectory="python")
    assert got.commit == repo.commits[2]
    assert got.tree == repo.git("rev-parse", f"{repo.commits[2]}^{{tree}}")
    assert got.subdirectory_tree == repo.git("rev-parse", f"{repo.commits[2]}:python")


def test_commit_only_on_a_side_branch_is_found(repo, index_cache: Cache):
    assert GitSources(index_cache).verify(repo.url, repo.commits[3]).commit == repo.commits[3]


@pytest.mark.parametrize("rev", ["main", "v1.0", "abc1234", "g" * 40, ""])
def test_non_full_shas_are_bad_input(repo, index_cache: Cache, rev):
    with pytest.raises(BadInput, match="not a full commit id"):
        GitSources(index_cache).verify(repo.url, rev)


def test_missing_commit_and_subdirectory(repo, index_cache: Cache):
    with pytest.raises(CommitNotFound, match="has no commit"):
        GitSources(index_cache).verify(repo.url, "0123456789" * 4)
    with pytest.raises(CommitNotFound, match="no directory 'nope'"):
        GitSources(index_cache).verify(repo.url, repo.commits[0], subdirectory="nope")
    with pytest.raises(CommitNotFound, match="no directory 'README'"):  # a file is not a directory
        GitSources(index_cache).verify(repo.url, repo.commits[1], subdirectory="README")


def test_ancestry(repo, index_cache: Cache):
    sources = GitSources(index_cache)
    first, _, fix, side = repo.commits
    assert sources.is_ancestor(repo.url, first, fix) is True
    assert sources.is_ancestor(repo.url, fix, first) is False
    assert sources.is_ancestor(repo.url, fix, side) is False  # the side branch lacks the fix
    assert sources.is_ancestor(repo.url, fix, fix) is True


def test_unreachable_repository(tmp_path, index_cache: Cache):
    url = (tmp_path / "no-such-repo").as_uri()
    sha = "0123456789" * 4
    assert GitSources(index_cache).is_ancestor(url, sha, sha) is None
    from envbuilder.errors import Unreachable

    with pytest.raises(Unreachable, match="cannot fetch git repository"):
        GitSources(index_cache).verify(url, sha)


def test_offline_uses_the_cached_clone(repo, index_cache: Cache):
    GitSources(index_cache).verify(repo.url, repo.commits[2])
    later = repo.commit({"later.txt": "x"})
    offline = GitSources(index_cache, offline=True)
    assert offline.verify(repo.url, repo.commits[2]).commit == repo.commits[2]
    assert offline.is_ancestor(repo.url, repo.commits[0], repo.commits[2]) is True
    with pytest.raises(MissingFromCache, match=f"git commit: {later}"):
        offline.verify(repo.url, later)
    assert offline.is_ancestor(repo.url, repo.commits[0], later) is None
