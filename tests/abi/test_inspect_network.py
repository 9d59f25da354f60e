"""`inspect` on real published wheels, range-reading only the members it needs (-m network)."""

from __future__ import annotations

import os

import pytest

from envbuilder.abi.inspect import inspect_wheel
from envbuilder.index import IndexClient

pytestmark = pytest.mark.network


@pytest.fixture
def index(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    with IndexClient() as client:
        yield client


def wheel_file(index, project: str, filename: str):
    files = [f for f in index.files(project) if f.filename == filename]
    if not files:
        pytest.fail(f"{filename} is not on the configured index")
    return files[0]


def test_sgl_kernel_0_3_21_sm100_library_has_sm120a_sass(index):
    """Facts Q7.2: SASS sm_80, sm_89, sm_90, sm_90a, sm_100a, sm_120a, no PTX, nvcc 12.9, torch 2.9 C++ API."""
    file = wheel_file(index, "sgl-kernel", "sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl")
    remote = index.range_file(file)
    member = "sgl_kernel/sm100/common_ops.abi3.so"
    report = inspect_wheel(remote, file.filename, sha256=file.sha256, members=[member])
    [binary] = report.binaries
    assert binary.sass_archs == ("sm_80", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_120a")
    assert binary.ptx_archs == ()
    assert binary.nvcc_versions == ("12.9.86",) and binary.cuda_runtime == "12"
    assert {"libc10.so", "libtorch.so", "libcudart.so.12"} <= set(binary.needed)
    assert binary.torch_consumer and binary.cxx11_abi is True
    assert binary.provider("c10").count > 10 and binary.provider("aten").count > 10
    # Only the member (147 MB of a 536 MB wheel) and the zip directory were transferred.
    assert remote.bytes_fetched < 0.4 * file.size, remote.bytes_fetched

    again = index.range_file(file)
    assert inspect_wheel(again, file.filename, sha256=file.sha256, members=[member]) == report
    assert again.bytes_fetched < 1 << 20  # the cache answered after the zip directory


@pytest.mark.skipif(not os.environ.get("ENVBUILDER_LARGE_DOWNLOADS"),
                    reason="reads 672 MB of the torch wheel; set ENVBUILDER_LARGE_DOWNLOADS=1 to run it")
def test_torch_2_9_1_libtorch_cuda_archs(index):
    """libtorch_cuda.so is 671 MB compressed (1,023 MB raw), under the 1 GB budget for this test.

    Facts Q3.4: gencode sm_70 ... sm_120, SASS only, no PTX. The reader also finds the few
    arch-specific images (sm_90a, sm_100a, sm_120a) that single kernels add.
    """
    file = wheel_file(index, "torch", "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl")
    report = inspect_wheel(index.range_file(file), file.filename, sha256=file.sha256,
                           members=["torch/lib/libtorch_cuda.so"])
    [binary] = report.binaries
    assert {"sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"} <= set(binary.sass_archs)
    assert binary.ptx_archs == ()
    assert binary.cuda_runtime == "12" and binary.cxx11_abi is True
    assert binary.soname == "libtorch_cuda.so"
