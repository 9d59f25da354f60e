"""A source build's environment and its CUDA checks, from data: the lock and the knowledge base.

No package name appears here. What a build compiles against is its lock entry's `build.requires`
(the ABI providers the resolver found, torch for flash-attn); its CUDA and C++11 ABI are those
providers' locked facets. Which variables a package reads (forced knobs, the arch list, the ABI
flag) is a knowledge fact (`binaries.yaml`: `arch_env`, `build_env`), which a matrix may add to.
Pure: the same lock and knowledge give the same env anywhere.
"""

from __future__ import annotations

from packaging.utils import canonicalize_name

from envbuilder.errors import BadInput
from envbuilder.knowledge import BinaryFact, Knowledge
from envbuilder.lock.model import Lock, LockedPackage


def abi_providers(lock: Lock, pkg: LockedPackage) -> tuple[LockedPackage, ...]:
    """The locked packages a source build compiles against (its `build.requires` pins)."""
    pins = pkg.build.requires if pkg.build is not None else ()
    found = (lock.package(pin.partition("==")[0]) for pin in pins)
    return tuple(p for p in found if p is not None)


def cuda_providers(lock: Lock, knowledge: Knowledge) -> tuple[LockedPackage, ...]:
    """Every package whose CUDA a build or a run-time JIT compiles against: each source build's
    providers, plus the knowledge's ABI provider when the lock has it (a stack without source
    builds still JIT-compiles against it, e.g. FlashInfer against torch)."""
    found = {canonicalize_name(p.name): p for b in lock.packages if b.build is not None
             for p in abi_providers(lock, b)}
    provider = lock.package(knowledge.abi_provider.package)
    if provider is not None:
        found.setdefault(canonicalize_name(provider.name), provider)
    return tuple(found[name] for name in sorted(found))


def check_cuda_major(lock: Lock, cuda: str, providers: tuple[LockedPackage, ...]) -> None:
    """Refuse a toolkit whose major differs from a provider's CUDA: torch's cpp_extension raises on
    it, and a build that got past it would load two CUDA runtimes."""
    for provider in providers:
        built = provider.facets.cuda if provider.facets else None
        if built and built.split(".")[0] != cuda.split(".")[0]:
            raise BadInput(
                f"lock {lock.target}: key 'toolchain.cuda' is {cuda} but {provider.name} {provider.version} was "
                f"built for CUDA {built}: extension builds against it need the same CUDA major (torch's "
                f"cpp_extension raises on a mismatch); set toolchain.cuda to {built} in the matrix and re-lock")


def _cxx11_abi(providers: tuple[LockedPackage, ...]) -> bool | None:
    """The C++11 ABI flag of the first provider whose facets say."""
    return next((p.facets.cxx11_abi for p in providers if p.facets and p.facets.cxx11_abi is not None), None)


def _arch_number(arch: str) -> str:
    """sm_120 -> '120', sm_90a -> '90': flash-attn's list names SASS families by number."""
    return arch.removeprefix("sm_").rstrip("af")


def dotted_arch(arch: str) -> str:
    """sm_120 -> '12.0', sm_90a -> '9.0a': the dotted spelling of TORCH_CUDA_ARCH_LIST."""
    digits = arch.removeprefix("sm_")
    suffix = digits[-1] if digits[-1] in "af" else ""
    digits = digits.rstrip("af")
    return f"{digits[:-1]}.{digits[-1]}{suffix}"


def spelled_arch(fact: BinaryFact, arch: str) -> str:
    """The target arch as the fact's `arch_env` variable writes it."""
    spelling = fact.build_env.arch_spelling if fact.build_env else "number"
    return dotted_arch(arch) if spelling == "dotted" else _arch_number(arch)


def _cuda_env(fact: BinaryFact | None, cuda_home: str, arch: str | None, cxx11: bool | None) -> dict[str, str]:
    env = {"CUDA_HOME": cuda_home, "NVCC_THREADS": "4"}
    if arch:
        env["TORCH_CUDA_ARCH_LIST"] = dotted_arch(arch)
        if fact is not None and fact.arch_env:
            env[fact.arch_env] = spelled_arch(fact, arch)
    if cxx11 and fact is not None and fact.build_env and fact.build_env.cxx11_abi:
        env[fact.build_env.cxx11_abi] = "TRUE"
    return env


def build_env(lock: Lock, pkg: LockedPackage, fact: BinaryFact | None, cuda: str | None,
              arch: str | None) -> dict[str, str]:
    """Derived knobs first, the lock's recipe env over them, forced knobs last (they are the gotchas)."""
    env: dict[str, str] = {}
    recipe = pkg.build
    if cuda and recipe is not None and recipe.cuda:
        env.update(_cuda_env(fact, f"/usr/local/cuda-{cuda}", arch, _cxx11_abi(abi_providers(lock, pkg))))
    env.update(recipe.env if recipe else {})
    env.update(fact.build_env.forced if fact is not None and fact.build_env else {})
    return env


def arch_note(pkg: LockedPackage, fact: BinaryFact | None, env: dict[str, str], arch: str | None) -> list[str]:
    """A note when the matrix narrowed the package's arch list past the target's own arch."""
    var = fact.arch_env if fact is not None else None
    if not (var and arch and var in env):
        return []
    wanted = spelled_arch(fact, arch)
    if wanted not in env[var].replace(",", ";").split(";"):
        return [f"{pkg.name}: {var}={env[var]} does not include the target arch {arch} ({wanted})"]
    return []
