"""Project pages: PEP 691 JSON and PEP 503 HTML give the same FileInfo values."""

from __future__ import annotations

import pytest
from packaging.tags import Tag
from packaging.version import Version

from envbuilder.index import IndexClient
from tests.support.dists import make_sdist, make_wheel
from tests.support.index_server import IndexServer


def _populate(server: IndexServer) -> None:
    server.add(make_wheel("Demo_Pkg", "1.0", tags="cp312-cp312-manylinux_2_28_x86_64"), requires_python=">=3.10")
    server.add(make_wheel("Demo_Pkg", "1.1"), yanked="broken build")
    server.add(make_sdist("Demo_Pkg", "1.1"), yanked=True)


@pytest.mark.parametrize("formats", [("json", "html"), ("html",)], ids=["json", "html"])
def test_page_lists_every_file_with_its_facts(index_server: IndexServer, index_client: IndexClient, formats):
    index_server.formats = formats
    _populate(index_server)

    files = {f.filename: f for f in index_client.files("demo.pkg")}  # any spelling of the name

    assert set(files) == {
        "demo_pkg-1.0-cp312-cp312-manylinux_2_28_x86_64.whl", "demo_pkg-1.1-py3-none-any.whl", "demo_pkg-1.1.tar.gz"}
    whl = files["demo_pkg-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"]
    assert whl.project == "demo-pkg" and whl.kind == "wheel" and whl.version == Version("1.0")
    assert Tag("cp312", "cp312", "manylinux_2_28_x86_64") in whl.tags
    assert whl.requires_python == ">=3.10" and whl.yanked is None
    assert whl.url == index_server.file_url(whl.filename)
    assert len(whl.sha256) == 64 and whl.core_metadata and whl.core_metadata_sha256
    assert files["demo_pkg-1.1-py3-none-any.whl"].yanked == "broken build"
    assert files["demo_pkg-1.1.tar.gz"].yanked == "" and files["demo_pkg-1.1.tar.gz"].kind == "sdist"
    accept = index_server.requests("/simple/demo-pkg/")[0].accept
    assert accept.startswith("application/vnd.pypi.simple.v1+json")


def test_json_and_html_pages_agree(index_server: IndexServer, index_cache, tmp_path):
    _populate(index_server)
    seen = {}
    for formats in (("json",), ("html",)):
        index_server.formats = formats
        with IndexClient({"pypi": index_server.url}, type(index_cache)(tmp_path / "-".join(formats))) as client:
            seen[formats] = client.files("demo-pkg")
    strip = lambda f: (f.filename, f.url, f.sha256, f.requires_python, f.yanked, f.core_metadata_sha256)  # noqa: E731
    assert [strip(f) for f in seen[("json",)]] == [strip(f) for f in seen[("html",)]]
    assert seen[("json",)][0].size is not None and seen[("html",)][0].size is None  # HTML has no sizes


def test_unknown_project_is_empty(index_server: IndexServer, index_client: IndexClient):
    assert index_client.files("does-not-exist") == []


def test_files_async_shares_one_request(index_server: IndexServer, index_client: IndexClient):
    _populate(index_server)
    futures = [index_client.files_async("demo-pkg") for _ in range(8)]
    assert all(len(f.result()) == 3 for f in futures)
    assert len(index_server.requests("/simple/demo-pkg/")) == 1


def test_files_many_fans_out(index_server: IndexServer, index_client: IndexClient):
    for i in range(10):
        index_server.add(make_wheel(f"p{i}", "1.0"))
    pages = index_client.files_many(f"P{i}" for i in range(10))
    assert sorted(pages) == [f"p{i}" for i in range(10)] and all(len(v) == 1 for v in pages.values())


def test_unknown_index_name_is_bad_input(index_client: IndexClient):
    from envbuilder.errors import BadInput

    with pytest.raises(BadInput, match="unknown index 'nope'"):
        index_client.files("x", index="nope")


