"""pylock export: PEP 751 rules (ours and packaging's), URLs from the index at export time, uv install."""

from __future__ import annotations

import copy
import subprocess
import tomllib
from dataclasses import replace

import pytest
from packaging.markers import Marker
from packaging.pylock import Pylock

from envbuilder.errors import CheckFailed
from envbuilder.export import export
from envbuilder.export.environment import target
from envbuilder.lock.model import BuildRecipe
from tests.export import pylock_rules
from tests.export.helpers import (
    clean_env, installed, locked_versions, make_lock, make_venv, must, package, run, source_tree, uv,
)
from tests.support.dists import make_sdist, make_wheel

RECIPE = BuildRecipe(env={"DEMO_BUILD_FLAG": "yes"}, inputs_digest="sha256:" + "4" * 64)


@pytest.fixture
def demo(index_server):
    alpha = make_wheel("alpha", "1.0", requires_dist=["beta>=2"])
    beta = [make_wheel("beta", "2.0", tags="py3-none-any"), make_sdist("beta", "2.0")]
    gamma = make_sdist("gamma", "0.5", files=source_tree("gamma", "0.5"))
    for dist in (alpha, *beta, gamma):
        index_server.add(dist)
    lock = make_lock([package("alpha", "1.0", [alpha], deps=["beta>=2"]), package("beta", "2.0", beta),
                      package("gamma", "0.5", [gamma], build=RECIPE)])
    return lock


def _doc(lock, client) -> dict:
    return tomllib.loads(export(lock, "pylock", client=client, origin="locks/demo.lock.toml"))


def test_valid_by_the_spec_rules_and_by_packaging(demo, index_client):
    doc = _doc(demo, index_client)
    markers = target(demo).markers
    assert pylock_rules.violations(doc, "pylock.demo.toml", markers) == []
    pylock = Pylock.from_dict(doc)
    assert str(pylock.lock_version) == "1.0" and pylock.created_by == "envbuilder"
    assert list(pylock.environments) == [Marker(demo.environment["marker"])]
    # what an installer would pick on the target: one file per package, the wheel where there is one
    picked = {p.name: d.filename for p, d in pylock.select(environment=markers, tags=list(target(demo).tag_priority))}
    assert picked == {"alpha": "alpha-1.0-py3-none-any.whl", "beta": "beta-2.0-py3-none-any.whl",
                      "gamma": "gamma-0.5.tar.gz"}


def test_urls_come_from_the_index_and_hashes_and_sizes_from_the_lock(demo, index_client, index_server):
    doc = _doc(demo, index_client)
    beta = next(p for p in doc["packages"] if p["name"] == "beta")
    wheel = beta["wheels"][0]
    assert wheel["url"].startswith(index_server.root) and wheel["url"].endswith("/beta-2.0-py3-none-any.whl")
    lock_beta = demo.package("beta")
    assert {(a.sha256, a.size) for a in lock_beta.artifacts} == {
        (f["hashes"]["sha256"], f["size"]) for f in (*beta["wheels"], beta["sdist"])}
    assert beta["index"] == index_server.url
    assert doc["tool"]["envbuilder"]["lock-digest"] == demo.digest
    gamma = next(p for p in doc["packages"] if p["name"] == "gamma")
    assert gamma["tool"]["envbuilder"]["build"]["env"] == {"DEMO_BUILD_FLAG": "yes"}
    assert "wheels" not in gamma  # a source build installs from its locked sdist only


def test_a_file_the_index_serves_with_other_bytes_is_an_error(demo, index_client):
    forged = replace(demo, packages=tuple(
        replace(p, artifacts=tuple(replace(a, sha256="0" * 64) for a in p.artifacts)) if p.name == "alpha" else p
        for p in demo.packages))
    with pytest.raises(CheckFailed, match=r"alpha-1\.0-py3-none-any\.whl with sha256 .* but the lock has 0{64}"):
        export(forged, "pylock", client=index_client)


def test_a_file_the_index_does_not_serve_is_an_error(demo, index_client):
    gone = replace(demo, packages=(*demo.packages, package("delta", "1.0", [make_wheel("delta", "1.0")])))
    with pytest.raises(CheckFailed, match=r"does not serve delta-1\.0-py3-none-any\.whl for delta==1\.0"):
        export(gone, "pylock", client=index_client)


