"""Build real wheels and sdists in tests: valid archives with METADATA/WHEEL/RECORD or PKG-INFO.

Usage:
    whl = make_wheel("demo", "1.0", requires_dist=["six>=1"], tags="cp312-cp312-manylinux_2_28_x86_64",
                     files={"demo/__init__.py": b"", "demo/big.bin": os.urandom(1 << 20)})
    whl.filename, whl.data, whl.metadata, whl.sha256, whl.write(tmp_path) -> Path
    sd = make_sdist("demo", "1.0", requires_dist=[...], metadata_version="2.2", dynamic=())
"""

from __future__ import annotations

import base64
import calendar
import gzip
import hashlib
import io
import tarfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

FIXED_TIME = (2024, 1, 1, 0, 0, 0)  # reproducible archives: same inputs, same bytes


@dataclass(frozen=True, repr=False)
class BuiltDist:
    """A distribution file built in memory; `metadata` is its METADATA / PKG-INFO bytes."""

    filename: str
    data: bytes
    metadata: bytes

    def __repr__(self) -> str:  # short: failing tests print these, and wheels can be megabytes
        return f"BuiltDist({self.filename!r}, {len(self.data)} bytes)"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def size(self) -> int:
        return len(self.data)

    def write(self, directory: Path) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / self.filename
        path.write_bytes(self.data)
        return path


def _escape(name: str) -> str:
    return canonicalize_name(name).replace("-", "_")


def core_metadata(
    name: str,
    version: str,
    requires_dist: Iterable[str] = (),
    requires_python: str | None = None,
    provides_extra: Iterable[str] = (),
    metadata_version: str = "2.1",
    dynamic: Iterable[str] = (),
    summary: str = "built in a test",
) -> bytes:
    lines = [f"Metadata-Version: {metadata_version}", f"Name: {name}", f"Version: {version}", f"Summary: {summary}"]
    lines += [f"Dynamic: {d}" for d in dynamic]
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Provides-Extra: {e}" for e in provides_extra]
    lines += [f"Requires-Dist: {r}" for r in requires_dist]
    return ("\n".join(lines) + "\n\n").encode()


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def make_wheel(
    name: str,
    version: str,
    requires_dist: Iterable[str] = (),
    tags: str = "py3-none-any",
    files: Mapping[str, bytes] | None = None,
    requires_python: str | None = None,
    provides_extra: Iterable[str] = (),
    build: str | None = None,
    compression: int = zipfile.ZIP_DEFLATED,
) -> BuiltDist:
    """A valid wheel; `tags` is the filename's tag triple (compressed sets like py2.py3 allowed)."""
    dist = f"{_escape(name)}-{version}"
    info = f"{dist}.dist-info"
    metadata = core_metadata(name, version, requires_dist, requires_python, provides_extra)
    py, abi, plat = tags.split("-")
    wheel_tags = [f"{p}-{a}-{pl}" for p in py.split(".") for a in abi.split(".") for pl in plat.split(".")]
    wheel_text = "Wheel-Version: 1.0\nGenerator: envbuilder-tests\nRoot-Is-Purelib: {}\n{}{}\n".format(
        "true" if abi == "none" and plat == "any" else "false",
        "".join(f"Tag: {t}\n" for t in wheel_tags),
        f"Build: {build}\n" if build else "",
    ).encode()
    members = dict(files if files is not None else {f"{_escape(name)}/__init__.py": f"__version__ = {version!r}\n".encode()})
    members[f"{info}/METADATA"] = metadata
    members[f"{info}/WHEEL"] = wheel_text
    record = [_record_line(p, d) for p, d in members.items()] + [f"{info}/RECORD,,"]
    members[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as zf:
        for path, data in members.items():
            zf.writestr(zipfile.ZipInfo(path, FIXED_TIME), data, compress_type=compression)
    build_part = f"-{build}" if build else ""
    return BuiltDist(f"{dist}{build_part}-{tags}.whl", buffer.getvalue(), metadata)


def make_sdist(
    name: str,
    version: str,
    requires_dist: Iterable[str] = (),
    requires_python: str | None = None,
    metadata_version: str = "2.2",
    dynamic: Iterable[str] = (),
    files: Mapping[str, bytes] | None = None,
    fmt: str = "tar.gz",
    pkg_info: bool = True,
) -> BuiltDist:
    """An sdist with `<name>-<version>/PKG-INFO` (omit with pkg_info=False), .tar.gz or .zip."""
    top = f"{_escape(name)}-{version}"
    metadata = core_metadata(name, version, requires_dist, requires_python, (), metadata_version, dynamic)
    members = {f"{top}/{p}": d for p, d in (files or {"setup.py": b"from setuptools import setup\nsetup()\n"}).items()}
    if pkg_info:
        members[f"{top}/PKG-INFO"] = metadata
    buffer = io.BytesIO()
    if fmt == "zip":
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path, data in members.items():
                zf.writestr(zipfile.ZipInfo(path, FIXED_TIME), data)
    else:
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tf:
            for path, data in members.items():
                info = tarfile.TarInfo(path)
                info.size, info.mtime, info.mode = len(data), calendar.timegm((*FIXED_TIME, 0, 0, 0)), 0o644
                tf.addfile(info, io.BytesIO(data))
        buffer = io.BytesIO(gzip.compress(buffer.getvalue(), mtime=0))
    return BuiltDist(f"{top}.{fmt}", buffer.getvalue(), metadata)
