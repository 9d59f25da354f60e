"""The resolver's ABI hook: facets as candidate vetoes, as requirements, and as post-checks.

Why a hook and not rules inside the resolver: the resolver should not know what sm_120a or
`cxx11abiTRUE` mean. It asks three questions while resolving (may this file be used? what does
it require of its providers? what facets does it carry?) and one after (`check`). The gate
asks the same object, so a lock and a CI gate can never disagree about a combination.

Required facets become ordinary requirements on the provider ("torch>=2.9,<2.10"), so
resolvelib backtracks to another candidate (a source build, say) or explains the conflict in
words, instead of failing after the fact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbuilder.abi import facets as fx
from envbuilder.abi import rules
from envbuilder.abi.loaders import optional_module
from envbuilder.abi.rules import Ancestry, Finding, Subject, TargetFacts
from envbuilder.knowledge import BinaryFact, Knowledge
from envbuilder.lock.model import Facets, Lock, LockedPackage

# (filename, sha256 or None) -> an inspection report (envbuilder.abi.report.WheelReport) or None
Inspector = Callable[[str, "str | None"], Any]
SDIST_SUFFIXES = (".tar.gz", ".zip", ".tar.bz2")


def is_source_build(filename: str | None) -> bool:
    return filename is None or filename.endswith(SDIST_SUFFIXES)


@dataclass(frozen=True)
class TorchRequirement:
    torch: str
    origin: str


class AbiHook:
    """Facets and ABI rules for one target; `inspector` adds binary evidence where it has some."""

    def __init__(self, target: Any, knowledge: Knowledge, inspector: Inspector | None = None,
                 ancestry: Ancestry | None = None, toolchain: dict | None = None):
        self.target = target
        self.knowledge = knowledge
        self.inspector = inspector
        self.ancestry = ancestry if ancestry is not None else default_ancestry
        self.facts = TargetFacts.of(target, toolchain)
        self._reports: dict[tuple[str, str | None], Any] = {}
        # binary evidence from linkage summaries (sha256 -> WheelLinkage), set after linking
        self.linkage: dict[str, Any] = {}
        # conflicts learned from linking: (name, version) -> [(requirement on a provider, why)]
        self.learned: dict[tuple[str, str], list[tuple[str, str]]] = {}
        # when the closure is linked from binaries, the torch-range fast path is not needed
        self.binary_linking = False

    # ------------------------------------------------------------------ questions while resolving

    def admissible(self, name: str, version: str, filename: str | None) -> str | None:
        """None if the file may be used, else why not (one line)."""
        if is_source_build(filename):
            return None
        facets = self.facets(name, version, filename)
        subject = Subject(_stub(name, version), facets)
        for finding in (*rules.arch_coverage(subject, self.facts, self.knowledge),
                        *rules.driver_cuda(subject, self.facts, self.knowledge)):
            if finding.severity == "error":
                return f"{filename}: {finding.why.removeprefix(subject.label + ' ')}"
        return None

    def extra_requirements(self, name: str, version: str, filename: str | None) -> list[tuple[str, str]]:
        """Required facets as requirements on the provider: [("torch>=2.9,<2.10", why)]."""
        learned = list(self.learned.get((canonicalize_name(name), version), ()))
        if is_source_build(filename) or canonicalize_name(name) == rules.PROVIDER:
            return learned
        wanted = self._torch_requirement(name, version, filename)
        if wanted is None or self.binary_linking:
            return learned  # linking the binaries decides; the name/knowledge range would only guess
        release = Version(wanted.torch).release
        upper = f"{release[0]}.{release[1] + 1}"
        return [*learned, (f"{rules.PROVIDER}>={wanted.torch},<{upper}",
                           f"{name} {version} was built against {rules.PROVIDER} {wanted.torch} ({wanted.origin})")]

    def learn(self, conflicts: list[tuple[str, str, str, str, str]]) -> int:
        """Record linkage failures (consumer, version, provider, provider version, why) as
        requirements, so the next resolution backtracks around them; returns how many are new."""
        added = 0
        for consumer, version, provider, provider_version, why in conflicts:
            entry = (f"{provider}!={provider_version}", why)
            known = self.learned.setdefault((canonicalize_name(consumer), version), [])
            if entry not in known:
                known.append(entry)
                added += 1
        return added

    def facets(self, name: str, version: str, filename: str | None, build_env: dict[str, str] | None = None,
               *, build_requires: tuple[str, ...] = (), build_cuda: str | None = None,
               providers: Mapping[str, str] | None = None, sha256: str | None = None) -> Facets | None:
        """Facets to record: binary > knowledge > wheel name; a source build gets its build env's.

        `build_requires` ("torch==2.9.1") or `providers` ({"torch": "2.9.1"}) name the torch a
        source build compiles against; `sha256` lets the inspector find a cached report.
        """
        if is_source_build(filename):
            return self._build_facets(name, version, build_env or {}, build_requires, build_cuda, providers or {})
        fact = self._fact(name, version, filename)
        name_layer = fx.wheel_name_facets(filename, self.knowledge)
        knowledge_layer = fx.knowledge_facets(fact, version, prebuilt=True) if fact else None
        report = self._report(filename, sha256)
        binary_layer = fx.binary_facets(report) if report is not None else None
        if sha256 in self.linkage:
            binary_layer = fx.layered(binary_layer, fx.linkage_facets(self.linkage[sha256],
                                                                      optional_module(name, version)))
        own = Facets(torch=fx.major_minor(version), evidence="wheel-name") \
            if canonicalize_name(name) == rules.PROVIDER else None
        merged = fx.layered(own, name_layer, knowledge_layer, binary_layer)
        if merged is None or (not fx.is_cuda_binary(merged) and merged.torch is None and fact is None
                              and fx.WheelName.parse(filename) and fx.WheelName.parse(filename).pure):
            return None
        return merged

    # ------------------------------------------------------------------ after resolving

    def subjects(self, lock: Lock) -> list[Subject]:
        """Every package with facets recomputed from its artifacts and the knowledge base."""
        torch = lock.package(rules.PROVIDER)
        providers = {rules.PROVIDER: torch.version} if torch else {}
        return [Subject(p, self.package_facets(p, providers)) for p in lock.packages]

    def package_facets(self, package: LockedPackage, providers: Mapping[str, str] | None = None) -> Facets | None:
        if package.build is not None:
            return self.facets(package.name, package.version, None, package.build.env,
                               build_requires=package.build.requires, build_cuda=package.build.cuda,
                               providers=providers)
        wheel = _wheel_of(package)
        if wheel is None:
            return None
        return self.facets(package.name, package.version, wheel.filename, sha256=wheel.sha256)

    def check(self, lock: Lock, subjects: list[Subject] | None = None) -> list[Finding]:
        """Every rule over the lock; facets are recomputed, never taken from the lock."""
        subjects = subjects if subjects is not None else self.subjects(lock)
        provider = next((s for s in subjects if canonicalize_name(s.package.name) == rules.PROVIDER), None)
        provider_facets = provider.facets if provider else None
        findings = list(rules.driver_arch(self.facts, self.knowledge))
        for subject in subjects:
            findings += rules.arch_coverage(subject, self.facts, self.knowledge)
            findings += rules.driver_cuda(subject, self.facts, self.knowledge)
            findings += rules.build_toolkit(subject, provider_facets, self.facts)
            if not self._linked_from_binary(subject.package):  # binary evidence overrules these guesses
                findings += rules.consumer_abi(subject, provider, self._reference(subject.package))
                findings += rules.unknown_torch(subject, self._links_torch(subject.package))
            findings += rules.recorded_facets(subject)
            findings += rules.known_issues(subject, self.facts, self.knowledge, self.ancestry)
        return rules.sort_findings(findings)

    # ------------------------------------------------------------------ helpers

    def _fact(self, name: str, version: str, filename: str | None) -> BinaryFact | None:
        try:
            return next((b for b in self.knowledge.binaries
                         if b.matches(name, version) and fx.fact_applies(b, filename)), None)
        except InvalidVersion:
            return None

    def _report(self, filename: str, sha256: str | None):
        if self.inspector is None:
            return None
        key = (filename, sha256)
        if key not in self._reports:
            self._reports[key] = self.inspector(filename, sha256)
        return self._reports[key]

    def _linked_from_binary(self, package: LockedPackage) -> bool:
        wheel = _wheel_of(package)
        return wheel is not None and wheel.sha256 in self.linkage

    def _links_torch(self, package: LockedPackage) -> bool:
        wheel = _wheel_of(package)
        report = self._report(wheel.filename, wheel.sha256) if wheel else None
        return bool(report is not None and getattr(report, "torch_consumer", False))

    def _reference(self, package: LockedPackage) -> str | None:
        wheel = _wheel_of(package)
        fact = self._fact(package.name, package.version, wheel.filename if wheel else None)
        url = rules.reference_of(fact.source) if fact and fact.requires else None
        return url if url and url.startswith("http") else None

    def _torch_requirement(self, name: str, version: str, filename: str) -> TorchRequirement | None:
        fact = self._fact(name, version, filename)
        if fact is not None and fact.requires is not None and fact.requires.torch not in (None, "from-build"):
            return TorchRequirement(fact.requires.torch, f"knowledge: {rules.cite(fact.source)}")
        by_name = fx.wheel_name_facets(filename, self.knowledge)
        if by_name is not None and by_name.torch:
            return TorchRequirement(by_name.torch, f"wheel name {filename}")
        return None

    def _build_facets(self, name: str, version: str, env: dict[str, str], build_requires: tuple[str, ...],
                      build_cuda: str | None, providers: Mapping[str, str]) -> Facets:
        """A source build carries its environment's facets: the lock's torch, the build toolkit, its archs."""
        fact = self._fact(name, version, None)
        torch_version = _pinned(build_requires, rules.PROVIDER) or providers.get(rules.PROVIDER) \
            or self._matrix_pin(rules.PROVIDER)
        consumes_torch = torch_version is not None and (
            (fact is not None and fact.requires is not None and fact.requires.torch == "from-build")
            or _pinned(build_requires, rules.PROVIDER) is not None)
        toolkit = build_cuda or self.facts.toolkit
        sass, ptx = fx.build_archs(fact, toolkit, env, self.knowledge)
        torch_facets = self._provider_facets(torch_version) if consumes_torch else None
        cuda = toolkit if (consumes_torch or sass or ptx) else None
        return Facets(
            torch=fx.major_minor(torch_version) if consumes_torch else None,
            cuda=cuda,
            cxx11_abi=torch_facets.cxx11_abi if torch_facets else None,
            python_abi=self.facts.python_abi,
            sass=sass, ptx=ptx, evidence="build",
        )

    def _matrix_pin(self, name: str) -> str | None:
        """The matrix's exact pin: what a source build compiles against when the caller names no torch."""
        spec_of = getattr(self.target, "spec", None)
        spec = spec_of(name) if callable(spec_of) else None
        return _pinned((f"{name}{spec.version}",), name) if spec is not None and spec.version else None

    def _provider_facets(self, version: str) -> Facets | None:
        fact = self._fact(rules.PROVIDER, version, None)
        return fx.knowledge_facets(fact, version, prebuilt=True) if fact else None