def test_platform_filter_drops_other_platforms_wheels(index_server: IndexServer, index_cache):
    from envbuilder.index.filters import wheel_platform_filter

    for tags in ("cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64", "cp312-cp312-win_amd64",
                 "cp312-cp312-musllinux_1_2_x86_64", "cp312-cp312-manylinux_2_28_aarch64", "py3-none-any",
                 "cp312-cp312-linux_x86_64"):
        index_server.add(make_wheel("multi", "1.0", tags=tags))
    index_server.add(make_sdist("multi", "1.0"))
    expected = {"multi-1.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                "multi-1.0-py3-none-any.whl", "multi-1.0-cp312-cp312-linux_x86_64.whl", "multi-1.0.tar.gz"}
    keep = wheel_platform_filter("x86_64")
    for _ in range(2):  # fetched from the index, then read back from the cache
        with IndexClient({"pypi": index_server.url}, index_cache, keep=keep) as client:
            assert {f.filename for f in client.files("multi")} == expected
    with IndexClient({"pypi": index_server.url}, index_cache) as client:
        assert len(client.files("multi")) == 7  # the cache holds the whole page
    assert len(index_server.requests("/simple/multi/")) == 1


def test_unusual_urls_and_names_survive_the_cache(index_server: IndexServer, index_cache):
    from envbuilder.index.models import FileInfo
    from envbuilder.index.simple import decode_page, encode_page, group_by_platform

    files = [FileInfo("odd", "odd-1.0.tar.gz", "https://a.invalid/x/odd-1.0.tar.gz", "ab" * 32, yanked="bad\n\"quote\""),
             FileInfo("odd", "odd-1.1.tar.gz", "https://b.invalid/download?id=7", None, requires_python=">=3.8,<4"),
             FileInfo("odd", "odd-2.0-py3-none-any.whl", "https://a.invalid/y/odd-2.0-py3-none-any.whl#frag", None)]
    rows = [(f.filename, f.url, f.sha256, f.size, f.requires_python, f.yanked, f.upload_time, f.core_metadata,
             f.core_metadata_sha256) for f in files]
    assert decode_page(encode_page(group_by_platform(rows)), "odd", "pypi") == files
    assert decode_page(encode_page({}), "odd", "pypi") == []


def test_fresh_and_cached_pages_list_files_in_the_same_order(index_server: IndexServer, index_cache):
    for version in ("1.0", "2.0"):
        for tags in ("cp312-cp312-win_amd64", "py3-none-any", "cp312-cp312-manylinux_2_28_x86_64"):
            index_server.add(make_wheel("ordered", version, tags=tags))
        index_server.add(make_sdist("ordered", version))
    with IndexClient({"pypi": index_server.url}, index_cache) as client:
        fresh = client.files("ordered")
    with IndexClient({"pypi": index_server.url}, index_cache) as client:
        assert client.files("ordered") == fresh


def test_sizes_missing_from_html_pages_are_learned(index_server: IndexServer, index_client: IndexClient, index_cache):
    index_server.formats = ("html",)
    index_server.pep658 = False
    whl, sdist, other = make_wheel("sized", "1.0"), make_sdist("sized", "1.0"), make_wheel("sized", "2.0")
    for dist in (whl, sdist, other):
        index_server.add(dist)
    files = {f.filename: f for f in index_client.files("sized")}
    assert all(f.size is None for f in files.values())
    index_client.metadata(files[whl.filename])  # range reads learn the wheel's size
    index_client.metadata(files[sdist.filename])  # the sdist is downloaded whole
    before = len(index_server.log)
    assert index_client.size(files[whl.filename]) == whl.size
    assert index_client.size(files[sdist.filename]) == sdist.size
    assert len(index_server.log) == before  # both known without asking again
    assert index_client.size_async(files[other.filename]).result() == other.size  # a HEAD request
    assert [r.method for r in index_server.log[before:]] == ["HEAD"]
    with IndexClient({"pypi": index_server.url}, index_cache, offline=True) as offline:
        assert sorted(offline.size(f) for f in offline.files("sized")) == sorted(d.size for d in (whl, sdist, other))


def test_page_cache_reads_the_same_with_or_without_orjson(monkeypatch):
    import json

    from envbuilder.index import fastjson
    from envbuilder.index.simple import decode_page, encode_page, group_by_platform

    rows = [("a-1.0-py3-none-any.whl", "https://x.invalid/p/a-1.0-py3-none-any.whl", "ab" * 32, 10, ">=3.8",
             "bad\nrelease ü", None, False, None), ("a-1.0.tar.gz", "https://x.invalid/p/a-1.0.tar.gz", None, None,
                                                   None, None, "2024-01-01T00:00:00Z", True, "cd" * 32)]
    with_default = encode_page(group_by_platform(rows))
    monkeypatch.setattr(fastjson, "dumps", lambda v: json.dumps(v, separators=(",", ":")).encode())
    monkeypatch.setattr(fastjson, "loads", json.loads)
    with_stdlib = encode_page(group_by_platform(rows))
    assert decode_page(with_default, "a", "pypi") == decode_page(with_stdlib, "a", "pypi")
    assert [f.yanked for f in decode_page(with_default, "a", "pypi")] == ["bad\nrelease ü", None]
