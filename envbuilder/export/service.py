"""The `export` service: find the lock, ask the user's index for URLs when the format needs them.

Index names map to URLs the way `envbuilder lock` maps them (the matrix's `indexes:`, `pypi` =
the user's configured default), so an export reads the same index the lock was made from unless
the user's configuration says otherwise -- which is the point of a host-free lock.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from envbuilder.errors import BadInput
from envbuilder.lock import lock_path, read_lock
from envbuilder.lock.io import read_lock_for
from envbuilder.export import NEEDS_INDEX, export, pylock, select
from envbuilder.lock.model import Lock


@dataclass(frozen=True)
class ExportRequest:
    fmt: str
    target: str | None = None
    lock_file: Path | None = None
    output: Path | None = None
    skip_source_builds: bool = False
    offline: bool = False


def _display(path: Path, root: Path | None) -> str:
    """The lock's path as the export records it: relative, so no machine's layout leaks in."""
    path = path.resolve()
    for base in (root, Path.cwd()):
        if base is not None and path.is_relative_to(base.resolve()):
            return path.relative_to(base.resolve()).as_posix()
    return path.name


def _find_lock(request: ExportRequest) -> tuple[Path, Path | None]:
    from envbuilder.matrix import project_root

    if (request.target is None) == (request.lock_file is None):
        raise BadInput("give a TARGET or --lock FILE (exactly one)")
    if request.lock_file is not None:
        try:
            root = project_root()
        except BadInput:
            root = None
        return request.lock_file, root
    root = project_root()
    return lock_path(root, request.target), root


def index_urls(lock: Lock, root: Path | None) -> dict[str, str]:
    """The lock's index names -> URLs: from its matrix when this project has it, else the default."""
    from envbuilder.index.config import default_index_url
    from envbuilder.matrix import load_target
    from envbuilder.resolve.locker import index_urls as matrix_index_urls

    if root is not None and (root / "matrices" / f"{lock.target}.yaml").exists():
        return matrix_index_urls(load_target(lock.target, root))
    return {"pypi": default_index_url()} if "pypi" in lock.indexes or not lock.indexes else {}


def _check_output_name(request: ExportRequest) -> None:
    if request.fmt == "pylock" and request.output is not None and not pylock.valid_file_name(request.output.name):
        raise BadInput(f"{request.output}: PEP 751 requires a pylock file to be named pylock.toml or "
                       f"pylock.<name>.toml (e.g. pylock.{request.target or 'target'}.toml); pip and uv "
                       "recognise it by that name")


@dataclass(frozen=True)
class ExportResult:
    text: str
    lock: Lock
    skipped: tuple[str, ...]  # name==version of source builds left out

    @property
    def exported(self) -> int:
        return len(self.lock.packages) - len(self.skipped)


def run_export(request: ExportRequest) -> ExportResult:
    """The exported text, the lock it came from and what was left out."""
    _check_output_name(request)
    path, root = _find_lock(request)
    lock = read_lock(path)
    matrix = root / "matrices" / f"{lock.target}.yaml" if root is not None else None
    if matrix is not None and matrix.exists():  # the matrix is at hand: only its indexes
        from envbuilder.matrix import load_target

        lock = read_lock_for(path, load_target(lock.target, root).indexes)
    origin = _display(path, root)
    kwargs = {"origin": origin, "skip_source_builds": request.skip_source_builds}
    if request.fmt == "conda-lock" and request.output is not None:
        # conda-lock records sources relative to the lockfile; outside the project, keep it host-free
        relative = Path(os.path.relpath(path.resolve(), request.output.resolve().parent)).as_posix()
        kwargs["origin"] = origin if relative.startswith("..") else relative
        kwargs["file_name"] = request.output.name
    skipped = tuple(e.pin for e in select(lock, skip_source_builds=request.skip_source_builds, origin=origin).skipped)
    if request.fmt not in NEEDS_INDEX:
        return ExportResult(export(lock, request.fmt, **kwargs), lock, skipped)
    from envbuilder.index import IndexClient

    with IndexClient(index_urls(lock, root), offline=request.offline) as client:
        return ExportResult(export(lock, request.fmt, client=client, **kwargs), lock, skipped)
