"""Doctor on recorded inputs of real machines: the H200 run replays to the same verdicts.

The recorded host is rebuilt as a directory (its /proc files, /usr/local/cuda-13.0 with an nvcc
that prints the recorded `nvcc --version`) and a PATH holding an nvidia-smi that prints the
recorded output; the probes run unchanged against it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envbuilder.doctor import HostSources, run_doctor
from envbuilder.doctor.nvidia import parse_proc_version, parse_saved, parse_smi_csv, parse_smi_q
from envbuilder.doctor.sources import NvmlUnavailable, recorded_nvml
from envbuilder.doctor.toolkit import parse_nvcc_version
from envbuilder.errors import BadInput
from envbuilder.lock import lock_path, read_lock
from envbuilder.matrix import project_root

H200 = Path(__file__).resolve().parents[1] / "fixtures" / "h200"
NO_DRIVER = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. " \
            "Make sure that the latest NVIDIA driver is installed and running.\n"


def script(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def printer(fixture: str) -> str:
    return f"cat '{H200 / fixture}'\n"


def no_nvml():
    raise NvmlUnavailable("nvidia-ml-py is not installed")


def recorded_host(tmp_path: Path, *, nvml=True, smi=True, modules="proc-modules.txt", driver_proc=True,
                  smi_body: str | None = None, cuda_home="/usr/local/cuda") -> HostSources:
    """The H200 as recorded, with switches to take parts of it away."""
    root = tmp_path / "root"
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/meminfo").write_text((H200 / "proc-meminfo.txt").read_text())
    (root / "proc/cpuinfo").write_text("".join(f"processor\t: {i}\n\n" for i in range(16)))
    if modules:
        (root / "proc/modules").write_text((H200 / modules).read_text() if modules.endswith(".txt") else modules)
    if driver_proc:
        (root / "proc/driver/nvidia/version").write_text((H200 / "proc-driver-nvidia-version.txt").read_text())
    for home in ("usr/local/cuda-13.0", "usr/local/cuda-13", "usr/local/cuda"):
        script(root / home / "bin/nvcc", printer("nvcc-version.txt"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if smi:
        body = smi_body or ('case "$1" in -q) ' + printer("nvidia-smi-q.txt").strip() + ";; "
                            "*) " + printer("nvidia-smi-doctor.csv").strip() + ";; esac\n")
        script(bin_dir / "nvidia-smi", body)
    script(bin_dir / "nvcc", printer("nvcc-version.txt"))
    environ = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    if cuda_home:
        environ["CUDA_HOME"] = cuda_home
    return HostSources(root=root, environ=environ, nvml=recorded_nvml(H200 / "nvml.json") if nvml else no_nvml,
                       torch_version_file=H200 / "torch-version.py.txt", docker=False)


def recorded(name: str) -> dict:
    return json.loads((H200 / name).read_text())


def statuses(checks) -> dict[str, str]:
    return {c["id"] if isinstance(c, dict) else c.id: c["status"] if isinstance(c, dict) else c.status for c in checks}


def lock_unchanged(target: str, recorded_checks: list[dict]) -> bool:
    """Lock-based checks name the lock digest they judged; compare them only against that lock."""
    digest = read_lock(lock_path(project_root(), target)).digest[:19]
    return any(digest in c["found"] for c in recorded_checks if c["id"].startswith(("gpu.lock", "driver.lock")))


@pytest.mark.parametrize("target", ["hopper-sm90", "blackwell-sm120"])
def test_replayed_h200_gives_the_recorded_verdicts(tmp_path, target):
    report = run_doctor(target, sources=recorded_host(tmp_path))
    want = recorded(f"doctor-{target}.json")
    want_status = {k: v for k, v in statuses(want["checks"]).items() if not k.startswith("container.")}
    if not lock_unchanged(target, want["checks"]):
        want_status = {k: v for k, v in want_status.items() if ".lock" not in k and "lock-" not in k}
    got = {k: v for k, v in statuses(report.checks).items() if k in want_status}
    assert got == want_status
    assert report.host.driver.version == "580.159.04" and report.host.driver.source == "nvml"


def test_blackwell_on_h200_fails_the_arch_check_in_words(tmp_path):
    report = run_doctor("blackwell-sm120", sources=recorded_host(tmp_path))
    arch = next(c for c in report.checks if c.id == "gpu.arch")
    assert arch.status == "fail"
    assert arch.found == "GPU 0 (NVIDIA H200) is sm_90 (compute capability 9.0)"
    assert arch.needed == "blackwell-sm120 needs sm_120 (NVIDIA RTX PRO 6000 Blackwell Server Edition)"
    assert "hopper-sm90" in arch.fix
    assert report.verdict == "fail"


def test_driver_below_the_target_minimum(tmp_path):
    report = run_doctor("blackwell-sm120", sources=recorded_host(tmp_path))
    driver = next(c for c in report.checks if c.id == "driver.version")
    assert (driver.status, driver.needed) == ("fail", ">= 590.48.01")
    assert "580.159.04" in driver.found and "590.48.01" in driver.fix


def test_cuda_home_at_13_for_a_cu128_torch(tmp_path):
    report = run_doctor("hopper-sm90", sources=recorded_host(tmp_path))
    toolkit = next(c for c in report.checks if c.id == "toolkit.build")
    assert toolkit.status == "fail"
    assert "CUDA 13.0.88 (CUDA_HOME)" in toolkit.found and "CUDA 12.8" in toolkit.needed
    assert "cuda-toolkit-12-8" in toolkit.fix and "cpp_extension refuses a different CUDA major" in toolkit.fix


def test_matching_toolkit_found_elsewhere_is_the_fix(tmp_path):
    sources = recorded_host(tmp_path, cuda_home="/usr/local/cuda-12.8")
    home = sources.root / "usr/local/cuda-12.8"
    home.mkdir(parents=True)
    (home / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.8.1"}}))
    report = run_doctor("hopper-sm90", sources=sources)
    toolkit = next(c for c in report.checks if c.id == "toolkit.build")
    assert toolkit.status == "pass" and "CUDA 12.8.1 (CUDA_HOME)" in toolkit.found


def test_module_not_loaded_after_a_reboot(tmp_path):
    said = tmp_path / "nvidia-smi.out"
    said.write_text(NO_DRIVER)
    sources = recorded_host(tmp_path, nvml=False, modules="snd 1 0 - Live 0x0\n", driver_proc=False,
                            smi_body=f"cat '{said}'; exit 9\n")
    report = run_doctor("hopper-sm90", sources=sources)
    module = next(c for c in report.checks if c.id == "driver.module")
    assert module.status == "fail" and module.found == "the nvidia kernel module is not loaded"
    assert "modprobe nvidia" in module.fix and "modules-load.d" in module.fix
    driver = next(c for c in report.checks if c.id == "driver.version")
    assert driver.status == "fail" and "couldn't communicate with the NVIDIA driver" in driver.found


def test_nvidia_smi_fallback_when_nvml_is_missing(tmp_path):
    report = run_doctor("hopper-sm90", sources=recorded_host(tmp_path, nvml=False))
    assert report.host.driver.source == "nvidia-smi"
    assert report.host.driver.errors == ("nvidia-ml-py is not installed",)
    gpu = report.host.driver.gpus[0]
    assert (gpu.name, gpu.memory_mib, gpu.arch, gpu.persistence) == ("NVIDIA H200", 143771, "sm_90", True)


def test_proc_version_is_the_last_resort(tmp_path):
    report = run_doctor("hopper-sm90", sources=recorded_host(tmp_path, nvml=False, smi=False))
    assert report.host.driver.version == "580.159.04"
    assert report.host.driver.source == "/proc/driver/nvidia/version"
    count = next(c for c in report.checks if c.id == "gpu.count")
    assert count.status == "fail" and count.found == "no NVIDIA GPU visible"


@pytest.mark.parametrize("saved, recorded_json, target", [
    ("nvidia-smi.csv", "doctor-blackwell-sm120-saved.json", "blackwell-sm120"),
    ("nvidia-smi-q.txt", "doctor-hopper-sm90-saved-q.json", "hopper-sm90"),
])
def test_saved_nvidia_smi_output_replays(saved, recorded_json, target):
    report = run_doctor(target, saved_smi=H200 / saved)
    want = recorded(recorded_json)
    want_status = statuses(want["checks"])
    if not lock_unchanged(target, want["checks"]):
        want_status = {k: v for k, v in want_status.items() if "lock" not in k}
    assert {k: v for k, v in statuses(report.checks).items() if k in want_status} == want_status
    assert not any(c.id.startswith(("toolkit", "container", "build", "driver.module")) for c in report.checks)


def test_q_output_without_compute_capability_infers_it_from_the_product_name():
    facts = parse_smi_q((H200 / "nvidia-smi-q.txt").read_text())
    assert (facts.version, facts.cuda) == ("580.159.04", "13.0")
    [gpu] = facts.gpus
    assert (gpu.name, gpu.memory_mib, gpu.compute_capability, gpu.persistence) == ("NVIDIA H200", 143771, None, True)
    report = run_doctor("blackwell-sm120", saved_smi=H200 / "nvidia-smi-q.txt")
    assert report.host.driver.gpus[0].cc_source == "product name"
    arch = next(c for c in report.checks if c.id == "gpu.arch")
    assert arch.status == "fail" and "inferred from the product name" in arch.found


def test_csv_forms_and_bad_saved_files(tmp_path):
    noheader = parse_smi_csv("NVIDIA H200, 143771, 580.159.04, 9.0\nNVIDIA H200, 143771, 580.159.04, 9.0\n")
    assert [g.index for g in noheader.gpus] == [0, 1] and noheader.gpus[1].memory_mib == 143771
    with pytest.raises(BadInput, match=r"gpus.csv:2: expected 4 columns"):
        parse_smi_csv("name, memory.total [MiB], driver_version, compute_cap\nNVIDIA H200, 143771 MiB\n", "gpus.csv")
    with pytest.raises(BadInput, match="table view"):
        parse_saved((H200 / "nvidia-smi.txt").read_text(), "smi.txt")
    with pytest.raises(BadInput, match="several driver versions"):
        parse_smi_csv("A, 1 MiB, 580.1, 9.0\nB, 1 MiB, 570.2, 9.0\n")


def test_recorded_parsers():
    assert parse_proc_version((H200 / "proc-driver-nvidia-version.txt").read_text()) == "580.159.04"
    assert parse_proc_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.10  Thu Jan 1") == "570.86.10"
    assert parse_nvcc_version((H200 / "nvcc-version.txt").read_text()) == "13.0.88"


def test_build_capacity_from_recorded_meminfo(tmp_path, monkeypatch):
    report = run_doctor("hopper-sm90", sources=recorded_host(tmp_path))
    capacity = next(c for c in report.checks if c.id == "build.capacity")
    assert capacity.status == "pass"
    assert capacity.found == "16 cores, 125.9 GiB memory, 0 GiB swap: MAX_JOBS=8 for flash-attn"
    assert capacity.needed == "flash-attn (nvcc, NVCC_THREADS=4): 9 GiB per job"
    sources = recorded_host(tmp_path / "b")
    sources.environ["MAX_JOBS"] = "32"
    capacity = next(c for c in run_doctor("hopper-sm90", sources=sources).checks if c.id == "build.capacity")
    assert capacity.status == "warn" and "MAX_JOBS=32 is set" in capacity.found


def test_cpu_host_without_driver_fails_cleanly_exit_1():
    """This machine: no NVIDIA driver. Real CLI, real probes."""
    env = {**os.environ, "COLUMNS": "250"}
    done = subprocess.run([sys.executable, "-m", "envbuilder", "doctor", "blackwell-sm120", "--json"],
                          capture_output=True, text=True, env=env, cwd=project_root())
    if "NVRM" in (Path("/proc/driver/nvidia/version").read_text() if Path("/proc/driver/nvidia/version").exists() else ""):
        pytest.skip("this host has an NVIDIA driver")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    assert report["verdict"] == "fail"
    status = statuses(report["checks"])
    assert status["driver.version"] == "fail" and status["gpu.count"] == "fail" and status["gpu.arch"] == "fail"
    assert "failed: driver.version" in done.stderr


def test_unknown_target_and_missing_saved_file_are_bad_input(tmp_path):
    env = {**os.environ, "COLUMNS": "250"}
    for args in (["doctor", "no-such-target"], ["doctor", "hopper-sm90", "--nvidia-smi", str(tmp_path / "x.csv")]):
        done = subprocess.run([sys.executable, "-m", "envbuilder", *args], capture_output=True, text=True, env=env,
                              cwd=project_root())
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
