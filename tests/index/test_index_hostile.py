"""The index is untrusted: names, file names and hashes from a page are checked before use,
cache entries are bound to their key, and slow or silent servers hit a deadline (exit 3)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from envbuilder.errors import BadInput, Unreachable
from envbuilder.index import Cache, IndexClient
from envbuilder.index.cache import UnsafeCacheKey
from tests.support.dists import make_wheel
from tests.support.hostile_server import BlackHole, Trickle, static_pages
from tests.support.index_server import IndexServer

JSON = "application/vnd.pypi.simple.v1+json"
GOOD_SHA = "a" * 64


def _client(url: str, cache: Cache, **kwargs) -> IndexClient:
    kwargs.setdefault("retries", 1)
    return IndexClient({"pypi": url}, cache, max_workers=2, backoff=0.01, **kwargs)


def _json_page(*files: dict) -> tuple[str, bytes]:
    return JSON, json.dumps({"meta": {"api-version": "1.1"}, "name": "demo", "files": list(files)}).encode()


def _entry(filename: str, sha: str = GOOD_SHA, url: str | None = None, **extra) -> dict:
    return {"filename": filename, "url": url or f"/files/{filename}", "hashes": {"sha256": sha}, **extra}


def test_page_entries_that_could_leave_the_cache_are_dropped(index_cache: Cache, tmp_path: Path):
    page = _json_page(
        _entry("demo-1.0-py3-none-any.whl"),
        _entry("../../evil-1.0-py3-none-any.whl"),
        _entry("demo-2.0-py3-none-any.whl", sha="../../../etc"),
        _entry("demo-3.0-py3-none-any.whl", url="file:///etc/passwd"),
        _entry("demo-4.0-py3-none-any.whl", size="12", **{"requires-python": ["x"]}),
        _entry("/abs/demo-5.0-py3-none-any.whl"),
    )
    with static_pages({"/simple/demo/": page}) as root, _client(root + "/simple", index_cache) as client:
        files = client.files("demo")
    assert [f.filename for f in files] == ["demo-1.0-py3-none-any.whl", "demo-4.0-py3-none-any.whl"]
    assert files[1].size is None and files[1].requires_python is None  # wrong types become unknown


def test_percent_encoded_slashes_in_html_links_are_dropped(index_cache: Cache):
    html = (b'<html><body><a href="/f/..%2F..%2Fevil-1.0-py3-none-any.whl#sha256=' + GOOD_SHA.encode() + b'">x</a>'
            b'<a href="/f/demo-1.0-py3-none-any.whl#sha256=' + GOOD_SHA.encode() + b'">y</a>'
            b'<a href="/f/demo-2.0-py3-none-any.whl#sha256=nothex">z</a></body></html>')
    with static_pages({"/simple/demo/": ("text/html", html)}) as root, _client(root + "/simple", index_cache) as client:
        assert [f.filename for f in client.files("demo")] == ["demo-1.0-py3-none-any.whl"]


@pytest.mark.parametrize("sha, name", [("../" * 3 + "x" * 55, "demo-1.0.tar.gz"), (GOOD_SHA, "../../evil.whl"),
                                       (GOOD_SHA, "a/b.whl"), ("A" * 64, "demo-1.0.tar.gz"), (GOOD_SHA, "..")])
def test_cache_paths_refuse_unsafe_keys(index_cache: Cache, sha: str, name: str):
    with pytest.raises(UnsafeCacheKey) as err:
        index_cache.file_path(sha, name)
    assert err.value.exit_code == 3 and "outside the cache" in str(err.value)


def test_a_package_name_with_a_slash_is_bad_input(index_cache: Cache):
    with _client("http://127.0.0.1:9/simple", index_cache) as client, pytest.raises(BadInput, match="not a valid package name"):
        client.files("../evil")


def test_a_sealed_entry_copied_from_another_slot_is_a_miss(index_server: IndexServer, index_cache: Cache):
    index_server.add(make_wheel("demo", "1.0"))
    index_server.add(make_wheel("other", "1.0"))
    with _client(index_server.url, index_cache) as client:
        (demo,) = client.files("demo")
        client.files("other")
        client.metadata(demo)
    # another project's page, sealed and intact, copied into this project's slot
    shutil.copy(index_cache.page_path(index_server.url, "demo"), index_cache.page_path(index_server.url, "other"))
    assert index_cache.read_page(index_server.url, "other") is None
    # metadata of one file copied under another file's hash
    fake = "b" * 64
    index_cache.metadata_path(fake).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(index_cache.metadata_path(demo.sha256), index_cache.metadata_path(fake))
    assert index_cache.read_metadata(fake) is None
    assert index_cache.read_metadata(demo.sha256) is not None  # the original is still a hit
    with _client(index_server.url, index_cache) as client:
        assert [f.project for f in client.files("other")] == ["other"]  # refetched, not the copy


def test_a_trickling_server_hits_the_request_deadline(index_cache: Cache):
    began = time.monotonic()
    with Trickle(interval=0.3) as root:
        url = root.replace("http://", "http://alice:s3cret@") + "/simple"
        with _client(url, index_cache, deadline=1.5, timeout=30) as client, pytest.raises(Unreachable) as err:
            client.files("demo")
    message = str(err.value)
    assert time.monotonic() - began < 10
    assert err.value.exit_code == 3
    assert "waiting for the rest of the body" in message and "ENVBUILDER_HTTP_DEADLINE" in message
    assert "s3cret" not in message and "127.0.0.1" in message


def test_a_server_that_never_answers_hits_the_deadline_not_retries_times_timeout(index_cache: Cache):
    began = time.monotonic()
    with BlackHole() as root, _client(root + "/simple", index_cache, deadline=1.0, timeout=30, retries=4) as client:
        with pytest.raises(Unreachable) as err:
            client.files("demo")
    assert time.monotonic() - began < 10
    assert "waiting for an answer" in str(err.value) and "deadline (1 s a request" in str(err.value)


def test_the_run_budget_bounds_all_requests_together(index_cache: Cache):
    with BlackHole() as root, _client(root + "/simple", index_cache, deadline=60, budget=1.0, timeout=30) as client:
        with pytest.raises(Unreachable, match=r"index budget \(1 s, ENVBUILDER_INDEX_BUDGET\) is spent"):
            client.files("demo")
        with pytest.raises(Unreachable, match="budget"):  # spent: the next request gives up at once
            client.files("other")


def test_deadline_knobs_reject_nonsense(index_cache: Cache, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ENVBUILDER_HTTP_DEADLINE", "nan")
    with pytest.raises(BadInput, match="ENVBUILDER_HTTP_DEADLINE"):
        _client("http://127.0.0.1:9/simple", index_cache)


def test_stale_temp_files_of_killed_runs_are_swept_and_entries_get_the_umask(index_cache: Cache):
    import os

    old_time = time.time() - 2 * 24 * 3600
    stale = [index_cache.root / "metadata" / "ab" / ".tmp-k1ll3d.part", index_cache.root / "pages" / ".tmp-x.part",
             index_cache.root / "files" / "tmp" / "dl-k1ll3d.part"]
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half")
        os.utime(path, (old_time, old_time))
    live = index_cache.root / "metadata" / "ab" / ".tmp-l1v3.part"  # a concurrent run's write: young, kept
    live.write_bytes(b"in flight")
    mask = os.umask(0o022)
    try:
        index_cache.write_metadata("c" * 64, b"Metadata-Version: 2.1\nName: x\nVersion: 1\n", "test")
        index_cache.temp_path().unlink()
    finally:
        os.umask(mask)
    assert [p for p in stale if p.exists()] == [] and live.exists()
    assert index_cache.metadata_path("c" * 64).stat().st_mode & 0o777 == 0o644
