"""Cost of the backend route at a git commit: the sparse checkout on a large repository, and a whole lock.

1. On bench_partial_clone's local repository (SGLang 0.5.9's tree under python/ plus COMMITS commits of
   BLOB_MB MB of data each): time and bytes to check out `python/` of the head commit from an empty
   cache (partial clone + sparse worktree: what envbuilder.index.gitcheckout does before a build),
   against a full clone with a checkout.
2. On a repository of python-dateutil 2.9.0.post0's source (setuptools-scm, tagged, one commit after
   the tag): read_git_source cold (clone, tags, checkout, build environment from a local index,
   prepare_metadata), then from the metadata cache, then offline.

Run on demand (fetches the real sdists and wheels once): python -m bench.sources.bench_git_backend [COMMITS] [BLOB_MB]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from bench.sources.bench_partial_clone import build_repository, du, git
from envbuilder.index.cache import Cache
from envbuilder.index.git import GitSources
from envbuilder.index.gitcheckout import checkout
from envbuilder.index.gitmeta import read_git_source
from tests.support.gitrepo import make_git_repo
from tests.support.index_server import IndexServer
from tests.support.realdists import fetch, sdist_files, serve


def sparse_vs_full(tmp: Path, commits: int, blob_mb: int) -> None:
    url, _, head = build_repository(tmp, commits, blob_mb)
    print(f"repository: {du(tmp / 'sglang.git') / 1e6:.0f} MB packed, {commits + 1} commits")
    start = time.perf_counter()
    sources = GitSources(Cache(tmp / "cache"))
    with checkout(sources, url, head, "python", tmp / "tree") as source:
        files = sum(1 for p in source.rglob("*") if p.is_file())
        partial = time.perf_counter() - start
    print(f"partial clone + sparse checkout of python/: {partial:.2f} s, {files} files, "
          f"{du(sources.cache.git_dir(url)) / 1e6:.2f} MB in the cache")
    start = time.perf_counter()
    git("clone", "-q", "--no-local", url, str(tmp / "full"))
    print(f"full clone + checkout: {time.perf_counter() - start:.2f} s, {du(tmp / 'full') / 1e6:.0f} MB on disk")


def backend_lock(tmp: Path) -> None:
    (sdist,) = [p for p in fetch("python-dateutil==2.9.0.post0") if p.name.startswith("python-dateutil-")]
    wheels = fetch("setuptools", "wheel", "setuptools_scm<8", binary=True, deps=True)
    skip = ("PKG-INFO", "src/dateutil/_version.py", "src/python_dateutil.egg-info/")
    work = make_git_repo(tmp / "dateutil-work", [sdist_files(sdist, skip=skip)])
    work.tag("2.9.0")
    head = work.commit({"NEWS": "moved on\n"})
    git("clone", "-q", "--bare", str(work.path), str(tmp / "dateutil.git"))
    git("--git-dir", str(tmp / "dateutil.git"), "config", "uploadpack.allowFilter", "true")
    url = (tmp / "dateutil.git").as_uri()
    os.environ.update(PIP_CONFIG_FILE=os.devnull, PIP_CONSTRAINT="")
    with IndexServer() as server:
        for wheel in wheels:
            serve(server, wheel)
        cache = Cache(tmp / "cache-dateutil")
        for label, offline in (("cold", False), ("cached", False), ("cached, offline", True)):
            start = time.perf_counter()
            found = read_git_source(GitSources(cache, offline), "python-dateutil", url, head, None, None, server.url)
            print(f"dateutil at a commit, {label}: {time.perf_counter() - start:.2f} s "
                  f"({found.metadata.version}, {found.origin}, Python {found.python})")


def main(commits: int = 40, blob_mb: int = 5) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sparse_vs_full(Path(tmp), commits, blob_mb)
    with tempfile.TemporaryDirectory() as tmp:
        backend_lock(Path(tmp))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
