"""Record files: deterministic bytes and names, strict parsing of hostile input, safe folder reading,
imported claims that are shown but never counted, and doctor's answer when nothing was validated."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envbuilder.validated import store
from envbuilder.validated.check import check
from envbuilder.validated.evidence import gather
from envbuilder.validated.fingerprint import compare
from envbuilder.validated.importer import Claim, imported_record
from envbuilder.validated.model import HostFingerprint, Record

REPO = Path(__file__).resolve().parents[2]
DIGEST = "sha256:" + "ab" * 32


def envbuilder(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "envbuilder", *args], capture_output=True, text=True,
                          env={**os.environ, "ENVBUILDER_ROOT": str(root)}, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(REPO / "matrices", root / "matrices", ignore=shutil.ignore_patterns("*.validated"))
    return root


def claim(**extra) -> Claim:
    base = dict(target="blackwell-sm120", date="2026-02", result="3,740 total tok/s at concurrency 1024",
                by="seed workload", concurrency=1024, total_tok_s=3740.0,
                host=HostFingerprint(gpu_model="NVIDIA RTX PRO 6000 Blackwell Server Edition", gpu_count=8,
                                     driver="590.48.01"))
    return Claim(**{**base, **extra})


def test_same_record_same_bytes_and_name(tmp_path: Path) -> None:
    record = imported_record(claim())
    a = store.write_record(tmp_path / "a", record)
    b = store.write_record(tmp_path / "b", imported_record(claim()))
    assert a.name == b.name and a.read_bytes() == b.read_bytes()
    assert a.name.startswith("2026-02-imported-") and a.name.endswith(".toml")
    assert store.parse(a.read_bytes(), a.name) == record
    assert not list(a.parent.glob(".*.tmp"))  # atomic write leaves no temp file


HOSTILE = {
    "unknown key": 'record_version = 1\ntarget = "t"\nkind = "run"\nverdict = "passed"\ndate = "2026-02"\n'
                   'tool_version = "1"\nrun_this = "rm -rf /"\n',
    "escape in text": 'record_version = 1\ntarget = "t"\nkind = "imported"\nverdict = "imported"\n'
                      'date = "2026-02"\ntool_version = "1"\nnote = "ok\\u001b[31mred"\n',
    "bidi override": 'record_version = 1\ntarget = "t"\nkind = "imported"\nverdict = "imported"\n'
                     'date = "2026-02"\ntool_version = "1\\u202e"\n',
    "path in target": 'record_version = 1\ntarget = "../../etc"\nkind = "imported"\nverdict = "imported"\n'
                      'date = "2026-02"\ntool_version = "1"\n',
    "bad digest": 'record_version = 1\ntarget = "t"\nkind = "imported"\nverdict = "imported"\n'
                  'date = "2026-02"\ntool_version = "1"\nlock_digest = "sha256:xyz"\n',
    "nan figure": 'record_version = 1\ntarget = "t"\nkind = "imported"\nverdict = "imported"\n'
                  'date = "2026-02"\ntool_version = "1"\nlevels = [{concurrency = 1, total_tok_s = nan}]\n',
    "future version": 'record_version = 2\ntarget = "t"\nkind = "imported"\nverdict = "imported"\n'
                      'date = "2026-02"\ntool_version = "1"\n',
    "not toml": "\x00\x01garbage",
    "markdown image in a note": 'record_version = 1\ntarget = "t"\nkind = "imported"\nverdict = "imported"\n'
                                'date = "2026-02"\ntool_version = "1"\nnote = "![x](https://evil.example/p.png)"\n',
    "html in a gpu name": 'record_version = 1\ntarget = "t"\nkind = "imported"\nverdict = "imported"\n'
                          'date = "2026-02"\ntool_version = "1"\n[host]\ngpu_model = "<img src=x>"\n',
    "free-form date": 'record_version = 1\ntarget = "t"\nkind = "imported"\nverdict = "imported"\n'
                      'date = "yesterday"\ntool_version = "1"\n',
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_record_is_a_broken_record_not_a_crash(tmp_path: Path, case: str) -> None:
    folder = tmp_path / "t.validated"
    folder.mkdir()
    (folder / "x.toml").write_bytes(HOSTILE[case].encode())
    [stored] = store.load_dir(folder, "t")
    assert stored.record is None and stored.error.startswith("x.toml")
    assert check(stored).status == "broken"


def test_symlinks_and_strange_names_are_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.toml"
    secret.write_text(store.dumps(imported_record(claim(target="t"))))
    folder = tmp_path / "t.validated"
    folder.mkdir()
    (folder / "link.toml").symlink_to(secret)
    (folder / "-dash.toml").write_text(secret.read_text())
    found = {s.name: s for s in store.load_dir(folder, "t")}
    assert found["link.toml"].record is None and "plain record file" in found["link.toml"].error
    assert found["-dash.toml"].record is None


def test_record_in_another_targets_folder_is_broken(tmp_path: Path) -> None:
    path = store.write_record(tmp_path / "hopper-sm90.validated", imported_record(claim()))
    [stored] = store.load_dir(path.parent, "hopper-sm90")
    assert stored.record is None and "'blackwell-sm120'" in stored.error


def test_oversized_record_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "t.validated"
    folder.mkdir()
    (folder / "big.toml").write_text("# " + "x" * store.MAX_RECORD_BYTES)
    [stored] = store.load_dir(folder, "t")
    assert stored.record is None and "larger than" in stored.error


def test_fingerprints_compare_hardware_then_driver() -> None:
    here = HostFingerprint(machine="x86_64", gpu_model="NVIDIA H200", gpu_count=8, gpu_memory_mib=143771,
                           driver="580.159.04", cuda_driver="13.0", cpu_count=128, memory_gib=2015)
    assert compare(here, here).match == "same"
    newer = here.model_copy(update={"driver": "590.48.01"})
    assert compare(newer, here).match == "same-hardware"
    assert compare(here.model_copy(update={"gpu_count": 4}), here).match == "different"
    partial = HostFingerprint(gpu_model="NVIDIA H200", gpu_count=8)  # an imported claim: unsaid is not a difference
    assert compare(partial, here).match == "same"


def test_import_cli_writes_an_unverifiable_record_that_never_counts(project: Path) -> None:
    proc = envbuilder(project, "validated", "import", "blackwell-sm120", "--date", "2026-02",
                      "--result", "3,740 total tok/s at concurrency 1024", "--by", "seed workload",
                      "--concurrency", "1024", "--total-tok-s", "3740", "--gpu-count", "8")
    assert proc.returncode == 0, proc.stderr
    assert "imported (unverifiable" in proc.stdout
    evidence = gather(project, "blackwell-sm120")
    [record] = evidence.checked
    assert record.status == "imported" and not record.counts
    assert record.record.headline() == "3,740 total tok/s at concurrency 1024"
    verify = envbuilder(project, "validated", "verify")
    assert verify.returncode == 0 and "imported" in verify.stdout and "1 imported" in verify.stdout


@pytest.mark.parametrize("args, key", [
    (["--date", "last year"], "date"),
    (["--date", "2026-02", "--lock", "sha256:nothex"], "--lock"),
    (["--date", "2026-02", "--total-tok-s", "5"], "--concurrency"),
    (["--date", "2026-02", "--gpu-count", "-1"], "--gpu-count"),
    (["--date", "2026-02", "--gpu-model", "<b>"], "--gpu-model"),
])
def test_import_bad_input_names_the_option(project: Path, args: list[str], key: str) -> None:
    proc = envbuilder(project, "validated", "import", "blackwell-sm120", "--result", "r", "--by", "b", *args)
    assert proc.returncode == 2 and key in proc.stderr, proc.stderr


def test_verify_fails_on_a_broken_record(project: Path) -> None:
    folder = store.records_dir(project, "cpu-llamacpp")
    folder.mkdir()
    (folder / "20261201T000000Z-000000000000.toml").write_text(HOSTILE["unknown key"])
    proc = envbuilder(project, "validated", "verify", "cpu-llamacpp")
    assert proc.returncode == 1 and "broken" in proc.stdout and "run_this" in proc.stdout


def test_doctor_says_never_validated_and_mentions_the_imported_claim(project: Path) -> None:
    shutil.copytree(REPO / "locks", project / "locks")
    store.write_record(store.records_dir(project, "blackwell-sm120"), imported_record(claim()))
    proc = envbuilder(project, "doctor", "blackwell-sm120", "--json")
    import json

    check_ = next(c for c in json.loads(proc.stdout)["checks"] if c["id"] == "validated")
    assert check_["status"] == "warn" and check_["found"].startswith("never validated")
    assert "imported/prose claim(s), unverifiable, not counted" in check_["found"]


def test_record_model_rejects_a_run_record_claiming_imported_fields() -> None:
    with pytest.raises(ValueError):
        Record.model_validate({"target": "t", "kind": "run", "verdict": "maybe", "date": "2026-02",
                               "tool_version": "1"})
    assert Record.model_validate({"target": "t", "kind": "imported", "verdict": "imported", "date": "2026-02",
                                  "tool_version": "1", "lock_digest": DIGEST}).lock_digest == DIGEST


@pytest.mark.docker
def test_image_identity_comes_from_the_engine() -> None:
    """Outside the image, `--image TAG` asks the engine for the id and the lock-digest label."""
    from envbuilder.errors import BadInput
    from envbuilder.validated.provenance import image_from_engine
    from tests.conftest import require_tool
    from tests.support.docker_image import BASE, engine_problem

    problem = engine_problem()
    require_tool("a docker engine with the base image", problem is None, str(problem))
    image = image_from_engine(BASE)
    assert image.id.startswith("sha256:") and len(image.id) == 71
    assert image.lock_digest is None and image.reference == BASE  # not an envbuilder image: no lock label
    with pytest.raises(BadInput, match="not in the local engine"):
        image_from_engine("envbuilder-test/absent:never")


def test_record_refuses_before_the_run_what_it_cannot_record_honestly(project: Path, tmp_path: Path) -> None:
    shutil.copytree(REPO / "locks", project / "locks")
    remote = envbuilder(project, "smoke", "--endpoint", "http://192.0.2.1:8080", "--target", "cpu-llamacpp",
                        "--record")
    assert remote.returncode == 2 and "not on this host" in remote.stderr
    inside = subprocess.run([sys.executable, "-m", "envbuilder", "serve", "cpu-llamacpp", "--smoke", "--record"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120,
                            env={**os.environ, "ENVBUILDER_ROOT": str(project), "ENVBUILDER_IMAGE_MANIFEST": "/m.json",
                                 "ENVBUILDER_LOCK_DIGEST": DIGEST})
    assert inside.returncode == 2 and "would vanish with the container" in inside.stderr
    no_smoke = envbuilder(project, "serve", "cpu-llamacpp", "--record")
    assert no_smoke.returncode == 2 and "add --smoke" in no_smoke.stderr
    bad_env = subprocess.run([sys.executable, "-m", "envbuilder", "serve", "cpu-llamacpp", "--smoke", "--record"],
                             capture_output=True, text=True, cwd=project, timeout=120,
                             env={**os.environ, "ENVBUILDER_ROOT": str(project), "ENVBUILDER_IMAGE_DIGEST": "latest"})
    assert bad_env.returncode == 2 and "ENVBUILDER_IMAGE_DIGEST" in bad_env.stderr
