"""A source build's inputs digest: one function, so the resolver that records it and the gate that
re-derives it from a lock can never hash different things.

Like a Nix derivation, the digest covers only what the build's result depends on: the source
files' sha256 (or the git URL and commit), the build env, the CUDA toolkit, the ABI providers it
compiles against with their files' hashes, the apt packages, the build target and the GPU arch.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping


def inputs_digest(*, source: Iterable[str | None], env: Mapping[str, str], cuda: str | None,
                  requires: Iterable[str], requires_artifacts: Iterable[str], apt: Iterable[str],
                  target: str | None, gpu_arch: str | None) -> str:
    inputs = {
        "source": list(source), "env": dict(env), "cuda": cuda, "requires": list(requires),
        "requires-artifacts": sorted(requires_artifacts), "apt": list(apt), "target": target,
        "gpu-arch": gpu_arch,
    }
    return "sha256:" + hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
