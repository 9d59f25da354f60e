# Real LLM servers, a peer-free headless browser and their caches for the serve/smoke tests.
# Sourced by .ci/run (as root, from the repo root, venv at .venv). Idempotent: every step checks
# its cache first, so a second run costs seconds. Builds live outside the repository.
#
# Exports (the tests read them; without them the tests look in the same fixed cache paths):
#   ENVBUILDER_LLAMA_SERVER       llama.cpp's llama-server binary
#   ENVBUILDER_TRANSFORMERS_PY    python of a venv with torch (CPU) + transformers[serving] + gguf
#   ENVBUILDER_CHROMIUM           headless browser for the HTML report test

ENVBUILDER_CI_CACHE="${ENVBUILDER_CI_CACHE:-$HOME/.cache/envbuilder-ci}"
export ENVBUILDER_CI_CACHE
# shellcheck source=.ci/lib.sh
command -v ci_long >/dev/null 2>&1 || source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
_llm_log() { echo "[30-llm-servers] $*"; }

_llm_build_llama_server() {
    # llama.cpp as vendored by llama-cpp-python 0.3.36: the one source of it the index serves.
    local ver=0.3.36
    local root="$ENVBUILDER_CI_CACHE/llama-server-$ver"
    if [ -x "$root/bin/llama-server" ]; then
        _llm_log "llama-server $ver cached"; return 0
    fi
    mkdir -p "$ENVBUILDER_CI_CACHE/src" "$root/bin"
    local src="$ENVBUILDER_CI_CACHE/src/llama_cpp_python-$ver"
    if [ ! -d "$src/vendor/llama.cpp" ]; then
        PIP_CONFIG_FILE=/dev/null PIP_CONSTRAINT= .venv/bin/pip download --quiet --no-deps \
            --no-binary :all: "llama-cpp-python==$ver" -d "$ENVBUILDER_CI_CACHE/src"
        tar -C "$ENVBUILDER_CI_CACHE/src" -xzf "$ENVBUILDER_CI_CACHE/src/llama_cpp_python-$ver.tar.gz"
    fi
    cmake -S "$src/vendor/llama.cpp" -B "$src/build" -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=ON >"$src/cmake-configure.log" 2>&1 \
        || { tail -30 "$src/cmake-configure.log"; return 1; }
    # The compile is silent (its log is a file): ci_long prints the elapsed time every 30 s.
    _llm_compile() { cmake --build "$src/build" --target llama-server -j "$(nproc)" >"$src/cmake-build.log" 2>&1; }
    ci_long "[30-llm-servers] building llama-server (log: $src/cmake-build.log)" 480 _llm_compile \
        || { tail -30 "$src/cmake-build.log"; return 1; }
    install -m 0755 "$src/build/bin/llama-server" "$root/bin/llama-server"
}

_llm_transformers_venv() {
    # A venv of its own: torch 2.13.0 (CPU wheel from the local wheel folder) must not touch .venv.
    # It also writes the tests' tiny models (gguf for the GGUF file, transformers for the HF folder).
    local venv="$ENVBUILDER_CI_CACHE/venv-transformers"
    if "$venv/bin/python" -c 'import transformers, torch, fastapi, uvicorn, gguf' 2>/dev/null; then
        _llm_log "transformers serve venv cached"; return 0
    fi
    python3 -m venv "$venv"
    ci_long "[30-llm-servers] transformers-serve venv (torch CPU, transformers, gguf)" 120 \
        "$venv/bin/pip" install --quiet "torch==2.13.0" "transformers[serving]==5.24.0" "gguf==0.17.1"
}

_llm_chromium() {
    if command -v chromium >/dev/null; then _llm_log "chromium present"; return 0; fi
    _llm_apt_chromium() {
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    }
    ci_long "[30-llm-servers] apt-get install chromium" 90 _llm_apt_chromium
}

_llm_build_llama_server || _llm_log "WARNING: llama-server build failed"
_llm_transformers_venv || _llm_log "WARNING: transformers venv failed"
_llm_chromium || _llm_log "WARNING: chromium install failed"
export ENVBUILDER_LLAMA_SERVER="$ENVBUILDER_CI_CACHE/llama-server-0.3.36/bin/llama-server"
export ENVBUILDER_TRANSFORMERS_PY="$ENVBUILDER_CI_CACHE/venv-transformers/bin/python"
ENVBUILDER_CHROMIUM="$(command -v chromium || true)"
export ENVBUILDER_CHROMIUM