def _stub(name: str, version: str) -> LockedPackage:
    from envbuilder.lock.model import Source

    return LockedPackage(name=name, version=version, source=Source())


def _wheel_of(package: LockedPackage):
    """The wheel the target installs: a lock for one target holds one wheel per package."""
    wheels = [a for a in package.artifacts if a.kind == "wheel"]
    return sorted(wheels)[0] if wheels else None


def _pinned(requirements: tuple[str, ...], name: str) -> str | None:
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) == canonicalize_name(name):
            pins = [s.version for s in req.specifier if s.operator in ("==", "===")]
            if pins:
                return pins[0]
    return None


def default_ancestry(url: str, ancestor: str, descendant: str) -> bool | None:
    """Ancestry through the index's git cache; None (unverified) when it cannot be answered."""
    from envbuilder.errors import EnvbuilderError
    from envbuilder.index.git import is_ancestor

    try:
        return is_ancestor(url, ancestor, descendant)
    except EnvbuilderError:
        return None


def cached_inspector(filename: str, sha256: str | None):
    """Binary evidence from the inspection cache only: the gate never downloads a wheel to decide."""
    if not sha256:
        return None
    from envbuilder.abi import cache

    class _Miss(Exception):
        pass

    def miss():
        raise _Miss

    try:
        key = cache.sha256_key(sha256)
        if not cache._entry_path(key).exists():  # most artifacts were never inspected: no lock file for them
            return None
        return cache.cached(key, "wheel", miss)
    except (_Miss, ValueError):
        return None
