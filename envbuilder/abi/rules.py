"""Post-resolution ABI rules: does this closure run on the target, and do its binaries agree?

Why rules over a whole lock and not per candidate: most failures here are relations (a kernel
built against torch 2.9 beside torch 2.10, a CUDA 13 binary on a 570 driver, a fix missing for
this GPU and this model); they only exist once every package is chosen. Each rule returns
`Finding`s that name the package, a stable rule id, a one-line why and a reference, so the
resolver, `lock` and the gate report the same thing in the same words.

Rule ids (stable, documented in docs/gate.md): arch-coverage, ptx-jit-driver, driver-arch,
driver-cuda, build-toolkit, build-toolkit-arch, abi-torch, abi-cuda, abi-cxx11, abi-provider,
abi-unknown-torch, facets-recorded, known-issue/<id>, known-issue-unverified/<id>.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Literal

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbuilder.abi.facets import GpuArch, arch_span, coverage, is_cuda_binary
from envbuilder.knowledge import KnownIssue, Knowledge, load_knowledge
from envbuilder.lock.model import Facets, LockedPackage
from envbuilder.model import StrictModel

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
# The package consumers link their C++ ABI against: knowledge data (binaries.yaml abi_provider).
PROVIDER = load_knowledge().abi_provider.package

# Documentation the rules cite (the facts themselves live in the knowledge base).
REF_ARCH = "https://docs.nvidia.com/cuda/blackwell-compatibility-guide/"
REF_DRIVER = "https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html"
REF_CPP_EXTENSION = "https://github.com/pytorch/pytorch/blob/v2.9.1/torch/utils/cpp_extension.py"
REF_UNDEFINED_SYMBOL = "https://github.com/Dao-AILab/flash-attention/issues/1832"
_URL = re.compile(r"https?://\S+")

# (url, ancestor, descendant) -> True / False / None (unreachable)
Ancestry = Callable[[str, str, str], "bool | None"]


class Finding(StrictModel):
    """One rule's verdict on one package; `package` is '*' for target-wide findings."""

    package: str
    rule: str
    severity: Severity
    why: str
    reference: str | None = None

    def __str__(self) -> str:
        ref = f" ({self.reference})" if self.reference else ""
        return f"{self.severity} {self.package} [{self.rule}]: {self.why}{ref}"

    @property
    def key(self) -> tuple[str, str]:
        """Identity across two locks: the same rule on the same package is the same finding."""
        return canonicalize_name(self.package) if self.package != "*" else "*", self.rule


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.package, f.rule))


def reference_of(source: str | None) -> str | None:
    """The first URL in a knowledge `source:` (some cite a document in this repository and a URL), else the text."""
    if not source:
        return None
    match = _URL.search(source)
    return match.group(0).rstrip(").,;") if match else source


def cite(source: str) -> str:
    """A short citation for a one-line reason: the URL, else the text before its first colon."""
    match = _URL.search(source)
    return match.group(0).rstrip(").,;") if match else source.split(":")[0].strip()


class DriverVersion(Version):
    """A driver version that prints as written (590.48.01, not 590.48.1)."""

    def __init__(self, text: str):
        super().__init__(text)
        self._text = text

    def __str__(self) -> str:
        return self._text


def toolkit_driver(knowledge: Knowledge, cuda: str) -> DriverVersion | None:
    """The driver a toolkit release needs natively, printed as NVIDIA writes it."""
    found = knowledge.min_driver(cuda)
    if found is None:
        return None
    return next(DriverVersion(r.min_driver) for r in knowledge.toolkits if Version(r.min_driver) == found)


def compat_floor(knowledge: Knowledge, cuda: str) -> DriverVersion | None:
    found = knowledge.compat_floor(cuda)
    return DriverVersion(str(found)) if found is not None else None


@dataclass(frozen=True)
class TargetFacts:
    """What the rules need to know about where the lock will run."""

    name: str
    arch: GpuArch | None = None
    driver_min: Version | None = None
    toolkit: str | None = None
    python: str | None = None
    model: str | None = None

    @classmethod
    def of(cls, target: Any, toolchain: dict | None = None) -> "TargetFacts":
        """From a matrix Target; values a lock recorded in its toolchain win (the lock is what ships)."""
        hardware = getattr(target, "hardware", None)
        gpu = getattr(hardware, "gpu", None)
        driver = getattr(hardware, "driver", None)
        recorded = toolchain or {}
        arch = recorded.get("gpu-arch") or getattr(gpu, "arch", None)
        driver_min = recorded.get("driver-min") or getattr(driver, "min", None)
        toolkit = recorded.get("cuda") or getattr(getattr(target, "toolchain", None), "cuda", None)
        return cls(
            name=getattr(target, "name", "?"),
            arch=GpuArch.parse(arch) if arch else None,
            driver_min=DriverVersion(str(driver_min)) if driver_min else None,
            toolkit=str(toolkit) if toolkit else None,
            python=getattr(getattr(target, "platform", None), "python", None),
            model=serve_model(getattr(target, "serve", None)),
        )

    @property
    def python_abi(self) -> str | None:
        return "cp" + self.python.replace(".", "") if self.python else None


