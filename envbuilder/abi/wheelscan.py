"""Read the ELF members of a wheel, local or remote, into a linkage summary.

Why members and not wheels: a wheel's members are deflated independently, and the zip central
directory (read with two small range requests) gives each member's offset and compressed size.
So only the shared objects travel, each in ONE streaming range request, inflated on the fly
(zlib decompressobj) into a temporary file: an ELF's section headers sit at its end, so it must
be inflated whole before it can be parsed, but never held in memory. Members are processed in
parallel threads: zlib and sha256 release the GIL, so inflating scales with cores.
"""

from __future__ import annotations

import hashlib
import struct
import tempfile
import time
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterable, Iterator

from envbuilder.abi import summaries
from envbuilder.abi.elf import ELF_MAGIC, NotElf
from envbuilder.abi.linkage import ElfLinkage, WheelLinkage, install_path, is_elf_candidate, summarize_elf
from envbuilder.errors import BadInput

_CHUNK = 1 << 20
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")  # signature ... name length, extra length
_SLACK = 1 << 16  # a local header's extra field may differ from the central one's


@dataclass
class ScanStats:
    """What reading cost: bytes over the network, bytes inflated, and where the seconds went."""

    bytes_fetched: int = 0
    bytes_inflated: int = 0
    members: int = 0
    network_s: float = 0.0
    cpu_s: float = 0.0
    cached: int = 0
    computed: int = 0
    per_wheel: dict[str, int] = field(default_factory=dict)

    def add(self, other: "ScanStats") -> None:
        for name in ("bytes_fetched", "bytes_inflated", "members", "network_s", "cpu_s", "cached", "computed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.per_wheel.update(other.per_wheel)


# A member source yields the member's raw (compressed) bytes in chunks.
ChunkSource = Callable[[zipfile.ZipInfo], Iterator[bytes]]


def _inflate_to(chunks: Iterable[bytes], info: zipfile.ZipInfo, out: BinaryIO, stats: ScanStats) -> str:
    """Inflate a member's raw bytes into `out`; returns the sha256 of the inflated bytes."""
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise BadInput(f"{info.filename}: zip compression method {info.compress_type} is not supported")
    inflater = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
    digest = hashlib.sha256()
    crc = 0
    started = time.perf_counter()
    waited = 0.0
    iterator = iter(chunks)
    while True:
        before = time.perf_counter()
        chunk = next(iterator, None)
        waited += time.perf_counter() - before
        if chunk is None:
            break
        data = inflater.decompress(chunk) if inflater else chunk
        digest.update(data)
        crc = zlib.crc32(data, crc)
        out.write(data)
    if inflater:
        tail = inflater.flush()
        digest.update(tail)
        crc = zlib.crc32(tail, crc)
        out.write(tail)
    size = out.tell()
    if crc != info.CRC or size != info.file_size:
        raise BadInput(f"{info.filename}: inflated member does not match the zip directory (CRC or size)")
    stats.network_s += waited
    stats.cpu_s += time.perf_counter() - started - waited
    stats.bytes_inflated += size
    stats.members += 1
    return digest.hexdigest()


def _summarize_member(info: zipfile.ZipInfo, source: ChunkSource, stats: ScanStats) -> ElfLinkage | None:
    with tempfile.TemporaryFile() as tmp:
        digest = _inflate_to(source(info), info, tmp, stats)
        tmp.seek(0)
        if tmp.read(4) != ELF_MAGIC:
            return None
        started = time.perf_counter()
        try:
            return summarize_elf(tmp, install_path(info.filename), digest, info.file_size)
        except NotElf:
            return None
        finally:
            stats.cpu_s += time.perf_counter() - started


def _scan(name: str, sha256: str, infos: list[zipfile.ZipInfo], source: ChunkSource, workers: int,
          stats: ScanStats) -> WheelLinkage:
    chosen = [i for i in infos if not i.is_dir() and is_elf_candidate(i.filename)]
    parts = [ScanStats() for _ in chosen]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(lambda pair: _summarize_member(pair[0], source, pair[1]), zip(chosen, parts)))
    for part in parts:
        stats.add(part)
    elfs = tuple(sorted((r for r in results if r is not None), key=lambda e: e.path))
    return WheelLinkage(filename=name, sha256=sha256, elfs=elfs, members_read=len(chosen),
                        inflated_bytes=sum(p.bytes_inflated for p in parts))


