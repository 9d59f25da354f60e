"""Render: the same lock gives the same bytes, host-free, with each decision as a checkable line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envbuilder.build.render import load, render, write_context
from envbuilder.errors import BadInput
from envbuilder.lock import write_lock
from envbuilder.matrix import load_target
from tests.build.conftest import blackwell_lock, bump, cpu_lock


def stage_text(dockerfile: str, stage: str) -> str:
    """The lines of one stage, from its FROM to the next FROM."""
    match = re.search(rf"^FROM \S+ AS {re.escape(stage)}\n(.*?)(?=^FROM |\Z)", dockerfile, re.S | re.M)
    assert match, f"no stage {stage}"
    return match[0]


def layer_stage(dockerfile: str, group: str) -> str:
    """The stage of the venv layer holding `group` (its number depends on which groups are filled)."""
    match = re.search(rf"^FROM \S+ AS (layer-\d+-{re.escape(group)})$", dockerfile, re.M)
    assert match, f"no layer {group}"
    return stage_text(dockerfile, match[1])


def test_same_lock_renders_byte_identical(project: Path, tmp_path: Path) -> None:
    first = write_context(render(*load("blackwell-sm120")), tmp_path / "a")
    second = write_context(render(*load("blackwell-sm120")), tmp_path / "b")
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    assert all((first / f).read_bytes() == (second / f).read_bytes() for f in files)


def test_context_holds_no_host_facts(project: Path) -> None:
    rendered = render(*load("cpu-llamacpp"))
    from envbuilder.index.config import default_index_url
    from tests.build.conftest import REPO

    host = [str(REPO), str(project), default_index_url()]
    for rel, data in rendered.files.items():
        if rel.startswith("tool/"):
            continue
        text = data.decode()
        assert not [h for h in host if h and h in text], rel
    # the index arrives as a BuildKit secret for the install steps, never as ARG/--index-url
    assert "--index-url" not in rendered.dockerfile and "ARG INDEX_URL" not in rendered.dockerfile
    assert "--mount=type=secret,id=index_url" in rendered.dockerfile


def test_blackwell_dockerfile_encodes_the_cuda_gotchas(project: Path) -> None:
    text = render(*load("blackwell-sm120")).dockerfile
    assert re.search(r"^FROM nvidia/cuda:12\.8\.1-cudnn-devel-ubuntu24\.04@sha256:[0-9a-f]{64} AS base$", text, re.M)
    fa = stage_text(text, "build-flash-attn")
    assert 'ENV CUDA_HOME="/usr/local/cuda-12.8"' in fa
    assert 'ENV FLASH_ATTENTION_FORCE_BUILD="TRUE"' in fa
    assert 'ENV FLASH_ATTN_CUDA_ARCHS="120"' in fa
    assert 'ENV TORCH_CUDA_ARCH_LIST="12.0"' in fa
    assert 'ENV NVCC_THREADS="4"' in fa
    assert "export MAX_JOBS=\"${MAX_JOBS:-$(awk" in fa and "/proc/meminfo" in fa
    assert "--no-build-isolation" in fa and "--require-hashes" in fa
    layers = re.findall(r"^FROM installer AS (layer-\S+)$", text, re.M)
    assert len(layers) >= 3
    for stage in layers:
        layer = stage_text(text, stage)
        assert ("--require-hashes" in layer or "--no-index" in layer) and "--no-deps" in layer
    assert "--no-index \\\n      /mnt/build-flash-attn/*.whl" in layer_stage(text, "source-built")
    runtime = stage_text(text, "runtime")
    assert "ENV CUDA_HOME=/usr/local/cuda-12.8" in runtime
    assert 'RUN "$CUDA_HOME/bin/nvcc" --version' in runtime  # FlashInfer JIT needs nvcc at run time
    assert "cuda-13" not in text and "/usr/local/cuda/" not in text
    assert 'CMD ["envbuilder", "serve", "blackwell-sm120"]' in runtime
    assert "sglang.launch_server --model-path lukealonso/GLM-5-NVFP4" in runtime
    assert "# syntax=" not in text


def test_source_build_stage_sees_only_its_abi_inputs(project: Path) -> None:
    lock, target = load("blackwell-sm120")
    before = render(lock, target)
    after = render(bump(lock, "transformers", "5.3.1"), target)
    stage = "requirements/build-flash-attn/"
    assert {k: v for k, v in before.files.items() if k.startswith(stage)} == \
           {k: v for k, v in after.files.items() if k.startswith(stage)}
    assert stage_text(before.dockerfile, "build-flash-attn") == stage_text(after.dockerfile, "build-flash-attn")
    assert before.files["requirements/venv.txt"] != after.files["requirements/venv.txt"]
    changed = {k for k in before.files.keys() | after.files.keys() if k.startswith("requirements/layers/")
               and before.files.get(k) != after.files.get(k)}
    assert len(changed) == 1 and changed.pop().endswith("-pure.txt")  # transformers is pure: one layer moves
    inputs = before.files[stage + "inputs.txt"].decode()
    assert "torch==2.9.1" in inputs and "nvidia-cublas-cu12==12.8.4.1" in inputs and "transformers" not in inputs
    torch_bumped = render(bump(lock, "torch", "2.9.2"), target)
    assert torch_bumped.files[stage + "inputs.txt"] != before.files[stage + "inputs.txt"]


def test_venv_requirements_are_hashed_and_skip_source_builds(project: Path) -> None:
    text = render(*load("blackwell-sm120")).files["requirements/venv.txt"].decode()
    assert "torch==2.9.1" in text and "--hash=sha256:" in text
    assert not [line for line in text.splitlines() if line.startswith("flash-attn")]


def test_cpu_target_builds_llama_server_in_its_own_stage(project: Path) -> None:
    rendered = render(*load("cpu-llamacpp"))
    stage = stage_text(rendered.dockerfile, "build-llama-cpp-python")
    assert "fetch.py" in stage and "--target llama-server" in stage and "vendor/llama.cpp" in stage and "-DGGML_NATIVE=OFF" in stage
    assert 'ENV CMAKE_ARGS="-DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF"' in stage
    assert "COPY --from=build-llama-cpp-python /out/bin/llama-server /usr/local/bin/llama-server" in rendered.dockerfile
    assert '"kind": "binary"' in rendered.files["image/image.json"].decode()
    assert "libgomp1" in stage_text(rendered.dockerfile, "runtime")  # llama-server loads libgomp.so.1
    assert "base image is a tag" in rendered.dockerfile


def test_labels_carry_lock_digest_target_and_epoch(project: Path) -> None:
    lock, target = load("cpu-llamacpp")
    text = render(lock, target).dockerfile
    assert f'io.envbuilder.lock-digest="{lock.digest}"' in text
    assert 'io.envbuilder.target="cpu-llamacpp"' in text
    assert 'org.opencontainers.image.created="2026-02-13T16:26:40Z"' in text
    assert "SOURCE_DATE_EPOCH=1771000000" in text


def test_cuda_major_mismatch_is_bad_input(project: Path) -> None:
    lock = blackwell_lock()
    lock = type(lock)(**{**lock.__dict__, "toolchain": {**lock.toolchain, "cuda": "13.0"}})
    with pytest.raises(BadInput, match="same CUDA major"):
        render(lock, load_target("blackwell-sm120"))


def test_unknown_binary_target_names_the_matrix_key(project: Path) -> None:
    path = project / "matrices" / "cpu-llamacpp.yaml"
    path.write_text(path.read_text().replace("target: llama-server", "target: llama-cli"))
    with pytest.raises(BadInput, match=r"cpu-llamacpp\.yaml:\d+.*build\.target.*llama-cli"):
        render(cpu_lock(), load_target("cpu-llamacpp"))


def test_write_context_refuses_a_foreign_directory(project: Path, tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(BadInput, match="not an envbuilder build context"):
        write_context(render(*load("cpu-llamacpp")), tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").exists()


def test_missing_lock_is_bad_input(project: Path) -> None:
    (project / "locks" / "cpu-llamacpp.lock.toml").unlink()
    with pytest.raises(BadInput, match="envbuilder lock"):
        load("cpu-llamacpp")
