"""Group a binary's required symbols by the library that must provide them.

Why: "needs 412 symbols from c10" is what tells a torch consumer from a plain CUDA library, and
the std::__cxx11 tag inside those symbols is the binary's own word on its C++ ABI. No demangler
is needed: the first namespace of an Itanium-mangled name, the symbol version, or a well-known C
prefix names the provider.
"""

from __future__ import annotations

import re
from collections import defaultdict

from envbuilder.abi.elf import RequiredSymbol

# First namespace of a mangled name -> provider. Providers that ship inside torch come first.
NAMESPACE_PROVIDERS = {
    "c10": "c10",
    "c10d": "c10d",
    "at": "aten",
    "torch": "torch",
    "caffe2": "caffe2",
    "std": "libstdc++",
    "__gnu_cxx": "libstdc++",
    "__cxxabiv1": "libstdc++",
    "pybind11": "pybind11",
}
TORCH_PROVIDERS = frozenset({"c10", "c10d", "aten", "torch", "caffe2"})
# The mangled prefix each torch provider's symbols start with, for the report.
PROVIDER_PREFIXES = {"c10": "_ZN3c10", "c10d": "_ZN4c10d", "aten": "_ZN2at", "torch": "_ZN5torch", "caffe2": "_ZN6caffe2"}

# Unversioned C symbols: longest prefix wins.
C_PREFIXES = (
    ("__cudaRegister", "cudart"), ("__cudaPushCallConfiguration", "cudart"),
    ("__cudaPopCallConfiguration", "cudart"), ("__cudaUnregister", "cudart"),
    ("__cudaInitModule", "cudart"), ("cudart", "cudart"), ("cuda", "cudart"),
    ("cublasLt", "cublasLt"), ("cublas", "cublas"), ("cudnn", "cudnn"), ("cufft", "cufft"),
    ("curand", "curand"), ("cusparse", "cusparse"), ("cusolver", "cusolver"), ("nccl", "nccl"),
    ("nvrtc", "nvrtc"), ("nvJitLink", "nvjitlink"), ("nvtx", "nvtx"), ("numa_", "numa"),
    ("_Py", "python"), ("Py", "python"), ("__cxa_", "libstdc++"), ("__gxx_", "libstdc++"),
)
_DRIVER_API = re.compile(r"^cu[A-Z]")

# Library file of a symbol version -> provider (`libcudart.so.12` -> cudart).
_GLIBC_FILES = re.compile(r"^(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux[-\w]*)\.so")
_LIB_FILE = re.compile(r"^lib([\w+\-]+?)(?:\.so.*)?$")

_SPECIAL = re.compile(r"^_Z(?:T[VTIS]|GV|GR)")
_SOURCE_NAME = re.compile(r"^(\d+)")
_NESTED_QUALS = re.compile(r"^N[rVK]*[RO]?")

CXX11_MARKERS = ("St7__cxx11", "B5cxx11")
_OLD_ABI_STRING = re.compile(r"(?:RK|PK|[EKRPI])Ss(?=[A-Z_]|$)|(?<!7__cxx11)12basic_stringIcSt11char_traits")


def mangled_namespace(name: str) -> str | None:
    """`_ZN3c105Error...` -> 'c10'; `_ZNSt...` -> 'std'; None for unscoped or non-C++ names."""
    if not name.startswith("_Z"):
        return None
    rest = _SPECIAL.sub("_Z", name)[2:]
    nested = _NESTED_QUALS.match(rest)
    if nested and nested.end():
        rest = rest[nested.end():]
    if rest[:2] in ("St", "Ss", "Sa", "Sb", "Si", "So", "Sd"):
        return "std"
    match = _SOURCE_NAME.match(rest) if nested and nested.end() else None
    if not match:
        return None
    start = match.end()
    return rest[start : start + int(match.group(1))] or None


def _provider_from_file(version_file: str) -> str:
    if _GLIBC_FILES.match(version_file):
        return "glibc"
    if version_file.startswith("libstdc++"):
        return "libstdc++"
    if version_file.startswith("libgcc_s"):
        return "libgcc"
    match = _LIB_FILE.match(version_file)
    return match.group(1) if match else version_file


def provider_of(symbol: RequiredSymbol) -> str:
    """Which library must define this symbol; 'other' when nothing in the name says."""
    namespace = mangled_namespace(symbol.name)
    if namespace in NAMESPACE_PROVIDERS:
        return NAMESPACE_PROVIDERS[namespace]
    if symbol.version_file:
        return _provider_from_file(symbol.version_file)
    if _DRIVER_API.match(symbol.name):
        return "cuda-driver"
    for prefix, provider in C_PREFIXES:
        if symbol.name.startswith(prefix):
            return provider
    return f"c++:{namespace}" if namespace else "other"


def group_by_provider(symbols: tuple[RequiredSymbol, ...]) -> dict[str, list[str]]:
    """provider -> sorted symbol names, providers ordered by how many symbols they owe."""
    groups: dict[str, set[str]] = defaultdict(set)
    for symbol in symbols:
        groups[provider_of(symbol)].add(symbol.name)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    return {provider: sorted(names) for provider, names in ordered}


def cxx11_abi_evidence(groups: dict[str, list[str]]) -> tuple[bool | None, int, int]:
    """(verdict, new-ABI symbol count, old-ABI symbol count) from the symbols torch must provide.

    Only torch-facing symbols count: a library may use std::string internally with either ABI
    and still not care, but a c10 symbol taking std::__cxx11::string binds it to cxx11 torch.
    """
    torch_names = [n for provider in TORCH_PROVIDERS for n in groups.get(provider, ())]
    new = sum(1 for n in torch_names if any(m in n for m in CXX11_MARKERS))
    old = sum(1 for n in torch_names if _OLD_ABI_STRING.search(n) and not any(m in n for m in CXX11_MARKERS))
    if new and not old:
        return True, new, old
    if old and not new:
        return False, new, old
    return None, new, old


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def max_version(symbols: tuple[RequiredSymbol, ...], prefix: str) -> str | None:
    """Highest symbol version with this prefix (GLIBC_, GLIBCXX_, CXXABI_): the oldest host it runs on."""
    versions = {s.version for s in symbols if s.version and s.version.startswith(prefix)}
    versions = {v for v in versions if re.fullmatch(re.escape(prefix) + r"[\d.]+", v)}
    return max(versions, key=_version_tuple) if versions else None
