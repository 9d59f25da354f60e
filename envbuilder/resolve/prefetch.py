"""Fans index lookups out ahead of resolvelib, which asks for one thing at a time.

When a project is first named, its page is requested; as the page lands, the metadata of the
version the resolver will most likely pick (newest matching, best wheel for the target) is
requested; as that lands, its dependencies are named in turn. The whole likely closure is
fetched in parallel waves, so resolvelib finds almost everything already in memory. A wrong
guess costs one wasted request, never a wrong answer: the resolver still asks for what it needs.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import Future

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from envbuilder.index.client import IndexClient
from envbuilder.index.models import CoreMetadata, FileInfo
from envbuilder.matrix import Target
from envbuilder.resolve.environment import TargetEnvironment


class PrefetchingFinder:
    def __init__(self, client: IndexClient, target: Target):
        self.client = client
        self.env = TargetEnvironment(target.platform)
        self.specs = {canonicalize_name(n): s for n, s in target.packages.items()}
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def files(self, project: str, index: str = "pypi") -> list[FileInfo]:
        return self.client.files(project, index)

    def metadata(self, file: FileInfo) -> CoreMetadata:
        return self.client.metadata(file)

    def prefetch(self, wanted: list[tuple[str, str, str]]) -> None:
        for project, index, specifier in wanted:
            with self._lock:
                if project in self._seen:
                    continue
                self._seen.add(project)
            future = self.client.files_async(project, index)
            future.add_done_callback(lambda f, s=specifier: self._metadata_for(f, s))

    def _metadata_for(self, future: Future, specifier: str) -> None:
        with contextlib.suppress(Exception):  # a prefetch only warms caches; the resolver reports errors
            best = self._likely_pick(future.result(), SpecifierSet(specifier))
            if best is not None:
                self.client.metadata_async(best).add_done_callback(self._dependencies_of)

    def _dependencies_of(self, future: Future) -> None:
        with contextlib.suppress(Exception):
            wanted = []
            for text in future.result().requires_dist:
                req = Requirement(text)
                if self.env.evaluate(req.marker):
                    wanted.append(self._ask(canonicalize_name(req.name), str(req.specifier)))
            self.prefetch(wanted)

    def _ask(self, name: str, specifier: str) -> tuple[str, str, str]:
        """A dependency as the resolver will see it: the matrix's index, and its override if any."""
        spec = self.specs.get(name)
        if spec is None:
            return name, "pypi", specifier
        return name, spec.index or "pypi", spec.version if spec.override else specifier

    def _likely_pick(self, files: list[FileInfo], specifier: SpecifierSet) -> FileInfo | None:
        wheels = [(f.version, -rank, f) for f in files
                  if f.valid and f.kind == "wheel" and not f.is_yanked and specifier.contains(f.version)
                  and (rank := self.env.wheel_rank(f.tags)) is not None]
        return max(wheels, key=lambda t: t[:2])[2] if wheels else None
