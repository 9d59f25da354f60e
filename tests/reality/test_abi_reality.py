"""Prediction = reality: envbuilder's link check against what ld.so does in a clean Debian 12
container, on real wheels from the index (tests/reality/pairs.py).

The CI subset (four pairs around torch 2.14.1: a symbol break, a library break, two that load)
runs under ENVBUILDER_CI=1, or locally once its wheels are cached (`python -m
tests.reality.harness --fetch ci`, ~3 GB) or with ENVBUILDER_LARGE_DOWNLOADS=1. The full table
(`reality_full`, ~10 GB of wheels) runs with ENVBUILDER_REALITY_FULL=1; `bench/abi-reality/run.py`
runs it and rewrites docs/abi-reality.md.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import in_ci, require_tool
from tests.reality import harness
from tests.reality.compare import compare
from tests.reality.pairs import PAIRS, Pair, ci_pairs

pytestmark = [pytest.mark.docker, pytest.mark.reality]


def _cached(pairs: tuple[Pair, ...]) -> bool:
    return all(harness.find_wheel(p.consumer, p.consumer_version) and harness.find_wheel(p.provider, p.provider_version)
               for p in pairs)


def _require(pairs: tuple[Pair, ...]) -> None:
    require_tool("docker", shutil.which(harness.docker_cli()) or Path(harness.docker_cli()).is_file(),
                 "install the docker engine (.ci/parts/10-docker.sh)")
    require_tool("gcc", shutil.which("gcc"), "apt-get install gcc (the libcuda.so.1 stub is compiled)")
    if not (in_ci() or _cached(pairs) or os.environ.get("ENVBUILDER_LARGE_DOWNLOADS") == "1"):
        pytest.skip("the pairs' wheels are not cached (~3 GB): run `python -m tests.reality.harness --fetch ci` "
                    "or set ENVBUILDER_LARGE_DOWNLOADS=1")


@pytest.fixture(scope="module")
def linkage_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Summaries are keyed by the wheel's sha256, so they may outlive the test run like the wheels."""
    return harness.cache_dir().parent / "envbuilder-cache"


def _check(pairs: tuple[Pair, ...], linkage_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _require(pairs)
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(linkage_cache))
    realities = harness.run_reality(pairs)
    failures = []
    for pair in pairs:
        result = compare(realities[pair.key])
        if not result.matches:
            failures.append(f"{pair.key}:\n{result.mismatch()}")
    assert not failures, "prediction != reality\n" + "\n".join(failures)
    kinds = {kind for pair in pairs for _obj, kind, _item in realities[pair.key].failures()}
    if pairs == ci_pairs():
        # the subset proves what it claims: a symbol break, a library break, and pairs that load
        assert {"undefined-symbol", "missing-library"} <= kinds
        assert sum(realities[p.key].links() for p in pairs) >= 2


def test_ci_pairs_prediction_equals_reality(linkage_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(ci_pairs(), linkage_cache, monkeypatch)


@pytest.mark.reality_full
@pytest.mark.timeout(5400)
@pytest.mark.skipif(os.environ.get("ENVBUILDER_REALITY_FULL") != "1",
                    reason="the full table downloads ~10 GB: ENVBUILDER_REALITY_FULL=1 (or bench/abi-reality/run.py)")
def test_all_pairs_prediction_equals_reality(linkage_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(PAIRS, linkage_cache, monkeypatch)
