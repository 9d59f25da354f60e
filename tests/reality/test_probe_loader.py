"""The reality probe reads the loader correctly: real gcc-built libraries, real dlopen failures.

No container and no download: these check the parts of tests/reality/probe.py that turn ld.so's
words into outcomes (which file failed, on which library or symbol, who needed a missing library)
and the load order it uses, so a wrong table cannot come from a wrong reading.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.reality import probe

READ = """
import ctypes, json, os, sys
sys.path.insert(0, {probe_dir!r})
import probe
path, site = sys.argv[1], sys.argv[2]
ok, error = probe.load(path)
log, _ = probe.debug_log_since(0)
out = {{"ok": ok, "error": error}}
if not ok:
    out.update(probe.classify(error, log, site))
print(json.dumps(out))
"""


def _gcc(tmp: Path, name: str, code: str, *args: str) -> Path:
    src = tmp / f"{name}.c"
    src.write_text(code)
    out = tmp / name
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src), f"-Wl,-soname,{name}", *args],
                   check=True, cwd=tmp)
    return out


@pytest.fixture
def libs(tmp_path: Path) -> Path:
    require_tool("gcc", shutil.which("gcc"), "apt-get install gcc")
    site = tmp_path / "site-packages" / "pkg"
    site.mkdir(parents=True)
    _gcc(site, "libdep.so", "int dep_fn(void) { return 1; }\n")
    _gcc(site, "libneeds.so", "int dep_fn(void); int f(void) { return dep_fn(); }\n", "-L.", "-l:libdep.so")
    _gcc(site, "libundef.so", "int not_defined_anywhere(void); int g(void) { return not_defined_anywhere(); }\n")
    _gcc(site, "libok.so", "int h(void) { return 0; }\n")
    return site


def _read(path: Path, site: Path, tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env.update(LD_DEBUG="files", LD_DEBUG_OUTPUT=str(tmp / "ld"))
    code = READ.format(probe_dir=str(Path(probe.__file__).parent))
    proc = subprocess.run([sys.executable, "-c", code, str(path), str(site)], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def test_missing_library_names_the_object_that_needs_it(libs: Path, tmp_path: Path) -> None:
    (libs / "libdep.so").unlink()
    out = _read(libs / "libneeds.so", libs.parent, tmp_path)
    assert out["ok"] is False
    assert out["error"] == "libdep.so: cannot open shared object file: No such file or directory"
    assert out["kind"] == "missing-library" and out["library"] == "libdep.so"
    assert out["object"] == "pkg/libneeds.so"  # from the loader's "needed by" line, relative to site


def test_undefined_symbol_names_object_and_mangled_name(libs: Path, tmp_path: Path) -> None:
    out = _read(libs / "libundef.so", libs.parent, tmp_path)
    assert out["kind"] == "undefined-symbol"
    assert out["symbol"] == "not_defined_anywhere"
    assert out["object"] == "pkg/libundef.so"
    assert out["error"].endswith("libundef.so: undefined symbol: not_defined_anywhere")


def test_a_library_that_loads(libs: Path, tmp_path: Path) -> None:
    assert _read(libs / "libok.so", libs.parent, tmp_path) == {"ok": True, "error": ""}


def test_elf_reading_and_load_order(libs: Path) -> None:
    needs = probe.elf_dynamic(str(libs / "libneeds.so"))
    assert needs is not None and needs["soname"] == "libneeds.so" and "libdep.so" in needs["needed"]
    assert needs["type"] == 3 and not needs["interp"]
    assert probe.elf_dynamic(str(libs / "libneeds.so.c")) is None  # not an ELF
    elves = [(f"pkg/{n}", probe.elf_dynamic(str(libs / n))) for n in ("libneeds.so", "libdep.so", "libok.so")]
    order = [rel for rel, _ in probe.load_order(elves)]
    assert order.index("pkg/libdep.so") < order.index("pkg/libneeds.so")  # a sibling it needs comes first
