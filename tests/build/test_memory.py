"""MAX_JOBS from the builder's memory: the Python rule and its rendered shell twin agree."""

from __future__ import annotations

import subprocess

import pytest

from envbuilder.build.memory import GIB, max_jobs, shell_fallback


def test_known_good_host_gets_twenty_jobs() -> None:
    # 432 GB and 40 cores: flash-attn's own cap (cores/2) wins over memory (432/9 = 48).
    assert max_jobs(432 * GIB, 40, 4) == 20


def test_memory_limits_jobs_and_threads_cost_memory() -> None:
    assert max_jobs(64 * GIB, 128, 4) == 7        # 64 / 9
    assert max_jobs(64 * GIB, 128, 8) == 3        # 64 / 18
    assert max_jobs(8 * GIB, 2, 4) == 1           # never zero


@pytest.mark.parametrize(("mem_gib", "cpus", "threads"), [(432, 40, 4), (64, 128, 4), (64, 128, 8), (24, 2, 4), (4, 1, 4)])
def test_shell_fallback_matches_python(tmp_path, mem_gib: int, cpus: int, threads: int) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:       {mem_gib * 1024 * 1024} kB\nMemFree: 1 kB\n")
    expr = shell_fallback().replace("/proc/meminfo", str(meminfo)).replace("$(nproc)", str(cpus))
    out = subprocess.run(["sh", "-c", f"NVCC_THREADS={threads}; echo {expr}"], capture_output=True, text=True, check=True)
    assert int(out.stdout) == max_jobs(mem_gib * GIB, cpus, threads)


def test_cxx_builds_are_bounded_by_cores_then_memory():
    from envbuilder.build.memory import max_cxx_jobs

    assert max_cxx_jobs(24 * GIB, 2) == 2
    assert max_cxx_jobs(3 * GIB, 16) == 3
    assert max_cxx_jobs(GIB // 2, 4) == 1
