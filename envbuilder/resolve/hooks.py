"""The seam where ABI facets veto candidates; `envbuilder.abi.hook.AbiHook` fills it in.

The resolver only needs these four questions answered, so it never learns what a facet is.
"""

from __future__ import annotations

from typing import Any, Protocol

from envbuilder.lock.model import Facets, Lock


class ResolverHook(Protocol):
    def admissible(self, name: str, version: str, filename: str | None) -> str | None: ...

    def extra_requirements(self, name: str, version: str, filename: str | None) -> list[tuple[str, str]]: ...

    def facets(self, name: str, version: str, filename: str | None, build_env: dict[str, str] | None, *,
               build_requires: tuple[str, ...] = (), build_cuda: str | None = None,
               sha256: str | None = None) -> Facets | None: ...

    def check(self, lock: Lock) -> list[Any]: ...


class NullHook:
    """Used only when no ABI knowledge applies (tests of the bare resolver)."""

    def admissible(self, name: str, version: str, filename: str | None) -> str | None:
        return None

    def extra_requirements(self, name: str, version: str, filename: str | None) -> list[tuple[str, str]]:
        return []

    def facets(self, name: str, version: str, filename: str | None, build_env: dict[str, str] | None, *,
               build_requires: tuple[str, ...] = (), build_cuda: str | None = None,
               sha256: str | None = None) -> Facets | None:
        return None

    def check(self, lock: Lock) -> list[Any]:
        return []


def default_hook(target: Any, knowledge: Any) -> ResolverHook:
    try:
        from envbuilder.abi.hook import AbiHook
    except ImportError:
        return NullHook()
    return AbiHook(target, knowledge)
