"""Issue 15 end to end on a real engine, CPU target: `serve --smoke --record` inside the shared image,
the record it leaves, the gate on the same lock (validated) and on a bumped lock (not validated,
flagged; rejected with --require-validated), and doctor on this host (validated on this hardware).

Uses the session's one `cpu_image` (tests/support/docker_image.py); run under
`flock /tmp/eb-docker.lock` on a shared machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envbuilder.build import engine
from envbuilder.lock import read_lock
from envbuilder.validated import store

pytestmark = [pytest.mark.docker, pytest.mark.network, pytest.mark.servers, pytest.mark.timeout(3600)]

REPO = Path(__file__).resolve().parents[2]
TARGET = "cpu-llamacpp"


def envbuilder(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "envbuilder", *args], capture_output=True, text=True, cwd=root,
                          env={**os.environ, "ENVBUILDER_ROOT": str(root)}, timeout=900)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sys.path.insert(0, str(REPO / "tests" / "smoke"))
    from llm_servers import make_model

    return make_model("gguf", tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture(scope="module")
def recorded(cpu_image, gguf: Path, tmp_path_factory: pytest.TempPathFactory):
    """A project of our own (the shared image's project may be re-locked by other tests) with the record."""
    root = tmp_path_factory.mktemp("validated-e2e") / "project"
    (root / "matrices").mkdir(parents=True)
    (root / "locks").mkdir()
    shutil.copy(REPO / "matrices" / f"{TARGET}.yaml", root / "matrices")
    shutil.copy(cpu_image.first.lock_file, root / "locks" / f"{TARGET}.lock.toml")
    image_id = engine.client().images.get(cpu_image.first.tag).id
    result = engine.run(cpu_image.first.tag,
                        ["envbuilder", "serve", TARGET, "--smoke", "--exit", "--record",
                         "--requests", "8", "--concurrency", "1,4", "--json", "/workspace/smoke.json"],
                        volumes={str(gguf): {"bind": "/models/tiny.gguf", "mode": "ro"},
                                 str(root): {"bind": "/workspace", "mode": "rw"}},
                        environment={"ENVBUILDER_IMAGE_DIGEST": image_id},
                        network="none")  # server and client share the container's loopback; no bridge needed
    assert result.returncode == 0, result.output[-4000:]
    assert "recorded a passing run" in result.output
    return root, image_id, cpu_image.first.lock_file


def test_the_record_names_the_image_its_lock_and_this_host(recorded) -> None:
    root, image_id, lock_file = recorded
    [path] = sorted(store.records_dir(root, TARGET).glob("*.toml"))
    record = store.parse(path.read_bytes(), path.name)
    lock = read_lock(lock_file)
    assert record.verdict == "passed" and record.lock_digest == lock.digest and record.lock_source == "image"
    assert record.image.id == image_id and record.image.lock_digest == lock.digest
    assert record.server.kind == "llama.cpp" and record.server.command.startswith("llama-server -m /models/tiny.gguf")
    assert record.server.weights[0].file == "tiny.gguf"
    assert record.host.gpu_count == 0 and record.host.cpu_count and record.host.memory_gib
    assert store.report_path(path).is_file()
    verify = envbuilder(root, "validated", "verify")
    assert verify.returncode == 0 and "1 verified" in verify.stdout, verify.stdout + verify.stderr


def test_gate_on_the_same_lock_says_validated(recorded) -> None:
    root, _, lock_file = recorded
    proc = envbuilder(root, "gate", "--base", str(lock_file), "--head", str(lock_file), "--format", "json",
                      "--require-validated")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [target] = json.loads(proc.stdout)["targets"]
    assert target["validated"]["head"] and target["validated"]["base"]
    assert target["validated"]["note"].startswith("1 verified passing record(s) for the head lock")
    assert not [f for f in target["findings"] if f["rule"] in ("validated-lost", "not-validated")]


def test_gate_on_a_bumped_lock_flags_leaving_the_validated_lock(recorded, tmp_path: Path) -> None:
    root, _, lock_file = recorded
    matrix = root / "matrices" / f"{TARGET}.yaml"
    original = matrix.read_text()
    tqdm = read_lock(lock_file).package("tqdm").version
    other = "4.67.0" if tqdm != "4.67.0" else "4.66.6"
    bumped = tmp_path / "bumped.lock.toml"
    try:
        matrix.write_text(re.sub(r'tqdm: "[^"]*"', f'tqdm: "=={other}"', original))
        proc = envbuilder(root, "lock", TARGET)
        assert proc.returncode == 0, proc.stderr
        shutil.copy(root / "locks" / f"{TARGET}.lock.toml", bumped)
    finally:
        matrix.write_text(original)
        shutil.copy(lock_file, root / "locks" / f"{TARGET}.lock.toml")
    assert read_lock(bumped).digest != read_lock(lock_file).digest
    proc = envbuilder(root, "gate", "--base", str(lock_file), "--head", str(bumped), "--format", "json")
    [target] = json.loads(proc.stdout)["targets"]
    assert not target["validated"]["head"] and target["validated"]["base"]
    lost = [f for f in target["findings"] if f["rule"] == "validated-lost"]
    assert lost and lost[0]["severity"] == "warning", target["findings"]
    text = envbuilder(root, "gate", "--base", str(lock_file), "--head", str(bumped))
    assert "validated: no: no verified passing record for the head lock" in text.stdout
    strict = envbuilder(root, "gate", "--base", str(lock_file), "--head", str(bumped), "--require-validated")
    assert strict.returncode == 1 and "validated-lost" in strict.stdout


def test_doctor_says_validated_on_this_hardware(recorded) -> None:
    root, _, lock_file = recorded
    proc = envbuilder(root, "doctor", TARGET, "--lock", str(lock_file), "--json")
    line = next(c for c in json.loads(proc.stdout)["checks"] if c["id"] == "validated")
    assert line["status"] == "pass" and line["found"].startswith("validated on this hardware"), line
