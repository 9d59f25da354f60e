"""The hook inside the real resolver: `envbuilder lock` against a local index with real wheels/sdists.

When flash-attn 2.8.3 is offered both as a prebuilt `+cu12torch2.8cxx11abiTRUE` wheel and as an
sdist, and the matrix pins torch 2.9.1, the wheel's torch requirement cannot hold: the resolver
must take the source build (which takes its build environment's facets), and a matrix that
forbids the source build must fail with the facet named.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.resolve.project import PINNED_IMAGE, project  # noqa: E402,F401  (fixture)
from tests.support.dists import make_sdist, make_wheel  # noqa: E402
from tests.support.fixtures import default_index, index_server  # noqa: E402,F401  (fixtures)

CP312 = "cp312-cp312-manylinux_2_28_x86_64"
FA_WHEEL_VERSION = "2.8.3+cu12torch2.8cxx11abiTRUE"


def _matrix(flash_attn: str) -> str:
    return (
        "schema: 1\ntarget: sm120-mini\n"
        "hardware:\n  gpu: {name: RTX PRO 6000, arch: sm_120, count: 1, memory_gib: 96}\n"
        "  driver: {min: \"590.48.01\"}\n"
        "platform: {os: linux, machine: x86_64, libc: glibc_2.39, python: \"3.12\"}\n"
        f"toolchain: {{cuda: \"12.8\", base_image: \"{PINNED_IMAGE}\"}}\n"
        "packages:\n  torch: \"==2.9.1\"\n" + flash_attn
    )


@pytest.fixture
def stack_index(default_index):
    default_index.add(make_wheel("torch", "2.9.1", tags=CP312))
    default_index.add(make_wheel("einops", "0.8.1"))
    default_index.add(make_sdist("flash_attn", "2.8.3", requires_dist=["torch", "einops"]))
    default_index.add(make_wheel("flash_attn", FA_WHEEL_VERSION, requires_dist=["torch", "einops"], tags=CP312),
                      project="flash-attn")
    for tool in ("wheel", "packaging", "ninja", "psutil"):  # what a no-isolation torch-extension build imports
        default_index.add(make_wheel(tool, "1.0"))
    return default_index


def test_resolver_takes_the_source_build_when_the_prebuilt_wheel_needs_torch_28(project, stack_index):
    (project.root / "matrices" / "sm120-mini.yaml").write_text(_matrix('  flash-attn: "==2.8.3"\n'))
    result = project.run("lock", "sm120-mini")
    assert result.rc == 0, result.text
    fa = project.read_lock("sm120-mini").package("flash-attn")
    assert [a.kind for a in fa.artifacts] == ["sdist"]
    assert fa.facets is not None and fa.facets.evidence == "build" and fa.facets.torch == "2.9"
    assert fa.build.tools == ("ninja==1.0", "packaging==1.0", "psutil==1.0", "setuptools==75.0.0", "wheel==1.0")


def test_only_the_prebuilt_wheel_allowed_fails_naming_the_torch_facet(project, stack_index):
    spec = f'  flash-attn: "=={FA_WHEEL_VERSION}"\n'
    (project.root / "matrices" / "sm120-mini.yaml").write_text(_matrix(spec))
    result = project.run("lock", "sm120-mini")
    assert result.rc == 1
    assert "torch 2.8" in result.text and "2.9.1" in result.text and "Traceback" not in result.text, result.text
