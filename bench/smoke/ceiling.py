"""The smoke client's own ceiling: chunks/s on one core, and the most concurrent streams it holds.

Usage: .venv/bin/python bench/smoke/ceiling.py [--levels 1,64,256,1024] [--tokens 256] [--streams 1024,2048,4096]
           [--aiperf PATH --tokenizer DIR]

Starts chunk_server.py (pinned to CPU 1) and drives it with envbuilder's own client (pinned to
CPU 0), exactly as `envbuilder smoke` does: the hot loop, then SSE/JSON parsing after the level.
Reports wall-clock chunks/s and chunks per client CPU-second (process_time: the one-core figure),
with and without the after-the-fact parsing. With `--aiperf`, the peer client runs the same levels
against the same server; its CPU is the user+sys time of all its processes (it runs several).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
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
sys.path.insert(0, str(HERE.parents[1] / "tests" / "smoke"))

from llm_servers import free_port  # noqa: E402


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


def peer(aiperf: str, tokenizer: str, url: str, concurrency: int, requests: int, tokens: int, work: Path) -> dict:
    import json

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([aiperf, "profile", "--model", "bench", "--url", url, "--endpoint-type", "completions", "--streaming",
                    "--tokenizer", tokenizer, "--isl", "16", "--isl-stddev", "0", "--osl", str(tokens),
                    "--osl-stddev", "0", "--use-legacy-max-tokens", "--use-server-token-count",
                    "--concurrency", str(concurrency), "--request-count", str(requests), "--artifact-dir", str(work),
                    "--ui-type", "none"], check=True, capture_output=True, timeout=1800)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    data = json.loads((work / "profile_export_aiperf.json").read_text())
    chunks = data["output_sequence_length"]["sum"]
    return {"tok_s": data["output_token_throughput"]["avg"], "chunks_per_cpu_s": chunks / cpu, "wall_s": wall,
            "errors": sum(e["count"] for e in data.get("error_summary") or [])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", default="1,64,256,1024")
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--streams", default="1024,2048,4096", help="concurrency levels for the most-streams probe")
    ap.add_argument("--aiperf", help="also run this aiperf executable on the same levels")
    ap.add_argument("--tokenizer", help="tokenizer folder for aiperf (any HF tokenizer; counts come from usage)")
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
        if args.aiperf:
            import tempfile

            print("\n| aiperf concurrency | output tok/s (its figure) | chunks per CPU-s (all its processes, whole run) | wall s | errors |")
            print("|---|---|---|---|---|")
            for c in [int(x) for x in args.levels.split(",")]:
                r = peer(args.aiperf, args.tokenizer, url, c, max(2 * c, 16), args.tokens, Path(tempfile.mkdtemp()))
                print(f"| {c} | {r['tok_s']:,.0f} | {r['chunks_per_cpu_s']:,.0f} | {r['wall_s']:.1f} | {r['errors']} |", flush=True)
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
