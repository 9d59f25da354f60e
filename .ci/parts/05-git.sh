# Index tests (git sources) make real git repositories: git must exist. Idempotent; sourced by .ci/run.
if ! command -v git >/dev/null 2>&1; then
    echo "[ci] installing git"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git >/dev/null
fi
git --version
