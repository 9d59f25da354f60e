"""`envbuilder init`: a matrix from requirements, pip freeze, uv.lock or pylock.toml that locks to the same
versions, against the local index server (newer versions are published too, so a loose lock would drift)."""

from __future__ import annotations

import pytest

from tests.resolve.project import publish


@pytest.fixture
def published(default_index):
    """app 1.0 needs lib>=1; lib 1.1 (what the user runs) and 1.2 (newer) both exist; extra 3.0."""
    publish(default_index, "app", "1.0", ["lib>=1"])
    publish(default_index, "lib", "1.1", tags="cp312-cp312-manylinux_2_17_x86_64")
    publish(default_index, "lib", "1.2", tags="cp312-cp312-manylinux_2_17_x86_64")
    publish(default_index, "extra-tool", "3.0")
    publish(default_index, "extra-tool", "3.1")
    return default_index


FREEZE = "app==1.0\nlib==1.1\nExtra_Tool==3.0\n-e git+https://example.invalid/me.git@abc#egg=me\n"
UV_LOCK = """version = 1
requires-python = ">=3.12"

[[package]]
name = "me"
version = "0.1.0"
source = { editable = "." }

[[package]]
name = "app"
version = "1.0"
source = { registry = "https://index.example/simple" }

[[package]]
name = "lib"
version = "1.1"
source = { registry = "https://index.example/simple" }

[[package]]
name = "extra-tool"
version = "3.0"
source = { registry = "https://index.example/simple" }
"""
PYLOCK = """lock-version = "1.0"
created-by = "uv"
requires-python = ">=3.12"

[[packages]]
name = "app"
version = "1.0"

[[packages]]
name = "lib"
version = "1.1"

[[packages]]
name = "extra-tool"
version = "3.0"

[[packages]]
name = "me"
directory = { path = "." }
"""


@pytest.mark.parametrize("file_name, text", [("requirements.txt", FREEZE), ("uv.lock", UV_LOCK),
                                              ("pylock.toml", PYLOCK)])
def test_init_then_lock_gives_the_same_versions(project, published, file_name, text):
    source = project.root / file_name
    source.write_text(text)
    args = ["init", "mine", "--from", str(source), "--libc", "glibc_2.39", "--machine", "x86_64",
            "--gpu-arch", "sm_90", "--gpu-name", "NVIDIA H200", "--gpu-count", "8", "--gpu-memory-gib", "140"]
    if file_name == "requirements.txt":
        args += ["--python", "3.12"]  # pip freeze names no Python; uv.lock and pylock do
    result = project.run(*args)
    assert result.rc == 0, result.text
    assert "3 packages pinned, 8x NVIDIA H200 (sm_90); next: envbuilder lock mine" in result.out
    assert "me" in result.err  # the editable/directory project is reported as skipped, not guessed at
    matrix = (project.root / "matrices" / "mine.yaml").read_text()
    assert 'python: "3.12"' in matrix and "arch: sm_90, count: 8" in matrix
    locked = project.run("lock", "mine")
    assert locked.rc == 0, locked.text
    versions = {p.name: p.version for p in project.read_lock("mine").packages}
    assert versions == {"app": "1.0", "lib": "1.1", "extra-tool": "3.0"}


def test_cpu_target_without_gpu_flags(project, published):
    (project.root / "req.txt").write_text("app==1.0\nlib==1.1\n")
    result = project.run("init", "cpu-mine", "--from", str(project.root / "req.txt"), "--python", "3.12",
                         "--machine", "x86_64")
    assert result.rc == 0, result.text
    assert "CPU only" in result.out
    matrix = (project.root / "matrices" / "cpu-mine.yaml").read_text()
    assert "hardware:" not in matrix and "cuda:" not in matrix
    assert project.run("lock", "cpu-mine").rc == 0


@pytest.mark.parametrize("args, text, message", [
    (["Bad_Name"], "app==1.0\n", "lower-case letters"),
    (["ok", "--gpu-arch", "hopper"], "app==1.0\n", "not an arch like sm_90"),
    (["ok", "--gpu-arch", "sm_90"], "app==1.0\n", "option --gpu-memory-gib"),
    (["ok"], "app==1.0\nnot a requirement!!\n", "req.txt:2: not a requirement"),
    (["ok"], "# nothing\n", "no package found"),
    (["ok", "--python", "3.12\nversion: 9"], "app==1.0\n", "platform.python"),
])
def test_bad_input_exits_2_naming_what(project, published, args, text, message):
    (project.root / "req.txt").write_text(text)
    result = project.run("init", *args, "--from", str(project.root / "req.txt"))
    assert result.rc == 2, result.text
    assert message in result.err and "Traceback" not in result.err


def test_existing_matrix_is_not_replaced_without_force(project, published):
    (project.root / "req.txt").write_text("app==1.0\n")
    assert project.run("init", "twice", "--from", str(project.root / "req.txt"), "--python", "3.12").rc == 0
    again = project.run("init", "twice", "--from", str(project.root / "req.txt"), "--python", "3.12")
    assert again.rc == 2 and "--force" in again.err
    assert project.run("init", "twice", "--from", str(project.root / "req.txt"), "--python", "3.12",
                       "--force").rc == 0


def test_torch_local_version_names_the_cuda(tmp_path):
    from envbuilder.init.readers import read_requirements
    from envbuilder.init.writer import torch_cuda

    found = read_requirements(tmp_path / "r.txt", "torch==2.9.1+cu128\n")
    assert torch_cuda(found.pins) == "12.8"
