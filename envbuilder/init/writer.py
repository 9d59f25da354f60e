"""Write the matrix for `init`: the target's platform and GPU, and one pin per package found.

The text is written by hand (every value JSON-quoted, which YAML reads as the same string) and then
loaded back through the matrix loader before it is kept, so what `init` writes is always a matrix
`lock` accepts, and no value from an input file can add a key or a line of its own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from envbuilder.init.readers import Pin

#: torch's local version names its CUDA: 2.9.1+cu128 -> 12.8.
_TORCH_CUDA = re.compile(r"\+cu(\d+)(\d)$")


@dataclass(frozen=True)
class Gpu:
    name: str
    arch: str
    count: int
    memory_gib: float


@dataclass(frozen=True)
class Spec:
    target: str
    python: str
    libc: str
    machine: str
    base_image: str
    apt: tuple[str, ...]
    gpu: Gpu | None = None
    driver_min: str | None = None
    cuda: str | None = None
    source: str = ""


def torch_cuda(pins: tuple[Pin, ...]) -> str | None:
    torch = next((p for p in pins if p.name == "torch"), None)
    match = _TORCH_CUDA.search(torch.specifier.split(";")[0]) if torch else None
    return f"{match.group(1)}.{match.group(2)}" if match else None


def default_base(python: str, cuda: str | None) -> tuple[str, tuple[str, ...], str]:
    """A base image whose own Python is the target's (tags: `lock` records them as unpinned)."""
    if cuda:
        return f"nvidia/cuda:{cuda}.1-cudnn-devel-ubuntu24.04", (f"python{python}", f"python{python}-venv",
                                                                 f"python{python}-dev"), "glibc_2.39"
    if python == "3.11":
        return "debian:bookworm-slim", ("python3", "python3-venv"), "glibc_2.36"
    return "ubuntu:24.04", (f"python{python}", f"python{python}-venv"), "glibc_2.39"


def _q(value: object) -> str:
    return json.dumps(value)


def render(spec: Spec, pins: tuple[Pin, ...]) -> str:
    lines = [f"# Written by `envbuilder init` from {_q(spec.source)[1:-1]}; every package pinned as it was there.",
             "schema: 1", f"target: {spec.target}", f"description: {_q('started from ' + spec.source)}"]
    if spec.gpu is not None:
        g = spec.gpu
        lines += ["hardware:",
                  f"  gpu: {{name: {_q(g.name)}, arch: {g.arch}, count: {g.count}, memory_gib: {g.memory_gib:g}}}"]
        if spec.driver_min:
            lines.append(f"  driver: {{min: {_q(spec.driver_min)}}}")
    lines += [f"platform: {{os: linux, machine: {spec.machine}, libc: {spec.libc}, python: {_q(spec.python)}}}",
              "toolchain:"]
    if spec.cuda:
        lines.append(f"  cuda: {_q(spec.cuda)}")
    lines += [f"  base_image: {_q(spec.base_image)}", f"  apt: [{', '.join(_q(a) for a in spec.apt)}]", "packages:"]
    lines += [f"  {_q(p.name)}: {_q(p.specifier)}" for p in sorted(pins, key=lambda p: p.name) if p.specifier]
    lines += [f"  {_q(p.name)}: {_q('')}" for p in sorted(pins, key=lambda p: p.name) if not p.specifier]
    return "\n".join(lines) + "\n"
