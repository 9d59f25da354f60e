"""Every format for every shipped target's committed lock.

requirements needs no index, so it runs everywhere; pylock and conda-lock ask the real default index
for URLs (`-m network`), then are checked against PEP 751 (ours and packaging's rules) and read
back by conda-lock's own parser.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.pylock import Pylock
from packaging.utils import canonicalize_name

from envbuilder.lock import lock_path, read_lock
from envbuilder.export import export, select
from envbuilder.export.environment import target
from envbuilder.matrix import project_root, shipped_targets
from tests.export import pylock_rules

ROOT = project_root(Path(__file__).parent)
TARGETS = shipped_targets(ROOT)


def shipped_lock(name: str):
    path = lock_path(ROOT, name)
    if not path.exists():
        pytest.skip(f"{path.relative_to(ROOT)} is not committed yet (run `envbuilder lock {name}`)")
    return read_lock(path)


@pytest.mark.parametrize("name", TARGETS)
def test_requirements_pins_every_locked_file(name):
    lock = shipped_lock(name)
    text = export(lock, "requirements", origin=f"locks/{name}.lock.toml")
    assert text == export(lock, "requirements", origin=f"locks/{name}.lock.toml")
    for entry in select(lock).entries:
        assert f"\n{entry.pin} " in text or f"\n{entry.name} @ git+" in text, entry.name
        for artifact in entry.artifacts:
            assert f"--hash=sha256:{artifact.sha256}" in text
        if entry.is_source_build:
            assert f"# {entry.name}: built from its {'git checkout' if entry.is_git else 'sdist'}" in text
    pinned = [line for line in text.splitlines() if not line.startswith("#") and " @ git+" not in line]
    assert "://" not in "\n".join(pinned)  # no index host: the user's installer brings its own


@pytest.fixture(scope="module")
def client():
    from envbuilder.index import IndexClient

    with IndexClient() as ix:
        yield ix


@pytest.mark.network
@pytest.mark.parametrize("name", TARGETS)
def test_pylock_is_valid_for_every_shipped_target(name, client):
    lock = shipped_lock(name)
    doc = tomllib.loads(export(lock, "pylock", client=client, origin=f"locks/{name}.lock.toml"))
    assert pylock_rules.violations(doc, f"pylock.{name}.toml", target(lock).markers) == []
    pylock = Pylock.from_dict(doc)
    assert {p.name for p in pylock.packages} == {canonicalize_name(p.name) for p in lock.packages}
    files = {a.filename for p in lock.packages for a in p.artifacts}
    urls = [f["url"] for p in doc["packages"] for f in (p.get("wheels") or []) + ([p["sdist"]] if "sdist" in p else [])]
    assert {u.rsplit("/", 1)[1].split("#")[0] for u in urls} == files


@pytest.mark.network
@pytest.mark.parametrize("name", TARGETS)
def test_conda_lock_reads_it_for_every_shipped_target(name, client, tmp_path):
    from conda_lock.lockfile import parse_conda_lock_file

    lock = shipped_lock(name)
    path = tmp_path / "conda-lock.yml"
    path.write_text(export(lock, "conda-lock", client=client, origin=f"locks/{name}.lock.toml"))
    parsed = parse_conda_lock_file(path)
    assert {p.name for p in parsed.package} == {canonicalize_name(p.name) for p in lock.packages}
    hashes = {a.sha256 for p in lock.packages for a in p.artifacts}
    for entry in parsed.package:
        assert entry.manager == "pip"
        if entry.source is not None:  # a git source: the commit is the content address
            assert entry.source.url.startswith("git+") and lock.package(entry.name).source.commit in entry.source.url
        else:
            assert entry.hash.sha256 in hashes