def serve_model(serve: Any) -> str | None:
    if serve is None:
        return None
    if isinstance(serve, dict):
        return serve.get("model")
    return getattr(serve, "model", None)


@dataclass(frozen=True)
class Subject:
    """One locked package with the facets recomputed for it (never the ones the lock claims)."""

    package: LockedPackage
    facets: Facets | None

    @property
    def label(self) -> str:
        return f"{self.package.name} {self.package.version}"


# ---------------------------------------------------------------------------------- target-wide

def driver_arch(target: TargetFacts, knowledge: Knowledge) -> list[Finding]:
    """A driver older than the first toolkit that knows the GPU cannot drive it at all."""
    if target.arch is None or target.driver_min is None:
        return []
    first = knowledge.first_cuda(target.arch.sass)
    needed = toolkit_driver(knowledge, str(first)) if first else None
    if needed is None or target.driver_min >= needed:
        return []
    return [Finding(package="*", rule="driver-arch", severity="error",
                    why=f"driver minimum {target.driver_min} is below {needed}: {target.arch.sass} first appears "
                        f"in CUDA {first}, whose driver is >= {needed}",
                    reference=REF_DRIVER)]


# ---------------------------------------------------------------------------------- per binary

def arch_coverage(subject: Subject, target: TargetFacts, knowledge: Knowledge) -> list[Finding]:
    facets = subject.facets
    if target.arch is None or facets is None or not (facets.sass or facets.ptx):
        hint = _toolkit_hint(subject, target, knowledge) if is_cuda_binary(facets) else ""
        if hint:
            return [Finding(package=subject.package.name, rule="arch-coverage", severity="error",
                            why=f"{subject.label} compiles no GPU code for {target.arch.sass}{hint}",
                            reference=REF_ARCH)]
        if is_cuda_binary(facets) and target.arch is not None:
            return [Finding(package=subject.package.name, rule="arch-coverage", severity="info",
                            why=f"{subject.label}: no source says which GPU archs it carries "
                                f"(evidence: {facets.evidence}); run `envbuilder inspect` on it",
                            reference=REF_ARCH)]
        return []
    found = coverage(facets.sass, facets.ptx, target.arch)
    if not found.covered:
        why = f"{subject.label} has SASS {arch_span(facets.sass)}" + \
              (f" and PTX {arch_span(facets.ptx)}" if facets.ptx else " and no PTX") + \
              f": none runs on {target.arch.sass} (evidence: {facets.evidence})"
        why += _toolkit_hint(subject, target, knowledge)
        return [Finding(package=subject.package.name, rule="arch-coverage", severity="error", why=why,
                        reference=REF_ARCH)]
    if found.via == "ptx":
        return _ptx_jit(subject, target, knowledge, found.by)
    return []


def _toolkit_hint(subject: Subject, target: TargetFacts, knowledge: Knowledge) -> str:
    if subject.package.build is None:
        return ""
    toolkit = subject.package.build.cuda or target.toolkit
    first = knowledge.first_cuda(target.arch.sass) if target.arch else None
    if toolkit and first and Version(toolkit) < first:
        return f"; its build toolkit CUDA {toolkit} cannot compile {target.arch.sass} (first in CUDA {first})"
    return ""


def _ptx_jit(subject: Subject, target: TargetFacts, knowledge: Knowledge, by: str | None) -> list[Finding]:
    """PTX JIT needs a driver at least as new as the compiling toolkit (no minor-version compat)."""
    cuda = subject.facets.cuda if subject.facets else None
    needed = toolkit_driver(knowledge, cuda) if cuda and "." in cuda else None
    if target.driver_min is None:
        return []
    if needed is None:
        return [Finding(package=subject.package.name, rule="ptx-jit-driver", severity="warning",
                        why=f"{subject.label} reaches {target.arch.sass} only by JIT of {by} PTX, and its exact CUDA "
                            f"version is unknown: the driver may be too old to JIT it",
                        reference=REF_ARCH)]
    if target.driver_min < needed:
        return [Finding(package=subject.package.name, rule="ptx-jit-driver", severity="error",
                        why=f"{subject.label} reaches {target.arch.sass} only by JIT of {by} PTX built with CUDA {cuda}, "
                            f"which needs driver >= {needed} (minimum is {target.driver_min})",
                        reference=REF_ARCH)]
    return []


