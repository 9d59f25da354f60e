"""conda-lock export: written by conda-lock's models, read back by its parser, installed as it installs."""

from __future__ import annotations

from pathlib import Path

import pytest
from conda_lock.conda_lock import render_lockfile_for_platform
from conda_lock.lockfile import parse_conda_lock_file

from envbuilder.export import export
from tests.export.helpers import clean_env, installed, locked_versions, make_lock, make_venv, must, pip, package, run
from tests.support.dists import make_wheel


@pytest.fixture
def demo(index_server):
    alpha = make_wheel("alpha", "1.0", requires_dist=["beta>=2"])
    beta = [make_wheel("beta", "2.0", tags="py3-none-any"),
            make_wheel("beta", "2.0", tags="cp311-cp311-manylinux_2_17_x86_64"),
            make_wheel("beta", "2.0", tags="cp311-cp311-musllinux_1_2_x86_64")]
    for dist in (alpha, *beta):
        index_server.add(dist)
    lock = make_lock([package("alpha", "1.0", [alpha], deps=["beta>=2"]), package("beta", "2.0", beta)],
                     python="3.11")
    return lock


def _write(lock, client, tmp_path: Path) -> Path:
    path = tmp_path / "conda-lock.yml"
    path.write_text(export(lock, "conda-lock", client=client, origin="locks/demo.lock.toml", file_name=path.name))
    return path


def test_conda_lock_parses_it_back(demo, index_client, index_server, tmp_path):
    parsed = parse_conda_lock_file(_write(demo, index_client, tmp_path))
    assert parsed.metadata.platforms == ["linux-64"]
    assert parsed.metadata.content_hash == {"linux-64": demo.digest.removeprefix("sha256:")}
    assert parsed.metadata.custom_metadata["envbuilder.python"] == "3.11"
    entries = {p.name: p for p in parsed.package}
    assert set(entries) == {"alpha", "beta"}  # no conda `python` entry: the lock never resolved one
    assert all(p.manager == "pip" and p.platform == "linux-64" and p.categories == {"main"} for p in entries.values())
    assert entries["alpha"].dependencies == {"beta": ">=2"}
    # one file per package: the one the target (cp311, glibc 2.36) installs first
    beta = entries["beta"]
    assert beta.url == f"{index_server.root}/files/beta-2.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    assert beta.hash.sha256 == next(a.sha256 for a in demo.package("beta").artifacts if "manylinux" in a.filename)


def test_same_lock_same_bytes(demo, index_client, tmp_path):
    first = _write(demo, index_client, tmp_path).read_bytes()
    assert _write(demo, index_client, tmp_path).read_bytes() == first


def test_git_source_is_a_url_source(index_client, tmp_path):
    commit = "b" * 40
    lock = make_lock([package("omega", "3.0", git=("https://example.invalid/omega.git", commit, None))])
    omega = parse_conda_lock_file(_write(lock, index_client, tmp_path)).package[0]
    assert omega.source.url == omega.url == f"git+https://example.invalid/omega.git@{commit}"


def pip_lines(path: Path, platform: str = "linux-64") -> list[str]:
    """What `conda-lock install` hands to pip: the `# pip` lines of conda-lock's explicit render."""
    rendered = render_lockfile_for_platform(lockfile=parse_conda_lock_file(path), include_dev_dependencies=False,
                                            extras=None, kind="explicit", platform=platform,
                                            suppress_warning_for_pip_and_explicit=True)
    return [line.split("# pip ", 1)[1] for line in rendered if line.startswith("# pip ")]


def test_installs_the_way_conda_lock_install_does(demo, index_client, tmp_path):
    lines = pip_lines(_write(demo, index_client, tmp_path))
    assert all("#sha256=" in line for line in lines)
    req = tmp_path / "pip.txt"
    req.write_text("\n".join(lines) + "\n")
    python = make_venv(tmp_path / "venv")
    must(run([*pip(python), "install", "--no-deps", "-r", str(req)], clean_env(None)))
    got = installed(python)
    assert {k: got[k] for k in locked_versions(demo)} == locked_versions(demo)


def test_skipped_source_builds_are_named_in_the_metadata(index_server, index_client, tmp_path):
    from envbuilder.lock.model import BuildRecipe
    from tests.support.dists import make_sdist

    alpha, gamma = make_wheel("alpha", "1.0"), make_sdist("gamma", "0.5")
    index_server.add(alpha)
    index_server.add(gamma)
    lock = make_lock([package("alpha", "1.0", [alpha]), package("gamma", "0.5", [gamma], build=BuildRecipe())])
    path = tmp_path / "conda-lock.yml"
    path.write_text(export(lock, "conda-lock", client=index_client, skip_source_builds=True))
    parsed = parse_conda_lock_file(path)
    assert [p.name for p in parsed.package] == ["alpha"]
    assert parsed.metadata.custom_metadata["envbuilder.skipped-source-builds"] == "gamma==0.5"


def test_header_suggests_only_commands_that_work(demo, index_client, tmp_path):
    """conda-lock's own help text said `conda-lock -f locks/demo.lock.toml`, which conda-lock cannot read."""
    text = _write(demo, index_client, tmp_path).read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert "#     conda-lock install -n YOURENV conda-lock.yml" in header
    assert f"#     envbuilder export {demo.target} --format conda-lock -o conda-lock.yml" in header
    assert not [line for line in header if "conda-lock -f" in line or "conda-lock lock" in line], header
    assert header[0].startswith("# Exported by envbuilder from locks/demo.lock.toml")


def test_hostile_target_name_cannot_end_the_header_comment(index_client, tmp_path):
    from envbuilder.export import condalock, select

    lock = make_lock([package("omega", "3.0", git=("https://example.invalid/omega.git", "c" * 40, None))])
    text = condalock.header(select(lock), "x\nversion: 9\n", "a\nb.yml")
    assert all(line.startswith("#") for line in text.splitlines())
