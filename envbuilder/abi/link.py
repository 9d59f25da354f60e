"""Link a locked environment before it exists, the way ld.so will when Python imports it.

Why: an `undefined symbol` after a torch bump, or `libcudart.so.12: cannot open shared object
file` beside a CUDA 13 torch, is decided entirely by files the lock already names. Python imports
extensions with RTLD_NOW (every non-weak undefined symbol must resolve at import), so resolving
them all from the linkage summaries predicts the import exactly.

The model (man ld.so, man dlopen; docs/abi.md):
- every ELF sits at its install path (site-packages relative);
- importing a package first imports the packages it depends on (the lock's dependency edges);
  their extension modules and everything those need are then loaded, found by SONAME;
- a package's loader code may dlopen libraries itself first (`knowledge/loaders.yaml`):
  `global` ones (RTLD_GLOBAL, e.g. torch's libtorch_global_deps) join the global scope;
- each DT_NEEDED resolves: already loaded (by SONAME) > DT_RPATH (when no DT_RUNPATH) >
  DT_RUNPATH, both with $ORIGIN > the system manifest (base image, driver libraries);
- each non-weak undefined symbol must be defined in the global scope (python + RTLD_GLOBAL
  objects) or the object's own dependency tree (RTLD_LOCAL), with a version the provider defines.
"""

from __future__ import annotations

import posixpath
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Literal

from packaging.utils import canonicalize_name
from pydantic import Field

from envbuilder.abi.demangle import demangle
from envbuilder.abi.facets import GpuArch, coverage
from envbuilder.abi.linkage import ElfLinkage, WheelLinkage, symbol_digest, unpack_digests
from envbuilder.abi.loaders import Loader, loader_for
from envbuilder.abi.symbols import mangled_namespace
from envbuilder.abi.systems import SystemManifest
from envbuilder.model import StrictModel

Kind = Literal["missing-library", "undefined-symbol", "symbol-version", "no-binary-evidence", "arch-coverage"]
PYTHON_PREFIXES = ("Py", "_Py")
SYSTEM_NAMESPACES = frozenset({"std", "__gnu_cxx", "__cxxabiv1", None})


class LinkFinding(StrictModel):
    kind: Kind
    package: str
    version: str
    severity: Literal["error", "warning"] = "error"
    file: str | None = None
    library: str | None = None
    needed_by: str | None = None  # missing-library: the object whose DT_NEEDED names it (== file: directly)
    symbol: str | None = None
    demangled: str | None = None
    symbol_version: str | None = None
    provider: str | None = None
    provider_version: str | None = None
    message: str

    def __str__(self) -> str:
        return self.message


class PackageLink(StrictModel):
    version: str
    links: bool
    elf_count: int
    evidence: Literal["binary", "none"]


class LinkReport(StrictModel):
    system: str
    findings: list[LinkFinding] = Field(default_factory=list)
    packages: dict[str, PackageLink] = Field(default_factory=dict)
    bytes_fetched: int = 0
    seconds: float = 0.0

    def for_package(self, name: str) -> list[LinkFinding]:
        key = canonicalize_name(name)
        return [f for f in self.findings if canonicalize_name(f.package) == key]

    def links(self, name: str) -> bool:
        return self.packages[canonicalize_name(name)].links

    @property
    def errors(self) -> list[LinkFinding]:
        return [f for f in self.findings if f.kind != "no-binary-evidence" and f.severity == "error"]


@dataclass
class LinkPackage:
    """One package of the closure: its summary (None: not read) and the packages it imports first."""

    name: str
    version: str
    depends: tuple[str, ...] = ()
    linkage: WheelLinkage | None = None


@dataclass(frozen=True)
class _Obj:
    """A loadable object: a wheel ELF at its path, or a system library (opaque unless it has digests)."""

    path: str
    package: str | None
    elf: ElfLinkage | None = None
    system: str | None = None  # soname of a system library

    @property
    def soname(self) -> str:
        if self.elf is not None:
            return self.elf.soname or posixpath.basename(self.path)
        return self.system or ""


