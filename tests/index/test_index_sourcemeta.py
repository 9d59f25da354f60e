"""An sdist's dependencies read from its own source, by each route, on real projects' sdists.

The sdists and the build requirements come from the default index once (`pytest -m network`), then
the local IndexServer serves them, so the backend route installs its build requirements from an
index as in production (and from nothing else: the host's pip configuration is switched off).
"""

from __future__ import annotations

import os

import pytest

from envbuilder.index import IndexClient
from envbuilder.index.sourcemeta import pep621_metadata
from envbuilder.index.models import CoreMetadata
from envbuilder.errors import BadInput
from tests.support.index_server import IndexServer
from tests.support.realdists import fetch, serve

pytestmark = pytest.mark.network


@pytest.fixture
def real_index(index_server: IndexServer, monkeypatch: pytest.MonkeyPatch) -> IndexServer:
    for path in fetch("httpx==0.28.1", "tqdm==4.67.1", "python-dateutil==2.9.0.post0"):
        serve(index_server, path)
    for path in fetch("setuptools", "wheel", "setuptools_scm<8", binary=True, deps=True):
        serve(index_server, path)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # the backend's build env sees only this index
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    monkeypatch.setenv("PIP_CONSTRAINT", "")
    return index_server


def _sdist_meta(client: IndexClient, project: str) -> CoreMetadata:
    (sdist,) = [f for f in client.files(project) if f.kind == "sdist"]
    return client.metadata(sdist)


def test_pep643_pkg_info_is_read_as_is(real_index, index_client):
    """httpx 0.28.1 (hatchling): PKG-INFO 2.3 with no Dynamic fields."""
    meta = _sdist_meta(index_client, "httpx")
    assert meta.origin == "pkg-info" and meta.build_python is None
    assert {"anyio", "certifi", "httpcore==1.*", "idna"} <= set(meta.requires_dist)


def test_pep621_static_dependencies_with_a_dynamic_version(real_index, index_client):
    """tqdm 4.67.1: PKG-INFO 2.1 (not authoritative), pyproject [project] dependencies static, version from scm."""
    meta = _sdist_meta(index_client, "tqdm")
    assert meta.origin == "pyproject" and meta.version == "4.67.1"
    assert 'colorama; platform_system == "Windows"' in meta.requires_dist
    assert meta.requires_python == ">=3.7"
    assert any(r.startswith("requests") and 'extra == "discord"' in r for r in meta.requires_dist)


def test_backend_builds_metadata_with_a_dynamic_version(real_index, index_client):
    """python-dateutil 2.9.0.post0: setup.cfg dependencies, setuptools_scm version: only a build says."""
    meta = _sdist_meta(index_client, "python-dateutil")
    assert meta.origin == "backend" and meta.build_python
    assert meta.version == "2.9.0.post0" and "six>=1.5" in meta.requires_dist
    installed = [r.path for r in real_index.log if r.path.endswith(".whl")]
    assert any("setuptools_scm" in p for p in installed)  # its build requirements came from the index
    # cached by the sdist's sha256: a second client neither downloads nor builds
    real_index.clear_log()
    with IndexClient({"pypi": real_index.url}, index_client.cache) as again:
        assert _sdist_meta(again, "python-dateutil").requires_dist == meta.requires_dist
    assert not [r for r in real_index.log if r.path.endswith((".whl", ".tar.gz"))]


def test_pep621_refuses_a_table_that_names_another_project():
    text = b'[project]\nname = "other"\nversion = "1"\ndependencies = []\n'
    with pytest.raises(BadInput, match="expected 'mine'"):
        pep621_metadata(text, "mine", "1", "mine-1.tar.gz")


def test_pep621_dynamic_dependencies_give_no_answer():
    text = b'[project]\nname = "mine"\ndynamic = ["version", "dependencies"]\n'
    assert pep621_metadata(text, "mine", "1", "mine-1.tar.gz") is None
