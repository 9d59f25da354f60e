"""ABI rules and the resolver hook on the shipped blackwell-sm120 stack (and variations of it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # `tests.` helpers without a rootdir conftest

from envbuilder.abi.hook import AbiHook, cached_inspector
from envbuilder.abi.inspect import inspect_wheel_path
from envbuilder.knowledge import load_knowledge
from envbuilder.lock.model import Artifact, BuildRecipe, Source
from envbuilder.matrix import load_target
from tests.gate.stack import ROOT, TARGET, stack_lock, with_package  # noqa: E402
from tests.support.gitrepo import make_git_repo  # noqa: E402
from tests.conftest import needs_tool  # noqa: E402

K = load_knowledge()
TORCH_210 = "torch-2.10.0-3-cp312-cp312-manylinux_2_28_x86_64.whl"
FA_PREBUILT = "flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl"


def hook_for(lock, target=TARGET, **kw) -> AbiHook:
    return AbiHook(load_target(target, root=ROOT), K, toolchain=lock.toolchain, **kw)


def errors(findings):
    return [f for f in findings if f.severity == "error"]


def by_rule(findings, rule):
    return [f for f in findings if f.rule == rule]


@pytest.fixture(scope="module")
def lock():
    return stack_lock()


def test_shipped_stack_has_no_errors_only_the_flashinfer_warning(lock):
    findings = hook_for(lock).check(lock)
    assert errors(findings) == []
    assert [f.rule for f in findings if f.severity == "warning"] == ["known-issue/flashinfer-sm12x-nvfp4-moe-crash"]


def test_torch_minor_bump_with_sgl_kernel_kept_is_an_abi_error(lock):
    bumped = with_package(lock, "torch", "2.10.0", TORCH_210)
    found = by_rule(errors(hook_for(bumped).check(bumped)), "abi-torch")
    sgl = [f for f in found if f.package == "sgl-kernel"]
    assert len(sgl) == 1
    assert "built against torch 2.9" in sgl[0].why and "torch 2.10.0" in sgl[0].why
    assert sgl[0].reference.startswith("https://")


def test_prebuilt_flash_attn_for_torch_28_beside_torch_291_is_an_abi_error(lock):
    prebuilt = with_package(lock, "flash-attn", "2.8.3+cu12torch2.8cxx11abitrue", FA_PREBUILT, build=None)
    found = errors(hook_for(prebuilt).check(prebuilt))
    assert [(f.package, f.rule) for f in found] == [("flash-attn", "abi-torch")]
    assert "torch 2.8" in found[0].why and "2.9.1" in found[0].why and "wheel-name" in found[0].why


def test_driver_below_cuda_128_floor_is_rejected_for_sm120(lock):
    old = replace(lock, toolchain={**lock.toolchain, "driver-min": "560.35.03"})
    found = errors(hook_for(old).check(old))
    assert [f.rule for f in found] == ["driver-arch"]
    assert "570.26" in found[0].why and "sm_120" in found[0].why and "560.35.03" in found[0].why


def test_driver_between_floor_and_toolkit_driver_warns_through_minor_version_compat(lock):
    old = replace(lock, toolchain={**lock.toolchain, "driver-min": "570.26"})  # sgl-kernel is CUDA 12.9
    findings = hook_for(old).check(old)
    assert errors(findings) == []
    mvc = by_rule(findings, "driver-cuda")
    assert [f.package for f in mvc] == ["sgl-kernel"] and "575.51.03" in mvc[0].why


def test_cuda13_binary_on_a_570_driver_is_an_error_and_inadmissible(lock):
    hopper = load_target("hopper-sm90", root=ROOT)
    hook = AbiHook(hopper, K)
    cu130 = "torch-2.9.1+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"
    reason = hook.admissible("torch", "2.9.1+cu130", cu130)
    assert reason and "CUDA 13.0" in reason and "580" in reason
    assert hook.admissible("torch", "2.9.1", "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl") is None


def test_pretorch_28_wheel_cannot_run_on_sm120_and_is_inadmissible(lock):
    hook = hook_for(lock)
    reason = hook.admissible("torch", "2.7.0", "torch-2.7.0-cp312-cp312-manylinux_2_28_x86_64.whl")
    assert "sm_120" in reason and "no PTX" in reason
    old = with_package(lock, "torch", "2.7.0", "torch-2.7.0-cp312-cp312-manylinux_2_28_x86_64.whl")
    rules = {f.rule for f in errors(hook.check(old))}
    assert {"arch-coverage", "known-issue/torch-pre-2.8-no-sm120"} <= rules


def test_sgl_kernel_covers_sm120_only_by_its_sm120a_sass(lock):
    hook = hook_for(lock)
    spark = replace(lock, toolchain={**lock.toolchain, "gpu-arch": "sm_121"})  # DGX Spark: 12.1
    found = [f for f in errors(hook_for(spark).check(spark)) if f.rule == "arch-coverage"]
    assert {f.package for f in found} == {"sgl-kernel"}
    assert "sm_121" in found[0].why
    assert hook.admissible("sgl-kernel", "0.3.21", "sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl") is None


def test_extra_requirements_express_required_torch(lock):
    hook = hook_for(lock)
    [(req, why)] = hook.extra_requirements("sgl-kernel", "0.3.21", "sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl")
    assert req == "torch>=2.9,<2.10" and "sgl-kernel 0.3.21 was built against torch 2.9 (knowledge:" in why
    [(req, why)] = hook.extra_requirements("flash-attn", "2.8.3+cu12torch2.8cxx11abitrue", FA_PREBUILT)
    assert req == "torch>=2.8,<2.9" and FA_PREBUILT in why
    assert hook.extra_requirements("flash-attn", "2.8.3", None) == []          # a source build adapts
    assert hook.extra_requirements("tqdm", "4.67.1", "tqdm-4.67.1-py3-none-any.whl") == []


def test_source_build_takes_its_build_environment_facets(lock):
    hook = hook_for(lock)
    facets = hook.facets("flash-attn", "2.8.3", None, {"FLASH_ATTN_CUDA_ARCHS": "120"},
                         build_requires=("torch==2.9.1",))
    assert (facets.torch, facets.cuda, facets.cxx11_abi, facets.sass, facets.evidence) == \
        ("2.9", "12.8", True, ("sm_120",), "build")
    assert hook.facets("tqdm", "4.67.1", "tqdm-4.67.1-py3-none-any.whl") is None


def test_build_toolkit_major_mismatch_errors_minor_warns(lock):
    fa = lock.package("flash-attn")
    for cuda, severity in (("13.0", "error"), ("12.9", "warning")):
        changed = with_package(lock, "flash-attn", fa.version, build=replace(fa.build, cuda=cuda))
        found = by_rule(hook_for(changed).check(changed), "build-toolkit")
        assert [(f.package, f.severity) for f in found] == [("flash-attn", severity)]


def test_source_build_with_a_toolkit_too_old_for_the_arch(lock):
    fa = lock.package("flash-attn")
    old = with_package(lock, "flash-attn", fa.version, build=replace(fa.build, cuda="12.6"))
    found = by_rule(errors(hook_for(old).check(old)), "arch-coverage")
    assert "CUDA 12.6 cannot compile sm_120" in found[0].why


def test_known_issue_conditions_arch_and_model(lock):
    old_sglang = with_package(lock, "sglang", "0.5.8.post1", "sglang-0.5.8.post1-py3-none-any.whl")
    found = {f.rule for f in errors(hook_for(old_sglang).check(old_sglang))}
    assert "known-issue/sglang-sm120-shared-memory" in found
    on_hopper = replace(old_sglang, toolchain={**old_sglang.toolchain, "gpu-arch": "sm_90", "driver-min": "570.26"})
    assert not by_rule(hook_for(on_hopper, "hopper-sm90").check(on_hopper), "known-issue/sglang-sm120-shared-memory")
    # the GLM-5 rules apply because the serve profile's model is GLM-5, and not on the hopper target's
    old_tf = with_package(lock, "transformers", "4.57.1", "transformers-4.57.1-py3-none-any.whl")
    glm = [f for f in errors(hook_for(old_tf).check(old_tf)) if f.rule == "known-issue/glm5-needs-transformers-5.2"]
    assert [f.package for f in glm] == ["transformers"] and "glm_moe_dsa" in glm[0].why
    assert "glm-5" in str(load_target(TARGET, root=ROOT).serve.model).lower()


def _git_sglang(lock, repo, commit):
    pkg = lock.package("sglang")
    return with_package(lock, "sglang", "0.5.9.dev0", source=Source(git=repo.url, commit=commit),
                        artifacts=(), dependencies=pkg.dependencies)


@pytest.fixture
def fix_knowledge(tmp_path, monkeypatch):
    """A repository whose history contains the fix, and knowledge naming the fix commit."""
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    repo = make_git_repo(tmp_path / "sglang", [{"README": "base\n"}])
    before = repo.commits[0]
    fix = repo.commit({"extend_attention.py": "sm120 tiles\n"}, "SM120 shared memory fix (#14311)")
    after = repo.commit({"README": "later\n"})
    data = K.model_dump(mode="json")
    for issue in data["known_issues"]:
        if issue["id"] == "sglang-sm120-shared-memory":
            issue["fix"]["commit"] = fix
    return type(K).model_validate(data), repo, before, after


def test_git_source_fix_checked_by_commit_ancestry(lock, fix_knowledge):
    knowledge, repo, before, after = fix_knowledge
    target = load_target(TARGET, root=ROOT)
    rule = "known-issue/sglang-sm120-shared-memory"
    with_fix = _git_sglang(lock, repo, after)
    assert not by_rule(AbiHook(target, knowledge, toolchain=lock.toolchain).check(with_fix), rule)
    without = _git_sglang(lock, repo, before)
    found = by_rule(AbiHook(target, knowledge, toolchain=lock.toolchain).check(without), rule)
    assert [f.severity for f in found] == ["error"] and "does not contain fix" in found[0].why


def test_git_source_fix_unverified_when_the_repository_is_unreachable(lock, fix_knowledge, tmp_path):
    knowledge, repo, before, after = fix_knowledge
    gone = tmp_path / "moved"
    shutil.move(str(repo.path), gone)
    found = AbiHook(load_target(TARGET, root=ROOT), knowledge, toolchain=lock.toolchain).check(
        _git_sglang(lock, repo, after))
    unverified = by_rule(found, "known-issue-unverified/sglang-sm120-shared-memory")
    assert [f.severity for f in unverified] == ["warning"] and "cannot reach" in unverified[0].why


def test_recorded_facets_are_never_trusted(lock):
    sgl = lock.package("sgl-kernel")
    lying = replace(sgl, facets=replace(sgl.facets, torch="2.10"))
    bumped = with_package(lock, "torch", "2.10.0", TORCH_210)
    bumped = bumped.replace_packages(tuple(lying if p.name == "sgl-kernel" else p for p in bumped.packages))
    findings = hook_for(bumped).check(bumped)
    assert any(f.package == "sgl-kernel" and f.rule == "abi-torch" for f in errors(findings))
    assert any(f.package == "sgl-kernel" and f.rule == "facets-recorded" for f in findings)


# ------------------------------------------------------------------ binary evidence beats knowledge

NVCC = shutil.which("nvcc")


@needs_tool("nvcc", NVCC, "not on PATH (.ci/parts/20-cuda-tools.sh puts /usr/local/cuda/bin on it)")
def test_binary_evidence_beats_knowledge(lock, tmp_path, monkeypatch):
    """A wheel named like sgl-kernel 0.3.21 whose .so only carries sm_90 SASS: the bytes win."""
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n"
                   "extern \"C\" void launch(float *x) { k<<<1, 32>>>(x); }\n")
    so = tmp_path / "common_ops.abi3.so"
    subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_90,code=sm_90",
                    str(src), "-o", str(so)], check=True, capture_output=True)
    filename = "sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl"
    whl = tmp_path / filename
    with zipfile.ZipFile(whl, "w") as zf:
        zf.write(so, "sgl_kernel/sm100/common_ops.abi3.so")
        zf.writestr("sgl_kernel-0.3.21.dist-info/WHEEL", "Wheel-Version: 1.0\nTag: cp310-abi3-linux_x86_64\n")
    report = inspect_wheel_path(whl)                     # fills the cache, keyed by the wheel's sha256
    from envbuilder.abi.cache import file_sha256
    with whl.open("rb") as fh:
        digest = file_sha256(fh)
    swapped = with_package(lock, "sgl-kernel", "0.3.21", filename,
                           artifacts=(Artifact(filename, digest, whl.stat().st_size),))
    hook = hook_for(swapped, inspector=cached_inspector)
    facets = hook.facets("sgl-kernel", "0.3.21", filename, sha256=digest)
    assert facets.evidence == "binary" and facets.sass == report.sass_archs == ("sm_90",)
    assert facets.torch == "2.9"                         # the binary says nothing of torch: knowledge fills it
    found = [f for f in errors(hook.check(swapped)) if f.package == "sgl-kernel"]
    assert "arch-coverage" in {f.rule for f in found}
    assert "evidence: binary" in by_rule(found, "arch-coverage")[0].why
    # without the inspector, knowledge alone (sm_120a) says it runs
    assert not by_rule(hook_for(swapped).check(swapped), "arch-coverage")
