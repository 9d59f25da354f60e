"""The `lock` service: resolve each target against its indexes and write or check its lock.

Stable re-locks: the pins of an existing lock are preferred unless `--upgrade` (all) or
`--upgrade-package NAME` says otherwise, as `uv lock` does, so re-locking never churns.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from envbuilder.errors import BadInput, CheckFailed
from envbuilder.index.cache import Cache
from envbuilder.index.client import IndexClient
from envbuilder.index.config import default_index_url
from envbuilder.index.errors import MissingFromCache
from envbuilder.index.filters import wheel_platform_filter
from envbuilder.knowledge import Knowledge
from envbuilder.lock import Lock, dumps, loads, lock_path, read_lock, write_lock
from envbuilder.lock.io import check_indexes, read_text
from envbuilder.matrix import Target
from envbuilder.resolve.buildlock import ToolPins, lock_build_tools, preferred_tools
from envbuilder.resolve.hooks import ResolverHook, default_hook
from envbuilder.resolve.lockbuild import build_lock
from envbuilder.resolve.prefetch import PrefetchingFinder
from envbuilder.resolve.resolver import Resolution, resolve


@dataclass(frozen=True)
class LockOptions:
    offline: bool = False
    upgrade: bool = False
    upgrade_packages: frozenset[str] = frozenset()
    refresh: bool = False  # resolve again even when the lock is current
    link: bool = False  # link the closure from its binaries (linkage summaries) before writing




@dataclass(frozen=True)
class LockResult:
    target: str
    path: Path
    lock: Lock
    changed: bool
    resolved: bool = True  # False when the current lock was kept without resolving
    replaced: str | None = None  # why the old lock could not be read (it was re-resolved from scratch)


def knowledge_for(target: Target) -> Knowledge:
    """The shipped knowledge with the target's own facts layered on top."""
    return target.knowledge_base()


def index_urls(target: Target) -> dict[str, str]:
    """Index name -> URL: `url`, else `url_env`'s value, else (for `pypi`) the user's default."""
    urls = {}
    for name, index in target.indexes.items():
        url = index.url or (os.environ.get(index.url_env) if index.url_env else None)
        if url is None and name == "pypi":
            url = default_index_url()
        if url is None:
            hint = f"set {index.url_env}" if index.url_env else "give it a `url:`"
            raise BadInput(f"{target.source_path}: key 'indexes.{name}': no URL ({hint})")
        urls[name] = url
    return urls


def preferred_pins(previous: Lock | None, options: LockOptions) -> dict[str, str]:
    if previous is None or options.upgrade:
        return {}
    moving = {canonicalize_name(n) for n in options.upgrade_packages}
    return {p.name: p.version for p in previous.packages if canonicalize_name(p.name) not in moving}


def lock_target(target: Target, root: Path, options: LockOptions, knowledge: Knowledge | None = None,
                hook: ResolverHook | None = None, cache: Cache | None = None) -> LockResult:
    knowledge = knowledge or knowledge_for(target)
    hook = hook or default_hook(target, knowledge)
    path = lock_path(root, target.name)
    previous, unreadable = _read_previous(path)
    if previous is not None and _keep_current(target, path, knowledge, options):
        return LockResult(target.name, path, previous, changed=False, resolved=False)
    with client_for(target, options.offline, cache) as client:
        lock, findings = resolve_lock(target, client, knowledge, hook, preferred_pins(previous, options),
                                      options.link, preferred_tools(previous, options.upgrade_packages, options.upgrade))
    _refuse_errors(lock, findings)
    return LockResult(target.name, path, lock, write_lock(lock, path), replaced=unreadable)


def client_for(target: Target, offline: bool, cache: Cache | None = None, **kwargs) -> IndexClient:
    """An index client over the target's indexes that never decodes other platforms' wheels."""
    keep = wheel_platform_filter(target.platform.machine)
    return IndexClient(index_urls(target), cache=cache, offline=offline, keep=keep, **kwargs)


def resolve_lock(target: Target, client: IndexClient, knowledge: Knowledge, hook: ResolverHook,
                 preferred: dict[str, str], link: bool = False,
                 tools: ToolPins | None = None) -> tuple[Lock, list]:
    """The lock the matrix resolves to through `client` (pins preferred), and the rules' findings.

    `lock` writes it; `lock --check` compares it with the committed lock."""
    finder = PrefetchingFinder(client, target)
    try:
        if link and hasattr(hook, "binary_linking"):
            hook.binary_linking = True
        resolution = resolve(target, finder, hook, preferred)
        linkage = _link(target, finder, client, hook, resolution, preferred) if link else None
        if linkage is not None:
            resolution = linkage[0]
        sizes = _sizes(client, resolution)
        lock, findings = build_lock(resolution, knowledge, hook, sizes)
        lock = lock_build_tools(lock, resolution, client, tools)
    except MissingFromCache as exc:  # every miss of this client, else the one raised (a build env's own client)
        raise client.missing_from_cache() or exc from None
    if linkage is not None:
        lock = _record_linkage(lock, linkage[1])
    return lock, findings


