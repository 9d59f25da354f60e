"""Fans index lookups out ahead of resolvelib, which asks for one thing at a time.

When a candidate's dependencies become known, every dependency's project page is requested at
once, and as each page lands, the metadata of the version the resolver will most likely pick
(newest matching, best wheel for the target) is requested too. resolvelib then finds almost
everything already in memory: ~170 projects cost about two network round trips of wall time.
"""

from __future__ import annotations

import contextlib
from concurrent.futures import Future

from packaging.specifiers import SpecifierSet

from envbuilder.index.client import IndexClient
from envbuilder.index.models import CoreMetadata, FileInfo
from envbuilder.resolve.environment import TargetEnvironment


class PrefetchingFinder:
    def __init__(self, client: IndexClient, env: TargetEnvironment):
        self.client = client
        self.env = env
        self._seen: set[tuple[str, str]] = set()

    def files(self, project: str, index: str = "pypi") -> list[FileInfo]:
        return self.client.files(project, index)

    def metadata(self, file: FileInfo) -> CoreMetadata:
        return self.client.metadata(file)

    def prefetch(self, wanted: list[tuple[str, str, str]]) -> None:
        for project, index, specifier in wanted:
            if (project, index) in self._seen:
                continue
            self._seen.add((project, index))
            future = self.client.files_async(project, index)
            future.add_done_callback(lambda f, s=specifier: self._metadata_for(f, s))

    def _metadata_for(self, future: Future, specifier: str) -> None:
        with contextlib.suppress(Exception):  # a prefetch only warms caches; the resolver reports errors
            best = self._likely_pick(future.result(), SpecifierSet(specifier))
            if best is not None:
                self.client.metadata_async(best)

    def _likely_pick(self, files: list[FileInfo], specifier: SpecifierSet) -> FileInfo | None:
        wheels = [(f.version, -rank, f) for f in files
                  if f.valid and f.kind == "wheel" and not f.is_yanked and specifier.contains(f.version)
                  and (rank := self.env.wheel_rank(f.tags)) is not None]
        return max(wheels, key=lambda t: t[:2])[2] if wheels else None


