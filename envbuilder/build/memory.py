"""How many parallel compile jobs a builder can afford: memory, not cores, is what runs out.

flash-attn's own setup.py notes that each nvcc job peaks at about 9 GB with NVCC_THREADS=4 and
caps jobs at half the cores; a build that ignores memory is OOM-killed an hour in. The same rule
is rendered as a shell fallback into the Dockerfile, because a remote builder's memory is only
known on that builder.
"""

from __future__ import annotations

GIB = 1024**3
#: Peak resident memory of one nvcc job at REFERENCE_THREADS threads, in GiB (flash-attn setup.py).
GIB_PER_JOB = 9.0
REFERENCE_THREADS = 4
#: Peak resident memory of one C/C++ compile job (no nvcc), in GiB, rounded up: the largest
#: translation units of llama-server (llama-model.cpp 0.44 GiB, server-context.cpp 0.59 GiB at -O3,
#: g++ 12, measured with /usr/bin/time on the CI machine).
GIB_PER_CXX_JOB = 1.0


def gib_per_job(nvcc_threads: int) -> float:
    """nvcc's --threads runs that many device compilations at once inside one job."""
    return GIB_PER_JOB * max(1, nvcc_threads) / REFERENCE_THREADS


def max_jobs(mem_bytes: int, ncpu: int, nvcc_threads: int = REFERENCE_THREADS) -> int:
    """MAX_JOBS for a builder with `mem_bytes` of memory and `ncpu` cores; at least 1."""
    by_memory = int(mem_bytes / GIB // gib_per_job(nvcc_threads))
    by_cpu = max(1, ncpu // 2)
    return max(1, min(by_memory, by_cpu))


def max_cxx_jobs(mem_bytes: int, ncpu: int) -> int:
    """Jobs for a plain C/C++ build (cmake's -j): one per core, as memory allows; at least 1."""
    return max(1, min(int(mem_bytes / GIB // GIB_PER_CXX_JOB), ncpu))


def shell_fallback() -> str:
    """The same rule as a POSIX shell expression over /proc/meminfo and nproc, for RUN lines."""
    per_kib = f"({GIB_PER_JOB}*t/{REFERENCE_THREADS}*1048576)"
    return ("$(awk -v t=\"${NVCC_THREADS:-%d}\" -v c=\"$(nproc)\" "
            "'/^MemTotal:/ {j=int($2/%s); h=int(c/2); if (h<1) h=1; if (j>h) j=h; if (j<1) j=1; print j}' "
            "/proc/meminfo)") % (REFERENCE_THREADS, per_kib)
