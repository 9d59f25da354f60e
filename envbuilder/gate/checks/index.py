"""Every file the base does not lock is asked about on the index: name, size and sha256.

Why the index and not the lock: the head lock is written by whoever opened the pull request; only
the index says which bytes a file name stands for. The index URL is the *base* matrix's for every
index the base defines (a PR that points `pypi` elsewhere is reported by the fields check and
still verified against the trusted URL). Pages are fetched fresh; an index that cannot be reached
raises `Unreachable` (exit 3): an unverified file is never a pass. `--offline` uses cached pages,
and a page the cache lacks is the same exit 3.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from packaging.utils import canonicalize_name

from envbuilder.errors import BadInput
from envbuilder.gate.checks.artifacts import LockedFile, new_files
from envbuilder.gate.context import GateContext
from envbuilder.gate.model import GateFinding
from envbuilder.gate.sources import Side


def _urls(side: Side | None) -> dict[str, str]:
    from envbuilder.index.config import default_index_url
    from envbuilder.resolve.locker import index_urls

    if side is None:
        return {}
    if side.target is None:
        return {"pypi": default_index_url()}
    return index_urls(side.target)


def index_urls_for(ctx: GateContext, names: set[str]) -> dict[str, str]:
    """Index name -> URL: the base's definition first, the head's only for names the base lacks."""
    urls = {**_urls(ctx.head), **_urls(ctx.base)}
    unknown = sorted(names - urls.keys())
    if unknown:
        raise BadInput(f"{ctx.head.path}: key 'source.index': {', '.join(map(repr, unknown))} is not an index "
                       "that the matrix defines")
    return {name: urls[name] for name in names}


def check_index(ctx: GateContext) -> Iterator[GateFinding]:
    fresh = new_files(ctx)
    for file in (f for f in fresh if f.index is None):
        yield ctx.finding(file.package, "artifact-unverified", "error",
                          f"{file.package} {file.version}: {file.filename} names no index (its source is git), so "
                          "nothing can vouch for its bytes; a git source builds from its commit and locks no file",
                          line=ctx.key_line("file", file.filename))
    wanted = [f for f in fresh if f.index is not None]
    if not wanted:
        return
    from envbuilder.index import IndexClient

    by_index: dict[str, list[LockedFile]] = defaultdict(list)
    for file in wanted:
        by_index[file.index].append(file)
    urls = index_urls_for(ctx, set(by_index))
    with IndexClient(urls, offline=ctx.options.offline, page_ttl=0) as client:
        for index, files in sorted(by_index.items()):
            pages = client.files_many({f.package for f in files}, index)
            for file in files:
                listed = {i.filename: i for i in pages.get(canonicalize_name(file.package), ())}
                yield from _judge(ctx, client, index, file, listed.get(file.filename))


def _judge(ctx: GateContext, client, index: str, file: LockedFile, listed) -> Iterator[GateFinding]:
    line = ctx.key_line("file", file.filename)
    label = f"{file.package} {file.version}: {file.filename}"
    if listed is None:
        yield ctx.finding(file.package, "artifact-not-on-index", "error",
                          f"{label} is not on index {index!r}: nothing vouches for these bytes", line=line)
        return
    if listed.sha256 is None:
        yield ctx.finding(file.package, "artifact-unverified", "error",
                          f"{label}: index {index!r} publishes no sha256 for it, so the lock's hash cannot be checked",
                          line=line)
        return
    if listed.sha256 != file.sha256:
        yield ctx.finding(file.package, "artifact-hash-mismatch", "error",
                          f"{label} has sha256 {file.sha256} in the lock, {listed.sha256} on index {index!r}",
                          line=line)
        return
    size = client.size(listed)
    if size != file.size:
        yield ctx.finding(file.package, "artifact-size-mismatch", "error",
                          f"{label} has size {file.size} in the lock, {size} on index {index!r}", line=line)
    if listed.yanked is not None:
        reason = f": {listed.yanked}" if listed.yanked else ""
        yield ctx.finding(file.package, "artifact-yanked", "warning",
                          f"{label} is yanked on index {index!r}{reason}", line=line)
