"""`envbuilder inspect` on real binaries compiled here with gcc and nvcc, checked against cuobjdump."""

from __future__ import annotations

import glob
import io
import json
import os
import re
import shutil
import subprocess
import struct
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from envbuilder.abi import cache
from envbuilder.abi.elf import read_elf
from envbuilder.abi.fatbin import CONTAINER_MAGIC, embedded_entries, read_entries
from envbuilder.abi.inspect import inspect_binary, inspect_path, inspect_wheel, inspect_wheel_path
from envbuilder.abi.facets import linkage_facets
from envbuilder.abi.link import LinkPackage, arch_findings
from envbuilder.abi.linkage import WheelLinkage, summarize_elf
from envbuilder.abi.loaders import optional_module
from envbuilder.abi.symbols import mangled_namespace
from envbuilder.errors import BadInput
from tests.conftest import needs_tool, require_tool

NVCC = shutil.which("nvcc")
NVCC_HOW = "not on PATH (.ci/parts/20-cuda-tools.sh puts /usr/local/cuda/bin on it)"
GXX_HOW = "apt-get install g++ (.ci/parts/20-cuda-tools.sh does)"
CUOBJDUMP_HOW = "pip install nvidia-cuda-cuobjdump (.ci/parts/20-cuda-tools.sh does)"
needs_nvcc = needs_tool("nvcc", NVCC, NVCC_HOW)
needs_gxx = needs_tool("g++", shutil.which("g++"), GXX_HOW)


