"""A full disk ends in exit 3 naming the folder and the space needed, with no half-written cache
entry or lock left behind; tested on a real 1 MiB tmpfs (needs root to mount one)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from envbuilder.errors import Unreachable
from envbuilder.index import Cache, IndexClient
from tests.conftest import require_tool
from tests.support.dists import make_wheel
from tests.support.index_server import IndexServer


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True, text=True)
    require_tool("a tmpfs mount (root)", done.returncode == 0, f"mount -t tmpfs failed: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path, leave: int) -> None:
    free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
    (folder / "ballast").write_bytes(b"\0" * max(free - leave, 0))


def _leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != "ballast"
                  and (p.name.endswith((".part", ".tmp")) or "/files/" in f"/{p.relative_to(folder)}"))


def test_a_download_that_fills_the_disk_is_exit_3_and_leaves_nothing(small_disk: Path, index_server: IndexServer):
    wheel = make_wheel("big", "1.0", files={"big/blob.bin": os.urandom(3 << 20)}, compression=0)
    index_server.add(wheel)
    cache = Cache(small_disk / "cache")
    with IndexClient({"pypi": index_server.url}, cache, max_workers=2, retries=0) as client:
        (file,) = client.files("big")
        with pytest.raises(Unreachable) as err:
            client.download(file)
    message = str(err.value)
    assert err.value.exit_code == 3
    assert f"no space left on the device holding {small_disk / 'cache'}" in message
    assert "MiB is needed" in message and "is free" in message and "ENVBUILDER_CACHE_DIR" in message
    assert _leftovers(small_disk / "cache") == []


def test_a_cache_entry_that_does_not_fit_is_exit_3_and_not_half_written(small_disk: Path):
    cache = Cache(small_disk / "cache")
    (small_disk / "cache").mkdir()
    _fill(small_disk, 4096)
    with pytest.raises(Unreachable, match="no space left on the device holding .*metadata"):
        cache.write_metadata("a" * 64, b"Metadata-Version: 2.1\n" + b"x" * 200_000, "test")
    assert cache.read_metadata("a" * 64) is None
    assert _leftovers(small_disk / "cache") == []


def test_a_lock_that_does_not_fit_keeps_the_old_one(small_disk: Path):
    from envbuilder.lock.io import write_atomic

    path = small_disk / "locks" / "app.lock.toml"
    path.parent.mkdir()
    path.write_text("old lock\n")
    _fill(small_disk, 4096)
    with pytest.raises(Unreachable) as err:
        write_atomic(path, "new lock " + "x" * 300_000)
    assert err.value.exit_code == 3 and str(small_disk / "locks") in str(err.value)
    assert path.read_text() == "old lock\n"
    assert [p.name for p in path.parent.iterdir()] == ["app.lock.toml"]
