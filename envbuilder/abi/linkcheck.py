"""Link checks over real inputs: a set of local wheel files, or a lock (summaries fetched by range reads).

Why separate from the linker model: the model only sees summaries and dependency edges; where
they come from (a wheel on disk, the index, the lock's recorded digests) is this module's job.
"""

from __future__ import annotations

import time
import zipfile
from dataclasses import dataclass
from concurrent.futures import ThreadPoolExecutor
from email.parser import HeaderParser
from pathlib import Path
from typing import Iterable, Mapping

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from envbuilder.abi import loaders, summaries, systems
from envbuilder.abi.link import LinkPackage, LinkReport, link
from envbuilder.abi.linkage import WheelLinkage
from envbuilder.abi.wheelscan import ScanStats, scan_local, scan_remote
from envbuilder.errors import BadInput


def marker_environment(python: str) -> dict[str, str]:
    """Markers of a Linux x86_64 CPython `python` (the target, not this machine)."""
    env = dict(default_environment())
    env.update(python_version=".".join(python.split(".")[:2]), python_full_version=f"{python}.0"
               if python.count(".") == 1 else python, sys_platform="linux", platform_system="Linux",
               platform_machine="x86_64", os_name="posix", implementation_name="cpython",
               platform_python_implementation="CPython")
    return env


def requires_dist(metadata_text: str, env: Mapping[str, str]) -> list[str]:
    """Names a wheel's METADATA requires under `env` (extras not taken)."""
    names = []
    for value in HeaderParser().parsestr(metadata_text).get_all("Requires-Dist") or []:
        try:
            req = Requirement(value)
        except InvalidRequirement:
            continue
        if req.marker is None or req.marker.evaluate({**env, "extra": ""}):
            names.append(canonicalize_name(req.name))
    return names


def _wheel_metadata(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as zf:
            member = next((n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1), None)
            return zf.read(member).decode("utf-8", "replace") if member else ""
    except (zipfile.BadZipFile, OSError) as exc:
        raise BadInput(f"{path}: not a readable wheel (zip) file: {exc}") from exc


def check_wheels(wheels: Iterable[Path | str], manifest: str = "debian-12", python: str = "3.12",
                 depends: Mapping[str, Iterable[str]] | None = None, target_arch: str | None = None,
                 workers: int = 4, only: Iterable[str] | None = None, every_elf: bool = False) -> LinkReport:
    """Link a closure given as local wheel files (see docs/abi.md for the model).

    `every_elf` also checks SONAME-less libraries no loader data names (as a harness that dlopens
    every module file does); the lock and the gate check what importing really opens.
    `depends` maps a distribution to the distributions it imports first; by default each wheel's
    METADATA Requires-Dist (markers for Linux x86_64 `python`), restricted to the given wheels.
    """
    started = time.perf_counter()
    system = systems.load(manifest)
    paths = [Path(w) for w in wheels]
    names = []
    for path in paths:
        try:
            name, version, _build, _tags = parse_wheel_filename(path.name)
        except InvalidWheelFilename as exc:
            raise BadInput(f"{path}: not a wheel file name: {exc}") from None
        names.append((canonicalize_name(name), str(version)))
    stats = ScanStats()
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(paths) or 1))) as pool:
        summaries = list(pool.map(lambda p: scan_local(p, workers=1, stats=stats), paths))
    env = marker_environment(python)
    present = {n for n, _ in names}
    packages = []
    for path, (name, version), summary in zip(paths, names, summaries):
        if depends is not None:
            edges = [canonicalize_name(d) for d in depends.get(name, depends.get(path.name, ()))]
        else:
            edges = requires_dist(_wheel_metadata(path), env)
        packages.append(LinkPackage(name=name, version=version, depends=tuple(e for e in edges if e in present),
                                    linkage=summary))
    report = link(packages, system, loaders.shipped(), target_arch=target_arch, only=only, every_elf=every_elf)
    return report.model_copy(update={"bytes_fetched": stats.bytes_fetched,
                                     "seconds": time.perf_counter() - started})