def _open_zip(fileobj: BinaryIO, name: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(fileobj)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise BadInput(f"{name}: not a readable wheel (zip) file: {exc}") from exc


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def scan_local(path: Path | str, sha256: str | None = None, *, workers: int = 4,
               stats: ScanStats | None = None, use_cache: bool = True) -> WheelLinkage:
    """Summary of a wheel on disk, from the cache when its sha256 was seen before."""
    path = Path(path)
    stats = stats if stats is not None else ScanStats()
    try:
        digest = sha256 or file_sha256(path)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror or exc}") from None
    if use_cache and (hit := summaries.load(digest)) is not None:
        stats.cached += 1
        return hit

    def local_chunks(zf: zipfile.ZipFile) -> ChunkSource:
        def chunks(info: zipfile.ZipInfo) -> Iterator[bytes]:
            with path.open("rb") as raw:
                raw.seek(info.header_offset)
                header = raw.read(_LOCAL_HEADER.size)
                fields = _LOCAL_HEADER.unpack(header)
                raw.seek(info.header_offset + _LOCAL_HEADER.size + fields[-2] + fields[-1])
                left = info.compress_size
                while left > 0 and (block := raw.read(min(_CHUNK, left))):
                    left -= len(block)
                    yield block
        return chunks

    with path.open("rb") as stream, _open_zip(stream, path.name) as zf:
        summary = _scan(path.name, digest, zf.infolist(), local_chunks(zf), workers, stats)
    stats.computed += 1
    if use_cache:
        summaries.store(summary)
    return summary


def scan_remote(http, url: str, filename: str, sha256: str, size: int | None = None, *, workers: int = 4,
                stats: ScanStats | None = None, use_cache: bool = True) -> WheelLinkage:
    """Summary of a wheel on an index: the central directory by range reads, then one streaming
    range request per ELF member. `sha256` (from the lock or the index) is the cache key."""
    from envbuilder.index.rangefile import RangeFile

    stats = stats if stats is not None else ScanStats()
    if use_cache and (hit := summaries.load(sha256)) is not None:
        stats.cached += 1
        return hit
    started = time.perf_counter()
    remote = RangeFile(http, url, size)
    with _open_zip(remote, filename) as zf:
        infos = zf.infolist()
    stats.network_s += time.perf_counter() - started
    stats.bytes_fetched += remote.bytes_fetched
    fetched = [0]

    def chunks(info: zipfile.ZipInfo) -> Iterator[bytes]:
        start = info.header_offset
        end = min(remote.size, start + _LOCAL_HEADER.size + len(info.filename.encode()) + len(info.extra)
                  + info.compress_size + _SLACK)
        yield from _member_stream(http, url, start, end, info, fetched)

    summary = _scan(filename, sha256, infos, chunks, workers, stats)
    stats.bytes_fetched += fetched[0]
    stats.per_wheel[filename] = remote.bytes_fetched + fetched[0]
    stats.computed += 1
    if use_cache:
        summaries.store(summary)
    return summary


def _member_stream(http, url: str, start: int, end: int, info: zipfile.ZipInfo, fetched: list[int]) -> Iterator[bytes]:
    """The member's compressed bytes from one streaming range request (local header skipped)."""
    from envbuilder.index.http import IDENTITY

    with http.client.stream("GET", url, headers={"Range": f"bytes={start}-{end - 1}", **IDENTITY}) as response:
        if response.status_code != 206:
            raise BadInput(f"{url}: the index answered {response.status_code} to a range request for "
                           f"{info.filename}; it must support HTTP range requests")
        buffer, header_done, left = b"", False, info.compress_size
        for chunk in response.iter_raw(_CHUNK):
            fetched[0] += len(chunk)
            if not header_done:
                buffer += chunk
                if len(buffer) < _LOCAL_HEADER.size:
                    continue
                fields = _LOCAL_HEADER.unpack(buffer[:_LOCAL_HEADER.size])
                if fields[0] != b"PK\x03\x04":
                    raise BadInput(f"{url}: no local file header for {info.filename} at {start}")
                skip = _LOCAL_HEADER.size + fields[-2] + fields[-1]
                if len(buffer) < skip:
                    continue  # the header's name and extra field are not complete yet
                chunk, buffer, header_done = buffer[skip:], b"", True
            piece = chunk[:left]
            left -= len(piece)
            if piece:
                yield piece
            if left <= 0:
                break
        if left > 0:
            raise BadInput(f"{url}: {info.filename} ended {left} bytes early (the local header's extra "
                           "field is larger than expected)")
