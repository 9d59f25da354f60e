"""What a bump really costs a node that already runs the image: layers changed, bytes pulled.

Run on demand (needs the docker engine that `.ci/parts/10-docker.sh` starts and Debian's
`docker-registry` package):

    python bench/layers/run.py [--first TAG --bumped TAG] [--json OUT]

1. Builds cpu-llamacpp from the committed lock, then with tqdm bumped (re-locked), timing the
   rebuild (skipped when both tags are given).
2. Compares the two images' layers (diff ids from `docker save`).
3. Starts a registry on loopback and a second, empty docker engine (its own data root and socket,
   in a network namespace of its own so it cannot touch the host engine's `docker0`: a dockerd
   started with `--bridge=none` deletes that interface), reaching the registry through a socat
   relay over a unix socket; pushes both images from the first engine, pulls the first image into
   the second engine, then the bumped one, and sums the bytes the registry sent for that second
   pull (its access log). Needs root, `ip netns` and socat.
4. Predicts from the lock alone what a SGLang bump moves in blackwell-sm120's layered venv.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from envbuilder.build.layers import changed_bytes  # noqa: E402
from envbuilder.build.render import load, render  # noqa: E402
from tests.support.image_layers import changed, image_layers  # noqa: E402

DOCKER = os.environ.get("ENVBUILDER_DOCKER", "/usr/bin/docker")
TARGET = "cpu-llamacpp"
PORT = 5055


def sh(*argv: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check and result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: {result.stderr[-2000:]}")
    return result


def build_pair(work: Path) -> tuple[str, str, float]:
    project = work / "project"
    (project / "matrices").mkdir(parents=True)
    (project / "locks").mkdir()
    shutil.copy(REPO / "matrices" / f"{TARGET}.yaml", project / "matrices")
    shutil.copy(REPO / "locks" / f"{TARGET}.lock.toml", project / "locks")
    env = {"ENVBUILDER_ROOT": str(project)}
    eb = [sys.executable, "-m", "envbuilder"]
    sh(*eb, "build", TARGET, "--network", "host", "-t", "envbuilder-bench/cpu:first", env=env)
    matrix = project / "matrices" / f"{TARGET}.yaml"
    matrix.write_text(re.sub(r'^(\s*)tqdm:\s*"[^"]*"', r'\1tqdm: "==4.67.0"', matrix.read_text(), flags=re.M))
    sh(*eb, "lock", TARGET, env=env)
    started = time.monotonic()
    sh(*eb, "build", TARGET, "--network", "host", "-t", "envbuilder-bench/cpu:bumped", env=env)
    return "envbuilder-bench/cpu:first", "envbuilder-bench/cpu:bumped", time.monotonic() - started


def start_registry(work: Path) -> tuple[subprocess.Popen, Path]:
    config = work / "registry.yml"
    config.write_text(f"version: 0.1\nlog: {{level: info, formatter: text}}\nstorage: {{filesystem: "
                      f"{{rootdirectory: {work / 'registry'}}}}}\nhttp: {{addr: 127.0.0.1:{PORT}}}\n")
    log = work / "registry.log"
    proc = subprocess.Popen(["docker-registry", "serve", str(config)], stdout=log.open("w"), stderr=subprocess.STDOUT)
    _wait(lambda: httpx.get(f"http://127.0.0.1:{PORT}/v2/", timeout=1).status_code == 200, "registry")
    return proc, log


NETNS = "envbuilder-bench"


def start_second_engine(work: Path) -> tuple[list[subprocess.Popen], str]:
    """dockerd in its own network namespace (entered with nsenter: `ip netns exec` would also remount
    /sys and hide the cgroups dockerd needs), the registry relayed into it on its own loopback."""
    sh("ip", "netns", "add", NETNS)
    sh("ip", "netns", "exec", NETNS, "ip", "link", "set", "lo", "up")
    relay = work / "registry.sock"
    procs = [subprocess.Popen(["socat", f"UNIX-LISTEN:{relay},fork", f"TCP:127.0.0.1:{PORT}"]),
             subprocess.Popen(["nsenter", f"--net=/run/netns/{NETNS}", "socat",
                               f"TCP-LISTEN:{PORT},bind=127.0.0.1,fork,reuseaddr", f"UNIX-CONNECT:{relay}"])]
    sock = work / "engine2.sock"
    procs.append(subprocess.Popen(
        ["nsenter", f"--net=/run/netns/{NETNS}", "dockerd", "--data-root", str(work / "engine2"), "--exec-root",
         str(work / "exec2"), "-H", f"unix://{sock}", "--pidfile", str(work / "engine2.pid"), "--bridge=none",
         "--iptables=false", "--ip-masq=false"],
        stdout=(work / "engine2.log").open("w"), stderr=subprocess.STDOUT))
    host = f"unix://{sock}"
    _wait(lambda: sh(DOCKER, "-H", host, "info", check=False).returncode == 0, "second engine")
    return procs, host


def _wait(ready, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"{what} did not start")


def blob_bytes(log_text: str) -> int:
    """Bytes the registry wrote for blob GETs (layers and configs) in this part of its log."""
    total = 0
    for line in log_text.splitlines():
        if 'http.request.method=GET' in line and '/blobs/sha256:' in line:
            match = re.search(r"http\.response\.written=(\d+)", line)
            total += int(match[1]) if match else 0
    return total


def pull_cost(first: str, bumped: str, work: Path) -> dict:
    registry, log = start_registry(work)
    helpers, host = start_second_engine(work)
    try:
        remote = {}
        for tag in (first, bumped):
            remote[tag] = f"127.0.0.1:{PORT}/{tag}"
            sh(DOCKER, "tag", tag, remote[tag])
            sh(DOCKER, "push", remote[tag])
        mark = len(log.read_text())
        sh(DOCKER, "-H", host, "pull", remote[first])
        first_bytes = blob_bytes(log.read_text()[mark:])
        mark = len(log.read_text())
        started = time.monotonic()
        out = sh(DOCKER, "-H", host, "pull", remote[bumped]).stdout
        return {"first_pull_bytes": first_bytes, "bumped_pull_bytes": blob_bytes(log.read_text()[mark:]),
                "bumped_pull_s": round(time.monotonic() - started, 2),
                "layers_already_present": out.count("Already exists"), "layers_pulled": out.count("Pull complete")}
    finally:
        for proc in (*reversed(helpers), registry):
            proc.terminate()
            proc.wait(30)
        sh("ip", "netns", "delete", NETNS, check=False)


def predicted_sglang_bump() -> dict:
    """blackwell-sm120: the layered venv's bytes that a new SGLang wheel moves (from the lock)."""
    lock, target = load("blackwell-sm120")
    before = render(lock, target).plan.layers
    bumped = lock.replace_packages(tuple(
        replace(p, version=p.version + ".post1", artifacts=tuple(replace(a, sha256="0" * 64) for a in p.artifacts))
        if p.name == "sglang" else p for p in lock.packages))
    after = render(bumped, target).plan.layers
    total = sum(layer.size for layer in after)
    return {"venv_bytes": total, "chain_bytes": changed_bytes(before, after, chain=True),
            "link_bytes": changed_bytes(before, after, chain=False), "layers": len(after)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first")
    parser.add_argument("--bumped")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="envbuilder-bench-layers-") as tmp:
        work = Path(tmp)
        rebuild_s = None
        first, bumped = args.first, args.bumped
        if not (first and bumped):
            first, bumped, rebuild_s = build_pair(work)
        before, after = image_layers(first), image_layers(bumped)
        moved = changed(before, after)
        result = {"image_bytes": sum(x.size for x in after), "image_layers": len(after),
                  "changed_layers": len(moved), "changed_bytes": sum(x.size for x in moved),
                  "rebuild_s": rebuild_s and round(rebuild_s, 1), **pull_cost(first, bumped, work),
                  "blackwell_sglang_bump": predicted_sglang_bump()}
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