def find_cuobjdump() -> str | None:
    """cuobjdump on PATH, else the one the PyPI package nvidia-cuda-cuobjdump puts in site-packages."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    roots = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    hits = sorted(h for root in roots for h in glob.glob(os.path.join(root, "nvidia", "*", "bin", "cuobjdump")))
    return hits[0] if hits else None


CUOBJDUMP = find_cuobjdump()

KERNEL = r"""
__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
extern "C" void launch_axpy(float a, const float *x, float *y, int n) {
  axpy<<<(n + 255) / 256, 256>>>(a, x, y, n);
}
"""

C10_DECLS = r"""
#include <string>
#include <cstdint>
namespace c10 {
struct SourceLocation { const char *function; const char *file; unsigned line; };
class Error { public: Error(SourceLocation loc, std::string msg); std::string msg_; };
namespace cuda { int current_device(); }
}
namespace at { struct Tensor { void *impl; }; int64_t numel(const Tensor &t); }
"""

C10_STUB = C10_DECLS + r"""
c10::Error::Error(SourceLocation, std::string msg) : msg_(msg) {}
int c10::cuda::current_device() { return 0; }
int64_t at::numel(const at::Tensor &) { return 0; }
"""

CONSUMER = C10_DECLS + r"""
extern "C" int ext_entry(const at::Tensor *t) {
  if (!t) throw c10::Error({"ext_entry", __FILE__, __LINE__}, "null tensor");
  return c10::cuda::current_device() + static_cast<int>(at::numel(*t));
}
"""

# gencode sets -> the SASS and PTX archs the reader must report, suffixes kept.
GENCODES = {
    "sm_90": (["arch=compute_90,code=sm_90"], ["sm_90"], []),
    "sm_90a": (["arch=compute_90a,code=sm_90a"], ["sm_90a"], []),
    "sm_120+ptx": (
        ["arch=compute_120,code=sm_120", "arch=compute_120,code=compute_120"],
        ["sm_120"],
        ["compute_120"],
    ),
    "mixed": (
        [
            "arch=compute_90,code=sm_90",
            "arch=compute_90a,code=sm_90a",
            "arch=compute_100f,code=sm_100f",
            "arch=compute_120a,code=sm_120a",
            "arch=compute_100a,code=compute_100a",
            "arch=compute_80,code=compute_80",
        ],
        ["sm_90", "sm_90a", "sm_100f", "sm_120a"],
        ["compute_80", "compute_100a"],
    ),
    "family": (
        ["arch=compute_120f,code=sm_120f", "arch=compute_120f,code=compute_120f", "arch=compute_103f,code=sm_103f"],
        ["sm_103f", "sm_120f"],
        ["compute_120f"],
    ),
}


def run(*cmd: str, cwd: Path) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stderr}"
    return done.stdout


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("inspect-build")


@pytest.fixture(scope="module")
def nvcc_release() -> str:
    require_tool("nvcc", NVCC, NVCC_HOW)
    out = subprocess.run([NVCC, "--version"], capture_output=True, text=True).stdout
    return re.search(r"V(\d+\.\d+\.\d+)", out).group(1)


def nvcc_so(build_dir: Path, name: str, gencodes: list[str], extra: tuple[str, ...] = ()) -> Path:
    src = build_dir / f"{name}.cu"
    if not src.exists():
        src.write_text(KERNEL)
    out = build_dir / f"{name}.so"
    args = [a for g in gencodes for a in ("-gencode", g)]
    run(NVCC, "-shared", "-Xcompiler", "-fPIC", *args, *extra, "-o", str(out), str(src), cwd=build_dir)
    return out


@pytest.fixture(scope="module")
def c10_libs(build_dir) -> dict[str, Path]:
    """A stub libc10.so and an extension linked against it, in the cxx11 and the old ABI."""
    require_tool("g++", shutil.which("g++"), GXX_HOW)
    (build_dir / "c10.cpp").write_text(C10_STUB)
    (build_dir / "ext.cpp").write_text(CONSUMER)
    libs = {}
    for abi in ("1", "0"):
        lib_dir = build_dir / f"abi{abi}"
        lib_dir.mkdir()
        flag = f"-D_GLIBCXX_USE_CXX11_ABI={abi}"
        run("g++", flag, "-shared", "-fPIC", "-Wl,-soname,libc10.so", "-o", str(lib_dir / "libc10.so"),
            str(build_dir / "c10.cpp"), cwd=build_dir)
        run("g++", flag, "-shared", "-fPIC", "-o", str(lib_dir / "ext.so"), str(build_dir / "ext.cpp"),
            f"-L{lib_dir}", "-lc10", cwd=build_dir)
        libs[abi] = lib_dir
    return libs


def cuobjdump_list(path: Path) -> tuple[list[str], list[str]]:
    out = subprocess.run([CUOBJDUMP, "--list-elf", "--list-ptx", str(path)], capture_output=True, text=True).stdout
    elf = re.findall(r"^ELF file\s+\d+: .*\.(sm_\w+)\.cubin$", out, re.M)
    ptx = re.findall(r"^PTX file\s+\d+: .*\.(sm_\w+)\.ptx$", out, re.M)
    return elf, ptx


def as_cuobjdump_names(kind: str, arch: str) -> str:
    """cuobjdump names PTX `sm_120` (not compute_120) and drops `f` from cubin names only."""
    number = arch.split("_", 1)[1]
    if kind == "sass":
        return "sm_" + number.rstrip("f")
    return "sm_" + number


@needs_nvcc
@needs_tool("cuobjdump", CUOBJDUMP, CUOBJDUMP_HOW)
@pytest.mark.parametrize("case", sorted(GENCODES))
def test_fatbin_archs_match_cuobjdump_entry_for_entry(build_dir, case):
    gencodes, sass, ptx = GENCODES[case]
    so = nvcc_so(build_dir, f"k_{case.replace('+', '_')}", gencodes)

    report = inspect_binary(so)
    assert list(report.sass_archs) == sass
    assert list(report.ptx_archs) == ptx

    with so.open("rb") as stream:
        entries = read_entries(stream, *read_elf(stream).fatbin)
    ours_elf = [as_cuobjdump_names("sass", e.arch) for e in entries if e.kind == "sass"]
    ours_ptx = [as_cuobjdump_names("ptx", e.arch) for e in entries if e.kind == "ptx"]
    assert (ours_elf, ours_ptx) == cuobjdump_list(so)


@needs_nvcc
def test_nvcc_version_and_ptx_isa_come_from_the_fatbin(build_dir, nvcc_release):
    so = nvcc_so(build_dir, "k_ver", ["arch=compute_120,code=sm_120", "arch=compute_120,code=compute_120"])
    report = inspect_binary(so)
    assert report.nvcc_versions == (nvcc_release,)
    major = nvcc_release.split(".")[0]
    # PTX ISA 9.x comes with CUDA 13, 8.x with CUDA 12.
    assert report.ptx_isa and report.ptx_isa[0].split(".")[0] == {"13": "9", "12": "8"}[major]
    assert report.fatbin_containers >= 1
    assert all(img.compressed == img.count for img in report.fatbin if img.kind == "ptx") or major == "12"


@needs_gxx
def test_torch_consumer_symbols_grouped_by_provider(c10_libs):
    report = inspect_binary(c10_libs["1"] / "ext.so")
    assert "libc10.so" in report.needed
    assert report.torch_consumer
    c10 = report.provider("c10")
    assert c10.prefix == "_ZN3c10"
    assert "_ZN3c104cuda14current_deviceEv" in c10.symbols
    assert any(s.startswith("_ZN3c105ErrorC1ENS_14SourceLocationENSt7__cxx11") for s in c10.symbols)
    assert report.provider("aten").symbols == ("_ZN2at5numelERKNS_6TensorE",)
    assert report.cxx11_abi is True and report.cxx11_symbols == 1 and report.old_abi_symbols == 0
    assert report.glibc_max and report.glibc_max.startswith("GLIBC_2.")


@needs_gxx
def test_old_cxx_abi_is_recognised(c10_libs):
    report = inspect_binary(c10_libs["0"] / "ext.so")
    assert "_ZN3c105ErrorC1ENS_14SourceLocationESs" in report.provider("c10").symbols
    assert report.cxx11_abi is False and report.old_abi_symbols == 1


@needs_gxx
def test_stub_library_reports_its_soname_and_no_torch_needs(c10_libs):
    report = inspect_binary(c10_libs["1"] / "libc10.so")
    assert report.soname == "libc10.so"
    assert not report.torch_consumer
    assert report.defined_symbols >= 3
    assert report.sass_archs == () and report.fatbin == ()


@needs_nvcc
@needs_gxx
def test_cuda_extension_linked_to_stub_c10_and_shared_cudart(build_dir, c10_libs, nvcc_release):
    src = build_dir / "cuda_ext.cu"
    src.write_text(C10_DECLS + KERNEL + r"""
