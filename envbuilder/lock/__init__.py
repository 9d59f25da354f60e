"""Lock model and I/O; `locks/<target>.lock.toml` under the project root."""

from envbuilder.lock.io import BadLock, dumps, loads, read_lock, write_lock
from envbuilder.lock.model import Artifact, BuildRecipe, Facets, Lock, LockedPackage, Source

__all__ = ["Artifact", "BadLock", "BuildRecipe", "Facets", "Lock", "LockedPackage", "Source",
           "dumps", "loads", "read_lock", "write_lock", "lock_path"]


def lock_path(root, target: str):
    from pathlib import Path

    return Path(root) / "locks" / f"{target}.lock.toml"
