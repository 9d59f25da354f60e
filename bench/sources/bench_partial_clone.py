"""Time and bytes to verify a commit and read its pyproject.toml (partial clone) vs a full clone.

GitHub is out of reach from the machines this was written on, so the repository is built locally:
SGLang 0.5.9's sdist tree under python/ (fetched from the default index), then COMMITS commits that
each add BLOB_MB of incompressible data (a stand-in for the history of a large project), served
over file:// with uploadpack.allowFilter. Run on demand:

    python -m bench.sources.bench_partial_clone [COMMITS] [BLOB_MB]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from envbuilder.index.cache import Cache
from envbuilder.index.git import GitSources
from envbuilder.index.gitmeta import read_git_source
from envbuilder.matrix.schema import StaticMetadata
from tests.support.realdists import fetch

ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid", "GIT_COMMITTER_NAME": "b",
       "GIT_COMMITTER_EMAIL": "b@example.invalid", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True, env=ENV).stdout.strip()


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def build_repository(tmp: Path, commits: int, blob_mb: int) -> tuple[str, str, str]:
    """(file:// URL, first commit, head) of SGLang 0.5.9's sdist tree under python/ plus `commits`
    commits of `blob_mb` MB of random data each, bare, with uploadpack.allowFilter."""
    (sdist,) = [p for p in fetch("sglang==0.5.9") if p.name == "sglang-0.5.9.tar.gz"]
    work = tmp / "work"
    (work / "python").mkdir(parents=True)
    with tarfile.open(sdist) as tf:
        tf.extractall(work / "python", filter=lambda m, _p: m.replace(name=m.name.split("/", 1)[-1])
                      if "/" in m.name else None)
    git("init", "-q", "-b", "main", str(work))
    git("-C", str(work), "add", "-A")
    git("-C", str(work), "commit", "-q", "-m", "sglang 0.5.9 sdist tree")
    first = git("-C", str(work), "rev-parse", "HEAD")
    for i in range(commits):
        (work / "data" / f"{i}.bin").parent.mkdir(exist_ok=True)
        (work / "data" / f"{i}.bin").write_bytes(os.urandom(blob_mb << 20))
        git("-C", str(work), "add", "-A")
        git("-C", str(work), "commit", "-q", "-m", f"history {i}")
    head = git("-C", str(work), "rev-parse", "HEAD")
    bare = tmp / "sglang.git"
    git("clone", "-q", "--bare", str(work), str(bare))
    git("--git-dir", str(bare), "config", "uploadpack.allowFilter", "true")
    return bare.as_uri(), first, head


def main(commits: int = 40, blob_mb: int = 5) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        url, _, head = build_repository(tmp, commits, blob_mb)
        bare = tmp / "sglang.git"
        print(f"repository: {du(bare) / 1e6:.0f} MB packed, {commits + 1} commits")

        start = time.perf_counter()
        sources = GitSources(Cache(tmp / "cache"))
        sources.verify(url, head, "python")
        meta = read_git_source(sources, "sglang", url, head, "python", StaticMetadata(version="0.5.9")).metadata
        partial = time.perf_counter() - start
        print(f"partial clone: verify + read python/pyproject.toml: {partial:.2f} s, "
              f"{du(Cache(tmp / 'cache').git_dir(url)) / 1e6:.2f} MB on disk, {len(meta.requires_dist)} requirements")

        start = time.perf_counter()
        git("clone", "-q", "--bare", "--no-local", url, str(tmp / "full.git"))
        full = time.perf_counter() - start
        print(f"full clone (--bare --no-local): {full:.2f} s, {du(tmp / 'full.git') / 1e6:.0f} MB on disk")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
