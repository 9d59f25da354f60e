"""Link the head lock from its binaries, as `lock --link` did, and report what the change broke.

Trust: the lock only *claims* a linkage digest per wheel. Every summary used here comes from
this machine's cache (computed from the artifact's own bytes, keyed and verified by sha256) or is
recomputed now from the index by range reads; a summary whose digest differs from the lock's
claim is an error (`linkage-mismatch`). The verdict therefore depends only on the artifacts, so
every machine gives the same one. Runs for locks that record linkage (made with `lock --link`),
or for any lock with `gate --link`; a finding the base already had is not new.
"""

from __future__ import annotations

from collections.abc import Iterator

from envbuilder.abi.linkage import summary_digest
from envbuilder.abi.linkcheck import ClosureWheel, check_closure, closure_of_lock, lock_manifest, recorded_digests
from envbuilder.gate.context import GateContext
from envbuilder.gate.model import GateFinding
from envbuilder.gate.sources import Side


def _with_urls(ctx: GateContext, side: Side, wheels: list[ClosureWheel], client) -> list[ClosureWheel]:
    from dataclasses import replace

    from envbuilder.abi import summaries

    index_of = {p.name: p.source.index for p in side.lock.packages}
    missing = [w for w in wheels if w.sha256 and summaries.load(w.sha256) is None and index_of.get(w.name)]
    if not missing:
        return wheels
    urls = {}
    for index in sorted({index_of[w.name] for w in missing}):
        pages = client.files_many({w.name for w in missing if index_of[w.name] == index}, index)
        urls.update({f.sha256: f.url for files in pages.values() for f in files if f.sha256})
    return [replace(w, url=urls.get(w.sha256 or "")) for w in wheels]


def _link(ctx: GateContext, side: Side, client):
    wheels = _with_urls(ctx, side, closure_of_lock(side.lock), client) if client else closure_of_lock(side.lock)
    python = str(side.lock.environment.get("python", "3.12"))
    apt = tuple(side.target.toolchain.apt) if side.target is not None else ()
    return check_closure(wheels, lock_manifest(side.lock), client.http if client else None, python=python,
                         fetch=client is not None, apt=apt)


def check_linkage(ctx: GateContext) -> Iterator[GateFinding]:
    claimed = recorded_digests(ctx.head.lock)
    if not claimed and not ctx.options.link:
        return
    from envbuilder.gate.checks.index import index_urls_for
    from envbuilder.index import IndexClient

    names = {p.source.index for p in ctx.head.lock.packages if p.source.index}
    with IndexClient(index_urls_for(ctx, names), offline=ctx.options.offline) as client:
        head = _link(ctx, ctx.head, client)
        base = _link(ctx, ctx.base, client) if ctx.base is not None and (
            recorded_digests(ctx.base.lock) or ctx.options.link) else None
    for sha, digest in sorted(claimed.items()):
        summary = head.summaries.get(sha)
        if summary is not None and summary_digest(summary) != digest:
            package = next(p.name for p in ctx.head.lock.packages if any(a.sha256 == sha for a in p.artifacts))
            yield ctx.finding(package, "linkage-mismatch", "error",
                              f"{summary.filename}: the lock claims linkage {digest}, its bytes give "
                              f"{summary_digest(summary)}; re-lock with `envbuilder lock --link`",
                              line=ctx.key_line("file", summary.filename))
    before = {(f.package, f.kind, f.file, f.library, f.symbol) for f in base.report.errors} if base else set()
    for finding in head.report.errors:
        if finding.kind == "arch-coverage":
            continue  # per-wheel coverage is the ABI rules' (check_rules)
        key = (finding.package, finding.kind, finding.file, finding.library, finding.symbol)
        yield GateFinding(package=finding.package, rule=f"link-{finding.kind}", severity="error",
                          why=finding.message, new=key not in before, file=ctx.head.path,
                          line=ctx.package_line(finding.package))
