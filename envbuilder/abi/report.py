"""Typed, JSON-serialisable results of binary inspection (the stable schema behind `--json`).

Why pydantic: the same models are the cache format and the JSON output, and extra=forbid plus
frozen make a stale or hand-edited cache entry fail validation instead of leaking wrong facets.
"""

from __future__ import annotations

from pydantic import Field

from envbuilder.abi.fatbin import arch_sort_key
from envbuilder.model import StrictModel

SCHEMA = 2  # 2: fat binaries embedded in data sections count


class ProviderSymbols(StrictModel):
    """Undefined symbols that one provider (c10, aten, cudart, glibc ...) must define."""

    provider: str
    prefix: str | None = None
    count: int
    symbols: tuple[str, ...]


class ArchImages(StrictModel):
    """How many fat-binary images exist for one kind (sass/ptx/ltoir) and arch."""

    kind: str
    arch: str
    count: int
    compressed: int = 0


class BinaryReport(StrictModel):
    path: str
    sha256: str
    size: int
    machine: str
    soname: str | None = None
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()
    requires: tuple[ProviderSymbols, ...] = ()
    defined_symbols: int = 0
    glibc_max: str | None = None
    glibcxx_max: str | None = None
    cxxabi_max: str | None = None
    cxx11_abi: bool | None = None
    cxx11_symbols: int = 0
    old_abi_symbols: int = 0
    torch_consumer: bool = False
    cuda_runtime: str | None = Field(None, description="CUDA major of the libcudart it links (DT_NEEDED)")
    nvcc_versions: tuple[str, ...] = ()
    ptx_isa: tuple[str, ...] = ()
    fatbin_containers: int = 0
    fatbin: tuple[ArchImages, ...] = ()
    sass_archs: tuple[str, ...] = ()
    ptx_archs: tuple[str, ...] = ()

    def provider(self, name: str) -> ProviderSymbols | None:
        return next((p for p in self.requires if p.provider == name), None)


class WheelReport(StrictModel):
    filename: str
    key: str = Field(description="cache key: sha256:<hex> of the wheel, or zipdir:<hex> of its member table")
    binaries: tuple[BinaryReport, ...] = ()
    sass_archs: tuple[str, ...] = ()
    ptx_archs: tuple[str, ...] = ()
    needed: tuple[str, ...] = ()
    nvcc_versions: tuple[str, ...] = ()
    torch_consumer: bool = False
    cxx11_abi: bool | None = None


class CacheRecord(StrictModel):
    """What is stored on disk: the key is repeated so a renamed or swapped file is caught."""

    format_version: int
    key: str
    binary: BinaryReport | None = None
    wheel: WheelReport | None = None


def sorted_archs(archs) -> tuple[str, ...]:
    return tuple(sorted(set(archs), key=arch_sort_key))


def summarize_wheel(filename: str, key: str, binaries: tuple[BinaryReport, ...]) -> WheelReport:
    """The wheel-level view: unions over its binaries, ABI verdict only when they agree."""
    verdicts = {b.cxx11_abi for b in binaries if b.cxx11_abi is not None}
    return WheelReport(
        filename=filename,
        key=key,
        binaries=binaries,
        sass_archs=sorted_archs(a for b in binaries for a in b.sass_archs),
        ptx_archs=sorted_archs(a for b in binaries for a in b.ptx_archs),
        needed=tuple(sorted({n for b in binaries for n in b.needed})),
        nvcc_versions=tuple(sorted({v for b in binaries for v in b.nvcc_versions})),
        torch_consumer=any(b.torch_consumer for b in binaries),
        cxx11_abi=verdicts.pop() if len(verdicts) == 1 else None,
    )
