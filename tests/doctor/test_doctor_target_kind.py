"""Doctor judges a target on what it needs: a CPU target gets Python, docker and its own build capacity."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from envbuilder.doctor import HostSources, run_doctor
from envbuilder.doctor.sources import NvmlUnavailable

GPU_CHECKS = ("driver.", "gpu.", "toolkit.", "host.torch", "container.nvidia-runtime")


def no_nvml():
    raise NvmlUnavailable("nvidia-ml-py is not installed")


def cpu_host(tmp_path: Path, mem_gib: float = 23.5, cores: int = 2, python: str | None = "3.11",
             environ: dict | None = None) -> HostSources:
    """A host with no NVIDIA driver at all: its /proc, and a PATH with only the Pythons asked for."""
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc/meminfo").write_text(f"MemTotal: {int(mem_gib * 1024 * 1024)} kB\nSwapTotal: 0 kB\n")
    (root / "proc/cpuinfo").write_text("".join(f"processor\t: {i}\n\n" for i in range(cores)))
    (root / "proc/modules").write_text("snd 1 0 - Live 0x0\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if python:
        (bin_dir / f"python{python}").symlink_to(sys.executable)
    return HostSources(root=root, environ={"PATH": str(bin_dir), **(environ or {})}, nvml=no_nvml, docker=False)


def by_id(report):
    return {c.id: c for c in report.checks}


def test_cpu_target_has_no_gpu_checks(tmp_path):
    report = run_doctor("cpu-llamacpp", sources=cpu_host(tmp_path))
    ids = [c.id for c in report.checks]
    assert not [i for i in ids if i.startswith(GPU_CHECKS)], ids
    assert "python.version" in ids and "build.capacity" in ids
    assert not [c for c in report.checks if c.status == "fail"]
    capacity = by_id(report)["build.capacity"]
    assert capacity.needed == "llama-cpp-python (C/C++, cmake target llama-server): 1 GiB per job"
    assert "MAX_JOBS=2 for llama-cpp-python" in capacity.found
    assert "flash-attn" not in capacity.needed + capacity.found + capacity.fix and "nvcc" not in capacity.needed


def test_cpu_target_capacity_advice_names_its_recipe(tmp_path):
    report = run_doctor("cpu-llamacpp", sources=cpu_host(tmp_path, mem_gib=0.5))
    capacity = by_id(report)["build.capacity"]
    assert capacity.status == "fail"
    assert capacity.fix.startswith("llama-cpp-python cannot build here") and "NVCC_THREADS" not in capacity.fix
    report = run_doctor("cpu-llamacpp", sources=cpu_host(tmp_path / "x", environ={"MAX_JOBS": "64"}))
    capacity = by_id(report)["build.capacity"]
    assert capacity.status == "warn" and "llama-cpp-python would start more jobs" in capacity.fix


def test_missing_target_python_only_warns(tmp_path):
    report = run_doctor("hopper-sm90", sources=cpu_host(tmp_path, python=None))
    python = by_id(report)["python.version"]
    assert python.status == "warn" and "Python 3.12" in python.needed and "uv python install 3.12" in python.fix


def test_gpu_target_capacity_names_the_nvcc_recipe(tmp_path):
    report = run_doctor("hopper-sm90", sources=cpu_host(tmp_path, mem_gib=64, cores=16))
    checks = by_id(report)
    assert checks["build.capacity"].needed == "flash-attn (nvcc, NVCC_THREADS=4): 9 GiB per job"
    assert "MAX_JOBS=7 for flash-attn" in checks["build.capacity"].found
    assert checks["gpu.count"].status == "fail"  # GPU targets keep their GPU checks


def test_piped_doctor_prints_whole_lines_not_a_table():
    proc = subprocess.run([sys.executable, "-m", "envbuilder", "doctor", "cpu-llamacpp"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode in (0, 1), proc.stderr
    lines = proc.stdout.splitlines()
    assert not any(ch in proc.stdout for ch in "│┃━"), proc.stdout
    assert "pass build.capacity" in lines
    assert "  needed: llama-cpp-python (C/C++, cmake target llama-server): 1 GiB per job" in lines
    assert any(line.startswith("  needed: Python 3.11 (platform.python) to install an export on this host; the image")
               for line in lines)


@pytest.mark.parametrize("args", [["doctor", "cpu-llamacpp"], ["explain", "blackwell-sm120", "sgl-kernel"]])
def test_piped_output_is_not_wrapped_at_80_columns(args):
    """No line of piped output is cut where a terminal would have wrapped it."""
    proc = subprocess.run([sys.executable, "-m", "envbuilder", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "80"})
    assert "Traceback" not in proc.stderr
    assert any(len(line) > 80 for line in proc.stdout.splitlines()), proc.stdout
