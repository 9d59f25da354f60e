"""Time `envbuilder gate` on the shipped blackwell-sm120 lock, in-process and as a CLI.

    .venv/bin/python bench/gate/bench_gate.py [--runs 5]

Two cases: `unchanged` (the shipped lock against itself: every check runs, no file is new, so
nothing is fetched) and `tqdm bump` (one new file, checked against a local index server: one
project page fetched). The in-process number is the gate's own work (read two locks, load the
matrix and knowledge, recompute every package's facets, run every check, diff); the CLI number
adds interpreter start-up and imports. CLI CPU is user+system time of the process: on a shared,
loaded machine wall time is mostly waiting for a core.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.gate.stack import publish, stack_lock, tqdm_bump, write  # noqa: E402
from tests.support.index_server import IndexServer  # noqa: E402


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench(name: str, base_path: Path, head_path: Path, runs: int) -> None:
    from envbuilder.gate import gate_files

    result = gate_files(base_path, head_path, root=ROOT)  # warm: knowledge parsed, caches touched
    inproc, cli, cpu = [], [], []
    for _ in range(runs):
        start = time.perf_counter()
        gate_files(base_path, head_path, root=ROOT)
        inproc.append(time.perf_counter() - start)
    for _ in range(runs):
        start, before = time.perf_counter(), _cpu()
        subprocess.run([sys.executable, "-m", "envbuilder", "gate", "--base", str(base_path), "--head",
                        str(head_path), "--format", "json"], cwd=ROOT, capture_output=True, check=False)
        cli.append(time.perf_counter() - start)
        cpu.append(_cpu() - before)
    print(f"{name}: verdict {result.verdict}")
    print(f"  gate in-process: median {statistics.median(inproc):.3f} s  min {min(inproc):.3f} s  ({runs} runs)")
    print(f"  gate CLI wall  : median {statistics.median(cli):.3f} s  min {min(cli):.3f} s")
    print(f"  gate CLI CPU   : median {statistics.median(cpu):.3f} s  min {min(cpu):.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    base = stack_lock()
    print(f"packages: {len(base.packages)}  load average: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp, IndexServer() as index:
        os.environ.update({"PIP_INDEX_URL": index.url, "PIP_CONFIG_FILE": os.devnull,
                           "ENVBUILDER_CACHE_DIR": str(Path(tmp) / "cache")})
        base_path = write(base, Path(tmp) / "base.lock.toml")
        bench("unchanged (nothing to fetch)", base_path, write(base, Path(tmp) / "same.lock.toml"), runs)
        bumped = write(publish(index, tqdm_bump(base), base), Path(tmp) / "tqdm.lock.toml")
        bench("tqdm bump (one page from a local index)", base_path, bumped, runs)


if __name__ == "__main__":
    main()
