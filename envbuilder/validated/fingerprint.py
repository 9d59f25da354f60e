"""The host fingerprint of a record, read with doctor's own probes, and how two fingerprints compare.

Why doctor's probes: `doctor` later asks "does this host match a passing record?", and the answer
is only meaningful if both sides were read the same way (NVML, else nvidia-smi, else /proc).
Hostnames, serial numbers and UUIDs are never read into a fingerprint.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from typing import Literal

from envbuilder.doctor.model import HostFacts
from envbuilder.doctor.sources import HostSources
from envbuilder.validated.model import HostFingerprint


def from_facts(facts: HostFacts, machine: str | None = None) -> HostFingerprint:
    gpus = facts.driver.gpus
    names = sorted({g.name for g in gpus})
    memory = sorted({g.memory_mib for g in gpus if g.memory_mib is not None})
    capacity = facts.capacity
    return HostFingerprint(
        machine=machine,
        gpu_model=" + ".join(names) if names else None,
        gpu_count=len(gpus),
        gpu_memory_mib=memory[0] if memory else None,
        driver=facts.driver.version,
        cuda_driver=facts.driver.cuda,
        cpu_count=capacity.cores if capacity else None,
        memory_gib=round(capacity.memory_gib) if capacity and capacity.memory_gib is not None else None,
    )


def probe(sources: HostSources | None = None) -> HostFingerprint:
    """This host's fingerprint (no docker queries: a record is about the machine, not the engine)."""
    from envbuilder.doctor.capacity import probe_capacity
    from envbuilder.doctor.nvidia import probe_driver

    sources = sources or HostSources(docker=False)
    facts = HostFacts(driver=probe_driver(sources), capacity=probe_capacity(sources))
    return from_facts(facts, platform.machine() or None)


Match = Literal["same", "same-hardware", "different"]


@dataclass(frozen=True)
class Comparison:
    match: Match
    differences: tuple[str, ...] = ()


_LABELS = {"machine": "machine", "gpu_model": "GPU model", "gpu_count": "GPU count",
           "gpu_memory_mib": "GPU memory (MiB)", "cpu_count": "CPU count", "memory_gib": "memory (GiB)",
           "driver": "driver", "cuda_driver": "driver CUDA"}


def compare(recorded: HostFingerprint, here: HostFingerprint) -> Comparison:
    """`same`: hardware and driver; `same-hardware`: only the driver differs; else `different`.

    A field either side leaves empty (an imported claim that never said; a saved nvidia-smi output
    that says nothing about CPUs) is not compared.
    """
    hardware = ("machine", "gpu_model", "gpu_count", "gpu_memory_mib", "cpu_count", "memory_gib")
    software = ("driver", "cuda_driver")

    def diffs(fields: tuple[str, ...]) -> list[str]:
        out = []
        for name in fields:
            want, got = getattr(recorded, name), getattr(here, name)
            if want is not None and got is not None and want != got:
                out.append(f"{_LABELS[name]} {want} (here: {got})")
        return out

    hard, soft = diffs(hardware), diffs(software)
    if hard:
        return Comparison("different", tuple(hard + soft))
    return Comparison("same-hardware" if soft else "same", tuple(soft))