def _link(target: Target, finder, client: IndexClient, hook: ResolverHook, resolution: Resolution,
          preferred: dict[str, str]) -> tuple[Resolution, dict]:
    """Resolve, link, learn each linkage failure as a conflict, resolve again, until the closure links."""
    from envbuilder.abi.linkage import summary_digest
    from envbuilder.resolve.linking import MAX_ROUNDS, conflicts, link_resolution

    for _round in range(MAX_ROUNDS):
        check = link_resolution(resolution, target, client.http)
        errors = [f for f in check.report.errors if f.kind != "arch-coverage"]  # per-wheel coverage: the rules
        if hasattr(hook, "linkage"):
            hook.linkage = dict(check.summaries)
        if not errors:
            return resolution, {sha: summary_digest(s) for sha, s in check.summaries.items()}
        learned = conflicts(errors, resolution)
        if not hasattr(hook, "learn") or not hook.learn([c.as_tuple() for c in learned]):
            lines = "\n".join(f"  - {f.message}" for f in errors[:20])
            raise CheckFailed(f"{target.name}: the resolved set does not link:\n{lines}")
        resolution = resolve(target, finder, hook, preferred)
    raise CheckFailed(f"{target.name}: linking did not settle within {MAX_ROUNDS} resolutions; pin the consumers")


def _record_linkage(lock: Lock, digests: dict[str, str]) -> Lock:
    """Each wheel's linkage-summary digest in the lock (the gate re-derives and compares it)."""
    from dataclasses import replace

    packages = tuple(replace(p, artifacts=tuple(replace(a, linkage=digests.get(a.sha256)) for a in p.artifacts))
                     for p in lock.packages)
    return replace(lock, packages=packages)


def _sizes(client: IndexClient, resolution: Resolution) -> dict[str, int]:
    """Sizes the index did not publish (PEP 503 HTML pages carry none), by sha256."""
    missing = [f for c in resolution.pins.values() for f in c.files if f.size is None and f.sha256]
    futures = {f.sha256: client.size_async(f) for f in missing}
    return {sha: future.result() for sha, future in futures.items()}


def _keep_current(target: Target, path: Path, knowledge: Knowledge, options: LockOptions) -> bool:
    """A current lock is kept as is (as `uv lock` does): same matrix, same knowledge, no upgrade asked."""
    wants_change = options.upgrade or options.upgrade_packages or options.refresh
    return not wants_change and not stale_reasons(target, path, knowledge)


def _read_previous(path: Path) -> tuple[Lock | None, str | None]:
    """The old lock, or (None, why) when it cannot be read: `lock` repairs it as with --upgrade
    (nothing of it is preferred), and says so; every other command exits 2 on such a lock."""
    try:
        return (read_lock(path) if path.exists() else None), None
    except BadInput as exc:
        return None, str(exc)


def _refuse_errors(lock: Lock, findings: list) -> None:
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        lines = "\n".join(f"  - {f}" for f in errors)
        raise CheckFailed(f"{lock.target}: the resolved set breaks rules:\n{lines}")


def stale_reasons(target: Target, path: Path, knowledge: Knowledge | None = None) -> list[str]:
    """Why a lock no longer matches its matrix (empty when current). Offline and exact."""
    if not path.exists():
        return [f"{path}: missing (run `envbuilder lock {target.name}`)"]
    text = read_text(path)
    lock = loads(text, str(path))
    check_indexes(lock, target.indexes, text, str(path))
    knowledge = knowledge or knowledge_for(target)
    reasons = []
    if lock.target != target.name:
        reasons.append(f"{path}: locks target {lock.target!r}, not {target.name!r}")
    if lock.matrix_digest != target.digest:
        reasons.append(f"{path}: matrix {target.source_path.name} changed since the lock was made")
    if lock.knowledge_digest != knowledge.digest:
        reasons.append(f"{path}: the knowledge base changed since the lock was made")
    if dumps(lock) != text:
        reasons.append(f"{path}: edited by hand or written by another envbuilder (its digest or layout differs)")
    return reasons


