"""Git sources pinned by full commit: prove the commit exists, and answer ancestry questions.

A lock names a git source by its full commit id, which fixes the content; a branch, tag or short
id could move or collide, so they are rejected. Repositories are fetched once into a bare
partial clone in the cache (commits and trees, blobs on demand), so verifying a commit of a
large repository costs its history, not its files. Ancestry ("does this commit contain the fix?")
is a question the gate asks about repositories that may be out of reach: it answers None then.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from envbuilder.errors import BadInput, Unreachable
from envbuilder.index.cache import Cache
from envbuilder.index.errors import MissingFromCache

FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 object names
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
# A partial clone fetches missing objects lazily from its promisor remote on any lookup. Local
# queries forbid every transport, so they never touch the network (and offline mode really is
# offline); only `_fetch` talks to the remote.
_NO_LAZY_FETCH = ("-c", "protocol.allow=never")
# Network commands may use these transports only (those a lock's git URL may name): URLs come
# from matrices and from the repositories themselves (submodules, checked more strictly in
# envbuilder.index.gitsubmodules), so `ext::` (runs a command), `fd::` and the rest are refused.
TRANSPORTS = ("file", "https", "http", "ssh", "git")
_ONLY_ALLOWED = ("-c", "protocol.allow=never",
                 *(arg for scheme in TRANSPORTS for arg in ("-c", f"protocol.{scheme}.allow=always")))


@dataclass(frozen=True)
class GitCommit:
    """A verified commit: `tree` is the root tree; `subdirectory_tree` the subdirectory's tree."""

    url: str
    commit: str
    tree: str
    subdirectory: str | None = None
    subdirectory_tree: str | None = None


class CommitNotFound(BadInput):
    """The repository answered, but does not contain the commit (or the subdirectory)."""


def require_full_sha(rev: str, what: str = "rev") -> str:
    """The commit id, lower-cased; anything but a full hex object name is BadInput."""
    value = rev.strip().lower()
    if not FULL_SHA.fullmatch(value):
        raise BadInput(
            f"{what} {rev!r} is not a full commit id (40 hex digits): branches, tags and short ids "
            "can move or collide, so a lock pins the full commit; find it with `git rev-parse <rev>`"
        )
    return value


class GitError(Exception):
    """A git command failed; carries its stderr."""


