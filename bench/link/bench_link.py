"""Cold and warm linkage check of a shipped lock's whole closure (default: blackwell-sm120).

    .venv/bin/python bench/link/bench_link.py [--target blackwell-sm120] [--workers 4] [--member-workers 2]

Cold: a fresh summary cache; every wheel's central directory is range-read, every ELF member is
fetched in one streaming range request and inflated on the fly (parallel across wheels and
members), then summarized and the closure linked. Warm: the same check again (summaries cached by
sha256, verified on read). Prints seconds, bytes fetched against the closure's total artifact
size, network and CPU seconds per GB inflated, and the summary store's size. Needs the index.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _urls(lock, target) -> dict[str, str]:
    from envbuilder.index import IndexClient
    from envbuilder.resolve.locker import index_urls

    wanted: dict[str, set[str]] = {}
    for package in lock.packages:
        if package.source.index:
            wanted.setdefault(package.source.index, set()).add(package.name)
    urls = {}
    with IndexClient(index_urls(target)) as client:
        for index, names in wanted.items():
            for files in client.files_many(names, index).values():
                urls.update({f.sha256: f.url for f in files if f.sha256})
    return urls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", default="blackwell-sm120")
    parser.add_argument("--workers", type=int, default=4, help="wheels in parallel")
    parser.add_argument("--member-workers", type=int, default=2, help="ELF members of one wheel in parallel")
    parser.add_argument("--cache", help="summary cache dir (default: a fresh temporary one)")
    args = parser.parse_args()

    from dataclasses import replace

    from envbuilder.abi.linkcheck import check_closure, closure_of_lock, lock_manifest
    from envbuilder.index.http import Http
    from envbuilder.lock import read_lock
    from envbuilder.matrix import load_target

    target = load_target(args.target, ROOT)
    lock = read_lock(ROOT / "locks" / f"{args.target}.lock.toml")
    cache = Path(args.cache or tempfile.mkdtemp(prefix="envbuilder-link-bench-"))
    os.environ["ENVBUILDER_CACHE_DIR"] = str(cache)
    urls = _urls(lock, target)
    wheels = [replace(w, url=urls.get(w.sha256 or "")) for w in closure_of_lock(lock)]
    total = sum(w.size or 0 for w in wheels if w.sha256)
    manifest = lock_manifest(lock)
    python = str(lock.environment.get("python", "3.12"))
    http = Http(max_connections=args.workers * args.member_workers)

    started = time.perf_counter()
    cold = check_closure(wheels, manifest, http, python=python, workers=args.workers)
    cold_s = time.perf_counter() - started
    warm_times = []
    for _ in range(3):
        started = time.perf_counter()
        warm = check_closure(wheels, manifest, None, python=python, fetch=False)
        warm_times.append(time.perf_counter() - started)
    store = sum(p.stat().st_size for p in (cache / "linkage").rglob("*.json.z"))
    gb = cold.stats.bytes_inflated / 1e9
    out = {
        "target": args.target, "packages": len(wheels), "wheels_with_elf": sum(1 for s in cold.summaries.values() if s.elfs),
        "elf_members": cold.stats.members, "cold_s": round(cold_s, 1), "warm_s": round(min(warm_times), 3),
        "closure_bytes": total, "bytes_fetched": cold.stats.bytes_fetched,
        "fetched_share": round(cold.stats.bytes_fetched / total, 3) if total else None,
        "inflated_bytes": cold.stats.bytes_inflated,
        "network_s_per_gb_inflated": round(cold.stats.network_s / gb, 2) if gb else None,
        "cpu_s_per_gb_inflated": round(cold.stats.cpu_s / gb, 2) if gb else None,
        "summary_store_bytes": store, "summary_dir": str(cache / "linkage"),
        "errors": [f.message for f in cold.report.errors if f.kind != "arch-coverage"][:10],
        "warm_same_verdict": [f.message for f in warm.report.findings] == [f.message for f in cold.report.findings],
        "workers": args.workers, "member_workers": args.member_workers, "cores": os.cpu_count(),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
