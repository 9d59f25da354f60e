"""`envbuilder gate` as a user runs it: a real process, lock files and real git repositories."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.gate.stack import LOCK, TARGET, committed, gate, stack_lock, torch_bump, tqdm_bump, with_package, write
from tests.support.gitrepo import make_git_repo

FA_PREBUILT = "flash_attn-2.8.3+cu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl"


def _flash_attn_prebuilt(lock):
    return with_package(lock, "flash-attn", "2.8.3+cu12torch2.8cxx11abitrue", FA_PREBUILT, build=None)


def _driver(lock):
    return replace(lock, toolchain={**lock.toolchain, "driver-min": "560.35.03"})


def _driver_mvc(lock):
    return replace(lock, toolchain={**lock.toolchain, "driver-min": "570.26"})


DRIVER_CHANGED = ("*", "toolchain-changed")  # listed for review besides what the rules say
MVC = {("torch", "driver-cuda"), ("sgl-kernel", "driver-cuda"), ("flash-attn", "driver-cuda")}
CASES = {
    # name: (edit, verdict, exit code, new errors as (package, rule), new warnings)
    "torch-bump-keeps-sgl-kernel": (torch_bump, "reject", 1, {("sgl-kernel", "abi-torch")}, set()),
    "flash-attn-prebuilt-torch28": (_flash_attn_prebuilt, "reject", 1, {("flash-attn", "abi-torch")}, set()),
    "driver-below-570.26": (_driver, "reject", 1, {("*", "driver-arch")}, MVC | {DRIVER_CHANGED}),
    "driver-570-mvc": (_driver_mvc, "warn", 0, set(), {("sgl-kernel", "driver-cuda"), DRIVER_CHANGED}),
    "tqdm-patch": (tqdm_bump, "pass", 0, set(), set()),
}


@pytest.fixture(scope="module")
def base_lock():
    return stack_lock()


@pytest.mark.parametrize("case", CASES)
def test_verdicts_on_the_shipped_stack(case, project, base_lock, published):
    edit, verdict, code, errors, warnings = CASES[case]
    base = write(base_lock, project / "base.lock.toml")
    head = write(published(edit(base_lock)), project / LOCK)
    done = gate("--base", str(base), "--head", str(head), "--format", "json", cwd=project)
    assert done.returncode == code, done.stderr
    result = json.loads(done.stdout)
    assert result["verdict"] == verdict
    [target] = result["targets"]
    new = {s: {(f["package"], f["rule"]) for f in target["findings"] if f["new"] and f["severity"] == s}
           for s in ("error", "warning")}
    assert (new["error"], new["warning"]) == (errors, warnings)
    existing = {f["rule"] for f in target["findings"] if not f["new"]}
    assert existing == {"known-issue/flashinfer-sm12x-nvfp4-moe-crash"}


def test_torch_bump_names_sgl_kernel_and_torch_29_in_every_format(project, base_lock, published, gate_in_process):
    base = write(base_lock, project / "base.lock.toml")
    write(published(torch_bump(base_lock)), project / LOCK)
    text = gate_in_process("--base", str(base), cwd=project)                     # --head defaults to the project's lock
    assert text.returncode == 1 and "REJECT" in text.stdout
    assert "sgl-kernel 0.3.21 was built against torch 2.9" in text.stdout
    markdown = gate_in_process("--base", str(base), "--format", "markdown", cwd=project).stdout
    assert markdown.startswith("## envbuilder gate: ❌ reject")
    assert "| torch | upgraded minor | 2.9.1 | 2.10.0 | binary |" in markdown
    assert "| ❌ error | sgl-kernel | `abi-torch` |" in markdown
    github = gate_in_process("--base", str(base), "--format", "github", cwd=project).stdout.splitlines()
    sgl = [line for line in github if "(sgl-kernel)" in line]
    assert sgl[0].startswith(f"::error file={project / LOCK},line=")
    line = int(sgl[0].split("line=")[1].split(",")[0])
    assert (project / LOCK).read_text().splitlines()[line - 1] == 'name = "sgl-kernel"'
    assert github[-1] == "::notice title=envbuilder gate::verdict reject"


def test_changes_are_classified(project, base_lock, published, gate_in_process):
    head = tqdm_bump(torch_bump(base_lock))
    head = with_package(head, "orjson-tiny", "1.0.0", "orjson_tiny-1.0.0-py3-none-any.whl")
    head = head.replace_packages(tuple(p for p in head.packages if p.name != "einops"))
    major = with_package(head, "transformers", "6.0.0", "transformers-6.0.0-py3-none-any.whl")
    base = write(base_lock, project / "base.lock.toml")
    write(published(major), project / LOCK)
    result = json.loads(gate_in_process("--base", str(base), "--format", "json", cwd=project).stdout)
    changes = {c["package"]: (c["kind"], c["level"], c["binary"]) for c in result["targets"][0]["changes"]}
    assert changes == {
        "einops": ("removed", None, False),
        "flash-attn": ("rebuilt", None, True),             # its recipe now names torch 2.10.0
        "orjson-tiny": ("added", None, False),
        "torch": ("upgraded", "minor", True),
        "tqdm": ("upgraded", "patch", False),
        "transformers": ("upgraded", "major", False),
    }


def test_strict_makes_warn_fail(project, base_lock, published, gate_in_process):
    base = write(base_lock, project / "base.lock.toml")
    write(published(_driver_mvc(base_lock)), project / LOCK)
    assert gate_in_process("--base", str(base), cwd=project).returncode == 0
    strict = gate_in_process("--base", str(base), "--strict", cwd=project)
    assert strict.returncode == 1 and "WARN" in strict.stdout


def test_the_head_lock_facets_are_recomputed_not_trusted(project, base_lock, published, gate_in_process):
    """A head lock that claims sgl-kernel was built for torch 2.10 is still rejected."""
    head = published(torch_bump(base_lock))
    sgl = head.package("sgl-kernel")
    lying = replace(sgl, facets=replace(sgl.facets, torch="2.10"))
    head = head.replace_packages(tuple(lying if p.name == "sgl-kernel" else p for p in head.packages))
    base = write(base_lock, project / "base.lock.toml")
    write(head, project / LOCK)
    result = json.loads(gate_in_process("--base", str(base), "--format", "json", cwd=project).stdout)
    rules = {(f["package"], f["rule"]) for f in result["targets"][0]["findings"]}
    assert {("sgl-kernel", "abi-torch"), ("sgl-kernel", "facets-recorded")} <= rules
    assert result["verdict"] == "reject"


def test_json_schema_is_stable(project, base_lock, published, gate_in_process):
    base = write(base_lock, project / "base.lock.toml")
    write(published(torch_bump(base_lock)), project / LOCK)
    result = json.loads(gate_in_process("--base", str(base), "--format", "json", cwd=project).stdout)
    assert set(result) == {"schema", "verdict", "strict", "targets", "counts"} and result["schema"] == 1
    target = result["targets"][0]
    assert set(target) == {"target", "base", "head", "base_digest", "head_digest", "verdict", "changes",
                           "findings", "validated"}
    assert set(target["findings"][0]) == {"package", "rule", "severity", "why", "reference", "new", "file", "line"}
    assert set(target["changes"][0]) == {"package", "kind", "base", "head", "level", "binary"}
    assert set(target["validated"]) == {"head", "base", "entries", "note"}


def test_a_prose_entry_naming_the_lock_digest_is_shown_but_never_counts(project, base_lock, published,
                                                                        gate_in_process):
    """Prose names no report, so nothing can re-check it (issue 15): only records count."""
    head = published(tqdm_bump(base_lock))
    matrix = project / "matrices" / f"{TARGET}.yaml"
    text = matrix.read_text()
    assert '\n    by: "seed workload' in text  # the validated entry is a block mapping
    matrix.write_text(text.replace('\n    by: "seed workload', f'\n    lock: "{head.digest}"\n    by: "seed workload'))
    base = write(base_lock, project / "base.lock.toml")
    write(head, project / LOCK)
    result = json.loads(gate_in_process("--base", str(base), "--format", "json", cwd=project).stdout)
    validated = result["targets"][0]["validated"]
    assert validated["head"] is False and validated["note"].startswith("no verified passing record")
    assert any(e.startswith("matrix prose, unverifiable, not counted") and "3,740 total tok/s" in e
               for e in validated["entries"])


@pytest.mark.parametrize("args, message", [
    ((), "exactly one of --base"),
    (("--base", "a.lock.toml", "--base-ref", "main"), "exactly one of --base"),
    (("--base", "missing.lock.toml"), "missing.lock.toml: no such lock file"),
    (("--base-ref", "HEAD"), "not inside a git repository"),
])
def test_bad_input_exits_2_without_traceback(args, message, project):
    done = gate(*args, cwd=project)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr


def test_a_corrupt_head_lock_is_bad_input(project, base_lock, gate_in_process):
    base = write(base_lock, project / "base.lock.toml")
    (project / LOCK).write_text("lock-version = 1\n[[package]\n")
    done = gate_in_process("--base", str(base), cwd=project)
    assert done.returncode == 2 and LOCK in done.stderr.replace("\n", "") and "Traceback" not in done.stderr


# ------------------------------------------------------------------ --base-ref on a real repository

def test_base_ref_reject_and_pass(project, base_lock, published, gate_in_process):
    repo = committed(project, base_lock, published(torch_bump(base_lock)))
    done = gate_in_process("--base-ref", "main", "--format", "json", cwd=project)       # working tree vs main
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["targets"][0]["base"] == f"main:{LOCK}" and result["targets"][0]["head"] == LOCK
    repo.commit({LOCK: write(published(tqdm_bump(base_lock)), project / LOCK).read_text()})
    assert gate_in_process("--base-ref", "HEAD~1", cwd=project).returncode == 0
    bad = gate_in_process("--base-ref", "origin/nope", cwd=project)
    assert bad.returncode == 2 and "fetch-depth: 0" in bad.stderr


def test_base_ref_judges_the_base_with_the_matrices_of_its_ref(project, base_lock, published, gate_in_process):
    """Locks that record no driver: the PR lowers the matrix's floor, and only the head is judged by it."""
    unrecorded = replace(base_lock, toolchain={k: v for k, v in base_lock.toolchain.items() if k != "driver-min"})
    committed(project, unrecorded, published(tqdm_bump(unrecorded), unrecorded))
    matrix = project / "matrices" / f"{TARGET}.yaml"
    matrix.write_text(matrix.read_text().replace('min: "590.48.01"', 'min: "560.35.03"'))
    result = json.loads(gate_in_process("--base-ref", "main", "--format", "json", cwd=project).stdout)
    assert result["verdict"] == "reject"
    assert [f["rule"] for f in result["targets"][0]["findings"] if f["new"] and f["severity"] == "error"] == \
        ["driver-arch"]


def test_a_lock_added_in_the_head_is_judged_whole(project, base_lock, published, gate_in_process):
    make_git_repo(project, [{"README": "no locks yet\n"}])
    write(published(torch_bump(base_lock), None), project / LOCK)
    result = json.loads(gate_in_process("--base-ref", "main", "--format", "json", cwd=project).stdout)
    target = result["targets"][0]
    assert target["base"] is None and result["verdict"] == "reject"
    assert all(c["kind"] == "added" for c in target["changes"])
