"""`inspect` against what the H200 recorded: a torch extension built and run there, and torch's libtorch_cuda.so."""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from test_inspect import CUOBJDUMP_HOW, find_cuobjdump

from envbuilder.abi.inspect import inspect_binary
from envbuilder.abi.report import BinaryReport
from tests.conftest import needs_tool

H200 = Path(__file__).resolve().parents[1] / "fixtures" / "h200"
CUOBJDUMP = find_cuobjdump()


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))


def cuobjdump_archs(text: str) -> Counter:
    """Image count per (kind, arch) from `cuobjdump --list-elf --list-ptx` output."""
    found = re.findall(r"^(ELF|PTX) file\s+\d+: .*\.(sm_\w+)\.(?:cubin|ptx)$", text, re.M)
    return Counter(("sass" if kind == "ELF" else "ptx", arch) for kind, arch in found)


def ours(report: BinaryReport) -> Counter:
    """Our counts in cuobjdump's spelling (PTX named sm_XY; `f` dropped from cubin names)."""
    out = Counter()
    for image in report.fatbin:
        number = image.arch.split("_", 1)[1]
        out[(image.kind, "sm_" + (number.rstrip("f") if image.kind == "sass" else number))] += image.count
    return out


def recorded_report(name: str) -> BinaryReport:
    [item] = json.loads((H200 / name).read_text())
    return BinaryReport.model_validate(item["report"])


def test_extension_built_on_h200_inspects_as_recorded():
    report = inspect_binary(H200 / "eb_axpy.so")
    assert report == recorded_report("inspect-eb_axpy.json")  # same bytes, same code, same answer
    assert report.sass_archs == ("sm_90a",) and report.ptx_archs == ()  # TORCH_CUDA_ARCH_LIST=9.0a there
    assert report.torch_consumer and report.cxx11_abi is True
    assert report.cuda_runtime == "13" and report.nvcc_versions == ("13.0.88",)
    assert {"libc10.so", "libtorch_cpu.so", "libcudart.so.13"} <= set(report.needed)
    assert ours(report) == cuobjdump_archs((H200 / "cuobjdump-eb_axpy.txt").read_text())


@needs_tool("cuobjdump", CUOBJDUMP, CUOBJDUMP_HOW)
def test_extension_arch_list_matches_local_cuobjdump():
    out = subprocess.run([CUOBJDUMP, "--list-elf", "--list-ptx", str(H200 / "eb_axpy.so")],
                         capture_output=True, text=True).stdout
    assert ours(inspect_binary(H200 / "eb_axpy.so")) == cuobjdump_archs(out)


def test_libtorch_cuda_recorded_on_h200_matches_cuobjdump_arch_for_arch():
    """torch 2.11.0+cu130: 444 containers; cuobjdump and the reader agree on all 2,789 images."""
    report = recorded_report("inspect-libtorch_cuda.json")
    expected = cuobjdump_archs((H200 / "cuobjdump-libtorch_cuda.txt").read_text())
    assert ours(report) == expected
    assert sum(expected.values()) == 2789
    assert {"sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"} <= set(report.sass_archs)
    assert report.ptx_archs == () and report.cuda_runtime == "13" and report.cxx11_abi is True
