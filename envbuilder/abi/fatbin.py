"""Reader for the CUDA fat binaries that nvcc embeds in `.nv_fatbin` sections.

Why our own reader: the arch list of every kernel in a wheel decides whether it can run on the
target GPU, and the only official tool (cuobjdump) is a native binary that is not everywhere.
Only the container and entry headers are read, never the (often compressed) payloads, so a
1 GB section costs a few thousand small reads.

Layout (little-endian), as found by reading nvcc 12.x/13.x output and checked against
cuobjdump in the tests:

    container header, 16 bytes:  u32 magic 0xBA55ED50, u16 version, u16 header_size, u64 body_size
    entry header (>= 64 bytes):  u16 kind (1 PTX, 2 ELF/cubin, 4 LTO IR), u16 version,
                                 u32 header_size, u64 payload_size, u32 compressed_size,
                                 u32 _, u16 minor, u16 major (PTX ISA version for PTX),
                                 u32 sm (90, 100, 120 ...), u32 name_offset, u32 name_len,
                                 u64 flags, u64 _, u64 uncompressed_size
    flags: 0x1 64-bit, 0x10 linux, 0x2000 LZ4, 0x8000 zstd,
           0x100000 arch-specific (`a`), 0x200000 family-specific (`f`)

Not every fat binary lives in `.nv_fatbin`: libraries that load their kernels themselves
(cuModuleLoadData) keep the containers in ordinary data sections. cuFFT 11.3.3.83 has a 400-byte
`.nv_fatbin` (one sm_52 image) and 23,532 containers in its 270 MB `.ldata`; cuobjdump, which reads
only `.nv_fatbin`, lists the sm_52 image alone. `embedded_entries` finds those containers.
"""

from __future__ import annotations

import re
import struct
from collections import Counter
from dataclasses import dataclass
from typing import BinaryIO, Iterator

CONTAINER_MAGIC = 0xBA55ED50
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")

KIND_NAMES = {1: "ptx", 2: "sass", 4: "ltoir"}
FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY_SPECIFIC = 0x200000

# nvcc writes this banner into every cubin it links; it is the only record of the exact toolkit.
_NVCC_BANNER = re.compile(rb"Cuda compilation tools, release (\d+\.\d+), V(\d+\.\d+\.\d+)")
_BANNER_SCAN_LIMIT = 1 << 20
_SCAN_CHUNK = 8 << 20


class FatbinError(ValueError):
    """The section does not hold a well-formed fat binary."""


@dataclass(frozen=True)
class FatbinEntry:
    """One embedded image: a cubin (SASS for one arch), PTX text, or LTO IR."""

    container: int
    kind: str
    arch: str
    compression: str | None
    ptx_isa: str | None
    payload_offset: int
    payload_size: int


def arch_name(kind: str, sm: int, flags: int) -> str:
    """`sm_90a` for SASS, `compute_120f` for PTX: the suffix decides where the code may run."""
    suffix = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY_SPECIFIC else ""
    prefix = "sm" if kind == "sass" else "compute"
    return f"{prefix}_{sm}{suffix}"


def arch_sort_key(arch: str) -> tuple[int, str]:
    """Numeric order (sm_80 < sm_100), plain before `a`/`f` variants of the same number."""
    m = re.match(r"^[a-z]+_(\d+)([a-z]?)$", arch)
    return (int(m.group(1)), m.group(2)) if m else (1 << 30, arch)


def _compression(flags: int) -> str | None:
    if flags & FLAG_ZSTD:
        return "zstd"
    if flags & FLAG_LZ4:
        return "lz4"
    return None


def _read_exact(stream: BinaryIO, offset: int, size: int) -> bytes:
    stream.seek(offset)
    data = stream.read(size)
    if len(data) != size:
        raise FatbinError(f"truncated fat binary at offset {offset:#x}")
    return data


def _entries_of(stream: BinaryIO, index: int, start: int, end: int) -> Iterator[FatbinEntry]:
    pos = start
    while pos + _ENTRY.size <= end:
        (kind, _ver, hsize, psize, _csize, _u, minor, major, sm, _no, _nl, flags, _z, _usize) = (
            _ENTRY.unpack(_read_exact(stream, pos, _ENTRY.size))
        )
        if hsize < _ENTRY.size or pos + hsize + psize > end:
            raise FatbinError(f"bad fat binary entry header at offset {pos:#x}")
        kind_name = KIND_NAMES.get(kind, f"kind{kind}")
        yield FatbinEntry(
            container=index,
            kind=kind_name,
            arch=arch_name(kind_name, sm, flags),
            compression=_compression(flags),
            ptx_isa=f"{major}.{minor}" if kind_name == "ptx" else None,
            payload_offset=pos + hsize,
            payload_size=psize,
        )
        pos += hsize + psize


