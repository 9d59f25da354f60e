"""The backend metadata route's build environment: resolved by the build-requirements resolver, every
wheel downloaded by hash into the cache, installed by pip with `--no-index --require-hashes`.

Real setuptools and wheel wheels (fetched once from the default index, `pytest -m network`) are
served by the local index server; the sdist is a legacy setup.py project whose PKG-INFO is not
authoritative, so only its backend can say its dependencies.
"""

from __future__ import annotations

import pytest

from envbuilder.index import IndexClient
from envbuilder.index.errors import HashMismatch
from tests.support.dists import make_sdist
from tests.support.index_server import IndexServer
from tests.support.realdists import fetch, serve

pytestmark = pytest.mark.network

SETUP = b"""from setuptools import setup
setup(name="legacy", version="1.0", install_requires=["six>=1.5"], setup_requires=["wheel"])
"""


@pytest.fixture
def backend_index(index_server: IndexServer) -> IndexServer:
    for path in fetch("setuptools", "wheel", binary=True, deps=True):
        serve(index_server, path)
    index_server.add(make_sdist("legacy", "1.0", metadata_version="2.1", files={"setup.py": SETUP}))
    return index_server


def _wheel_requests(server: IndexServer) -> list[str]:
    return sorted(r.path.rsplit("/", 1)[-1] for r in server.log if r.path.endswith(".whl") and r.status == 200)


def test_the_backend_route_installs_exactly_the_hashed_set(backend_index, index_client: IndexClient):
    (sdist,) = index_client.files("legacy")
    meta = index_client.metadata(sdist)
    assert meta.origin == "backend" and meta.requires_dist == ("six>=1.5",)
    # setuptools (PEP 518's default, static), then wheel (setup_requires: the backend's dynamic answer)
    # with its dependency packaging, each downloaded once by the client into its hash-checked cache;
    # pip installed those files with --no-index, so the index saw nothing else
    fetched = _wheel_requests(backend_index)
    assert [f.split("-")[0] for f in fetched] == ["packaging", "setuptools", "wheel"], fetched
    assert all(index_client.cache.lookup_file(f.sha256, f.filename) is not None
               for name in ("packaging", "setuptools", "wheel") for f in index_client.files(name)
               if f.filename in fetched)


def test_a_tampered_build_requirement_is_refused(backend_index, index_client: IndexClient):
    (setuptools,) = [f for f in index_client.files("setuptools") if f.kind == "wheel"]
    backend_index.tamper(setuptools.filename)
    (sdist,) = index_client.files("legacy")
    with pytest.raises(HashMismatch, match=setuptools.filename.replace("+", r"\+")) as err:
        index_client.metadata(sdist)
    assert err.value.exit_code == 3
