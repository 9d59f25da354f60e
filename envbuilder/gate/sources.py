"""Where the gate's two sides come from: lock files, or `locks/` at a git ref and in the tree.

Why read the ref with `git show`/`git archive` and not a checkout: CI runs the gate inside the
PR's working tree; touching it (or a second worktree) would be slow and surprising. The base's
matrices come from the same ref, so a driver floor lowered in the PR is compared with the floor
the base was locked for.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from envbuilder.errors import BadInput, EnvbuilderError, Unreachable
from envbuilder.lock.io import check_indexes, loads, read_text
from envbuilder.lock.model import Lock

LOCKS_DIR = "locks"
LOCK_SUFFIX = ".lock.toml"


@dataclass(frozen=True)
class Side:
    """One lock and the matrix it is judged against (None when no matrix could be found)."""

    lock: Lock
    path: str  # how to name the file in findings: repo-relative where possible
    text: str
    target: Any = None
    evidence: Any = None  # envbuilder.validated.evidence.Evidence: the records beside this side's matrices

    @property
    def matrix_path(self) -> str | None:
        """The matrix file, relative to the working directory where it lies below it."""
        path = getattr(self.target, "source_path", None)
        if path is None:
            return None
        try:
            return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
        except ValueError:
            return str(path)


@dataclass(frozen=True)
class Pair:
    name: str
    base: Side | None
    head: Side | None


def read_side(path: Path, display: str | None = None, root: Path | None = None, target: Any = None) -> Side:
    """A lock file and its matrix (`target` when the caller already loaded it)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such lock file") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        text = read_text(Path(path))  # raises BadLock naming the line of the first bad byte
    lock = loads(text, str(display or path))
    if target is None or getattr(target, "name", None) != lock.target:
        target = _target(lock.target, root)
    return _checked(Side(lock, display or str(path), text, target))


def _checked(side: Side) -> Side:
    """Exit 2 when the lock names an index its matrix does not define (no matrix: nothing to check)."""
    indexes = getattr(side.target, "indexes", None)
    if indexes is not None:
        check_indexes(side.lock, indexes, side.text, side.path)
    return side


def _target(name: str, root: Path | None) -> Any:
    """The matrix for a lock's target, or None: the rules then use what the lock records."""
    from envbuilder.matrix import load_target

    try:
        return load_target(name, root=root)
    except EnvbuilderError:
        return None


def _evidence(root: Path | None, name: str, target: Any) -> Any:
    """The validated records of `name` under `root/matrices/` (root None: the project's), checked."""
    from envbuilder.matrix import project_root
    from envbuilder.validated.evidence import gather

    try:
        return gather(root or project_root(), name, target)
    except EnvbuilderError:
        return None


def _git(root: Path, *args: str, binary: bool = False) -> Any:
    try:
        result = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False,
                                env={"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "PATH": _path()})
    except FileNotFoundError:
        raise Unreachable("git is not installed: install git to use --base-ref") from None
    if result.returncode != 0:
        raise GitFailed(result.stderr.decode(errors="replace").strip())
    return result.stdout if binary else result.stdout.decode()


def _path() -> str:
    import os

    return os.environ.get("PATH", "/usr/bin:/bin")


class GitFailed(Exception):
    pass


def repo_root(start: Path) -> Path:
    try:
        return Path(_git(start, "rev-parse", "--show-toplevel").strip())
    except GitFailed:
        raise BadInput(f"{start}: not inside a git repository; --base-ref needs one (or use --base LOCK)") from None


def resolve_ref(root: Path, ref: str) -> str:
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").strip()
    except GitFailed:
        raise BadInput(f"--base-ref {ref!r} is not a commit in {root}: fetch it first (in GitHub Actions, "
                       "actions/checkout with `fetch-depth: 0`)") from None


def _matrices_at(root: Path, commit: str, into: Path) -> Path | None:
    """`matrices/` as of `commit`, extracted under `into`; None if the ref has none."""
    try:
        data = _git(root, "archive", "--format=tar", commit, "matrices", binary=True)
    except GitFailed:
        return None
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    return into


def pairs_at_ref(root: Path, ref: str, head_root: Path | None = None) -> list[Pair]:
    """Every `locks/*.lock.toml` at `ref` paired with the working tree's file of the same name."""
    commit = resolve_ref(root, ref)
    listed = _git(root, "ls-tree", "-r", "--name-only", commit, "--", f"{LOCKS_DIR}/").splitlines()
    base_files = {Path(p).name: p for p in listed if p.endswith(LOCK_SUFFIX)}
    head_dir = (head_root or root) / LOCKS_DIR
    head_files = {p.name: p for p in head_dir.glob(f"*{LOCK_SUFFIX}")} if head_dir.is_dir() else {}
    with tempfile.TemporaryDirectory(prefix="envbuilder-gate-") as tmp:
        base_root = _matrices_at(root, commit, Path(tmp))
        pairs = []
        for name in sorted(base_files.keys() | head_files.keys()):
            base = None
            if name in base_files:
                text = _git(root, "show", f"{commit}:{base_files[name]}")
                lock = loads(text, f"{ref}:{base_files[name]}")
                target = _target(lock.target, base_root) if base_root else None
                evidence = _evidence(base_root, lock.target, target) if base_root else None
                base = _checked(Side(lock, f"{ref}:{base_files[name]}", text, target, evidence))
            head = None
            if name in head_files:
                head = read_side(head_files[name], f"{LOCKS_DIR}/{name}", head_root or root)
                head = replace(head, evidence=_evidence(head_root or root, head.lock.target, head.target))
            pairs.append(Pair(name.removesuffix(LOCK_SUFFIX), base, head))
    return pairs


def pair_of_files(base: Path, head: Path | None, root: Path | None = None) -> Pair:
    """--base FILE [--head FILE]; without --head, the project's lock for the base's target."""
    base_side = read_side(base, str(base), root)
    if head is None:
        from envbuilder.lock import lock_path
        from envbuilder.matrix import project_root

        head = lock_path(root or project_root(), base_side.lock.target)
    head_side = read_side(head, str(head), root, target=base_side.target)
    head_side = replace(head_side, evidence=_evidence(root, head_side.lock.target, head_side.target))
    return Pair(head_side.lock.target, base_side, head_side)  # no history: every record counts as reviewed
