"""IndexClient: project pages, core metadata and downloads from named simple-API indexes.

Cheapest source first, for every lookup: the in-process memo, then the on-disk cache, then the
network. Metadata comes from PEP 658/714 `.metadata` files where the index offers them, else
from HTTP range reads of the wheel's zip directory (2-3 small requests), else from a full
download; sdists give their PKG-INFO when it is static (PEP 643). All network work runs on one
bounded thread pool over one keep-alive HTTP client, and the *_async methods return Futures so
a resolver can fan out its lookups.

Page freshness: a cached project page younger than `page_ttl` seconds (default 600, the max-age
that pip and uv honour on the default index) is used without asking the index; older pages are
refetched; `page_ttl=0` always refetches; offline uses whatever is cached, however old. Files
and metadata are immutable by hash and cached forever.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from envbuilder.errors import BadInput, Unreachable
from envbuilder.index.cache import Cache, key_of
from envbuilder.index.config import default_index_url
from envbuilder.index.distmeta import (
    MetadataNotFound,
    read_sdist_pkg_info,
    read_wheel_metadata,
)
from envbuilder.index.errors import RECOVERY_HINT, HashMismatch, MissingFromCache, RangeNotSupported
from envbuilder.index.http import DEFAULT_DEADLINE, Http, IndexAuth, redact, strip_credentials
from envbuilder.index.models import CoreMetadata, FileInfo
from envbuilder.index.rangefile import RangeFile
from envbuilder.index.sourcemeta import SourceMetadata, sdist_metadata
from envbuilder.index.sourcemeta import cache_key as source_cache_key
from envbuilder.index.simple import (
    ACCEPT,
    PageError,
    Row,
    decode_page,
    encode_page,
    group_by_platform,
    parse_page,
    to_files,
)
from envbuilder.index.singleflight import SingleFlight

DEFAULT_PAGE_TTL = 600.0
#: Seconds all of one run's index requests may take together (ENVBUILDER_INDEX_BUDGET): a cold
#: lock of a 170-package closure takes a few seconds, a slow mirror a few minutes.
DEFAULT_BUDGET = 1800.0
T = TypeVar("T")


def _env_number(var: str, default: float) -> float:
    """Knobs for tests and unusual networks: ENVBUILDER_PAGE_TTL, ENVBUILDER_HTTP_RETRIES/_BACKOFF/_DEADLINE,
    ENVBUILDER_INDEX_BUDGET (seconds)."""
    raw = os.environ.get(var, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError as exc:
        raise BadInput(f"{var}={raw!r}: expected a number") from exc
    if not math.isfinite(value) or value < 0:
        raise BadInput(f"{var}={raw!r}: expected a finite number, 0 or more")
    return value


class IndexClient:
    """See the module docstring; construct once per run and `close()` (or use `with`).

    `keep(platform_tags)` drops wheels for other platforms before they are built (see
    filters.wheel_platform_filter); the cache holds whole pages, so all targets share it.
    """

    def __init__(
        self,
        indexes: Mapping[str, str] | None = None,
        cache: Cache | None = None,
        offline: bool = False,
        max_workers: int = 16,
        page_ttl: float | None = None,
        retries: int | None = None,
        backoff: float | None = None,
        timeout: float = 30.0,
        keep: Callable[[str], bool] | None = None,
        deadline: float | None = None,
        budget: float | None = None,
    ):
        self.indexes = dict(indexes) if indexes else {"pypi": default_index_url()}
        self.cache = cache if cache is not None else Cache()
        self.offline = offline
        self.keep = keep  # wheel platform filter (envbuilder.index.filters); the cache keeps all
        self.page_ttl = _env_number("ENVBUILDER_PAGE_TTL", DEFAULT_PAGE_TTL) if page_ttl is None else page_ttl
        self.max_workers = max_workers
        self._http_args = {
            "max_connections": max_workers,
            "retries": int(_env_number("ENVBUILDER_HTTP_RETRIES", 4) if retries is None else retries),
            "backoff": _env_number("ENVBUILDER_HTTP_BACKOFF", 0.5) if backoff is None else backoff,
            "timeout": timeout,
            "deadline": _env_number("ENVBUILDER_HTTP_DEADLINE", DEFAULT_DEADLINE) if deadline is None else deadline,
            "budget": _env_number("ENVBUILDER_INDEX_BUDGET", DEFAULT_BUDGET) if budget is None else budget,
        }
        self._http: Http | None = None
        self._http_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="envbuilder-index")
        self._flight = SingleFlight()
        self._no_ranges: set[str] = set()  # hosts seen ignoring Range headers
        self._misses: set[str] = set()
        self._lock = threading.Lock()
        #: How each metadata lookup was answered: memo misses only ("cache", "pep658", "range", ...).
        self.metadata_sources: Counter[str] = Counter()

    # -- lifecycle ------------------------------------------------------------------
    def __enter__(self) -> IndexClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the pool: queued lookups are cancelled (their futures raise CancelledError)."""
        self._flight.cancel_pending()
        self._pool.shutdown(wait=True, cancel_futures=True)
        if self._http is not None:
            self._http.close()

    @property
    def http(self) -> Http:
        """The shared HTTP client, created on first network use (offline runs never build it)."""
        with self._http_lock:
            if self._http is None:
                self._http = Http(**self._http_args, auth=IndexAuth(list(self.indexes.values())))  # type: ignore[arg-type]
            return self._http

    def index_url(self, index: str) -> str:
        try:
            return self.indexes[index]
        except KeyError:
            raise BadInput(f"unknown index {index!r}; known indexes: {', '.join(sorted(self.indexes))}") from None

    # -- public API -----------------------------------------------------------------
    def files(self, project: str, index: str = "pypi") -> list[FileInfo]:
        """Every wheel and sdist the index lists for `project` (an unknown project gives [])."""
        name = project_name(project)
        return list(self._flight.call(("files", index, name), lambda: self._load_files(name, index)))

    def files_async(self, project: str, index: str = "pypi") -> Future[list[FileInfo]]:
        name = project_name(project)
        return self._flight.submit(self._pool, ("files", index, name), lambda: self._load_files(name, index))

    def metadata(self, file: FileInfo) -> CoreMetadata:
        return self._flight.call(("metadata", _file_key(file)), lambda: self._load_metadata(file))

    def metadata_async(self, file: FileInfo) -> Future[CoreMetadata]:
        return self._flight.submit(self._pool, ("metadata", _file_key(file)), lambda: self._load_metadata(file))

    def download(self, file: FileInfo) -> Path:
        """The file in the cache, downloaded if needed; its sha256 is verified against the index's."""
        return self._flight.call(("download", _file_key(file)), lambda: self._load_file(file))

    def download_async(self, file: FileInfo) -> Future[Path]:
        return self._flight.submit(self._pool, ("download", _file_key(file)), lambda: self._load_file(file))

    def size(self, file: FileInfo) -> int:
        """The file's size in bytes: the index's, else learned (cached by sha256), else a HEAD request.

        PEP 503 HTML pages carry no sizes; metadata range reads and downloads record the size they
        learn, so after `metadata()` this usually costs nothing.
        """
        if file.size is not None:
            return file.size
        return self._flight.call(("size", _file_key(file)), lambda: self._load_size(file))

    def size_async(self, file: FileInfo) -> Future[int]:
        if file.size is not None:
            done: Future[int] = Future()
            done.set_result(file.size)
            return done
        return self._flight.submit(self._pool, ("size", _file_key(file)), lambda: self._load_size(file))

    def files_many(self, projects: Iterable[str], index: str = "pypi") -> dict[NormalizedName, list[FileInfo]]:
        """Pages of many projects in parallel; offline, one error lists every missing page."""
        futures = {project_name(p): self.files_async(p, index) for p in projects}
        return _gather(futures)

    def metadata_many(self, files: Iterable[FileInfo]) -> dict[FileInfo, CoreMetadata]:
        """Metadata of many files in parallel; offline, one error lists every missing entry."""
        return _gather({f: self.metadata_async(f) for f in files})

    def range_file(self, file: FileInfo | str, size: int | None = None) -> RangeFile:
        """A seekable read-only view of a remote file (zipfile can open it) over range requests."""
        if isinstance(file, FileInfo):
            return RangeFile(self.http, file.url, file.size)
        return RangeFile(self.http, file, size)

    def missing_from_cache(self) -> MissingFromCache | None:
        """Everything offline lookups missed so far in this client, as one error (or None)."""
        with self._lock:
            return MissingFromCache(self._misses) if self._misses else None

    # -- pages ----------------------------------------------------------------------
    def _miss(self, item: str) -> MissingFromCache:
        with self._lock:
            self._misses.add(item)
        return MissingFromCache([item])

    def _load_files(self, project: NormalizedName, index: str) -> list[FileInfo]:
        url = self.index_url(index)
        if self.offline:
            cached = self._cached_files(url, project, index, max_age=float("inf"))
            if cached is None:
                raise self._miss(f"project page: {project} (index {index!r})")
            return cached
        cached = self._cached_files(url, project, index, self.page_ttl)
        if cached is not None:
            return cached
        with self.cache.locked("page", key_of(f"{strip_credentials(url)} {project}")):
            cached = self._cached_files(url, project, index, self.page_ttl)  # another process got it
            if cached is not None:
                return cached
            groups = group_by_platform(self._fetch_page(url, project))
            self.cache.write_page(url, project, encode_page(groups))
        return to_files(groups, project, index, self.keep)

    def _cached_files(self, url: str, project: NormalizedName, index: str, max_age: float) -> list[FileInfo] | None:
        page = self.cache.read_page(url, project)
        if page is None or page.age() >= max_age:
            return None
        try:
            return decode_page(page.body, project, index, self.keep)
        except ValueError:  # intact but unreadable (an older format): treat as a miss
            self.cache.drop(self.cache.page_path(url, project))
            return None

    def _fetch_page(self, index_url: str, project: NormalizedName) -> list[Row]:
        page_url = f"{index_url.rstrip('/')}/{project}/"
        response = self.http.get(page_url, headers={"Accept": ACCEPT}, ok=(200, 404, 410))
        if response.status_code != 200:
            return []
        try:
            return parse_page(response.content, response.headers.get("Content-Type", ""), str(response.url))
        except PageError as exc:
            raise Unreachable(f"{exc}; is the index URL a simple-API root (…/simple)? {RECOVERY_HINT}") from exc

    # -- metadata -------------------------------------------------------------------
    def _load_metadata(self, file: FileInfo) -> CoreMetadata:
        if file.kind == "sdist":
            return self._load_sdist_metadata(file)
        data = self.cache.read_metadata(file.sha256) if file.sha256 else None
        source = "cache"
        if data is None:
            data, source = self._metadata_bytes(file)
            if file.sha256:
                self.cache.write_metadata(file.sha256, data, source)
        with self._lock:
            self.metadata_sources[source] += 1
        try:
            meta = CoreMetadata.parse(data)
        except ValueError as exc:
            raise Unreachable(f"{file.filename}: unreadable core metadata ({exc}); {RECOVERY_HINT}") from exc
        _check_identity(file, meta)
        return meta

    def _load_sdist_metadata(self, file: FileInfo) -> CoreMetadata:
        """PKG-INFO (PEP 643), pyproject.toml (PEP 621) or the build backend; cached by sdist sha256."""
        key = source_cache_key(file.sha256) if file.sha256 else None
        cached = self.cache.read_metadata(key) if key else None
        source = "cache"
        if cached is not None:
            try:
                found = SourceMetadata(**json.loads(cached))
            except (ValueError, TypeError):
                found = None
        else:
            found = None
        if found is None:
            version = str(file.version_or_none or "")
            try:
                with contextlib.closing(self._build_env(file)) as build_env:
                    found = sdist_metadata(self.download(file), file.project, file.filename, version,
                                           self.index_url(file.index), build_env)
            except MetadataNotFound as exc:
                raise Unreachable(f"{exc}; give static metadata for {file.project} in the matrix") from exc
            source = f"sdist-{found.origin}"
            if key:
                self.cache.write_metadata(key, json.dumps(dataclasses.asdict(found)).encode(), source)
        with self._lock:
            self.metadata_sources[source] += 1
        try:
            meta = CoreMetadata.parse(found.text)
        except ValueError as exc:
            raise Unreachable(f"{file.filename}: unreadable core metadata ({exc}); {RECOVERY_HINT}") from exc
        meta = dataclasses.replace(meta, origin=found.origin, build_python=found.python)
        _check_identity(file, meta)
        return meta

    def _build_env(self, file: FileInfo):
        """The backend route's build environment, installed by hash: resolved through a client of the
        same indexes, cache and offline mode, with a pool of its own (this lookup may hold one of ours)."""
        from envbuilder.resolve.buildenv import HashedBuildEnv  # resolve builds on index: import late

        client = IndexClient(self.indexes, cache=self.cache, offline=self.offline, max_workers=4)
        return HashedBuildEnv(client, file.filename, owns_client=True)

    def _metadata_bytes(self, file: FileInfo) -> tuple[bytes, str]:
        local = self.cache.lookup_file(file.sha256, file.filename) if file.sha256 else None
        if local is not None:
            return self._metadata_from_path(file, local), "local-file"
        if self.offline:
            raise self._miss(f"metadata: {file.filename}")
        if file.kind == "sdist":
            return self._metadata_from_path(file, self.download(file)), "sdist"
        if file.core_metadata:
            data = self._fetch_pep658(file)
            if data is not None:
                return data, "pep658"
        host = urlsplit(file.url).netloc
        if host not in self._no_ranges:
            try:
                with self.range_file(file) as remote:
                    data = self._read_wheel(file, remote)
                    self._remember_size(file, remote.size)
                    return data, "range"
            except (RangeNotSupported, OSError):  # ignored, refused or garbled ranges: download
                self._no_ranges.add(host)
        return self._metadata_from_path(file, self.download(file)), "download"

    def _fetch_pep658(self, file: FileInfo) -> bytes | None:
        response = self.http.get(file.url + ".metadata", ok=(200, 404))
        if response.status_code == 404:
            return None  # advertised but absent: fall back to the wheel itself
        if file.core_metadata_sha256:
            actual = hashlib.sha256(response.content).hexdigest()
            if actual != file.core_metadata_sha256:
                raise HashMismatch(
                    f"{redact(file.url)}.metadata has sha256 {actual}, the index published {file.core_metadata_sha256}"
                )
        return response.content

    def _metadata_from_path(self, file: FileInfo, path: Path) -> bytes:
        if file.kind == "sdist":
            try:
                return read_sdist_pkg_info(path, file.project, file.filename)
            except MetadataNotFound as exc:
                raise Unreachable(f"{exc}; give static metadata for {file.project} in the matrix") from exc
        return self._read_wheel(file, path)

    def _read_wheel(self, file: FileInfo, source: Path | RangeFile) -> bytes:
        try:
            return read_wheel_metadata(source, file.project, file.filename)
        except MetadataNotFound as exc:
            raise Unreachable(f"{exc}: the index serves a broken wheel") from exc

    # -- sizes ----------------------------------------------------------------------
    def _load_size(self, file: FileInfo) -> int:
        if file.sha256:
            known = self.cache.read_size(file.sha256)
            if known is not None:
                return known
            local = self.cache.lookup_file(file.sha256, file.filename)
            if local is not None:
                return local.stat().st_size
        if self.offline:
            raise self._miss(f"size: {file.filename}")
        size = self._remote_size(file)
        self._remember_size(file, size)
        return size

    def _remote_size(self, file: FileInfo) -> int:
        response = self.http.get(file.url, headers={"Accept-Encoding": "identity"}, method="HEAD")
        length = response.headers.get("Content-Length", "")
        if length.isdigit():
            return int(length)
        try:
            return self.http.get_range(file.url, None, 1)[2]
        except RangeNotSupported:
            return self.download(file).stat().st_size

    def _remember_size(self, file: FileInfo, size: int) -> None:
        if file.size is None and file.sha256:
            self.cache.write_size(file.sha256, size)

    # -- downloads ------------------------------------------------------------------
    def _load_file(self, file: FileInfo) -> Path:
        if file.sha256:
            path = self.cache.lookup_file(file.sha256, file.filename)
            if path is not None:
                return path
        if self.offline:
            raise self._miss(f"file: {file.filename}")
        if file.sha256 is None:
            return self._fetch_file(file, None)
        with self.cache.locked("file", file.sha256):
            path = self.cache.lookup_file(file.sha256, file.filename)  # another process got it first
            return path if path is not None else self._fetch_file(file, file.sha256)

    def _fetch_file(self, file: FileInfo, sha256: str | None) -> Path:
        tmp = self.cache.temp_path()
        try:
            actual = self.http.download(file.url, tmp, sha256, file.size)
            path = self.cache.commit_file(tmp, actual, file.filename)
            self._remember_size(file, path.stat().st_size)
            return path
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