def driver_cuda(subject: Subject, target: TargetFacts, knowledge: Knowledge) -> list[Finding]:
    """The driver must natively support the binary's CUDA, or at least its major (minor-version compat)."""
    cuda = subject.facets.cuda if subject.facets else None
    if not cuda or target.driver_min is None:
        return []
    needed = toolkit_driver(knowledge, cuda) if "." in cuda else None
    floor = compat_floor(knowledge, cuda)
    driver = target.driver_min
    if needed is not None and driver >= needed:
        return []
    if floor is not None and driver >= floor:
        if needed is None:
            return []
        return [Finding(package=subject.package.name, rule="driver-cuda", severity="warning",
                        why=f"{subject.label} is built with CUDA {cuda} (driver >= {needed}); driver {driver} runs it "
                            f"only through minor-version compatibility (limited features, no newer PTX JIT)",
                        reference=knowledge.minor_version_compat.source)]
    floor_text = f"CUDA {cuda.split('.')[0]}.x needs >= {floor}" if floor else f"no known driver runs CUDA {cuda}"
    return [Finding(package=subject.package.name, rule="driver-cuda", severity="error",
                    why=f"{subject.label} is built with CUDA {cuda}; driver minimum {driver} cannot run it ({floor_text})",
                    reference=REF_DRIVER)]


def build_toolkit(subject: Subject, provider: Facets | None, target: TargetFacts) -> list[Finding]:
    """torch.utils.cpp_extension: nvcc major != torch's CUDA major raises; a minor mismatch warns."""
    build = subject.package.build
    facets = subject.facets
    if build is None or facets is None or not facets.torch or provider is None or not provider.cuda:
        return []
    toolkit = build.cuda or target.toolkit
    if not toolkit:
        return []
    mine, theirs = Version(toolkit), Version(provider.cuda)
    if mine.major != theirs.major:
        return [Finding(package=subject.package.name, rule="build-toolkit", severity="error",
                        why=f"{subject.label} builds with CUDA {toolkit} but torch was built with CUDA {provider.cuda}: "
                            f"torch.utils.cpp_extension raises on a major mismatch",
                        reference=REF_CPP_EXTENSION)]
    if mine.release[:2] != theirs.release[:2]:
        return [Finding(package=subject.package.name, rule="build-toolkit", severity="warning",
                        why=f"{subject.label} builds with CUDA {toolkit}, torch with CUDA {provider.cuda}: a minor "
                            f"mismatch torch.utils.cpp_extension only warns about",
                        reference=REF_CPP_EXTENSION)]
    return []


def consumer_abi(subject: Subject, provider: Subject | None, reference: str | None) -> list[Finding]:
    """A torch consumer's torch major.minor, CUDA major and C++11 ABI must equal torch's."""
    facets = subject.facets
    if facets is None or not facets.torch or canonicalize_name(subject.package.name) == PROVIDER:
        return []
    name = subject.package.name
    # The package's own evidence; flash-attention's undefined-symbol issue only ever speaks for flash-attn.
    ref = reference or (REF_UNDEFINED_SYMBOL if canonicalize_name(name) == "flash-attn" else None)
    if provider is None:
        return [Finding(package=name, rule="abi-provider", severity="error",
                        why=f"{subject.label} was built against torch {facets.torch}, but the lock has no torch",
                        reference=ref)]
    offered = provider.facets or Facets()
    out = []
    if offered.torch and offered.torch != facets.torch:
        out.append(Finding(package=name, rule="abi-torch", severity="error",
                           why=f"{subject.label} was built against torch {facets.torch}, but the lock has torch "
                               f"{provider.package.version} ({offered.torch}): import fails with undefined symbol _ZN3c10... "
                               f"(evidence: {facets.evidence})",
                           reference=ref))
    if offered.cuda and facets.cuda and offered.cuda.split(".")[0] != facets.cuda.split(".")[0]:
        out.append(Finding(package=name, rule="abi-cuda", severity="error",
                           why=f"{subject.label} was built with CUDA {facets.cuda}, torch {provider.package.version} "
                               f"with CUDA {offered.cuda}: different CUDA majors cannot share a process",
                           reference=ref))
    if offered.cxx11_abi is not None and facets.cxx11_abi is not None and offered.cxx11_abi != facets.cxx11_abi:
        out.append(Finding(package=name, rule="abi-cxx11", severity="error",
                           why=f"{subject.label} uses cxx11abi={_flag(facets.cxx11_abi)}, torch {provider.package.version} "
                               f"cxx11abi={_flag(offered.cxx11_abi)}: std::string symbols will not resolve",
                           reference=ref))
    return out


