"""The on-disk cache: hits, corruption (dropped and refetched), offline mode, two processes."""

from __future__ import annotations

from envbuilder.index.sourcemeta import cache_key

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envbuilder.index import Cache, IndexClient, MissingFromCache
from tests.support.dists import make_sdist, make_wheel
from tests.support.index_server import IndexServer


def _client(server: IndexServer, cache: Cache, **kwargs) -> IndexClient:
    return IndexClient({"pypi": server.url}, cache, max_workers=4, retries=1, backoff=0.01, **kwargs)


def _serve_demo(server: IndexServer) -> None:
    server.pep658 = False
    server.add(make_wheel("demo", "1.0", requires_dist=["dep>=1"]))
    server.add(make_sdist("demo", "1.0", requires_dist=["dep>=1"]))


def _warm(server: IndexServer, cache: Cache) -> None:
    with _client(server, cache) as client:
        for file in client.files("demo"):
            client.metadata(file)


def test_second_client_answers_from_the_cache(index_server: IndexServer, index_cache: Cache):
    _serve_demo(index_server)
    _warm(index_server, index_cache)
    index_server.clear_log()
    with _client(index_server, index_cache) as client:
        metas = [client.metadata(f) for f in client.files("demo")]
        assert client.metadata_sources == {"cache": 2}
    assert [m.requires_dist for m in metas] == [("dep>=1",), ("dep>=1",)]
    assert index_server.log == []


def test_stale_pages_are_refetched_and_fresh_ones_are_not(index_server: IndexServer, index_cache: Cache):
    _serve_demo(index_server)
    _warm(index_server, index_cache)
    index_server.add(make_wheel("demo", "2.0"))
    index_server.clear_log()
    with _client(index_server, index_cache) as client:
        assert len(client.files("demo")) == 2  # younger than the TTL: cached page
    with _client(index_server, index_cache, page_ttl=0) as client:
        assert len(client.files("demo")) == 3  # TTL 0: always asks the index
    assert len(index_server.requests("/simple/demo/")) == 1


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_corrupted_entries_are_dropped_and_refetched(index_server: IndexServer, index_cache: Cache, damage):
    _serve_demo(index_server)
    _warm(index_server, index_cache)
    with _client(index_server, index_cache) as client:
        sdist = next(f for f in client.files("demo") if f.kind == "sdist")
        downloaded = client.download(sdist)
    entries = [index_cache.page_path(index_server.url, "demo"), index_cache.metadata_path(cache_key(sdist.sha256)), downloaded]
    for path in entries:
        data = path.read_bytes()
        path.write_bytes({"truncate": data[: len(data) // 2], "flip": data[:-1] + bytes([data[-1] ^ 1]),
                          "garbage": b"\x00garbage"}[damage])
    index_server.clear_log()
    with _client(index_server, index_cache) as client:
        sdist = next(f for f in client.files("demo") if f.kind == "sdist")
        assert client.metadata(sdist).requires_dist == ("dep>=1",)
        assert client.download(sdist).read_bytes() == make_sdist("demo", "1.0", requires_dist=["dep>=1"]).data
    assert len(index_server.requests("/simple/demo/")) == 1  # page refetched
    assert len(index_server.requests(sdist.filename)) == 1  # sdist refetched once, metadata read from it


def test_offline_uses_only_the_cache_and_lists_what_is_missing(index_server: IndexServer, index_cache: Cache):
    _serve_demo(index_server)
    index_server.add(make_wheel("other", "1.0"))
    _warm(index_server, index_cache)
    index_server.stop()  # nothing can be fetched any more
    with _client(index_server, index_cache, offline=True, page_ttl=0) as client:
        assert len(client.files("demo")) == 2  # old pages are fine offline
        with pytest.raises(MissingFromCache) as err:
            client.files_many(["demo", "other", "absent"])
        assert err.value.missing == ("project page: absent (index 'pypi')", "project page: other (index 'pypi')")
        assert err.value.exit_code == 3 and "run once without --offline" in str(err.value)
        uncached = next(f for f in client.files("demo")).__class__(
            project="demo", filename="demo-9.0-py3-none-any.whl", url="http://unused/x", sha256="ab" * 32)
        with pytest.raises(MissingFromCache, match="metadata: demo-9.0-py3-none-any.whl"):
            client.metadata(uncached)
        with pytest.raises(MissingFromCache, match="file: demo-9.0-py3-none-any.whl"):
            client.download(uncached)
        assert len(client.missing_from_cache().missing) == 4


CHILD = textwrap.dedent(
    """
    import json, sys
    from envbuilder.index import Cache, IndexClient
    url, root = sys.argv[1], sys.argv[2]
    with IndexClient({"pypi": url}, Cache(root), max_workers=8, retries=1, backoff=0.01) as client:
        files = [f for p in ("p0", "p1", "p2", "p3", "p4", "p5") for f in client.files(p)]
        metas = client.metadata_many(files)
        paths = [str(client.download(f)) for f in files]
    print(json.dumps({"deps": sorted(m.requires_dist[0] for m in metas.values()), "paths": paths}))
    """
)


def test_two_processes_share_one_cache(index_server: IndexServer, tmp_path: Path):
    index_server.pep658 = False
    for i in range(6):
        index_server.add(make_wheel(f"p{i}", "1.0", requires_dist=[f"dep{i}"], files={f"p{i}/x.bin": bytes(300_000)}))
    root = tmp_path / "shared-cache"
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, index_server.url, str(root)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2]) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    results = [json.loads(out) for out, _ in outputs]
    assert results[0] == results[1] and results[0]["deps"] == [f"dep{i}" for i in range(6)]
    full = [r for r in index_server.log if r.path.startswith("/files/") and r.range is None]
    assert len(full) == 6  # the file lock made the second process wait and reuse each download
    assert not list(root.rglob("*.part"))


def test_partial_downloads_of_killed_runs_are_swept(index_server: IndexServer, index_cache: Cache):
    import os
    import time

    index_server.add(make_wheel("demo", "1.0"))
    tmp = index_cache.root / "files" / "tmp"
    tmp.mkdir(parents=True)
    old, recent = tmp / "dl-old.part", tmp / "dl-recent.part"
    old.write_bytes(b"x" * 100)
    recent.write_bytes(b"y")
    os.utime(old, (time.time() - 2 * 86400,) * 2)
    with _client(index_server, index_cache) as client:
        client.download(client.files("demo")[0])
    assert not old.exists() and recent.exists()
