"""Facets: arch semantics, arch lists, wheel names, build archs and the trust order."""

from __future__ import annotations

import pytest

from envbuilder.abi.facets import (
    GpuArch,
    WheelName,
    build_archs,
    code_runs_on,
    coverage,
    layered,
    parse_arch_list,
    wheel_name_facets,
)
from envbuilder.knowledge import load_knowledge
from envbuilder.lock.model import Facets

K = load_knowledge()


@pytest.mark.parametrize("text, expected", [
    ("sm_120", GpuArch(12, 0)), ("sm_120a", GpuArch(12, 0, "a")), ("compute_90", GpuArch(9, 0)),
    ("sm_100f", GpuArch(10, 0, "f")), ("12.0a", GpuArch(12, 0, "a")), ("120", GpuArch(12, 0)),
    ("8.6", GpuArch(8, 6)), ("sm_121", GpuArch(12, 1)), ("SM_90A", GpuArch(9, 0, "a")),
])
def test_arch_parse(text, expected):
    assert GpuArch.parse(text) == expected


@pytest.mark.parametrize("text", ["", "sm_", "gfx90a", "sm_9", "12.0x"])
def test_arch_parse_rejects(text):
    with pytest.raises(ValueError, match="not a GPU arch"):
        GpuArch.parse(text)


# (code, device, ptx, runs): the Blackwell compatibility guide
RUNS = [
    ("sm_120", "sm_120", False, True),
    ("sm_120", "sm_121", False, True),     # same major, higher minor
    ("sm_121", "sm_120", False, False),    # lower minor device
    ("sm_120a", "sm_120", False, True),
    ("sm_120a", "sm_121", False, False),   # arch-specific: exact only
    ("sm_120f", "sm_121", False, True),    # family: same major, >= minor
    ("sm_100", "sm_120", False, False),    # different major SASS never runs
    ("sm_100a", "sm_120", False, False),
    ("sm_90", "sm_120", True, True),       # PTX JITs forward
    ("sm_120", "sm_100", True, False),     # not backward
    ("sm_100a", "sm_120", True, False),    # arch-specific PTX is not forward compatible
    ("sm_100f", "sm_120", True, False),    # family PTX stays in its family
    ("sm_100f", "sm_103", True, True),
]


@pytest.mark.parametrize("code, device, ptx, runs", RUNS)
def test_code_runs_on(code, device, ptx, runs):
    assert code_runs_on(GpuArch.parse(code), GpuArch.parse(device), ptx=ptx) is runs


def test_coverage_prefers_sass_and_names_the_arch():
    device = GpuArch.parse("sm_120")
    assert coverage(["sm_90", "sm_120a"], ["compute_90"], device).via == "sass"
    assert coverage(["sm_90", "sm_120a"], ["compute_90"], device).by == "sm_120a"
    ptx = coverage(["sm_90"], ["compute_80", "compute_90"], device)
    assert (ptx.via, ptx.by) == ("ptx", "compute_90")
    assert not coverage(["sm_80", "sm_90", "sm_100a"], [], device).covered


@pytest.mark.parametrize("value, sass, ptx", [
    ("80;90;100;120", ("sm_80", "sm_90", "sm_100", "sm_120"), ()),
    ("8.0 9.0a 12.0+PTX", ("sm_80", "sm_90a", "sm_120"), ("compute_120",)),
    ("sm_120a", ("sm_120a",), ()),
])
def test_parse_arch_list(value, sass, ptx):
    assert parse_arch_list(value) == (sass, ptx)


def test_wheel_name_flash_attn_convention():
    facets = wheel_name_facets("flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl", K)
    assert (facets.torch, facets.cuda, facets.cxx11_abi, facets.python_abi) == ("2.8", "12", True, "cp312")
    assert facets.evidence == "wheel-name"
    old_abi = wheel_name_facets("flash_attn-2.8.3+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl", K)
    assert old_abi.cxx11_abi is False and old_abi.torch == "2.6"


def test_wheel_name_torch_local_and_abi3():
    assert wheel_name_facets("torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl", K).cuda == "13.0"
    assert wheel_name_facets("sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl", K).python_abi == "abi3"
    assert wheel_name_facets("tqdm-4.67.1-py3-none-any.whl", K) is None
    assert WheelName.parse("tqdm-4.67.1-py3-none-any.whl").pure
    assert not WheelName.parse("torch-2.10.0-3-cp312-cp312-manylinux_2_28_x86_64.whl").pure


def test_build_archs_narrowed_by_env_and_toolkit():
    fact = K.binary("flash-attn", "2.8.3")
    assert build_archs(fact, "12.8", {}, K) == (("sm_80", "sm_90", "sm_100", "sm_120"), ())
    assert build_archs(fact, "12.8", {"FLASH_ATTN_CUDA_ARCHS": "120"}, K) == (("sm_120",), ())
    # flash-attn's setup.py ignores archs it has no kernels for
    assert build_archs(fact, "12.8", {"FLASH_ATTN_CUDA_ARCHS": "86;120"}, K) == (("sm_120",), ())
    # a toolkit older than the arch cannot compile it (sm_120 first in CUDA 12.8)
    assert build_archs(None, "12.6", {"TORCH_CUDA_ARCH_LIST": "9.0;12.0+PTX"}, K) == (("sm_90",), ())


def test_layered_trust_order():
    name = Facets(torch="2.8", cuda="12", cxx11_abi=True, python_abi="cp312", evidence="wheel-name")
    knowledge = Facets(cuda="12.9", sass=("sm_90",), evidence="knowledge")
    binary = Facets(cuda="12.8", cxx11_abi=False, sass=("sm_120a",), ptx=("compute_120a",), evidence="binary")
    merged = layered(name, knowledge, binary)
    assert merged == Facets(torch="2.8", cuda="12.8", cxx11_abi=False, python_abi="cp312",
                            sass=("sm_120a",), ptx=("compute_120a",), evidence="binary")
    # a major-only CUDA from a more trusted source does not erase a known minor
    assert layered(Facets(cuda="12.9"), Facets(cuda="12")).cuda == "12.9"
    assert layered(None, None) is None
