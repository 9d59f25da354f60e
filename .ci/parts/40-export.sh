# Export tests install the exported files with the real installers: uv (from the package index,
# into the project venv) and pip >= 26.1 (the tests put it in a throwaway venv themselves).
# Sourced by .ci/run as root from the repo root with the venv at .venv. Idempotent.
if ! .venv/bin/uv --version >/dev/null 2>&1; then
    echo "[40-export] installing uv into .venv"
    .venv/bin/python -m pip install -q uv
fi
.venv/bin/uv --version
