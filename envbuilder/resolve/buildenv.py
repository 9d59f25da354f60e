"""The metadata route's build environment, installed from hashed wheels only.

When an sdist's (or a commit's) dependencies are known only by asking its build backend
(envbuilder.index.backend), the backend runs in an isolated environment with the Python at hand.
Its build requirements are resolved by the one build-requirements resolver
(envbuilder.resolve.buildreqs) for this machine's Python and platform, each wheel is downloaded
into the content-addressed cache (checked against the index's sha256: a tampered wheel is a
HashMismatch, exit 3), and pip installs exactly those files: `--no-index --no-deps
--require-hashes`, with pip's own configuration ignored, so nothing unpinned gets in.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from envbuilder.errors import CheckFailed, Unreachable
from envbuilder.index.client import IndexClient
from envbuilder.index.errors import DynamicMetadata
from envbuilder.matrix.schema import Platform
from envbuilder.resolve.buildreqs import BuildRequest, resolve_build_env
from envbuilder.resolve.candidates import Candidate
from envbuilder.resolve.prefetch import PrefetchingFinder


def host_platform() -> Platform:
    """This machine's Python, machine and glibc: where the backend actually runs."""
    libc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    machine = platform.machine()
    if not libc or not libc.startswith("glibc ") or machine not in ("x86_64", "aarch64"):
        raise Unreachable(f"building metadata with a backend needs a glibc Linux x86_64/aarch64 host (this is "
                          f"{sys.platform} {machine}); give static metadata in the matrix instead")
    return Platform(os="linux", machine=machine, libc="glibc_" + libc.split()[1],
                    python=f"{sys.version_info.major}.{sys.version_info.minor}")


class HashedBuildEnv:
    """Installs build requirements into an isolated environment, resolved and hash-checked.

    `installed` keeps the last set, so a second call (the backend's dynamic requirements) resolves
    the union with the first set preferred and installs only what is new."""

    def __init__(self, client: IndexClient, where: str, owns_client: bool = False):
        self.client, self.where, self.owns_client = client, where, owns_client
        self.installed: dict[str, str] = {}

    def close(self) -> None:
        """Close the client when it was made for this environment (the lock's own client stays open)."""
        if self.owns_client:
            self.client.close()

    def install(self, python: str, requires: list[str]) -> tuple[Candidate, ...]:
        request = BuildRequest(f"the build environment of {self.where}", tuple(sorted(requires)),
                               preferred=dict(self.installed))
        try:
            wheels = resolve_build_env(request, host_platform(), lambda t: PrefetchingFinder(self.client, t))
        except CheckFailed as exc:
            raise DynamicMetadata(f"{self.where}: its dependencies are only known by building it, and its build "
                                  f"requirements cannot be resolved from the index ({exc}); check the index, or "
                                  "give static metadata for it in the matrix (`metadata: {requires_dist: [...]}`)"
                                  ) from None
        new = [c for c in wheels if self.installed.get(str(c.name)) != str(c.version)]
        if new:
            self._pip_install(python, new)
        self.installed = {str(c.name): str(c.version) for c in wheels}
        return wheels

    def _pip_install(self, python: str, wheels: list[Candidate]) -> None:
        lines = []
        for candidate in wheels:
            file = candidate.files[0]  # the best wheel for this Python and platform
            if not file.sha256:
                raise Unreachable(f"{self.where}: the index publishes no sha256 for {file.filename}, so it cannot be "
                                  "installed by hash; use an index that publishes hashes")
            path = self.client.download(file)  # verified against the index's sha256
            lines.append(f"{candidate.name} @ {path.as_uri()} --hash=sha256:{file.sha256}")
        with tempfile.TemporaryDirectory(prefix="envbuilder-buildenv-") as tmp:
            listing = Path(tmp) / "build-requirements.txt"
            listing.write_text("\n".join(lines) + "\n")
            done = subprocess.run([*_pip(python), "install", "--isolated", "--no-index", "--no-deps",
                                   "--require-hashes", "--no-input", "--disable-pip-version-check", "-q",
                                   "-r", str(listing)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            raise DynamicMetadata(f"{self.where}: pip could not install its hashed build requirements "
                                  f"({', '.join(f'{c.name}=={c.version}' for c in wheels)}): {tail}")


def _pip(python: str) -> list[str]:
    """pip for the isolated environment: this interpreter's pip pointed at it (`--python`, as the
    `build` package does), else the environment's own pip (`build` seeds one when there is none here)."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip", "--python", python]
    return [python, "-Im", "pip"]
