"""The smoke client's own ceiling: chunks/s on one core, and the most concurrent streams it holds.

Usage: .venv/bin/python bench/smoke/ceiling.py [--levels 1,64,256,1024] [--tokens 256] [--streams 1024,2048,4096]

Starts chunk_server.py (pinned to CPU 1) and drives it with envbuilder's own client (pinned to
CPU 0), exactly as `envbuilder smoke` does: the hot loop, then SSE/JSON parsing after the level.
Reports wall-clock chunks/s and chunks per client CPU-second (process_time: the one-core figure),
with and without the after-the-fact parsing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from envbuilder.smoke.client import Session
from envbuilder.smoke.metrics import max_in_flight
from envbuilder.smoke.profile import SmokeProfile
from envbuilder.smoke.records import to_result
from envbuilder.smoke.runner import fire

HERE = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(port: int, tokens: int) -> subprocess.Popen:
    env = {**os.environ, "BENCH_SERVER_CPU": "1"}
    proc = subprocess.Popen([sys.executable, str(HERE / "chunk_server.py"), str(port), "--tokens", str(tokens)], env=env)
    for _ in range(100):
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("chunk server did not start")


async def level(url: str, concurrency: int, requests: int, tokens: int) -> dict:
    profile = SmokeProfile(max_tokens=tokens, concurrency=[concurrency], request_timeout_s=600)
    session = Session(url, profile, "bench", max_connections=concurrency)
    prompts = ["hello world"] * requests
    cpu0, wall0 = time.process_time(), time.perf_counter()
    exchanges = await fire(session, prompts, concurrency, None, 0, lambda ex: None)
    cpu1, wall1 = time.process_time(), time.perf_counter()
    results = [to_result(ex, session.api) for ex in exchanges]
    cpu2 = time.process_time()
    await session.aclose()
    ok = [r for r in results if r.ok]
    chunks = sum(len(r.content_times) for r in ok)
    return {"concurrency": concurrency, "requests": requests, "ok": len(ok), "failed": len(results) - len(ok),
            "chunks": chunks, "wall_s": wall1 - wall0, "chunks_per_s_wall": chunks / (wall1 - wall0),
            "chunks_per_cpu_s_hot": chunks / (cpu1 - cpu0), "chunks_per_cpu_s_total": chunks / (cpu2 - cpu0),
            "max_concurrent": max_in_flight(results),
            "errors": sorted({r.error_kind for r in results if not r.ok})}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", default="1,64,256,1024")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--streams", default="1024,2048,4096", help="concurrency levels for the most-streams probe")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    port = free_port()
    server = start_server(port, args.tokens)
    url = f"http://127.0.0.1:{port}"
    try:
        print(f"| concurrency | requests | chunks | wall s | chunks/s (wall) | chunks/CPU-s hot loop | chunks/CPU-s incl. parsing | max in flight | failed |")
        print("|---|---|---|---|---|---|---|---|---|")
        for c in [int(x) for x in args.levels.split(",")]:
            r = asyncio.run(level(url, c, max(2 * c, 16), args.tokens))
            print(f"| {c} | {r['requests']} | {r['chunks']:,} | {r['wall_s']:.2f} | {r['chunks_per_s_wall']:,.0f} | "
                  f"{r['chunks_per_cpu_s_hot']:,.0f} | {r['chunks_per_cpu_s_total']:,.0f} | {r['max_concurrent']} | "
                  f"{r['failed']} {' '.join(r['errors'])} |", flush=True)
        print("\nmost concurrent streams (one request per stream, 64 tokens each):")
        for c in [int(x) for x in args.streams.split(",")]:
            r = asyncio.run(level(url, c, c, 64))
            print(f"  {c:>6} streams: {r['ok']} ok, {r['failed']} failed {r['errors']}, max in flight {r['max_concurrent']}, "
                  f"{r['chunks_per_s_wall']:,.0f} chunks/s", flush=True)
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
