"""Regenerate the prediction = reality table (docs/abi-reality.md) from real wheels.

    .venv/bin/python bench/abi-reality/run.py [--ci] [--out docs/abi-reality.md]

Downloads every pair's wheels once into ~/.cache/envbuilder-reality (ENVBUILDER_REALITY_CACHE),
loads each pair in a clean debian:bookworm-slim container (tests/reality/harness.py), predicts it
with envbuilder's link check and writes both columns. Exit 1 if any pair differs.
Take the docker lock on a shared machine: `flock /tmp/eb-docker.lock .venv/bin/python bench/...`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.reality import harness  # noqa: E402
from tests.reality.compare import compare  # noqa: E402
from tests.reality.pairs import PAIRS, ci_pairs  # noqa: E402
from tests.reality.table import render, write  # noqa: E402

HEADER = """# ABI: prediction = reality

Each row is a real pair of wheels from the package index (cp311, manylinux x86_64). **Reality**: the
torch closure installed once per torch version with pip `--no-index` from the cached wheels, each pair
in a fresh venv made of hard links to it plus the consumer wheel installed with `--no-deps`, in a clean
`debian:bookworm-slim` system (Debian's python 3.11, glibc 2.36, no CUDA toolkit, a
`libcuda.so.1` stub where the NVIDIA container toolkit mounts the driver's), then, after `import torch`,
`dlopen(RTLD_NOW | RTLD_LOCAL)` of every ELF file the consumer installs, in the package's own load
order, with the loader's message verbatim (tests/reality/probe.py). **Prediction**: envbuilder's
link check (`envbuilder/abi/linkcheck.py` `check_wheels`) over the same wheel files, manifest
`debian-12-slim` (generated from that image). Equal means: the same files fail, each with the library or mangled symbol the loader
named among those predicted (ld.so stops at the first undefined symbol of a file; the prediction
lists them all), and pairs that load have no finding. A file that fails only because a sibling it
needs failed first is *blocked* and left out of both sides.

Regenerate: `flock /tmp/eb-docker.lock .venv/bin/python bench/abi-reality/run.py` (~10 GB of wheels,
cached across runs). CI runs the pairs marked (CI) in `tests/reality/test_abi_reality.py`.

{stats}
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ci", action="store_true", help="only the CI subset")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "abi-reality.md")
    parser.add_argument("--only", nargs="*", help="pair keys (consumer-version+torch-version) to load again")
    parser.add_argument("--phase", choices=["all", "reality", "predict"], default="all",
                        help="reality: only load the pairs (hold the docker lock for this part) and keep the "
                             "loader reports in the cache; predict: compare against those kept reports")
    args = parser.parse_args()
    pairs = ci_pairs() if args.ci else PAIRS
    if args.only:
        pairs = tuple(p for p in pairs if p.key in args.only)
    os.environ.setdefault("ENVBUILDER_CACHE_DIR", str(harness.cache_dir().parent / "envbuilder-cache"))
    started = time.monotonic()
    harness.fetch(pairs)
    fetched = time.monotonic()
    if args.phase == "predict":
        realities = {p.key: harness.load_kept(p) for p in pairs}
    else:
        realities = harness.run_reality(pairs)  # keeps each loader report as it comes
    loaded = time.monotonic()
    if args.phase == "reality":
        print(f"{len(pairs)} pairs loaded in {loaded - fetched:.0f} s; reports kept in {harness.kept_dir()}")
        return 0
    comparisons = [compare(realities[p.key]) for p in pairs]
    predicted = time.monotonic()
    equal = sum(c.matches for c in comparisons)
    runners = sorted({realities[p.key].report.get("runner", "docker") for p in pairs})
    where = {"docker": "a `debian:bookworm-slim` container (docker)",
             "chroot": "the same debootstrap minbase bookworm filesystem entered with unshare + chroot "
                       "(ENVBUILDER_REALITY_RUNNER=chroot: the docker engine was busy)"}
    stats = (f"Last run: {len(pairs)} pairs from {len({p.consumer for p in pairs})} consumer projects, "
             f"**{equal}/{len(pairs)} equal**; reality measured in {' and '.join(where[r] for r in runners)}; downloads (cached after the first run) {fetched - started:.0f} s, "
             f"{'loads in an earlier run' if args.phase == 'predict' else f'loads {loaded - fetched:.0f} s'}, predictions {predicted - loaded:.0f} s on a 2-core VM.")
    write(args.out, render(comparisons, HEADER.format(stats=stats)))
    print(stats)
    for c in comparisons:
        if not c.matches:
            print(f"MISMATCH {c.reality.pair.key}:\n{c.mismatch()}")
    return 0 if equal == len(pairs) else 1


if __name__ == "__main__":
    sys.exit(main())
