"""`envbuilder lock --link`: a linkage failure is a resolver conflict, found from real ELF files.

The index serves fakec10 1.0 and 2.0 (2.0 changed `c10::add(int)` to `c10::add(long)`) and `ext`
1.0, built against fakec10 1.0 but declaring only `fakec10` (a loose pin that allows a pair that
does not link). No knowledge fact describes any of them: only the binaries can say.
"""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import needs_tool

from tests.support.linkwheels import extension, fake_torch

pytestmark = needs_tool("g++", shutil.which("g++"), "apt-get install g++")


def _matrix(packages: str) -> str:
    return ("schema: 1\ntarget: linked\n"
            'platform: {os: linux, machine: x86_64, libc: glibc_2.36, python: "3.12"}\n'
            "toolchain: {base_image: \"debian:bookworm-slim\"}\n"
            f"packages:\n{packages}")


@pytest.fixture
def served(default_index, tmp_path, monkeypatch):
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    build = tmp_path / "build"
    for version in ("1.0", "2.0"):
        default_index.add(fake_torch(build, version))
    default_index.add(extension(build))
    return default_index


def test_lock_link_backtracks_from_a_provider_that_drops_a_symbol(project, served):
    (project.root / "matrices" / "linked.yaml").write_text(_matrix('  ext: "==1.0"\n'))
    plain = project.run("lock", "linked")
    assert plain.rc == 0 and project.read_lock("linked").package("fakec10").version == "2.0"  # the loose pin

    result = project.run("lock", "--refresh", "--upgrade", "--link", "linked")
    assert result.rc == 0, result.text
    lock = project.read_lock("linked")
    assert lock.package("fakec10").version == "1.0"
    ext = lock.package("ext")
    assert ext.artifacts[0].linkage and ext.artifacts[0].linkage.startswith("sha256:")


def test_lock_link_refuses_a_pinned_break_naming_file_symbol_and_provider(project, served):
    (project.root / "matrices" / "linked.yaml").write_text(_matrix('  ext: "==1.0"\n  fakec10: "==2.0"\n'))
    result = project.run("lock", "--link", "linked")
    assert result.rc == 1, result.text
    assert "ext/_ext.so" in result.text and "c10::add(int)" in result.text and "fakec10 2.0" in result.text
    assert not project.lock_path("linked").exists()


def test_gate_links_the_head_and_names_the_new_break(project, default_index, tmp_path, monkeypatch):
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    build = tmp_path / "build"
    v1, v2 = fake_torch(build, "1.0"), fake_torch(build, "2.0")
    for dist in (v1, v2, extension(build)):
        default_index.add(dist)
    (project.root / "matrices" / "linked.yaml").write_text(_matrix('  ext: "==1.0"\n  fakec10: "==1.0"\n'))
    assert project.run("lock", "--link", "linked").rc == 0
    base = project.lock_path("linked").read_text()
    (tmp_path / "base.lock.toml").write_text(base)
    same = project.run("gate", "--base", str(tmp_path / "base.lock.toml"))
    assert same.rc == 0, same.text

    head = base.replace(v1.sha256, v2.sha256).replace(v1.filename, v2.filename) \
        .replace(f"size = {v1.size}", f"size = {v2.size}")
    head = head.replace('name = "fakec10"\nversion = "1.0"', 'name = "fakec10"\nversion = "2.0"')
    project.lock_path("linked").write_text(head)
    result = project.run("gate", "--base", str(tmp_path / "base.lock.toml"))
    assert result.rc == 1, result.text
    assert "link-undefined-symbol" in result.text and "c10::add(int)" in result.text


def test_gate_link_checks_a_lock_made_without_link(project, default_index, tmp_path, monkeypatch):
    """The issue's case: a bump locked without --link passes the rules; `gate --link` names the break."""
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    build = tmp_path / "build"
    for dist in (fake_torch(build, "1.0"), fake_torch(build, "2.0"), extension(build)):
        default_index.add(dist)
    (project.root / "matrices" / "linked.yaml").write_text(_matrix('  ext: "==1.0"\n  fakec10: "==1.0"\n'))
    assert project.run("lock", "linked").rc == 0
    (tmp_path / "base.lock.toml").write_text(project.lock_path("linked").read_text())
    (project.root / "matrices" / "linked.yaml").write_text(_matrix('  ext: "==1.0"\n  fakec10: "==2.0"\n'))
    assert project.run("lock", "linked").rc == 0  # no fact describes these packages: the rules pass
    assert project.run("gate", "--base", str(tmp_path / "base.lock.toml")).rc == 0
    result = project.run("gate", "--link", "--base", str(tmp_path / "base.lock.toml"))
    assert result.rc == 1 and "link-undefined-symbol" in result.text and "c10::add(int)" in result.text
