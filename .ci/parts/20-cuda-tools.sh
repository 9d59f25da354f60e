# CUDA tools for the inspect tests (tests/abi/test_inspect*.py) and doctor tests.
# Sourced by .ci/run (as root, from the repo root, venv at .venv). Idempotent.
#
# Why each step:
# - nvcc compiles the test fatbins (sm_90, sm_90a, sm_100f, sm_120, sm_120a, compute_120 PTX...);
#   the CI image ships CUDA 13.0 at /usr/local/cuda*, which may not be on PATH in a fresh shell.
# - cuobjdump (PyPI nvidia-cuda-cuobjdump) is the reference the fatbin reader is checked against;
#   the tests find it in site-packages, so it only has to be installed into the venv.
# - g++ builds the stub libc10.so and the extensions linked against it.

# shellcheck source=.ci/lib.sh
command -v ci_long >/dev/null 2>&1 || source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
_ct_log() { echo "[20-cuda-tools] $*"; }

_ct_nvcc() {
    if command -v nvcc >/dev/null 2>&1; then _ct_log "nvcc: $(nvcc --version | tail -2 | head -1)"; return 0; fi
    local candidate
    for candidate in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
        if [ -x "$candidate/nvcc" ]; then
            export PATH="$candidate:$PATH"
            _ct_log "nvcc found in $candidate (added to PATH)"; return 0
        fi
    done
    _ct_log "no nvcc: the nvcc-built inspect tests will skip"
}

_ct_cuobjdump() {
    if .venv/bin/python -c "import glob,sysconfig,sys; p=sysconfig.get_paths()['purelib']; sys.exit(0 if glob.glob(p+'/nvidia/*/bin/cuobjdump') else 1)"; then
        _ct_log "cuobjdump present"; return 0
    fi
    .venv/bin/python -m pip install -q nvidia-cuda-cuobjdump
}

_ct_gxx() {
    command -v g++ >/dev/null 2>&1 && return 0
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null
}

_ct_nvcc
_ct_cuobjdump
_ct_gxx
