"""Real git repositories with real commits, made in tests.

    repo = make_git_repo(tmp_path / "src", [{"python/pyproject.toml": "..."}, {"README": "v2"}])
    repo.commits          # full SHAs, oldest first
    repo.url              # file:// URL a client can fetch
    fix = repo.commit({"fix.py": "..."}, message="the fix")
    repo.branch("side", repo.commits[0]); repo.checkout("side"); repo.commit({...})

Author, committer and dates are fixed, so the same calls give the same SHAs on every machine.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

Content = bytes | str | None  # None deletes the file


@dataclass
class GitRepo:
    path: Path
    commits: list[str] = field(default_factory=list)
    _clock: int = 1_700_000_000

    @property
    def url(self) -> str:
        return self.path.resolve().as_uri()

    @property
    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def git(self, *args: str) -> str:
        self._clock += 60
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.invalid",
            "GIT_COMMITTER_NAME": "Test Author", "GIT_COMMITTER_EMAIL": "author@example.invalid",
            "GIT_AUTHOR_DATE": f"{self._clock} +0000", "GIT_COMMITTER_DATE": f"{self._clock} +0000",
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
        }
        result = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True, text=True, env=env)
        if result.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed: {result.stderr.strip()}")
        return result.stdout.strip()

    def commit(self, files: Mapping[str, Content], message: str | None = None) -> str:
        for rel, content in files.items():
            target = self.path / rel
            if content is None:
                self.git("rm", "-q", "--", rel)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode() if isinstance(content, str) else content)
            self.git("add", "--", rel)
        self.git("commit", "-q", "--allow-empty", "-m", message or f"commit {len(self.commits) + 1}")
        sha = self.head
        self.commits.append(sha)
        return sha

    def branch(self, name: str, start: str = "HEAD") -> None:
        self.git("branch", name, start)

    def checkout(self, name: str) -> None:
        self.git("checkout", "-q", name)

    def tag(self, name: str, rev: str = "HEAD") -> None:
        self.git("tag", name, rev)


def make_git_repo(path: Path, commits: Iterable[Mapping[str, Content]] = ({"README": "initial\n"},)) -> GitRepo:
    """A fresh repository at `path` (branch main) with one commit per mapping of files."""
    path.mkdir(parents=True, exist_ok=True)
    repo = GitRepo(path)
    repo.git("init", "-q", "-b", "main")
    for files in commits:
        repo.commit(files)
    return repo