extern "C" int cuda_ext_entry(const at::Tensor *t) { return c10::cuda::current_device() + (int)at::numel(*t); }
""")
    lib_dir = c10_libs["1"]
    out = build_dir / "cuda_ext.so"
    run(NVCC, "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared", "-gencode", "arch=compute_90,code=sm_90",
        "-gencode", "arch=compute_90,code=compute_90", "-o", str(out), str(src), f"-L{lib_dir}", "-lc10",
        cwd=build_dir)
    report = inspect_binary(out)
    major = nvcc_release.split(".")[0]
    assert f"libcudart.so.{major}" in report.needed and report.cuda_runtime == major
    assert report.provider("cudart").count >= 2  # __cudaRegisterFatBinary, cudaLaunchKernel ...
    assert report.torch_consumer and report.cxx11_abi is None  # no torch symbol takes a std::string
    assert report.sass_archs == ("sm_90",) and report.ptx_archs == ("compute_90",)


def make_wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        zf.writestr("demo-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
        zf.writestr("demo-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp312-abi3-linux_x86_64\n")
        zf.writestr("demo-1.0.dist-info/RECORD", "")
    return path


@pytest.fixture(scope="module")
def wheel(build_dir, c10_libs) -> Path:
    require_tool("nvcc", NVCC, NVCC_HOW)
    cuda = nvcc_so(build_dir, "k_wheel", GENCODES["mixed"][0])
    return make_wheel(build_dir / "demo-1.0-cp312-abi3-linux_x86_64.whl", {
        "demo/ext.so": (c10_libs["1"] / "ext.so").read_bytes(),
        "demo/kernels.abi3.so": cuda.read_bytes(),
        "demo/libfoo.so.1": (c10_libs["1"] / "libc10.so").read_bytes(),
        "demo/linker-script.so": b"GROUP ( libfoo.so.1 )\n",
        "demo/__init__.py": b"",
    })


def test_wheel_read_from_a_file_object_without_installing(wheel):
    data = wheel.read_bytes()
    report = inspect_wheel(io.BytesIO(data), wheel.name)
    assert report.key.startswith("zipdir:")  # no local file, no sha256 given
    assert [b.path for b in report.binaries] == ["demo/ext.so", "demo/kernels.abi3.so", "demo/libfoo.so.1"]
    assert report.sass_archs == ("sm_90", "sm_90a", "sm_100f", "sm_120a")
    assert report.ptx_archs == ("compute_80", "compute_100a")
    assert report.torch_consumer and report.cxx11_abi is True
    assert "libc10.so" in report.needed

    local = inspect_wheel_path(wheel)
    assert local.key.startswith("sha256:") and local.binaries == report.binaries
    assert [b.path for b in inspect_path(wheel)] == [b.path for b in report.binaries]


def test_wheel_member_selection_reads_only_those_members(wheel):
    report = inspect_wheel(io.BytesIO(wheel.read_bytes()), wheel.name, members=["demo/kernels.abi3.so"])
    assert [b.path for b in report.binaries] == ["demo/kernels.abi3.so"] and report.key.startswith("part:")
    with pytest.raises(BadInput, match="no member named demo/missing.so"):
        inspect_wheel(io.BytesIO(wheel.read_bytes()), wheel.name, members=["demo/missing.so"])


def test_second_inspection_is_served_from_the_cache(wheel, monkeypatch):
    first = inspect_wheel_path(wheel)

    def boom(*_a, **_k):
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr("envbuilder.abi.inspect.inspect_stream", boom)
    assert inspect_wheel_path(wheel) == first
    with pytest.raises(AssertionError, match="cache should have answered"):
        inspect_wheel_path(wheel, use_cache=False)


def test_corrupt_or_foreign_cache_entries_are_recomputed(wheel):
    first = inspect_wheel_path(wheel)
    entry = cache._entry_path(first.key)
    entry.write_text("{not json")
    assert inspect_wheel_path(wheel) == first
    record = json.loads(entry.read_text())
    record["key"] = "sha256:" + "0" * 64  # an entry copied under the wrong name
    entry.write_text(json.dumps(record))
    assert inspect_wheel_path(wheel) == first
    assert json.loads(entry.read_text())["key"] == first.key


def test_not_an_elf_or_wheel_is_bad_input(tmp_path):
    text = tmp_path / "notes.so"
    text.write_text("hello")
    with pytest.raises(BadInput, match="notes.so: not an ELF file"):
        inspect_binary(text)
    broken = tmp_path / "broken.whl"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(BadInput, match="broken.whl: not a readable wheel"):
        inspect_path(broken)
    with pytest.raises(BadInput, match="no such file"):
        inspect_path(tmp_path / "absent.so")


@needs_nvcc
def test_damaged_fatbin_is_bad_input_not_a_traceback(build_dir, tmp_path):
    so = nvcc_so(build_dir, "k_dmg", ["arch=compute_90,code=sm_90"])
    data = bytearray(so.read_bytes())
    with so.open("rb") as stream:
        offset, _size = read_elf(stream).fatbin
    data[offset:offset + 4] = b"\x01\x02\x03\x04"
    damaged = tmp_path / "damaged.so"
    damaged.write_bytes(bytes(data))
    with pytest.raises(BadInput, match="damaged.so: unreadable .nv_fatbin section: no fat binary magic"):
        inspect_binary(damaged)


@pytest.mark.parametrize(
    "name, namespace",
    [
        ("_ZN3c105ErrorC1ENS_14SourceLocationESs", "c10"),
        ("_ZNK2at10TensorBase4sizeEl", "at"),
        ("_ZN5torch8autograd12VariableInfoC1Ev", "torch"),
        ("_ZTVN3c1011VariableHooksE", "c10"),
        ("_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE9_M_createERmm", "std"),
        ("_ZSt4cout", "std"),
        ("_Z6helperv", None),
        ("cudaLaunchKernel", None),
    ],
)
def test_mangled_namespace(name, namespace):
    assert mangled_namespace(name) == namespace


def envbuilder(*args: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra}
    return subprocess.run([sys.executable, "-m", "envbuilder", *args], capture_output=True, text=True, env=env)


def test_cli_prints_a_summary_and_json(wheel, tmp_path):
    env = {"ENVBUILDER_CACHE_DIR": str(tmp_path / "c"), "COLUMNS": "200"}
    text = envbuilder("inspect", str(wheel), env_extra=env)
    assert text.returncode == 0, text.stderr
    assert "SASS" in text.stdout and "sm_90 sm_90a sm_100f sm_120a" in text.stdout
    assert "c10 (_ZN3c10) 2" in text.stdout and "cxx11 ABI" in text.stdout
    as_json = envbuilder("inspect", "--json", str(wheel), env_extra=env)
    assert as_json.returncode == 0, as_json.stderr
    [item] = json.loads(as_json.stdout)
    assert item["kind"] == "wheel" and item["report"]["ptx_archs"] == ["compute_80", "compute_100a"]


def test_cli_bad_input_exits_2_without_traceback(tmp_path):
    missing = envbuilder("inspect", str(tmp_path / "nope.whl"), env_extra={"ENVBUILDER_CACHE_DIR": str(tmp_path), "COLUMNS": "300"})
    assert missing.returncode == 2
    assert "no such file" in missing.stderr and "Traceback" not in missing.stderr


EMBEDDING = r"""
// A library that loads its own kernels (cuModuleLoadData) keeps the fat binary in plain data, as
// cuFFT does in .ldata: only its one registered kernel sits in .nv_fatbin.
__asm__(".section .rodata\n.balign 8\n.globl own_kernels\nown_kernels:\n.incbin \"own.fatbin\"\n.previous\n");
__global__ void registered(float *y) { y[threadIdx.x] = 0; }
extern "C" void launch_registered(float *y) { registered<<<1, 32>>>(y); }
"""


@needs_nvcc
@needs_tool("cuobjdump", CUOBJDUMP, CUOBJDUMP_HOW)
def test_fat_binaries_embedded_in_data_sections_count_where_cuobjdump_sees_only_nv_fatbin(build_dir):
    work = build_dir / "embedded"
    work.mkdir()
    (work / "own.cu").write_text(KERNEL)
    run(NVCC, "-fatbin", "-Xfatbin=-compress-all", "-gencode", "arch=compute_90,code=[sm_90,compute_90]",
        "-o", "own.fatbin", "own.cu", cwd=work)
    (work / "lib.cu").write_text(EMBEDDING)
    run(NVCC, "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_80,code=sm_80",
        "-o", "libown.so", "lib.cu", cwd=work)

    elf, ptx = cuobjdump_list(work / "libown.so")
    assert (set(elf), ptx) == ({"sm_80"}, [])  # cuobjdump reads .nv_fatbin alone
    assert cuobjdump_list(work / "own.fatbin") == (["sm_90"], ["sm_90"])

    report = inspect_binary(work / "libown.so")
    assert list(report.sass_archs) == ["sm_80", "sm_90"]
    assert list(report.ptx_archs) == ["compute_90"]
    assert all(i.compressed == i.count for i in report.fatbin if i.arch.endswith("90"))

    with (work / "libown.so").open("rb") as stream:
        summary = summarize_elf(stream, "libown.so", "sha256:x", 0)
    assert summary.sass == ("sm_80", "sm_90") and summary.ptx == ("compute_90",)


def test_magic_looking_bytes_in_data_are_skipped_not_fatal(tmp_path):
    blob = io.BytesIO(b"\0" * 8 + struct.pack("<IHHQ", CONTAINER_MAGIC, 1, 16, 1 << 40) + b"\xff" * 64)
    assert embedded_entries(blob, 0, len(blob.getvalue())) == []


@needs_nvcc
def test_an_optional_extension_does_not_decide_where_its_package_runs(build_dir):
    """torchao 0.9.0 loads `_C` inside a try (loaders.yaml, sourced): an sm_80-only `_C` leaves the
    package's archs to its other files; the same file in a package without that fact still counts."""
    so = nvcc_so(build_dir, "k_optional", ["arch=compute_80,code=sm_80"])
    with so.open("rb") as stream:
        elf = summarize_elf(stream, "torchao/_C.abi3.so", "sha256:x", so.stat().st_size)
    wheel = WheelLinkage(filename="torchao-0.9.0-py3-none-any.whl", sha256="sha256:y", elfs=(elf,))

    assert linkage_facets(wheel, optional_module("torchao", "0.9.0")) is None
    assert linkage_facets(wheel, optional_module("other", "0.9.0")).sass == ("sm_80",)
    assert linkage_facets(wheel, optional_module("torchao", "0.10.0")).sass == ("sm_80",)  # not sourced there
    package = LinkPackage(name="torchao", version="0.9.0", linkage=wheel)
    [finding] = arch_findings(package, "sm_120")
    assert (finding.severity, finding.file) == ("warning", "torchao/_C.abi3.so")