@dataclass
class _Load:
    """What resolving one object's dependency tree produced."""

    tree: list[_Obj] = field(default_factory=list)
    missing: list[tuple[str, str]] = field(default_factory=list)  # (needed by path, library)


class Linker:
    """The closure placed at its install paths, linked package by package in import order."""

    def __init__(self, packages: Iterable[LinkPackage], system: SystemManifest):
        self.system = system
        self.packages = {canonicalize_name(p.name): p for p in packages}
        self.by_path: dict[str, _Obj] = {}
        for package in self.packages.values():
            for elf in package.linkage.elfs if package.linkage else ():
                self.by_path.setdefault(elf.path, _Obj(elf.path, canonicalize_name(package.name), elf))
        self._imported: dict[str, tuple[dict[str, _Obj], list[_Obj]]] = {}
        self._sys_digests: dict[str, frozenset[int]] = {}

    # ------------------------------------------------------------------ loading

    def _system(self, soname: str) -> _Obj | None:
        return _Obj(f"<system>/{soname}", None, system=soname) if self.system.has(soname) else None

    def _search(self, obj: _Obj, needed: str, loaded: dict[str, _Obj]) -> _Obj | None:
        if needed in loaded:
            return loaded[needed]
        if "/" in needed:
            return self.by_path.get(posixpath.normpath(posixpath.join(posixpath.dirname(obj.path), needed)))
        elf = obj.elf
        dirs: tuple[str, ...] = ()
        if elf is not None:
            dirs = elf.runpath if elf.runpath else elf.rpath
        for entry in dirs:
            if "$ORIGIN" not in entry and "${ORIGIN}" not in entry:
                continue  # an absolute build-machine path: not in the target image
            base = entry.replace("${ORIGIN}", "$ORIGIN").replace("$ORIGIN", posixpath.dirname(obj.path))
            found = self.by_path.get(posixpath.normpath(posixpath.join(base, needed)))
            if found is not None:
                return found
        return self._system(needed)

    def _load(self, root: _Obj, loaded: dict[str, _Obj]) -> _Load:
        """Breadth-first dependency tree of `root`, adding what it loads to `loaded` (by SONAME)."""
        out = _Load()
        seen = {root.path}
        queue = deque([root])
        out.tree.append(root)
        loaded.setdefault(root.soname, root)
        while queue:
            obj = queue.popleft()
            for needed in obj.elf.needed if obj.elf else ():
                dep = self._search(obj, needed, loaded)
                if dep is None:
                    out.missing.append((obj.path, needed))
                    continue
                loaded.setdefault(needed, dep)
                loaded.setdefault(dep.soname, dep)
                if dep.path not in seen:
                    seen.add(dep.path)
                    out.tree.append(dep)
                    queue.append(dep)
        return out

    def imported(self, name: str, stack: tuple[str, ...] = ()) -> tuple[dict[str, _Obj], list[_Obj]]:
        """(loaded by SONAME, global scope) after `import name`: its dependencies first, then itself."""
        key = canonicalize_name(name)
        if key in self._imported:
            return self._imported[key]
        loaded: dict[str, _Obj] = {}
        global_scope: list[_Obj] = []
        package = self.packages.get(key)
        if package is None or key in stack:
            return loaded, global_scope
        for dep in self._depends(package):
            dep_loaded, dep_global = self.imported(dep, (*stack, key))
            for soname, obj in dep_loaded.items():
                loaded.setdefault(soname, obj)
            global_scope += [o for o in dep_global if o not in global_scope]
        loader = loader_for(self.system_loaders, package.name, package.version)
        for path in loader.global_ if loader else ():
            obj = self.by_path.get(path)
            if obj is not None:
                global_scope += [o for o in self._load(obj, loaded).tree if o not in global_scope]
        for path in loader.preloaded(self.by_path) if loader else ():
            self._load(self.by_path[path], loaded)
        for obj in self._roots(package, loader):
            self._load(obj, loaded)
        self._imported[key] = (loaded, global_scope)
        return loaded, global_scope

    system_loaders: tuple[Loader, ...] = ()
    every_elf = False  # check every SONAME-less ELF too (a harness that dlopens each module file)

    def _roots(self, package: LinkPackage, loader: Loader | None) -> list[_Obj]:
        """What importing the package opens by path: extension modules and the loader's `modules`."""
        roots = [self.by_path[p] for p in (loader.modules if loader else ()) if p in self.by_path]
        for elf in package.linkage.elfs if package.linkage else ():
            obj = self.by_path[elf.path]
            if obj not in roots and (elf.python_module is not None or (self.every_elf and elf.soname is None)):
                roots.append(obj)
        return roots

    # ------------------------------------------------------------------ checking

    def check_package(self, name: str) -> list[LinkFinding]:
        """Findings for every ELF of one package, loaded after its dependencies were imported."""
        package = self.packages[canonicalize_name(name)]
        if package.linkage is None:
            return []
        if not package.linkage.elfs:
            return [LinkFinding(kind="no-binary-evidence", package=package.name, version=package.version,
                                message=f"{package.name} {package.version}: no ELF in the wheel, nothing to link "
                                        "(no binary evidence: code it compiles or downloads at run time is unchecked)")]
        findings: list[LinkFinding] = []
        deps_loaded: dict[str, _Obj] = {}
        global_scope: list[_Obj] = []
        for dep in self._depends(package):
            dep_loaded, dep_global = self.imported(dep, (canonicalize_name(name),))
            for soname, obj in dep_loaded.items():
                deps_loaded.setdefault(soname, obj)
            global_scope += [o for o in dep_global if o not in global_scope]
        loader = loader_for(self.system_loaders, package.name, package.version)
        own_loaded = dict(deps_loaded)
        for path in loader.preloaded(self.by_path) if loader else ():
            self._load(self.by_path[path], own_loaded)
        roots = [self.by_path[p] for p in (loader.global_ if loader else ()) if p in self.by_path]
        roots += self._roots(package, loader)
        checked: set[str] = set()
        key = canonicalize_name(package.name)
        per_root: list[list[LinkFinding]] = []
        for root in roots:
            if root.package != key:
                continue  # two packages install the same path; the first one checked owns it
            load = self._load(root, own_loaded if root.elf and not root.elf.python_module else dict(own_loaded))
            found = self._missing(package, root.elf, load)
            if not load.missing:  # the loader stops at the first missing library, before any symbol
                for obj in load.tree:
                    if obj.elf is None or obj.package != key or obj.path in checked:
                        continue
                    checked.add(obj.path)
                    found += self._symbols(package, obj.elf, [*global_scope, *load.tree])
            per_root.append(found)
        if loader is not None and loader.alternatives:
            if any(not f for f in per_root):
                return findings  # one alternative links: the package picks it at import
            # none links: the package imports but its backend cannot load (e.g. no FFmpeg in the image)
            return findings + [f.model_copy(update={"severity": "warning", "message": f"{f.message} "
                                                    "(and no alternative build of it links either)"})
                               for f in (per_root[-1] if per_root else [])]
        return findings + [f for found in per_root for f in found]

    def _depends(self, package: LinkPackage) -> tuple[str, ...]:
        loader = loader_for(self.system_loaders, package.name, package.version)
        extra = tuple(canonicalize_name(n) for n in (loader.imports if loader else ()))
        return tuple(dict.fromkeys((*package.depends, *(e for e in extra if e in self.packages))))

    def _missing(self, package: LinkPackage, elf: ElfLinkage, load: _Load) -> list[LinkFinding]:
        out = []
        for needed_by, library in load.missing:
            via = "" if needed_by == elf.path else f" (needed by {needed_by})"
            shipper = self._shipper(library)
            out.append(LinkFinding(
                kind="missing-library", package=package.name, version=package.version, file=elf.path,
                library=library, needed_by=needed_by, provider=shipper.name if shipper else None,
                provider_version=shipper.version if shipper else None,
                message=f"{elf.path} ({package.name} {package.version}) needs {library}{via}: no package in the "
                        f"closure installs it where the loader looks, nothing loaded it first, and the "
                        f"{self.system.id} base image does not have it{self._shipped_hint(library)}"))
        return out

    def _shipper(self, library: str) -> LinkPackage | None:
        """The package that ships another build of this library (libcudart.so.13 for .so.12)."""
        stem = library.split(".so")[0]
        owners = sorted({o.package for o in self.by_path.values() if o.package
                         and posixpath.basename(o.path).split(".so")[0] == stem})
        return self.packages.get(owners[0]) if owners else None

    def _shipped_hint(self, library: str) -> str:
        stem = library.split(".so")[0]
        others = sorted({f"{posixpath.basename(o.path)} ({self._label(o.package)})" for o in self.by_path.values()
                         if posixpath.basename(o.path).split(".so")[0] == stem})
        return f"; the closure has {', '.join(others)}" if others else ""

    def _label(self, package: str | None) -> str:
        p = self.packages.get(package or "")
        return f"{p.name} {p.version}" if p else "system"

    def _symbols(self, package: LinkPackage, elf: ElfLinkage, scope: list[_Obj]) -> list[LinkFinding]:
        out = []
        tree_by_soname: dict[str, _Obj] = {}
        for obj in scope:
            tree_by_soname.setdefault(obj.soname, obj)
            if obj.elf is not None:
                tree_by_soname.setdefault(posixpath.basename(obj.path), obj)
        opaque = any(o.elf is None and (o.system in self.system.driver
                                         or not self.system.libraries[o.system or ""].defined) for o in scope)
        for imp in elf.imported:
            if imp.version and imp.file:
                owner = tree_by_soname.get(imp.file)
                if owner is not None and not self._has_version(owner, imp.version):
                    out.append(self._finding("symbol-version", package, elf, imp, owner))
                    continue
            if imp.name.startswith(PYTHON_PREFIXES):
                continue
            plain = symbol_digest(imp.name)
            exact = symbol_digest(f"{imp.name}@{imp.version}") if imp.version else plain
            if any(self._defines(o, plain, exact, imp.version, imp.file) for o in scope):
                continue
            if imp.version is None and opaque and _system_like(imp.name):
                continue  # a system library without a symbol list (libc's dlclose, the driver) may define it
            out.append(self._finding("undefined-symbol", package, elf, imp, self._expected_provider(elf, scope)))
        return out

    def _has_version(self, obj: _Obj, version: str) -> bool:
        if obj.elf is not None:
            return version in obj.elf.version_defs
        return self.system.provides_version(obj.system or "", version)

    def _defines(self, obj: _Obj, plain: int, exact: int, version: str | None, file: str | None) -> bool:
        """Does `obj` define the import (digests of `name` and `name@version`) in a way ld.so binds?"""
        if obj.elf is not None:
            digests = obj.elf.defined_digests
            return exact in digests or (version is not None and not obj.elf.version_defs and plain in digests)
        library = self.system.libraries.get(obj.system or "")
        if library is not None and library.defined:  # generated from the image: every symbol is known
            return (exact if version is not None else plain) in self._system_digests(obj.system or "")
        if version is None:
            return False
        return (file is None or file == obj.system) and self.system.provides_version(obj.system or "", version)

    def _system_digests(self, soname: str) -> frozenset[int]:
        if soname not in self._sys_digests:
            self._sys_digests[soname] = unpack_digests(self.system.libraries[soname].defined or "")
        return self._sys_digests[soname]

    def _expected_provider(self, elf: ElfLinkage, scope: list[_Obj]) -> _Obj | None:
        """The package the symbol was meant to come from: the first other package's direct dependency."""
        direct = set(elf.needed)
        candidates = [o for o in scope if o.package and o.elf is not None and o.soname in direct
                      and o.path != elf.path]
        if not candidates:
            return None
        # the package the file links most libraries of (torch's six, not the CUDA runtime's one)
        counts: dict[str, int] = {}
        for o in candidates:
            counts[o.package or ""] = counts.get(o.package or "", 0) + 1
        best = max(counts, key=lambda p: (counts[p], -[o.package for o in candidates].index(p)))
        return next(o for o in candidates if o.package == best)

    def _finding(self, kind: Kind, package: LinkPackage, elf: ElfLinkage, imp, owner: _Obj | None) -> LinkFinding:
        provider = self.packages.get(owner.package) if owner is not None and owner.package else None
        where = (f"{provider.name} {provider.version}" if provider
                 else f"the {self.system.id} system" if owner is not None else "anything loaded")
        readable = demangle(imp.name)
        if kind == "symbol-version":
            message = (f"{elf.path} ({package.name} {package.version}) needs version {imp.version} of "
                       f"{imp.file} for {readable}; {where} does not define it")
        else:
            versioned = f"@{imp.version}" if imp.version else ""
            message = (f"{elf.path} ({package.name} {package.version}) needs {readable}{versioned} "
                       f"[{imp.name}], which {where} does not export")
        return LinkFinding(kind=kind, package=package.name, version=package.version, file=elf.path,
                           library=imp.file, symbol=imp.name, demangled=readable if readable != imp.name else None,
                           symbol_version=imp.version,
                           provider=provider.name if provider else (self.system.id if owner is not None else None),
                           provider_version=provider.version if provider else None, message=message)


