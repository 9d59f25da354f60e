"""Time and bytes for `envbuilder bump`'s git work on a large repository: the branch head fetched,
the commit range listed with subjects, the new commit's pyproject.toml read, from an empty cache
and again from a warm one (a weekly run re-fetches only what the branch gained).

The repository is bench_partial_clone's (SGLang 0.5.9's sdist tree under python/, then COMMITS
commits of BLOB_MB MB of random data each; the matrix pins the first commit, main is the head).
The re-lock and the gate are timed elsewhere (bench/lock, bench/gate). Run on demand:

    python -m bench.sources.bench_bump [COMMITS] [BLOB_MB]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from bench.sources.bench_partial_clone import build_repository, du
from envbuilder.index.cache import Cache
from envbuilder.index.git import GitSources
from envbuilder.index.githistory import branch_head, commit_range
from envbuilder.index.gitmeta import read_git_source
from envbuilder.matrix.schema import StaticMetadata


def plan_move(cache: Cache, url: str, first: str) -> tuple[str, int, int]:
    """What `bump --branch main` reads from git: (new commit, commits listed, requirements read)."""
    sources = GitSources(cache)
    head = branch_head(sources, url, "main")
    commits = commit_range(sources, url, first, head)
    found = read_git_source(sources, "sglang", url, head, "python", StaticMetadata(version="0.5.9"))
    return head, len(commits), len(found.metadata.requires_dist)


def main(commits: int = 40, blob_mb: int = 5) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        url, first, _ = build_repository(tmp, commits, blob_mb)
        print(f"repository: {du(tmp / 'sglang.git') / 1e6:.0f} MB packed, {commits + 1} commits")
        cache = Cache(tmp / "cache")
        for run in ("empty cache", "warm cache"):
            start = time.perf_counter()
            head, listed, requirements = plan_move(cache, url, first)
            took = time.perf_counter() - start
            print(f"{run}: branch head {head[:12]}, {listed} commits listed, {requirements} requirements read: "
                  f"{took:.2f} s, clone {du(cache.git_dir(url)) / 1e6:.2f} MB on disk")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
