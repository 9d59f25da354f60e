"""verify against a real venv holding real wheels (one with a gcc-compiled extension module)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from envbuilder.build.verify import Subject, load_subject, verify
from envbuilder.errors import BadInput
from envbuilder.lock import write_lock
from envbuilder.lock.model import Artifact, Lock, LockedPackage, Source
from tests.support.dists import make_wheel

EXT = sysconfig.get_config_var("EXT_SUFFIX")
MODULE_C = """
#include <Python.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "fast", NULL, -1, NULL};
PyMODINIT_FUNC PyInit_fast(void) { return PyModule_Create(&def); }
"""


def compile_so(tmp: Path, source: str, name: str) -> bytes:
    c = tmp / f"{name}.c"
    c.write_text(source)
    out = tmp / f"{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}", str(c), "-o", str(out)],
                   check=True)
    return out.read_bytes()


def pkg(name: str, version: str) -> LockedPackage:
    return LockedPackage(name, version, Source(index="pypi"), (Artifact(f"{name.replace('-', '_')}-{version}-py3-none-any.whl", "0" * 64),))


def make_lock(*packages: LockedPackage) -> Lock:
    return Lock("cpu-llamacpp", "sha256:" + "1" * 64, "sha256:" + "2" * 64, {"python": "3.11"},
                {"base-image": "debian:bookworm-slim", "base-image-pinned": False}, ("pypi",), packages)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pip-less venv with: demo 1.0 (pure), demo-ext 2.0 (a real extension), broken 0.1 (a .so that
    is not a module)."""
    tmp = tmp_path_factory.mktemp("verify")
    good = compile_so(tmp, MODULE_C, "fast")
    bad = compile_so(tmp, "int answer(void) { return 42; }\n", "broken")
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    wheels = [
        make_wheel("demo", "1.0"),
        make_wheel("demo-ext", "2.0", tags=f"{tag}-{tag}-linux_x86_64",
                   files={"demo_ext/__init__.py": b"", f"demo_ext/fast{EXT}": good}),
        make_wheel("broken", "0.1", tags=f"{tag}-{tag}-linux_x86_64",
                   files={"broken_pkg/__init__.py": b"", f"broken_pkg/native{EXT}": bad}),
    ]
    paths = [str(w.write(tmp / "wheels")) for w in wheels]
    target = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(target / "bin" / "python"), "install", "-q",
                    "--no-deps", "--no-index", *paths], check=True, env={"PATH": "/usr/bin:/bin", "PIP_CONFIG_FILE": "/dev/null"})
    return target


def test_exact_match_passes_and_imports_extensions(venv: Path) -> None:
    report = verify(Subject(make_lock(pkg("demo", "1.0"), pkg("demo-ext", "2.0"), pkg("broken", "0.1")), venv, {}))
    assert [p.kind for p in report.problems] == ["import"]
    assert report.problems[0].name == "broken" and "native" in report.problems[0].detail
    assert report.extensions == 2 and report.checked == 3


def test_extra_missing_and_wrong_version_are_each_reported(venv: Path) -> None:
    lock = make_lock(pkg("demo", "1.1"), pkg("demo-ext", "2.0"), pkg("numpy", "2.4.6"))
    report = verify(Subject(lock, venv, {}))
    found = {(p.kind, p.name) for p in report.problems}
    assert found == {("version", "demo"), ("missing", "numpy"), ("extra", "broken")}
    assert not report.ok


def test_binary_products_are_run_not_looked_up_in_the_venv(venv: Path, tmp_path: Path) -> None:
    tool = tmp_path / "llama-server"
    tool.write_text("#!/bin/sh\necho 'version: 1'\n")
    tool.chmod(0o755)
    lock = make_lock(pkg("demo", "1.0"), pkg("demo-ext", "2.0"), pkg("broken", "0.1"), pkg("llama-cpp-python", "0.3.36"))
    report = verify(Subject(lock, venv, {"llama-cpp-python": str(tool)}))
    assert {p.kind for p in report.problems} == {"import"}
    tool.unlink()
    report = verify(Subject(lock, venv, {"llama-cpp-python": str(tool)}))
    assert ("binary", "llama-cpp-python") in {(p.kind, p.name) for p in report.problems}


def test_verify_cli_outside_an_image_says_what_to_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENVBUILDER_IMAGE_MANIFEST", raising=False)
    with pytest.raises(BadInput, match="--lock and --venv"):
        load_subject(None, None, None)


def test_verify_cli_exit_codes(venv: Path, tmp_path: Path) -> None:
    lock_file = tmp_path / "x.lock.toml"
    write_lock(make_lock(pkg("demo", "1.0"), pkg("demo-ext", "2.0")), lock_file)
    cmd = [sys.executable, "-m", "envbuilder", "verify", "--lock", str(lock_file), "--venv", str(venv)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert "extra" in result.stdout and "broken" in result.stdout and "Traceback" not in result.stderr