def test_git_source_is_a_vcs_table_without_version(index_client, make_git_repo):
    repo = make_git_repo("proj", [{f"sub/{k}": v for k, v in source_tree("omega", "3.0").items()}])
    lock = make_lock([package("omega", "3.0", git=(repo.url, repo.head, "sub"))])
    doc = _doc(lock, index_client)
    assert doc["packages"][0]["vcs"] == {"type": "git", "url": repo.url, "commit-id": repo.head, "subdirectory": "sub"}
    assert "version" not in doc["packages"][0]
    assert doc["packages"][0]["tool"]["envbuilder"]["locked-version"] == "3.0"
    assert pylock_rules.violations(doc, "pylock.toml", target(lock).markers) == []
    Pylock.from_dict(doc)


def test_the_rule_checker_catches_broken_files(demo, index_client):
    """The checker itself must be able to fail, or a passing validity test proves nothing."""
    good = _doc(demo, index_client)
    cases = {
        "lock-version": lambda d: d.update({"lock-version": "2.0"}),
        "created-by": lambda d: d.pop("created-by"),
        "mutually exclusive": lambda d: d["packages"][0].update(vcs={"type": "git", "url": "x", "commit-id": "a" * 40}),
        "hashes: required": lambda d: d["packages"][0]["wheels"][0].update(hashes={}),
        "is not alpha 9.9": lambda d: d["packages"][0].update(version="9.9"),
        "normalised": lambda d: d["packages"][0].update(name="Alpha_Pkg"),
        "full one MUST": lambda d: d["packages"].append(
            {"name": "z", "vcs": {"type": "git", "url": "u", "commit-id": "abc"}}),
        "MUST NOT be given for a source tree": lambda d: d["packages"].append(
            {"name": "z", "version": "1", "vcs": {"type": "git", "url": "u", "commit-id": "a" * 40}}),
        "matches 0 entries": lambda d: d["packages"][0].update(dependencies=[{"name": "nope"}]),
        "no marker holds": lambda d: d.update(environments=["sys_platform == 'win32'"]),
        "unknown top-level key": lambda d: d.update(extra_key=1),
    }
    for expected, breaker in cases.items():
        doc = copy.deepcopy(good)
        breaker(doc)
        found = pylock_rules.violations(doc, "pylock.toml", target(demo).markers)
        assert any(expected in v for v in found), (expected, found)
    assert any("file name" in v for v in pylock_rules.violations(good, "demo.pylock.toml"))


def test_uv_installs_it_from_the_urls(demo, index_client, tmp_path):
    path = tmp_path / "pylock.demo.toml"
    path.write_text(export(demo, "pylock", client=index_client))
    python = make_venv(tmp_path / "venv")
    # no index is configured for uv: every file must come from the URLs in the pylock file
    must(run([uv(), "pip", "install", "--python", str(python), "-r", str(path)],
             clean_env(None, UV_CACHE_DIR=str(tmp_path / "uv-cache"), DEMO_BUILD_FLAG="yes",
                       UV_DEFAULT_INDEX="http://127.0.0.1:9/simple")))
    got = installed(python)
    assert {k: got[k] for k in locked_versions(demo)} == locked_versions(demo)
    built = subprocess.run([str(python), "-c", "import gamma; print(gamma.BUILT_WITH)"], capture_output=True, text=True)
    assert built.stdout.strip() == "yes"


def test_uv_installs_a_git_source_from_it(index_client, make_git_repo, tmp_path):
    repo = make_git_repo("proj", [{f"sub/{k}": v for k, v in source_tree("omega", "3.0").items()}])
    lock = make_lock([package("omega", "3.0", git=(repo.url, repo.head, "sub"))])
    path = tmp_path / "pylock.toml"
    path.write_text(export(lock, "pylock", client=index_client))
    python = make_venv(tmp_path / "venv")
    must(run([uv(), "pip", "install", "--python", str(python), "-r", str(path)],
             clean_env(None, UV_CACHE_DIR=str(tmp_path / "uv-cache"))))
    assert installed(python)["omega"] == "3.0"


def test_skipped_source_builds_are_listed_in_the_tool_table(demo, index_client):
    doc = tomllib.loads(export(demo, "pylock", client=index_client, skip_source_builds=True))
    assert [p["name"] for p in doc["packages"]] == ["alpha", "beta"]
    assert doc["tool"]["envbuilder"]["skipped-source-builds"] == ["gamma==0.5"]
    assert pylock_rules.violations(doc, "pylock.toml", target(demo).markers) == []
