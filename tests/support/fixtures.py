"""Shared pytest fixtures; load with `pytest_plugins = ["tests.support.fixtures"]` in tests/conftest.py.

- `index_server`: a started IndexServer (tests/support/index_server.py), stopped afterwards.
- `default_index`: the same server made the user's default index for code that reads pip/uv
  configuration (PIP_INDEX_URL set, pip config files off, uv variables unset), with fast retries.
- `index_cache`: an empty Cache in the test's temp dir.
- `index_client`: an IndexClient on `index_server` and `index_cache` (fast retries), closed after.
- `make_git_repo`: factory `make_git_repo(name="repo", commits=[{path: content}, ...]) -> GitRepo`.
- autouse `_isolated_envbuilder_cache`: ENVBUILDER_CACHE_DIR points at a fresh temp dir in every
  test, so no test reads or pollutes the user's real cache.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import pytest

from envbuilder.index import Cache, IndexClient
from tests.support.gitrepo import Content, GitRepo
from tests.support.gitrepo import make_git_repo as _make_git_repo
from tests.support.dists import make_wheel
from tests.support.index_server import IndexServer

FAST_RETRY = {"retries": 2, "backoff": 0.01}
DEFAULT_SETUPTOOLS = "75.0.0"  # the setuptools every test index serves (a test may publish newer ones)


@pytest.fixture(autouse=True)
def _isolated_envbuilder_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path_factory.mktemp("envbuilder-cache")
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(path))
    return path


@pytest.fixture
def index_server() -> Iterator[IndexServer]:
    with IndexServer() as server:
        yield server


@pytest.fixture
def default_index(index_server: IndexServer, monkeypatch: pytest.MonkeyPatch) -> IndexServer:
    monkeypatch.setenv("PIP_INDEX_URL", index_server.url)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ENVBUILDER_HTTP_RETRIES", str(FAST_RETRY["retries"]))
    monkeypatch.setenv("ENVBUILDER_HTTP_BACKOFF", str(FAST_RETRY["backoff"]))
    # as every real index does, it serves setuptools: PEP 518's default build requirement, which the
    # lock resolves and hashes for any source build that declares no build system (a test may publish others)
    index_server.add(make_wheel("setuptools", DEFAULT_SETUPTOOLS))
    return index_server


@pytest.fixture
def index_cache(tmp_path: Path) -> Cache:
    return Cache(tmp_path / "index-cache")


@pytest.fixture
def index_client(index_server: IndexServer, index_cache: Cache) -> Iterator[IndexClient]:
    with IndexClient({"pypi": index_server.url}, index_cache, max_workers=4, **FAST_RETRY) as client:
        yield client


@pytest.fixture
def make_git_repo(tmp_path: Path) -> Callable[..., GitRepo]:
    def make(name: str = "repo", commits: Iterable[Mapping[str, Content]] = ({"README": "initial\n"},)) -> GitRepo:
        return _make_git_repo(tmp_path / "git" / name, commits)

    return make
