"""Build capacity (cores, memory, swap) and the container runtime, as facts for the checks.

Why here and not in build/: doctor reports on a host before any build, and must not fail when
docker is absent; it reuses the build driver's BuildKit detection so both agree on what works.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from envbuilder.doctor.model import CapacityFacts, ContainerFacts
from envbuilder.doctor.sources import HostSources
from envbuilder.errors import EnvbuilderError

_MEMINFO = re.compile(r"^(\w+):\s+(\d+) kB", re.M)
CDI_DIRS = ("/etc/cdi", "/var/run/cdi")


def _cores(sources: HostSources) -> int:
    if sources.root != Path("/"):  # a recorded host: count its /proc/cpuinfo
        return max(1, len(re.findall(r"^processor\s*:", sources.read("/proc/cpuinfo") or "", re.M)))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def probe_capacity(sources: HostSources) -> CapacityFacts:
    meminfo = dict((k, int(v)) for k, v in _MEMINFO.findall(sources.read("/proc/meminfo") or ""))
    gib = 1024 * 1024
    return CapacityFacts(
        cores=_cores(sources),
        memory_gib=round(meminfo["MemTotal"] / gib, 1) if "MemTotal" in meminfo else None,
        swap_gib=round(meminfo["SwapTotal"] / gib, 1) if "SwapTotal" in meminfo else None,
        max_jobs_env=sources.environ.get("MAX_JOBS"),
    )


def _cdi_specs(sources: HostSources) -> tuple[str, ...]:
    specs = []
    for directory in CDI_DIRS:
        base = sources.path(directory)
        if base.is_dir():
            for spec in sorted(base.glob("*")):
                if spec.suffix in (".yaml", ".yml", ".json") and "nvidia.com/gpu" in spec.read_text(errors="replace"):
                    specs.append(f"{directory}/{spec.name}")
    return tuple(specs)


def container_facts_from_engine(version: dict, info: dict) -> ContainerFacts:
    """From docker-py's `version()` and `info()` answers (recorded in tests)."""
    return ContainerFacts(
        engine=f"{version.get('Version', '?')} (API {version.get('ApiVersion', '?')})",
        runtimes=tuple(sorted((info.get("Runtimes") or {}).keys())),
        default_runtime=info.get("DefaultRuntime"),
    )


def _engine(sources: HostSources) -> ContainerFacts:
    try:
        import docker
        from docker.errors import DockerException

        client = docker.DockerClient(base_url=sources.environ.get("DOCKER_HOST") or None, timeout=5) \
            if sources.environ.get("DOCKER_HOST") else docker.from_env(timeout=5)
        try:
            return container_facts_from_engine(client.version(), client.info())
        finally:
            client.close()
    except ImportError:
        return ContainerFacts(engine_error="docker-py is not installed")
    except (DockerException, OSError) as exc:
        return ContainerFacts(engine_error=str(exc).splitlines()[0][:200])


def _buildkit() -> tuple[str | None, str | None]:
    from envbuilder.build.driver import detect

    try:
        return detect().describe(), None
    except EnvbuilderError as exc:
        return None, str(exc)


def probe_container(sources: HostSources) -> ContainerFacts:
    facts = _engine(sources)
    buildkit, error = _buildkit()
    return facts.model_copy(update={"buildkit": buildkit, "buildkit_error": error, "cdi_specs": _cdi_specs(sources)})
