"""Build requirements resolved and hash-locked: `[build-system].requires` read from the source, resolved
by the same machinery as the runtime closure, recorded in the lock, kept on re-lock, reported by the
gate and `lock --check` when they move, and installed by hash in the rendered build stage."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from envbuilder.lock import io

from tests.resolve.project import publish
from tests.support.dists import make_sdist, make_wheel

PYPROJECT = b"""[build-system]
requires = ["flit_core>=3.2,<4", "old-helper; python_version < '3.0'"]
build-backend = "flit_core.buildapi"
"""


def _source(default_index, name: str = "fa", pyproject: bytes | None = PYPROJECT):
    files = {"pyproject.toml": pyproject} if pyproject is not None else None
    sdist = make_sdist(name, "1.0", metadata_version="2.2", files=files)
    default_index.add(sdist)
    return sdist


def test_declared_build_requirements_are_resolved_and_locked_by_hash(project, default_index):
    _source(default_index)
    served = {v: publish(default_index, "flit-core", v).dist for v in ("3.9.0", "3.12.0", "4.0.0")}
    project.write_matrix("fa", {"fa": {"version": "==1.0", "build": {"from": "sdist"}}})
    result = project.run("lock", "fa")
    assert result.rc == 0, result.text
    lock = project.read_lock("fa")
    assert lock.package("fa").build.tools == ("flit-core==3.12.0",)  # newest <4; the marker-false one left out
    (tool,) = lock.build_packages
    assert (tool.name, tool.version, tool.source.index) == ("flit-core", "3.12.0", "pypi")
    assert [(a.filename, a.sha256, a.size) for a in tool.artifacts] == [
        (served["3.12.0"].filename, served["3.12.0"].sha256, served["3.12.0"].size)]
    assert lock.package("flit-core") is None  # a build requirement is not in the runtime closure
    assert project.run("lock", "fa", "--check").rc == 0


def test_a_source_without_a_build_system_gets_pep_518s_setuptools(project, default_index):
    _source(default_index, pyproject=None)
    for version in ("40.0.0", "80.9.0"):
        publish(default_index, "setuptools", version)
    project.write_matrix("fa", {"fa": {"version": "==1.0", "build": {"from": "sdist"}}})
    assert project.run("lock", "fa").rc == 0
    assert project.read_lock("fa").package("fa").build.tools == ("setuptools==80.9.0",)


def test_tools_are_kept_on_relock_and_a_moved_tool_shows_in_check_and_gate(project, default_index, tmp_path: Path):
    _source(default_index)
    publish(default_index, "flit-core", "3.9.0")
    project.write_matrix("fa", {"fa": {"version": "==1.0", "build": {"from": "sdist"}}})
    assert project.run("lock", "fa").rc == 0
    base = tmp_path / "base.lock.toml"
    base.write_bytes(project.lock_bytes("fa"))

    publish(default_index, "flit-core", "3.12.0")
    assert project.run("lock", "fa", "--refresh").rc == 0  # stable: the locked tool is preferred
    assert project.lock_bytes("fa") == base.read_bytes()
    check = project.run("lock", "fa", "--check", "--online")
    assert check.rc == 0, check.text

    assert project.run("lock", "fa", "--upgrade-package", "flit-core").rc == 0
    head = project.read_lock("fa")
    assert head.package("fa").build.tools == ("flit-core==3.12.0",)
    gate = project.run("gate", "--base", str(base), "--head", str(project.lock_path("fa")))
    rows = [line.split() for line in gate.out.splitlines()]
    assert gate.rc == 0 and ["fa", "rebuilt", "1.0", "1.0", "binary"] in rows, gate.text
    assert ["flit-core", "(build", "tool", "of", "fa)", "upgraded", "minor", "3.9.0", "3.12.0", "pure-Python"] in rows

    (tool,) = head.build_packages  # a lock whose tool's hash lies: `lock --check` names it
    forged = replace(head, build_packages=(replace(tool, artifacts=(replace(tool.artifacts[0], sha256="0" * 64),)),))
    honest = tmp_path / "head.lock.toml"
    honest.write_bytes(project.lock_bytes("fa"))
    project.lock_path("fa").write_text(io.dumps(forged))
    check = project.run("lock", "fa", "--check", "--online")
    assert check.rc == 1 and "build-package flit-core==3.12.0, artifact" in check.text, check.text
    gate = project.run("gate", "--base", str(honest), "--head", str(project.lock_path("fa")))
    assert gate.rc == 1 and "artifact-replaced" in gate.out and "flit_core-3.12.0" in gate.out, gate.text


def test_a_build_requirement_without_a_wheel_is_refused(project, default_index):
    _source(default_index)
    default_index.add(make_sdist("flit-core", "3.12.0", metadata_version="2.2"))
    project.write_matrix("fa", {"fa": {"version": "==1.0", "build": {"from": "sdist"}}})
    result = project.run("lock", "fa")
    assert result.rc == 1 and "fa 1.0's build environment" in result.err and "wheels only" in result.err, result.text
    assert "Traceback" not in result.text


def test_the_build_stage_installs_only_hashed_locked_tools(project, default_index, tmp_path: Path):
    _source(default_index)
    tool = publish(default_index, "flit-core", "3.12.0").dist
    project.write_matrix("fa", {"fa": {"version": "==1.0", "build": {"from": "sdist"}}})
    assert project.run("lock", "fa").rc == 0
    out = tmp_path / "ctx"
    result = project.run("render", "fa", "-o", str(out))
    assert result.rc == 0, result.text
    inputs = (out / "requirements" / "build-fa" / "inputs.txt").read_text()
    assert "flit-core==3.12.0" in inputs and f"--hash=sha256:{tool.sha256}" in inputs
    assert not (out / "requirements" / "build-fa" / "tools.txt").exists()
    stage = (out / "Dockerfile").read_text().split("AS build-fa", 1)[1].split("\nFROM ", 1)[0]
    installs = [line for line in stage.replace("\\\n", " ").splitlines() if "pip install" in line or "pip wheel" in line]
    assert installs and all("--require-hashes" in line for line in installs), installs
    assert "--no-build-isolation" in stage
    dry = project.run("build", "fa", "--dry-run")
    assert "flit-core==3.12.0" in dry.text and "unhashed" not in dry.text, dry.text


def test_wheel_only_dist_with_tools_of_a_build(project, default_index):
    """A build requirement's own dependencies are resolved too, and a tool may carry extras."""
    _source(default_index, pyproject=b'[build-system]\nrequires = ["maker[fast]>=1"]\n')
    publish(default_index, "maker", "1.0", ["speedup; extra == 'fast'", "helper>=2"])
    publish(default_index, "helper", "2.0")
    publish(default_index, "speedup", "0.1")
    default_index.add(make_wheel("speedup", "0.2", tags="cp311-cp311-manylinux_2_28_x86_64"))  # not for 3.12
    project.write_matrix("fa", {"fa": {"version": "==1.0", "build": {"from": "sdist"}}})
    result = project.run("lock", "fa")
    assert result.rc == 0, result.text
    assert project.read_lock("fa").package("fa").build.tools == ("helper==2.0", "maker==1.0", "speedup==0.1")
