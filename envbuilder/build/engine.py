"""Engine queries through docker-py: labels, resources, running a command in an image.

docker-py speaks the engine API but not BuildKit, so it never builds; it answers the questions a
build and its tests ask afterwards (what is this image's lock digest? does `verify` pass in it?).
"""

from __future__ import annotations

from dataclasses import dataclass

from envbuilder.errors import Unreachable


def client():
    import docker  # noqa: PLC0415 - heavy import, only when an engine is needed
    from docker.errors import DockerException

    try:
        engine = docker.from_env()
        engine.ping()
    except DockerException as exc:
        raise Unreachable(f"no docker engine answers ({exc}); start dockerd or set DOCKER_HOST") from None
    return engine


@dataclass(frozen=True)
class Resources:
    mem_bytes: int
    ncpu: int


def resources() -> Resources | None:
    """The local engine's memory and cores: the builder's, when BuildKit runs in that engine."""
    try:
        info = client().info()
    except Unreachable:
        return None
    return Resources(int(info.get("MemTotal", 0)), int(info.get("NCPU", 1)))


def labels(image: str) -> dict[str, str]:
    from docker.errors import ImageNotFound

    try:
        return dict(client().images.get(image).labels or {})
    except ImageNotFound:
        raise Unreachable(f"image {image!r} is not in the local engine; build it first") from None


@dataclass(frozen=True)
class RunResult:
    returncode: int
    output: str


def run(image: str, command: list[str], *, volumes: dict[str, dict] | None = None,
        environment: dict[str, str] | None = None, network: str | None = None, timeout_s: float = 600) -> RunResult:
    """Run `command` in a fresh container of `image` and remove it; returns status and output."""
    engine = client()
    container = engine.containers.run(image, command, detach=True, volumes=volumes or {},
                                      environment=environment or {}, network_mode=network)
    try:
        status = container.wait(timeout=timeout_s)
        output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        return RunResult(int(status.get("StatusCode", 1)), output)
    finally:
        container.remove(force=True)
