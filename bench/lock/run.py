"""Benchmark: `envbuilder lock blackwell-sm120` against `uv pip compile` and `pip install --dry-run
--report`, on the same requirement set and the same target (CPython 3.12, manylinux x86_64), cold
(empty caches) and warm, in one run. Prints a Markdown table for the README.

    .venv/bin/python bench/lock/run.py [--repeats 3] [--skip-pip]

Needs `uv` (pip install uv) and network access to the default index. Nothing here is asserted:
speed is measured, not tested.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = "blackwell-sm120"
# The matrix's requirement set, in each tool's own words. transformers overrides sglang's pin.
REQUIREMENTS = ["torch==2.9.1", "triton==3.5.1", "flash-attn==2.8.3", "flashinfer-python==0.6.3",
                "flashinfer-cubin==0.6.3", "sgl-kernel==0.3.21", "sglang==0.5.9", "transformers>=5.2.0,<5.4"]
PIP_PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in range(39, 16, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - start, proc.returncode, (proc.stdout + proc.stderr)[-600:]


def envbuilder_cmd(work: Path, offline: bool = False) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "ENVBUILDER_ROOT": str(work), "ENVBUILDER_CACHE_DIR": str(work / "cache"),
           # pages are re-asked on every run, as uv does without cache headers: warm = metadata cached
           "ENVBUILDER_PAGE_TTL": "0"}
    return [str(ROOT / ".venv/bin/envbuilder"), "lock", TARGET, "--refresh"] + (["--offline"] if offline else []), env


def uv_cmd(work: Path, offline: bool = False) -> tuple[list[str], dict[str, str]]:
    (work / "req.in").write_text("\n".join(r for r in REQUIREMENTS if not r.startswith("transformers")) + "\n")
    (work / "overrides.txt").write_text("transformers>=5.2.0,<5.4\n")
    # the same static metadata for flash-attn that the matrix gives envbuilder (uv's dependency-metadata)
    (work / "uv.toml").write_text('[[dependency-metadata]]\nname = "flash-attn"\nversion = "2.8.3"\n'
                                  'requires-dist = ["torch", "einops"]\n')
    env = {**os.environ, "UV_CACHE_DIR": str(work / "uv-cache")}
    uv = shutil.which("uv") or str(ROOT / ".venv/bin/uv")
    return [uv, "pip", "compile", "req.in", "--override", "overrides.txt", "--python-platform",
            "x86_64-manylinux_2_28", "--python-version", "3.12", "--generate-hashes", "-o", "out.txt",
            "--no-header", "--quiet"] + (["--offline"] if offline else []), env


def pip_cmd(work: Path, offline: bool = False) -> tuple[list[str], dict[str, str]]:
    # pip refuses sdists with --platform, so flash-attn (sdist only) is left out of pip's set, and pip
    # has no overrides (a constraint cannot beat sglang's transformers==4.57.1), so it keeps that pin.
    (work / "pip-req.txt").write_text("\n".join(r for r in REQUIREMENTS if not r.startswith(("flash-attn", "transformers"))) + "\n")
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_CONSTRAINT": "", "PIP_CACHE_DIR": str(work / "pip-cache")}
    env.pop("PIP_FIND_LINKS", None)
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--report", "report.json",
           "--python-version", "3.12", "--only-binary=:all:", "--target", str(work / "t"), "-r", "pip-req.txt", "-q"]
    for platform in PIP_PLATFORMS:
        cmd += ["--platform", platform]
    return cmd, env


def prepare(work: Path) -> None:
    (work / "matrices").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "matrices" / f"{TARGET}.yaml", work / "matrices")


def measure(name: str, make, repeats: int) -> dict[str, object]:
    cold, warm, offline = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
            work = Path(tmp)
            prepare(work)
            cmd, env = make(work)
            seconds, rc, tail = timed(cmd, env, work)
            if rc != 0:
                return {"tool": name, "error": tail}
            cold.append(seconds)
            warm.append(timed(cmd, env, work)[0])
            if "pip install" not in name:  # pip has no offline resolve
                cmd, env = make(work, offline=True)
                seconds, rc, tail = timed(cmd, env, work)
                offline.append(seconds if rc == 0 else float("nan"))
    return {"tool": name, "cold": statistics.median(cold), "warm": statistics.median(warm),
            "offline": statistics.median(offline) if offline else None, "runs": repeats}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-pip", action="store_true", help="pip downloads ~5 GB of wheels per cold run")
    parser.add_argument("--only", choices=["envbuilder", "uv", "pip"], help="measure one tool")
    args = parser.parse_args()
    tools = [("envbuilder lock", envbuilder_cmd), ("uv pip compile", uv_cmd)]
    if not args.skip_pip:
        tools.append(("pip install --dry-run --report", pip_cmd))
    if args.only:
        tools = [t for t in tools if t[0].startswith(args.only)]
    rows = [measure(name, make, args.repeats if "pip install" not in name else 1) for name, make in tools]
    print(f"| tool ({TARGET} set, cp312 manylinux x86_64) | cold (s) | warm (s) | warm offline (s) | runs |")
    print("|---|---|---|---|---|")
    for row in rows:
        if "error" in row:
            print(f"| {row['tool']} | failed: {str(row['error']).splitlines()[-1][:80]} | | | |")
        else:
            off = "-" if row["offline"] is None else f"{row['offline']:.2f}"
            print(f"| {row['tool']} | {row['cold']:.1f} | {row['warm']:.2f} | {off} | {row['runs']} |")


if __name__ == "__main__":
    main()