def _system_like(name: str) -> bool:
    """Could a base-image library define this name? C names and the C++ runtime's own, not c10::/at::."""
    if not name.startswith("_Z"):
        return True
    return mangled_namespace(name) in SYSTEM_NAMESPACES


def arch_findings(package: LinkPackage, target_arch: str) -> list[LinkFinding]:
    """Every CUDA binary of the package, checked for the target arch with the one coverage rule.

    Warnings: a package may ship per-arch modules it picks at run time (sgl-kernel's Hopper-only
    flash_ops beside its sm_120a kernels); the per-wheel rule in `abi.rules` decides errors."""
    device = GpuArch.parse(target_arch)
    out = []
    for elf in package.linkage.elfs if package.linkage else ():
        if not (elf.sass or elf.ptx):
            continue
        if not coverage(elf.sass, elf.ptx, device).covered:
            have = ", ".join((*elf.sass, *elf.ptx))
            out.append(LinkFinding(kind="arch-coverage", package=package.name, version=package.version,
                                   severity="warning", file=elf.path, message=f"{elf.path} ({package.name} {package.version}) has no "
                                   f"SASS or PTX that runs on {device.sass} (has {have})"))
    return out


def link(packages: list[LinkPackage], system: SystemManifest, loaders: tuple[Loader, ...],
         target_arch: str | None = None, only: Iterable[str] | None = None, every_elf: bool = False) -> LinkReport:
    """Link every package (or those in `only`) of the closure; a package without a summary is skipped."""
    started = time.perf_counter()
    linker = Linker(packages, system)
    linker.system_loaders = loaders
    linker.every_elf = every_elf
    findings_all: list[LinkFinding] = []
    verdicts: dict[str, PackageLink] = {}
    wanted = {canonicalize_name(n) for n in only} if only is not None else None
    for package in sorted(linker.packages.values(), key=lambda p: canonicalize_name(p.name)):
        key = canonicalize_name(package.name)
        if package.linkage is None or (wanted is not None and key not in wanted):
            continue
        findings = linker.check_package(package.name)
        if target_arch:
            findings += arch_findings(package, target_arch)
        findings_all += findings
        verdicts[key] = PackageLink(
            version=package.version,
            links=not any(f.kind != "no-binary-evidence" and f.severity == "error" for f in findings),
            elf_count=len(package.linkage.elfs), evidence="binary" if package.linkage.elfs else "none")
    return LinkReport(system=system.id, findings=findings_all, packages=verdicts,
                      seconds=time.perf_counter() - started)
