"""What a shared object needs from the rest of the process: libraries, symbols, symbol versions.

Why: a prebuilt kernel that imports `_ZN3c10...` from a different torch than it was built for
fails at import time; reading the requirement from the binary is the only trustworthy source.
pyelftools reads the headers; the dynamic symbol table is unpacked with `struct` because a
torch-sized table has 100,000 entries and pyelftools' per-symbol objects are slow.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerDefSection, GNUVerNeedSection

ELF_MAGIC = b"\x7fELF"
_STB_LOCAL = 0
_STB_WEAK = 2


class NotElf(ValueError):
    """The bytes are not an ELF shared object we can read."""


@dataclass(frozen=True)
class RequiredSymbol:
    """An undefined dynamic symbol, with the version and the library that version names."""

    name: str
    version: str | None
    version_file: str | None
    weak: bool


@dataclass(frozen=True)
class ElfFacts:
    machine: str
    elf_class: int
    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    required: tuple[RequiredSymbol, ...]
    defined_count: int
    fatbin: tuple[int, int] | None  # (file offset, size) of .nv_fatbin
    comment: tuple[str, ...]
    runpath: tuple[str, ...] = ()  # DT_RUNPATH alone (`rpath` holds both, for the older report)
    defined: tuple[tuple[str, str | None], ...] = ()  # (name, version) of each exported symbol
    version_defs: tuple[str, ...] = ()  # .gnu.version_d names (GLIBCXX_3.4.32 ...), the SONAME entry excluded
    data_spans: tuple[tuple[int, int], ...] = ()  # (offset, size) of data sections that may embed fat binaries


_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR = 0x1, 0x2, 0x4
_FATBIN_MIN = 128


def _data_spans(elf: ELFFile) -> tuple[tuple[int, int], ...]:
    """Allocated, non-code PROGBITS sections other than `.nv_fatbin`: where run-time loaded kernels hide.

    Only files that use CUDA at all are worth scanning; `_uses_cuda` decides."""
    spans = []
    for section in elf.iter_sections():
        flags = section["sh_flags"]
        if (section["sh_type"] == "SHT_PROGBITS" and flags & _SHF_ALLOC and not flags & _SHF_EXECINSTR
                and section.name != ".nv_fatbin" and section["sh_size"] >= _FATBIN_MIN):
            spans.append((section["sh_offset"], section["sh_size"]))
    return tuple(spans)


def _dynamic_tags(elf: ELFFile) -> tuple[str | None, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    soname, needed, rpath, runpath = None, [], [], []
    for section in elf.iter_sections():
        if not isinstance(section, DynamicSection):
            continue
        for tag in section.iter_tags():
            if tag.entry.d_tag == "DT_NEEDED":
                needed.append(tag.needed)
            elif tag.entry.d_tag == "DT_SONAME":
                soname = tag.soname
            elif tag.entry.d_tag in ("DT_RPATH", "DT_RUNPATH"):
                value = tag.rpath if tag.entry.d_tag == "DT_RPATH" else tag.runpath
                rpath.extend(p for p in value.split(":") if p)
                if tag.entry.d_tag == "DT_RUNPATH":
                    runpath.extend(p for p in value.split(":") if p)
    return soname, tuple(needed), tuple(rpath), tuple(runpath)


def _version_needs(elf: ELFFile) -> dict[int, tuple[str, str]]:
    """versym index -> (version name, library file), from .gnu.version_r."""
    table: dict[int, tuple[str, str]] = {}
    for section in elf.iter_sections():
        if isinstance(section, GNUVerNeedSection):
            for verneed, auxiliaries in section.iter_versions():
                for aux in auxiliaries:
                    table[aux["vna_other"]] = (aux.name, verneed.name)
    return table


def _version_defs(elf: ELFFile) -> tuple[dict[int, str], tuple[str, ...]]:
    """versym index -> version name defined here, and the names (the file's own base entry left out)."""
    table: dict[int, str] = {}
    for section in elf.iter_sections():
        if isinstance(section, GNUVerDefSection):
            for verdef, auxiliaries in section.iter_versions():
                names = [aux.name for aux in auxiliaries]
                if names and not verdef["vd_flags"] & 1:  # VER_FLG_BASE names the file itself
                    table[verdef["vd_ndx"]] = names[0]
    return table, tuple(sorted(set(table.values())))


def _read_section(stream: BinaryIO, section) -> bytes:
    stream.seek(section["sh_offset"])
    return stream.read(section["sh_size"])


def _c_string(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset : end if end >= 0 else len(table)].decode("utf-8", "replace")


def _symbols(stream: BinaryIO, elf: ELFFile, keep_defined: bool = False
             ) -> tuple[tuple[RequiredSymbol, ...], int, list[tuple[str, str | None]]]:
    dynsym = elf.get_section_by_name(".dynsym")
    if dynsym is None or dynsym["sh_type"] != "SHT_DYNSYM":
        return (), 0, []
    names = _read_section(stream, elf.get_section(dynsym["sh_link"]))
    endian = "<" if elf.little_endian else ">"
    if elf.elfclass == 64:
        layout, pick = struct.Struct(endian + "IBBHQQ"), (lambda s: (s[0], s[1], s[3]))
    else:
        layout, pick = struct.Struct(endian + "IIIBBH"), (lambda s: (s[0], s[3], s[5]))
    raw = _read_section(stream, dynsym)
    raw = raw[: len(raw) - len(raw) % layout.size]
    versym_section = elf.get_section_by_name(".gnu.version")
    versyms = (
        struct.unpack(f"{endian}{versym_section['sh_size'] // 2}H", _read_section(stream, versym_section))
        if versym_section is not None
        else ()
    )
    needs = _version_needs(elf)
    defs = _version_defs(elf)[0] if keep_defined else {}
    required, defined, names_defined = [], 0, []
    for index, fields in enumerate(layout.iter_unpack(raw)):
        name_offset, info, shndx = pick(fields)
        if not name_offset:
            continue
        if shndx != 0:
            defined += 1
            if keep_defined and (info >> 4) != _STB_LOCAL:
                versym = versyms[index] if index < len(versyms) else 1
                names_defined.append((_c_string(names, name_offset), defs.get(versym & 0x7FFF)))
            continue
        version = needs.get(versyms[index] & 0x7FFF) if index < len(versyms) else None
        required.append(
            RequiredSymbol(
                name=_c_string(names, name_offset),
                version=version[0] if version else None,
                version_file=version[1] if version else None,
                weak=(info >> 4) == _STB_WEAK,
            )
        )
    return tuple(required), defined, names_defined


def _comment(stream: BinaryIO, elf: ELFFile) -> tuple[str, ...]:
    section = elf.get_section_by_name(".comment")
    if section is None or section["sh_size"] > 1 << 16:
        return ()
    parts = _read_section(stream, section).split(b"\0")
    return tuple(dict.fromkeys(p.decode("utf-8", "replace") for p in parts if p))


_CUDA_LIBS = ("libcuda.so", "libcudart.so")


def _uses_cuda(needed: tuple[str, ...], fatbin) -> bool:
    """Kernels run only through CUDA: a file with a `.nv_fatbin` (statically linked cudart, as
    cuFFT) or one linked to the driver or runtime is scanned; the rest skip the read."""
    return fatbin is not None or any(n.startswith(_CUDA_LIBS) for n in needed)


def read_elf(stream: BinaryIO, keep_defined: bool = False) -> ElfFacts:
    """Parse the parts of an ELF file that say what it needs; raises NotElf for anything else.

    `keep_defined` also lists every exported symbol with its version (the linker model needs
    them; the older report only counts them)."""
    stream.seek(0)
    if stream.read(4) != ELF_MAGIC:
        raise NotElf("not an ELF file (no \\x7fELF magic)")
    stream.seek(0)
    try:
        elf = ELFFile(stream)
        soname, needed, rpath, runpath = _dynamic_tags(elf)
        required, defined, names_defined = _symbols(stream, elf, keep_defined)
        fatbin = elf.get_section_by_name(".nv_fatbin")
        return ElfFacts(
            machine=elf.get_machine_arch(),
            elf_class=elf.elfclass,
            soname=soname,
            needed=needed,
            rpath=rpath,
            required=required,
            defined_count=defined,
            fatbin=(fatbin["sh_offset"], fatbin["sh_size"]) if fatbin is not None else None,
            comment=_comment(stream, elf),
            runpath=runpath,
            defined=tuple(names_defined),
            version_defs=_version_defs(elf)[1] if keep_defined else (),
            data_spans=_data_spans(elf) if _uses_cuda(needed, fatbin) else (),
        )
    except (ELFError, struct.error, IndexError) as exc:
        raise NotElf(f"malformed ELF file: {exc}") from exc
