"""A commit's files materialised from the cached partial clone, for its build backend to run on.

The checkout is a git worktree of the cached bare clone, detached at the commit, so a backend that
asks git for its version (setuptools-scm, hatch-vcs: `git describe`) sees the real commit and the
repository's tags, as it would in a clone. With a subdirectory the worktree is sparse (cone mode:
the subdirectory plus the repository's top-level files), so only those blobs of that one commit
are fetched, in one batch, from the promisor remote. Submodules below it are checked out the same
way from their own cached clones, at the commit the tree records (envbuilder.index.gitsubmodules
checks their paths and URLs first). Everything is removed afterwards; the fetched objects stay in
the cache, so `--offline` can check the same commit out again.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from envbuilder.errors import BadInput, Unreachable
from envbuilder.index.errors import MissingFromCache
from envbuilder.index.git import GitError, GitSources
from envbuilder.index.gitsubmodules import submodules

MAX_SUBMODULE_DEPTH = 4  # submodules of submodules...: deeper nesting is refused, not followed


@contextmanager
def checkout(sources: GitSources, url: str, commit: str, subdirectory: str | None, dest: Path) -> Iterator[Path]:
    """`commit`'s tree at `dest` (which must not exist); yields the subdirectory to build in."""
    used: list[Path] = []
    try:
        sources.fetch_tags(url)
        _materialise(sources, url, commit, subdirectory, dest, used, depth=0)
        yield dest / subdirectory.strip("/") if subdirectory else dest
    finally:
        shutil.rmtree(dest, ignore_errors=True)
        for repo in used:  # forget the worktrees just deleted (their records live in the cached clone)
            try:
                sources.git(repo, "worktree", "prune")
            except GitError:
                pass


def _materialise(sources: GitSources, url: str, commit: str, subdirectory: str | None, dest: Path,
                 used: list[Path], depth: int) -> None:
    if depth > MAX_SUBMODULE_DEPTH:
        raise BadInput(f"{url} at {commit}: submodules nested deeper than {MAX_SUBMODULE_DEPTH} levels")
    repo = sources.ensure(url, commit)
    used.append(repo)
    with sources.cache.locked("git", repo.name):
        _worktree(sources, repo, url, commit, subdirectory, dest)
    root = dest.resolve()
    for sub in submodules(sources, repo, commit, subdirectory, dest / ".gitmodules", url):
        place = (dest / sub.path).resolve()
        if not place.is_relative_to(root):
            raise BadInput(f"{url} at {commit}: submodule path {sub.path!r} leaves the work folder")
        if place.is_dir() and not any(place.iterdir()):
            place.rmdir()  # git made an empty folder for the gitlink; the worktree takes its place
        _materialise(sources, sub.url, sub.commit, None, place, used, depth + 1)


def _worktree(sources: GitSources, repo: Path, url: str, commit: str, subdirectory: str | None, dest: Path) -> None:
    """A detached worktree at `dest`, sparse when a subdirectory is all the build needs."""
    try:
        sources.git(repo, "worktree", "add", "--quiet", "--detach", "--no-checkout", str(dest), commit)
        if subdirectory:
            sources.git(repo, "sparse-checkout", "set", "--cone", "--", subdirectory.strip("/"), work_tree=dest)
        sources.git(repo, "reset", "--quiet", "--hard", commit, work_tree=dest, network=not sources.offline)
    except GitError as exc:
        if sources.offline:
            raise MissingFromCache([f"git files: {url} at {commit} ({exc})"]) from None
        raise Unreachable(f"cannot check out {url} at {commit}: {exc}; check your network, "
                          "or run with --offline if it was built before") from None
