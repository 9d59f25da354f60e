# Wheels for the prediction = reality CI subset (tests/reality/test_abi_reality.py): torch 2.14.1
# with its CUDA 13 closure (~2.9 GB: import torch dlopens cudnn, cublas, nccl... so they must be
# real) and four small consumer wheels, downloaded once into a cache outside the repository, plus
# the clean debian:bookworm-slim probe image (python3 + a libcuda.so.1 stub).
# Sourced by .ci/run (as root, from the repo root, venv at .venv, after 10-docker). Idempotent:
# a second run finds every wheel cached and the image built (seconds).
#
# Exports: ENVBUILDER_REALITY_CACHE (the wheel cache the tests read).

ENVBUILDER_REALITY_CACHE="${ENVBUILDER_REALITY_CACHE:-$HOME/.cache/envbuilder-reality}"
export ENVBUILDER_REALITY_CACHE
echo "[50-abi-reality] caching the CI pairs' wheels in $ENVBUILDER_REALITY_CACHE (~3 GB the first time)"
.venv/bin/python -m tests.reality.harness --fetch ci --image \
    || echo "[50-abi-reality] WARNING: fetching the reality wheels or building the probe image failed"
