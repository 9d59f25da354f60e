"""Everything besides package versions that decides what an image holds or runs.

Base image, toolchain, target environment, index names and definitions, package sources (git
commits), build recipes and the serve profile: the ABI rules see none of these as a "package
change", so a pull request could otherwise alter them under a "no package changes, pass". Each
change is a finding that names the old and new value: a `warning` where a reviewer must look (the
verdict becomes warn; `--strict` rejects), an `error` where the change removes a guarantee (a
base image that loses its digest pin), `info` where it only follows another change (a build
recipe that now names the lock's new torch; the timestamp derived from the newest upload).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from packaging.utils import canonicalize_name

from envbuilder.gate.context import GateContext
from envbuilder.gate.model import GateFinding
from envbuilder.lock.model import BuildRecipe, Lock, LockedPackage

FOLLOWS = {"source-date-epoch": "the newest upload time among the locked files"}
IMAGE_KEYS = ("base-image", "base-image-pinned")


def _show(value: Any) -> str:
    return "(none)" if value is None else json.dumps(value, sort_keys=True)


def changed_keys(old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """(key, old, new) for every key whose value differs, in key order; absent is None."""
    for key in sorted(old.keys() | new.keys()):
        if old.get(key) != new.get(key):
            yield key, old.get(key), new.get(key)


def check_fields(ctx: GateContext) -> Iterator[GateFinding]:
    base = ctx.base.lock if ctx.base else None
    if base is None:
        yield from _new_target(ctx)
        return
    head = ctx.head.lock
    yield from _image(ctx, base, head)
    for key, old, new in changed_keys(base.toolchain, head.toolchain):
        if key in IMAGE_KEYS:
            continue
        severity, why = ("info", f"follows {FOLLOWS[key]}") if key in FOLLOWS else ("warning", "review it")
        yield ctx.finding("*", "toolchain-changed", severity, f"toolchain {key}: {_show(old)} -> {_show(new)}; {why}",
                          line=ctx.key_line(key))
    for key, old, new in changed_keys(base.environment, head.environment):
        yield ctx.finding("*", "environment-changed", "warning",
                          f"target environment {key}: {_show(old)} -> {_show(new)}", line=ctx.key_line(key))
    for name in sorted(set(base.indexes) ^ set(head.indexes)):
        verb = "adds" if name in head.indexes else "removes"
        yield ctx.finding("*", "indexes-changed", "warning", f"the lock {verb} index {name!r}",
                          line=ctx.key_line("indexes"))
    yield from _packages(ctx, base, head)
    yield from _matrix(ctx)


def _image(ctx: GateContext, base: Lock, head: Lock) -> Iterator[GateFinding]:
    old, new = base.toolchain.get("base-image"), head.toolchain.get("base-image")
    line = ctx.key_line("base-image")
    if base.toolchain.get("base-image-pinned") and not head.toolchain.get("base-image-pinned"):
        yield ctx.finding("*", "base-image-unpinned", "error",
                          f"base image {_show(new)} is no longer pinned by digest (was {_show(old)}): every build "
                          "may get other bytes", line=line)
    elif old != new:
        yield ctx.finding("*", "base-image-changed", "warning",
                          f"base image {_show(old)} -> {_show(new)}: everything in the image changes; review it",
                          line=line)


def _packages(ctx: GateContext, base: Lock, head: Lock) -> Iterator[GateFinding]:
    old = {canonicalize_name(p.name): p for p in base.packages}
    for package in head.packages:
        before = old.get(canonicalize_name(package.name))
        if before is None:
            continue
        if before.source != package.source:
            yield ctx.finding(package.name, "source-changed", "warning",
                              f"{package.name} source {_source(before)} -> {_source(package)}: "
                              "review what the new source holds", line=ctx.package_line(package.name))
        yield from _recipe(ctx, before, package, head)
        yield from _entry(ctx, before, package)


def _entry(ctx: GateContext, before: LockedPackage, after: LockedPackage) -> Iterator[GateFinding]:
    """The rest of a package's entry: where it installs (marker) and what it pulls in (dependencies)."""
    line = ctx.package_line(after.name)
    if before.marker != after.marker:
        yield ctx.finding(after.name, "marker-changed", "warning",
                          f"{after.name} marker {_show(before.marker)} -> {_show(after.marker)}: decides whether it "
                          "is installed at all", line=line)
    same_files = sorted(a.filename for a in before.artifacts) == sorted(a.filename for a in after.artifacts)
    if before.version == after.version and same_files and set(before.dependencies) != set(after.dependencies):
        added = sorted(set(after.dependencies) - set(before.dependencies))
        removed = sorted(set(before.dependencies) - set(after.dependencies))
        yield ctx.finding(after.name, "dependencies-changed", "warning",
                          f"{after.name} {after.version}: the same files now record other dependencies "
                          f"(added {added}, removed {removed}); `envbuilder lock --check` says whether the "
                          "matrix resolves to this", line=line)


