"""The resolvelib provider: a thin adapter over the Factory."""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Mapping, Sequence

from resolvelib import AbstractProvider

from envbuilder.resolve.candidates import Candidate
from envbuilder.resolve.factory import Factory
from envbuilder.resolve.requirements import Req


class Provider(AbstractProvider):
    def __init__(self, factory: Factory):
        self.factory = factory

    def identify(self, requirement_or_candidate: Req | Candidate) -> str:
        return requirement_or_candidate.key

    def get_preference(self, identifier: str, resolutions: Mapping[str, Candidate],
                       candidates: Mapping[str, Iterator[Candidate]],
                       information: Mapping[str, Iterator[Any]], backtrack_causes: Sequence[Any]) -> Any:
        """Pins and the matrix's own packages first, then what caused backtracking, then by name."""
        infos = list(information[identifier])
        pinned = any(info.requirement.pinned() for info in infos)
        caused = any(cause.requirement.key == identifier for cause in backtrack_causes)
        return (not pinned, not self.factory.is_direct(identifier), not caused, identifier)

    def find_matches(self, identifier: str, requirements: Mapping[str, Iterator[Req]],
                     incompatibilities: Mapping[str, Iterator[Candidate]]) -> Iterable[Candidate]:
        incompatible = {id(c) for c in incompatibilities[identifier]}
        return self.factory.find(identifier, list(requirements[identifier]), incompatible)  # lazy

    def is_satisfied_by(self, requirement: Req, candidate: Candidate) -> bool:
        return requirement.specifier.contains(candidate.version, prereleases=True)

    def get_dependencies(self, candidate: Candidate) -> list[Req]:
        return self.factory.dependencies(candidate)