@dataclass(frozen=True)
class ClosureWheel:
    """One package of a closure to link: the wheel the target installs (None: a source build)."""

    name: str
    version: str
    depends: tuple[str, ...]
    filename: str | None = None
    url: str | None = None
    sha256: str | None = None
    size: int | None = None


@dataclass
class ClosureCheck:
    report: LinkReport
    summaries: dict[str, WheelLinkage]  # sha256 -> summary
    stats: ScanStats


def summaries_for(wheels: Iterable[ClosureWheel], http, *, workers: int = 4, member_workers: int = 2,
                  fetch: bool = True, stats: ScanStats | None = None) -> dict[str, WheelLinkage]:
    """sha256 -> summary for every wheel: the cache first, then range reads of the index (in parallel).

    Without `fetch`, wheels not in the cache are left out (their packages are then not linked)."""
    stats = stats if stats is not None else ScanStats()
    out: dict[str, WheelLinkage] = {}
    todo = []
    for wheel in wheels:
        if not wheel.sha256 or wheel.sha256 in out:
            continue
        cached = summaries.load(wheel.sha256)
        if cached is not None:
            out[wheel.sha256] = cached
            stats.cached += 1
        elif fetch and wheel.url:
            todo.append(wheel)
    todo.sort(key=lambda w: -(w.size or 0))  # the biggest first: they bound the wall time
    parts = {w.sha256: ScanStats() for w in todo}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {w.sha256: pool.submit(scan_remote, http, w.url, w.filename, w.sha256, w.size,
                                         workers=member_workers, stats=parts[w.sha256]) for w in todo}
        for sha, future in futures.items():
            out[sha] = future.result()
    for part in parts.values():
        stats.add(part)
    return out


def check_closure(wheels: list[ClosureWheel], manifest: str, http=None, *, python: str = "3.12",
                  target_arch: str | None = None, fetch: bool = True, workers: int = 4,
                  apt: tuple[str, ...] = ()) -> ClosureCheck:
    """Link a closure whose wheels live on an index (a lock, or a resolution before it is written);
    `apt` names the target's apt packages, whose libraries join the system manifest."""
    started = time.perf_counter()
    system = systems.load(manifest).with_apt(apt)
    stats = ScanStats()
    found = summaries_for(wheels, http, workers=workers, fetch=fetch, stats=stats)
    present = {canonicalize_name(w.name) for w in wheels}
    packages = [LinkPackage(name=canonicalize_name(w.name), version=w.version,
                            depends=tuple(d for d in (canonicalize_name(x) for x in w.depends) if d in present),
                            linkage=found.get(w.sha256 or ""))
                for w in wheels]
    report = link(packages, system, loaders.shipped(), target_arch=target_arch)
    report = report.model_copy(update={"bytes_fetched": stats.bytes_fetched,
                                       "seconds": time.perf_counter() - started})
    return ClosureCheck(report, found, stats)


def closure_of_lock(lock) -> list[ClosureWheel]:
    """The wheels a lock installs (one per package, as the installer picks) with dependency edges."""
    wheels = []
    for package in lock.packages:
        edges = []
        for text in package.dependencies:
            try:
                edges.append(canonicalize_name(Requirement(text).name))
            except InvalidRequirement:
                continue
        wheel = next((a for a in sorted(package.artifacts) if a.kind == "wheel"), None) if package.build is None \
            else None
        wheels.append(ClosureWheel(package.name, package.version, tuple(sorted(set(edges))),
                                   filename=wheel.filename if wheel else None, sha256=wheel.sha256 if wheel else None,
                                   size=wheel.size if wheel else None))
    return wheels


def lock_manifest(lock) -> str:
    """The system manifest for the lock's base image (BadInput when none describes it)."""
    image = str(lock.toolchain.get("base-image", ""))
    manifest = systems.for_image(image)
    if manifest is None:
        raise BadInput(f"lock for {lock.target}: no system manifest describes base image {image!r} "
                       f"(known: {', '.join(systems.available())})")
    return manifest.id


def recorded_digests(lock) -> dict[str, str]:
    """sha256 -> linkage digest the lock claims (empty for a lock made without `--link`)."""
    return {a.sha256: a.linkage for p in lock.packages for a in p.artifacts if a.linkage}
