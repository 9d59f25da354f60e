"""Linking a resolution before it is written: binary evidence as resolver conflicts.

Why a loop around the resolver and not a check per candidate: whether a file links depends on
which provider version was chosen, which resolvelib only knows once the whole set is pinned. So
the resolved set is linked (linkage summaries by range reads, cached by sha256); each failure
becomes a learned requirement on the consumer (`torch!=2.11.0`, with the file and symbol as its
reason) and the resolver runs again, backtracking to another build, version or consumer. When
nothing links, resolvelib's explanation carries those reasons in words.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.utils import canonicalize_name

from envbuilder.abi import systems
from envbuilder.abi.link import LinkFinding
from envbuilder.abi.linkcheck import ClosureCheck, ClosureWheel, check_closure
from envbuilder.errors import BadInput

MAX_ROUNDS = 6


@dataclass(frozen=True)
class Conflict:
    consumer: str
    version: str
    provider: str
    provider_version: str
    why: str

    def as_tuple(self) -> tuple[str, str, str, str, str]:
        return self.consumer, self.version, self.provider, self.provider_version, self.why


def closure_of(resolution) -> list[ClosureWheel]:
    """The wheels a resolution installs (best-ranked file), with its dependency edges."""
    wheels = []
    for name, candidate in sorted(resolution.pins.items()):
        deps = tuple(sorted({str(r.name) for r in resolution.edges.get(candidate.key, ()) if r.name != name}))
        file = candidate.file if candidate.kind == "wheel" else None
        wheels.append(ClosureWheel(str(name), str(candidate.version), deps,
                                   filename=file.filename if file else None, url=file.url if file else None,
                                   sha256=file.sha256 if file else None, size=file.size if file else None))
    return wheels


def manifest_for(target) -> str:
    manifest = systems.for_image(target.toolchain.base_image)
    if manifest is None:
        raise BadInput(f"{target.source_path}: key 'toolchain.base_image': no system manifest describes "
                       f"{target.toolchain.base_image!r} (known: {', '.join(systems.available())}); "
                       "linking needs the base image's libraries")
    return manifest.id


def link_resolution(resolution, target, http) -> ClosureCheck:
    gpu = target.hardware.gpu
    return check_closure(closure_of(resolution), manifest_for(target), http, python=target.platform.python,
                         target_arch=gpu.arch if gpu is not None else None, apt=tuple(target.toolchain.apt))


def conflicts(findings: list[LinkFinding], resolution) -> list[Conflict]:
    """Each failure as a requirement the consumer places on the provider it was linked against."""
    out = []
    pins = {canonicalize_name(n): c for n, c in resolution.pins.items()}
    for finding in findings:
        if finding.kind in ("no-binary-evidence", "arch-coverage"):
            continue  # not a relation between two packages: the ABI rules and the hook judge these
        consumer = pins.get(canonicalize_name(finding.package))
        if consumer is None:
            continue
        provider = pins.get(canonicalize_name(finding.provider)) if finding.provider else None
        if provider is None or provider.name == consumer.name:
            provider = consumer  # nothing else to blame: this build of the consumer is excluded
        out.append(Conflict(str(consumer.name), str(consumer.version), str(provider.name), str(provider.version),
                            finding.message if provider is consumer
                            else f"linked against {provider.name} {provider.version}: {finding.message}"))
    return out