def _source(package: LockedPackage) -> str:
    """The source as JSON, any URL without its credentials (a lock must hold none; never echo one)."""
    from envbuilder.index.http import redact

    return _show({key: redact(str(value)) for key, value in package.source.to_dict().items()})


def _recipe(ctx: GateContext, before: LockedPackage, after: LockedPackage, head: Lock) -> Iterator[GateFinding]:
    old, new = before.build, after.build
    if old == new:
        return
    line = ctx.package_line(after.name)

    def finding(severity: str, why: str) -> GateFinding:
        return ctx.finding(after.name, "build-recipe-changed", severity, f"{after.name}: {why}", line=line)

    if old is None or new is None:
        yield finding("info", "now built from source" if new is not None else "now a prebuilt file, no source build")
        return
    for key, was, now in changed_keys(old.env, new.env):
        yield finding("warning", f"build env {key}: {_show(was)} -> {_show(now)}")
    if old.cuda != new.cuda:
        yield finding("warning", f"build CUDA {_show(old.cuda)} -> {_show(new.cuda)}")
    if old.requires != new.requires:
        follows = _follows_lock(new, head)
        yield finding("info" if follows else "warning",
                      f"build requires {list(old.requires)} -> {list(new.requires)}"
                      + ("; follows the lock's versions" if follows else "; not the lock's versions: review"))
    if (old.env, old.cuda, old.requires) == (new.env, new.cuda, new.requires) and old.inputs_digest != new.inputs_digest:
        yield finding("info", f"build inputs digest {old.inputs_digest} -> {new.inputs_digest} "
                              "(the source files or a matrix build setting changed)")


def _follows_lock(recipe: BuildRecipe, lock: Lock) -> bool:
    """Every `name==version` the recipe builds against is that package's version in the lock."""
    for pin in recipe.requires:
        name, _, version = pin.partition("==")
        locked = lock.package(name)
        if locked is None or locked.version != version:
            return False
    return True


def _dump(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_defaults=True) if model is not None else {}


def _index_defs(target: Any) -> dict[str, Any]:
    from envbuilder.index.http import redact

    indexes = getattr(target, "indexes", None) or {}
    out = {}
    for name, index in indexes.items():
        data = _dump(index)
        if "url" in data:
            data["url"] = redact(data["url"])
        out[name] = data
    return out


def _matrix(ctx: GateContext) -> Iterator[GateFinding]:
    """Matrix sections the lock does not record: the serve profile and where each index lives."""
    base, head = ctx.base.target if ctx.base else None, ctx.head.target
    if base is None or head is None:
        return
    file = ctx.head.matrix_path
    for key, old, new in changed_keys(_dump(getattr(base, "serve", None)), _dump(getattr(head, "serve", None))):
        yield ctx.finding("*", "serve-changed", "warning", f"serve {key}: {_show(old)} -> {_show(new)}: "
                          "this runs in the image; review it", file=file)
    for name, old, new in changed_keys(_index_defs(base), _index_defs(head)):
        trusted = "; new files are still checked against the base's definition" if old else ""
        yield ctx.finding("*", "index-changed", "warning",
                          f"index {name!r}: {_show(old)} -> {_show(new)}{trusted}", file=file)


def _new_target(ctx: GateContext) -> Iterator[GateFinding]:
    """A target the change adds: no base to compare with, so what it would build is listed for review."""
    lock, target = ctx.head.lock, ctx.head.target
    pinned = lock.toolchain.get("base-image-pinned")
    yield ctx.finding("*", "target-added", "info",
                      f"new target: base image {_show(lock.toolchain.get('base-image'))}"
                      f"{'' if pinned else ' (not pinned by digest)'}, every file checked against the index",
                      line=ctx.key_line("base-image"))
    for name, data in _index_defs(target).items():
        if data != {"default": True} or name != "pypi":
            yield ctx.finding("*", "index-changed", "warning", f"new index {name!r}: {_show(data)}: review it",
                              file=ctx.head.matrix_path)
