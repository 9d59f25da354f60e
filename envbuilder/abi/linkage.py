"""Linkage summaries: what each ELF in a wheel exports, imports and needs, read from the bytes.

Why a summary and not the file: linking a locked environment before it exists needs, for every
ELF, its install path, SONAME, DT_NEEDED, RPATH/RUNPATH, the symbols it defines and the
non-weak symbols it imports (with their versions), plus its CUDA facts. That is all the dynamic
loader looks at; a 900 MB torch wheel reduces to a few hundred KB. Summaries are keyed by the
wheel's sha256 and never recomputed (an artifact's bytes never change).

Compactness: a provider's defined symbols are only ever asked "is X defined here?", so they are
stored as a sorted array of 64-bit BLAKE2b digests of `name` and `name@version` (8 bytes each,
zlib-compressed, base64 in JSON). Imported symbols are kept by name: a finding must name them.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zlib
from array import array
from functools import cached_property
from typing import BinaryIO, NamedTuple

from pydantic import Field

from envbuilder.abi.elf import ElfFacts, NotElf, read_elf
from envbuilder.abi.fatbin import FatbinError, all_entries, toolkit_versions
from envbuilder.abi.report import sorted_archs
from envbuilder.model import StrictModel

SCHEMA = 3  # 3: fat binaries embedded in data sections count (cuFFT's .ldata)
SHARED_OBJECT = re.compile(r"\.so(\.\d+)*$")
_CUDART = re.compile(r"^libcudart\.so\.(\d+)")
_PYINIT = "PyInit_"


def symbol_digest(key: str) -> int:
    """64-bit digest of `name` or `name@version`: stable across machines and Python runs."""
    return int.from_bytes(hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=8).digest(), "little")


def pack_digests(digests: set[int]) -> str:
    data = array("Q", sorted(digests))
    if data.itemsize != 8:  # pragma: no cover - every supported platform has 64-bit unsigned long long
        raise RuntimeError("array('Q') is not 64-bit here")
    return base64.b64encode(zlib.compress(data.tobytes(), 6)).decode("ascii")


def unpack_digests(text: str) -> frozenset[int]:
    data = array("Q")
    data.frombytes(zlib.decompress(base64.b64decode(text)))
    return frozenset(data)


class Imported(NamedTuple):
    """A non-weak undefined dynamic symbol; `file` is the library its version names (ld.so checks it)."""

    name: str
    version: str | None = None
    file: str | None = None

    def encode(self) -> str:
        return self.name if self.version is None else f"{self.name}\t{self.version}\t{self.file or ''}"

    @classmethod
    def decode(cls, text: str) -> "Imported":
        name, _, rest = text.partition("\t")
        if not rest:
            return cls(name)
        version, _, file = rest.partition("\t")
        return cls(name, version, file or None)


class ElfLinkage(StrictModel):
    """One ELF member of a wheel, as the dynamic loader sees it."""

    path: str = Field(description="path in the install tree (site-packages relative)")
    sha256: str
    size: int
    soname: str | None = None
    needed: tuple[str, ...] = ()
    rpath: tuple[str, ...] = ()  # DT_RPATH (ignored by ld.so when DT_RUNPATH exists)
    runpath: tuple[str, ...] = ()
    python_module: str | None = Field(None, description="module name when it exports PyInit_<name>")
    defined_count: int = 0
    defined: str = Field("", description="zlib+base64 sorted uint64 BLAKE2b digests of name and name@version")
    version_defs: tuple[str, ...] = ()
    imports: tuple[str, ...] = Field((), description="name, or name<TAB>version<TAB>file (Imported.encode)")
    sass: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    cuda_runtime: str | None = Field(None, description="CUDA major of the cudart it needs (DT_NEEDED)")
    nvcc: tuple[str, ...] = ()

    @cached_property
    def defined_digests(self) -> frozenset[int]:
        return unpack_digests(self.defined) if self.defined else frozenset()

    def defines(self, name: str, version: str | None) -> bool:
        digests = self.defined_digests
        if version is None:
            return symbol_digest(name) in digests
        return symbol_digest(f"{name}@{version}") in digests

    @cached_property
    def imported(self) -> tuple[Imported, ...]:
        return tuple(Imported.decode(text) for text in self.imports)

    @property
    def is_cuda(self) -> bool:
        return bool(self.sass or self.ptx or self.cuda_runtime)


class WheelLinkage(StrictModel):
    """Every ELF of one wheel; `elfs` empty means the wheel carries no binary evidence."""

    format_version: int = SCHEMA
    filename: str
    sha256: str
    elfs: tuple[ElfLinkage, ...] = ()
    members_read: int = 0
    inflated_bytes: int = 0


def summary_digest(summary: WheelLinkage) -> str:
    """`sha256:<hex>` of the summary's canonical JSON: what a lock records for each wheel."""
    return "sha256:" + hashlib.sha256(summary.model_dump_json(exclude_defaults=True).encode()).hexdigest()


def _python_module(facts: ElfFacts) -> str | None:
    for name, _version in facts.defined:
        if name.startswith(_PYINIT):
            return name[len(_PYINIT):]
    return None


def _cuda(stream: BinaryIO, facts: ElfFacts) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    entries = all_entries(stream, facts.fatbin, facts.data_spans)
    return (sorted_archs(e.arch for e in entries if e.kind == "sass"),
            sorted_archs(e.arch for e in entries if e.kind == "ptx"),
            tuple(toolkit_versions(stream, entries)))


def summarize_elf(stream: BinaryIO, path: str, sha256: str, size: int) -> ElfLinkage:
    """Summary of one ELF already open as a seekable stream; raises NotElf for anything else."""
    facts = read_elf(stream, keep_defined=True)
    digests: set[int] = set()
    for name, version in facts.defined:
        digests.add(symbol_digest(name))
        if version:
            digests.add(symbol_digest(f"{name}@{version}"))
    try:
        sass, ptx, nvcc = _cuda(stream, facts)
    except FatbinError as exc:
        raise NotElf(f"{path}: unreadable .nv_fatbin section: {exc}") from exc
    imports = sorted({(s.name, s.version, s.version_file) for s in facts.required if not s.weak},
                     key=lambda t: (t[0], t[1] or "", t[2] or ""))
    runpath = facts.runpath
    rpath = tuple(p for p in facts.rpath if p not in runpath)
    cudart = next((m.group(1) for n in facts.needed if (m := _CUDART.match(n))), None)
    return ElfLinkage(
        path=path, sha256=sha256, size=size, soname=facts.soname, needed=facts.needed,
        rpath=rpath, runpath=runpath, python_module=_python_module(facts),
        defined_count=len(facts.defined), defined=pack_digests(digests) if digests else "",
        version_defs=facts.version_defs,
        imports=tuple(Imported(n, v, f).encode() for n, v, f in imports),
        sass=sass, ptx=ptx, cuda_runtime=cudart, nvcc=nvcc,
    )


def is_elf_candidate(member: str) -> bool:
    """Members worth fetching: shared objects by name (wheels hold no other loadable ELF for Python)."""
    return bool(SHARED_OBJECT.search(member))


def install_path(member: str) -> str:
    """Where a wheel member lands: `<name>.data/purelib|platlib/x` installs as `x`."""
    parts = member.split("/")
    if len(parts) > 2 and parts[0].endswith(".data") and parts[1] in ("purelib", "platlib"):
        return "/".join(parts[2:])
    return member