def read_entries(stream: BinaryIO, offset: int, size: int) -> list[FatbinEntry]:
    """Every entry of every container in the `size` bytes at `offset` (a `.nv_fatbin` section)."""
    entries: list[FatbinEntry] = []
    pos, end, index = offset, offset + size, 0
    while pos + _CONTAINER.size <= end:
        magic, _ver, hsize, body = _CONTAINER.unpack(_read_exact(stream, pos, _CONTAINER.size))
        if magic != CONTAINER_MAGIC:
            if magic == 0:  # alignment padding between containers
                pos += 8
                continue
            raise FatbinError(f"no fat binary magic at offset {pos:#x}")
        entries.extend(_entries_of(stream, index, pos + hsize, pos + hsize + body))
        pos += hsize + body
        pos += -pos % 8
        index += 1
    return entries


def _container_at(stream: BinaryIO, pos: int, end: int, index: int) -> tuple[int, list[FatbinEntry]] | None:
    """The container whose magic is at `pos` and its end, or None when the bytes only look like one."""
    _magic, version, hsize, body = _CONTAINER.unpack(_read_exact(stream, pos, _CONTAINER.size))
    if version != 1 or hsize != _CONTAINER.size or body < _ENTRY.size or pos + hsize + body > end:
        return None
    try:
        entries = list(_entries_of(stream, index, pos + hsize, pos + hsize + body))
    except FatbinError:
        return None
    if not entries:
        return None
    return pos + hsize + body, entries


def embedded_entries(stream: BinaryIO, offset: int, size: int, first_index: int = 0) -> list[FatbinEntry]:
    """Entries of the fat binaries stored inside an ordinary data section (`.ldata`, `.rodata`...).

    The section is scanned for the container magic at 8-byte alignment (nvcc aligns containers so)
    and a hit counts only when its header and every entry header are consistent, so a stray
    magic-looking word in unrelated data is skipped instead of failing the whole file.
    """
    magic = struct.pack("<I", CONTAINER_MAGIC)
    entries: list[FatbinEntry] = []
    end, index, base = offset + size, first_index, offset
    while base < end:
        stream.seek(base)
        chunk = stream.read(min(_SCAN_CHUNK, end - base))
        if len(chunk) < _CONTAINER.size:
            break
        at = chunk.find(magic)
        while at >= 0:
            pos = base + at
            hit = _container_at(stream, pos, end, index) if pos % 8 == 0 and pos + _CONTAINER.size <= end else None
            if hit is None:
                at = chunk.find(magic, at + 1)
                continue
            next_pos, more = hit
            entries.extend(more)
            index += 1
            at = chunk.find(magic, next_pos - base) if next_pos - base < len(chunk) else -1
            if at < 0 and next_pos - base >= len(chunk):
                break
        else:
            base += len(chunk) - 3  # a magic split across two chunks is found in the next one
            continue
        base = next_pos
    return entries


def all_entries(stream: BinaryIO, fatbin: tuple[int, int] | None,
                data_spans: tuple[tuple[int, int], ...] = ()) -> list[FatbinEntry]:
    """The `.nv_fatbin` entries followed by those embedded in the data sections."""
    entries = read_entries(stream, *fatbin) if fatbin is not None else []
    for offset, size in data_spans:
        first = max((e.container for e in entries), default=-1) + 1
        entries.extend(embedded_entries(stream, offset, size, first))
    return entries


def toolkit_versions(stream: BinaryIO, entries: list[FatbinEntry], max_scans: int = 64) -> list[str]:
    """nvcc versions ("12.9.86") named by the first uncompressed cubins that carry the banner.

    Only some cubins carry it (CUDA 12.9 writes it into sm_100+ images, not sm_90 ones), and one
    library is nearly always built by one nvcc, so the scan stops at the first hit; scanning a
    torch-sized section in full would read a gigabyte for nothing.
    """
    found: set[str] = set()
    candidates = [e for e in entries if e.kind == "sass" and not e.compression]
    for entry in candidates[:max_scans]:
        payload = _read_exact(stream, entry.payload_offset, min(entry.payload_size, _BANNER_SCAN_LIMIT))
        found.update(m.group(2).decode() for m in _NVCC_BANNER.finditer(payload))
        if found:
            break
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def arch_counts(entries: list[FatbinEntry]) -> Counter[tuple[str, str]]:
    """How many images each (kind, arch) has: the compact summary a 20,000-entry torch needs."""
    return Counter((e.kind, e.arch) for e in entries)
