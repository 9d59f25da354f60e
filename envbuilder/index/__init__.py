"""Package sources: simple-API indexes (PEP 691 JSON / PEP 503 HTML), core metadata, git, cache.

The API the resolver and other modules use (all values are frozen dataclasses):

    from envbuilder.index import IndexClient, Cache, FileInfo, CoreMetadata, default_index_url

    with IndexClient({"pypi": default_index_url()}, Cache(), offline=False, max_workers=16) as ix:
        files = ix.files("torch")                        # list[FileInfo], every wheel and sdist
        fut = ix.metadata_async(files[0])               # Future[CoreMetadata]; also files_async,
        meta = fut.result()                              #   download_async; *_many gather in bulk
        path = ix.download(files[0])                     # cached by sha256, verified
        n = ix.size(files[0])                            # index's size, else learned/HEAD (HTML pages)
        with zipfile.ZipFile(ix.range_file(files[0])) as zf: ...   # any member, by range reads

- `FileInfo`: project (normalised), filename, url, sha256 (None only if the index gives none),
  size, requires_python, yanked (reason str, "" if none given; None = not yanked), upload_time,
  core_metadata (+ core_metadata_sha256: PEP 658/714), index (its name), and derived `kind`
  ("wheel"/"sdist"), `version`, `tags` (packaging.utils, parsed lazily; `valid` is False when the
  name cannot be parsed).
- `CoreMetadata`: name, version, requires_dist (tuple of str; `.requirements()` parses them),
  requires_python, provides_extra, metadata_version, dynamic.
- `IndexClient.metadata`: PEP 658 `.metadata` (hash-verified) > range reads of the wheel's zip
  directory > full download; sdists: PKG-INFO if Metadata-Version >= 2.2 and Requires-Dist is not
  Dynamic, else `DynamicMetadata` (BadInput, exit 2) asking for static metadata in the matrix.
- Errors: network failures after retries -> `envbuilder.errors.Unreachable` (exit 3) with the URL
  and what to do; offline misses -> `MissingFromCache` (an Unreachable) whose `.missing` lists
  every page/metadata/file; `client.missing_from_cache()` collects all misses of a run.
- Unknown projects give an empty file list (the resolver reports "no versions").
- Page freshness: cached pages younger than `page_ttl` (600 s; ENVBUILDER_PAGE_TTL) are reused,
  0 always refetches; offline uses any cached page. Files and metadata are cached forever.
- `Cache(root=None)`: ENVBUILDER_CACHE_DIR, else platformdirs' user cache dir.
- `envbuilder.index.git`: `GitSources(cache).verify(url, commit, subdirectory)` -> GitCommit
  (commit, tree, subdirectory_tree); `.is_ancestor(url, a, d)` -> bool | None; short ids -> BadInput.
- `envbuilder.index.config`: `default_index_url()`, `ca_bundle()`, `ssl_context()`.
"""

from envbuilder.index.cache import Cache
from envbuilder.index.client import IndexClient
from envbuilder.index.config import default_index_url
from envbuilder.index.errors import DynamicMetadata, HashMismatch, MissingFromCache
from envbuilder.index.models import CoreMetadata, FileInfo
from envbuilder.index.rangefile import RangeFile

__all__ = [
    "Cache",
    "CoreMetadata",
    "DynamicMetadata",
    "FileInfo",
    "HashMismatch",
    "IndexClient",
    "MissingFromCache",
    "RangeFile",
    "default_index_url",
]
