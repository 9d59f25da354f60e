"""A real branch to bump along: httpx 0.28.1's real sdist in a bare repository served over file://.

The repository and the index come from tests/resolve/test_git_source.py's fixtures (httpx's sdist
under python/, then "depend on sniffio", then "docs"; the index serves httpx's dependencies), so
the partial clone and the one-blob pyproject read are the real code path. Here the repository
also gets a side branch whose commit main never contains (a fix that is not on main).
"""

from __future__ import annotations

import pytest

from tests.resolve.project import project  # noqa: F401  (fixture)
from tests.resolve.test_git_source import httpx_repo, httpx_sdist, index_with_httpx_deps  # noqa: F401  (fixtures)

HTTPX_DEPS = ["anyio", "certifi", "httpcore==1.*", "idna"]


@pytest.fixture
def branchy_repo(httpx_repo):  # noqa: F811
    """(work repo, bare URL, side-branch commit): main = import, sniffio, docs; `side` forks from the import."""
    work, url = httpx_repo
    work.branch("side", work.commits[0])
    work.checkout("side")
    side = work.commit({"python/SIDE.md": "only on side\n"}, message="a fix only on the side branch (#9999)")
    work.checkout("main")
    work.git("push", "-q", url, "side")
    return work, url, side


def git_spec(url: str, rev: str, metadata: dict | None = None) -> dict:
    """httpx at `rev`; its version is dynamic (hatch), so the matrix states it."""
    return {"git": url, "rev": rev, "subdirectory": "python", "metadata": metadata or {"version": "0.28.1"}}
