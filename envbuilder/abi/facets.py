"""ABI facets: what a compiled package was built for, and where its GPU code can run.

Why one module: the resolver hook, the post-resolution rules and the gate must agree exactly on
how `sm_120a` compares with an RTX PRO 6000, or on what `+cu12torch2.8cxx11abiTRUE` promises;
two copies of that logic would drift. Facets come from three sources, in order of trust: the
binary itself (an inspection report), the knowledge base, the wheel name. Each source yields a
partial `Facets`; `layered` lets the more trusted one win field by field.

Arch semantics (Blackwell compatibility guide):
- SASS `sm_XY` runs on devices of the same major and an equal or higher minor;
- SASS or PTX `sm_XYa` runs only on exactly that arch;
- `sm_XYf` runs on the same major with an equal or higher minor (a family);
- PTX `compute_XY` JIT-compiles onto any device of an equal or higher arch, if the driver's JIT
  understands that PTX (a driver at least as new as the compiling toolkit's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Iterable

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from envbuilder.knowledge import BinaryFact, Knowledge
from envbuilder.lock.model import Facets

_ARCH = re.compile(r"^(?:sm_|compute_|sm|compute)?(\d+)(?:\.(\d))?([af]?)$")
_LOCAL_CUDA = re.compile(r"^cu(\d+)$")
EVIDENCE_RANK = {"binary": 3, "build": 3, "knowledge": 2, "wheel-name": 1}


@dataclass(frozen=True, order=True)
class GpuArch:
    """A compute capability with its suffix: sm_120a is GpuArch(12, 0, 'a')."""

    major: int
    minor: int
    suffix: str = ""

    @classmethod
    def parse(cls, text: str) -> "GpuArch":
        """Accepts `sm_120a`, `compute_90`, `12.0a`, `120` and `9.0` (TORCH_CUDA_ARCH_LIST style)."""
        match = _ARCH.match(text.strip().lower())
        if not match:
            raise ValueError(f"not a GPU arch: {text!r} (e.g. sm_120, sm_90a, 12.0)")
        digits, minor, suffix = match.groups()
        if minor is not None:
            return cls(int(digits), int(minor), suffix)
        if len(digits) < 2:
            raise ValueError(f"not a GPU arch: {text!r} (e.g. sm_120, sm_90a, 12.0)")
        return cls(int(digits[:-1]), int(digits[-1]), suffix)

    @property
    def number(self) -> str:
        return f"{self.major}{self.minor}{self.suffix}"

    @property
    def sass(self) -> str:
        return f"sm_{self.number}"

    @property
    def ptx(self) -> str:
        return f"compute_{self.number}"

    @property
    def plain(self) -> "GpuArch":
        return GpuArch(self.major, self.minor)


def code_runs_on(code: GpuArch, device: GpuArch, *, ptx: bool) -> bool:
    """Whether SASS (ptx=False) or PTX built for `code` can execute on `device`."""
    device = device.plain
    if code.suffix == "a":
        return code.plain == device
    if code.suffix == "f" or not ptx:
        return code.major == device.major and code.minor <= device.minor
    return (code.major, code.minor) <= (device.major, device.minor)


@dataclass(frozen=True)
class Coverage:
    """How (if at all) a binary's GPU code reaches the device: `via` is 'sass', 'ptx' or None."""

    via: str | None
    by: str | None = None  # the arch that covers it

    @property
    def covered(self) -> bool:
        return self.via is not None


def coverage(sass: Iterable[str], ptx: Iterable[str], device: GpuArch) -> Coverage:
    """SASS beats PTX: SASS needs no JIT and so no driver newer than the compiling toolkit."""
    for kind, archs in (("sass", sass), ("ptx", ptx)):
        runs = [a for a in _parsed(archs) if code_runs_on(a, device, ptx=kind == "ptx")]
        if runs:
            best = max(runs)
            return Coverage(kind, best.sass if kind == "sass" else best.ptx)
    return Coverage(None)


def _parsed(archs: Iterable[str]) -> list[GpuArch]:
    out = []
    for arch in archs:
        try:
            out.append(GpuArch.parse(arch))
        except ValueError:
            continue
    return out


