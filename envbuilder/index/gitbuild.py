"""A git commit's metadata built by its own backend, at that commit, cached by URL + commit + subdirectory.

Used when the commit's tree has no static answer (setup.py / setup.cfg, dynamic dependencies, or a
version computed by setuptools-scm, hatch-vcs or a version file): the tree is checked out from the
cached partial clone (envbuilder.index.gitcheckout) and the backend route runs on it
(envbuilder.index.backend), as for an sdist. The answer is stored in the metadata cache, so a
second lock (or `--offline`) neither checks out nor builds. The key carries the URL as well as the
commit: the version a backend derives from tags depends on the repository's tags, not only on the
commit's content.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
from contextlib import closing
from pathlib import Path

from envbuilder.index.backend import BUILD_PYTHON, backend_metadata, check_described, hashed_installer
from envbuilder.index.git import GitSources
from envbuilder.index.gitcheckout import checkout
from envbuilder.index.sourcemeta import SourceMetadata


def cache_key(url: str, commit: str, subdirectory: str | None) -> str:
    """The metadata-cache key of a commit's built metadata."""
    text = f"git-backend-metadata-v1\0{url}\0{commit}\0{(subdirectory or '').strip('/')}"
    return hashlib.sha256(text.encode()).hexdigest()


def git_backend_metadata(sources: GitSources, project: str, url: str, commit: str, subdirectory: str | None,
                         index_url: str | None) -> SourceMetadata:
    """METADATA of `project` as its backend prepares it at `commit` (cached)."""
    key = cache_key(url, commit, subdirectory)
    cached = _cached(sources, key)
    if cached is not None:
        return cached
    where = f"{url} at {commit}" + (f" (subdirectory {subdirectory})" if subdirectory else "")
    with tempfile.TemporaryDirectory(prefix="envbuilder-git-") as tmp:
        with checkout(sources, url, commit, subdirectory, Path(tmp) / "tree") as source:
            with closing(hashed_installer(index_url, where, sources.cache, sources.offline)) as installer:
                text = backend_metadata(source, where, index_url, installer=installer)
    check_described(text, project, where)
    found = SourceMetadata(text, "backend", BUILD_PYTHON)
    sources.cache.write_metadata(key, json.dumps(dataclasses.asdict(found)).encode(), "git-backend")
    return found


def _cached(sources: GitSources, key: str) -> SourceMetadata | None:
    raw = sources.cache.read_metadata(key)
    if raw is None:
        return None
    try:
        return SourceMetadata(**json.loads(raw))
    except (ValueError, TypeError):
        return None
