"""Inspect wheels and shared objects: what they need, which ABI they assume, which GPUs they run on.

Why: the ABI facets of a lock are only trustworthy when they come from the bytes that will be
installed. A wheel is read through any seekable file object (a local file, or a remote file that
fetches byte ranges), so only the `.so` members are transferred, never installed; results are
cached by artifact hash so the second look costs nothing.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
import zipfile
from pathlib import Path
from typing import BinaryIO, Iterable

from envbuilder.abi import cache
from envbuilder.abi.elf import ElfFacts, NotElf, read_elf
from envbuilder.abi.fatbin import FatbinError, all_entries, arch_counts, arch_sort_key, toolkit_versions
from envbuilder.abi.report import (
    ArchImages,
    BinaryReport,
    ProviderSymbols,
    WheelReport,
    sorted_archs,
    summarize_wheel,
)
from envbuilder.abi.symbols import (
    PROVIDER_PREFIXES,
    TORCH_PROVIDERS,
    cxx11_abi_evidence,
    group_by_provider,
    max_version,
)
from envbuilder.errors import BadInput

_SHARED_OBJECT = re.compile(r"\.so(\.\d+)*$")
_CUDART = re.compile(r"^libcudart\.so\.(\d+)")
_TORCH_LIBS = re.compile(r"^lib(c10|torch)[\w]*\.so")
_CHUNK = 8 << 20


def _image_order(item) -> tuple:
    (kind, arch), _count = item
    return kind != "sass", arch_sort_key(arch)


def _fatbin_summary(stream: BinaryIO, facts: ElfFacts) -> dict:
    entries = all_entries(stream, facts.fatbin, facts.data_spans)
    if not entries:
        return {}
    compressed = arch_counts([e for e in entries if e.compression])
    images = tuple(
        ArchImages(kind=kind, arch=arch, count=count, compressed=compressed[(kind, arch)])
        for (kind, arch), count in sorted(arch_counts(entries).items(), key=_image_order)
    )
    return {
        "fatbin_containers": len({e.container for e in entries}),
        "fatbin": images,
        "sass_archs": sorted_archs(e.arch for e in entries if e.kind == "sass"),
        "ptx_archs": sorted_archs(e.arch for e in entries if e.kind == "ptx"),
        "ptx_isa": tuple(sorted({e.ptx_isa for e in entries if e.ptx_isa})),
        "nvcc_versions": tuple(toolkit_versions(stream, entries)),
    }


def inspect_stream(stream: BinaryIO, path: str, sha256: str, size: int) -> BinaryReport:
    """Report on one ELF shared object already open as a seekable binary stream."""
    facts = read_elf(stream)
    groups = group_by_provider(facts.required)
    verdict, new, old = cxx11_abi_evidence(groups)
    cudart = next((m.group(1) for n in facts.needed if (m := _CUDART.match(n))), None)
    try:
        fatbin = _fatbin_summary(stream, facts)
    except FatbinError as exc:
        raise BadInput(f"{path}: unreadable .nv_fatbin section: {exc}") from exc
    return BinaryReport(
        path=path,
        sha256=sha256,
        size=size,
        machine=facts.machine,
        soname=facts.soname,
        needed=facts.needed,
        rpath=facts.rpath,
        requires=tuple(
            ProviderSymbols(provider=p, prefix=PROVIDER_PREFIXES.get(p), count=len(names), symbols=tuple(names))
            for p, names in groups.items()
        ),
        defined_symbols=facts.defined_count,
        glibc_max=max_version(facts.required, "GLIBC_"),
        glibcxx_max=max_version(facts.required, "GLIBCXX_"),
        cxxabi_max=max_version(facts.required, "CXXABI_"),
        cxx11_abi=verdict,
        cxx11_symbols=new,
        old_abi_symbols=old,
        torch_consumer=bool(TORCH_PROVIDERS & groups.keys()) or any(_TORCH_LIBS.match(n) for n in facts.needed),
        cuda_runtime=cudart,
        **fatbin,
    )


def inspect_binary(path: Path, use_cache: bool = True) -> BinaryReport:
    """Report on a `.so` file on disk, cached by its sha256."""
    with _open(path) as stream:
        digest = cache.file_sha256(stream)
        size = path.stat().st_size

        def compute() -> BinaryReport:
            try:
                return inspect_stream(stream, path.name, digest, size)
            except NotElf as exc:
                raise BadInput(f"{path}: {exc}; expected a wheel (.whl) or a shared object (.so)") from exc

        return cache.cached(cache.sha256_key(digest), "binary", compute) if use_cache else compute()


def _member_report(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> BinaryReport | None:
    """Decompress one member to a temporary file (ELF needs random access) and inspect it."""
    digest = hashlib.sha256()
    with tempfile.TemporaryFile() as tmp, zf.open(info) as member:
        while block := member.read(_CHUNK):
            digest.update(block)
            tmp.write(block)
        try:
            return inspect_stream(tmp, info.filename, digest.hexdigest(), info.file_size)
        except NotElf:
            return None


def _chosen_members(zf: zipfile.ZipFile, name: str, members: Iterable[str] | None) -> list[zipfile.ZipInfo]:
    if members is None:
        return [i for i in zf.infolist() if not i.is_dir() and _SHARED_OBJECT.search(i.filename)]
    wanted = set(members)
    chosen = [i for i in zf.infolist() if i.filename in wanted]
    missing = wanted - {i.filename for i in chosen}
    if missing:
        raise BadInput(f"{name}: no member named {', '.join(sorted(missing))}")
    return chosen


def _zipdir_key(zf: zipfile.ZipFile) -> str:
    """Content identity from the member table (names, CRC-32s, sizes) when no sha256 is known."""
    table = "\n".join(f"{i.filename}\t{i.CRC:08x}\t{i.file_size}\t{i.compress_size}" for i in zf.infolist())
    return "zipdir:" + hashlib.sha256(table.encode()).hexdigest()


def inspect_wheel(
    fileobj: BinaryIO,
    name: str,
    sha256: str | None = None,
    use_cache: bool = True,
    members: Iterable[str] | None = None,
) -> WheelReport:
    """Report on the shared objects in a wheel read from any seekable file object.

    `sha256` (from a lock or the index) is the cache key; without it a local file is hashed and
    a remote one is keyed by its zip member table, so nothing beyond the central directory is
    fetched on a cache hit. `members` limits the work to those paths (a 536 MB wheel's one
    interesting library); the partial report is cached under its own key.
    """
    try:
        zf = zipfile.ZipFile(fileobj)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BadInput(f"{name}: not a readable wheel (zip) file: {exc}") from exc
    with zf:
        chosen = _chosen_members(zf, name, members)

        if sha256:
            key = cache.sha256_key(sha256)
        elif _is_local(fileobj):
            key = cache.sha256_key(cache.file_sha256(fileobj))
        else:
            key = _zipdir_key(zf)
        if members is not None:
            selection = "\n".join([key, *sorted(i.filename for i in chosen)])
            key = "part:" + hashlib.sha256(selection.encode()).hexdigest()

        def compute() -> WheelReport:
            reports = tuple(r for i in chosen if (r := _member_report(zf, i)) is not None)
            return summarize_wheel(name, key, reports)

        return cache.cached(key, "wheel", compute) if use_cache else compute()


def _is_local(fileobj: BinaryIO) -> bool:
    try:
        fileobj.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


def _open(path: Path) -> BinaryIO:
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory; expected a wheel (.whl) or a shared object (.so)") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror}") from None


def is_wheel(path: Path) -> bool:
    if path.suffix == ".whl":
        return True
    with _open(path) as stream:
        return stream.read(4) == b"PK\x03\x04"


def inspect_path(path: Path | str, use_cache: bool = True) -> list[BinaryReport]:
    """Every binary in a wheel, or the one shared object at `path`."""
    path = Path(path)
    if is_wheel(path):
        with _open(path) as stream:
            return list(inspect_wheel(stream, path.name, use_cache=use_cache).binaries)
    return [inspect_binary(path, use_cache=use_cache)]


def inspect_wheel_path(path: Path | str, use_cache: bool = True) -> WheelReport:
    path = Path(path)
    with _open(path) as stream:
        return inspect_wheel(stream, path.name, use_cache=use_cache)


__all__ = [
    "BinaryReport",
    "WheelReport",
    "inspect_binary",
    "inspect_path",
    "inspect_stream",
    "inspect_wheel",
    "inspect_wheel_path",
    "is_wheel",
]
