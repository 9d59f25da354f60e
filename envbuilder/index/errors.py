"""Index-specific refinements of envbuilder's error classes (the CLI maps them by base class)."""

from __future__ import annotations

from collections.abc import Iterable

from envbuilder.errors import BadInput, Unreachable

RECOVERY_HINT = (
    "check your network and proxy settings (HTTPS_PROXY), the index URL (PIP_INDEX_URL, "
    "UV_DEFAULT_INDEX or pip's config `index-url`), or run with --offline to use only the cache"
)


class MissingFromCache(Unreachable):
    """Offline mode needed something the cache does not hold; `missing` names each item."""

    def __init__(self, missing: Iterable[str]):
        self.missing = tuple(sorted(set(missing)))
        lines = "\n".join(f"  - {item}" for item in self.missing)
        super().__init__(
            f"offline: {len(self.missing)} item(s) are not in the cache:\n{lines}\n"
            "run once without --offline (with network access to the index) to fill the cache"
        )

    @classmethod
    def combine(cls, errors: Iterable[MissingFromCache]) -> MissingFromCache:
        """One error listing everything several failed lookups were missing."""
        return cls(item for err in errors for item in err.missing)


class HashMismatch(Unreachable):
    """The index served bytes whose sha256 differs from the hash it published."""


class DynamicMetadata(BadInput):
    """An sdist whose dependencies are only known by building it."""


class RangeNotSupported(Exception):
    """The server ignored a Range header; callers fall back to a full download."""
