"""Where each locked file can be downloaded, asked of the user's index at export time.

The committed lock names indexes and files by content hash only, so it installs from any mirror.
pylock and conda-lock need URLs, so the export asks the index the user configured *now* for each
project's files and matches them by filename and sha256: the URL lands in the exported file only,
and a file whose bytes changed on the index is an error, never a silent substitute.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from envbuilder.errors import BadInput, CheckFailed
from envbuilder.index.http import redact, strip_credentials
from envbuilder.export.selection import Entry, Selection
from envbuilder.lock.model import Artifact


class IndexFile(Protocol):
    filename: str
    url: str
    sha256: str | None


class FileLister(Protocol):
    """What the export needs of an index client (envbuilder.index.IndexClient has it)."""

    def files(self, project: str, index: str = "pypi") -> Sequence[IndexFile]: ...

    def index_url(self, index: str) -> str: ...


@dataclass(frozen=True)
class Located:
    index_url: str
    urls: Mapping[str, str]  # artifact sha256 -> URL

    def url(self, artifact: Artifact) -> str:
        return self.urls[artifact.sha256]


def _match(entry: Entry, files: Sequence[IndexFile], index_name: str, index_url: str) -> dict[str, str]:
    by_name = {f.filename: f for f in files}
    urls = {}
    for artifact in entry.artifacts:
        found = by_name.get(artifact.filename)
        if found is None:
            raise CheckFailed(f"index {index_name!r} ({redact(index_url)}) does not serve {artifact.filename} "
                              f"for {entry.pin}: export from the index the lock was made with, or re-lock")
        if found.sha256 and found.sha256.lower() != artifact.sha256.lower():
            raise CheckFailed(f"index {index_name!r} ({redact(index_url)}) serves {artifact.filename} with sha256 "
                              f"{found.sha256}, but the lock has {artifact.sha256}: the file changed on the "
                              "index; re-lock and review the change")
        urls[artifact.sha256] = strip_credentials(found.url)
    return urls


def locate(selection: Selection, client: FileLister, workers: int = 16) -> dict[str, Located]:
    """Map every index-sourced entry (by name) to its download URLs.

    Projects are asked in parallel: a 170-package closure is 170 page requests.
    """
    wanted = [e for e in selection.entries if not e.is_git]
    for entry in wanted:
        _index_url(selection, entry, client)  # unknown index names fail before any request

    def one(entry: Entry) -> tuple[str, Located]:
        name, url = _index_url(selection, entry, client)
        files = client.files(entry.name, name)
        # written into the export: never with credentials (installers bring their own: netrc, keyring)
        return entry.name, Located(strip_credentials(url), _match(entry, files, name, url))

    if not wanted:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(wanted)))) as pool:
        return dict(pool.map(one, wanted))


def _index_url(selection: Selection, entry: Entry, client: FileLister) -> tuple[str, str]:
    name = entry.package.source.index or "pypi"
    try:
        return name, client.index_url(name)
    except BadInput:
        raise BadInput(f"lock for {selection.lock.target!r}: package {entry.name!r}: key 'source.index': "
                       f"index {name!r} has no URL here (define it in the matrix's `indexes:`)") from None
