"""verify imports Python extension modules only: a bare `.so` loaded by ctypes is not one."""

from __future__ import annotations

import shutil
import subprocess
from importlib.metadata import PathDistribution
from pathlib import Path

from envbuilder.build.verify import extension_modules
from tests.conftest import needs_tool

pytestmark = needs_tool("gcc", shutil.which("gcc"), "apt-get install gcc (builds the real shared objects)")


def _shared_object(path: Path, source: str) -> None:
    c = path.with_suffix(".c")
    c.write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path), str(c)], check=True)
    c.unlink()


def test_plain_shared_library_is_not_an_extension_module(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "lib").mkdir(parents=True)
    _shared_object(pkg / "lib" / "libplain.so", "int plain(void) { return 1; }\n")
    _shared_object(pkg / "fast.so", "void *PyInit_fast(void) { return 0; }\n")
    _shared_object(pkg / "tagged.cpython-311-x86_64-linux-gnu.so", "int x;\n")
    info = tmp_path / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
    (info / "RECORD").write_text("pkg/lib/libplain.so,,\npkg/fast.so,,\npkg/tagged.cpython-311-x86_64-linux-gnu.so,,\n")
    suffixes = [".cpython-311-x86_64-linux-gnu.so", ".abi3.so", ".so"]
    assert extension_modules(PathDistribution(info), suffixes) == ["pkg.fast", "pkg.tagged"]
