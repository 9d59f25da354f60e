"""Core metadata: PEP 658 when offered, else range reads of the wheel, else a full download."""

from __future__ import annotations

import os
import zipfile

import pytest

from envbuilder.errors import BadInput, Unreachable
from envbuilder.index import DynamicMetadata, HashMismatch, IndexClient
from tests.support.dists import make_sdist, make_wheel
from tests.support.index_server import IndexServer

BIG = 4 << 20  # incompressible payload: reading it by accident would show in the byte counts
REQS = ("nvidia-cuda-runtime-cu12==12.8.90; platform_system == 'Linux'", "triton==3.5.1", "rich[jupyter]>=13")


def _big_wheel(members: int = 3):
    files = {f"bigpkg/blob{i}.bin": os.urandom(BIG // members) for i in range(members)}
    return make_wheel("bigpkg", "2.0", requires_dist=REQS, tags="cp312-cp312-manylinux_2_28_x86_64",
                      files=files, requires_python=">=3.10", provides_extra=["gpu"], compression=zipfile.ZIP_STORED)


def _metadata(client: IndexClient):
    (file,) = client.files("bigpkg")
    return file, client.metadata(file)


def test_pep658_metadata_is_used_and_the_wheel_never_touched(index_server: IndexServer, index_client: IndexClient):
    whl = _big_wheel()
    index_server.add(whl)
    _, meta = _metadata(index_client)
    assert meta.name == "bigpkg" and meta.version == "2.0" and meta.requires_dist == REQS
    assert meta.requires_python == ">=3.10" and meta.provides_extra == ("gpu",)
    assert index_server.bytes_sent(whl.filename + ".metadata") == len(whl.metadata)
    assert index_server.requests(whl.filename) == []
    assert index_client.metadata_sources["pep658"] == 1


def test_range_reads_fetch_a_small_part_of_the_wheel(index_server: IndexServer, index_client: IndexClient):
    index_server.pep658 = False
    whl = _big_wheel()
    index_server.add(whl)
    _, meta = _metadata(index_client)
    assert meta.requires_dist == REQS
    wheel_requests = index_server.requests(whl.filename)
    assert 1 <= len(wheel_requests) <= 3 and all(r.status == 206 for r in wheel_requests)
    assert index_server.bytes_sent(whl.filename) < 256 * 1024 < whl.size
    assert index_client.metadata_sources["range"] == 1


def test_range_reads_without_published_size_use_a_suffix_range(index_server: IndexServer, index_client):
    index_server.pep658 = False
    index_server.formats = ("html",)  # HTML pages carry no file size
    whl = _big_wheel()
    index_server.add(whl)
    file, meta = _metadata(index_client)
    assert file.size is None and meta.requires_dist == REQS
    assert index_server.requests(whl.filename)[0].range == "bytes=-65536"
    assert index_server.bytes_sent(whl.filename) < 256 * 1024


def test_large_central_directory_costs_three_requests(index_server: IndexServer, index_client: IndexClient):
    index_server.pep658 = False
    files = {f"many/module_{i:05d}_with_a_long_name.py": b"x = 1\n" for i in range(3000)}
    whl = make_wheel("bigpkg", "2.0", requires_dist=REQS, files=files)
    index_server.add(whl)
    _, meta = _metadata(index_client)
    assert meta.requires_dist == REQS
    assert len(index_server.requests(whl.filename)) == 3


def test_without_range_support_the_wheel_is_downloaded_once(index_server: IndexServer, index_client: IndexClient):
    index_server.pep658 = False
    index_server.ranges = False
    whl = _big_wheel()
    second = make_wheel("bigpkg", "2.1", requires_dist=["six"])
    index_server.add(whl)
    index_server.add(second)
    files = {f.filename: f for f in index_client.files("bigpkg")}
    assert index_client.metadata(files[whl.filename]).requires_dist == REQS
    assert index_client.metadata(files[second.filename]).requires_dist == ("six",)
    full = [r for r in index_server.requests(whl.filename) if r.range is None]
    assert len(full) == 1 and full[0].status == 200
    # the host is remembered as range-less: the second wheel goes straight to a full download
    assert [r.range for r in index_server.requests(second.filename)] == [None]
    assert index_client.metadata_sources["download"] == 2
    # and the download landed in the cache, verified
    assert index_client.download(files[whl.filename]).read_bytes() == whl.data


def test_pep658_hash_mismatch_is_an_error(index_server: IndexServer, index_client: IndexClient):
    whl = make_wheel("bigpkg", "2.0")
    served = index_server.add(whl)
    index_server.projects["bigpkg"][0] = type(served)(whl.__class__(whl.filename, whl.data, b"Name: evil\n"))
    (file,) = index_client.files("bigpkg")
    object.__setattr__(file, "core_metadata_sha256", "0" * 64)
    with pytest.raises(HashMismatch, match=r"\.metadata has sha256"):
        index_client.metadata(file)


def test_sdist_with_static_pkg_info(index_server: IndexServer, index_client: IndexClient):
    for fmt in ("tar.gz", "zip"):
        index_server.add(make_sdist("srcpkg", "1.0" if fmt == "zip" else "1.1", requires_dist=["numpy>=2"], fmt=fmt))
    for file in index_client.files("srcpkg"):
        meta = index_client.metadata(file)
        assert meta.requires_dist == ("numpy>=2",) and meta.metadata_version == "2.2"


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [({"metadata_version": "2.1"}, "static metadata"), ({"dynamic": ["Requires-Dist"]}, "static metadata")],
)
def test_sdist_with_dynamic_metadata_asks_for_static_metadata(index_server, index_client, kwargs, why):
    """PKG-INFO is not authoritative, no static [project] table, and its build backend cannot say."""
    index_server.add(make_sdist("flash_attn", "2.8.3", requires_dist=["torch"], **kwargs))
    (file,) = index_client.files("flash-attn")
    with pytest.raises(DynamicMetadata, match=why) as err:
        index_client.metadata(file)
    assert isinstance(err.value, BadInput) and "static metadata for it in the matrix" in str(err.value)


def test_sdist_without_pkg_info(index_server: IndexServer, index_client: IndexClient):
    index_server.add(make_sdist("srcpkg", "1.0", pkg_info=False))
    (file,) = index_client.files("srcpkg")
    with pytest.raises(Unreachable, match="static metadata"):
        index_client.metadata(file)


def test_download_verifies_the_hash(index_server: IndexServer, index_client: IndexClient):
    whl = make_wheel("bigpkg", "2.0")
    index_server.add(whl)
    index_server.tamper(whl.filename)
    (file,) = index_client.files("bigpkg")
    with pytest.raises(HashMismatch, match="the index published"):
        index_client.download(file)
    assert not list(index_client.cache.root.glob("files/??/*/*.whl"))


def test_range_file_lets_zipfile_read_any_member(index_server: IndexServer, index_client: IndexClient):
    payload = os.urandom(100_000)
    whl = make_wheel("bigpkg", "2.0", files={"bigpkg/lib.so": payload, "bigpkg/pad.bin": os.urandom(BIG)},
                     compression=zipfile.ZIP_STORED)
    index_server.add(whl)
    (file,) = index_client.files("bigpkg")
    with zipfile.ZipFile(index_client.range_file(file)) as zf:
        assert zf.read("bigpkg/lib.so") == payload
    assert index_server.bytes_sent(whl.filename) < 512 * 1024


def test_metadata_many_in_parallel(index_server: IndexServer, index_client: IndexClient):
    index_server.pep658 = False
    for i in range(12):
        index_server.add(make_wheel(f"p{i}", "1.0", requires_dist=[f"dep{i}"]))
    files = [f for i in range(12) for f in index_client.files(f"p{i}")]
    metas = index_client.metadata_many(files)
    assert [metas[f].requires_dist for f in files] == [(f"dep{i}",) for i in range(12)]


def test_metadata_of_another_distribution_is_rejected(index_server: IndexServer, index_client: IndexClient):
    whl = make_wheel("bigpkg", "2.0")
    impostor = make_wheel("other", "9.9")
    index_server.add(type(whl)(whl.filename, whl.data, impostor.metadata), project="bigpkg")
    (file,) = index_client.files("bigpkg")
    with pytest.raises(Unreachable, match="describes other 9.9, not this file"):
        index_client.metadata(file)


def test_range_file_streams_a_large_member_in_bounded_memory(index_server: IndexServer, index_client):
    from envbuilder.index.rangefile import MAX_SEGMENTS

    payload = os.urandom(3 << 20)
    whl = make_wheel("bigpkg", "2.0", files={"bigpkg/lib.so": payload}, compression=zipfile.ZIP_STORED)
    index_server.add(whl)
    (file,) = index_client.files("bigpkg")
    remote = index_client.range_file(file)
    with zipfile.ZipFile(remote) as zf, zf.open("bigpkg/lib.so") as member:
        chunks = iter(lambda: member.read(16384), b"")
        assert b"".join(chunks) == payload
    assert len(remote._segments) <= MAX_SEGMENTS


@pytest.mark.parametrize("status", [416, 501])
def test_refused_ranges_fall_back_to_a_download(index_server: IndexServer, index_client: IndexClient, status):
    index_server.pep658 = False
    index_server.range_status = status
    whl = make_wheel("bigpkg", "2.0", requires_dist=["six"])
    index_server.add(whl)
    (file,) = index_client.files("bigpkg")
    assert index_client.metadata(file).requires_dist == ("six",)
    assert index_client.metadata_sources == {"download": 1}
