"""The venv's layer plan comes from the lock's structure (files, sizes, edges), never from names:
a synthetic lock of made-up names must land in the same groups as the real stack it mimics."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from envbuilder.build.layers import changed_bytes, classify, plan_layers
from envbuilder.build.render import load, render
from envbuilder.lock.model import Artifact, BuildRecipe, Lock, LockedPackage, Source
from tests.build.conftest import fake_sha

LINUX = "cp312-cp312-manylinux_2_28_x86_64"
MB = 10**6


def pkg(name: str, size: int, deps: tuple[str, ...] = (), tag: str = "py3-none-any", requested: str | None = None,
        build: BuildRecipe | None = None, version: str = "1.0") -> LockedPackage:
    stem = name.replace("-", "_")
    if build is not None:
        art = Artifact(f"{stem}-{version}.tar.gz", fake_sha(name + version), size, "sdist")
    else:
        art = Artifact(f"{stem}-{version}-{tag}.whl", fake_sha(name + version), size)
    return LockedPackage(name, version, Source(index="pypi"), (art,), dependencies=deps, requested=requested,
                         build=build)


def synthetic_lock(*packages: LockedPackage) -> Lock:
    packages = packages or (
        pkg("blas-libs", 600 * MB, tag="py3-none-manylinux_2_27_x86_64"),          # a CUDA library
        pkg("dnn-libs", 700 * MB, ("blas-libs",), tag="py3-none-manylinux_2_27_x86_64"),
        pkg("tensorlib", 900 * MB, ("blas-libs", "dnn-libs", "templating"), tag=LINUX),  # torch
        pkg("templating", 1 * MB, ("escaper",)),                                   # jinja2
        pkg("escaper", MB // 10, tag=LINUX),                                       # markupsafe (torch needs it)
        pkg("kernels", 500 * MB, ("tensorlib",), tag=LINUX),                       # sgl-kernel
        pkg("vision", 8 * MB, ("tensorlib", "arrays"), tag=LINUX),                 # torchvision
        pkg("arrays", 16 * MB, tag=LINUX),                                         # numpy (nothing heavy needs it)
        pkg("fastjson", MB, tag=LINUX),                                            # orjson
        pkg("progress", MB // 10),                                                 # tqdm
        pkg("attn", 8 * MB, ("tensorlib",), build=BuildRecipe({}, None, ("tensorlib==1.0",), "sha256:" + "a" * 64)),
        pkg("server", 5 * MB, ("kernels", "vision", "progress", "fastjson", "attn"), requested="==1.0"),
    )
    return Lock(target="synthetic", matrix_digest="sha256:" + "1" * 64, knowledge_digest="sha256:" + "2" * 64,
                environment={"python": "3.12"}, toolchain={"base-image-pinned": False}, indexes=("pypi",),
                packages=tuple(packages))


def test_groups_come_from_structure_not_names() -> None:
    assert classify(synthetic_lock()) == {
        "blas-libs": "native-libraries", "escaper": "native-libraries", "dnn-libs": "native-core",
        "tensorlib": "native-core", "kernels": "native-consumers", "vision": "native-consumers",
        "arrays": "binaries", "fastjson": "binaries", "attn": "source-built", "templating": "pure",
        "progress": "pure", "server": "application",
    }


def test_layers_are_ordered_rarest_change_first_and_skip_empty_groups() -> None:
    lock = synthetic_lock()
    layers = plan_layers(lock, lock.packages)
    assert [layer.group for layer in layers] == ["native-libraries", "native-core", "native-consumers", "binaries",
                                                 "source-built", "pure", "application"]
    assert [layer.index for layer in layers] == list(range(1, 8))
    assert layers[1].size == 1600 * MB
    without_sources = plan_layers(lock, [p for p in lock.packages if p.build is None])
    assert "source-built" not in [layer.group for layer in without_sources]


def test_cap_merges_the_smallest_neighbours_and_keeps_order() -> None:
    lock = synthetic_lock()
    layers = plan_layers(lock, lock.packages, max_layers=4)
    assert len(layers) == 4
    assert [layer.group for layer in layers][:2] == ["native-libraries", "native-core"]
    assert sum(len(layer.packages) for layer in layers) == len(lock.packages)
    assert plan_layers(lock, lock.packages, max_layers=1)[0].group == "application"


def test_matrix_assign_moves_a_package() -> None:
    lock = synthetic_lock()
    layers = plan_layers(lock, lock.packages, assign={"Progress": "application"})
    app = next(layer for layer in layers if layer.group == "application")
    assert {p.name for p in app.packages} == {"server", "progress"}


def test_predicted_bump_cost_counts_only_what_moves() -> None:
    lock = synthetic_lock()
    before = plan_layers(lock, lock.packages)
    bumped = lock.replace_packages(tuple(pkg("server", 5 * MB, p.dependencies, requested="==2.0", version="2.0")
                                         if p.name == "server" else p for p in lock.packages))
    after = plan_layers(bumped, bumped.packages)
    assert changed_bytes(before, after, chain=False) == 5 * MB
    assert changed_bytes(before, after, chain=True) == 5 * MB  # the application is the top layer
    pure_bump = lock.replace_packages(tuple(replace(p, version="2.0", artifacts=pkg("progress", MB // 10, version="2.0").artifacts)
                                            if p.name == "progress" else p for p in lock.packages))
    after = plan_layers(pure_bump, pure_bump.packages)
    pure = MB + MB // 10  # the whole layer is rebuilt: progress and templating
    assert changed_bytes(before, after, chain=False) == pure
    assert changed_bytes(before, after, chain=True) == pure + 5 * MB
    assert changed_bytes(before, before, chain=True) == 0


def test_link_mode_renders_copy_link_for_every_venv_layer(project: Path) -> None:
    chain = render(*load("cpu-llamacpp")).dockerfile
    link = render(*load("cpu-llamacpp"), link=True).dockerfile
    venv_copies = re.findall(r"^COPY (--link )?--from=(layer-\S+) /opt/venv /opt/venv$", link, re.M)
    assert venv_copies and all(flag for flag, _ in venv_copies)
    assert not re.search(r"^COPY --link", chain, re.M)
    assert "# syntax=" not in link  # the engine's own frontend, never a registry image
    assert chain.replace("COPY --from=layer", "COPY --link --from=layer") == link.replace(
        "(COPY --link: each layer independent of those below)", "(an ordered chain: layers below a change stay cached)")


def test_layer_requirements_carry_nothing_lock_wide(project: Path) -> None:
    """A layer file names only its packages: no lock digest, so other bumps keep it cached."""
    rendered = render(*load("cpu-llamacpp"))
    files = {k: v.decode() for k, v in rendered.files.items() if k.startswith("requirements/layers/")}
    assert files
    for text in files.values():
        assert rendered.plan.lock_digest.removeprefix("sha256:") not in text
        assert "--hash=sha256:" in text


@pytest.mark.parametrize("value", ["nonsense", 0])
def test_matrix_layers_settings_are_validated(project: Path, value: object) -> None:
    from envbuilder.errors import BadInput
    from envbuilder.matrix import load_target

    matrix = project / "matrices" / "cpu-llamacpp.yaml"
    text = matrix.read_text()
    extra = f"layers: {{max: {value}}}\n" if isinstance(value, int) else f"layers: {{assign: {{tqdm: {value}}}}}\n"
    matrix.write_text(text + extra)
    with pytest.raises(BadInput) as info:
        load_target("cpu-llamacpp")
    assert "layers" in str(info.value) and "cpu-llamacpp.yaml" in str(info.value)