_PROJECT_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def project_name(project: str) -> NormalizedName:
    """The normalised name of a valid project name (PEP 508); BadInput for anything else.

    Names become URL path segments and cache folders: "a/b", "..", or a space never get that far.
    """
    if not isinstance(project, str) or _PROJECT_NAME.fullmatch(project) is None:
        raise BadInput(f"{project!r} is not a valid package name (letters, digits, '.', '_' and '-' only)")
    return canonicalize_name(project)


def _check_identity(file: FileInfo, meta: CoreMetadata) -> None:
    """Metadata must describe the file it came for (a broken index or mirror can mix them up)."""
    try:
        same_version = file.version_or_none is None or Version(meta.version) == file.version_or_none
    except InvalidVersion:
        same_version = False
    if meta.project != file.project or not same_version:
        raise Unreachable(
            f"{file.filename}: its metadata describes {meta.name} {meta.version}, not this file; "
            "the index serves inconsistent data: report it to the index or use another mirror"
        )


def _file_key(file: FileInfo) -> str:
    return file.sha256 or file.url


def _gather(futures: Mapping[T, Future]) -> dict:  # type: ignore[type-arg]
    results, missing = {}, []
    for key, future in futures.items():
        try:
            results[key] = future.result()
        except MissingFromCache as exc:
            missing.append(exc)
    if missing:
        raise MissingFromCache.combine(missing)
    return results
