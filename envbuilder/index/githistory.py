"""Branches and history of a git source, from the same cached partial clone that verifies commits.

`envbuilder bump` moves a git source along a branch: it needs the branch's head (a fetch of one
ref, commits and trees only, `--filter=blob:none`), the commits between the old and the new pin
with their subjects (a PR body lists them), and the newest commit containing a fix. All of that
is in the commit objects the partial clone already holds, so no file content is fetched.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from envbuilder.errors import BadInput, Unreachable
from envbuilder.index.errors import MissingFromCache
from envbuilder.index.git import GitError, GitSources

# A conservative branch name: no option-looking or ref-syntax tricks ever reach a git command line.
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")
_TRACKING = "refs/envbuilder-branches/"


@dataclass(frozen=True)
class LoggedCommit:
    """One commit of a range: full id and its subject line (untrusted text: quote before showing)."""

    commit: str
    subject: str


def check_branch(branch: str) -> str:
    """The branch name, or BadInput: it goes into a refspec, so it must be a plain name."""
    if not _BRANCH.fullmatch(branch) or ".." in branch or branch.endswith((".lock", "/", ".")):
        raise BadInput(f"--branch {branch!r} is not a plain branch name (letters, digits, '.', '_', '-', '/')")
    return branch


def default_branch(sources: GitSources, url: str) -> str:
    """The branch the repository's HEAD points at (`git ls-remote --symref URL HEAD`)."""
    if sources.offline:
        raise BadInput(f"offline: the default branch of {url} cannot be asked; give --branch or --commit")
    repo = sources.ensure(url)
    try:
        listing = sources.git(repo, "ls-remote", "--symref", "origin", "HEAD", network=True)
    except GitError as exc:
        raise Unreachable(f"cannot ask {url} for its default branch: {exc}; check the URL and your network") from None
    match = re.search(r"^ref: refs/heads/(\S+)\tHEAD$", listing, re.M)
    if not match:
        raise BadInput(f"{url} names no default branch; give --branch or --commit")
    return check_branch(match.group(1))


def branch_head(sources: GitSources, url: str, branch: str) -> str:
    """The full commit id at the tip of `branch`, fetched into the cached clone (commits and trees only).

    Offline, the head recorded by the last online fetch is used (MissingFromCache if there was none).
    """
    branch = check_branch(branch)
    repo = sources.ensure(url)
    ref = f"{_TRACKING}{branch}"
    if not sources.offline:
        with sources.cache.locked("git", repo.name):
            try:
                sources.git(repo, "fetch", "--quiet", "--no-tags", "--filter=blob:none", "origin",
                             f"+refs/heads/{branch}:{ref}", network=True)
            except GitError as exc:
                if "couldn't find remote ref" in str(exc).lower():
                    raise BadInput(f"{url} has no branch {branch!r}: check --branch") from None
                raise Unreachable(f"cannot fetch branch {branch!r} of {url}: {exc}; check the URL and your network, "
                                  "or run with --offline if it was fetched before") from None
    try:
        return sources.git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except GitError:
        raise MissingFromCache([f"git branch: {branch} of {url}"]) from None


def commit_range(sources: GitSources, url: str, old: str, new: str, limit: int = 200) -> list[LoggedCommit]:
    """Commits reachable from `new` and not from `old`, newest first (at most `limit`), as `git log old..new`."""
    repo = sources.ensure(url, old, new)
    out = sources.git(repo, "log", f"--max-count={limit}", "--format=%H%x00%s", f"{old}..{new}", "--")
    return [LoggedCommit(*line.split("\x00", 1)) for line in out.splitlines() if "\x00" in line]


def count_range(sources: GitSources, url: str, old: str, new: str) -> int:
    """How many commits `git log old..new` has (the body shows `limit` of them and says how many more)."""
    repo = sources.ensure(url, old, new)
    return int(sources.git(repo, "rev-list", "--count", f"{old}..{new}", "--") or 0)


def subject_mentions(sources: GitSources, url: str, head: str, pattern: str, limit: int = 5000) -> list[str]:
    """Commits reachable from `head` (newest first) whose subject matches the regex `pattern`."""
    repo = sources.ensure(url, head)
    out = sources.git(repo, "log", f"--max-count={limit}", "--format=%H%x00%s", head, "--")
    rx = re.compile(pattern)
    return [sha for sha, _, subject in (line.partition("\x00") for line in out.splitlines()) if rx.search(subject)]