def parse_arch_list(value: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(sass, ptx) from an arch list env value: "80;90;120", "8.0 9.0a 12.0+PTX", "sm_120a"."""
    sass, ptx = [], []
    for token in re.split(r"[;,\s]+", value.strip()):
        if not token:
            continue
        with_ptx = token.upper().endswith("+PTX")
        arch = GpuArch.parse(token[:-4] if with_ptx else token)
        sass.append(arch.sass)
        if with_ptx:
            ptx.append(arch.ptx)
    return tuple(sass), tuple(ptx)


def major_minor(version: str) -> str:
    release = Version(version).release
    return f"{release[0]}.{release[1] if len(release) > 1 else 0}"


def cuda_of_local(local: str | None) -> str | None:
    """`cu128` -> '12.8', `cu130` -> '13.0' (PyTorch's local version labels)."""
    match = _LOCAL_CUDA.match(local or "")
    if not match or len(match.group(1)) < 3:
        return None
    digits = match.group(1)
    return f"{int(digits[:-1])}.{int(digits[-1])}"


@dataclass(frozen=True)
class WheelName:
    """What a wheel's file name says: version (with local label), Python ABI, pure or not."""

    version: Version
    python_abi: str | None
    pure: bool

    @classmethod
    def parse(cls, filename: str) -> "WheelName | None":
        try:
            _, version, _, tags = parse_wheel_filename(filename)
        except (InvalidWheelFilename, InvalidVersion):
            return None
        abis = {t.abi for t in tags}
        pure = abis == {"none"} and {t.platform for t in tags} == {"any"}
        python_abi = None if abis == {"none"} else ("abi3" if "abi3" in abis else sorted(abis)[0])
        return cls(version, python_abi, pure)


def wheel_name_facets(filename: str, knowledge: Knowledge) -> Facets | None:
    """Facets a naming convention encodes (flash-attn's `+cu12torch2.8cxx11abiTRUE`, torch's `+cu128`)."""
    name = WheelName.parse(filename)
    if name is None:
        return None
    for convention in knowledge.wheel_name_conventions:
        match = re.search(convention.pattern, filename)
        if match:
            found = match.groupdict()
            abi = found.get("cxx11_abi")
            return Facets(torch=found.get("torch"), cuda=found.get("cuda"),
                          cxx11_abi=None if abi is None else abi.upper() == "TRUE",
                          python_abi=name.python_abi, evidence="wheel-name")
    cuda = cuda_of_local(name.version.local)
    if cuda or name.python_abi:
        return Facets(cuda=cuda, python_abi=name.python_abi, evidence="wheel-name")
    return None


def fact_applies(fact: BinaryFact, filename: str | None) -> bool:
    """A fact keyed by a local label (`cu128`) describes that build, or the unlabelled default wheel."""
    if fact.local is None or filename is None:
        return True
    name = WheelName.parse(filename)
    local = name.version.local if name else None
    return local is None or local == fact.local


def knowledge_facets(fact: BinaryFact, version: str, *, prebuilt: bool) -> Facets | None:
    """A fact's facets for one version; `from-version`/`from-build` values are left to the caller.

    `from-build` describes a source build; for a prebuilt wheel of the same package it says
    nothing, so only concrete values are taken.
    """
    side = fact.provides or fact.requires
    torch = cuda = cxx11 = None
    if side is not None:
        torch = major_minor(version) if side.torch == "from-version" else side.torch
        cuda = side.cuda
        cxx11 = side.cxx11_abi
    concrete = lambda v: None if v in ("from-build", "from-version") else v  # noqa: E731
    sass = fact.sass if prebuilt else ()
    ptx = fact.ptx if prebuilt else ()
    out = Facets(torch=concrete(torch), cuda=concrete(cuda), cxx11_abi=concrete(cxx11),
                 sass=tuple(sass), ptx=tuple(ptx), evidence="knowledge")
    return out if (out.torch or out.cuda or out.cxx11_abi is not None or out.sass or out.ptx) else None


def build_archs(fact: BinaryFact | None, toolkit: str | None, env: dict[str, str], knowledge: Knowledge
                ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(sass, ptx) a source build compiles: the package's default list for this toolkit,
    narrowed by its arch env variable, minus archs the toolkit cannot compile yet."""
    defaults: tuple[str, ...] = ()
    if fact is not None and fact.build_archs and toolkit:
        usable = [k for k in fact.build_archs if Version(k) <= Version(toolkit)]
        if usable:
            defaults = fact.build_archs[max(usable, key=Version)]
    sass, ptx = tuple(defaults), ()
    variable = getattr(fact, "arch_env", None) if fact is not None else None
    for name in filter(None, (variable, "TORCH_CUDA_ARCH_LIST")):
        if env.get(name):
            wanted_sass, ptx = parse_arch_list(env[name])
            sass = tuple(a for a in wanted_sass if not defaults or _same_number(a, defaults)) \
                if name == variable else wanted_sass
            break
    if toolkit:
        sass = tuple(a for a in sass if _compilable(a, toolkit, knowledge))
        ptx = tuple(a for a in ptx if _compilable(a, toolkit, knowledge))
    return sass, ptx


def _same_number(arch: str, defaults: tuple[str, ...]) -> bool:
    wanted = GpuArch.parse(arch).plain
    return any(GpuArch.parse(d).plain == wanted for d in defaults)


def _compilable(arch: str, toolkit: str, knowledge: Knowledge) -> bool:
    first = knowledge.first_cuda(GpuArch.parse(arch).sass)
    return first is None or first <= Version(toolkit)


def binary_facets(report) -> Facets:
    """Facets read from the bytes (an `envbuilder.abi.report.WheelReport`): archs, CUDA, C++ ABI."""
    nvcc = [Version(v) for v in getattr(report, "nvcc_versions", ())]
    cuda = f"{max(nvcc).major}.{max(nvcc).minor}" if nvcc else None
    return Facets(cuda=cuda, cxx11_abi=report.cxx11_abi, sass=tuple(report.sass_archs),
                  ptx=tuple(report.ptx_archs), evidence="binary")


def linkage_facets(summary, optional: Callable[[str], bool] | None = None) -> Facets | None:
    """Facets read from a linkage summary (`envbuilder.abi.linkage.WheelLinkage`): GPU code and nvcc.

    `optional` names files the package's import code loads inside a try and runs without
    (torchao's `_C`): their archs do not decide where the package runs; the linker still warns
    about each such file that has no code for the target."""
    elfs = [e for e in getattr(summary, "elfs", ()) if optional is None or not optional(e.path)]
    sass = tuple(sorted({a for e in elfs for a in e.sass}, key=_arch_key))
    ptx = tuple(sorted({a for e in elfs for a in e.ptx}, key=_arch_key))
    nvcc = [Version(v) for e in elfs for v in e.nvcc]
    cuda = f"{max(nvcc).major}.{max(nvcc).minor}" if nvcc else None
    if not (sass or ptx or cuda):
        return None
    return Facets(cuda=cuda, sass=sass, ptx=ptx, evidence="binary")


def _arch_key(arch: str) -> tuple:
    try:
        return (0, GpuArch.parse(arch))
    except ValueError:
        return (1, arch)


def layered(*layers: Facets | None) -> Facets | None:
    """Merge partial facets, later (more trusted) layers winning for every field they set."""
    present = [f for f in layers if f is not None]
    if not present:
        return None
    out = present[0]
    for layer in present[1:]:
        out = replace(
            out,
            torch=layer.torch or out.torch,
            cuda=_finer_cuda(out.cuda, layer.cuda),
            cxx11_abi=out.cxx11_abi if layer.cxx11_abi is None else layer.cxx11_abi,
            python_abi=layer.python_abi or out.python_abi,
            sass=layer.sass or out.sass,
            ptx=layer.ptx or out.ptx,
            evidence=max((out.evidence, layer.evidence), key=lambda e: EVIDENCE_RANK.get(e or "", 0)),
        )
    return out


def _finer_cuda(old: str | None, new: str | None) -> str | None:
    """The trusted value wins, unless it only says the major the other value already refines."""
    if new is None:
        return old
    if old is not None and "." not in new and old.split(".")[0] == new:
        return old
    return new


def is_cuda_binary(facets: Facets | None) -> bool:
    return facets is not None and bool(facets.cuda or facets.sass or facets.ptx)


def arch_span(archs: Iterable[str]) -> str:
    """`sm_70..sm_120` for a report line; a list of one or two is spelled out."""
    items = sorted(set(archs), key=lambda a: GpuArch.parse(a) if _ARCH.match(a) else GpuArch(999, 0))
    if len(items) <= 3:
        return ", ".join(items) or "none"
    return f"{items[0]}..{items[-1]} ({len(items)} archs)"
