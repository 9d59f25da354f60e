"""Time `envbuilder gate` on the shipped blackwell-sm120 lock (a tqdm patch bump), in-process and as a CLI.

    .venv/bin/python bench/gate/bench_gate.py [--runs 5]

The in-process number is the gate's own work (read two locks, load the matrix and knowledge,
recompute every package's facets with cached inspection results, apply the rules, diff); the CLI
number adds interpreter start-up and the import of every command module.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.gate.stack import stack_lock, with_package, write  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    from envbuilder.gate import gate_files

    base = stack_lock()
    old = base.package("tqdm").version.split(".")
    new = f"{old[0]}.{old[1]}.{int(old[2]) + 1}"
    with tempfile.TemporaryDirectory() as tmp:
        base_path = write(base, Path(tmp) / "base.lock.toml")
        head_path = write(with_package(base, "tqdm", new, f"tqdm-{new}-py3-none-any.whl"), Path(tmp) / "head.lock.toml")
        gate_files(base_path, head_path, root=ROOT)  # warm: knowledge parsed, inspection cache touched
        inproc = []
        for _ in range(runs):
            start = time.perf_counter()
            result = gate_files(base_path, head_path, root=ROOT)
            inproc.append(time.perf_counter() - start)
        cli = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "envbuilder", "gate", "--base", str(base_path), "--head",
                            str(head_path), "--format", "json"], cwd=ROOT, capture_output=True, check=False)
            cli.append(time.perf_counter() - start)
    print(f"packages: {len(base.packages)}  verdict: {result.verdict}")
    print(f"gate in-process: median {statistics.median(inproc):.3f} s  min {min(inproc):.3f} s  ({runs} runs)")
    print(f"gate CLI       : median {statistics.median(cli):.3f} s  min {min(cli):.3f} s  ({runs} runs)")


if __name__ == "__main__":
    main()
