"""envbuilder smoke vs AIPerf on the same real server and workload, runs interleaved.

Usage: .venv/bin/python bench/smoke/peer_compare.py [--repeats 5] [--concurrency 4] [--requests 64]
           [--prompt-tokens 64] [--max-tokens 32] [--aiperf PATH] [--pin]

Starts llama.cpp's llama-server (4 slots) on a tiny GGUF, writes the matching HF tokenizer for
AIPerf, then alternates `envbuilder smoke` and `aiperf profile` (same concurrency, request count,
warmup, prompt and output lengths, ignore_eos, server-reported token counts) and prints a
Markdown table: output tokens (must match exactly), output tok/s and median TTFT per run, and the
difference of the means. Binaries come from the CI cache (.ci/parts/30-llm-servers.sh); AIPerf
from `--aiperf` or ~/.cache/envbuilder-ci/venv-aiperf (`pip install aiperf` in its own venv).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "tests" / "smoke"))

from llm_servers import CACHE, free_port, llama_argv, llama_server_binary, make_model, running  # noqa: E402


def client_prefix(a: argparse.Namespace) -> list[str]:
    return ["taskset", "-c", "0"] if a.pin else []


def ours(url: str, a: argparse.Namespace, out: Path) -> dict:
    cmd = [*client_prefix(a), sys.executable, "-m", "envbuilder", "smoke", "--endpoint", url, "--concurrency", str(a.concurrency),
           "--requests", str(a.requests), "--prompt-tokens", str(a.prompt_tokens), "--max-tokens", str(a.max_tokens),
           "--warmup", "2", "--json", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=900)
    run = json.loads(out.read_text())["levels"][0]["runs"][0]
    return {"output_tokens": run["output_tokens"], "tok_s": run["output_tok_s"], "ttft_p50": run["ttft_ms"]["p50"],
            "failed": run["failed"]}


def aiperf(url: str, a: argparse.Namespace, tokenizer: Path, out: Path) -> dict:
    cmd = [*client_prefix(a), a.aiperf, "profile", "--model", "tiny-gguf", "--url", url, "--endpoint-type", "completions",
           "--streaming", "--tokenizer", str(tokenizer), "--isl", str(a.prompt_tokens), "--isl-stddev", "0",
           "--osl", str(a.max_tokens), "--osl-stddev", "0", "--extra-inputs", "ignore_eos:true",
           "--use-legacy-max-tokens", "--use-server-token-count", "--concurrency", str(a.concurrency),
           "--request-count", str(a.requests), "--warmup-request-count", "2", "--artifact-dir", str(out),
           "--ui-type", "none"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=900)
    data = json.loads((out / "profile_export_aiperf.json").read_text())
    return {"output_tokens": int(data["output_sequence_length"]["sum"]), "tok_s": data["output_token_throughput"]["avg"],
            "ttft_p50": data["time_to_first_token"]["p50"], "failed": len(data.get("error_summary") or [])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--prompt-tokens", type=int, default=64)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--aiperf", default=str(CACHE / "venv-aiperf" / "bin" / "aiperf"))
    ap.add_argument("--pin", action="store_true",
                    help="server on CPU 1 (one thread), clients on CPU 0: a client's own processes cannot slow the server")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="peer-"))
    gguf = make_model("gguf", work / "tiny.gguf")
    tokenizer = make_model("hf", work / "hf")  # the same BPE: AIPerf sizes its prompts with it
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    rows = {"envbuilder smoke": [], "aiperf": []}
    argv = llama_argv(llama_server_binary(), gguf, port)
    if a.pin:
        argv = ["taskset", "-c", "1", *argv, "-t", "1"]
    with running(argv, port, work / "server.log"):
        for i in range(a.repeats):
            rows["envbuilder smoke"].append(ours(url, a, work / f"ours{i}.json"))
            rows["aiperf"].append(aiperf(url, a, tokenizer, work / f"aiperf{i}"))
            print(f"repeat {i + 1}: ours {rows['envbuilder smoke'][-1]} aiperf {rows['aiperf'][-1]}", file=sys.stderr)
    print(f"llama-server -np 4, tiny GGUF; completions, streaming, concurrency {a.concurrency}, {a.requests} requests, "
          f"prompt {a.prompt_tokens} / output {a.max_tokens} tokens, ignore_eos; {a.repeats} interleaved repeats; "
          f"{'server pinned to CPU 1, clients to CPU 0; ' if a.pin else ''}"
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end\n")
    print("| client | output tokens per run | output tok/s per run | mean | median TTFT ms per run | mean |")
    print("|---|---|---|---|---|---|")
    means = {}
    for name, runs in rows.items():
        tok = [r["tok_s"] for r in runs]
        ttft = [r["ttft_p50"] for r in runs]
        means[name] = (statistics.fmean(tok), statistics.fmean(ttft))
        print(f"| {name} | {', '.join(str(r['output_tokens']) for r in runs)} | {', '.join(f'{v:,.0f}' for v in tok)} | "
              f"{means[name][0]:,.0f} | {', '.join(f'{v:.1f}' for v in ttft)} | {means[name][1]:.1f} |")
    (o_tok, o_ttft), (p_tok, p_ttft) = means["envbuilder smoke"], means["aiperf"]
    print(f"\ndifference of means (envbuilder vs aiperf): output tok/s {100 * (o_tok / p_tok - 1):+.1f}%, "
          f"median TTFT {100 * (o_ttft / p_ttft - 1):+.1f}%; output token counts "
          f"{'identical' if all(x['output_tokens'] == y['output_tokens'] for x, y in zip(*rows.values())) else 'DIFFER'}")


if __name__ == "__main__":
    t0 = time.time()
    main()
    print(f"\n(took {time.time() - t0:.0f} s)", file=sys.stderr)
