"""Against the user's real default index (pip/uv configuration): `pytest -m network`."""

from __future__ import annotations


import pytest

from envbuilder.errors import Unreachable
from envbuilder.index import Cache, IndexClient
from tests.conftest import require_tool

pytestmark = pytest.mark.network

TORCH = "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl"


@pytest.fixture
def live(tmp_path):
    with IndexClient(cache=Cache(tmp_path / "cache"), retries=2) as client:
        try:
            client.files("pip")
        except Unreachable as exc:
            require_tool("the default package index", False, f"unreachable from here: {exc}")
        yield client


def test_torch_metadata_by_range_reads(live: IndexClient):
    (wheel,) = [f for f in live.files("torch") if f.filename == TORCH]
    assert wheel.size and wheel.size > 500_000_000
    meta = live.metadata(wheel)
    deps = {r.split(";")[0].strip() for r in meta.requires_dist}
    assert "nvidia-cuda-runtime-cu12==12.8.90" in deps and "triton==3.5.1" in deps
    source = next(iter(live.metadata_sources))
    assert source in ("pep658", "range")
    assert live.http.stats.bytes_received < 20_000_000  # never the 900 MB wheel


def test_flash_attn_sdist_needs_static_metadata(live: IndexClient):
    from envbuilder.index import DynamicMetadata

    (sdist,) = [f for f in live.files("flash-attn") if f.filename == "flash_attn-2.8.3.tar.gz"]
    with pytest.raises(DynamicMetadata, match="could not prepare metadata.*static metadata for it in the matrix"):
        live.metadata(sdist)
