"""Host side of the prediction = reality table: fetch the pairs' wheels once, load them in a clean
Debian 12 container, and turn the loader's words into comparable outcomes.

Why a container: this machine's loader cache finds libraries (a CUDA 13 toolkit) that a user's
image does not have, so a load that works here can fail there. The container is the CI's
`debian:bookworm-slim` plus the distribution's python3 and a `libcuda.so.1` stub (the driver's
library, mounted by the NVIDIA container toolkit at run time); nothing else. Wheels are mounted
read-only from a cache outside the repository and installed with `--no-index`, so the container
needs no network.

One container per provider version: it installs the provider's closure (torch and its nvidia-*
wheels, resolved by pip from the cache) into a base venv once, then gives every pair a fresh venv
made of hard links to the base's files (what pip would have written, without unpacking ~3 GB
again) and installs the consumer wheel into it with `--no-deps`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename

from tests.reality.pairs import Pair

HERE = Path(__file__).resolve().parent
IMAGE = "envbuilder-abi-reality:bookworm"
BASE_IMAGE = "debian:bookworm-slim"
PYTHON = (3, 11)  # the base image's python3
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(36, 4, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64",
]
CUDA_H = Path("/usr/local/cuda/include/cuda.h")


def cache_dir() -> Path:
    """Wheels outlive runs: ENVBUILDER_REALITY_CACHE, else ~/.cache/envbuilder-reality."""
    root = os.environ.get("ENVBUILDER_REALITY_CACHE") or str(Path.home() / ".cache" / "envbuilder-reality")
    path = Path(root) / "wheels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _log(message: str) -> None:
    print(f"[abi-reality] {message}", file=sys.stderr, flush=True)


def _clean_pip_env() -> dict[str, str]:
    """The user's default index, without this machine's extra indexes, find-links or constraints."""
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_CONSTRAINT="")
    env.pop("PIP_FIND_LINKS", None)
    return env


def _supported_tags() -> list[Tag]:
    py = f"cp{PYTHON[0]}{PYTHON[1]}"
    return list(cpython_tags(PYTHON, [py, "abi3", "none"], PLATFORMS)) + list(
        compatible_tags(PYTHON, py, PLATFORMS)
    )


def find_wheel(name: str, version: str) -> Path | None:
    """The cached wheel pip would pick for cp311 on x86_64 (best tag, then highest build number)."""
    ranking = {tag: i for i, tag in enumerate(_supported_tags())}
    best: tuple[tuple[int, tuple], Path] | None = None
    for path in cache_dir().glob("*.whl"):
        try:
            wname, wversion, build, tags = parse_wheel_filename(path.name)
        except ValueError:
            continue
        if wname != canonicalize_name(name) or str(wversion) != version:
            continue
        rank = min((ranking[t] for t in tags if t in ranking), default=None)
        if rank is None:
            continue
        score = (-rank, build)
        if best is None or score > best[0]:
            best = (score, path)
    return best[1] if best else None


def download(requirements: Iterable[str], *, deps: bool) -> None:
    """`pip download` into the cache for cp311 manylinux x86_64; a no-op when every file is there."""
    reqs = list(requirements)
    if not deps:
        # one pip per file: pip refuses two versions of one name in one command
        missing = [r for r in reqs if not find_wheel(*r.split("=="))]
        if len(missing) > 1:
            for req in missing:
                download([req], deps=False)
            return
        if not missing:
            return
        reqs = missing
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--only-binary", ":all:", "-d", str(cache_dir()),
           "--python-version", f"{PYTHON[0]}.{PYTHON[1]}", "--implementation", "cp",
           "--abi", f"cp{PYTHON[0]}{PYTHON[1]}", "--abi", "abi3", "--abi", "none"]
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    if not deps:
        cmd.append("--no-deps")
    started = time.monotonic()
    before = _cache_bytes()
    _log(f"pip download {' '.join(reqs)}{'' if deps else ' (no deps)'}")
    subprocess.run(cmd + reqs, check=True, env=_clean_pip_env())
    _log(f"  {(_cache_bytes() - before) / 1e6:.0f} MB new in {time.monotonic() - started:.0f} s")


def _cache_bytes() -> int:
    return sum(p.stat().st_size for p in cache_dir().glob("*.whl"))


def libcuda_stub_source(cuda_h: Path = CUDA_H) -> str:
    """C source of a stand-in for the driver's libcuda.so.1: every driver API entry point cuda.h
    names (plain and the _v2/_ptsz/_ptds names its macros map to), each an empty function. Only
    the loader sees it: nothing here calls into a GPU."""
    names: set[str] = set()
    if cuda_h.is_file():
        text = cuda_h.read_text(errors="replace")
        names.update(re.findall(r"\bCUDAAPI\s+(cu[A-Z]\w*)\s*\(", text))
        for wrapped, inner in re.findall(r"__CUDA_API_(PTSZ|PTDS)\((cu[A-Z]\w*)\)", text):
            names.update({inner, f"{inner}_{wrapped.lower()}"})
        names.update(re.findall(r"#define\s+\w+\s+(cu[A-Z]\w*_v\d)\b", text))
    names.update({"cuInit", "cuDriverGetVersion", "cuGetProcAddress", "cuGetProcAddress_v2"})
    return "".join(f"int {name}(void) {{ return 0; }}\n" for name in sorted(names))


def build_libcuda_stub(out: Path) -> Path:
    src = out / "libcuda_stub.c"
    src.write_text(libcuda_stub_source())
    lib = out / "libcuda.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src), "-Wl,-soname,libcuda.so.1"], check=True)
    return lib


def docker_cli() -> str:
    return os.environ.get("ENVBUILDER_DOCKER") or shutil.which("docker") or "docker"


def build_image() -> str:
    """The probe image (docker's layer cache makes a rebuild a no-op)."""
    with tempfile.TemporaryDirectory() as ctx:
        shutil.copy(HERE / "Dockerfile", Path(ctx) / "Dockerfile")
        build_libcuda_stub(Path(ctx))
        proc = subprocess.run([docker_cli(), "build", "-q", "--network", "host", "-t", IMAGE, ctx],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"docker build of {IMAGE} failed:\n{proc.stderr[-3000:]}")
    return IMAGE


@dataclass
class Reality:
    """What the loader did with one pair's consumer in the clean container."""

    pair: Pair
    report: dict
    installed: dict[str, str] = field(default_factory=dict)  # canonical name -> version

    def failures(self) -> set[tuple[str, str, str]]:
        """(object the loader was working on, kind, library or mangled symbol) for every load that
        failed, deduplicated: a library that fails fails again inside each file that needs it."""
        out = set()
        for load in self.report["loads"]:
            if load.get("ok") is False and not load.get("blocked_by"):
                item = load.get("symbol") or load.get("symbol_version") or load.get("library") or load.get("error", "")
                out.add((load.get("object") or load["file"], load.get("kind", "other"), item))
        return out

    def blocked(self) -> set[str]:
        """Files that failed only because a sibling they need failed first (the package's own
        loader stops at the sibling): what else they would hit is unobservable."""
        return {load["file"] for load in self.report["loads"] if load.get("blocked_by")}

    def links(self) -> bool:
        return not self.failures()


def _container_script(pairs: list[Pair], provider_req: str, files: dict[str, str]) -> str:
    lines = [
        "set -euo pipefail",
        "python3 -m venv /base",
        f"/base/bin/python -m pip install -q --no-index --find-links /wheels {shlex.quote(provider_req)}",
        "echo \"base venv ready after $SECONDS s\" >&2",
    ]
    for i, pair in enumerate(pairs):
        env = f"/envs/{i}"
        lines += [
            f"mkdir -p /envs && cp -al /base {env}",
            f"{env}/bin/python -m pip install -q --no-index --no-deps /wheels/{shlex.quote(files[pair.key])}",
            f"{env}/bin/python -m pip list --format json > /out/{i}.installed.json",
            f"{env}/bin/python /probe/probe.py {shlex.quote(pair.consumer)} {shlex.quote(pair.provider)}"
            f" > /out/{i}.json 2> /out/{i}.stderr || echo probe-failed-{i}",
            f"echo \"{pair.key} done after $SECONDS s\" >&2",
        ]
    return "\n".join(lines) + "\n"


def fetch(pairs: Iterable[Pair]) -> None:
    """Every wheel the pairs need: each provider with its closure, each consumer alone."""
    pairs = list(pairs)
    for req in sorted({f"{p.provider}=={p.provider_version}" for p in pairs}):
        if not find_wheel(*req.split("==")):
            download([req], deps=True)
    download(sorted({f"{p.consumer}=={p.consumer_version}" for p in pairs}), deps=False)


def _runner() -> str:
    """docker (default, what CI uses) or chroot: the same Debian 12 minbase filesystem entered with
    unshare + chroot on a fresh overlay, for a machine whose docker engine is busy or absent."""
    runner = os.environ.get("ENVBUILDER_REALITY_RUNNER", "docker")
    if runner not in ("docker", "chroot"):
        raise ValueError(f"ENVBUILDER_REALITY_RUNNER={runner!r}: expected docker or chroot")
    return runner


def rootfs() -> Path:
    """debootstrap minbase bookworm (what .ci/parts/10-docker.sh imports as debian:bookworm-slim),
    plus what the Dockerfile adds: python3, python3-venv, the libcuda.so.1 stub. Built once."""
    root = cache_dir().parent / "rootfs-bookworm"
    stamp = root / ".envbuilder-reality-ready"
    if stamp.is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    _log(f"debootstrap --variant=minbase bookworm {root} (~1 min)")
    subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(root)], check=True, capture_output=True)
    shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
    subprocess.run(["chroot", str(root), "sh", "-c",
                    "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                    "--no-install-recommends python3 python3-venv >/dev/null && rm -rf /var/lib/apt/lists/*"],
                   check=True)
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(build_libcuda_stub(Path(tmp)), root / "usr" / "lib" / "x86_64-linux-gnu" / "libcuda.so.1")
    subprocess.run(["chroot", str(root), "ldconfig"], check=True)
    stamp.write_text("ok\n")
    return root


def _run_isolated(script_dir: str) -> subprocess.CompletedProcess:
    """Run /out/run.sh with the wheels (read-only), the probe (read-only) and `script_dir` at /out."""
    if _runner() == "docker":
        return subprocess.run(
            [docker_cli(), "run", "--rm", "--network", "none",
             "-v", f"{cache_dir()}:/wheels:ro", "-v", f"{HERE}:/probe:ro", "-v", f"{script_dir}:/out",
             IMAGE, "bash", "/out/run.sh"],
            capture_output=True, text=True,
        )
    root = rootfs()
    with tempfile.TemporaryDirectory(dir=cache_dir().parent) as layer:
        upper, work, merged = (Path(layer, n) for n in ("upper", "work", "merged"))
        for d in (upper, work, merged):
            d.mkdir()
        mounts = (
            f"mount -t overlay overlay -o lowerdir={root},upperdir={upper},workdir={work} {merged} && "
            f"mkdir -p {merged}/wheels {merged}/probe {merged}/out && "
            f"mount --bind {cache_dir()} {merged}/wheels && mount -o remount,bind,ro {merged}/wheels && "
            f"mount --bind {HERE} {merged}/probe && mount -o remount,bind,ro {merged}/probe && "
            f"mount --bind {script_dir} {merged}/out && mount -t proc proc {merged}/proc && "
            f"exec chroot {merged} env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash /out/run.sh"
        )
        return subprocess.run(["unshare", "--mount", "--net", "--pid", "--fork", "sh", "-c", mounts],
                              capture_output=True, text=True)


def run_reality(pairs: Iterable[Pair]) -> dict[str, Reality]:
    """Load every pair in the clean system; one container per provider version."""
    pairs = list(pairs)
    fetch(pairs)
    if _runner() == "docker":
        build_image()
    groups: dict[str, list[Pair]] = {}
    for pair in pairs:
        groups.setdefault(f"{pair.provider}=={pair.provider_version}", []).append(pair)
    results: dict[str, Reality] = {}
    for provider_req, group in groups.items():
        files = {}
        for pair in group:
            wheel = find_wheel(pair.consumer, pair.consumer_version)
            if wheel is None:
                raise RuntimeError(f"no cp311 x86_64 wheel of {pair.consumer} {pair.consumer_version} in {cache_dir()}")
            files[pair.key] = wheel.name
        started = time.monotonic()
        _log(f"{_runner()}: {provider_req} + {', '.join(p.consumer + ' ' + p.consumer_version for p in group)}")
        with tempfile.TemporaryDirectory() as out:
            Path(out, "run.sh").write_text(_container_script(group, provider_req, files))
            proc = _run_isolated(out)
            if proc.returncode != 0:
                raise RuntimeError(f"reality run for {provider_req} failed:\n{proc.stderr[-3000:]}")
            for line in proc.stderr.splitlines()[-len(group) - 1:]:
                _log(f"  {line}")
            for i, pair in enumerate(group):
                report_path = Path(out, f"{i}.json")
                if not report_path.stat().st_size:
                    raise RuntimeError(f"probe of {pair.key} printed nothing:\n{Path(out, f'{i}.stderr').read_text()[-3000:]}")
                installed = {canonicalize_name(d["name"]): d["version"]
                             for d in json.loads(Path(out, f"{i}.installed.json").read_text())}
                report = json.loads(report_path.read_text())
                report["runner"] = _runner()
                results[pair.key] = Reality(pair, report, installed)
                keep(results[pair.key])
        _log(f"  {len(group)} pair(s) in {time.monotonic() - started:.0f} s")
    return results


def kept_dir() -> Path:
    path = cache_dir().parent / "realities"
    path.mkdir(parents=True, exist_ok=True)
    return path


def keep(reality: Reality) -> None:
    """Keep a loader report beside the wheels (the bench compares in a second phase)."""
    data = {"report": reality.report, "installed": reality.installed}
    tmp = kept_dir() / f"{reality.pair.key}.json.tmp"
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(kept_dir() / f"{reality.pair.key}.json")


def load_kept(pair: Pair) -> Reality:
    data = json.loads((kept_dir() / f"{pair.key}.json").read_text())
    return Reality(pair, data["report"], data["installed"])


def installed_wheels(reality: Reality) -> list[Path]:
    """The cached wheel files of everything installed in the pair's venv (for the prediction)."""
    out = []
    for name, version in sorted(reality.installed.items()):
        wheel = find_wheel(name, version)
        if wheel is not None:
            out.append(wheel)
    return out


def main(argv: list[str] | None = None) -> int:
    """`python -m tests.reality.harness --fetch ci|all`: fill the wheel cache (used by .ci/parts)."""
    import argparse

    from tests.reality.pairs import PAIRS, ci_pairs

    parser = argparse.ArgumentParser(prog="python -m tests.reality.harness")
    parser.add_argument("--fetch", choices=["ci", "all"], required=True)
    parser.add_argument("--image", action="store_true", help="also build the probe image")
    args = parser.parse_args(argv)
    pairs = ci_pairs() if args.fetch == "ci" else PAIRS
    started = time.monotonic()
    fetch(pairs)
    _log(f"{len(pairs)} pairs' wheels cached in {cache_dir()} ({_cache_bytes() / 1e9:.1f} GB) "
         f"after {time.monotonic() - started:.0f} s")
    if args.image:
        build_image()
        _log(f"image {IMAGE} built after {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