class GitSources:
    """Bare partial clones in the cache, one per repository URL, shared between processes."""

    def __init__(self, cache: Cache | None = None, offline: bool = False, timeout: float = 600.0):
        self.cache = cache if cache is not None else Cache()
        self.offline = offline
        self.timeout = timeout

    def git(self, repo: Path, *args: str, network: bool = False, work_tree: Path | None = None) -> str:
        """`git ARGS` on the cached clone `repo` (or, with `work_tree`, in a worktree of it).

        Only `network=True` commands may reach the remote, and then by an allowed transport only.
        """
        where = ("-C", str(work_tree)) if work_tree is not None else ("--git-dir", str(repo))
        try:
            result = subprocess.run(
                ["git", *(_ONLY_ALLOWED if network else _NO_LAZY_FETCH), *where, *args],
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env={**os.environ, **_ENV},
                check=False,
            )
        except FileNotFoundError as exc:
            raise Unreachable("git is not installed: install git to use git sources") from exc
        except subprocess.TimeoutExpired as exc:
            raise GitError(f"git {args[0]} timed out after {self.timeout:.0f} s") from exc
        if result.returncode != 0:
            raise GitError(result.stderr.strip() or f"git {args[0]} exited {result.returncode}")
        return result.stdout.strip()

    def _has_commit(self, repo: Path, commit: str) -> bool:
        try:
            self.git(repo, "cat-file", "-e", f"{commit}^{{commit}}")
            return True
        except GitError:
            return False

    def _init(self, repo: Path, url: str) -> None:
        if (repo / "HEAD").exists():
            return
        repo.parent.mkdir(parents=True, exist_ok=True)
        self.git(repo, "init", "--bare", "--quiet")
        for key, value in (
            ("remote.origin.url", url),
            ("remote.origin.promisor", "true"),
            ("remote.origin.partialclonefilter", "blob:none"),
            ("core.repositoryformatversion", "1"),
            ("extensions.partialClone", "origin"),
        ):
            self.git(repo, "config", key, value)

    def ensure(self, url: str, *commits: str) -> Path:
        """The cached bare repository holding every one of `commits`, fetching what is missing.

        Raises Unreachable when the repository cannot be fetched, MissingFromCache offline, and
        CommitNotFound when the repository answers without the commit.
        """
        repo = self.cache.git_dir(url)
        with self.cache.locked("git", repo.name):
            self._init(repo, url)
            missing = [c for c in commits if not self._has_commit(repo, c)]
            if not missing:
                return repo
            if self.offline:
                raise MissingFromCache(f"git commit: {c} of {url}" for c in missing)
            self._fetch(repo, url, missing)
            absent = [c for c in missing if not self._has_commit(repo, c)]
            if absent:
                raise CommitNotFound(f"{url} has no commit {', '.join(absent)}: check the `rev` for this git source")
            for commit in missing:  # a ref keeps fetched-by-id commits safe from `git gc`
                self.git(repo, "update-ref", f"refs/envbuilder/{commit}", commit)
        return repo

    def _fetch(self, repo: Path, url: str, commits: list[str]) -> None:
        """Fetch the commits by id; servers that refuse unadvertised ids get a fetch of all refs."""
        base = ("fetch", "--quiet", "--no-tags", "--filter=blob:none", "origin")
        try:
            self.git(repo, *base, *commits, network=True)
            return
        except GitError as by_id:
            first_error = by_id
        try:
            self.git(repo, *base, "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*", network=True)
        except GitError as exc:
            raise Unreachable(
                f"cannot fetch git repository {url}: {exc or first_error}; check the URL, your network "
                "and credentials, or run with --offline if it was fetched before"
            ) from exc

    def fetch_tags(self, url: str) -> None:
        """The repository's tags (commits and trees only), so `git describe` answers as upstream would.

        setuptools-scm and hatch-vcs derive a version from the nearest tag; offline, the tags
        fetched before are used.
        """
        if self.offline:
            return
        repo = self.cache.git_dir(url)
        with self.cache.locked("git", repo.name):
            self._init(repo, url)
            try:
                self.git(repo, "fetch", "--quiet", "--filter=blob:none", "origin", "+refs/tags/*:refs/tags/*",
                         network=True)
            except GitError as exc:
                raise Unreachable(f"cannot fetch the tags of git repository {url}: {exc}; check the URL and "
                                  "your network, or run with --offline if it was fetched before") from None

    def verify(self, url: str, commit: str, subdirectory: str | None = None) -> GitCommit:
        """Prove `commit` exists in `url` (and holds `subdirectory`); return its tree ids."""
        commit = require_full_sha(commit)
        repo = self.ensure(url, commit)
        tree = self.git(repo, "rev-parse", f"{commit}^{{tree}}")
        sub_tree = None
        if subdirectory:
            path = subdirectory.strip("/")
            try:
                sub_tree = self.git(repo, "rev-parse", "--verify", "--quiet", f"{commit}:{path}")
                kind = self.git(repo, "cat-file", "-t", sub_tree)
            except GitError:
                kind = None
            if kind != "tree":
                raise CommitNotFound(f"{url} at {commit} has no directory {subdirectory!r}: check `subdirectory`")
        return GitCommit(url=url, commit=commit, tree=tree, subdirectory=subdirectory, subdirectory_tree=sub_tree)

    def read_file(self, url: str, commit: str, path: str) -> bytes | None:
        """A file of `commit`'s tree, without a checkout: the partial clone fetches only that blob.

        None when the tree has no such file. Offline, a blob never fetched is a MissingFromCache.
        """
        commit = require_full_sha(commit)
        repo = self.ensure(url, commit)
        # trees are in the clone: ls-tree answers (type, id) without fetching the blob itself
        listing = self.git(repo, "ls-tree", commit, "--", path.strip("/"))
        fields = listing.split("\t", 1)[0].split() if listing and "\n" not in listing else []
        if len(fields) != 3 or fields[1] != "blob":
            return None
        blob = fields[2]
        with self.cache.locked("git", repo.name):
            try:  # present already (fetched before), or fetched now from the promisor remote
                return self._git_bytes(repo, blob, network=False)
            except GitError:
                if self.offline:
                    raise MissingFromCache([f"git blob: {path} of {url} at {commit}"]) from None
            try:
                return self._git_bytes(repo, blob, network=True)
            except GitError as exc:
                raise Unreachable(f"cannot fetch {path} of {url} at {commit}: {exc}; check your network, "
                                  "or run with --offline if it was read before") from None

    def _git_bytes(self, repo: Path, blob: str, network: bool) -> bytes:
        try:
            result = subprocess.run(
                ["git", *(_ONLY_ALLOWED if network else _NO_LAZY_FETCH), "--git-dir", str(repo), "cat-file", "blob", blob],
                capture_output=True, timeout=self.timeout, env={**os.environ, **_ENV}, check=False)
        except subprocess.TimeoutExpired as exc:
            raise GitError(f"git cat-file timed out after {self.timeout:.0f} s") from exc
        if result.returncode != 0:
            raise GitError(result.stderr.decode("utf-8", "replace").strip() or "git cat-file failed")
        return result.stdout

    def is_ancestor(self, url: str, ancestor: str, descendant: str) -> bool | None:
        """Whether `descendant` contains `ancestor`; None if the repository or a commit is out of reach."""
        ancestor, descendant = require_full_sha(ancestor, "ancestor"), require_full_sha(descendant, "descendant")
        try:
            repo = self.ensure(url, ancestor, descendant)
        except (Unreachable, CommitNotFound):
            return None
        try:
            self.git(repo, "merge-base", "--is-ancestor", ancestor, descendant)
            return True
        except GitError as exc:
            # --is-ancestor exits 1 with no message for "no"; anything else is a real failure
            return False if not str(exc).strip() or "exited 1" in str(exc) else None


def verify_commit(url: str, commit: str, subdirectory: str | None = None, *, cache: Cache | None = None,
                  offline: bool = False) -> GitCommit:
    """Module-level shortcut for GitSources(cache, offline).verify(...)."""
    return GitSources(cache, offline).verify(url, commit, subdirectory)


def is_ancestor(url: str, ancestor: str, descendant: str, *, cache: Cache | None = None,
                offline: bool = False) -> bool | None:
    """Module-level shortcut for GitSources(cache, offline).is_ancestor(...)."""
    return GitSources(cache, offline).is_ancestor(url, ancestor, descendant)
