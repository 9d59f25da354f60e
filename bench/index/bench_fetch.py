"""Time the index client on a real closure: project pages + core metadata, cold and warm.

    .venv/bin/python bench/index/bench_fetch.py [--workers 16] [--roots "sglang==0.5.8.post1" ...]

The closure is found by a greedy breadth-first walk (newest version that fits the target's
Python 3.12 / manylinux x86_64 tags and the first specifier seen; a benchmark stand-in for the
real resolver, fetched in the same waves a resolver would fan out). Then, with the closure's
pins known, a flat run fetches every page, then every metadata, in two parallel waves: what a
re-lock with a lock file in hand costs. Each is timed with an empty cache (cold), a full cache
(warm: pages within their TTL, metadata by hash) and a full cache with page_ttl=0 (warm-online:
pages asked again, metadata cached). Uses the user's default index; needs network.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from functools import lru_cache
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import compatible_tags, cpython_tags
from packaging.utils import canonicalize_name

from envbuilder.index import Cache, CoreMetadata, DynamicMetadata, FileInfo, IndexClient
from envbuilder.index.filters import wheel_platform_filter

PLATFORMS = [f"manylinux_2_{m}_x86_64" for m in range(39, 4, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]
TAGS = {t: i for i, t in enumerate([*cpython_tags((3, 12), platforms=PLATFORMS),
                                      *compatible_tags((3, 12), "cp312", PLATFORMS)])}
ENV = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux",
       "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
       "implementation_name": "cpython", "platform_python_implementation": "CPython"}
PY = "3.12.3"


@lru_cache(maxsize=None)
def python_ok(requires_python: str) -> bool:
    try:
        return SpecifierSet(requires_python).contains(PY, prereleases=True)
    except InvalidSpecifier:
        return False


def best_file(files: list[FileInfo], spec: SpecifierSet) -> FileInfo | None:
    """Newest fitting version; its best-ranked wheel, else its sdist."""
    def fits(f: FileInfo) -> bool:
        if f.is_yanked or not f.valid or not spec.contains(f.version, prereleases=False):
            return False
        if f.requires_python and not python_ok(f.requires_python):
            return False
        return f.kind == "sdist" or any(t in TAGS for t in f.tags)

    usable = [f for f in files if fits(f)]
    if not usable:
        return None
    newest = max(f.version for f in usable)
    same = [f for f in usable if f.version == newest]
    return min(same, key=lambda f: (f.kind != "wheel", min((TAGS[t] for t in f.tags if t in TAGS), default=0)))


def deps(meta: CoreMetadata, extras: set[str]) -> list[Requirement]:
    out = []
    for req in meta.requirements():
        if req.marker is None or any(req.marker.evaluate({**ENV, "extra": e}) for e in (extras or {""})):
            out.append(req)
    return out


def discover(client: IndexClient, roots: list[str]) -> tuple[dict[str, FileInfo], list[str]]:
    """Breadth-first greedy closure; each wave fetches its pages, then metadata, in parallel."""
    chosen: dict[str, FileInfo] = {}
    extras: dict[str, set[str]] = {}
    wave = [Requirement(r) for r in roots]
    problems: list[str] = []
    while wave:
        new = {}
        for req in wave:
            name = canonicalize_name(req.name)
            extras.setdefault(name, set()).update(req.extras)
            if name not in chosen and name not in new:
                new[name] = req
        pages = client.files_many(new)
        picked = {}
        for name, req in new.items():
            f = best_file(pages[name], req.specifier)
            if f is None:
                problems.append(f"no file for {req}")
                continue
            picked[name] = chosen[name] = f
        futures = {name: client.metadata_async(f) for name, f in picked.items()}
        wave = []
        for name, fut in futures.items():
            try:
                wave += deps(fut.result(), extras[name])
            except DynamicMetadata as exc:
                problems.append(str(exc).split(";")[0])
    return chosen, problems


def flat(client: IndexClient, pins: dict[str, str]) -> tuple[int, str]:
    """Two parallel waves: every pinned project's page, then every pinned file's metadata."""
    t0 = time.perf_counter()
    pages = client.files_many(pins)
    t1 = time.perf_counter()
    files = [best_file(pages[n], SpecifierSet(f"=={v}")) for n, v in pins.items()]
    t2 = time.perf_counter()
    metas = client.metadata_many(f for f in files if f is not None and f.kind == "wheel")
    t3 = time.perf_counter()
    return len(metas), f"pages {t1 - t0:.2f} s + metadata {t3 - t2:.2f} s (selection {t2 - t1:.2f} s), "


def timed(label: str, fn, results: list[tuple[str, float, float, str]]) -> object:
    start, cpu = time.perf_counter(), time.process_time()
    value, info = fn()
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    results.append((label, elapsed, cpu, info))
    print(f"{label:<20} {elapsed:6.2f} s wall {cpu:6.2f} s cpu  {info}", flush=True)
    return value


def summary(c: IndexClient, extra: str = "") -> str:
    stats = c._http.stats if c._http else None
    requests, mb = (stats.requests, stats.bytes_received / 1e6) if stats else (0, 0.0)
    return f"{extra}{requests} requests, {mb:.1f} MB, metadata from {dict(c.metadata_sources)}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--roots", nargs="*", default=["sglang==0.5.8.post1", "torch==2.9.1"])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="envbuilder-bench-"))
    results: list[tuple[str, float, float, str]] = []
    pins: dict[str, str] = {}
    keep = wheel_platform_filter("x86_64")
    try:
        for label, ttl, fresh in (("walk cold", 600.0, True), ("walk warm", 600.0, False),
                                  ("walk warm-online", 0.0, False)):
            if fresh:
                shutil.rmtree(root / "walk", ignore_errors=True)

            def run(ttl=ttl):
                with IndexClient(cache=Cache(root / "walk"), max_workers=args.workers, page_ttl=ttl,
                                 keep=keep) as c:
                    chosen, problems = discover(c, args.roots)
                    info = summary(c, f"{len(chosen)} projects, ")
                return chosen, info + (f"; skipped: {problems}" if problems else "")

            chosen = timed(label, run, results)
            pins = {n: str(f.version) for n, f in chosen.items()}
        for label, ttl in (("flat cold", 600.0), ("flat warm", 600.0), ("flat warm-online", 0.0)):
            if label == "flat cold":
                shutil.rmtree(root / "flat", ignore_errors=True)

            def run_flat(ttl=ttl):
                with IndexClient(cache=Cache(root / "flat"), max_workers=args.workers, page_ttl=ttl,
                                 keep=keep) as c:
                    n, phases = flat(c, pins)
                    info = summary(c, f"{phases}{len(pins)} pages, {n} metadata, ")
                return n, info

            timed(label, run_flat, results)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n| run ({args.workers} workers) | wall | CPU |\n|---|---|---|")
    for label, elapsed, cpu, _ in results:
        print(f"| {label} | {elapsed:.2f} s | {cpu:.2f} s |")


if __name__ == "__main__":
    main()