def unknown_torch(subject: Subject, links_torch: bool) -> list[Finding]:
    """A binary that links libtorch with no source naming its torch: nothing can check it."""
    if not links_torch or (subject.facets and subject.facets.torch) or \
            canonicalize_name(subject.package.name) == PROVIDER:
        return []
    return [Finding(package=subject.package.name, rule="abi-unknown-torch", severity="warning",
                    why=f"{subject.label} links libtorch/libc10 but no source says which torch it was built "
                        f"against: add a `binaries` fact to the knowledge base",
                    reference=REF_UNDEFINED_SYMBOL)]


def recorded_facets(subject: Subject) -> list[Finding]:
    """The lock's own claim differs from what its artifacts and the knowledge base say now."""
    claimed = subject.package.facets
    if claimed is None or subject.facets is None:
        return []
    mine = subject.facets
    diffs = [f"{k} {getattr(claimed, k)!r} -> {getattr(mine, k)!r}" for k in ("torch", "cxx11_abi")
             if getattr(claimed, k) is not None and getattr(mine, k) is not None
             and getattr(claimed, k) != getattr(mine, k)]
    if claimed.cuda and mine.cuda and claimed.cuda.split(".")[0] != mine.cuda.split(".")[0]:
        diffs.append(f"cuda {claimed.cuda!r} -> {mine.cuda!r}")
    if not diffs:
        return []
    return [Finding(package=subject.package.name, rule="facets-recorded", severity="warning",
                    why=f"{subject.label}: the lock records facets that its artifacts contradict ({'; '.join(diffs)}); "
                        "re-lock", reference=None)]


def _flag(value: bool) -> str:
    return "TRUE" if value else "FALSE"


# ---------------------------------------------------------------------------------- known issues

def condition_holds(issue: KnownIssue, target: TargetFacts) -> bool:
    when = issue.when
    if when.arch_major is not None and (target.arch is None or target.arch.major != when.arch_major):
        return False
    if when.arch is not None and (target.arch is None or GpuArch.parse(when.arch).plain != target.arch.plain):
        return False
    if when.model is not None and (target.model is None or not re.search(when.model, target.model)):
        return False
    return True


def known_issues(subject: Subject, target: TargetFacts, knowledge: Knowledge,
                 ancestry: Ancestry | None) -> list[Finding]:
    """Version ranges decide for index packages; a git source is judged by commit ancestry."""
    package = subject.package
    source = package.source
    is_git = bool(source.git and source.commit)
    candidates = [i for i in knowledge.known_issues
                  if canonicalize_name(i.package) == canonicalize_name(package.name)]
    out = []
    for issue in candidates:
        if not condition_holds(issue, target):
            continue
        if is_git and issue.fix.commit:
            verdict = ancestry(source.git, issue.fix.commit, source.commit) if ancestry else None
            if verdict is True:
                continue
            if verdict is None:
                out.append(_unverified(subject, issue, f"cannot reach {source.git} to check that commit "
                                                       f"{source.commit[:12]} contains fix {issue.fix.commit[:12]}"))
                continue
            out.append(_issue(subject, issue, f"commit {source.commit[:12]} does not contain fix {issue.fix.commit[:12]}"))
        elif _affected(issue, package.version):
            if is_git:
                out.append(_unverified(subject, issue, f"git commit {source.commit[:12]} claims version "
                                                       f"{package.version}, and the knowledge base names no fix commit"))
            else:
                out.append(_issue(subject, issue, None))
    return out


def _affected(issue: KnownIssue, version: str) -> bool:
    try:
        return issue.affects(issue.package, version)
    except InvalidVersion:
        return False


def _fix_text(issue: KnownIssue) -> str:
    """The fixing version only: the fix's PR is the finding's `reference`, printed once after `why`."""
    return f"fixed in {issue.fix.version}" if issue.fix.version else ""


def _issue(subject: Subject, issue: KnownIssue, detail: str | None) -> Finding:
    fix = _fix_text(issue)
    why = f"{subject.label}: {issue.summary}" + (f" ({detail})" if detail else "") + (f" [{fix}]" if fix else "")
    return Finding(package=subject.package.name, rule=f"known-issue/{issue.id}", severity=issue.severity,
                   why=why, reference=issue.fix.pr or reference_of(issue.source))


def _unverified(subject: Subject, issue: KnownIssue, detail: str) -> Finding:
    return Finding(package=subject.package.name, rule=f"known-issue-unverified/{issue.id}", severity="warning",
                   why=f"{subject.label}: unverified whether it has the fix for: {issue.summary} ({detail})",
                   reference=issue.fix.pr or reference_of(issue.source))
