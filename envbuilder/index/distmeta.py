"""Find the core metadata inside a wheel (METADATA) or an sdist (PKG-INFO).

An sdist's PKG-INFO is only trustworthy for resolution when it is Metadata-Version 2.2+ (PEP 643)
and does not mark Requires-Dist as Dynamic; anything older may differ from what a build produces,
so envbuilder asks the user for static metadata in the matrix instead of guessing.
"""

from __future__ import annotations

import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import IO

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbuilder.index.errors import DynamicMetadata
from envbuilder.index.models import CoreMetadata


class MetadataNotFound(ValueError):
    """The archive holds no (unambiguous) metadata member."""


def _pick(candidates: list[str], project: str, filename: str, what: str) -> str:
    if len(candidates) == 1:
        return candidates[0]
    wanted = canonicalize_name(project)
    named = [c for c in candidates if canonicalize_name(c.split("/")[0].split("-")[0]) == wanted]
    if len(named) == 1:
        return named[0]
    raise MetadataNotFound(f"{filename}: expected one {what}, found {len(candidates)}: {candidates[:5]}")


def wheel_metadata_member(names: list[str], project: str, filename: str) -> str:
    """The `<name>-<version>.dist-info/METADATA` member at the top of a wheel."""
    candidates = [n for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    return _pick(candidates, project, filename, "*.dist-info/METADATA")


def read_wheel_metadata(source: str | Path | IO[bytes], project: str, filename: str) -> bytes:
    """METADATA bytes from a wheel given as a path or any seekable file (e.g. a RangeFile)."""
    try:
        with zipfile.ZipFile(source) as zf:
            return zf.read(wheel_metadata_member(zf.namelist(), project, filename))
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise MetadataNotFound(f"{filename}: not a valid zip archive: {exc}") from exc


def _sdist_pkg_info_name(names: list[str], project: str, filename: str) -> str:
    candidates = [n for n in names if len(PurePosixPath(n).parts) == 2 and n.endswith("/PKG-INFO")]
    return _pick(candidates, project, filename, "<name>-<version>/PKG-INFO")


def read_sdist_pkg_info(path: Path, project: str, filename: str) -> bytes:
    try:
        if filename.endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                return zf.read(_sdist_pkg_info_name(zf.namelist(), project, filename))
        with tarfile.open(path, "r:*") as tf:
            member = _sdist_pkg_info_name(tf.getnames(), project, filename)
            handle = tf.extractfile(member)
            if handle is None:
                raise MetadataNotFound(f"{filename}: {member} is not a regular file")
            return handle.read()
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise MetadataNotFound(f"{filename}: cannot read the sdist: {exc}") from exc


def static_sdist_metadata(data: bytes, filename: str) -> CoreMetadata:
    """Parsed PKG-INFO if its dependencies are static (PEP 643), else DynamicMetadata."""
    meta = CoreMetadata.parse(data)
    try:
        new_enough = Version(meta.metadata_version or "1.0") >= Version("2.2")
    except InvalidVersion:
        new_enough = False
    dynamic = {"requires-dist"} & set(meta.dynamic)
    if new_enough and not dynamic:
        return meta
    why = (
        f"its PKG-INFO is Metadata-Version {meta.metadata_version}, older than 2.2 (PEP 643)"
        if not new_enough
        else f"its PKG-INFO marks {', '.join(sorted(dynamic))} as Dynamic"
    )
    raise DynamicMetadata(
        f"{filename}: the dependencies of this sdist are only known by building it ({why}); "
        f"give them as static metadata in the matrix: packages: {{{meta.project}: "
        f"{{version: '=={meta.version}', metadata: {{requires_dist: [...]}}}}}}"
    )
