"""What the resolver is asked for: a name, a specifier, extras, and why it was asked.

`why` travels with every requirement so that a conflict can be told in words ("sgl-kernel
0.3.21 was built against torch 2.9") rather than as a bare specifier.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name


def identifier(name: str, extras: frozenset[str]) -> str:
    return f"{name}[{','.join(sorted(extras))}]" if extras else name


@dataclass(frozen=True)
class Req:
    name: NormalizedName
    specifier: SpecifierSet
    extras: frozenset[str] = frozenset()
    why: str = ""
    overridden_from: str | None = None  # the dependent's own specifier an override replaced

    @property
    def key(self) -> str:
        return identifier(self.name, self.extras)

    @classmethod
    def parse(cls, text: str, why: str = "") -> "Req":
        req = Requirement(text)
        return cls(canonicalize_name(req.name), req.specifier, frozenset(map(canonicalize_name, req.extras)), why)

    def __str__(self) -> str:
        return f"{self.key}{self.specifier}" if str(self.specifier) else self.key

    def pinned(self) -> bool:
        return any(s.operator in ("==", "===") and "*" not in s.version for s in self.specifier)
