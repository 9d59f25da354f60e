"""`envbuilder bump`: move one package, re-lock, gate the change, write the PR body.

Order matters for "nothing half-written": the matrix edit is written atomically, the re-lock
writes the lock atomically only after resolving, and a re-lock that fails puts the matrix back
byte for byte. The gate compares the lock as it was with the lock as re-resolved, exactly as
`envbuilder gate --base OLD.lock` would; a reject still writes the body, so a human sees why.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from packaging.utils import canonicalize_name

from envbuilder.bump.body import render_body
from envbuilder.bump.gitpick import pick_commit
from envbuilder.bump.indexpick import exact_version, newest_allowed
from envbuilder.bump.matrixfile import applied, scalar_edit
from envbuilder.bump.metadiff import metadata_difference
from envbuilder.bump.model import BumpRequest, BumpResult, Move
from envbuilder.errors import BadInput
from envbuilder.gate import GateOptions, GateResult, judge
from envbuilder.gate.sources import Pair, pair_of_files
from envbuilder.index.cache import Cache
from envbuilder.index.git import CommitNotFound, GitSources
from envbuilder.index.githistory import commit_range, count_range
from envbuilder.lock import Lock, lock_path, read_lock
from envbuilder.lock.io import write_atomic
from envbuilder.matrix import PackageSpec, Target, load_target
from envbuilder.resolve.locker import LockOptions, client_for, index_urls, knowledge_for, lock_target


def plan(request: BumpRequest, root: Path) -> tuple[Target, Move, Lock]:
    """What would move, read from the matrix, the current lock, the repository or the index; writes nothing."""
    target = load_target(request.target, root)
    base = _base_lock(root, target)
    key, spec = _matrix_entry(target, request.package, base)
    if spec is not None and spec.git:
        return target, git_move(target, key, spec, request), base
    return target, index_move(target, key, spec, request, base), base


def _base_lock(root: Path, target: Target) -> Lock:
    path = lock_path(root, target.name)
    if not path.exists():
        raise BadInput(f"{path}: no lock to bump from; run `envbuilder lock {target.name}` first")
    return read_lock(path)


def _matrix_entry(target: Target, package: str, base: Lock) -> tuple[str, PackageSpec | None]:
    """The package's key and spec in the matrix; (name, None) for a dependency only the lock names."""
    wanted = canonicalize_name(package)
    for key, spec in target.packages.items():
        if canonicalize_name(key) == wanted:
            return key, spec
    if base.package(package) is not None:
        return package, None
    raise BadInput(f"{target.source_path}: key 'packages': no package {package!r} in target {target.name!r} or its lock "
                   f"(the matrix names: {', '.join(sorted(target.packages))})")


def git_move(target: Target, key: str, spec: PackageSpec, request: BumpRequest) -> Move:
    """A git source moved to a branch head, a given commit, or the newest commit holding a fix."""
    if request.version is not None:
        raise BadInput(f"{target.origins[('packages', key)]}: key 'packages.{key}': a git source; --version is for "
                       "index packages (use --branch or --commit)")
    if request.branch is not None and request.commit is not None:
        raise BadInput("give --branch or --commit, not both")
    assert spec.git is not None and spec.rev is not None
    sources = GitSources(Cache(), offline=request.offline)
    picked = pick_commit(sources, spec.git, key, knowledge_for(target), branch=request.branch,
                         commit=request.commit, require_fix=request.require_fix)
    edit = scalar_edit(target, ("packages", key, "rev"), picked.commit)
    commits, total, notes = _history(sources, spec.git, spec.rev, picked.commit)
    if spec.metadata is not None and spec.metadata.version:
        notes += (f"the matrix's metadata.version ({spec.metadata.version}) is kept as the locked version: "
                  "update it (and any version the build recipe pins) when the source's version moved",)
    return Move(key, "git", spec.rev, picked.commit, edit, url=spec.git, branch=picked.branch, fix=picked.fix,
                fix_ref=request.require_fix, commits=tuple(commits), total_commits=total,
                metadata=metadata_difference(sources, key, spec, picked.commit, _index_url(target, spec)),
                notes=notes)


