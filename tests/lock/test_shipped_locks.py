"""The committed locks in locks/ match their matrices and the knowledge base (what CI's `lock --check` runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envbuilder.lock import dumps, read_lock
from envbuilder.matrix import load_target, shipped_targets
from envbuilder.resolve.locker import stale_reasons

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", shipped_targets(REPO))
def test_committed_lock_is_current(name: str):
    path = REPO / "locks" / f"{name}.lock.toml"
    assert stale_reasons(load_target(name, REPO), path) == []
    lock = read_lock(path)
    assert dumps(lock) == path.read_text()
    for package in lock.packages:
        assert package.artifacts or package.source.git, package.name
        for artifact in package.artifacts:
            assert len(artifact.sha256) == 64 and artifact.size, (package.name, artifact)
        if package.source.git:
            assert len(package.source.commit or "") == 40, package.name


def test_blackwell_lock_holds_the_stack():
    """The issue's facts, read from the committed lock (no network)."""
    from packaging.version import Version

    lock = read_lock(REPO / "locks" / "blackwell-sm120.lock.toml")
    assert 150 <= len(lock.packages) <= 200  # the full closure (uv resolves 169 for sglang 0.5.8.post1)
    version = {p.name: p.version for p in lock.packages}
    assert version["torch"] == "2.9.1" and version["triton"] == "3.5.1" and version["sgl-kernel"] == "0.3.21"
    assert version["nvidia-cuda-runtime-cu12"].startswith("12.8.")
    assert Version(version["transformers"]) >= Version("5.2") and Version(version["sglang"]) >= Version("0.5.9")
    assert lock.package("transformers").overridden  # sglang's own pin was replaced
    torch = lock.package("torch")
    assert torch.facets.cuda == "12.8" and "sm_120" in torch.facets.sass
    flash = lock.package("flash-attn")
    (sdist,) = flash.artifacts
    assert flash.version == "2.8.3" and sdist.kind == "sdist" and len(sdist.sha256) == 64
    assert flash.build.env["FLASH_ATTN_CUDA_ARCHS"] == "120" and flash.build.cuda == "12.8"
    assert lock.toolchain["base-image-pinned"] and "@sha256:" in lock.toolchain["base-image"]
