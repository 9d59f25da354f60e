"""Build drivers: which docker CLI can run a BuildKit build here, and running it.

docker-py cannot drive BuildKit (docker-py #2230), so builds go through a docker CLI: `docker buildx
build` where the buildx plugin exists, else `DOCKER_BUILDKIT=1 docker build` on a CLI older than
23.0 (those carry BuildKit themselves; 23.0 and later hand `build` to buildx and fail without it).
A machine may have both kinds of CLI on PATH, so every candidate is probed, not just the first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from envbuilder.build.progress import Progress
from envbuilder.errors import BadInput, CheckFailed, Unreachable

KINDS = ("buildx", "docker")
#: The first docker CLI release whose `docker build` needs the buildx plugin for BuildKit.
BUILDX_REQUIRED_FROM = 23
_PROBE_TIMEOUT_S = 20


@dataclass(frozen=True)
class Driver:
    kind: str  # buildx | docker
    cli: str

    def argv(self, request: "BuildRequest") -> list[str]:
        head = [self.cli, "buildx", "build", "--load"] if self.kind == "buildx" else [self.cli, "build"]
        return [*head, *request.flags()]

    def env(self) -> dict[str, str]:
        return {**os.environ, "DOCKER_BUILDKIT": "1"}

    def describe(self) -> str:
        how = "docker buildx build" if self.kind == "buildx" else "DOCKER_BUILDKIT=1 docker build"
        return f"{how} ({self.cli})"


@dataclass(frozen=True)
class BuildRequest:
    context: Path
    tags: tuple[str, ...] = ()
    stage: str | None = None
    build_args: tuple[tuple[str, str], ...] = ()
    secrets: tuple[str, ...] = ()  # id=NAME,src=FILE
    network: str | None = None
    no_cache: bool = False
    labels: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def flags(self) -> list[str]:
        out = ["--progress=plain", "-f", str(self.context / "Dockerfile")]
        for tag in self.tags:
            out += ["-t", tag]
        if self.stage:
            out += ["--target", self.stage]
        for key, value in self.build_args:
            out += ["--build-arg", f"{key}={value}"]
        for secret in self.secrets:
            out += ["--secret", secret]
        if self.network:
            out += ["--network", self.network]
        if self.no_cache:
            out.append("--no-cache")
        return [*out, str(self.context)]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S,
                              env={**os.environ, "DOCKER_BUILDKIT": "1"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(argv, 127, "", str(exc))


def _client_major(cli: str) -> int | None:
    result = _run([cli, "version", "--format", "{{.Client.Version}}"])
    text = result.stdout.strip().lstrip("v")
    try:
        return int(text.split(".")[0])
    except ValueError:
        return None


def kinds_of(cli: str) -> list[str]:
    """The build kinds this CLI can run, best first."""
    kinds = []
    if _run([cli, "buildx", "version"]).returncode == 0:
        kinds.append("buildx")
    major = _client_major(cli)
    if major is not None and major < BUILDX_REQUIRED_FROM:
        kinds.append("docker")
    return kinds


def candidate_clis(explicit: str | None = None) -> list[str]:
    """--docker, then ENVBUILDER_DOCKER, then every `docker` on PATH in order (deduplicated)."""
    if explicit:
        path = shutil.which(explicit) or explicit
        if not Path(path).is_file():
            raise BadInput(f"--docker {explicit}: no such executable")
        return [path]
    found = [os.environ["ENVBUILDER_DOCKER"]] if os.environ.get("ENVBUILDER_DOCKER") else []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        path = Path(directory or ".") / "docker"
        if path.is_file() and os.access(path, os.X_OK):
            found.append(str(path))
    seen: dict[str, str] = {}
    for path in found:
        seen.setdefault(os.path.realpath(path), path)
    return list(seen.values())


def detect(kind: str | None = None, cli: str | None = None) -> Driver:
    """The first CLI (and kind) that can build; `kind`/`cli` force a choice."""
    if kind is not None and kind not in KINDS:
        raise BadInput(f"--driver {kind!r}: choose one of {', '.join(KINDS)}")
    tried = []
    for path in candidate_clis(cli):
        kinds = kinds_of(path)
        tried.append(f"{path}: {', '.join(kinds) or 'no BuildKit (no buildx plugin, CLI >= 23)'}")
        usable = [k for k in kinds if kind in (None, k)]
        if usable:
            return Driver(usable[0], path)
    wanted = f"the {kind!r} driver" if kind else "a BuildKit build"
    detail = "; ".join(tried) or "no docker CLI on PATH"
    raise Unreachable(
        f"no docker CLI here can run {wanted} ({detail}). Install the buildx plugin, or a docker CLI "
        "older than 23.0 (Debian's docker.io), and point --docker at it")


#: The first engine release whose built-in Dockerfile frontend knows `COPY --link` (BuildKit 0.11,
#: Dockerfile 1.5); older engines need a `# syntax=` image from a registry for it.
LINK_ENGINE_MAJOR = 23


def check_engine(driver: Driver) -> str:
    """The engine's version; Unreachable when none answers."""
    result = _run([driver.cli, "version", "--format", "{{.Server.Version}}"])
    if result.returncode != 0 or not result.stdout.strip():
        raise Unreachable(f"no docker engine answers {driver.cli} ({(result.stderr or '').strip()[:200]}); "
                          "start dockerd (or set DOCKER_HOST) and retry")
    return result.stdout.strip()


def supports_link(engine_version: str) -> bool:
    """Whether this engine's own Dockerfile frontend parses `COPY --link` (probed, never assumed)."""
    major = engine_version.split(".", 1)[0]
    return major.isdigit() and int(major) >= LINK_ENGINE_MAJOR


@dataclass(frozen=True)
class BuildResult:
    returncode: int
    progress: Progress
    argv: tuple[str, ...]


def run_build(driver: Driver, request: BuildRequest,
              echo: Callable[[str], None] | None = None) -> BuildResult:
    """Run the build, streaming BuildKit's plain progress; a failure names its step and log tail."""
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    argv = driver.argv(request)
    progress = Progress()
    try:
        proc = subprocess.Popen(argv, env=driver.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", bufsize=1)
    except OSError as exc:
        raise Unreachable(f"cannot run {driver.cli}: {exc}") from None
    assert proc.stdout is not None
    tail: list[str] = []
    for line in _lines(proc.stdout):
        progress.feed(line)
        tail = [*tail[-39:], line]
        echo(line)
    rc = proc.wait()
    if rc != 0:
        report = progress.failure_report() or "\n".join(f"  {line}" for line in tail)
        raise CheckFailed(f"build failed ({driver.describe()}, exit {rc}):\n{report}")
    return BuildResult(rc, progress, tuple(argv))


def _lines(stream: Iterable[str]) -> Iterable[str]:
    for line in stream:
        yield line.rstrip("\n")


def push(driver: Driver, tag: str) -> None:
    """Push a built tag with the same CLI (and so the same credentials) that built it."""
    try:
        result = subprocess.run([driver.cli, "push", tag], capture_output=True, text=True)
    except OSError as exc:
        raise Unreachable(f"cannot run {driver.cli}: {exc}") from None
    if result.returncode != 0:
        raise Unreachable(f"push of {tag} failed: {(result.stderr or result.stdout).strip()[-400:]}; "
                          "check the registry is reachable and `docker login` was done")