def _index_url(target: Target, spec: PackageSpec) -> str | None:
    """Where a backend build of the source's metadata gets its build requirements: the lock's index."""
    return index_urls(target).get(spec.index or "pypi")


def _history(sources: GitSources, url: str, old: str, new: str) -> tuple[list, int, tuple[str, ...]]:
    """The commits old..new with subjects; an old commit the repository lost is a note, not a failure."""
    if old == new:
        return [], 0, ()
    try:
        return commit_range(sources, url, old, new), count_range(sources, url, old, new), ()
    except CommitNotFound:
        return [], 0, (f"the old commit {old[:12]} is no longer in {url}: no commit range",)


def index_move(target: Target, key: str, spec: PackageSpec | None, request: BumpRequest, base: Lock) -> Move:
    """An index package: `--version X` pins it in the matrix; otherwise the re-lock lets it rise."""
    if request.branch or request.commit or request.require_fix:
        raise BadInput(f"{key} is an index package: --branch, --commit and --require-fix are for git sources")
    locked = base.package(key)
    old = locked.version if locked is not None else None
    if request.version is not None:
        if spec is None:
            raise BadInput(f"{target.source_path}: key 'packages': {key} is a dependency the matrix does not name; "
                           "add it under packages: to pin a version")
        new = exact_version(request.version)
        table = ("packages", key, "version") in target.origins
        edit = scalar_edit(target, ("packages", key, "version") if table else ("packages", key), f"=={new}")
        return Move(key, "index", old, new, edit)
    index = spec.index if spec is not None and spec.index else "pypi"
    with client_for(target, request.offline) as client:
        newest = newest_allowed(client, key, spec.version if spec is not None else "", index)
    return Move(key, "index", old, newest)


def bump(request: BumpRequest, root: Path) -> BumpResult:
    """Plan; unless dry-run or nothing moves: edit, re-lock (rolling the edit back on failure), gate, body."""
    target, move, base = plan(request, root)
    old_locked = _locked_version(base, move.package)
    if request.dry_run or not move.moves:
        return BumpResult(target.name, move, old_locked, None)
    base_text = lock_path(root, target.name).read_text(encoding="utf-8")
    with applied(move.edit):
        options = LockOptions(offline=request.offline, upgrade_packages=frozenset({move.package}), refresh=True)
        relocked = lock_target(load_target(request.target, root), root, options)
    new_locked = _locked_version(relocked.lock, move.package)
    if move.edit is None and not relocked.changed:
        return BumpResult(target.name, move, old_locked, new_locked)
    gate = gate_change(root, target.name, base_text, request.offline)
    result = BumpResult(target.name, move, old_locked, new_locked, gate, _body_path(request, target.name), wrote=True)
    write_atomic(result.body_file, render_body(result))
    return result


def _locked_version(lock: Lock, name: str) -> str | None:
    package = lock.package(name)
    return package.version if package is not None else None


def _body_path(request: BumpRequest, target: str) -> Path:
    return request.body_file or Path.cwd() / f"bump-{target}-{canonicalize_name(request.package)}.md"


def gate_change(root: Path, target: str, base_text: str, offline: bool) -> GateResult:
    """The gate on the lock before the bump (kept in memory, judged from a temp copy) vs the lock now."""
    head = lock_path(root, target)
    shown = f"locks/{head.name}"
    with tempfile.TemporaryDirectory(prefix="envbuilder-bump-") as tmp:
        base = Path(tmp) / head.name
        base.write_text(base_text, encoding="utf-8")
        pair = pair_of_files(base, head, root)
    pair = Pair(pair.name, replace(pair.base, path=f"{shown} (before)"), replace(pair.head, path=shown))
    return judge([pair], GateOptions(offline=offline))
