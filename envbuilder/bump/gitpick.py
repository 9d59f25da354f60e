"""The new commit of a git source: a branch head, a given commit, or the newest commit holding a fix.

Every answer comes from the cached partial clone (envbuilder.index.git): a branch fetch brings
commits and trees, never file contents, so following a large repository's main stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass

from envbuilder.bump.fix import fix_commit, parse_fix
from envbuilder.errors import CheckFailed, Unreachable
from envbuilder.index.git import CommitNotFound, GitSources, require_full_sha
from envbuilder.index.githistory import branch_head, default_branch
from envbuilder.knowledge import Knowledge


@dataclass(frozen=True)
class Picked:
    commit: str
    branch: str | None = None
    fix: str | None = None


def pick_commit(sources: GitSources, url: str, package: str, knowledge: Knowledge, *, branch: str | None,
                commit: str | None, require_fix: str | None) -> Picked:
    """`--commit` as given (verified), else the head of `--branch` (default: the repository's HEAD branch).

    With `--require-fix`, the picked commit must descend from the fix: on a branch, the newest commit
    that contains it is the head (every commit of a branch is an ancestor of its head), so a head
    without it means no commit of the branch has it, and the bump is refused (exit 1)."""
    if commit is not None:
        picked = Picked(_verified(sources, url, require_full_sha(commit, "--commit")))
    else:
        name = branch or default_branch(sources, url)
        picked = Picked(branch_head(sources, url, name), branch=name)
    if require_fix is None:
        return picked
    fix = fix_commit(parse_fix(require_fix), knowledge, package, sources, url, picked.commit)
    sources.verify(url, fix)  # a fix commit the repository lacks is exit 2, naming URL and commit
    contained = sources.is_ancestor(url, fix, picked.commit)
    if contained is None:
        raise Unreachable(f"cannot answer whether {picked.commit[:12]} contains {fix[:12]} in {url}")
    if not contained:
        if picked.branch is None:
            raise CheckFailed(f"--commit {picked.commit[:12]} of {url} does not contain the fix {fix[:12]} "
                              f"({require_fix}); nothing was changed")
        raise CheckFailed(f"no commit on branch {picked.branch!r} of {url} contains the fix {fix[:12]} ({require_fix}): "
                          f"its head {picked.commit[:12]} does not descend from it; nothing was changed")
    return Picked(picked.commit, picked.branch, fix)


def _verified(sources: GitSources, url: str, commit: str) -> str:
    """The commit, proven to exist in `url`; one it lacks is exit 2 naming the option, URL and commit."""
    try:
        return sources.verify(url, commit).commit
    except CommitNotFound:
        raise CommitNotFound(f"--commit {commit}: {url} has no such commit; check the id "
                             "(`git ls-remote` lists branch heads)") from None
