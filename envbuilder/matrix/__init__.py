"""Matrices: what each target wants. `load_target` is the one entry point other modules use."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envbuilder.errors import BadInput
from envbuilder.knowledge import Knowledge, load_knowledge
from envbuilder.matrix.loader import Origin, load_matrix, matrix_digest
from envbuilder.matrix.schema import Matrix, PackageSpec

__all__ = ["Matrix", "PackageSpec", "Target", "load_target", "shipped_targets", "project_root", "Origin"]


@dataclass(frozen=True)
class Target:
    """A loaded matrix plus where it came from; attribute access falls through to the matrix."""

    matrix: Matrix
    source_path: Path
    origins: dict

    @property
    def name(self) -> str:
        return self.matrix.target

    @property
    def digest(self) -> str:
        return matrix_digest(self.matrix)

    @property
    def warnings(self) -> list[str]:
        notes = []
        if not self.matrix.toolchain.base_image_pinned:
            where = self.origins.get(("toolchain", "base_image"), self.source_path)
            notes.append(f"{where}: base image {self.matrix.toolchain.base_image!r} is a tag, not a digest: "
                         "the lock records it as unpinned")
        return notes

    def knowledge_base(self) -> Knowledge:
        """The shipped knowledge with this matrix's own facts first (packaged data: no host read)."""
        overlay = self.matrix.knowledge
        return load_knowledge().with_overlay(overlay.model_dump(mode="json") if overlay is not None else None)

    def __getattr__(self, item: str) -> Any:
        return getattr(self.matrix, item)


def project_root(start: Path | None = None) -> Path:
    """The directory holding `matrices/`: ENVBUILDER_ROOT, else the nearest parent of the CWD."""
    if os.environ.get("ENVBUILDER_ROOT"):
        return Path(os.environ["ENVBUILDER_ROOT"]).resolve()
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "matrices").is_dir():
            return candidate
    packaged = Path(__file__).resolve().parents[2]
    if (packaged / "matrices").is_dir():
        return packaged
    raise BadInput("no `matrices/` directory here or above; run inside an envbuilder project "
                   "or set ENVBUILDER_ROOT")


def shipped_targets(root: Path | None = None) -> list[str]:
    base = (root or project_root()) / "matrices"
    return sorted(p.stem for p in base.glob("*.yaml") if not p.name.startswith("_"))


def load_target(name_or_path: str | Path, root: Path | None = None) -> Target:
    path = Path(name_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = (root or project_root()) / "matrices" / f"{name_or_path}.yaml"
        if not path.exists():
            known = ", ".join(shipped_targets(root)) or "none"
            raise BadInput(f"unknown target {str(name_or_path)!r} (known: {known})")
    matrix, origins = load_matrix(path)
    if path.suffix and path.stem != matrix.target:
        raise BadInput(f"{origins[('target',)]}: key 'target': {matrix.target!r} must match the file name {path.stem!r}")
    return Target(matrix, path, origins)
