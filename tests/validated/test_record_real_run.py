"""`serve --smoke --record` against a real llama-server: the record, its report, re-verification,
tampering caught, failed runs kept only when asked and never counted, doctor's answer on this host."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envbuilder.lock import read_lock
from envbuilder.validated import fingerprint, store
from envbuilder.validated.check import check
from envbuilder.validated.evidence import gather
from envbuilder.validated.figures import is_partial
from envbuilder.validated.check import _parse_report

sys.path.insert(0, str(Path(__file__).parents[1] / "smoke"))
from llm_servers import free_port, llama_server_binary, make_model  # noqa: E402

pytestmark = pytest.mark.servers

REPO = Path(__file__).resolve().parents[2]
TARGET = "cpu-llamacpp"


def envbuilder(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "envbuilder", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "ENVBUILDER_ROOT": str(root), **(env or {})}, cwd=root)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def make_project(where: Path, extra_matrix: str = "") -> Path:
    root = where / "project"
    (root / "matrices").mkdir(parents=True)
    text = (REPO / "matrices" / f"{TARGET}.yaml").read_text().replace("port: 8080", f"port: {free_port()}")
    (root / "matrices" / f"{TARGET}.yaml").write_text(text + extra_matrix)
    (root / "locks").mkdir()
    shutil.copy(REPO / "locks" / f"{TARGET}.lock.toml", root / "locks")
    return root


@pytest.fixture(scope="module")
def server_env(tmp_path_factory) -> dict:
    binary = llama_server_binary()
    model = make_model("gguf", tmp_path_factory.mktemp("model") / "tiny.gguf")
    return {"ENVBUILDER_MODEL": str(model), "ENVBUILDER_SERVER_BINARY": str(binary)}


SHORT = ("--requests", "8", "--concurrency", "1,4", "--warmup", "1")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, server_env) -> Path:
    root = make_project(tmp_path_factory.mktemp("recorded"))
    proc = envbuilder(root, "serve", TARGET, "--smoke", "--exit", "--record", *SHORT, env=server_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "recorded a passing run" in proc.stderr
    return root


def only_record(root: Path) -> Path:
    [path] = sorted(store.records_dir(root, TARGET).glob("*.toml"))
    return path


def test_a_passing_run_leaves_one_record_beside_its_report(recorded: Path, server_env: dict) -> None:
    path = only_record(recorded)
    record = store.parse(path.read_bytes(), path.name)
    report = store.report_path(path)
    assert report.is_file() and path.name.endswith(f"-{record.report.sha256[:12]}.toml")
    assert hashlib.sha256(report.read_bytes()).hexdigest() == record.report.sha256
    assert (record.kind, record.verdict, record.target) == ("run", "passed", TARGET)
    assert record.lock_digest == read_lock(recorded / "locks" / f"{TARGET}.lock.toml").digest
    assert record.lock_source == "lock-file" and record.image is None
    assert record.host == fingerprint.probe()
    assert record.server.kind == "llama.cpp" and server_env["ENVBUILDER_SERVER_BINARY"] in record.server.command
    model = Path(server_env["ENVBUILDER_MODEL"])
    assert [(w.file, w.sha256) for w in record.server.weights] == [
        ("tiny.gguf", hashlib.sha256(model.read_bytes()).hexdigest())]
    assert [lv.concurrency for lv in record.levels] == [1, 4]
    assert all(lv.requests == 8 and lv.failed == 0 and lv.output_tok_s > 0 for lv in record.levels)
    assert record.workload.concurrency == (1, 4) and len(record.workload.profile_sha256) == 64
    assert "hostname" not in path.read_text() and os.uname().nodename not in path.read_text()


def test_verify_and_doctor_accept_it(recorded: Path) -> None:
    proc = envbuilder(recorded, "validated", "verify")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verified" in proc.stdout and "1 verified" in proc.stdout
    doctor = envbuilder(recorded, "doctor", TARGET, "--json")
    line = next(c for c in json.loads(doctor.stdout)["checks"] if c["id"] == "validated")
    assert line["status"] == "pass" and line["found"].startswith("validated on this hardware"), line


def tampered_copy(recorded: Path, where: Path) -> tuple[Path, Path]:
    root = where / "copy"
    shutil.copytree(recorded, root)
    path = only_record(root)
    return path, store.report_path(path)


def test_an_edited_report_is_caught(recorded: Path, tmp_path: Path) -> None:
    path, report = tampered_copy(recorded, tmp_path)
    data = json.loads(report.read_text())
    data["levels"][-1]["summary"]["total_tok_s"]["mean"] *= 10
    report.write_text(json.dumps(data, indent=2) + "\n")
    [checked] = gather(root := path.parents[2], TARGET).checked
    assert checked.status == "mismatch" and "sha256" in checked.detail and not checked.counts
    # A forger who also rewrites the record's report hash is caught by the figures.
    text = path.read_text()
    old = store.parse(path.read_bytes(), path.name).report
    new_sha = hashlib.sha256(report.read_bytes()).hexdigest()
    text = text.replace(old.sha256, new_sha).replace(f"size = {old.size}", f"size = {report.stat().st_size}")
    path.write_text(text)
    [checked] = gather(root, TARGET).checked
    assert checked.status == "mismatch" and "figures differ" in checked.detail
    proc = envbuilder(root, "validated", "verify", TARGET)
    assert proc.returncode == 1 and "do not check out" in proc.stderr


def test_a_missing_report_is_not_evidence(recorded: Path, tmp_path: Path) -> None:
    path, report = tampered_copy(recorded, tmp_path)
    report.unlink()
    [checked] = gather(path.parents[2], TARGET).checked
    assert checked.status == "no-report" and not checked.counts
    doctor = envbuilder(path.parents[2], "doctor", TARGET, "--json")
    line = next(c for c in json.loads(doctor.stdout)["checks"] if c["id"] == "validated")
    assert line["found"].startswith("never validated")


def test_a_report_with_a_level_missing_is_partial(recorded: Path) -> None:
    report = _parse_report(store.report_path(only_record(recorded)).read_bytes())
    assert not is_partial(report)
    cut = report.model_copy(update={"levels": report.levels[:1]})
    assert is_partial(cut)


IMPOSSIBLE = "    - {metric: output_tok_s, at: min, min: 1000000000}\n"


def test_failed_run_is_recorded_only_when_asked_and_never_counts(tmp_path: Path, server_env: dict) -> None:
    root = make_project(tmp_path)
    matrix = root / "matrices" / f"{TARGET}.yaml"
    matrix.write_text(matrix.read_text().replace("  thresholds:\n", "  thresholds:\n" + IMPOSSIBLE))
    args = ("serve", TARGET, "--smoke", "--exit", "--requests", "4", "--concurrency", "1", "--warmup", "0")
    proc = envbuilder(root, *args, "--record", env=server_env)
    assert proc.returncode == 1 and "not recorded: the run did not pass" in proc.stderr
    assert not store.records_dir(root, TARGET).exists()
    proc = envbuilder(root, *args, "--record-failure", env=server_env)
    assert proc.returncode == 1 and "recorded a FAILED run" in proc.stderr
    path = only_record(root)
    record = store.parse(path.read_bytes(), path.name)
    assert record.verdict == "failed" and any("output_tok_s" in r for r in record.reasons)
    [checked] = gather(root, TARGET).checked
    assert checked.status == "failed-run" and not checked.counts
    assert check(checked.stored).status == "failed-run"


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env).stdout


def test_gate_lists_a_record_the_change_adds_for_a_reviewer(recorded: Path, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(recorded, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "locks", f"matrices/{TARGET}.yaml")
    git(root, "commit", "-q", "-m", "base: the lock, no records")
    proc = envbuilder(root, "gate", "--base-ref", "main", "--format", "json", "--offline")
    [target] = json.loads(proc.stdout)["targets"]
    assert target["validated"]["head"] and not target["validated"]["base"]
    added = [f for f in target["findings"] if f["rule"] == "record-added"]
    assert len(added) == 1 and added[0]["severity"] == "warning" and "review it" in added[0]["why"]
    assert target["verdict"] == "warn"
    git(root, "add", "matrices")
    git(root, "commit", "-q", "-m", "the record, reviewed")
    proc = envbuilder(root, "gate", "--base-ref", "main", "--format", "json", "--offline")
    [target] = json.loads(proc.stdout)["targets"]
    assert target["validated"]["head"] and target["validated"]["base"]
    assert not [f for f in target["findings"] if f["rule"] == "record-added"]


def test_doctor_on_other_hardware_says_validated_elsewhere(recorded: Path, tmp_path: Path) -> None:
    path, _ = tampered_copy(recorded, tmp_path)
    text = path.read_text()
    here = fingerprint.probe()
    path.write_text(text.replace(f"cpu_count = {here.cpu_count}\n", f"cpu_count = {here.cpu_count + 62}\n"))
    [checked] = gather(path.parents[2], TARGET).checked
    assert checked.counts  # the host is not in the report's figures: the record still verifies
    doctor = envbuilder(path.parents[2], "doctor", TARGET, "--json")
    line = next(c for c in json.loads(doctor.stdout)["checks"] if c["id"] == "validated")
    assert line["status"] == "warn" and line["found"].startswith("validated elsewhere"), line
    assert f"CPU count {here.cpu_count + 62} (here: {here.cpu_count})" in line["found"]


def test_a_record_claiming_gpus_its_report_did_not_see_is_caught(recorded: Path, tmp_path: Path) -> None:
    path, report = tampered_copy(recorded, tmp_path)
    if json.loads(report.read_text())["environment"].get("gpus") is None:
        data = json.loads(report.read_text())
        data["environment"]["gpus"] = []  # what nvidia-smi on a GPU-less host would have said
        report.write_text(json.dumps(data, indent=2) + "\n")
        record = store.parse(path.read_bytes(), path.name)
        text = path.read_text().replace(record.report.sha256, hashlib.sha256(report.read_bytes()).hexdigest())
        path.write_text(text.replace(f"size = {record.report.size}", f"size = {report.stat().st_size}"))
    text = path.read_text().replace("gpu_count = 0\n", 'gpu_count = 8\ngpu_model = "NVIDIA H200"\n')
    path.write_text(text)
    [checked] = gather(path.parents[2], TARGET).checked
    assert checked.status == "mismatch" and "GPU(s)" in checked.detail


def test_two_labs_records_merge_without_conflicts(recorded: Path, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(recorded, root)
    folder = store.records_dir(root, TARGET)
    ours = sorted(folder.iterdir())
    moved = tmp_path / "held"
    shutil.move(str(folder), moved)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "lab-a")
    shutil.copytree(moved, folder)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "lab A: a recorded run")
    git(root, "checkout", "-q", "main")
    git(root, "checkout", "-q", "-b", "lab-b")
    proc = envbuilder(root, "validated", "import", TARGET, "--date", "2026-11", "--result", "900 tok/s on a laptop",
                      "--by", "lab B", "--concurrency", "4", "--total-tok-s", "900")
    assert proc.returncode == 0, proc.stderr
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "lab B: an imported claim")
    git(root, "merge", "-q", "--no-edit", "lab-a")  # raises on a conflict
    statuses = sorted(c.status for c in gather(root, TARGET).checked)
    assert statuses == ["imported", "verified"] and len(ours) == 2
